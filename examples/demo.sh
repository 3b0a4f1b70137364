#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The libclip demo: confidentiality levels and tamper-evident file labels,
# on temporary state only (nothing outside a fresh temporary directory is
# touched). Usage: examples/demo.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: demo.sh BUILD_DIR}
clipctl="$build/examples/clipctl"
[ -x "$clipctl" ] || { echo "demo: $clipctl not built" >&2; exit 1; }

work=$(mktemp -d /var/tmp/libclip-demo-XXXXXX)
trap 'rm -rf "$work"' EXIT
state="$work/state"
mode=()
if [ "$(id -u)" -ne 0 ]; then
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
if command -v swtpm >/dev/null; then
	swtpm_ctl=$(dirname "$0")/../tests/tpm/with-swtpm
	tcti=$("$swtpm_ctl" --start "$work/tpm")
	trap '"$swtpm_ctl" --stop "$work/tpm"; rm -rf "$work"' EXIT
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

step "Mediated transfer: clipd between cages low (s0), high (s2) and side (s1:c5), the user answering yes"
x=$work/xfer
mkdir -p "$x/cfg" "$x/low" "$x/high" "$x/side" "$x/run"
printf 'low s0 %s/low %s/run/low.sock\nhigh s2 %s/high %s/run/high.sock\nside s1:c5 %s/side %s/run/side.sock\n' "$x" "$x" "$x" "$x" "$x" "$x" >"$x/cfg/cages"
printf 'low high ask\nhigh low ask encrypt\n@any @any deny\n' | tee "$x/cfg/policy" | sed 's/^/  policy: /'
mkfifo "$x/ready" "$x/agent-ready"
"$build/examples/clipd" --config "$x/cfg" --state-dir "$state" --agent-socket "$x/run/confirm.sock" "${mode[@]}" --ready-fd 3 3>"$x/ready" 2>"$x/clipd.log" &
xfer_pids=$!
read -r _ <"$x/ready"
"$build/examples/clip-confirm" --socket "$x/run/confirm.sock" --auto yes --ready-fd 3 3>"$x/agent-ready" >"$x/agent.log" &
xfer_pids="$xfer_pids $!"
read -r _ <"$x/agent-ready"
echo "quarterly figures" >"$work/figures.txt"
send() { printf '$ clipctl transfer send figures.txt --to %s   # from %s\n' "$2" "$1"; "$clipctl" transfer send "$work/figures.txt" --to "$2" --socket "$x/run/$1.sock" 2>&1 | sed 's/^/  /' || true; }
send low high
sed -n '/=== transfer/,/allowed/p' "$x/agent.log" | sed 's/^/  agent| /'
send high low
printf '  the low inbox holds an envelope: %s\n' "$(head -c 8 "$x/low/figures.txt")"
send high side   # s2 and s1:c5: neither dominates
run --state-dir "$state" audit verify || true
kill $xfer_pids

step "The demo touched nothing outside $work, which is now removed"
