#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --help and --version of every program, and --help of every clipctl
# command: the commands are read from `clipctl --help` itself, so a new
# command is checked as soon as it has its usage line; each must also
# have its entry in clipctl(1), and every command of clipctl(1) its
# usage line.
#
#   cli-help.sh SOURCE_ROOT VERSION CLIPCTL CLIPD CLIP_CONFIRM [PROGRAM...]
set -u
src=$1 version=$2 clipctl=$3
shift 2
programs=("$@")
. "$(dirname "$0")/tap.sh"

# The command lines of `clipctl --help`: two spaces, then the command's
# words (lower case), then its arguments, and two spaces before what it
# does.
"$clipctl" --help >"$tap_tmp/help"
commands=()
while IFS= read -r line; do
	words=
	for w in ${line%%  *}; do
		[[ $w =~ ^[a-z][a-z-]*$ ]] || break
		words+="${words:+ }$w"
	done
	commands+=("$words")
done < <(sed -n '/^Options:/q; s/^  \([a-z]\)/\1/p' "$tap_tmp/help")
groups=()
for c in "${commands[@]}"; do
	g=${c%% *}
	[[ " ${groups[*]} " == *" $g "* ]] || groups+=("$g")
done
if [ "${#commands[@]}" -ge 20 ]; then
	ok "clipctl --help lists ${#commands[@]} commands in ${#groups[@]} groups"
else
	not_ok "clipctl --help lists only ${#commands[@]} commands"
fi

# COMMAND --help: exit 0, its usage line on stdout, no other command's, nothing on stderr.
for c in "${commands[@]}" "${groups[@]}"; do
	# shellcheck disable=SC2086 # the words of the command
	expect 0 "clipctl $c --help exits 0" -- "$clipctl" $c --help
	mine=$(grep -c "^  $c\( \|\$\)" <<<"$out")
	all=$(grep -c '^  [a-z]' <<<"$out")
	want=$(grep -c "^  $c\( \|\$\)" "$tap_tmp/help")
	if [[ $out == Usage:* && $mine -eq $want && $all -eq $want && -z $err ]]; then
		ok "clipctl $c --help: its $want usage line(s) on stdout"
	else
		not_ok "clipctl $c --help: want its $want usage line(s) alone on stdout"
		printf '#   stdout: %s\n#   stderr: %s\n' "$out" "$err"
	fi
done
expect 0 "-h is --help" -- "$clipctl" transfer open -h
like "-h: the usage of transfer open" "$out" "^  transfer open FILE --for CAGE"
expect 0 "--help after the arguments of a command" -- "$clipctl" level check s0 --help
like "--help after the arguments: the usage of level check" "$out" "level check A B"

# What --help is not.
expect 2 "an unknown command with --help is refused" -- "$clipctl" frobnicate --help
like "the unknown command is named, on stderr" "$err" "unknown command 'frobnicate'"
is "and nothing on stdout" "$out" ""
expect 2 "a command without its verb is a usage error" -- "$clipctl" cage
like "it gives that command's usage on stderr" "$err" "cage run --profile FILE"
# After the words of a command that runs a command line without "--",
# --help belongs to that command line: here the profile is looked for.
expect 1 "cage run PROFILE CMD --help runs CMD (its own --help)" -- "$clipctl" cage run --profile "$tap_tmp/none.cage" true --help
like "cage run --help of the command: the profile was opened" "$err" "cannot open $tap_tmp/none.cage"
# After "--", --help is the command exec-policy runs: not found, 127.
expect 127 "--help after -- is an operand" -- "$clipctl" exec-policy restrict-file -- --help
like "--help after --: run as the command" "$err" "cannot run --help"
is "--help after --: no usage on stdout" "$out" ""

# clipctl(1) and --help agree: each command in both.
man=$src/doc/man/clipctl.1.scd
missing=()
for c in "${commands[@]}"; do
	grep -q "^\*$c\*" "$man" || missing+=("$c")
done
if [ "${#missing[@]}" -eq 0 ]; then
	ok "every command of clipctl --help has its entry in clipctl(1)"
else
	not_ok "commands of clipctl --help without an entry in clipctl(1): ${missing[*]}"
fi
extra=()
while IFS= read -r c; do
	printf '%s\n' "${commands[@]}" >"$tap_tmp/commands"
	grep -qx "$c" "$tap_tmp/commands" || extra+=("$c")
done < <(sed -n '/^# COMMANDS/,/^# [A-Z]/p' "$man" | sed -n 's/^\*\([a-z][a-z -]*[a-z]\)\*.*/\1/p')
if [ "${#extra[@]}" -eq 0 ]; then
	ok "every command of clipctl(1) has its usage line in clipctl --help"
else
	not_ok "commands of clipctl(1) missing from clipctl --help: ${extra[*]}"
fi

# --version and --help of every program. The interpreters keep their
# runtime's memory to the end (perl, CPython): under AddressSanitizer, leaks
# at exit are theirs, not checked here (as tests/exec/lib.sh).
for p in "${programs[@]}"; do
	run=(env)
	case $p in
	*clip-perl | *clip-python) run=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0") ;;
	esac
	name=$(basename "$p")
	expect 0 "$name --version exits 0" -- "${run[@]}" "$p" --version
	like "$name --version: the version of libclip on stdout" "$out" "^$name \(libclip\) $version\$"
	expect 0 "$name --help exits 0" -- "${run[@]}" "$p" --help
	like "$name --help: its usage on stdout" "$out" "^[Uu]sage: "
done

tap_plan_end
