#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Mediated transfer end to end, with plain processes on the cages' sockets:
# clipd with its privilege-separated fronts, clip-confirm as the user,
# clipctl transfer send as the cage. Then hostile peers, a load, and the
# daemon killed at random points. transfer-cages.sh runs the scenarios of
# the issue again with every clipctl inside a real cage (clipctl cage run),
# and checks what only real cages give: no agent socket and no other cage's
# socket in reach, an inbox that executes nothing.
#
#   transfer-e2e.sh CLIPD CLIP_CONFIRM CLIPCTL PEER [--load CLIENTS COUNT]
set -u
clipd=$1 confirm=$2 clipctl=$3 peer=$4
shift 4
load_clients=8 load_count=10
[ "${1:-}" = --load ] && load_clients=$2 load_count=$3
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/transfer-lib.sh"

# setup NAME POLICY [CAGE LINES...]: a fresh configuration in $base/NAME;
# a cage line is "NAME LEVEL [OPTION...]" (clipd(8): uid=, rate=, burst=)
setup() {
	d=$base/$1
	mkdir -p "$d/cfg" "$d/state" "$d/run"
	chmod 700 "$d/state"
	printf '%s\n' "$2" >"$d/cfg/policy"
	: >"$d/cfg/cages"
	shift 2
	for c in "$@"; do
		set -- $c
		mkdir -p "$d/in-$1"
		echo "$1 $2 $d/in-$1 $d/run/$1.sock ${*:3}" >>"$d/cfg/cages"
	done
}

send() { # FROM FILE TARGET [clipctl options]
	local from=$1 file=$2 to=$3
	shift 3
	"$clipctl" transfer send "$file" --to "$to" --socket "$d/run/$from.sock" "$@"
}

levels="low s0|mid s1|high s2|left s1:c0|right s1:c1"
IFS='|' read -r -a cages <<<"$levels"

echo "# the scenarios of the issue"
setup main "low high ask
high low ask encrypt
low mid allow max-size=1K
@any @any ask direction=up" "${cages[@]}"
if start_clipd --confirm-timeout-ms 20000; then ok "clipd is ready"; else not_ok "clipd is ready"; cat "$d/clipd.log"; fi
if start_agent yes; then ok "the agent is greeted"; else not_ok "the agent is greeted"; fi
# One writer per audit log: a second clipd on the same state directory waits
# 2 s for the lock (a predecessor on its way out), then gives up.
t0=$(date +%s%N)
expect 1 "a second clipd on the same state directory is refused" -- "$clipd" --config "$d/cfg" --state-dir "$d/state" --agent-socket "$d/run/confirm2.sock" $mode
waited=$((($(date +%s%N) - t0) / 1000000))
like "the refusal says the audit log is in use" "$err" "audit log .* is in use"
if [ "$waited" -ge 1900 ] && [ "$waited" -lt 10000 ]; then ok "it waited about 2 s for the lock ($waited ms)"; else not_ok "it waited about 2 s for the lock ($waited ms)"; fi
head -c 3000 /dev/urandom >"$base/doc.bin"
sum=$(sha256sum <"$base/doc.bin" | cut -d' ' -f1)

expect 0 "up, ask + yes: delivered" -- send low "$base/doc.bin" high --note "quarterly figures"
like "up: the reply gives the hash" "$out" "$sum"
is "up: byte-identical in the target inbox" "$(sha256sum <"$d/in-high/doc.bin" | cut -d' ' -f1)" "$sum"
expect 0 "up: labelled with the target level" -- "$clipctl" --state-dir "$d/state" $mode label get "$d/in-high/doc.bin"
is "up: the label says s2" "$out" "s2"
like "up: the decision is audited (user)" "$(last_record)" "event=decision src=low srclevel=s0 dst=high dstlevel=s2 name=doc.bin size=3000 sha256=$sum decision=allow by=user"
like "up: the prompt showed levels, direction, size and hash" "$(cat "$d/agent.log")" "from: +low \(level s0\).*"
grep -q "sha256:    $sum" "$d/agent.log" && ok "up: the prompt showed the SHA-256" || not_ok "up: the prompt showed the SHA-256"
is "the source is unchanged" "$(sha256sum <"$base/doc.bin" | cut -d' ' -f1)" "$sum"

