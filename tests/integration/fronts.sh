#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clipd's fronts under stops, freezes and inspection (issue 20, findings 5
# and 6), with a real clipd, two cages and clipctl as the cages:
# - a front survives 100 SIGSTOP/SIGCONT cycles and a cgroup freeze/thaw
#   (the v1 freezer, and cgroup2's cgroup.freeze) while transfers go
#   through: the poll() they interrupt is resumed by restart_syscall,
#   which its filter must allow, or the front is killed and clipd exits;
# - each front is confined as clipd(8) says: its own uid (root mode), an
#   empty root, no capabilities, no new privileges, a seccomp filter, its
#   own log channel, whose lines the main process prefixes.
# tests/integration/front-attack.c attacks from inside the sandbox itself.
#
# - a front refuses a cage's lingering socket without waiting on its
#   close (the cage's next request is answered at once).
#
#   fronts.sh CLIPD CLIP_CONFIRM CLIPCTL PEER
set -u
clipd=$1 confirm=$2 clipctl=$3 peer=$4
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/transfer-lib.sh"

d=$base/main
mkdir -p "$d/cfg" "$d/state" "$d/run" "$d/in-low" "$d/in-high"
chmod 700 "$d/state"
echo "low high allow" >"$d/cfg/policy"
printf '%s\n' "low s0 $d/in-low $d/run/low.sock" "high s2 $d/in-high $d/run/high.sock" >"$d/cfg/cages"
head -c 1000 /dev/urandom >"$base/doc.bin"
send() { "$clipctl" $mode transfer send "$base/doc.bin" --to high --socket "$d/run/low.sock" --name "$1"; }

if start_clipd -v; then ok "clipd is ready"; else not_ok "clipd is ready"; tap_diag "$(cat "$d/clipd.log")"; fi
read -r -a fronts < <(cat "/proc/$clipd_pid/task/$clipd_pid/children" 2>/dev/null)
is "clipd has two fronts" "${#fronts[@]}" 2
front=${fronts[0]:-0}
uid_of() { awk '/^Uid:/ { print $2 }' "/proc/$1/status"; }
[ "$(grep -c "confined\|one id only" "$d/clipd.log")" -ge 2 ] || sleep 1

echo "# finding 5: stops and freezes"
sent=23 # before, 20 during the stops, after them, after the freezes
expect 0 "a transfer before the stops" -- send before.bin
# Transfers go on while the front is stopped and continued 100 times.
(
	fails=0
	for i in $(seq 1 20); do send "during-$i.bin" >/dev/null 2>&1 || fails=$((fails + 1)); done
	echo "$fails" >"$base/sender-fails"
) &
sender=$!
for i in $(seq 1 100); do
	kill -STOP "$front" 2>/dev/null
	sleep 0.01
	kill -CONT "$front" 2>/dev/null
	sleep 0.01
done
wait "$sender"
is "stop/continue x100: the transfers during the stops all went through" "$(cat "$base/sender-fails")" 0
kill -0 "$clipd_pid" 2>/dev/null && ok "stop/continue x100: clipd is still serving" ||
	{ not_ok "stop/continue x100: clipd is still serving"; tap_diag "$(tail -3 "$d/clipd.log")"; }
[ -d "/proc/$front" ] && ok "stop/continue x100: the front is the same process" ||
	not_ok "stop/continue x100: the front is the same process"
expect 0 "stop/continue x100: a transfer after the stops" -- send after-stops.bin

# freeze_in DIR STATEFILE FROZEN THAWED: move the front into a new cgroup
# under DIR, freeze it, send (it waits), thaw it, check the send ends.
freeze_in() {
	local name=$1 dir=$2/clip-fronts-$$ file=$3 frozen=$4 thawed=$5 ok_frozen=0 s
	if ! mkdir "$dir" 2>/dev/null || ! echo "$front" >"$dir/cgroup.procs" 2>/dev/null; then
		rmdir "$dir" 2>/dev/null
		skip "$name freeze/thaw: the front survives" "cannot make a cgroup under $2 here"
		return
	fi
	echo "$frozen" >"$dir/$file"
	for _ in $(seq 1 100); do
		if [ -e "$dir/cgroup.events" ]; then
			grep -q "^frozen 1" "$dir/cgroup.events" && { ok_frozen=1; break; }
		else
			s=$(cat "$dir/$file")
			[ "$s" = "$frozen" ] && { ok_frozen=1; break; }
		fi
		sleep 0.02
	done
	sent=$((sent + 1))
	send "frozen-$name.bin" >/dev/null 2>&1 &
	local pending=$!
	sleep 0.3
	echo "$thawed" >"$dir/$file"
	wait "$pending"
	local rc=$?
	echo "$front" >"$2/cgroup.procs" 2>/dev/null
	rmdir "$dir"
	[ "$ok_frozen" = 1 ] && ok "$name freeze/thaw: the front was frozen" || not_ok "$name freeze/thaw: the front was frozen"
	is "$name freeze/thaw: the transfer sent while frozen went through" "$rc" 0
	kill -0 "$clipd_pid" 2>/dev/null && ok "$name freeze/thaw: clipd is still serving" ||
		not_ok "$name freeze/thaw: clipd is still serving"
}
if is_root && [ -w /sys/fs/cgroup/freezer/cgroup.procs ]; then
	freeze_in "cgroup v1" /sys/fs/cgroup/freezer freezer.state FROZEN THAWED
