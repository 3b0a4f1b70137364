#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Covert channels between cages (doc/covert-channels.md), with covert.c:
# a high cage H (level s2) sends bits, a low cage L (level s0) reads them,
# both started for real by clipctl, at the same time, sharing nothing but
# the host's read-only tree and the clock.
#
#   run-covert.sh CLIPCTL COVERT root|rootless
#       the attack, TAP: through the locks (flock, OFD, POSIX), inotify
#       and the access time of /etc/hostname, no bit passes from H to L;
#       controls: the same bits pass between two processes of one cage.
#   run-covert.sh CLIPCTL COVERT root|rootless --measure
#       each channel's bandwidth, for doc/covert-channels.md: 64 bits at
#       slots from 50 ms down to 0.1 ms (64 to 256 bits each); the
#       errors, and the mutual information of what is sent and read, in
#       bit/s; then each channel's best rate.
#
# Run as root (cages with their own uid ranges) or rootless (as uid
# 65534, through setpriv).
set -u
clipctl=$1
covert=$2
mode=$3
measure=${4:-}
. "$(dirname "$0")/../integration/tap.sh"

. "$(dirname "$0")/mode.sh"

tmp=$(mktemp -d /tmp/clip-covert-XXXXXX)
chmod 755 "$tmp"
run_pids=()
cleanup() {
	for p in "${run_pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp" "$tap_tmp"
}
trap cleanup EXIT

mkdir -m 0700 "$tmp/state"
chown "$owner" "$tmp/state"
mkdir -m 0755 "$tmp/bin"
cp "$covert" "$tmp/bin/covert"
h_base=$((0x2000000 + ($$ % 64) * 0x20000))
l_base=$((h_base + 0x10000))
profile() { # NAME LEVEL BASE
	printf '[Cage]\nName=%s\nLevel=%s\n' "$1" "$2"
	[ "$mode" = root ] && printf 'UidBase=%s\n' "$3"
	printf '[Files]\nBindReadOnly=%s:/covert\n' "$tmp/bin"
}
profile "covert-h-$mode-$$" s2 "$h_base" >"$tmp/h.cage"
profile "covert-l-$mode-$$" s0 "$l_base" >"$tmp/l.cage"
c=("${as[@]}" "$clipctl" --state-dir "$tmp/state")

# A file of the shared tree that nothing else reads, for the page cache.
cold=
for f in /usr/share/common-licenses/Apache-2.0 /usr/share/common-licenses/GPL-3 \
	/usr/share/misc/magic.mgc /etc/services; do
	[ -f "$f" ] && [ "$(stat -c %s "$f")" -gt 4096 ] && cold=$f && break
done

