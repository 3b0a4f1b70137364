#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A session of three levels from one file, as a shell user drives it:
# `clipctl session up` (the runner, clipd --session, in the background), a
# document moved up (ask, the agent says yes) and down (ask, encrypted), one
# cage restarted while a transfer from another waits for the user's answer
# (that transfer completes), `clipctl session down`, and then nothing left:
# no process, mount, cgroup, socket, registered cage or inbox temporary.
# Also: a runner killed with SIGKILL, whose cages `session down` stops, and a
# session file that `session up` refuses before anything starts.
#
#   session-cli.sh CLIPCTL CLIP_CONFIRM SESSIONS_DIR
#
# SESSIONS_DIR is examples/sessions (demo.session and its profiles). Run by
# root, the cages run in root mode; by another user, rootless.
set -u
clipctl=$1 confirm=$2 examples=$3
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/session-lib.sh"
session_setup clip-session
# clipctl in a cage: under AddressSanitizer without LeakSanitizer, which
# stops threads with ptrace(), refused by the cage's seccomp filter (as in
# transfer-cages.sh). Elsewhere the variable is empty and changes nothing.
cc_env=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")

# --- refused before anything starts ---
sed 's/^Level=s2$/Level=s2:c99999/' "$x/demo.session" >"$x/bad.session"
expect 1 "up refuses a bad session file with the parser's message" -- ctl session up "$x/bad.session"
like "the refusal names the file and the line" "$err" 'bad\.session:[0-9]+'
[ ! -e "$sd" ] && ok "a refused session file leaves no state" || not_ok "a refused session file leaves no state"

# --- up, status ---
expect 0 "session up starts the runner and returns once it is ready" -- ctl session up --log "$base/runner.log" "$x/demo.session"
like "session up says the session is up" "$out" '^session demo up$'
expect 0 "session status answers" -- ctl session status demo
for c in low high side; do
	like "status shows cage $c running" "$out" "^  $c  [^ ]+  running  [1-9][0-9]* process"
done
like "status shows no agent yet" "$out" 'no agent connected, 0 questions pending'
runner=$(pgrep -f "clipd --session $x/demo.session" | head -1)
[ -n "$runner" ] && ok "the runner runs in the background" || not_ok "the runner runs in the background"

# --- the wiring, seen from inside ---
expect 0 "exec: the cage sees its own socket alone at /run/clip" -- ctl session exec demo low -- ls /run/clip
[ "$out" = transfer.sock ] && ok "only transfer.sock in /run/clip" || not_ok "only transfer.sock in /run/clip (got: $out)"
expect 0 "exec: /inbox is mounted noexec,nosuid,nodev" -- ctl session exec demo low -- grep ' /inbox ' /proc/self/mounts
like "/inbox options" "$out" 'nosuid,nodev,noexec'
expect 0 "exec: /data is writable" -- ctl session exec demo low -- sh -c 'echo "quarterly figures" >/data/figures.txt'
expect 0 "exec: a document in high" -- ctl session exec demo high -- sh -c 'echo "TOP SECRET plans" >/data/plans.txt'
expect 0 "exec: the agent's socket is in no cage" -- ctl session exec demo low -- sh -c '! ls -a /run/clip /inbox /data | grep -q confirm.sock' 

# --- an agent on a pty of its own, that answers when the test says so ---
cat >"$base/agent.py" <<'EOF'
import os, pty, sys, time
# agent.py GATE_DIR CLIP_CONFIRM ARGS...: for each question, touch
# GATE_DIR/asked.N, wait for GATE_DIR/answer.N, type its content.
gate = sys.argv[1]
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
buf, n = b"", 0
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    buf += data
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    while b"[y/N] " in buf:
        buf = buf.split(b"[y/N] ", 1)[1]
        n += 1
        open(f"{gate}/asked.{n}", "w").close()
        while not os.path.exists(f"{gate}/answer.{n}"):
            time.sleep(0.02)
        os.write(fd, open(f"{gate}/answer.{n}", "rb").read())
EOF
mkdir "$base/gate"
python3 "$base/agent.py" "$base/gate" "$confirm" --socket "$sd/confirm.sock" >"$base/agent.log" 2>&1 &
bg_pids=($!)
for i in $(seq 100); do
	ctl session status demo 2>/dev/null | grep -q ': agent connected' && break
	sleep 0.1
done
expect 0 "status after the agent connected" -- ctl session status demo
like "status shows the agent connected" "$out" ', agent connected, 0 questions pending|: agent connected'

# --- up: low -> high, the user says yes ---
ctl session exec demo low -- "${cc_env[@]}" "$cc" transfer send /data/figures.txt --to high >"$base/up.out" 2>&1 &
send_up=$!
wait_file "$base/gate/asked.1" && ok "the move up is asked" || not_ok "the move up is asked"
expect 0 "status shows one question pending" -- ctl session status demo
like "one question pending" "$out" '1 question pending'
echo y >"$base/gate/answer.1"
if wait "$send_up"; then ok "the move up is delivered"; else
	not_ok "the move up is delivered"
	tap_diag "$(cat "$base/up.out")"
fi
expect 0 "high reads the document in its inbox" -- ctl session exec demo high -- cat /inbox/figures.txt
[ "$out" = "quarterly figures" ] && ok "the document is intact" || not_ok "the document is intact (got: $out)"