else
	skip "cgroup v1 freeze/thaw: the front survives" "no writable v1 freezer here"
fi
v2=
for m in /sys/fs/cgroup/unified /sys/fs/cgroup; do
	[ "$(stat -f -c %T "$m" 2>/dev/null)" = cgroup2fs ] && [ -w "$m/cgroup.procs" ] && v2=$m && break
done
if is_root && [ -n "$v2" ]; then
	freeze_in "cgroup2" "$v2" cgroup.freeze 1 0
else
	skip "cgroup2 freeze/thaw: the front survives" "no writable cgroup2 hierarchy here"
fi
expect 0 "after the freezes: a transfer" -- send after-freezes.bin
echo "# a cage's lingering socket, refused by its front"
# The front stopped while the peer sends and closes its copy: the front's
# copy is then the last, whatever the timing.
kill -STOP "$front"
"$peer" "$d/run/low.sock" linger-bad 10 high >"$base/linger.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q '^sent' "$base/linger.out" && break; sleep 0.1; done
sleep 0.1
kill -CONT "$front"
sleep 0.3
t0=$(date +%s%N)
sent=$((sent + 1))
expect 0 "linger: the same cage's next document is delivered" -- send after-linger.bin
ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$ms" -lt 2000 ]; then
	ok "linger: the front answers within 2 s, not after the 10 s linger ($ms ms)"
else
	not_ok "linger: the front answers within 2 s, not after the 10 s linger ($ms ms)"
fi
for _ in $(seq 20); do grep -q '^closed' "$base/linger.out" && break; sleep 0.1; done
like "linger: the front closed the connection of the malformed message" "$(cat "$base/linger.out")" "closed"
n=$(ls "$d/in-high" | wc -l)
is "every transfer was delivered once" "$n" "$sent"

echo "# finding 6: what each front is"
for i in 0 1; do
	st=$(cat "/proc/${fronts[$i]:-0}/status" 2>/dev/null)
	like "front $i status: no new privileges" "$st" "NoNewPrivs:	1"
	like "front $i status: a seccomp filter" "$st" "Seccomp:	2"
	like "front $i status: no capabilities" "$st" "CapEff:	0000000000000000"
done
if is_root && [ "$(id -u)" = 0 ] && [ "$(awk '{print $3}' /proc/self/uid_map)" = 4294967295 ]; then
	is "root mode: the first front's uid is its own" "$(uid_of "${fronts[0]}")" $((0x7ffd0000))
	is "root mode: the second front's uid is its own" "$(uid_of "${fronts[1]}")" $((0x7ffd0001))
	is "root mode: the first front's root is empty" "$(ls -A "/proc/${fronts[0]}/root/" 2>&1)" ""
	[ "$(readlink "/proc/${fronts[0]}/ns/mnt")" != "$(readlink "/proc/$clipd_pid/ns/mnt")" ] &&
		ok "root mode: a front has a mount namespace of its own" ||
		not_ok "root mode: a front has a mount namespace of its own"
	like "root mode: the log says each front's uid, prefixed" "$(cat "$d/clipd.log")" \
		"clipd: front of 'low': confined: uid $((0x7ffd0000))"
else
	like "one id only: the log says the fronts share it, prefixed" "$(cat "$d/clipd.log")" \
		"clipd: front of 'low': one id only here: the fronts share a uid, each in a user namespace of its own"
	[ "$(uid_of "${fronts[0]}")" = "$(id -u)" ] && ok "one id only: the front runs as it" ||
		not_ok "one id only: the front runs as it"
fi
# The front's fds: the cage's socket, the channel up, the log (1, 2), /dev/null.
fds=$(ls "/proc/$front/fd" 2>/dev/null | sort -n | tr '\n' ' ')
if [ -n "$fds" ]; then
	is "a front holds its socket, its channel up and its log only" "$fds" "0 1 2 3 4 "
	like "a front's stderr is a pipe of its own, not clipd's" "$(readlink "/proc/$front/fd/2")" "^pipe:"
else
	skip "a front holds its socket, its channel up and its log only" "its fds are not visible to uid $(id -u)"
fi
stop_all
tap_plan_end
