#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `clipctl watch`: what the user should see of a session, in order, as it
# comes (issue 18): a transfer asked and delivered, one denied (its name,
# a cage's words, escaped on one line), a cage that died, the cages
# stopped by `session down`, then the end of the stream. Each interpreter
# given (clip-python, clip-perl: those this build has) refuses a script
# in /data, mounted noexec, and reports it: exec-refused.
#
#   session-watch.sh CLIPCTL CLIP_CONFIRM SESSIONS_DIR [INTERPRETER...]
set -u
clipctl=$1 confirm=$2 examples=$3
shift 3
interpreters=("$@")
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/session-lib.sh"
session_setup clip-watch

# What Landlock refuses a cage reaches the watch as it comes, where the
# kernel's audit gives it: to the host's root in root mode, the audit
# turned on here before the cages start (and back as it was at the end).
audit_set() { # 0|1: prints the state before
	python3 - "$1" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)  # NETLINK_AUDIT
s.send(struct.pack("=IHHII", 16, 1000, 1, 1, 0))  # AUDIT_GET
print(struct.unpack("=I", s.recv(64)[20:24])[0])
body = struct.pack("=10I", 1, int(sys.argv[1]), 0, 0, 0, 0, 0, 0, 0, 0)  # mask ENABLED
s.send(struct.pack("=IHHII", 16 + len(body), 1001, 5, 1, 0) + body)  # AUDIT_SET, ack
sys.exit(struct.unpack("=i", s.recv(64)[16:20])[0] != 0)
PY
}
denials=
if [ "$(id -u)" = 0 ] && [ "${#mode[@]}" = 0 ] && audit_was=$(audit_set 1 2>/dev/null); then
	denials=1
	trap 'audit_set "$audit_was" >/dev/null; session_cleanup' EXIT
fi

expect 0 "session up" -- ctl session up --log "$base/runner.log" "$x/demo.session"
expect 1 "watch of a session that is not up fails" -- ctl watch nosuch
like "and names it" "$err" 'nosuch'

ctl watch demo >"$base/watch.out" 2>"$base/watch.err" &
watch_pid=$!
bg_pids+=("$watch_pid")
wait_file "$base/watch.out" '^watching session demo$' && ok "watch starts" || not_ok "watch starts: $(cat "$base/watch.err")"
"$confirm" --socket "$sd/confirm.sock" --auto yes >"$base/agent.log" 2>&1 &
agent_pid=$!
bg_pids+=("$agent_pid")
wait_file "$base/agent.log" 'connected to' && ok "the agent is connected" || not_ok "the agent is connected"

expect 0 "exec: a document in low" -- ctl session exec demo low -- sh -c 'echo figures >/data/figures.txt'
# LeakSanitizer cannot run in a cage (an ASan build): the clipctl there does without it.
incage=(env ASAN_OPTIONS=detect_leaks=0 "$cc")
expect 0 "low -> high is asked, and delivered" -- ctl session exec demo low -- "${incage[@]}" transfer send /data/figures.txt --to high
expect 3 "low -> side is denied by the policy" -- ctl session exec demo low -- "${incage[@]}" transfer send /data/figures.txt --to side
nl=$'\n'
expect 3 "a name with a line break is denied" -- ctl session exec demo low -- "${incage[@]}" transfer send /data/figures.txt --to high --name "evil${nl}cage-stopped high"
# Each interpreter of this build refuses a script in /data (noexec), and
# says so to the core: the cage's name comes from its socket.
want_refused=
for interp in "${interpreters[@]}"; do
	i=$(basename "$interp")
	expect 0 "exec: a script for $i in low" -- ctl session exec demo low -- sh -c "echo 'print 1;' >/data/$i.script"
	expect 126 "$i refuses a script in /data, noexec" -- ctl session exec demo low -- env ASAN_OPTIONS=detect_leaks=0 "/opt/clip/programs/$i/$i" "/data/$i.script"
	want_refused+="exec-refused low: /data/$i\\.script \\([^
]*noexec[^
]*\\)
"
done
# Landlock refuses low a TCP connection (no port is listed): the watch shows it.
# Then a flood of 50: at most 10 at once and one a second are fed, the rest
# counted, the count shown with the next one.
if [ -n "$denials" ]; then
	expect 1 "low's TCP connection is refused" -- ctl session exec demo low -- bash -c 'exec 3<>/dev/tcp/127.0.0.1/9'
	expect 0 "low floods: 50 refused connections" -- ctl session exec demo low -- bash -c 'for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/9) 2>/dev/null; done; true'
	sleep 1.2
	expect 1 "one more, a second later" -- ctl session exec demo low -- bash -c 'exec 3<>/dev/tcp/127.0.0.1/9'
	# The count comes with the next denial fed. A runner still reading the
	# flood (a loaded machine) may have spent that second's token on it:
	# one more, a second later each time, until the count is shown.
	extra=0
	while [ "$extra" -lt 4 ]; do
		for _ in $(seq 10); do
			grep -q 'more Landlock denials of this cage not shown' "$base/watch.out" && break 2
			sleep 0.1
		done
		extra=$((extra + 1))
		ctl session exec demo low -- bash -c 'exec 3<>/dev/tcp/127.0.0.1/9' >/dev/null 2>&1
	done
