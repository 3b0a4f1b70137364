# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by the exec integration tests: a private mount namespace with an
# exec and a noexec tmpfs, the interpreters' libraries made executable on
# demand, and the identities the scenarios run as. Source it after tap.sh.
#
# As root: `unshare -m`, and each scenario runs as root and as nobody
# (setpriv). As another user, or uid 0 of a container: `unshare -Urm` (a
# user namespace where tmpfs and bind mounts are allowed), and the
# scenarios run without capabilities (setpriv --securebits +noroot). Everything lives in a tmpfs of the
# namespace, gone with it. Call enter_namespace before sourcing tap.sh,
# then setup_mounts.

# The interpreters keep their runtime's memory to the end (CPython, perl):
# under AddressSanitizer, leaks at exit are theirs, not checked here.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

. "$(dirname "${BASH_SOURCE[0]}")/../common/root.sh"

# enter_namespace "$@": re-run the calling script inside its namespace.
enter_namespace() {
	[ -n "${CLIP_EXEC_NS:-}" ] && return 0
	if is_root; then
		CLIP_EXEC_NS=root exec unshare -m --propagation private -- "$BASH" "$0" "$@"
	elif unshare -Urm true 2>/dev/null; then
		CLIP_EXEC_NS=user exec unshare -Urm --propagation private -- "$BASH" "$0" "$@"
	fi
	echo "1..0 # SKIP no mount namespace: not root, and unprivileged user namespaces are off"
	exit 0
}

# setup_mounts: a tmpfs over an empty system directory of the namespace
# (/mnt, else /media or /srv: nothing is left on the host, and the build
# directory stays visible), then $T/exec (tmpfs) and $T/noexec (tmpfs,
# noexec), world-readable.
setup_mounts() {
	local base
	for base in /mnt /media /srv; do
		[ -d "$base" ] && break
	done
	mount -t tmpfs -o mode=0755 clip-exec-test "$base"
	T=$base/clip-exec
	mkdir -p "$T/exec" "$T/noexec"
	chmod 755 "$T"
	mount -t tmpfs -o mode=0755 clip-exec "$T/exec"
	mount -t tmpfs -o mode=0755,noexec clip-noexec "$T/noexec"
}

# make_executable_copy DIR...: cover each system directory DIR with a copy
# made to pass the exec check by `clipctl exec-policy allow-tree`, as a
# system that sets SECBIT_EXEC_RESTRICT_FILE must deploy its interpreters'
# libraries (Debian installs them 0644). A copy, owned by the caller: the
# host's files stay as they are, and a user namespace can change it.
make_executable_copy() {
	local d copy
	for d in "$@"; do
		[ -d "$d" ] || continue
		copy=$T/exec/libs$(echo "$d" | tr / _)
		mkdir -p "$copy"
		(cd "$d" && tar --exclude=./test --exclude=./idlelib --exclude=./tkinter \
			--exclude=./turtledemo --exclude=./lib2to3 --exclude='./config-*' \
			--exclude=./pod -cf - .) | (cd "$copy" && tar --no-same-owner -xpf -)
		"$clipctl" exec-policy allow-tree "$copy" >/dev/null || return 1
		mount --bind "$copy" "$d"
	done
}

# as_root CMD / as_user CMD: the two identities of the scenarios.
as_root() { "$@"; }
as_user() {
	if [ "$CLIP_EXEC_NS" = root ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
	else
		setpriv --securebits=+noroot,+noroot_locked --bounding-set=-all --inh-caps=-all -- "$@"
	fi
}

# exec_as ID BITS CMD...: CMD as identity ID (root or user) under the exec
# securebits BITS (comma-separated, or "none"), which clipctl sets in the
# process that then runs CMD.
exec_as() {
	local id=$1 bits=$2 pre=()
	shift 2
	[ "$bits" != none ] && pre=("$clipctl" exec-policy ${bits//,/ } --)
	"as_$id" "${pre[@]}" "$@"
}
