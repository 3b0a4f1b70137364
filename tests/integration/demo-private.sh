#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The demo as it runs from a clone in a private directory (mode 0700, as
# root's home is): the cages bind the build's clipctl and library from
# there, which only the caller can open. And whatever its exit - success,
# or killed while clipd and clip-confirm run - it leaves no process and no
# state behind. Usage: demo-private.sh SOURCE_ROOT BUILD_ROOT
set -uo pipefail
src=${1:?usage: demo-private.sh SOURCE_ROOT BUILD_ROOT}
build=${2:?usage: demo-private.sh SOURCE_ROOT BUILD_ROOT}
. "$(dirname "$0")/tap.sh"

private=$(mktemp -d /var/tmp/clip-private-XXXXXX)
trap 'pkill -KILL -f "$private/" 2>/dev/null; rm -rf "$tap_tmp" "$private"' EXIT
chmod 0700 "$private"

# A clone and its build, as far as the demo reads them, inside $private.
mkdir -p "$private/clone/tests" "$private/clone/build/libclip" "$private/clone/build/programs"
cp -a "$src/examples" "$private/clone/"
cp -a "$src/tests/tpm" "$private/clone/tests/"
cp -a "$build/config.h" "$private/clone/build/"
cp -a "$build"/libclip/libclip.so* "$private/clone/build/libclip/"
for p in clipctl clipd clip-confirm; do
	mkdir -p "$private/clone/build/programs/$p"
	cp -a "$build/programs/$p/$p" "$private/clone/build/programs/$p/"
done
demo=$private/clone/examples/demo.sh

# What is left: processes run from $private, demo work directories not there before.
work_dirs() { ls -d /var/tmp/libclip-demo-* 2>/dev/null | sort; }
leftovers() {
	local before=$1
	pgrep -a -f "$private/" | sed 's/^/process: /'
	comm -13 "$before" <(work_dirs) | sed 's/^/directory: /'
}

if [ "$(id -u)" -ne 0 ]; then
	skip "the demo runs from a 0700 clone" "not root: a private directory of root is what is tested"
	tap_plan_end
	exit
fi

work_dirs >"$tap_tmp/before"
if "$demo" "$private/clone/build" >"$tap_tmp/demo.log" 2>&1; then
	ok "the demo runs from a 0700 clone"
else
	not_ok "the demo runs from a 0700 clone"
	tail -n 15 "$tap_tmp/demo.log" | sed 's/^/#   /'
fi
grep -q "quarterly figures" "$tap_tmp/demo.log" &&
	ok "a cage read the document delivered from a cage whose programs live in the 0700 clone" ||
	not_ok "a cage read the document delivered from a cage whose programs live in the 0700 clone"
left=$(leftovers "$tap_tmp/before")
[ -z "$left" ] && ok "nothing is left after a demo that succeeded" || {
	not_ok "nothing is left after a demo that succeeded"
	echo "$left" | sed 's/^/#   /'
}

# Killed while its daemons run: they end with it.
work_dirs >"$tap_tmp/before"
"$demo" "$private/clone/build" >"$tap_tmp/demo2.log" 2>&1 &
demo_pid=$!
for _ in $(seq 600); do
	pgrep -f "$private/clone/build/programs/clip-confirm/" >/dev/null && break
	sleep 0.05
done
if pgrep -f "$private/clone/build/programs/clipd/" >/dev/null; then
	kill -TERM "$demo_pid"
	wait "$demo_pid"
	status=$?
	[ "$status" -ne 0 ] && ok "a demo killed while clipd runs exits with failure ($status)" ||
		not_ok "a demo killed while clipd runs exits with failure"
	left=$(leftovers "$tap_tmp/before")
	[ -z "$left" ] && ok "nothing is left after a demo killed while clipd and clip-confirm ran" || {
		not_ok "nothing is left after a demo killed while clipd and clip-confirm ran"
		echo "$left" | sed 's/^/#   /'
	}
else
	not_ok "the demo started clipd (to be killed while it runs)"
	tail -n 15 "$tap_tmp/demo2.log" | sed 's/^/#   /'
	wait "$demo_pid"
fi
tap_plan_end
