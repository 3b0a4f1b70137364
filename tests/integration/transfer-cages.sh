#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Mediated transfer between real cages: every request is `clipctl transfer
# send` run inside a cage started by `clipctl cage run` from a profile
# written here. Three cages, low (s0), high (s2) and side (s1:c0, not
# comparable with high); each gets its clipd socket at the default
# /run/clip/transfer.sock (its own socket directory bound read-only) and its
# inbox at /inbox (a read-write bind, so noexec, nosuid, nodev); its
# documents are in its data directory, /data. clipd and clip-confirm run on
# the host; the agent socket is bound into no cage. Then the attacks of a
# cage on the user through what it writes: names with invisible and
# look-alike characters, and a name and note that forge the question on an
# 80x24 terminal (clip-confirm on a pty, confirm-pty.py).
#
#   transfer-cages.sh CLIPD CLIP_CONFIRM CLIPCTL PEER
#
# PEER (transfer-peer) is bound into every cage too, at /opt/clip/tests:
# the attacks on the mediator (a lingering socket, a flood of questions)
# are sent from a cage by it.
#
# Run by root, each cage has its own UidBase, its socket accepts only that
# uid (SO_PEERCRED) and the delivered files are given to it; run by another
# user, clipd and the cages are rootless.
set -u
clipd=$1 confirm=$2 clipctl=$3 peer=$4
. "$(dirname "$0")/tap.sh"

if [ "$(id -u)" != 0 ] && ! unshare -Ur true 2>/dev/null; then
	echo "1..0 # SKIP this host refuses user namespaces to uid $(id -u): no cage can start"
	exit 0
fi
. "$(dirname "$0")/transfer-lib.sh"
# A long-lived cage outlives its launcher: stopped at exit whatever happens.
trap '"$clipctl" --state-dir "$d/cstate" cage stop low >/dev/null 2>&1; stop_all; rm -rf "$base" "$tap_tmp"' EXIT
# The cages' init resolves the bind sources under their own uid.
chmod 711 "$base"

# clipctl and its library, bound read-only into every cage in the layout
# of the build (RUNPATH $ORIGIN/../../libclip).
bin_dir=$(cd "$(dirname "$clipctl")" && pwd -P)
lib_dir=$(cd "$bin_dir/../../libclip" && pwd -P)
cc=/opt/clip/programs/clipctl/$(basename "$clipctl")
peer_dir=$(cd "$(dirname "$peer")" && pwd -P)
cpeer=/opt/clip/tests/$(basename "$peer")
agent=$base/main/run/confirm.sock
uid_low=$((0x7a10 * 65536)) uid_high=$((0x7a11 * 65536)) uid_side=$((0x7a12 * 65536))

