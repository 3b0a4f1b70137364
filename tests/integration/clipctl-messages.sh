#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clipctl's answers to a person's mistakes and to hostile names (issue 20,
# finding 9; threat T35). Each mistake gets the exact sentence about the
# input and never "client bug" (a library assertion is for a program's
# error, not a person's); a file name holding ESC [ ... and a newline is
# printed escaped, on one line, wherever clipctl prints it; label and tpm
# measure follow no symbolic link (exec-check does, as an interpreter).
# Args: CLIPCTL tpm|no-tpm CLIPD.
set -u
clipctl=$(realpath "$1")
tpm=${2:-no-tpm}
clipd=$(realpath "$3")
. "$(dirname "$0")/tap.sh"

base=$(mktemp -d /var/tmp/clip-msg-XXXXXX)
trap 'rm -rf "$base" "$tap_tmp"' EXIT
cd "$base" || exit 1
s=$base/state
echo doc >doc
mkdir dir
mkfifo fifo
ln -s doc link
c=("$clipctl" --state-dir "$s")
is_root || c+=(--rootless)
hint="Try 'clipctl --help'."

# mistake DESC STATUS SENTENCE -- COMMAND...: exit STATUS, stderr exactly
# SENTENCE (then the hint for a usage error), no "client bug".
mistake() {
	local desc=$1 want=$2 sentence=$3
	shift 4
	expect "$want" "$desc: refused" -- "$@"
	if [ "$want" -eq 2 ]; then
		is "$desc: the sentence" "$err" "$sentence"$'\n'"$hint"
	else
		is "$desc: the sentence" "$err" "$sentence"
	fi
	case $err in
	*"client bug"* | *assertion*) not_ok "$desc: no client bug" ;;
	*) ok "$desc: no client bug" ;;
	esac
}

mistake "a relative --state-dir" 2 "clipctl: bad --state-dir 'state': give an absolute path (of fewer than 4096 bytes)" -- "$clipctl" --state-dir state label get doc
mistake "an empty --state-dir" 2 "clipctl: bad --state-dir '': give an absolute path (of fewer than 4096 bytes)" -- "$clipctl" --state-dir "" label get doc
mistake "an empty --log" 2 "clipctl: bad --log '': give the path of a log file (a name of 1 to 200 bytes, not . or ..)" -- "${c[@]}" audit verify --log ""
mistake "a --log of .." 2 "clipctl: bad --log '..': give the path of a log file (a name of 1 to 200 bytes, not . or ..)" -- "${c[@]}" audit show --log ..
mistake "an empty cage for transfer open" 1 "clipctl: doc: '' is not a cage name: 1 to 64 of a-z 0-9 - _, starting with a letter or a digit, not s<digit>" -- "${c[@]}" transfer open doc --for ""
mistake "a cage name with a slash for transfer open" 1 "clipctl: doc: 'a/b' is not a cage name: 1 to 64 of a-z 0-9 - _, starting with a letter or a digit, not s<digit>" -- "${c[@]}" transfer open doc --for a/b
mistake "clipd given a relative state directory" 1 "clipd: bad --state-dir 'state': give an absolute path" -- "$clipd" --config "$base" --state-dir state
mistake "a directory as --names" 1 "clipctl: --names dir is a directory, not a file of level names" -- "$clipctl" --names dir level format s0
if [ "$tpm" = tpm ]; then
	mistake "an empty event name" 2 "clipctl: bad event name '' (1 to 255 printable ASCII characters)" -- "${c[@]}" tpm measure doc ""
	mistake "an empty --tcti" 2 "clipctl: bad TPM options: a TCTI is 1 to 255 printable ASCII characters"$'\n'"clipctl: bad TPM options" -- "${c[@]}" tpm status --tcti ""
	mistake "a --measure-pcr of D-RTM" 2 "clipctl: bad TPM options: PCR 17 cannot be measured into (1 to 16 or 23; 0 is the firmware's, 17 to 22 belong to D-RTM)"$'\n'"clipctl: bad TPM options" -- "${c[@]}" tpm status --measure-pcr 17
fi

# What a label or a measure is given: no link, no FIFO; a directory labels.
mistake "label set of a link" 1 "clipctl: link is a symbolic link: not followed where another party can write" -- "${c[@]}" label set link s1
mistake "label verify of a link" 1 "clipctl: link is a symbolic link: not followed where another party can write" -- "${c[@]}" label verify link
mistake "label set of a FIFO" 1 "clipctl: fifo is a FIFO, not a regular file: refused without reading it" -- timeout 10 "${c[@]}" label set fifo s1
expect 0 "label set of a directory: labelled" -- "${c[@]}" label set dir s1
expect 0 "label get of a directory: read" -- "${c[@]}" label get dir
is "label get of a directory: its level" "$out" "s1"
if [ "$tpm" = tpm ]; then
	mistake "tpm measure of a link" 1 "clipctl: link is a symbolic link: not followed where another party can write" -- "${c[@]}" tpm measure link
	mistake "tpm measure of a FIFO" 1 "clipctl: fifo is a FIFO, not a regular file: refused without reading it" -- timeout 10 "${c[@]}" tpm measure fifo
fi
printf '#!/bin/sh\n' >run.sh
chmod 755 run.sh
ln -s run.sh run-link
expect 0 "exec-check follows a link, as an interpreter opens it" -- "$clipctl" exec-check run-link
is "exec-check follows a link: said of the name given" "$out" "run-link: allowed"

# A hostile name: ESC [ 31 m and a newline, wherever clipctl prints it.
evil=$'evil\033[31mred\nline'
escaped='evil\u{001B}[31mred\u{000A}line'
echo doc >"$evil"
raw() { printf '%s' "$1" | LC_ALL=C grep -q '[[:cntrl:]]'; }
check_escaped() { # DESC TEXT
	if raw "$2"; then
		not_ok "$1: no raw control character"
		tap_diag "  got: $(printf '%s' "$2" | od -c | head -3)"
	else
		ok "$1: no raw control character"
	fi
	# The newline: escaped by clipctl, or made a space by the library's message.
	like "$1: escaped" "$2" 'evil\\u\{001B\}\[31mred(\\u\{000A\}| )line'
}
expect 0 "an escape sequence in a file name: labelled" -- "${c[@]}" label set "$evil" s1
expect 0 "an escape sequence in a file name: verified" -- "${c[@]}" label verify "$evil"
check_escaped "label verify prints the name" "$out"
expect 1 "an escape sequence in a file name: exec-check refuses" -- "$clipctl" exec-check "$evil"
check_escaped "exec-check's refusal names it" "$err"
expect 1 "an escape sequence in a missing file's name: refused" -- "${c[@]}" label get "$evil.missing"
check_escaped "a missing file's name in the error" "$err"
ln -s doc "$evil.link"
expect 1 "an escape sequence in a link's name: refused" -- "${c[@]}" label set "$evil.link" s1
check_escaped "a link's name in the error" "$err"
mkdir "$base/$evil.d"
expect 1 "an escape sequence in a --state-dir: refused" -- "$clipctl" --state-dir "$base/$evil.d/../x" label set doc s1
check_escaped "the state directory's name in the error" "$err"

tap_plan_end
