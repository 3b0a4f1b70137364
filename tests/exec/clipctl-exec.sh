#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clipctl exec-check and exec-policy on real files: an executable file on an
# exec mount, the same on a noexec mount, a file without the x bit, a
# directory, a FIFO, a socket, a file open for writing; the securebits set,
# locked and inherited; as root and as nobody.
#
# usage: clipctl-exec.sh CLIPCTL
set -u
clipctl=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
enter_namespace "$@"
setup_mounts
. "$here/../integration/tap.sh"

x=$T/exec
cp /bin/true "$x/prog"
cp /bin/true "$T/noexec/prog"
echo 'echo hi' >"$x/script"
chmod 644 "$x/script"
mkfifo "$x/fifo"
/usr/bin/python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('$x/sock')"
chmod 755 "$x/sock"

ids=root
[ "$CLIP_EXEC_NS" = root ] && ids="root user"
[ "$CLIP_EXEC_NS" = user ] && ids=user

for id in $ids; do
	run() { exec_as "$id" "$@"; }
	echo "# as $id"
	expect 0 "$id: an executable file on an exec mount is allowed" -- run none "$clipctl" exec-check "$x/prog"
	is "$id: allowed" "$out" "$x/prog: allowed"
	expect 1 "$id: the same file on a noexec mount is refused" -- run none "$clipctl" exec-check "$T/noexec/prog"
	like "$id: because of the mount" "$err" "refused: its file system is mounted noexec"
	expect 1 "$id: a file without the x bit is refused" -- run none "$clipctl" exec-check "$x/script"
	like "$id: because of its mode" "$err" "refused: it is not executable by this user \(mode 0644\)"
	expect 1 "$id: a directory is refused" -- run none "$clipctl" exec-check "$x"
	like "$id: as a directory" "$err" "refused: it is a directory"
	expect 1 "$id: a FIFO is refused" -- run none "$clipctl" exec-check "$x/fifo"
	like "$id: as a FIFO" "$err" "refused: it is a pipe or FIFO"
	expect 1 "$id: a socket is refused" -- run none "$clipctl" exec-check "$x/sock"
	like "$id: as a socket" "$err" "socket|No such device"
	expect 1 "$id: a missing file is an error" -- run none "$clipctl" exec-check "$x/missing"

	expect 0 "$id: exec-policy prints the bits" -- run none "$clipctl" exec-policy
	like "$id: all off" "$out" "securebits 0x0000"
	like "$id: the check is native on this kernel" "$out" "check native"
	expect 0 "$id: exec-policy BITS -- COMMAND runs COMMAND under them" -- \
		run none "$clipctl" exec-policy restrict-file deny-interactive -- "$clipctl" exec-policy
	like "$id: restrict-file on" "$out" "restrict-file on"
	like "$id: deny-interactive on" "$out" "deny-interactive on"
	like "$id: 0x0500" "$out" "securebits 0x0500"
	expect 0 "$id: the bits pass to grandchildren" -- \
		run none "$clipctl" exec-policy restrict-file -- sh -c "\"$clipctl\" exec-policy"
	like "$id: inherited across fork and exec" "$out" "restrict-file on"
	expect 0 "$id: a lock keeps the bit" -- \
		run none "$clipctl" exec-policy restrict-file restrict-file-locked -- "$clipctl" exec-policy
	like "$id: locked" "$out" "restrict-file-locked on"
	expect 1 "$id: a bit locked off cannot be set" -- \
		run none "$clipctl" exec-policy deny-interactive-locked -- "$clipctl" exec-policy deny-interactive -- true
	like "$id: locked off" "$err" "SECBIT_EXEC_DENY_INTERACTIVE is locked off"
	expect 0 "$id: setting a bit that is already set is not an error" -- \
		run none "$clipctl" exec-policy restrict-file -- "$clipctl" exec-policy restrict-file -- true
	expect 0 "$id: exec-check answers the same under restrict-file" -- \
		run restrict-file "$clipctl" exec-check "$x/prog"
done

# A file open for writing cannot be checked (ETXTBSY), whoever asks.
exec 3>>"$x/prog"
expect 1 "a file open for writing is refused" -- "$clipctl" exec-check "$x/prog"
like "as busy" "$err" "refused: it is open for writing"
exec 3>&-
expect 0 "and allowed again once closed" -- "$clipctl" exec-check "$x/prog"

expect 2 "exec-policy: an unknown bit is a usage error" -- "$clipctl" exec-policy restrict
expect 2 "exec-policy: bits without a command are a usage error" -- "$clipctl" exec-policy restrict-file
expect 2 "exec-check: one file" -- "$clipctl" exec-check
expect 127 "exec-policy: a missing command" -- "$clipctl" exec-policy restrict-file -- /nonexistent/cmd

tap_plan_end