# setup NAME POLICY: a fresh configuration in $base/NAME for the three cages,
# their profiles, data directories, inboxes and socket directories; clipd's
# options of cage C (rate=, burst=) in $opts_C, its network mode in $net_C
# (none when unset).
setup() {
	d=$base/$1
	mkdir -p "$d/cfg" "$d/state" "$d/run" "$d/cstate"
	chmod 700 "$d/state" "$d/run"
	printf '%s\n' "$2" >"$d/cfg/policy"
	: >"$d/cfg/cages"
	for c in "low s0 $uid_low" "high s2 $uid_high" "side s1:c0 $uid_side"; do
		set -- $c
		mkdir -p "$d/in-$1" "$d/data-$1" "$d/sock-$1"
		eval "opts=\${opts_$1:-} net=\${net_$1:-none}"
		if [ -n "$mode" ]; then
			echo "$1 $2 $d/in-$1 $d/sock-$1/transfer.sock $opts" >>"$d/cfg/cages"
		else
			# The socket accepts only the cage's uid; the inbox is the cage's.
			echo "$1 $2 $d/in-$1 $d/sock-$1/transfer.sock uid=$3 $opts" >>"$d/cfg/cages"
			chown "$3:$3" "$d/in-$1" "$d/data-$1"
		fi
		cat >"$d/$1.cage" <<-EOF
			[Cage]
			Name=$1
			Level=$2
			UidBase=$3
			DataDirectory=$d/data-$1

			[Files]
			BindReadOnly=$bin_dir:/opt/clip/programs/clipctl $lib_dir:/opt/clip/libclip $peer_dir:/opt/clip/tests $d/sock-$1:/run/clip
			Bind=$d/in-$1:/inbox

			[Network]
			Mode=$net
			$([ "$net" = none ] || echo "TCPBindPorts=47801
			TCPConnectPorts=47801")

			[Security]
			WriteXorExecute=yes
		EOF
	done
}

in_cage() { # CAGE COMMAND...: run COMMAND in a fresh cage from $d/CAGE.cage
	local cage=$1
	shift
	"$clipctl" --state-dir "$d/cstate" cage run --profile "$d/$cage.cage" -- "$@"
}

# clipctl and the peer in a cage: under AddressSanitizer (the CI's asan
# step), without LeakSanitizer, which stops threads with ptrace(), refused
# by the cage's seccomp filter; their leaks are checked outside cages by
# the other suites. Elsewhere the variable is empty and changes nothing.
cc_env=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")

send() { # FROM FILE TARGET [clipctl options]: clipctl transfer send in the cage FROM
	in_cage "$1" "${cc_env[@]}" "$cc" transfer send "$2" --to "$3" "${@:4}"
}

sum_of() { sha256sum <"$1" | cut -d' ' -f1; }

echo "# three cages, clipd and an agent that says yes"
setup main "low high ask
high low ask encrypt
low side allow max-size=1K
@any @any ask direction=up"
if start_clipd --confirm-timeout-ms 20000; then ok "clipd is ready"; else not_ok "clipd is ready"; cat "$d/clipd.log"; fi
if start_agent yes; then ok "the agent is greeted"; else not_ok "the agent is greeted"; fi

expect 0 "a command runs in the low cage" -- in_cage low sh -c 'hostname; cat /proc/self/uid_map'
like "it is a cage: its own host name and a user namespace" "$out" "^low
 +0 +[1-9][0-9]* +[0-9]+$"
expect 2 "clipctl runs in the cage" -- in_cage low "${cc_env[@]}" "$cc" transfer send
like "clipctl in the cage answers" "$err" "usage: transfer send"

head -c 3000 /dev/urandom >"$d/data-low/doc.bin"
sum=$(sum_of "$d/data-low/doc.bin")
mtime=$(stat -c %Y.%y "$d/data-low/doc.bin")

echo "# up, ask + yes"
expect 0 "up, ask + yes: the low cage's document is delivered" -- send low /data/doc.bin high --note "quarterly figures"
like "up: the reply gives the hash" "$out" "delivered to high as 'doc.bin' \(3000 bytes, sha256 $sum\)"
is "up: byte-identical in the high inbox" "$(sum_of "$d/in-high/doc.bin")" "$sum"
expect 0 "up: the high cage reads it in its inbox" -- in_cage high sha256sum /inbox/doc.bin
is "up: byte-identical inside the high cage" "$out" "$sum  /inbox/doc.bin"
like "up: audited, source and target from the cages' sockets" "$(last_record)" "event=decision src=low srclevel=s0 dst=high dstlevel=s2 name=doc.bin size=3000 sha256=$sum decision=allow by=user"
like "up: the user saw the low cage as the source" "$(cat "$d/agent.log")" "from: +low \(level s0\)"
expect 0 "up: the source, read in the low cage after sending" -- in_cage low sha256sum /data/doc.bin
is "up: the source is unchanged" "$out" "$sum  /data/doc.bin"
is "up: the source was not even touched (mtime)" "$(stat -c %Y.%y "$d/data-low/doc.bin")" "$mtime"

echo "# down, ask + yes, under a rule with encrypt"
{
	echo "TOP SECRET plaintext"
	head -c 2000 /dev/urandom | base64
} >"$d/data-high/secret.txt"
size=$(stat -c %s "$d/data-high/secret.txt")
expect 0 "down, ask + yes, encrypt: delivered" -- send high /data/secret.txt low
like "down: the reply says encrypted" "$out" "delivered to low as 'secret.txt' .*encrypted"
like "down: the user was told it is a downgrade" "$(cat "$d/agent.log")" "DOWNGRADE"
expect 0 "down: the low cage reads what arrived" -- in_cage low sh -c 'head -c 8 /inbox/secret.txt && echo && ! grep -q "TOP SECRET" /inbox/secret.txt && echo no plaintext'
is "down: an envelope, not the plaintext" "$out" "CLIPENV1
no plaintext"
is "down: envelope size = size + 36" "$(stat -c %s "$d/in-low/secret.txt")" "$((size + 36))"
like "down: audited" "$(last_record)" "src=high srclevel=s2 dst=low dstlevel=s0 name=secret.txt .*decision=allow by=user"

echo "# refusals"
head -c 100 /dev/urandom >"$d/data-side/doc.bin"
expect 3 "down without a rule: refused by default" -- send side /data/doc.bin low
like "down without a rule: the reason" "$err" "denied by policy: no rule allows it"
like "down without a rule: audited" "$(last_record)" "src=side srclevel=s1:c0 dst=low .*decision=deny by=policy%20default"
[ ! -e "$d/in-low/doc.bin" ] && ok "down without a rule: nothing in the low inbox" || not_ok "down without a rule: nothing in the low inbox"
expect 3 "incomparable levels: refused" -- send side /data/doc.bin high
like "incomparable: the reason" "$err" "incomparable levels"
like "incomparable: audited" "$(last_record)" "src=side.*dst=high.*decision=deny by=policy%20default reason=incomparable%20levels"
expect 3 "incomparable the other way: refused" -- send high /data/secret.txt side
like "incomparable the other way: the reason" "$err" "incomparable levels"
head -c 2048 /dev/zero >"$d/data-low/big"
expect 3 "oversize: refused" -- send low /data/big side
like "oversize: the reason" "$err" "over the limit of 1024"
[ -z "$(ls -A "$d/in-side")" ] && ok "refused: nothing in the side inbox" || not_ok "refused: nothing in the side inbox"
is "refused: the high inbox holds only what was allowed" "$(ls "$d/in-high")" "doc.bin"

echo "# isolation"
# Sockets in the directories, and sockets that are mount points themselves
# (find goes by the directory entry, a regular file under a bound socket).
# A few directories of the host's /etc and /usr are not readable in a cage.
sockets='{ find / -path /proc -prune -o -type s -print 2>/dev/null
	cut -d" " -f5 /proc/self/mountinfo | while read -r m; do [ -S "$m" ] && echo "$m"; done; } | sort -u'