expect 0 "down, ask + yes, encrypt: delivered" -- send high "$base/doc.bin" low
like "down: the reply says encrypted" "$out" "encrypted"
is "down: an envelope in the low inbox" "$(head -c 8 "$d/in-low/doc.bin")" "CLIPENV1"
is "down: envelope size = size + 36" "$(stat -c %s "$d/in-low/doc.bin")" 3036
# clipctl transfer open: the core's key opens it; anything else leaves no file.
opened=$base/opened.bin
expect 0 "down: transfer open gives the document back" -- "$clipctl" --state-dir "$d/state" transfer open "$d/in-low/doc.bin" --for low -o "$opened"
is "down: opened, the same bytes" "$(sha256sum <"$opened" | cut -d' ' -f1)" "$sum"
is "down: opened, mode 0600" "$(stat -c %a "$opened")" 600
rm -f "$opened"
# -o - is standard output, as without -o: no file named "-" (run from $base).
clipctl_path=$(readlink -f "$clipctl")
(cd "$base" && exec "$clipctl_path" --state-dir "$d/state" transfer open "$d/in-low/doc.bin" --for low -o -) >"$base/stdout.bin"
is "down: transfer open -o - exits 0" "$?" 0
is "down: -o - writes the document to standard output" "$(sha256sum <"$base/stdout.bin" | cut -d' ' -f1)" "$sum"
[ ! -e "$base/-" ] && ok "down: -o - creates no file named '-'" || not_ok "down: -o - creates no file named '-'"
rm -f "$base/stdout.bin"
expect 1 "down: open for another cage is refused" -- "$clipctl" --state-dir "$d/state" transfer open "$d/in-low/doc.bin" --for high -o "$opened"
like "down: the refusal is named" "$err" "does not verify"
[ ! -e "$opened" ] && ok "down: a refused envelope leaves no output file" || not_ok "down: a refused envelope leaves no output file"
head -c 3035 "$d/in-low/doc.bin" >"$base/cut.bin"
expect 1 "down: a cut envelope is refused" -- "$clipctl" --state-dir "$d/state" transfer open "$base/cut.bin" --for low
is "down: a refused envelope prints nothing" "$out" ""
mkdir -m 700 "$base/other-state"
expect 1 "down: another state directory (another key) does not open it" -- "$clipctl" --state-dir "$base/other-state" transfer open "$d/in-low/doc.bin" --for low
grep -q "DOWNGRADE" "$d/agent.log" && ok "down: the prompt flags the downgrade" || not_ok "down: the prompt flags the downgrade"

expect 3 "down refused by default" -- send mid "$base/doc.bin" low
like "down: the reason" "$err" "denied by policy: no rule allows it"
expect 3 "incomparable refused" -- send left "$base/doc.bin" right
like "incomparable: the reason" "$err" "incomparable levels"
like "incomparable: audited" "$(last_record)" "src=left.*dst=right.*decision=deny by=policy%20default reason=incomparable%20levels"
head -c 2048 /dev/zero >"$base/big"
expect 3 "oversize refused" -- send low "$base/big" mid
like "oversize: the reason" "$err" "over the limit of 1024"
[ -z "$(ls -A "$d/in-mid")" ] && ok "oversize: nothing in the inbox" || not_ok "oversize: nothing in the inbox"
expect 0 "a second document of the same name gets a suffix" -- send low "$base/doc.bin" high
like "suffix" "$out" "as 'doc-1.bin'"
n=$(records)
expect 0 "the log verifies" -- "$clipctl" --state-dir "$d/state" audit verify
like "every request and decision is a record" "$out" "$n records, valid"
stop_all

