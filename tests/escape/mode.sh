# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the escape scripts, after tap.sh, with $mode set to root or
# rootless. The root variant skips when not run as root; the rootless one,
# run by root, runs the cages as uid 65534 (through setpriv). Sets `as`
# (the prefix of every clipctl command) and `owner` (the cages' uid on
# the host, which owns their directories).
if [ "$mode" = root ] && [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP the root variant needs root"
	exit 0
fi
as=()
owner=$(id -u)
if [ "$mode" = rootless ] && [ "$(id -u)" = 0 ]; then
	as=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
	owner=65534
fi