for c in low high; do
	expect 0 "$c: every socket the cage can see" -- in_cage $c sh -c "$sockets"
	is "$c: only its own socket, at the default path" "$out" "/run/clip/transfer.sock"
done
expect 0 "a cage looks for the agent socket's path" -- in_cage low sh -c 'test -e "$1" && echo exists || echo absent' _ "$agent"
is "the agent socket's path does not exist in a cage" "$out" absent
expect 1 "the agent socket cannot be connected from a cage" -- send low /data/doc.bin high --socket "$agent"
like "the agent socket: no such file" "$err" "No such file or directory"
expect 1 "another cage's socket cannot be connected from a cage" -- send low /data/doc.bin high --socket "$d/sock-high/transfer.sock"
like "another cage's socket: no such file" "$err" "No such file or directory"
expect 0 "a cage tries to remove its socket" -- in_cage low sh -c 'rm -f /run/clip/transfer.sock; test -S /run/clip/transfer.sock && echo still there'
is "the cage cannot remove its socket" "$out" "still there"
like "the socket's directory is read-only" "$err" "Read-only file system"
if [ -n "$mode" ]; then
	skip "the low socket refuses a peer of another uid" "rootless: every cage runs as the caller's uid"
	skip "the low socket refuses the low cage's other uids" "rootless: every cage runs as the caller's uid"
else
	expect 1 "the low socket refuses a peer of another uid (root, outside the cage)" -- "$clipctl" transfer send "$d/data-low/doc.bin" --to high --socket "$d/sock-low/transfer.sock"
	like "another uid: the refusal" "$err" "closed the connection"
	# uid= names one host uid: the cage's root, not a range.
	expect 1 "the low socket refuses the low cage's uid 1000" -- "$clipctl" --state-dir "$d/cstate" cage run --profile "$d/low.cage" --uid 1000 --gid 1000 -- "${cc_env[@]}" "$cc" transfer send /data/doc.bin --to high
	like "uid 1000 in the cage: the refusal" "$err" "closed the connection"
fi

cp /usr/bin/true "$d/data-low/tool"
expect 0 "an executable sent up is delivered" -- send low /data/tool high
is "the executable arrived intact" "$(sum_of "$d/in-high/tool")" "$(sum_of /usr/bin/true)"
expect 0 "the inbox is mounted noexec, nosuid, nodev in the cage" -- in_cage high grep ' /inbox ' /proc/self/mountinfo
like "the inbox's mount options" "$out" " /inbox [^ ]*nosuid,nodev,noexec"
expect 126 "a delivered file made executable cannot be executed in the target cage" -- in_cage high sh -c 'chmod 755 /inbox/tool && stat -c %a /inbox/tool && /inbox/tool'
is "the cage could make it executable" "$out" 755
like "the execution is refused" "$err" "Permission denied"

