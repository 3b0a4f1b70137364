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

step "The demo touched nothing outside $work, which is now removed"
