#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The cost of a level's data at rest (doc/data-at-rest.md): writing (with
# fsync) and reading (caches dropped) SIZE MiB in a cage's /data encrypted
# by fscrypt beside the same in a plain one, on one ext4 with -O encrypt,
# in the same session and run, alternated; and `clipctl session up` of a
# one-cage session with an encrypted data directory beside a plain one
# (the unlock: key derivation, FS_IOC_ADD_ENCRYPTION_KEY, the policy read).
# Medians of RUNS. Root of the host only: it mounts an image of its own.
#
#   bench-crypt.sh CLIPCTL [--size-mb N] [--runs N]
set -u
clipctl=$1
shift
size=1024 runs=3
while [ $# -gt 0 ]; do
	case $1 in
	--size-mb) size=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	*) echo "usage: bench-crypt.sh CLIPCTL [--size-mb N] [--runs N]" >&2; exit 2 ;;
	esac
done
read -r inside outside count </proc/self/uid_map
if [ "$(id -u)" != 0 ] || [ "$inside $outside $count" != "0 0 4294967295" ] ||
	! [ -e /sys/fs/ext4/features/encryption ]; then
	echo "bench-crypt: root of the host and ext4 encryption only: skipped" >&2
	exit 77
fi
if [ -z "${CLIP_CRYPT_UNSHARED:-}" ]; then
	CLIP_CRYPT_UNSHARED=1 exec unshare -m --propagation private -- "$0" "$clipctl" --size-mb "$size" --runs "$runs"
fi
base=$(mktemp -d /var/tmp/clip-bench-crypt-XXXXXX)
chmod 711 "$base"
mnt=$base/mnt
ctl() { "$clipctl" --state-dir "$base/ctx" "$@"; }
gone() { for i in $(seq 200); do pgrep -f "clipd --session $base/" >/dev/null || return 0; sleep 0.05; done; return 1; }
cleanup() {
	for s in b one plain; do ctl session down "$s" >/dev/null 2>&1; done
	gone
	mountpoint -q "$mnt" && { umount -d "$mnt" || umount -l -d "$mnt"; }
	rm -rf "$base"
}
trap cleanup EXIT
mkdir "$mnt"
# The image: the data written twice over, and room.
truncate -s $((size * 2 + 256))M "$base/img" && mkfs.ext4 -q -O encrypt "$base/img" &&
	mount -o loop "$base/img" "$mnt" || exit 1
session() { # NAME [CAGE ENCRYPTION]...
	local name=$1
	shift
	printf '[Session]\nName=%s\n' "$name"
	while [ $# -gt 0 ]; do
		printf '\n[Cage]\nName=%s\nLevel=s0\nDataDirectory=%s/%s-%s\nDataEncryption=%s\n' "$1" "$mnt" "$name" "$1" "$2"
		shift 2
	done
}
session b enc fscrypt plain none >"$base/b.session"
session one c fscrypt >"$base/one.session"
session plain c none >"$base/plain.session"

t() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || echo "bench-crypt: failed: $*" >&2; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN { print e - s }'; }
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

ctl session up "$base/b.session" || exit 1
declare -A w r
for i in $(seq "$runs"); do
	for c in enc plain; do
		w[$c]+="$(t ctl session exec b "$c" -- dd if=/dev/zero of=/data/f bs=1M count="$size" conv=fsync)"$'\n'
		sync
		echo 3 >/proc/sys/vm/drop_caches
		r[$c]+="$(t ctl session exec b "$c" -- dd if=/data/f of=/dev/null bs=1M)"$'\n'
		ctl session exec b "$c" -- rm -f /data/f
	done
done
ctl session down b >/dev/null
gone
for c in enc plain; do
	wm=$(printf '%s' "${w[$c]}" | med) rm_=$(printf '%s' "${r[$c]}" | med)
	printf '%-6s write %5d MiB + fsync: %6.2f s (%7.1f MiB/s)   read: %6.2f s (%7.1f MiB/s)\n' \
		"$c" "$size" "$wm" "$(awk -v a="$size" -v b="$wm" 'BEGIN { print a / b }')" \
		"$rm_" "$(awk -v a="$size" -v b="$rm_" 'BEGIN { print a / b }')"
done
ue= up=
for i in $(seq "$runs"); do
	ue+="$(t ctl session up "$base/one.session")"$'\n'
	ctl session down one >/dev/null; gone
	up+="$(t ctl session up "$base/plain.session")"$'\n'
	ctl session down plain >/dev/null; gone
done
printf 'session up, encrypted data: %.3f s   plain: %.3f s   (median of %d)\n' \
	"$(printf '%s' "$ue" | med)" "$(printf '%s' "$up" | med)" "$runs"
# What the kernel encrypts with: a generic AES (aes-generic, aes-fixed-time)
# is several times slower than one on the CPU's AES instructions (aesni).
awk '/^name/ { n = $3 } /^driver/ && n == "xts(aes)" { print "the kernel'"'"'s xts(aes): " $3; exit }' /proc/crypto