echo "# the user says no, then says nothing"
setup no "low high ask" "low s0" "high s2"
start_clipd --confirm-timeout-ms 300 && start_agent no && ok "clipd and a no-agent" || not_ok "clipd and a no-agent"
expect 4 "up, ask + no: denied by the user" -- send low "$base/doc.bin" high
like "ask + no: the reason" "$err" "denied by the user: refused by the user"
stop_all
start_clipd --confirm-timeout-ms 300 && start_agent never && ok "clipd and a silent agent" || not_ok "clipd and a silent agent"
agent_pid=${pids[-1]}
expect 4 "agent timeout: denied" -- send low "$base/doc.bin" high
like "timeout: the reason" "$err" "no answer within 300 ms"
like "timeout: audited as such" "$(last_record)" "decision=deny by=timeout"
[ -z "$(ls -A "$d/in-high")" ] && ok "denied: nothing in the inbox" || not_ok "denied: nothing in the inbox"
# The agent reads in order: once the mediator is gone, it has read the
# expiry that came before (doc/confirm-protocol.md, "6 expired"), and exits.
kill "$clipd_pid"
wait "$clipd_pid"
wait "$agent_pid"
is "timeout: the agent exits 0 when the mediator goes away" "$?" 0
like "timeout: the agent was told the question expired" "$(cat "$d/agent.log")" "-> no answer in time: not delivered"
stop_all
start_clipd && ok "clipd without agent" || not_ok "clipd without agent"
expect 4 "no agent: ask is a denial" -- send low "$base/doc.bin" high
like "no agent: the reason" "$err" "no confirmation agent"
stop_all

echo "# a content filter, run confined"
chmod 755 "$base"
printf '#!/bin/sh\n# a toy scanner: refuses what contains EICAR\n! grep -q EICAR\n' >"$base/scan"
chmod 755 "$base/scan"
setup filter "low high allow filter=$base/scan" "low s0" "high s2"
start_clipd && ok "clipd with a filter" || not_ok "clipd with a filter"
echo "clean" >"$base/clean.txt"
echo "X5O EICAR test" >"$base/eicar.txt"
out=$(send low "$base/clean.txt" high 2>"$tap_tmp/err") && status=0 || status=$?
err=$(cat "$tap_tmp/err")
if [ "$status" -ne 0 ] && grep -q "cannot bound the memory and tasks" "$tap_tmp/err"; then
	# No cgroup of this user takes the filter's limits (a user without a
	# delegated cgroup, a container without one): the filter is never run,
	# and the document does not pass unfiltered.
	why="this host cannot bound the memory and tasks of the filter's cage"
	ok "unbounded: the document is refused, not passed unfiltered"
	[ -z "$(ls -A "$d/in-high")" ] && ok "unbounded: nothing delivered" || not_ok "unbounded: nothing delivered"
	skip "the filter passes a clean document" "$why"
	skip "the filter refuses a bad one" "$why"
	skip "the filter's refusal is named" "$why"
	skip "refused by the filter: nothing delivered" "$why"
else
	if [ "$status" -eq 0 ]; then
		ok "the filter passes a clean document"
	else
		not_ok "the filter passes a clean document (exit $status, want 0)"
		printf '#   stdout: %s\n#   stderr: %s\n' "$out" "$err"
	fi
	expect 3 "the filter refuses a bad one" -- send low "$base/eicar.txt" high
	like "the filter's refusal is named" "$err" "rejected the document \\(exit 1\\)"
	[ ! -e "$d/in-high/eicar.txt" ] && ok "refused by the filter: nothing delivered" || not_ok "refused by the filter: nothing delivered"
fi
stop_all

echo "# a cage bound to a uid: its socket refuses other peers (SO_PEERCRED)"
setup uid "low high allow" "low s0" "high s2"
sed -i "s|^low .*|& uid=$(($(id -u) + 4242))|" "$d/cfg/cages"
start_clipd && ok "clipd with a uid-bound cage" || not_ok "clipd with a uid-bound cage"
expect 1 "a peer of another uid is refused" -- send low "$base/doc.bin" high
like "the refusal" "$err" "closed the connection"
like "the refused peer is audited" "$("$clipctl" --state-dir "$d/state" audit show)" "event=rejected src=low .*a%20peer%20was%20refused"
stop_all
sed -i "s|uid=[0-9]*|uid=$(id -u)|" "$d/cfg/cages"
start_clipd && ok "clipd with the right uid" || not_ok "clipd with the right uid"
expect 0 "a peer of the cage's uid is served" -- send low "$base/doc.bin" high
stop_all