echo "# a long-lived cage keeps its socket across a restart of clipd"
# Its socket directory is bound, not the socket: a new socket made by a new
# clipd is the one the cage sees.
head -c 100 /dev/urandom >"$d/data-low/small"
expect 0 "a long-lived low cage starts" -- "$clipctl" --state-dir "$d/cstate" cage start --profile "$d/low.cage"
expect 0 "from it, a document is delivered" -- "$clipctl" --state-dir "$d/cstate" cage exec low "${cc_env[@]}" "$cc" transfer send /data/small --to side
stop_all
start_clipd && ok "clipd restarted" || not_ok "clipd restarted"
expect 0 "from the same cage, after the restart: delivered" -- "$clipctl" --state-dir "$d/cstate" cage exec low "${cc_env[@]}" "$cc" transfer send /data/small --to side
like "the second one got its own name" "$out" "as 'small-1'"
expect 0 "the long-lived cage stops" -- "$clipctl" --state-dir "$d/cstate" cage stop --grace-ms 200 low
log_verifies "the log verifies"
stop_all

echo "# the user says no, then says nothing"
start_clipd --confirm-timeout-ms 300 && start_agent no && ok "clipd and a no-agent" || not_ok "clipd and a no-agent"
expect 4 "up, ask + no: denied by the user" -- send low /data/doc.bin high
like "ask + no: the reason" "$err" "denied by the user: refused by the user"
like "ask + no: audited" "$(last_record)" "src=low .*dst=high .*decision=deny by=user"
stop_all
start_clipd --confirm-timeout-ms 300 && start_agent never && ok "clipd and a silent agent" || not_ok "clipd and a silent agent"
expect 4 "agent timeout: denied" -- send low /data/doc.bin high
like "timeout: the reason" "$err" "no answer within 300 ms"
like "timeout: audited as such" "$(last_record)" "src=low .*dst=high .*decision=deny by=timeout"
is "denied: nothing new in the high inbox" "$(ls "$d/in-high" | tr '\n' ' ')" "doc.bin tool "
stop_all
log_verifies "the log verifies after the restarts"

