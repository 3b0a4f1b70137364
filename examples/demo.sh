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
cleanup() {
	local pid
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

step "Mediated transfer between real cages low (s0), high (s2) and side (s1:c5): clipd in the core, the user answering yes"
x=$work/xfer
# clipctl and its library, bound read-only into each cage in the build's
# layout (RUNPATH $ORIGIN/../../libclip); each cage's clipd socket alone in a
# directory bound at /run/clip; its inbox bound at /inbox (noexec), its
# documents at /data. The agent's socket is bound into no cage.
bin_dir=$(cd "$build/programs/clipctl" && pwd -P)
lib_dir=$(cd "$build/libclip" && pwd -P)
mkdir -p "$x/cfg" "$x/run" "$x/cstate"
chmod 711 "$work" "$x"
: >"$x/cfg/cages"
for c in "low s0 $((0x7b10 * 65536))" "high s2 $((0x7b11 * 65536))" "side s1:c5 $((0x7b12 * 65536))"; do
	set -- $c
	mkdir -p "$x/in-$1" "$x/data-$1" "$x/sock-$1"
	if [ ${#mode[@]} -eq 0 ]; then
		# Run by root: the socket serves only the cage's uid, the inbox is its.
		echo "$1 $2 $x/in-$1 $x/sock-$1/transfer.sock uid=$3" >>"$x/cfg/cages"
		chown "$3:$3" "$x/in-$1" "$x/data-$1"
	else
		echo "$1 $2 $x/in-$1 $x/sock-$1/transfer.sock" >>"$x/cfg/cages"
	fi
	printf '[Cage]\nName=%s\nLevel=%s\nUidBase=%s\nDataDirectory=%s\n[Files]\nBindReadOnly=%s:/opt/clip/programs/clipctl %s:/opt/clip/libclip %s:/run/clip\nBind=%s:/inbox\n[Network]\nMode=none\n[Security]\nWriteXorExecute=yes\n' \
		"$1" "$2" "$3" "$x/data-$1" "$bin_dir" "$lib_dir" "$x/sock-$1" "$x/in-$1" >"$x/$1.cage"
done
printf 'low high ask\nhigh low ask encrypt\n@any @any deny\n' | tee "$x/cfg/policy" | sed 's/^/  policy: /'
mkfifo "$x/ready" "$x/agent-ready"
"$build/programs/clipd/clipd" --config "$x/cfg" --state-dir "$state" --agent-socket "$x/run/confirm.sock" "${mode[@]}" --ready-fd 3 3>"$x/ready" 2>"$x/clipd.log" &
daemons+=($!)
read -r _ <"$x/ready"
"$build/programs/clip-confirm/clip-confirm" --socket "$x/run/confirm.sock" --auto yes --ready-fd 3 3>"$x/agent-ready" >"$x/agent.log" &
daemons+=($!)
read -r _ <"$x/agent-ready"
echo "quarterly figures" >"$x/data-low/figures.txt"
echo "TOP SECRET plans" >"$x/data-high/plans.txt"
chmod 644 "$x/data-low/figures.txt" "$x/data-high/plans.txt"
[ ${#mode[@]} -eq 0 ] && chown $((0x7b10 * 65536)) "$x/data-low/figures.txt" && chown $((0x7b11 * 65536)) "$x/data-high/plans.txt"
in_cage() { # CAGE COMMAND...: run COMMAND in a new cage
	local cage=$1
	shift
	"$clipctl" --state-dir "$x/cstate" cage run --profile "$x/$cage.cage" -- "$@" 2>&1 | sed "s/^/  $cage| /"
}
send() { # FROM FILE TO [refused]: clipctl transfer send, run inside the cage FROM
	printf '$ clipctl cage run --profile %s.cage -- clipctl transfer send /data/%s --to %s\n' "$1" "$2" "$3"
	if in_cage "$1" /opt/clip/programs/clipctl/clipctl transfer send "/data/$2" --to "$3"; then
		[ -z "${4:-}" ] || { echo "  !! accepted: that is a bug" >&2; exit 1; }
	else
		[ -n "${4:-}" ] || { echo "  !! not delivered" >&2; exit 1; }
		echo "  -> refused, as it must be"
	fi
}
send low figures.txt high
sed -n '/=== transfer/,/allowed/p' "$x/agent.log" | sed 's/^/  agent| /'
printf '$ clipctl cage run --profile high.cage -- cat /inbox/figures.txt\n'
in_cage high cat /inbox/figures.txt
send high plans.txt low
printf '$ clipctl cage run --profile low.cage -- head -c 8 /inbox/plans.txt   # an envelope: the low cage cannot read it\n'
in_cage low sh -c 'head -c 8 /inbox/plans.txt; echo; grep -q SECRET /inbox/plans.txt && echo "plain text!" || echo "no plain text in it"'
printf '$ clipctl transfer open plans.txt --for low   # in the core, with its key\n'
ctl transfer open "$x/in-low/plans.txt" --for low 2>&1 | sed 's/^/  /'
send high plans.txt side refused   # s2 and s1:c5: neither dominates
printf '$ clipctl cage run --profile low.cage -- ls /run/clip   # its own socket, not the agent'"'"'s or another cage'"'"'s\n'
in_cage low ls /run/clip
run --state-dir "$state" audit verify || true
kill "${daemons[@]}" 2>/dev/null || true
wait "${daemons[@]}" 2>/dev/null || true
daemons=()

step "The demo touched nothing outside $work, which is now removed"