echo "# hostile peers"
setup hostile "low high allow" "low s0" "high s2"
start_clipd && ok "clipd for hostile peers" || not_ok "clipd for hostile peers"
p() { "$peer" "$d/run/low.sock" hostile "$@"; }
hostile_name() { # DESC NAME WANT
	out=$(PEER_NAME=$2 p name)
	like "name $1" "$out" "$3"
}
hostile_name "with ../ is sanitised" "../../etc/passwd" "status=0 .*name=_._.._etc_passwd "
hostile_name "with a NUL is refused" 'a\0b' "^closed$"
hostile_name "with U+202E is refused, the character named" $'invoice\xe2\x80\xaetxt.exe' "status=1 .*message=.*the name holds U\\+202E \\(a bidirectional control\\) at byte 7"
hostile_name "with U+200D is refused, the character named" $'a\xe2\x80\x8db' "status=1 .*message=.*the name holds U\\+200D \\(an invisible character\\) at byte 1"
hostile_name "with invalid UTF-8 is sanitised" $'bad\xff.txt' "status=0 .*name=bad_.txt "
hostile_name "with a leading dot is sanitised" ".profile" "status=0 .*name=_profile "
like "name of 10 KiB is refused" "$(p long-name)" "^closed$"
for f in /tmp /dev/null pipe socket; do
	like "fd of $f is refused" "$(PEER_FD_PATH=$f p fd)" "status=3 error=(124|21) .*only regular files"
done
# Each refused by what it is (not "a socket" for an epoll fd), on receipt: a
# worker's refusal would say "cannot take the document: ...".
for f in "/tmp:a directory" "/dev/null:a character device" "pipe:a pipe or FIFO" \
	"socket:a UNIX socket" "udp:a UDP socket" "epoll:an epoll instance" \
	"eventfd:an eventfd" "pidfd:a pidfd"; do
	like "fd type named: ${f%%:*}" "$(PEER_FD_PATH=${f%%:*} p fd)" "status=3 error=124 name= message=the document is ${f#*:}: only regular files"
done
like "two fds are refused" "$(p two-fds)" "^closed$"
like "a wrong version is refused" "$(p version)" "^closed$"
like "an absurd length is refused" "$(p absurd-length)" "^closed$"
like "a disconnect mid-message is survived" "$(p disconnect)" "^sent$"
like "a claimed source is refused" "$(p claim-source)" "^closed$"
expect 0 "after all that, the daemon still serves" -- send low "$base/doc.bin" high
like "the source is the socket's cage" "$(last_record)" "src=low srclevel=s0 dst=high"
grep -q "unsupported protocol version 7" "$d/clipd.log" && ok "the refusal names the version" || not_ok "the refusal names the version"
like "refusals are audited" "$("$clipctl" --state-dir "$d/state" audit show | grep -c 'event=rejected')" "^[5-9]$"
# A file that grows while read: a writer appends as fast as it can.
( exec 5>>"$base/grow"; while :; do printf '%8192s' x >&5 || exit; done ) &
grower=$!
pids+=("$grower")
while [ "$(stat -c %s "$base/grow" 2>/dev/null || echo 0)" -lt 33554432 ]; do :; done
expect 1 "a file growing while read is refused" -- send low "$base/grow" high
like "growing: the reason" "$err" "(grew|changed) while it was read|is being changed"
kill "$grower"
[ -z "$(ls "$d/in-high" | grep -v -e '^doc' -e '^_' -e '^invoice' -e '^bad' -e '^x')" ] && ok "growing: nothing left" || not_ok "growing: nothing left"
expect 0 "the log verifies after hostile input" -- "$clipctl" --state-dir "$d/state" audit verify
stop_all

echo "# load: $load_clients clients x $load_count transfers"
# One cage sends them all: above its default rate (20/s, 100 at once).
setup load "low high allow" "low s0 rate=unlimited" "high s2"
mkdir -p "$d/src"
start_clipd && ok "clipd for the load" || not_ok "clipd for the load"
expect 0 "every document delivered once, byte-identical" -- "$peer" "$d/run/low.sock" load "$load_clients" "$load_count" "$d/src" "$d/in-high" high
echo "# $out"
total=$((load_clients * load_count))
is "exactly one file per document" "$(ls "$d/in-high" | wc -l)" "$total"
expect 0 "the log verifies" -- "$clipctl" --state-dir "$d/state" audit verify
is "every request and decision audited" "$(records)" "$((2 * total))"
stop_all

