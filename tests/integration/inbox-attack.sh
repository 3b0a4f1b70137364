#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The core's tools against what a cage plants in its own inbox (issue 14,
# finding 6): a real cage (clipctl cage run, its inbox bound read-write at
# /inbox) makes a FIFO, a symbolic link to an endless file, a FIFO fed an
# endless envelope and a sparse "envelope"; `clipctl transfer open` and
# `clipctl audit verify --log` on them, on the host, must refuse at once,
# saying what they found, and never hang or fill memory. Each refusal is
# timed (at most $bound_ms), and each command runs under `timeout` so that
# the old behaviour (a hang) fails the check instead of the suite.
#
#   inbox-attack.sh CLIPCTL
#
# Run by root, the cage has its own UidBase and the inbox is its uid's;
# run as uid 0 of a user namespace, the cage is rootless.
set -u
clipctl=$1
. "$(dirname "$0")/tap.sh"

if [ "$(id -u)" != 0 ] && ! unshare -Ur true 2>/dev/null; then
	echo "1..0 # SKIP this host refuses user namespaces to uid $(id -u): no cage can start"
	exit 0
fi
base=$(mktemp -d /dev/shm/clip-inbox-XXXXXX)
writers=()
trap 'for p in "${writers[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$base" "$tap_tmp"' EXIT
chmod 711 "$base"
mode=
is_root || mode=rootless
uid=$((0x7a20 * 65536))
bound_ms=3000

mkdir -p "$base/in" "$base/data" "$base/state" "$base/cstate"
chmod 700 "$base/state"
# The core's key, so that a refusal is never for want of one.
head -c 32 /dev/urandom >"$base/state/mac.key"
chmod 600 "$base/state/mac.key"
[ -z "$mode" ] && chown "$uid:$uid" "$base/in" "$base/data"
cat >"$base/low.cage" <<EOF
[Cage]
Name=low
Level=s0
UidBase=$uid
DataDirectory=$base/data

[Files]
Bind=$base/in:/inbox

[Network]
Mode=none
EOF

in_cage() { "$clipctl" --state-dir "$base/cstate" cage run --profile "$base/low.cage" -- "$@"; }

# timed STATUS DESCRIPTION -- COMMAND...: as expect, and within $bound_ms.
timed() {
	local start end
	start=$(date +%s%N)
	expect "$1" "$2" -- timeout 20 "${@:4}"
	end=$(date +%s%N)
	ms=$(((end - start) / 1000000))
	if [ "$ms" -le "$bound_ms" ]; then
		ok "$2: within $bound_ms ms"
	else
		not_ok "$2: within $bound_ms ms (took $ms ms)"
	fi
}

open_env=("$clipctl" --state-dir "$base/state" transfer open --for low)

echo "# the cage plants its files (${mode:-root})"
expect 0 "the cage plants a FIFO, a link, a sparse file" -- in_cage sh -c '
	mkfifo /inbox/fifo && ln -s /dev/zero /inbox/zero && ln -s /etc/hostname /inbox/host &&
	printf CLIPENV1AAAAAAAAAAAA >/inbox/sparse && truncate -s 1G /inbox/sparse && ls /inbox'
like "the planted files are there" "$out" "fifo"

echo "# clipctl transfer open"
timed 1 "transfer open of a planted FIFO is refused" -- "${open_env[@]}" "$base/in/fifo"
like "transfer open of a planted FIFO: the message" "$err" "fifo is a FIFO, not a regular file"
timed 1 "transfer open of a link to an endless file is refused" -- "${open_env[@]}" "$base/in/zero"
like "transfer open of a link to an endless file: the message" "$err" "zero is a symbolic link: not followed"
timed 1 "transfer open of a link to a host file is refused" -- "${open_env[@]}" "$base/in/host" -o "$base/out"
like "transfer open of a link to a host file: the message" "$err" "host is a symbolic link: not followed"
[ ! -e "$base/out" ] && ok "transfer open of a link to a host file: no output left" ||
	not_ok "transfer open of a link to a host file: no output left"
timed 1 "transfer open of a sparse 1 GiB file is refused unread" -- "${open_env[@]}" "$base/in/sparse"
like "transfer open of a sparse file: the message" "$err" "the envelope is a sparse file .*refused unread"

# A FIFO with a writer in the cage: an endless envelope (the magic, then
# 300 MiB, more than the library holds in memory from a stream).
in_cage sh -c 'mkfifo /inbox/stream && { printf CLIPENV1AAAAAAAAAAAA; head -c 300M /dev/zero; } >/inbox/stream' &
writers+=($!)
for _ in $(seq 100); do [ -p "$base/in/stream" ] && break; sleep 0.05; done
timed 1 "transfer open of a FIFO the cage streams into is refused" -- "${open_env[@]}" "$base/in/stream" -o "$base/out2"
like "transfer open of a streamed FIFO: the message" "$err" "stream is a FIFO, not a regular file"
[ ! -e "$base/out2" ] && ok "transfer open of a streamed FIFO: no output left" ||
	not_ok "transfer open of a streamed FIFO: no output left"
# The writer, when still blocked opening its FIFO, is let go: a reader
# comes and goes, its next write ends it (SIGPIPE). Opened read-write, the
# FIFO never blocks this shell.
exec 9<>"$base/in/stream"
exec 9>&-
wait "${writers[@]}" 2>/dev/null
writers=()

echo "# clipctl audit verify --log"
timed 1 "audit verify of a planted FIFO is refused" -- "$clipctl" --state-dir "$base/state" audit verify --log "$base/in/fifo"
like "audit verify of a planted FIFO: the message" "$err" "fifo is a FIFO, not a regular file"
timed 1 "audit verify of a link to an endless file is refused" -- "$clipctl" --state-dir "$base/state" audit verify --log "$base/in/zero"
like "audit verify of a link to an endless file: the message" "$err" "zero is a symbolic link: not followed"
# The anchor beside the log is the cage's to plant too.
: >"$base/in/log"
expect 0 "the cage plants a FIFO as the anchor" -- in_cage mkfifo /inbox/log.head
timed 1 "audit verify with a FIFO as the anchor is refused" -- "$clipctl" --state-dir "$base/state" audit verify --log "$base/in/log"
like "audit verify with a FIFO as the anchor: the message" "$err" "log.head is a FIFO, not a regular file"

tap_plan_end
