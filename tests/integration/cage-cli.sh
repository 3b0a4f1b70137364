#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clipctl cage, as an administrator drives it: the example profiles run,
# the exit status comes through, profile errors name file, line and key,
# and long-lived cages start, list, exec and stop by name.
set -u
clipctl=$1
. "$(dirname "$0")/tap.sh"
profiles=$(dirname "$0")/../../examples/profiles
state=$tap_tmp/state
c=("$clipctl" --state-dir "$state")

if [ "$(id -u)" != 0 ] && ! unshare -Ur true 2>/dev/null; then
	echo "1..0 # SKIP this host refuses user namespaces to uid $(id -u)"
	exit 0
fi

for p in low high; do
	expect 0 "cage run, $p profile" -- "${c[@]}" cage run --profile "$profiles/$p.cage" -- sh -c 'hostname; cat /proc/self/uid_map | wc -l'
	like "cage run, $p: the host name is the cage's" "$out" "^$p"
done
expect 3 "cage run exits with the command's status" -- "${c[@]}" cage run --profile "$profiles/low.cage" -- sh -c 'exit 3'
expect 137 "a command killed by SIGKILL gives 128+9" -- "${c[@]}" cage run --profile "$profiles/low.cage" -- sh -c 'kill -9 $$'
expect 127 "an unknown command gives 127" -- "${c[@]}" cage run --profile "$profiles/low.cage" -- no-such-command
like "and says it cannot execute" "$err" "cannot execute"
expect 2 "cage run without --profile" -- "${c[@]}" cage run -- true
expect 2 "cage run without a command" -- "${c[@]}" cage run --profile "$profiles/low.cage"

# A capability kept by the profile, in every set, even for another uid.
printf '[Cage]\nName=caps\n[Network]\nMode=loopback\n[Security]\nCapability=CAP_NET_BIND_SERVICE\n' >"$tap_tmp/caps.cage"
uid=()
is_root && uid=(--uid 1000 --gid 1000)
expect 0 "a profile keeping CAP_NET_BIND_SERVICE" -- "${c[@]}" cage run --profile "$tap_tmp/caps.cage" "${uid[@]}" -- sh -c 'grep -E "^Cap(Prm|Eff|Bnd|Amb)" /proc/self/status | cut -f2 | sort -u; id -u'
is "only that capability, in the permitted, effective, bounding and ambient sets" "$(echo "$out" | head -1)" "0000000000000400"
is "as the uid asked for" "$(echo "$out" | tail -1)" "${uid[1]:-0}"

printf '[Cage]\nName=x\n[Limits]\nTasksMax=many\n' >"$tap_tmp/bad.cage"
expect 2 "a bad profile is refused" -- "${c[@]}" cage run --profile "$tap_tmp/bad.cage" -- true
like "the message names file, line and key" "$err" "bad.cage:4: \[Limits\] TasksMax: 'many'"
printf '[Cage]\nName=x\nName=y\n' >"$tap_tmp/dup.cage"
expect 2 "a duplicate key is refused" -- "${c[@]}" cage run --profile "$tap_tmp/dup.cage" -- true
like "the duplicate is named" "$err" "dup.cage:3: \[Cage\] Name: given twice"

expect 0 "cage start" -- "${c[@]}" cage start --profile "$profiles/high.cage"
like "cage start prints the name and the init's pid" "$out" "^high [0-9]+$"
expect 1 "a second cage of the same name is refused" -- "${c[@]}" cage start --profile "$profiles/high.cage"
like "because it is running" "$err" "a cage named high is running"
expect 0 "cage exec" -- "${c[@]}" cage exec high -- sh -c 'echo inside; hostname'
is "cage exec runs in the cage" "$out" "inside
high"
expect 5 "cage exec passes the status" -- "${c[@]}" cage exec high -- sh -c 'exit 5'
mkfifo "$tap_tmp/ready"
"${c[@]}" cage exec high -- sh -c 'echo ready; exec sleep 1000' >"$tap_tmp/ready" &
bg=$!
read -r -t 20 line <"$tap_tmp/ready"
is "a long process runs in the cage" "$line" ready
expect 0 "cage list" -- "${c[@]}" cage list
like "cage list shows the cage, its level and its processes" "$out" "^high	s3:c0.c3	[0-9]+	[2-9]"
expect 0 "cage stop" -- "${c[@]}" cage stop --grace-ms 200 high
wait "$bg"
is "the process in it died of SIGTERM" "$?" 143
expect 0 "cage list is empty" -- "${c[@]}" cage list
is "nothing is listed" "$out" ""
expect 1 "cage stop of a stopped cage" -- "${c[@]}" cage stop high
like "says it is not running" "$err" "no cage named high is running"
expect 2 "cage with an unknown verb" -- "${c[@]}" cage fly
tap_plan_end