echo "# a cage sends names with invisible and look-alike characters"
# u HEX...: those code points in UTF-8, whatever the locale.
u() { python3 -c 'import sys; sys.stdout.buffer.write("".join(chr(int(c, 16)) for c in sys.argv[1:]).encode())' "$@"; }
# Each class of doc/transfer.md "Names", by one or more of its code points:
# refused by the mediator, the code point named; nothing delivered.
setup names "low high allow"
head -c 100 /dev/urandom >"$d/data-low/doc.bin"
start_clipd && ok "names: clipd" || not_ok "names: clipd"
for c in "0001 a control character" "0085 a control character" "2028 a control character" \
	"202E a bidirectional control" "2066 a bidirectional control" "200F a bidirectional control" \
	"200B an invisible character" "200C an invisible character" "200D an invisible character" \
	"00AD an invisible character" "034F an invisible character" "115F an invisible character" \
	"1160 an invisible character" "3164 an invisible character" "FFA0 an invisible character" \
	"2800 an invisible character" "180E an invisible character" "FE0F an invisible character" \
	"FEFF an invisible character" "2060 an invisible character" "E0041 an invisible character" \
	"E007F an invisible character" "E0100 an invisible character" "0600 an invisible character" \
	"FF0F a look-alike of a slash" "2215 a look-alike of a slash" "2044 a look-alike of a slash" \
	"29F8 a look-alike of a slash" "2571 a look-alike of a slash" "0338 a look-alike of a slash" \
	"FF3C a look-alike of a slash" "2216 a look-alike of a slash" "FE68 a look-alike of a slash" \
	"2024 a look-alike of a dot" "2025 a look-alike of a dot" "FF0E a look-alike of a dot" \
	"FE52 a look-alike of a dot"; do
	cp=${c%% *} why=${c#* }
	name=report$(u "$cp")pdf
	expect 3 "name with U+$cp: refused" -- send low /data/doc.bin high --name "$name"
	like "name with U+$cp: the refusal names it" "$err" "the name holds U\+$cp \($why\) at byte 6"
done
like "names: the refusals are audited" "$(last_record)" "event=decision src=low .*decision=deny by=mediator"
[ -z "$(ls -A "$d/in-high")" ] && ok "names refused: nothing delivered" || not_ok "names refused: nothing delivered"
# Letters that look like a slash or a dot are letters: not refused.
for name in "$(u 30ce 30fc 30c8).txt" "$(u 4e3f).txt" "r$(u e9)sum$(u e9).odt" "a$(u a0)b.txt"; do
	expect 0 "name '$name': delivered" -- send low /data/doc.bin high --name "$name"
	[ -e "$d/in-high/$name" ] && ok "name '$name': in the inbox as it is" || not_ok "name '$name': in the inbox as it is"
done
stop_all

echo "# a high cage forges the question on an 80x24 terminal: the facts stay last"
# The name and note a cage sends are what it wants the user to read: runs of
# spaces that wrap the terminal so that the real facts scroll away and a
# complete fake ("from: low ... direction: up") stands above the question.
# clip-confirm runs on a pty of its own (confirm-pty.py), and the test reads
# the screen as the user sees it when the question waits for an answer.
start_pty_agent() { # COLSxROWS ANSWERS: screens in $d/screen.N
	rm -f "$d/agent-ready" "$d"/screen.*
	mkfifo "$d/agent-ready"
	python3 "$(dirname "$0")/confirm-pty.py" "$1" "$d/screen" "$2" -- \
		"$confirm" --socket "$d/run/confirm.sock" --ready-fd 3 3>"$d/agent-ready" >>"$d/agent.log" 2>&1 &
	pty_agent=$!
	pids+=("$pty_agent")
	read -r -t 20 line <"$d/agent-ready" || true
	[ "${line:-}" = READY=1 ]
}
pad() { printf "%-${1}s" "$2"; } # WIDTH TEXT
# The last question on a screen: from its header on (all if it scrolled away).
last_question() { sed -n '/^=== transfer request/h; /^=== transfer request/!H; ${x;p}' "$1"; }
setup forge "high low ask encrypt"
head -c 100 /dev/urandom >"$d/data-high/doc.bin"
# Spaces to the end of the note's first line, then one fake line per row.
forged_note="$(pad 67 'x')$(pad 80 '  from:      low (level s0)')$(pad 80 '  to:        high (level s2)')$(pad 80 '  direction: up')$(pad 80 '  encrypted: no')"
forged_name="$(pad 1000 '')report.pdf"
# The same without ASCII spaces: ideographic spaces and blank Braille
# patterns wrap as well, and a name of look-alikes.
wide_note="$(u $(printf '3000 %.0s' $(seq 40)))from: low (level s0)$(u $(printf '2800 %.0s' $(seq 60)))direction: up$(u $(printf '3000 %.0s' $(seq 100)))"
real_facts="  from:      high (level s2)
  to:        low (level s0)
  direction: down  ** DOWNGRADE **
  encrypted: yes (AES-256-GCM envelope)"
question="Deliver DOWN (a downgrade) from high (s2) to low (s0), encrypted? [y/N]"
# Every line the agent draws, and nothing else: the frame's own lines.
frame_lines='^$|^clip-confirm: connected to |^=== transfer request: |^  what the sending cage says \(untrusted\):$|^    (name|note): ("|\(none\)$)|^  (size|sha256): |^  (from|to): +[a-z0-9_-]+ \(level [^ ]+\)$|^  direction: |^  encrypted: |^Deliver |^  -> refused$'
if start_clipd --confirm-timeout-ms 20000 && start_pty_agent 80x24 nn; then
	ok "forged question: clipd and clip-confirm on an 80x24 pty"
else
	not_ok "forged question: clipd and clip-confirm on an 80x24 pty"
fi
expect 4 "forged question (spaces): the user says no" -- send high /data/doc.bin low --name "$forged_name" --note "$forged_note"
expect 4 "forged question (wide blanks): the user says no" -- send high /data/doc.bin low --note "$wide_note"
wait "$pty_agent" && ok "forged question: the pty agent saw both questions" || not_ok "forged question: the pty agent saw both questions"
for i in 1 2; do
	screen=$(cat "$d/screen.$i" 2>/dev/null)
	is "forged question $i: the last line is the question, with the facts" "$(printf '%s\n' "$screen" | tail -1)" "$question"
	is "forged question $i: the facts stand right above it" "$(printf '%s\n' "$screen" | tail -5 | head -4)" "$real_facts"
	is "forged question $i: no other line reads as a fact" "$(last_question "$d/screen.$i" | grep -cE '^ *(from|to|direction|encrypted):')" 4
	is "forged question $i: no forged line of its own" "$(printf '%s\n' "$screen" | grep -vE "$frame_lines")" ""
	is "forged question $i: the terminal wrapped no line" "$(cat "$d/screen.$i.wraps" 2>/dev/null)" 0
done
like "forged question 1: the name's spaces are collapsed" "$(cat "$d/screen.1")" '    name: " report\.pdf"'
like "forged question 1: the note is cut, its length said" "$(cat "$d/screen.1")" '    note: "x from: low .*\.\.\." \(cut, 387 bytes in all\)'
like "forged question 2: the blanks are escaped or collapsed" "$(cat "$d/screen.2")" '    note: " from: low \(level s0\)\\u\{2800\}.*\(cut, '
[ -z "$(ls -A "$d/in-low")" ] && ok "forged question: nothing delivered" || not_ok "forged question: nothing delivered"
# A wider terminal (TIOCGWINSZ): the note gets its width, and no more.
if start_pty_agent 120x30 n; then ok "forged question: clip-confirm on a 120x30 pty"; else not_ok "forged question: clip-confirm on a 120x30 pty"; fi
expect 4 "forged question at 120 columns: the user says no" -- send high /data/doc.bin low --name "$forged_name" --note "$wide_note"
wait "$pty_agent" && ok "forged question at 120 columns: the pty agent saw it" || not_ok "forged question at 120 columns: the pty agent saw it"
like "forged question at 120 columns: the note takes the width" "$(grep '^    note: ' "$d/screen.1" | awk '{ print length($0) }')" '^(9[0-9]|1[01][0-9])$'
is "forged question at 120 columns: the terminal wrapped no line" "$(cat "$d/screen.1.wraps" 2>/dev/null)" 0
is "forged question at 120 columns: the question, with the facts, last" "$(tail -5 "$d/screen.1")" "$real_facts
$question"
stop_all
# Not a terminal (--auto writes to a file): bounded as if 80 columns wide.
start_clipd --confirm-timeout-ms 20000 && start_agent no && ok "forged question: clipd and an agent on a file" || not_ok "forged question: clipd and an agent on a file"
: >"$d/agent.log"
expect 4 "forged question on a file: refused" -- send high /data/doc.bin low --name "$forged_name" --note "$forged_note"
is "forged question on a file: no line over 79 columns" "$(awk 'length($0) > 79' "$d/agent.log")" ""
is "forged question on a file: the facts come last" "$(grep -v -e '^  -> ' "$d/agent.log" | tail -4)" "$real_facts"
stop_all

echo "# disk: a sparse document of 1 GiB, sent up from a real cage"
# Made in the cage: a 1 GiB hole with a few bytes at its start, middle and end.
setup disk "@any high ask direction=up
@any low ask"
start_clipd --confirm-timeout-ms 20000 && start_agent yes && ok "disk: clipd and a yes-agent" || not_ok "disk: clipd and a yes-agent"
expect 0 "sparse: the low cage makes a 1 GiB sparse document" -- in_cage low sh -c 'truncate -s 1G /data/sparse && printf head | dd of=/data/sparse conv=notrunc status=none && printf middle | dd of=/data/sparse bs=1 seek=536870913 conv=notrunc status=none && printf tail | dd of=/data/sparse bs=1 seek=1073741820 conv=notrunc status=none && stat -c "%s %b" /data/sparse'
like "sparse: 1 GiB, almost no block in the cage" "$out" "^1073741824 [0-9]{1,3}$"
sparse_sum=$(openssl dgst -sha256 -r "$d/data-low/sparse" | cut -d' ' -f1)
expect 0 "sparse: delivered up" -- send low /data/sparse high
like "sparse: the reply gives the logical size and the hash of the whole content" "$out" "as 'sparse' \(1073741824 bytes, sha256 $sparse_sum\)"
blocks=$(stat -c '%b * %B' "$d/in-high/sparse")
blocks=$(($blocks))
[ "$blocks" -le $((1024 * 1024)) ] && ok "sparse: the delivered file holds at most 1 MiB of blocks" || not_ok "sparse: the delivered file holds at most 1 MiB of blocks ($blocks bytes of blocks)"
is "sparse: the delivered file's size" "$(stat -c %s "$d/in-high/sparse")" 1073741824
is "sparse: the delivered file's content (sha256)" "$(openssl dgst -sha256 -r "$d/in-high/sparse" | cut -d' ' -f1)" "$sparse_sum"
like "sparse: audited with the logical size and the hash" "$(last_record)" "src=low .*dst=high .*name=sparse size=1073741824 sha256=$sparse_sum decision=allow"
rm -f "$d/in-high/sparse" "$d/data-low/sparse"

echo "# disk: a document rewritten while it is read, its mtime set back each time"
# In the low cage, a process rewrites the head and the tail of a 64 MiB
# document (version k at both ends) and sets its mtime back with utimensat()
# after each write, every millisecond, while clipctl sends it: size and mtime
# never change, only the ctime (which no cage can set) does.
rewrite='import os, signal, subprocess, sys, time
path = "/data/moving"
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(64):
    os.pwrite(fd, bytes([i]) * (1 << 20), i << 20)
st = os.fstat(fd)
pid = os.fork()
if pid == 0:
    k = 0
    while True:
        # Stopped only between two rounds, the mtime set back each time.
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
        k = (k + 1) % 256
        os.pwrite(fd, bytes([k]) * 4096, 0)
        os.pwrite(fd, bytes([k]) * 4096, (64 << 20) - 4096)
        os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
        time.sleep(0.001)
r = subprocess.run(sys.argv[1:] + [path, "--to", "high"], capture_output=True, text=True)
os.kill(pid, signal.SIGTERM)
os.waitpid(pid, 0)
st2 = os.fstat(fd)
print("status", r.returncode, "mtime", "kept" if st2.st_mtime_ns == st.st_mtime_ns else "moved")
print(r.stdout + r.stderr)'
expect 0 "rewritten: the low cage rewrites its document while sending it" -- in_cage low "${cc_env[@]}" python3 -c "$rewrite" "$cc" transfer send
like "rewritten: refused, the mtime set back notwithstanding" "$out" "^status 1 mtime kept"
like "rewritten: the reason" "$out" "the document (changed while it was read|is being changed)"
[ ! -e "$d/in-high/moving" ] && ok "rewritten: nothing delivered" || not_ok "rewritten: nothing delivered (a torn copy is in the high inbox)"
like "rewritten: audited as failed" "$(last_record)" "src=low .*dst=high .*name=moving .*decision=failed"
stop_all
rm -f "$d/data-low/moving"

echo "# disk: documents waiting for the user are bounded per source cage and per target"
# Budgets of 64 MiB per source cage and 100 MiB per target inbox. The agent
# answers yes to the side cage and never to the others: the high cage's
# documents (sparse, 30 MiB each) wait in the low inbox.
agent_py='import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
log = open(sys.argv[3], "a", buffering=1)
while True:
    m = s.recv(8193)
    if not m:
        break
    kind = struct.unpack("<H", m[6:8])[0]
    b = m[12:]
    if kind == 5:
        print("hello", file=log)
    if kind != 3:
        continue
    qid, size = struct.unpack("<Q", b[0:8])[0], struct.unpack("<Q", b[14:22])[0]
    off, f = 54, []
    for _ in range(6):
        n = struct.unpack("<H", b[off:off + 2])[0]
        f.append(b[off + 2:off + 2 + n].decode("utf-8", "replace"))
        off += 2 + n
    print("prompt source=%s name=%s size=%d" % (f[0], f[4], size), file=log)
    if f[0] == sys.argv[2]:
        s.send(struct.pack("<IHHIQB", 0x46584C43, 1, 4, 9, qid, 1))'
start_clipd --confirm-timeout-ms 20000 --pending-max-per-source 64M --pending-max-per-target 100M && ok "budget: clipd with budgets" || not_ok "budget: clipd with budgets"
: >"$d/select.log"
python3 -c "$agent_py" "$d/run/confirm.sock" side "$d/select.log" &
pids+=($!)
waited() { # PATTERN: wait (10 s at most) until the agent's log has it
	for _ in $(seq 100); do grep -qE -- "$1" "$d/select.log" && return 0; sleep 0.1; done
	return 1
}
waited '^hello' && ok "budget: an agent that says yes to side only" || not_ok "budget: an agent that says yes to side only"
for f in w1 w2 w3; do truncate -s 30M "$d/data-high/$f"; done
truncate -s 45M "$d/data-side/big"
head -c 1000 /dev/urandom >"$d/data-side/small"
waiting=()
for f in w1 w2; do
	send high /data/$f low >"$d/$f.out" 2>&1 &
	waiting+=($!)
	waited "prompt source=high name=$f " && ok "budget: high's $f waits for the user" || not_ok "budget: high's $f waits for the user"
done
start=$(date +%s)
expect 1 "budget: high's third document is refused (64 MiB per source)" -- send high /data/w3 low
like "budget: the reason names the source's budget" "$err" "cage 'high' has 60 MiB waiting for the user, and 31457280 bytes more would be over its budget of 64 MiB \(pending bytes per source cage\).*Disk quota exceeded"
[ $(($(date +%s) - start)) -lt 10 ] && ok "budget: refused at once, not after the user's timeout" || not_ok "budget: refused at once, not after the user's timeout"
like "budget: the refusal is audited" "$(last_record)" "src=high .*dst=low .*name=w3 .*decision=deny by=mediator reason=cage%20'high'%20has%2060%20MiB"
expect 1 "budget: 45 MiB from side would take the low inbox over 100 MiB: refused" -- send side /data/big low
like "budget: the reason names the target's budget" "$err" "the inbox of cage 'low' has 60 MiB waiting for the user, .* over its budget of 100 MiB \(pending bytes per target inbox\)"
expect 0 "budget: a small document from side still goes through" -- send side /data/small low
like "budget: side's small document is delivered" "$out" "delivered to low as 'small' \(1000 bytes"
is "budget: the low inbox holds side's document only" "$(ls "$d/in-low")" "small"
stop_all
for p in "${waiting[@]}"; do wait "$p"; done
like "budget: high's waiting documents were never delivered" "$(cat "$d/w1.out" "$d/w2.out")" "closed the connection|denied"
log_verifies "disk: the log verifies"

echo "# one cage's lingering socket does not stop the mediator for the others"
# The attack (issue 14, finding 1): the low cage sends as its document a TCP
# socket with unsent data and SO_LINGER 10 s, a loopback connection in its
# own network namespace whose peer never reads. The last close() of it
# waits 10 s: done on the mediator's loop, every cage would wait that long.
# Its TCP connection needs lo up in its network namespace: Mode=loopback,
# and its port listed for Landlock (transfer-peer.c binds 47801).
net_low=loopback
setup linger "low high ask
high low ask encrypt"
net_low=
start_clipd --confirm-timeout-ms 20000 && start_agent yes && ok "linger: clipd and an agent" || not_ok "linger: clipd and an agent"
in_cage low "${cc_env[@]}" "$cpeer" /run/clip/transfer.sock linger 10 high >"$d/linger.out" 2>&1 &
attacker=$!
head -c 100 /dev/urandom >"$d/data-high/doc"
for _ in $(seq 100); do grep -q '^sent' "$d/linger.out" && break; sleep 0.1; done
# The mediator has it once its answer is there (or after a short while).
for _ in $(seq 20); do grep -q '^status=' "$d/linger.out" && break; sleep 0.1; done
t0=$(date +%s%N)
expect 0 "linger: meanwhile, the high cage's document is delivered" -- send high /data/doc low
ms=$((($(date +%s%N) - t0) / 1000000))
like "linger: the socket is refused at once, named" "$(cat "$d/linger.out")" "status=3 error=124 name= message=the document is a TCP socket: only regular files are transferred"
if [ "$ms" -lt 2000 ]; then
	ok "linger: the high cage is answered within 2 s, not after the 10 s linger ($ms ms)"
else
	not_ok "linger: the high cage is answered within 2 s, not after the 10 s linger ($ms ms)"
fi
wait "$attacker"
like "linger: audited as refused" "$("$clipctl" --state-dir "$d/state" audit show | grep name=stuck)" "src=low .*decision=failed by=mediator reason=the%20document%20is%20a%20TCP%20socket"
stop_all

echo "# one cage floods the user with questions; another cage is still asked"
# The attack (finding 7): the low cage, at a rate it is allowed, sends 300
# documents under an ask rule on 75 connections and never lets them be
# answered. Only its share waits for the user; the high cage's question
# after it is put to the user, not refused.
opts_low="rate=1000 burst=400"
setup flood "low high ask
high low ask encrypt"
opts_low=
echo flood >"$d/data-low/f"
head -c 100 /dev/urandom >"$d/data-high/doc"
start_clipd --confirm-timeout-ms 6000 && start_agent never && ok "flood: clipd and a silent agent" || not_ok "flood: clipd and a silent agent"
expect 0 "flood: the low cage sends 300 questions" -- in_cage low "${cc_env[@]}" "$cpeer" /run/clip/transfer.sock flood 300 /data/f high
like "flood: beyond its share, the low cage is refused, named with the limit" "$out" "flood: sent=300 answered=296 refused=296 first=cage 'low' has 4 questions waiting for the user, its limit"
expect 4 "flood: the high cage's question is put to the user" -- send high /data/doc low
like "flood: the high cage was asked, not refused (no answer in time)" "$err" "denied by the user: no answer within 6000 ms"
like "flood: the user saw the high cage's question" "$(cat "$d/agent.log")" "from: +high"
is "flood: the user saw 4 questions of the low cage, not 256" "$(grep -cE "from: +low" "$d/agent.log")" 4
stop_all

tap_plan_end
