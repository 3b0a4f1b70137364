# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the shell tests (tests/integration/tap.sh, tests/exec/lib.sh).

# is_root: whether this is root of the host, uid 0 in the initial user
# namespace (which maps every id). uid 0 of a container's user namespace
# (unshare -Urm, rootless podman) has no trusted.* attributes and no other
# uid to switch or chown to: the tests take their unprivileged paths there,
# as test_is_root() does in C.
is_root() {
	local inside outside count
	[ "$(id -u)" -eq 0 ] && read -r inside outside count </proc/self/uid_map &&
		[ "$inside $outside $count" = "0 0 4294967295" ]
}
