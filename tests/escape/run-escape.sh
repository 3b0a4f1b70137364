#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The escape suite: cage B (level s2) serves an abstract and a path UNIX
# socket, TCP and UDP; the host serves an abstract socket and TCP; then
# tests/escape/escape runs in cage A (level s0, W^X) with an fd of B's
# secret leaked from the launcher, and tries everything (escape.c). Run
# as root (uid ranges, cgroup limits) or rootless (as uid 65534, through
# setpriv). TAP: the escape program's lines, then this script's.
#
# usage: run-escape.sh CLIPCTL ESCAPE root|rootless
set -u
clipctl=$1
escape=$2
mode=$3
. "$(dirname "$0")/../integration/tap.sh"

. "$(dirname "$0")/mode.sh"

tmp=$(mktemp -d /tmp/clip-escape-XXXXXX)
chmod 755 "$tmp"
b_pid=
serve_pids=()
cleanup() {
	[ -n "$b_pid" ] && "${as[@]}" "$clipctl" --state-dir "$tmp/state" cage stop --grace-ms 0 "$b_name" >/dev/null 2>&1
	for p in "${serve_pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp" "$tap_tmp"
}
trap cleanup EXIT

a_name=esc-a-$mode-$$
b_name=esc-b-$mode-$$
a_base=$((0x100000 + ($$ % 64) * 0x20000))
b_base=$((a_base + 0x10000))
mkdir -m 0700 "$tmp/state" "$tmp/data-a" "$tmp/data-b"
echo "level s2 secret" >"$tmp/data-b/secret"
if [ "$mode" = root ]; then
	chown "$a_base:$a_base" "$tmp/data-a"
	chown -R "$b_base:$b_base" "$tmp/data-b"
else
	chown "$owner" "$tmp/state" "$tmp/data-a"
	chown -R "$owner" "$tmp/data-b"
fi
# A copy the cage's uids can reach whatever the build directory's modes.
mkdir -m 0755 "$tmp/bin"
cp "$escape" "$tmp/bin/escape"
escdir=$tmp/bin

# Root: a veth pair and an address each; rootless: loopback only. B binds
# the TCP port it serves; A may connect to B's and the host's (which its
# network namespace then refuses); neither to any other.
profile() { # NAME LEVEL DATA BASE WX ADDRESS PORTS
	printf '[Cage]\nName=%s\nLevel=%s\nDataDirectory=%s\nUidBase=%s\n' "$1" "$2" "$3" "$4"
	printf '[Files]\nBindReadOnly=%s:/escape\n' "$escdir"
	if [ "$mode" = root ]; then
		printf '[Network]\nMode=veth\nAddress=%s/24\n' "$6"
	else
		printf '[Network]\nMode=loopback\n'
	fi
	printf '%s\n' "$7"
	printf '[Limits]\nMemoryMax=64M\nTasksMax=32\n'
	printf '[Security]\nWriteXorExecute=%s\n' "$5"
}
profile "$a_name" s0 "$tmp/data-a" "$a_base" yes 10.77.1.2 "TCPConnectPorts=47777 47779" >"$tmp/a.cage"
profile "$b_name" s2 "$tmp/data-b" "$b_base" no 10.77.2.2 "TCPBindPorts=47777" >"$tmp/b.cage"

c=("${as[@]}" "$clipctl" --state-dir "$tmp/state")

# wait_ready FIFO: the first line a server writes, or a timeout.
wait_ready() {
	local line=
	read -r -t 20 line <"$1"
	[ "$line" = ready ]
}

expect 0 "cage B starts and is registered" -- "${c[@]}" cage start --profile "$tmp/b.cage"
b_pid=${out##* }
expect 0 "cage list shows cage B" -- "${c[@]}" cage list
like "cage list names B, its level and init" "$out" "^$b_name	s2	$b_pid	"

mkfifo "$tmp/b.fifo" "$tmp/host.fifo"
"${c[@]}" cage exec "$b_name" -- /escape/escape --serve >"$tmp/b.fifo" 2>"$tmp/b.err" &
serve_pids+=($!)
if wait_ready "$tmp/b.fifo"; then ok "cage B serves"; else not_ok "cage B serves: $(cat "$tmp/b.err")"; fi
"$escape" --serve-host >"$tmp/host.fifo" &
serve_pids+=($!)
if wait_ready "$tmp/host.fifo"; then ok "the host serves"; else not_ok "the host serves"; fi
# Controls: what cage A must not reach does exist.
if [ -S "$tmp/data-b/sock" ] && [ -r "$tmp/data-b/secret" ]; then
	ok "control: B's data directory holds its socket and secret on the host"
else
	not_ok "control: B's data directory holds its socket and secret on the host"
fi
hostname_before=$(hostname)

limits=()
[ "$mode" = root ] && limits=(--limits --other-addr 10.77.2.2 --root)
exec 9<"$tmp/data-b/secret"
"${as[@]}" "$clipctl" --state-dir "$tmp/state" -v cage run --profile "$tmp/a.cage" -- \
	/escape/escape --launcher-pid $$ \
	--other-pid "$b_pid" --other-data "$tmp/data-b" --leaked-fd 9 --wx "${limits[@]}" \
	>"$tmp/a.out" 2>"$tmp/a.err"
status=$?
exec 9<&-
while IFS= read -r line; do
	case $line in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	"1.."*) ;;
	*) echo "# $line" ;;
	esac
done <"$tmp/a.out"
is "the escape program ran to its end and passed" "$status" 0
[ "$status" = 0 ] || sed 's/^/#   stderr: /' "$tmp/a.err"
is "the host name is unchanged" "$(hostname)" "$hostname_before"
if [ "$mode" = rootless ]; then
	# This host has no cgroup delegated to an ordinary user: that is said, not pretended.
	like "rootless: the limits not applied are reported" "$(cat "$tmp/a.err")" \
		"limits not applied on this host: memory tasks"
fi

# Landlock's own attempts (issue 21), in cage B beside its server: the
# same namespaces, another Landlock domain. Root: over B's own veth.
b_addr=127.0.0.1
[ "$mode" = root ] && b_addr=10.77.2.2
"${c[@]}" cage exec "$b_name" -- /escape/escape --landlock "$b_addr" >"$tmp/l.out" 2>"$tmp/l.err"
status=$?
while IFS= read -r line; do
	case $line in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	"1.."*) ;;
	*) echo "# $line" ;;
	esac
done <"$tmp/l.out"
is "landlock: the attempts in cage B ran to their end and passed" "$status" 0
[ "$status" = 0 ] || sed 's/^/#   stderr: /' "$tmp/l.err"

expect 0 "cage B stops" -- "${c[@]}" cage stop --grace-ms 500 "$b_name"
b_pid=
expect 0 "cage list after stop" -- "${c[@]}" cage list
is "cage list is empty" "$out" ""
if [ "$mode" = root ]; then
	left=$(find /sys/fs/cgroup -maxdepth 4 -name "clip-esc-*-$mode-$$-*" 2>/dev/null)
	is "the cages' cgroups are removed" "$left" ""
fi
expect 1 "exec in a stopped cage fails" -- "${c[@]}" cage exec "$b_name" -- /bin/true
like "and says why" "$err" "no cage named $b_name is running"
tap_plan_end
