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

# allow-tree: a library tree as Debian installs one (0644, 0640, a file
# already 0755), with what must not be blessed (group- and world-writable
# files, a world-writable directory, a set-user-ID file, a file of another
# user), a link out of the tree, a FIFO, and a mount inside.
lib=$x/lib
mkdir -p "$lib/pkg/sub" "$lib/open" "$lib/mnt" "$x/outside"
for f in a.py pkg/b.py pkg/sub/c.pm done.py gw.py ow.py suid theirs.py open/in.py; do
	echo pass >"$lib/$f"
done
echo pass >"$x/outside/o.py"
chmod 644 "$lib/a.py" "$lib/pkg/b.py" "$x/outside/o.py" "$lib/open/in.py" "$lib/theirs.py"
chmod 640 "$lib/pkg/sub/c.pm"
chmod 755 "$lib/done.py"
chmod 664 "$lib/gw.py"
chmod 646 "$lib/ow.py"
chmod 4644 "$lib/suid"
chmod 777 "$lib/open"
ln -s "$x/outside/o.py" "$lib/link.py"
ln -s "$x/outside" "$lib/linkdir"
mkfifo -m 644 "$lib/fifo"
mount -t tmpfs -o mode=0755 clip-exec-inner "$lib/mnt"
echo pass >"$lib/mnt/m.py"
chmod 644 "$lib/mnt/m.py"
n_unsafe=4 n_safe=4
if [ "$CLIP_EXEC_NS" = root ]; then
	chown 65534:65534 "$lib/theirs.py"
	n_unsafe=5
else
	rm "$lib/theirs.py"
fi
mode() { stat -c %a "$1"; }

expect 1 "allow-tree --check: a Debian-like tree fails" -- "$clipctl" exec-policy allow-tree --check "$lib"
is "allow-tree --check: what would change" "$out" \
	"$lib: $((n_safe + n_unsafe - 1)) files, $((n_safe - 1)) to change, $n_unsafe unsafe, 1 mount point not crossed: fails"
is "allow-tree --check: changes nothing" "$(mode "$lib/a.py") $(mode "$lib/pkg/sub/c.pm")" "644 640"
expect 1 "allow-tree: a tree with unsafe entries still fails" -- "$clipctl" exec-policy allow-tree "$lib"
is "allow-tree: counts" "$out" \
	"$lib: $((n_safe + n_unsafe - 1)) files, $((n_safe - 1)) changed, $n_unsafe unsafe, 1 mount point not crossed: fails"
is "allow-tree: x where r" "$(mode "$lib/a.py") $(mode "$lib/pkg/b.py") $(mode "$lib/pkg/sub/c.pm") $(mode "$lib/done.py")" \
	"755 755 750 755"
is "allow-tree: what others can write is left alone" \
	"$(mode "$lib/gw.py") $(mode "$lib/ow.py") $(mode "$lib/suid") $(mode "$lib/open/in.py")" "664 646 4644 644"
like "allow-tree: a group-writable file, and why" "$err" \
	"clipctl: warning: $lib/gw.py: file left as it is: writable by its group \(mode 0664\)"
like "allow-tree: a world-writable directory is not walked" "$err" \
	"clipctl: warning: $lib/open: directory \(not walked\) left as it is: writable by others \(mode 0777\)"
like "allow-tree: a set-user-ID file" "$err" \
	"$lib/suid: file left as it is: set-user-ID or set-group-ID without x bits \(mode 4644\)"
if [ "$CLIP_EXEC_NS" = root ]; then
	like "allow-tree: a file of another user" "$err" \
		"$lib/theirs.py: file left as it is: owned by uid 65534, who could change it"
	is "allow-tree: and it stays as it was" "$(mode "$lib/theirs.py")" 644
fi
is "allow-tree: a link out of the tree is not followed" "$(mode "$x/outside/o.py")" 644
is "allow-tree: a mount point is not crossed" "$(mode "$lib/mnt/m.py")" 644
is "allow-tree: a FIFO is left alone" "$(mode "$lib/fifo")" 644
expect 0 "allow-tree: a file it blessed passes the check" -- "$clipctl" exec-check "$lib/pkg/sub/c.pm"
rm -rf "$lib/gw.py" "$lib/ow.py" "$lib/suid" "$lib/open" "$lib/theirs.py"
expect 0 "allow-tree: without them the tree passes" -- "$clipctl" exec-policy allow-tree "$lib"
is "allow-tree: and a second run changes nothing" "$out" "$lib: 4 files, 0 changed, 1 mount point not crossed: passes"
expect 0 "allow-tree --check: passes now" -- "$clipctl" exec-policy allow-tree --check "$lib"
expect 0 "allow-tree --cross-mounts walks the mount" -- "$clipctl" exec-policy allow-tree --cross-mounts "$lib"
is "allow-tree --cross-mounts: counts" "$out" "$lib: 5 files, 1 changed: passes"
is "allow-tree --cross-mounts: the file on the mount" "$(mode "$lib/mnt/m.py")" 755
umount "$lib/mnt"
mkdir -p "$T/noexec/lib"
echo pass >"$T/noexec/lib/n.py"
chmod 755 "$T/noexec/lib/n.py"
expect 1 "allow-tree: a tree on a noexec mount fails whatever its modes" -- \
	"$clipctl" exec-policy allow-tree --check "$T/noexec/lib"
