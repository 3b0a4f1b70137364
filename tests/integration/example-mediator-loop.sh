#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# examples/mediator-loop.c does what its comment says: driven from its own
# poll() loop, the mediator greets an agent, delivers a document from low
# to high with the user's yes (the content, the label, the audit log), in
# an envelope from high to low, refuses what the policy denies, and the
# example ends on SIGTERM (its signalfd) or when its time is up (its
# timerfd), leaving no process behind.
#
#   example-mediator-loop.sh MEDIATOR_LOOP CLIP_CONFIRM CLIPCTL
set -u
loop=$1 confirm=$2 clipctl=$3
. "$(dirname "$0")/tap.sh"
loop_pid= agent_pid=
trap 'kill $loop_pid $agent_pid 2>/dev/null; wait; rm -rf "$tap_tmp"' EXIT
d=$tap_tmp/m
mkdir "$d"
mode=
is_root || mode=--rootless
ctl() { "$clipctl" --state-dir "$d/state" $mode "$@"; }

# The example's stdout stays open on fd 4 while it runs: its first line
# says it serves, the rest is read once it has exited.
mkfifo "$tap_tmp/out" "$tap_tmp/agent-ready"
"$loop" "$d" 60 >"$tap_tmp/out" 2>"$tap_tmp/err" &
loop_pid=$!
exec 4<"$tap_tmp/out"
read -r -t 20 -u 4 line || line=
is "the example serves" "$line" "ready: cages low and high, agent at $d/confirm.sock"
"$confirm" --socket "$d/confirm.sock" --auto yes --ready-fd 3 3>"$tap_tmp/agent-ready" >"$tap_tmp/agent.log" 2>&1 &
agent_pid=$!
read -r -t 20 line <"$tap_tmp/agent-ready" || line=
is "the mediator greets the agent from the loop" "$line" READY=1

head -c 3000 /dev/urandom >"$tap_tmp/doc.bin"
expect 0 "low to high (ask, the agent says yes): delivered" -- "$clipctl" transfer send "$tap_tmp/doc.bin" --to high --socket "$d/low.sock"
like "the reply names the document" "$out" "delivered to high as 'doc.bin'"
cmp -s "$tap_tmp/doc.bin" "$d/high/doc.bin" && ok "the document is in high's inbox, byte for byte" || not_ok "the document is in high's inbox, byte for byte"
expect 0 "it is labelled" -- ctl label get "$d/high/doc.bin"
is "with high's level" "$out" s2
like "the agent was asked, with the source and its level" "$(cat "$tap_tmp/agent.log")" "from: +low \(level s0\)"
expect 0 "high to low (ask encrypt): delivered" -- "$clipctl" transfer send "$tap_tmp/doc.bin" --to low --socket "$d/high.sock"
is "in an envelope" "$(head -c 8 "$d/low/doc.bin")" CLIPENV1
expect 3 "high to high: refused" -- "$clipctl" transfer send "$tap_tmp/doc.bin" --to high --socket "$d/high.sock"
like "by the policy's deny rule" "$err" "denied by policy: a deny rule"
expect 0 "the audit log verifies" -- ctl audit verify
like "every request and decision was recorded" "$out" "audit.log: 6 records, valid"

kill -TERM "$loop_pid"
wait "$loop_pid" && status=0 || status=$?
loop_pid=
is "SIGTERM: the example exits 0" "$status" 0
is "SIGTERM: read from its signalfd" "$(cat <&4)" "Terminated, stopping"
exec 4<&-
is "SIGTERM: it printed nothing on stderr" "$(cat "$tap_tmp/err")" ""
kill "$agent_pid" 2>/dev/null
wait "$agent_pid"
agent_pid=

mkdir "$tap_tmp/m2"
expect 0 "SECONDS=1: the example ends by itself" -- "$loop" "$tap_tmp/m2" 1
like "when its timerfd fires" "$out" "time is up, stopping$"
expect 2 "a relative DIR is refused" -- "$loop" m 1
like "with the usage" "$err" "usage: .* /DIR \[SECONDS\]"
pgrep -f "$tap_tmp/" >/dev/null && not_ok "no process is left" || ok "no process is left"
tap_plan_end
