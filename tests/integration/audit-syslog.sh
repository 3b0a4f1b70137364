#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A fleet's trail through the engines it already runs (issue 16): two real
# rsyslog instances on loopback, a machine's local one, which receives the
# writer's syslog(3) on its socket and forwards over TCP, and a collector,
# which writes what it receives to a file. The writer (audit-append, as
# clipd appends: each record, then its signed line, to syslog) sees that
# socket as /dev/log in a mount namespace of its own. The collector's file
# verifies with the machine's public key alone; an edited, a reordered and
# a truncated copy of it are refused.
#
#   audit-syslog.sh CLIPCTL AUDIT_APPEND
set -u
clipctl=$1 append=$2
. "$(dirname "$0")/tap.sh"

if [ "$(id -u)" != 0 ] || ! command -v rsyslogd >/dev/null || ! unshare -m true 2>/dev/null; then
	echo "1..0 # SKIP no rsyslogd, or not root (a mount namespace gives the writer its /dev/log)"
	exit 0
fi
d=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$d" "$tap_tmp"
}
trap cleanup EXIT

# A port nobody listens on, for the collector.
for _ in $(seq 20); do
	port=$((20000 + RANDOM % 30000))
	ss -Hltn "sport = :$port" 2>/dev/null | grep -q . || break
done
mkdir "$d/cw" "$d/lw"
cat >"$d/collector.conf" <<EOF
global(workDirectory="$d/cw")
module(load="imtcp")
template(name="line" type="string" string="%TIMESTAMP% %HOSTNAME% %syslogtag%%msg%\n")
ruleset(name="collect") { action(type="omfile" file="$d/collected.log" template="line") }
input(type="imtcp" address="127.0.0.1" port="$port" ruleset="collect")
EOF
cat >"$d/local.conf" <<EOF
global(workDirectory="$d/lw")
module(load="imuxsock" SysSock.Use="off")
input(type="imuxsock" Socket="$d/log.sock" CreatePath="on")
action(type="omfwd" target="127.0.0.1" port="$port" protocol="tcp" template="RSYSLOG_ForwardFormat")
EOF
rsyslogd -n -f "$d/collector.conf" -i "$d/collector.pid" >"$d/collector.out" 2>&1 &
pids+=($!)
rsyslogd -n -f "$d/local.conf" -i "$d/local.pid" >"$d/local.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	[ -S "$d/log.sock" ] && ss -Hltn "sport = :$port" | grep -q . && break
	sleep 0.1
done
[ -S "$d/log.sock" ] && ok "rsyslog: both instances run" || not_ok "rsyslog: both instances run"

# The writer's /dev: the devices it may use, and log, the local instance's socket.
mkdir "$d/dev"
for n in null zero full random urandom; do
	touch "$d/dev/$n"
done
ln -s "$d/log.sock" "$d/dev/log"
writer() {
	unshare -m bash -c 'for n in null zero full random urandom; do mount --bind /dev/$n "$1/dev/$n"; done
		mount --rbind "$1/dev" /dev && exec "${@:2}"' - "$d" "$@"
}
expect 0 "syslog: five records appended, each sent to syslog" -- writer "$append" "$d/state" file 5 syslog
expect 0 "syslog: the machine's public key" -- "$clipctl" --state-dir "$d/state" audit export-key
printf '%s\n' "$out" >"$d/key.pem"
for _ in $(seq 100); do
	grep -q "clip-audit: s1 count=5 " "$d/collected.log" 2>/dev/null && break
	sleep 0.1
done
like "syslog: the collector has the last record's signature" "$(cat "$d/collected.log" 2>/dev/null)" "clip-audit: s1 count=5 "
is "syslog: the collector has the five records" "$(grep -c 'clip-audit: v1 seq=' "$d/collected.log")" "5"

pk=("$clipctl" audit verify --public-key "$d/key.pem" --trail)
expect 0 "collector: its copy verifies with the public key alone" -- "${pk[@]}" "$d/collected.log"
is "collector: five records" "$out" "$d/collected.log: 5 records, valid (signed by $d/key.pem)"
expect 0 "collector: audit show prints them" -- "$clipctl" audit show --public-key "$d/key.pem" --trail "$d/collected.log"
like "collector: the records as the machine wrote them" "$out" "^v1 seq=1 .* name=doc-0 "

sed '/seq=3 /s/name=doc-2/name=doc-X/' "$d/collected.log" >"$d/edited.log"
expect 1 "collector: an edited copy is refused" -- "${pk[@]}" "$d/edited.log"
like "collector: edited: the record is named" "$err" "record 3 is not the one signed"
# Record 2 and its signature after record 3 and its own.
awk '/clip-audit: (v1 seq|s1 count)=2 /{held = held $0 "\n"; next} {print} /clip-audit: s1 count=3 /{printf "%s", held}' "$d/collected.log" >"$d/reordered.log"
expect 1 "collector: a reordered copy is refused" -- "${pk[@]}" "$d/reordered.log"
like "collector: reordered: the record out of place is named" "$err" "record 2 is not the record expected there"
grep -v 'seq=5 ' "$d/collected.log" >"$d/truncated.log"
expect 1 "collector: a truncated copy is refused" -- "${pk[@]}" "$d/truncated.log"
like "collector: truncated: the signature covers more records" "$err" "truncated: a signature covers 5 records, 4 are there"
head -n -1 "$d/collected.log" >"$d/cut.log"
expect 1 "collector: a copy cut before the last signature is refused" -- "${pk[@]}" "$d/cut.log"
like "collector: cut: the unsigned record is named" "$err" "records 5 to 5 are not signed"
expect 0 "collector: another machine's key" -- "$append" "$d/other" file 1
expect 0 "collector: its public key" -- "$clipctl" --state-dir "$d/other" audit export-key
printf '%s\n' "$out" >"$d/other.pem"
expect 1 "collector: the copy checked with another machine's key is refused" -- "$clipctl" audit verify --public-key "$d/other.pem" --trail "$d/collected.log"
like "collector: another machine's key: both keys named" "$err" "is by key [0-9a-f]{16}, not by the key given"

tap_plan_end