fi
side=$(ctl cage list 2>/dev/null | awk '$1 == "demo.side" { print $3 }')
[ -n "$side" ] && kill -KILL "$side"
wait_file "$base/watch.out" '^cage-died side' && ok "side's death is seen" || not_ok "side's death is seen"
expect 0 "session down" -- ctl session down demo
for i in $(seq 100); do [ -d "/proc/$watch_pid" ] || break; sleep 0.1; done
wait "$watch_pid"
rc=$?
bg_pids=("$agent_pid")
[ "$rc" = 0 ] && ok "watch exits 0 when the session stops" || not_ok "watch exits 0 when the session stops (rc $rc: $(cat "$base/watch.err"))"
kill "$agent_pid" 2>/dev/null
wait "$agent_pid" 2>/dev/null
bg_pids=()

# The events, in order; cage-stopped of low and high in either order.
got=$(grep -v -e '^watching' -e '^cage-refused ' "$base/watch.out")
want_re='^transfer-asked low -> high: figures\.txt
transfer-delivered low -> high: figures\.txt
transfer-denied low -> side: figures\.txt \([^
]*\)
transfer-denied low -> high: evil\\u\{[0]*[aA]\}cage-stopped high \([^
]*\)
'"$want_refused"'cage-died side \(killed by signal 9\)
cage-stopped (low|high)
cage-stopped (low|high)
session demo: the stream ended$'
if [[ "$got" =~ $want_re ]]; then
	ok "the events come in order, escaped, one line each"
else
	not_ok "the events come in order, escaped, one line each"
	printf '# %s\n' "$got" | sed 's/^/# /'
fi
if [ -n "$denials" ]; then
	grep -Eq '^cage-refused low \(net\.connect_tcp .*dest=9\)$' "$base/watch.out" &&
		ok "Landlock's refusal of low is in the watch" ||
		not_ok "Landlock's refusal of low is in the watch"
	n=$(grep -c '^cage-refused low ' "$base/watch.out")
	[ "$n" -le $((13 + extra)) ] && ok "a flood of Landlock denials is fed boundedly ($n lines)" ||
		not_ok "a flood of Landlock denials is fed boundedly ($n lines)"
	grep -Eq '^cage-refused low \([0-9]+ more Landlock denials of this cage not shown' "$base/watch.out" &&
		ok "the count of the Landlock denials not shown is fed" || not_ok "the count of the Landlock denials not shown is fed"
else
	for t in "Landlock's refusal of low is in the watch" "a flood of Landlock denials is fed boundedly" \
		"the count of the Landlock denials not shown is fed"; do
		skip "$t" "only the host's root, cages in root mode, reads the kernel's audit"
	done
fi
# The name "evil<newline>cage-stopped high" would forge a line of its own raw.
[ "$(grep -c '^cage-stopped high$' "$base/watch.out")" = 1 ] && ok "a name's forged line is no line of its own" ||
	not_ok "a name's forged line is no line of its own"

tap_plan_end