echo "# faults: clipd killed at random points across 100 transfers"
setup faults "low high allow" "low s0" "high s2"
mkdir -p "$d/src"
start_clipd || true
"$peer" "$d/run/low.sock" retry 100 "$d/src" high >"$d/retry.out" 2>&1 &
client=$!
kills=0
# A clipd that never answers (it dies at each start) must fail the test,
# not keep it restarting until meson's timeout.
deadline=$((SECONDS + 60))
while kill -0 "$client" 2>/dev/null; do
	if [ "$SECONDS" -ge "$deadline" ]; then
		echo "# the transfers were not all answered within 60 s"
		kill "$client"
		break
	fi
	# random points: 0 to 30 ms into the work
	sleep "0.0$((RANDOM % 3))$((RANDOM % 10))"
	kill -9 "$clipd_pid" 2>/dev/null && kills=$((kills + 1))
	wait "$clipd_pid" 2>/dev/null
	if ! start_clipd; then
		echo "# clipd did not restart: $(tail -2 "$d/clipd.log")"
		kill "$client"
		break
	fi
done
wait "$client" && ok "all 100 transfers were answered despite $kills kills" || not_ok "transfers answered ($(cat "$d/retry.out"))"
partial=0
for f in "$d"/in-high/*; do
	n=$(basename "$f")
	# doc-0-7, or doc-0-7-1 for a document delivered twice (killed before the answer)
	[ -f "$d/src/$n" ] || n=${n%-[0-9]*}
	[ -f "$d/src/$n" ] && cmp -s "$f" "$d/src/$n" || partial=$((partial + 1))
done
is "no partial or foreign file in the inbox" "$partial" 0
is "every document arrived" "$(ls "$d/in-high" | grep -cE '^doc-0-[0-9]+$')" 100
missing=0
for i in $(seq 0 99); do [ -s "$d/src/doc-0-$i" ] || missing=$((missing + 1)); done
is "no source lost" "$missing" 0
stop_all
expect 0 "the log verifies after the restarts" -- "$clipctl" --state-dir "$d/state" audit verify

echo "# a full inbox (a small tmpfs in a private mount namespace)"
# Not root: in a user namespace where the caller keeps its uid, and its
# capabilities there for the mount; clipd runs without them, rootless.
ns=(unshare -m)
[ "$(id -u)" -eq 0 ] || ns=(unshare --user --map-current-user --mount --keep-caps)
if ! "${ns[@]}" true 2>/dev/null; then
	skip "a full inbox gives a clear error" "no private mount namespace here (${ns[*]} refused)"
else
	setup full "low high allow" "low s0" "high s2"
	head -c 1048576 /dev/urandom >"$base/mib"
	head -c 3145728 /dev/urandom >"$base/mib3"
	mkfifo "$d/ready"
	out=$("${ns[@]}" bash -c '
		mount -t tmpfs -o size=64k tmpfs "$1/in-high" || exit 99
		[ -z "$6" ] || drop=(setpriv --inh-caps=-all --ambient-caps=-all --)
		"${drop[@]}" "$2" --config "$1/cfg" --state-dir "$1/state" --agent-socket "$1/run/confirm.sock" --ready-fd 3 ${6:+"$6"} 3>"$1/ready" 2>>"$1/clipd.log" &
		read -r line <"$1/ready"
		"$3" transfer send "$4" --to high --socket "$1/run/low.sock"; echo "rc=$?"
		echo "left=$(ls -A "$1/in-high" | wc -l)"
		# Over one chunk: copied by the writer thread, whose error comes back the same way.
		"$3" transfer send "$5" --to high --socket "$1/run/low.sock"; echo "rc3=$?"
		echo "left3=$(ls -A "$1/in-high" | wc -l)"
		kill %1; wait' _ "$d" "$clipd" "$clipctl" "$base/mib" "$base/mib3" "$mode" 2>&1)
	like "a full inbox: the requester is told" "$out" "failed: cannot take the document: the target inbox is full"
	like "a full inbox: exit 1" "$out" "rc=1"
	like "a full inbox: nothing left behind" "$out" "left=0"
	like "a full inbox, 3 MiB (the writer thread): exit 1" "$out" "rc3=1"
	like "a full inbox, 3 MiB: nothing left behind" "$out" "left3=0"
	is "a full inbox: both requesters are told" "$(grep -c 'the target inbox is full' <<<"$out")" 2
fi

tap_plan_end
