#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A level's data at rest as a shell user drives a session (doc/data-at-rest.md):
# `clipctl session up --secret-fd` gives the runner the user secret through a
# descriptor (never its arguments or environment); after `session down` the
# level's data directory is locked to root (encrypted names, "Required key
# not available"); another secret is refused naming the directory; the right
# one gives the data back; a runner killed with SIGKILL leaves the level
# open until the next `up` and `down`. On an ext4 with -O encrypt of its own,
# loop-mounted in a mount namespace of its own, removed on every way out.
#
#   session-crypt-cli.sh CLIPCTL
#
# Root of the host only: it mounts.
set -u
clipctl=$1
# A mount namespace of its own: the image's mount goes with this process.
# Before tap.sh: an exec after it would lose its EXIT trap and leave its
# temporary directory behind.
if [ -z "${CLIP_CRYPT_UNSHARED:-}" ] && [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	CLIP_CRYPT_UNSHARED=1 exec unshare -m --propagation private -- "$0" "$@"
fi
. "$(dirname "$0")/tap.sh"

if ! is_root || ! [ -e /sys/fs/ext4/features/encryption ]; then
	echo "1..0 # SKIP root of the host and a kernel with ext4 encryption only: the test mounts an image"
	exit 0
fi
base=$(mktemp -d /var/tmp/clip-crypt-XXXXXX)
chmod 711 "$base"
mnt=$base/mnt
ctl() { "$clipctl" --state-dir "$base/ctx" "$@"; }
# The runner answers "stop" once the session is down, then exits, and its
# fronts (which hold the state directory's lock) with it.
gone() { for i in $(seq 200); do pgrep -f "clipd --session $base/crypt.session" >/dev/null || return 0; sleep 0.05; done; return 1; }
cleanup() {
	ctl session down crypt >/dev/null 2>&1
	gone || pkill -TERM -f "clipd --session $base/crypt.session"
	wait 2>/dev/null
	mountpoint -q "$mnt" && { umount -d "$mnt" || umount -l -d "$mnt"; }
	[ -n "${KEEP:-}" ] || rm -rf "$base" "$tap_tmp"
}
trap cleanup EXIT

mkdir "$mnt"
truncate -s 64M "$base/img" && mkfs.ext4 -q -O encrypt "$base/img" && mount -o loop "$base/img" "$mnt" ||
	{ echo "Bail out! cannot make the ext4 image"; exit 1; }
cat >"$base/crypt.session" <<EOT
[Session]
Name=crypt

[Cage]
Name=low
Level=s0
DataDirectory=$mnt/low
EOT
printf 'correct horse\n' >"$base/right"
printf 'wrong horse\n' >"$base/wrong"
chmod 600 "$base/right" "$base/wrong"
marker=clip-cli-at-rest-marker-93e1

# --- up with the secret, write, down: locked ---
expect 0 "up with --secret-fd" -- ctl session up --log "$base/runner.log" --secret-fd 3 "$base/crypt.session" 3<"$base/right"
runner=$(pgrep -f "clipd --session $base/crypt.session" | head -1)
if [ -n "$runner" ] && ! grep -qa 'horse' "/proc/$runner/cmdline" "/proc/$runner/environ"; then
	ok "the secret is in neither the runner's arguments nor its environment"
else
	not_ok "the secret is in neither the runner's arguments nor its environment"
fi
expect 0 "the cage writes its data" -- ctl session exec crypt low -- sh -c "echo $marker >/data/plans.txt"
expect 0 "root reads it while the level runs" -- cat "$mnt/low/plans.txt"
expect 0 "down" -- ctl session down crypt
gone
names=$(ls -A "$mnt/low")
[ -n "$names" ] && [ "$names" != plans.txt ] && ok "locked: the names root lists are encrypted" ||
	not_ok "locked: the names root lists are encrypted (got: $names)"
expect 1 "locked: root cannot read the contents" -- cat "$mnt/low/$names"
like "locked: the kernel says the key is not there" "$err" 'Required key not available'
sync
grep -qa "$marker" "$base/img" && not_ok "the raw image holds no plaintext" || ok "the raw image holds no plaintext"

# --- another secret: refused, the directory named ---
expect 1 "up with another secret is refused" -- ctl session up --secret-fd 3 "$base/crypt.session" 3<"$base/wrong"
like "the refusal names the directory and the key" "$err" "$mnt/low of cage 'low' is encrypted with another key"
gone
[ "$(ls -A "$mnt/low")" = "$names" ] && ok "still locked after the refusal" || not_ok "still locked after the refusal"
expect 2 "a bad --secret-fd is refused before anything starts" -- ctl session up --secret-fd 99 "$base/crypt.session"

# --- the right secret: back; a runner killed: open until up and down ---
expect 0 "up with the right secret" -- ctl session up --secret-fd 3 "$base/crypt.session" 3<"$base/right"
expect 0 "the data is back" -- cat "$mnt/low/plans.txt"
is "byte for byte" "$out" "$marker"
runner=$(pgrep -f "clipd --session $base/crypt.session" | head -1)
kill -KILL "$runner"
gone
expect 0 "a killed runner leaves the level open (the key is the filesystem's)" -- cat "$mnt/low/plans.txt"
locked_diag() {
	tap_diag "$(cat "$base/runner3.log" 2>/dev/null)"
	for p in /proc/[0-9]*; do grep -qs "$mnt" $p/mountinfo && [ "$(readlink $p/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] && tap_diag "ns holder ${p#/proc/}: $(tr '\0' ' ' <$p/cmdline)"; ls -l $p/fd 2>/dev/null | grep -q "$mnt" && tap_diag "fd holder ${p#/proc/}"; done
}
# down alone, no runner: the cages it left stopped, the key it recorded removed.
expect 0 "down without a runner" -- ctl session down crypt
like "down says what it did" "$out" "session crypt down: its runner was gone, what it left is stopped and locked"
like "down names the directory it locked" "$err" "level data under $mnt was left unlocked by a runner that is gone: locked"
gone
[ "$(ls -A "$mnt/low")" != plans.txt ] && ok "down alone locked what the killed runner left open" ||
	{ not_ok "down alone locked what the killed runner left open"; locked_diag; }
expect 1 "locked: root cannot read it" -- cat "$mnt/low/$(ls -A "$mnt/low")"
expect 1 "a second down finds nothing left" -- ctl session down crypt
like "and says so" "$err" "session 'crypt' is not running, and no runner left anything of it"
# And up then down, as before: the same end.
expect 0 "up again after the kill" -- ctl session up --log "$base/runner3.log" --secret-fd 3 "$base/crypt.session" 3<"$base/right"
expect 0 "the data is back once more" -- cat "$mnt/low/plans.txt"
runner=$(pgrep -f "clipd --session $base/crypt.session" | head -1)
kill -KILL "$runner"
gone
expect 0 "up after a second kill" -- ctl session up --log "$base/runner3.log" --secret-fd 3 "$base/crypt.session" 3<"$base/right"
expect 0 "and down" -- ctl session down crypt
gone
[ "$(ls -A "$mnt/low")" != plans.txt ] && ok "up and down locked what the killed runner left open" ||
	{ not_ok "up and down locked what the killed runner left open"; locked_diag; }

tap_plan_end
