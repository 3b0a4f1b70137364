#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The libclip demo: confidentiality levels, tamper-evident file labels, a
# cage, the TPM, and a document moved between real cages through the core,
# on temporary state only (nothing outside a fresh temporary directory is
# touched). Usage: examples/demo.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: demo.sh BUILD_DIR}
clipctl="$build/programs/clipctl/clipctl"
[ -x "$clipctl" ] || { echo "demo: $clipctl not built" >&2; exit 1; }

work=$(mktemp -d /var/tmp/libclip-demo-XXXXXX)
# Whatever the exit (an error, a failed step, ^C, a kill), the daemons and
# the software TPM the demo started end with it and its state is removed.
daemons=()
swtpm_ctl=
session_up=
cleanup() {
	local pid
	# The session first: its runner stops the cages in order.
	[ -z "$session_up" ] || ctl session down demo >/dev/null 2>&1 || true
	for pid in "${daemons[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${daemons[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	[ -z "$swtpm_ctl" ] || "$swtpm_ctl" --stop "$work/tpm" || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
state="$work/state"
mode=()
# Root of the host, or rootless (any other user, uid 0 of a container):
# the library says which, from what this process has.
if [ "$("$clipctl" cage mode)" = rootless ]; then
	mode=(--rootless)
	attr=user.clip.label
else
	attr=trusted.clip.label
fi
ctl() { "$clipctl" --state-dir "$state" "${mode[@]}" "$@"; }

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ clipctl %s\n' "$*"; "$clipctl" "$@" 2>&1 | sed 's/^/  /'; return "${PIPESTATUS[0]}"; }
refused() {
	if "$@" >"$work/out" 2>&1; then
		sed 's/^/  /' "$work/out"
		echo "  !! accepted: that is a bug" >&2
		exit 1
	fi
	sed 's/^/  /' "$work/out"
	echo "  -> refused, as it must be"
}

step "Levels: a sensitivity s0..s15 and a set of categories c0..c1023"
run level check s2:c0.c3 s1:c1
run level check s1:c1 s1:c2
run level check s3:c0,c1,c2 s3:c0.c2
run level format s5:c1,c2,c3,c9

step "Names, both ways, from a setrans.conf-style table"
cat >"$work/setrans.conf" <<'NAMES'
s0=public
s1=restricted
s2:c1=secret-hr
s2:c2=secret-rd
NAMES
sed 's/^/  /' "$work/setrans.conf"
run --names "$work/setrans.conf" level check secret-hr restricted
run --names "$work/setrans.conf" level check secret-hr secret-rd

step "A strict parser: the offending character is shown"
refused run level check s2:c0.c3,x7 s1

step "Labels: the level of a file, in $attr, with an HMAC bound to the inode"
echo "quarterly figures" >"$work/report.txt"
echo "holiday photos" >"$work/other.txt"
printf '$ clipctl label set report.txt s2:c1\n'
ctl label set "$work/report.txt" s2:c1
printf '$ clipctl label get report.txt\n  %s\n' "$(ctl label get "$work/report.txt")"
printf '$ getfattr -n %s report.txt\n' "$attr"
getfattr --absolute-names --only-values -n "$attr" "$work/report.txt" | sed 's/^/  /'; echo
printf '  (the key: %s, mode %s, created on first use)\n' "$state/mac.key" "$(stat -c %a "$state/mac.key")"

step "A label copied onto another file (getfattr --dump | setfattr --restore)"
(cd "$work" && getfattr -n "$attr" --dump report.txt | sed 's/^# file: report.txt$/# file: other.txt/' | setfattr --restore=-)
printf '$ clipctl label verify other.txt\n'
refused ctl label verify "$work/other.txt"

step "A label edited to claim a lower level"
value=$(getfattr --absolute-names --only-values -n "$attr" "$work/report.txt")
setfattr -n "$attr" -v "${value/v1 s2:c1/v1 s0}" "$work/report.txt"
printf '$ clipctl label verify report.txt\n'
refused ctl label verify "$work/report.txt"
setfattr -n "$attr" -v "$value" "$work/report.txt"
printf '$ clipctl label verify report.txt   # the original value restored\n'
ctl label verify "$work/report.txt" | sed 's/^/  /'

step "Another machine's key does not accept this label"
echo "elsewhere" >"$work/elsewhere.txt"
"$clipctl" --state-dir "$work/other-state" "${mode[@]}" label set "$work/elsewhere.txt" s1
printf '$ clipctl --state-dir other-state label verify report.txt\n'
refused "$clipctl" --state-dir "$work/other-state" "${mode[@]}" label verify "$work/report.txt"

step "A cage for level s3:c0.c3 (examples/profiles/high.cage): its own root, pids, network"
profiles=$(dirname "$0")/profiles
run cage run --profile "$profiles/high.cage" -- sh -c \
	'echo "host name $(hostname), uid $(id -u), $(ls /proc | grep -c "^[0-9]") processes"; touch /usr/x; unshare -U true || echo "-> both refused, as they must be"'

step "TPM 2.0 (a software TPM, state in $work): the key sealed to PCR 7, a profile measured"
if ! grep -q '^#define HAVE_TPM 1' "$build/config.h"; then
	echo "  (this libclip was built with -Dtpm=disabled: skipped)"
elif command -v swtpm >/dev/null; then
	tcti=$("$(dirname "$0")/../tests/tpm/with-swtpm" --start "$work/tpm")
	swtpm_ctl=$(dirname "$0")/../tests/tpm/with-swtpm
	tpm() { verb=$1; shift; printf '$ clipctl tpm %s%s\n' "$verb" "${*:+ $*}"; "$clipctl" --state-dir "$work/tpm-state" tpm "$verb" --tcti "$tcti" "$@" 2>&1 | sed 's/^/  /'; }
	tpm seal-key
	tpm measure "$(dirname "$0")/profiles/high.cage" cage:high
	tpm replay
	sed -i 's/cage:high/cage:low/' "$work/tpm-state/tpm-events.log"
	printf '$ clipctl tpm replay   # after renaming the event in the log\n'
	refused "$clipctl" --state-dir "$work/tpm-state" tpm replay --tcti "$tcti"
else
	echo "  (swtpm is not installed: skipped)"
fi

step "A session of three levels, low (s0), high (s2) and side (s1:c5), from one file (examples/sessions/demo.session)"
# The library derives the wiring from the session file: each cage's inbox
# (owned by its uid) bound noexec at /inbox, its socket's directory alone
# at /run/clip, its data at /data, the agent's socket bound into none; the
# runner, clipd --session, serves each cage's socket through a front.
# Relative paths in the file resolve against its own directory: a copy in
# $work keeps every document in $work. The only thing added by hand: this
# build's programs (clipctl, clip-python) and libclip, bound read-only into
# each cage in the build's layout (RUNPATH $ORIGIN/../../libclip), since
# nothing is installed.
x=$work/session
cp -r "$(dirname "$0")/sessions" "$x"
chmod 711 "$work" "$x"
programs_dir=$(cd "$build/programs" && pwd -P)
lib_dir=$(cd "$build/libclip" && pwd -P)
for profile in "$x"/*.cage; do
	binds="BindReadOnly=$programs_dir:/opt/clip/programs $lib_dir:/opt/clip/libclip"
	if grep -q '^\[Files\]$' "$profile"; then
		sed -i "/^\[Files\]\$/a $binds" "$profile"
	else
		printf '\n[Files]\n%s\n' "$binds" >>"$profile"
	fi
done
sed -n '/^\[Transfer\]/,$p' "$x/demo.session" | sed 's/^/  /'
printf '$ clipctl session up demo.session\n'
ctl session up --log "$work/runner.log" "$x/demo.session" 2>&1 | sed 's/^/  /'
session_up=1
printf '$ clipctl session status demo\n'
ctl session status demo 2>&1 | sed 's/^/  /'
# What a desktop's confidentiality bar shows: the session's feed.
ctl watch demo >"$work/watch.log" 2>&1 &
daemons+=($!)
mkfifo "$work/agent-ready"
"$build/programs/clip-confirm/clip-confirm" --socket "$state/sessions/demo/confirm.sock" --auto yes --ready-fd 3 3>"$work/agent-ready" >"$work/agent.log" &
daemons+=($!)
read -r _ <"$work/agent-ready"
in_cage() { # CAGE COMMAND...: run COMMAND in the session's cage CAGE
	local cage=$1
	shift
	ctl session exec demo "$cage" -- "$@" 2>&1 | sed "s/^/  $cage| /"
	return "${PIPESTATUS[0]}"
}
in_cage low sh -c 'echo "quarterly figures" >/data/figures.txt'
in_cage high sh -c 'echo "TOP SECRET plans" >/data/plans.txt'
send() { # FROM FILE TO [refused]: clipctl transfer send, run inside the cage FROM
	printf '$ clipctl session exec demo %s -- clipctl transfer send /data/%s --to %s\n' "$1" "$2" "$3"
	if in_cage "$1" /opt/clip/programs/clipctl/clipctl transfer send "/data/$2" --to "$3"; then
		[ -z "${4:-}" ] || { echo "  !! accepted: that is a bug" >&2; exit 1; }
	else
		[ -n "${4:-}" ] || { echo "  !! not delivered" >&2; exit 1; }
		echo "  -> refused, as it must be"
	fi
}
send low figures.txt high
sed -n '/=== transfer/,/allowed/p' "$work/agent.log" | sed 's/^/  agent| /'
printf '$ clipctl session exec demo high -- cat /inbox/figures.txt\n'
in_cage high cat /inbox/figures.txt
send high plans.txt low
printf '$ clipctl session exec demo low -- head -c 8 /inbox/plans.txt   # an envelope: the low cage cannot read it\n'
in_cage low sh -c 'head -c 8 /inbox/plans.txt; echo; grep -q SECRET /inbox/plans.txt && echo "plain text!" || echo "no plain text in it"'
printf '$ clipctl transfer open plans.txt --for low   # in the core, with its key\n'
ctl transfer open "$state/sessions/demo/inbox/low/plans.txt" --for low 2>&1 | sed 's/^/  /'
send high plans.txt side refused   # s2 and s1:c5: neither dominates
printf '$ clipctl session exec demo low -- ls /run/clip   # its own socket, not the agent'"'"'s or another cage'"'"'s\n'
in_cage low ls /run/clip
if [ -x "$build/programs/clip-python/clip-python" ]; then
	printf '$ clipctl session exec demo low -- clip-python /data/report.py   # /data is never executable (W^X)\n'
	in_cage low sh -c 'echo "print(42)" >/data/report.py'
	in_cage low /opt/clip/programs/clip-python/clip-python /data/report.py || echo "  -> refused, and reported to the core"
fi
sleep 0.3
printf '$ clipctl watch demo   # what the user was shown meanwhile\n'
sed 's/^/  /' "$work/watch.log"
run --state-dir "$state" audit verify || true
kill "${daemons[@]}" 2>/dev/null || true
wait "${daemons[@]}" 2>/dev/null || true
daemons=()
printf '$ clipctl session down demo\n'
ctl session down demo 2>&1 | sed 's/^/  /'
session_up=

step "The demo touched nothing outside $work, which is now removed"