like "allow-tree: noexec, counted" "$out" "1 on a noexec mount: fails"
like "allow-tree: noexec, said" "$err" "is on a file system mounted noexec"
mkdir -m 777 "$x/shared"
mkdir "$x/shared/lib"
expect 1 "allow-tree: a tree below a world-writable directory fails" -- \
	"$clipctl" exec-policy allow-tree "$x/shared/lib"
like "allow-tree: the parent, and why" "$err" \
	"$x/shared/lib: a directory above it is writable by others \(mode 0777\)"
if [ "$CLIP_EXEC_NS" = root ]; then
	echo pass >"$x/shared/lib/r.py"
	chmod 755 "$x/shared"
	expect 1 "allow-tree: nobody cannot change root's files" -- \
		as_user "$clipctl" exec-policy allow-tree "$x/shared/lib"
	like "allow-tree: the file named" "$err" \
		"cannot change the mode of $x/shared/lib/r.py: Operation not permitted"
	expect 1 "allow-tree --check as nobody: says they would change" -- \
		as_user "$clipctl" exec-policy allow-tree --check "$x/shared/lib"
	like "allow-tree --check as nobody: one to change" "$out" "1 file, 1 to change: fails"
fi

# The trees of interpreters, asked of them with an empty environment: fake
# ones say what a Python or a Perl could (relative entries, hooks, files,
# missing directories, a directory twice, one inside another).
mkdir -p "$x/bin" "$x/fake/a/inner" "$x/fake/b"
printf '#!/bin/sh\n[ "$1" = -I ] || exit 3\n[ -z "$PYTHONPATH" ] || exit 4\nprintf "%%s\\0" "" %s\n' \
	"$x/fake/a $x/fake/missing $x/fake/a/inner $x/outside/o.py $x/fake/b $x/fake/a" >"$x/bin/fakepython"
printf '#!/bin/sh\n[ -z "$PERL5LIB" ] || exit 4\nprintf "%%s\\0" "CODE(0x1)" %s\n' "$x/fake/b $x/fake/a" \
	>"$x/bin/fakeperl"
printf '#!/bin/sh\nexit 1\n' >"$x/bin/brokenpython"
chmod 755 "$x/bin/fakepython" "$x/bin/fakeperl" "$x/bin/brokenpython"
PYTHONPATH=/usr expect 0 "allow-tree --list --interpreter: the trees a python names" -- \
	"$clipctl" exec-policy allow-tree --list --interpreter "$x/bin/fakepython"
is "allow-tree --list: existing directories, once, none inside another" "$out" "$x/fake/a
$x/fake/b"
PERL5LIB=/usr PATH=$x/bin:$PATH expect 0 "allow-tree --list --interpreter: a perl found in PATH" -- \
	"$clipctl" exec-policy allow-tree --list --interpreter fakeperl "$x/fake/a/inner"
is "allow-tree --list: a named tree inside one of the interpreter's is walked with it" "$out" "$x/fake/b
$x/fake/a"
expect 1 "allow-tree: an interpreter that fails is an error" -- \
	"$clipctl" exec-policy allow-tree --interpreter "$x/bin/brokenpython"
like "allow-tree: which one" "$err" "cannot ask $x/bin/brokenpython for its library directories: it failed"
expect 2 "allow-tree: an interpreter of unknown kind is a usage error" -- \
	"$clipctl" exec-policy allow-tree --interpreter /bin/true
expect 2 "allow-tree: nothing to walk is a usage error" -- "$clipctl" exec-policy allow-tree
expect 2 "allow-tree: an unknown option is a usage error" -- "$clipctl" exec-policy allow-tree --bogus "$lib"
expect 0 "allow-tree --help" -- "$clipctl" exec-policy allow-tree --help
like "allow-tree --help: the usage" "$out" "exec-policy allow-tree \\[--check\\]"
expect 1 "allow-tree: a missing directory is an error" -- "$clipctl" exec-policy allow-tree "$x/nonexistent"
like "allow-tree: named" "$err" "$x/nonexistent: No such file or directory"
expect 1 "allow-tree: a missing interpreter is an error" -- \
	"$clipctl" exec-policy allow-tree --interpreter "$x/bin/nopython"
like "allow-tree: a missing interpreter, named" "$err" \
	"cannot ask $x/bin/nopython for its library directories: No such file or directory"
expect 0 "allow-tree --ignore-missing: skips both, as a package hook must after a removal" -- \
	"$clipctl" exec-policy allow-tree --list --ignore-missing --interpreter "$x/bin/nopython" \
	"$x/nonexistent" "$x/fake/b"
is "allow-tree --ignore-missing: the rest is listed" "$out" "$x/fake/b"
PYTHONPATH=$x/fake/b expect 0 "allow-tree --list: Debian's python3" -- \
	"$clipctl" exec-policy allow-tree --list --interpreter /usr/bin/python3
like "allow-tree --list: the standard library" "$out" "^/usr/lib/python3\.[0-9]+$"
like "allow-tree --list: dist-packages" "$out" "^/usr/lib/python3/dist-packages$"
if printf '%s\n' "$out" | grep -q -e /fake/b -e lib-dynload; then
	not_ok "allow-tree --list: neither PYTHONPATH nor lib-dynload (inside the standard library)"
else
	ok "allow-tree --list: neither PYTHONPATH nor lib-dynload (inside the standard library)"
fi
expect 0 "allow-tree --list: Debian's perl" -- "$clipctl" exec-policy allow-tree --list --interpreter /usr/bin/perl
like "allow-tree --list: perl-base" "$out" "^/usr/lib/[a-z0-9_-]+/perl-base$"
like "allow-tree --list: the vendor directory" "$out" "^/usr/share/perl5$"

tap_plan_end
