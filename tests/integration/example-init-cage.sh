#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# examples/init-cage.c does what its comment says: the command's exit
# status comes back through its poll() loop, SIGTERM read from its
# signalfd stops the cage (SIGKILL after the grace for a command that
# ignores it), and nothing of the cage outlives it.
#
#   example-init-cage.sh INIT_CAGE
set -u
init_cage=$1
. "$(dirname "$0")/tap.sh"
profiles=$(dirname "$0")/../../examples/profiles

if [ "$(id -u)" != 0 ] && ! unshare -Ur true 2>/dev/null; then
	echo "1..0 # SKIP this host refuses user namespaces to uid $(id -u)"
	exit 0
fi

expect 7 "the command's exit status is the example's" -- "$init_cage" "$profiles/low.cage" sh -c 'hostname; exit 7'
is "it ran in the cage and its status was printed" "$out" "low
exit status 7"
expect 137 "a command killed by SIGKILL gives 128+9" -- "$init_cage" "$profiles/high.cage" sh -c 'kill -9 $$'
is "and says so" "$out" "exit status 137"
expect 1 "an unknown command fails" -- "$init_cage" "$profiles/low.cage" no-such-command
like "with the library's message" "$err" "no-such-command: .*cannot execute"
printf '[Cage]\nName=x\n[Limits]\nTasksMax=many\n' >"$tap_tmp/bad.cage"
expect 1 "a bad profile fails" -- "$init_cage" "$tap_tmp/bad.cage" true
like "with the parser's message: file, line and key" "$err" "bad.cage:4: \[Limits\] TasksMax"

# stop_with_sigterm DESCRIPTION STATUS COMMAND: start the example on
# COMMAND, which prints "ready" once it runs, send it SIGTERM, and check
# the status it exits with.
stop_with_sigterm() {
	local desc=$1 want=$2 status
	rm -f "$tap_tmp/out"
	mkfifo "$tap_tmp/out"
	"$init_cage" "$profiles/low.cage" sh -c "$3" >"$tap_tmp/out" 2>"$tap_tmp/err" &
	pid=$!
	exec 4<"$tap_tmp/out"
	read -r -t 20 -u 4 line || line=
	is "$desc: the command runs" "$line" ready
	kill -TERM "$pid"
	wait "$pid" && status=0 || status=$?
	out=$(cat <&4)
	exec 4<&-
	is "$desc: the example exits with the command's status" "$status" "$want"
	is "$desc: and prints it" "$out" "exit status $want"
	like "$desc: the signal was read from the signalfd" "$(cat "$tap_tmp/err")" "Terminated, stopping the cage"
}

# A unique argument (a valid number: the digits of a fraction), to look
# for the command among the host's processes.
marker=$$$RANDOM
stop_with_sigterm "SIGTERM" 143 "echo ready; exec sleep 1000.$marker"
pgrep -f "sleep 1000.$marker" >/dev/null && not_ok "nothing of the cage is left" || ok "nothing of the cage is left"
t0=$(date +%s%N)
stop_with_sigterm "SIGTERM ignored" 137 "trap '' TERM; echo ready; exec sleep 1001.$marker"
waited=$((($(date +%s%N) - t0) / 1000000))
if [ "$waited" -ge 1900 ] && [ "$waited" -lt 15000 ]; then
	ok "SIGKILL came after the grace of 2 s ($waited ms)"
else
	not_ok "SIGKILL came after the grace of 2 s ($waited ms)"
fi
pgrep -f "sleep 1001.$marker" >/dev/null && not_ok "nothing of that cage is left" || ok "nothing of that cage is left"
tap_plan_end