# --- down: high -> low, encrypted; side restarted while it waits ---
ctl session exec demo high -- "${cc_env[@]}" "$cc" transfer send /data/plans.txt --to low >"$base/down.out" 2>&1 &
send_down=$!
wait_file "$base/gate/asked.2" && ok "the move down is asked" || not_ok "the move down is asked"
init_low=$(ctl session status demo | awk '$1 == "low" { print }')
pid_side_before=$(ctl cage list 2>/dev/null | awk '$1 == "demo.side" { print $3 }')
expect 0 "restart side while the transfer from high waits" -- ctl session restart demo side
pid_side_after=$(ctl cage list 2>/dev/null | awk '$1 == "demo.side" { print $3 }')
[ -n "$pid_side_after" ] && [ "$pid_side_before" != "$pid_side_after" ] && ok "side has a new init" ||
	not_ok "side has a new init ($pid_side_before -> $pid_side_after)"
expect 0 "status after the restart" -- ctl session status demo
like "side restarted once" "$out" '^  side  [^ ]+  running  .* 1 restart'
echo y >"$base/gate/answer.2"
if wait "$send_down"; then ok "the transfer in flight completes after the restart"; else
	not_ok "the transfer in flight completes after the restart"
	tap_diag "$(cat "$base/down.out")"
fi
expect 0 "low holds the envelope" -- ctl session exec demo low -- sh -c 'grep -c SECRET /inbox/plans.txt; true'
[ "$out" = 0 ] && ok "no plain text in low's inbox" || not_ok "no plain text in low's inbox ($out)"
expect 0 "the core opens the envelope for low" -- ctl transfer open "$sd/inbox/low/plans.txt" --for low -o "$base/plans.txt"
[ "$(cat "$base/plans.txt" 2>/dev/null)" = "TOP SECRET plans" ] && ok "the envelope holds the document" || not_ok "the envelope holds the document"

# --- down: nothing left ---
pids=$(for c in low high side; do ctl cage list 2>/dev/null | awk -v n="demo.$c" '$1 == n { print $3 }'; done)
expect 0 "session down" -- ctl session down demo
like "down says so" "$out" '^session demo down$'
kill "${bg_pids[@]}" 2>/dev/null
wait "${bg_pids[@]}" 2>/dev/null
bg_pids=()
left=
for p in $pids; do ended "$p" || left="$left $p"; done
[ -z "$left" ] && ok "no process of the session is left" || not_ok "no process of the session is left:$left"
# The runner answers "stop" once the session is down, then exits.
for i in $(seq 100); do ended "$runner" && break; sleep 0.05; done
ended "$runner" && ok "the runner exits after the stop" || not_ok "the runner exits after the stop"
[ -z "$(ctl cage list 2>/dev/null)" ] && ok "no cage is registered" || not_ok "no cage is registered: $(ctl cage list)"
socks=$(find "$sd" -type s 2>/dev/null)
[ -z "$socks" ] && ok "no socket is left" || not_ok "no socket is left: $socks"
grep -q "$base" /proc/self/mountinfo && not_ok "no mount of the session is left" || ok "no mount of the session is left"
cg=$(find /sys/fs/cgroup -maxdepth 4 -name 'demo.*' 2>/dev/null)
[ -z "$cg" ] && ok "no cgroup is left" || not_ok "no cgroup is left: $cg"
tmp=$(find "$sd/inbox" -name '.*' 2>/dev/null)
[ -z "$tmp" ] && ok "no inbox temporary is left" || not_ok "no inbox temporary is left: $tmp"
[ -s "$x/data/low/figures.txt" ] && ok "the data directories stay" || not_ok "the data directories stay"
expect 0 "the audit trail verifies" -- ctl audit verify

# --- a runner killed: down stops what it left ---
expect 0 "up again" -- ctl session up --log "$base/runner2.log" "$x/demo.session"
runner=$(pgrep -f "clipd --session $x/demo.session" | head -1)
kill -KILL "$runner"
for i in $(seq 200); do ended "$runner" && break; sleep 0.05; done
expect 0 "down after the runner was killed stops its cages" -- ctl session down demo
like "down says the runner was gone" "$out" 'session demo down: its runner was gone'
like "down names the cages it stopped" "$err" 'warning: session .demo.: cage demo\.low was left running by a runner that is gone'
[ -z "$(ctl cage list 2>/dev/null)" ] && ok "nothing registered after the cleanup" || not_ok "nothing registered after the cleanup"
expect 1 "down of a session that is not up fails" -- ctl session down demo
like "and says why" "$err" 'demo'

# --- a runner that fails before it is ready: one message, no stray errno ---
mkdir -p "$sd" && rm -rf "${sd:?}/inbox" && ln -s / "$sd/inbox"
expect 1 "up fails when the runner fails before it is ready" -- ctl session up "$x/demo.session"
like "up says the runner exited before it was ready" "$err" \
	"^clipctl: session up: the runner of session 'demo' exited before it was ready; its messages are above\$"
like "the runner's own message names the planted link" "$err" "$sd/inbox"
case $err in
*"No child processes"*) not_ok "no message from a stray errno (got: $err)" ;;
*) ok "no message from a stray errno" ;;
esac
rm -f "$sd/inbox"

tap_plan_end