# schedule SLOT_US BITS CHANNEL FILE...: the lines of send.sh and recv.sh,
# one transmission per channel, one after the other from 1.5 s from now
# (time for both cages to start).
schedule() {
	local slot=$1 bits=$2 t gap
	shift 2
	t=$(($("$tmp/bin/covert" now) + 1500000000))
	gap=$((${#bits} * slot * 1000 + 200000000))
	while [ $# -gt 1 ]; do
		echo "/covert/covert send $1 $2 $t $slot $bits" >>"$tmp/bin/send.sh"
		echo "echo $1 $slot $bits \$(/covert/covert recv $1 $2 $t $slot ${#bits})" >>"$tmp/bin/recv.sh"
		t=$((t + gap))
		shift 2
	done
}

# pair: H runs send.sh while L runs recv.sh; L's lines in $tmp/recv.out.
pair() {
	local hs
	"${c[@]}" cage run --profile "$tmp/h.cage" -- /bin/sh /covert/send.sh \
		>"$tmp/send.out" 2>"$tmp/send.err" &
	run_pids+=($!)
	"${c[@]}" cage run --profile "$tmp/l.cage" -- /bin/sh /covert/recv.sh \
		>"$tmp/recv.out" 2>"$tmp/recv.err"
	wait "${run_pids[-1]}"
	hs=$?
	unset 'run_pids[-1]'
	[ "$hs" = 0 ] || echo "# the sending cage: $(cat "$tmp/send.err")"
	[ -s "$tmp/recv.err" ] && sed 's/^/# the receiving cage: /' "$tmp/recv.err"
	rm -f "$tmp/bin/send.sh" "$tmp/bin/recv.sh"
}

# alone: both scripts in the low cage, at once (the control).
alone() {
	"${c[@]}" cage run --profile "$tmp/l.cage" -- /bin/sh -c \
		'/bin/sh /covert/send.sh & /bin/sh /covert/recv.sh; wait' \
		>"$tmp/recv.out" 2>"$tmp/recv.err"
	[ -s "$tmp/recv.err" ] && sed 's/^/# the cage: /' "$tmp/recv.err"
	rm -f "$tmp/bin/send.sh" "$tmp/bin/recv.sh"
}

# The number of positions where two strings of bits differ.
hamming() {
	local a=$1 b=$2 n=0 i
	[ ${#a} = ${#b} ] || {
		echo 999
		return
	}
	for ((i = 0; i < ${#a}; i++)); do [ "${a:i:1}" = "${b:i:1}" ] || n=$((n + 1)); done
	echo $n
}

# balanced N SEED: N bits, as many ones as zeros, in a random order.
balanced() {
	awk -v n="$1" -v seed="$2" 'BEGIN { srand(seed)
		for (i = 0; i < n; i++) b[i] = i < n / 2
		for (i = n - 1; i > 0; i--) { j = int(rand() * (i + 1)); t = b[i]; b[i] = b[j]; b[j] = t }
		for (i = 0; i < n; i++) printf "%d", b[i]; print "" }'
}

if [ "$measure" = --measure ]; then
	# A receiver that reads a constant gets exactly half the bits right and
	# no information. The rate is the mutual information of the bits sent
	# and read per slot (less its bias for that many bits, 1/(2 n ln 2);
	# none when the errors are within 3 sigmas of chance), divided by the
	# slot: what an error-correcting code could carry.
	mkdir -m 0700 "$tmp/data-h"
	if [ "$mode" = root ]; then chown "$h_base:$h_base" "$tmp/data-h"; else chown "$owner" "$tmp/data-h"; fi
	sed -i "/^\[Cage\]/a DataDirectory=$tmp/data-h" "$tmp/h.cage"
	chans=(flock /etc/hostname ofd /etc/hostname posix /etc/hostname
		inotify /etc/hostname atime /etc/hostname
		meminfo /etc/hostname cpu /etc/hostname)
	[ -n "$cold" ] && chans+=(pagecache "$cold" pagetime "$cold")
	chans+=(statfs "/data/covert-fill,/etc/hostname")
	echo "# $mode, Linux $(uname -r), $(nproc) CPUs, CLIP_TEST_DISABLE=${CLIP_TEST_DISABLE:-}"
	printf '%-10s %9s %9s %10s\n' channel slot errors bit/s | tee "$tmp/rates"
	for slot in 50000 10000 2000 500 100; do
		n=$((3200000 / slot))
		[ $n -gt 256 ] && n=256
		schedule "$slot" "$(balanced $n "$slot")" "${chans[@]}"
		pair
		while read -r ch sl sent got; do
			printf '%-10s %7sµs %4s/%-4s %10s\n' "$ch" "$sl" "$(hamming "$sent" "$got")" \
				${#sent} "$(awk -v s="$sent" -v g="$got" -v us="$sl" '
				BEGIN { n = length(s)
					if (length(g) != n) { print "-"; exit }
					for (i = 1; i <= n; i++) c[substr(s, i, 1) substr(g, i, 1)]++
					mi = 0
					for (x = 0; x < 2; x++) for (y = 0; y < 2; y++) {
						pxy = c[x "" y] / n
						px = (c[x "0"] + c[x "1"]) / n
						py = (c["0" y] + c["1" y]) / n
						if (pxy > 0) mi += pxy * log(pxy / (px * py)) / log(2)
					}
					mi -= 1 / (2 * n * log(2))
					# Within 3 sigmas of chance (n/2 errors): none.
					e = c["01"] + c["10"]
					if ((e - n / 2) ^ 2 < 9 * n / 4) mi = 0
					printf "%.1f", (mi > 0 ? mi * 1e6 / us : 0) }')"
		done <"$tmp/recv.out" | tee -a "$tmp/rates"
	done
	echo "# the best rate of each channel:"
	awk 'NR > 1 && $4 != "-" { if (!($1 in best) || $4 + 0 > best[$1] + 0) { best[$1] = $4; at[$1] = $2 } ; if (!($1 in order)) order[$1] = NR }
		END { for (c in best) printf "# %-10s %10s bit/s at a slot of %s\n", c, best[c], at[c] }' "$tmp/rates" | sort -t'#' -k2
	exit 0
fi

bits=10110011100010110110
slot=50000
closed=(flock /etc/hostname ofd /etc/hostname posix /etc/hostname inotify /etc/hostname)

# Controls: within one cage every channel carries the bits, so that the
# attack's silence below means the cages are apart, not that it failed.
schedule $slot $bits "${closed[@]}"
alone
for ch in flock ofd posix inotify; do
	got=$(awk -v c=$ch '$1 == c { print $4 }' "$tmp/recv.out")
	d=$(hamming $bits "$got")
	if [ "$d" -le 2 ]; then
		ok "control: $ch carries bits between two processes of one cage"
	else
		not_ok "control: $ch carries bits between two processes of one cage: sent $bits, read '$got'"
	fi
done

# The attack: H sends, L reads, each through its own /etc/hostname.
schedule $slot $bits "${closed[@]}" atime /etc/hostname
pair
for ch in flock ofd posix inotify atime; do
	got=$(awk -v c=$ch '$1 == c { print $4 }' "$tmp/recv.out")
	if [ -n "$got" ] && [ -z "${got//0/}" ]; then
		ok "$ch: no bit passes from the high cage to the low one through /etc/hostname"
	else
		not_ok "$ch: no bit passes from the high cage to the low one through /etc/hostname: sent $bits, read '$got'"
	fi
done
tap_plan_end
