#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# On demand only (never in CI): the Python row of bench-exec (start-up plus
# the import of the 200 standard-library modules of tests/exec/stdlib-200.txt,
# clip-python beside /usr/bin/python3) without fapolicyd, then with fapolicyd
# running, and the ratios.
#
# fapolicyd is a system-wide daemon: while it runs, every open and exec on
# the file systems it watches waits for its answer. This script therefore
# runs it in permissive mode (it decides and logs, it never denies), for the
# measurement only, and puts its configuration back afterwards:
#   - fapolicyd.conf: permissive = 1, trust = file (Debian's build has no rpm
#     backend), integrity = none (decisions by path in the trust database);
#   - compiled.rules: upstream's "known-libs" sample rule set (the one its
#     README recommends), so that every .py opened is looked up as a
#     trusted language file and every exec/shared object as trusted ELF;
#   - trust.d/clip-bench: /usr/lib/python3.11, the interpreters and the
#     shared objects they load, so both sides are "trusted".
# It starts fapolicyd itself (--debug-deny, foreground, in the background of
# this script), waits for its "Starting to listen for events" line, measures,
# stops it with SIGTERM and checks it is gone.
#
# Usage: tests/bench/bench-fapolicyd.sh BUILDDIR [INTERP_RUNS]   (as root)
set -euo pipefail

die() { echo "bench-fapolicyd: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (fapolicyd needs CAP_SYS_ADMIN)"
# A private mount namespace: fapolicyd marks the mounts it sees (mount marks,
# allow_filesystem_mark = 0), here copies only this script's processes use,
# so the rest of the machine never waits for it.
if [ -z "${CLIP_BENCH_FAPOLICYD_NS:-}" ]; then
	CLIP_BENCH_FAPOLICYD_NS=1 exec unshare --mount --propagation private "$0" "$@"
fi
command -v fapolicyd >/dev/null && command -v fapolicyd-cli >/dev/null ||
	die "fapolicyd is not installed (apt-get install --no-install-recommends fapolicyd)"
[ $# -ge 1 ] || die "usage: $0 BUILDDIR [INTERP_RUNS]"
build=$(readlink -f "$1")
runs=${2:-15}
src=$(dirname "$(readlink -f "$0")")
bench=$build/tests/bench/bench-exec
clip_python=$build/programs/clip-python/clip-python
stdlib=$src/../exec/stdlib-200.txt
etc=/etc/fapolicyd
[ -x "$bench" ] && [ -x "$clip_python" ] || die "$build: build bench-exec and clip-python first"
[ -e /run/fapolicyd/fapolicyd.fifo ] && die "fapolicyd seems to be running already"

tmp=$(mktemp -d /var/tmp/clip-bench-fapolicyd-XXXXXX)
log=$tmp/fapolicyd.log
pid=
had_rules=0
leftovers=
for f in /var/lib/fapolicyd/data.mdb /var/lib/fapolicyd/lock.mdb /var/lib/fapolicyd/db.ver \
	/var/log/fapolicyd-access.log; do
	[ -e "$f" ] || leftovers="$leftovers $f"
done
[ -e $etc/compiled.rules ] && had_rules=1 && cp -p $etc/compiled.rules "$tmp/"
cp -p $etc/fapolicyd.conf "$tmp/"

cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		wait "$pid" || true
	fi
	cp -p "$tmp/fapolicyd.conf" $etc/fapolicyd.conf
	if [ $had_rules = 1 ]; then
		cp -p "$tmp/compiled.rules" $etc/compiled.rules
	else
		rm -f $etc/compiled.rules
	fi
	rm -f $etc/trust.d/clip-bench
	# The trust database and report this run created (none before it).
	# shellcheck disable=SC2086
	[ -z "$leftovers" ] || rm -f $leftovers
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Python row of bench-exec: "| clip-python: ... | ms | /usr/bin/python3 | ms | ratio |".
measure() {
	"$bench" --runs 3 --duration-ms 200 --interp-runs "$runs" \
		--python "$clip_python" --stdlib "$stdlib" | tee "$tmp/$1.out"
	awk -F'|' '/clip-python: start/ { gsub(/ /, ""); print $3, $5 }' "$tmp/$1.out" >"$tmp/$1.ms"
	[ -s "$tmp/$1.ms" ] || die "no Python row in the output of bench-exec"
}

echo "== without fapolicyd"
measure plain

# Configuration for the measurement (restored by cleanup).
# uid/gid root: dropping to the fapolicyd user fails in a container whose
# bounding set lacks a capability fapolicyd keeps ("Cannot change to uid").
sed -i -e 's/^permissive *=.*/permissive = 1/' -e 's/^trust *=.*/trust = file/' \
	-e 's/^integrity *=.*/integrity = none/' $etc/fapolicyd.conf
if ! capsh --has-p=cap_sys_resource 2>/dev/null; then
	sed -i -e 's/^uid *=.*/uid = root/' -e 's/^gid *=.*/gid = root/' $etc/fapolicyd.conf
fi
for r in 10-languages 20-dracut 21-updaters 30-patterns 40-bad-elf 41-shared-obj \
	42-trusted-elf 70-trusted-lang 72-shell 90-deny-execute 95-allow-open; do
	cat /usr/share/fapolicyd/sample-rules/$r.rules
done | grep -v '^#' | grep -v '^$' >$etc/compiled.rules
{
	readlink -f /usr/bin/python3
	readlink -f "$clip_python"
	readlink -f "$build/libclip/libclip.so.0"
	{ ldd /usr/bin/python3 "$clip_python"; find /usr/lib/python3.11/lib-dynload -name '*.so' -exec ldd {} +; } |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | xargs -r readlink -f
} | sort -u >"$tmp/trust.list"
fapolicyd-cli --file add /usr/lib/python3.11/ --trust-file clip-bench >/dev/null
while read -r f; do
	# A file already listed is refused; the others are added.
	fapolicyd-cli --file add "$f" --trust-file clip-bench >/dev/null 2>&1 || true
done <"$tmp/trust.list"
echo
echo "== fapolicyd $(dpkg-query -W -f '${Version}' fapolicyd): permissive, $(grep -vc '^%' $etc/compiled.rules) rules" \
	"(known-libs), $(wc -l <$etc/trust.d/clip-bench) trusted files"
cat $etc/compiled.rules

fapolicyd --debug-deny >"$log" 2>&1 &
pid=$!
# Ready when it says so; tail ends (EOF) if fapolicyd dies first.
ready=0
coproc TAIL { exec tail -n +1 --pid="$pid" -f "$log"; }
tail_pid=$TAIL_PID
tail_fd=${TAIL[0]}
while IFS= read -r -t 300 line <&"$tail_fd"; do
	case $line in *"Starting to listen for events"*) ready=1; break ;; esac
done
kill "$tail_pid" 2>/dev/null || true
[ $ready = 1 ] || { cat "$log" >&2; die "fapolicyd did not start"; }
grep -E 'Loaded|mount point|integrity' "$log" || true
grep -E '^(permissive|trust|integrity|uid|gid|watch_fs) ' $etc/fapolicyd.conf
echo
measure fapolicyd
denied=$(grep -c 'dec=deny' "$log" || true)
kill -TERM "$pid"
wait "$pid" || true
kill -0 "$pid" 2>/dev/null && die "fapolicyd $pid still running"
pid=
[ -e /run/fapolicyd/fapolicyd.fifo ] && die "fapolicyd left its fifo behind"
echo "fapolicyd stopped; would-be denials it logged (this namespace's processes): ${denied:-0}, by path:"
grep 'dec=deny' "$log" | sed -n 's/.*path=\([^ ]*\).*/\1/p' | sort | uniq -c | sort -rn | head -8 || true

read -r cp0 py0 <"$tmp/plain.ms"
read -r cp1 py1 <"$tmp/fapolicyd.ms"
echo
printf '| %-34s | %9s | %9s | %12s |\n' "configuration ($runs runs, medians)" "python3" "clip-py" "clip/python3"
printf '|%s|%s|%s|%s|\n' ------------------------------------ ----------- ----------- --------------
awk -v a="$py0" -v b="$cp0" -v c="$py1" -v d="$cp1" 'BEGIN {
	printf "| %-34s | %6.1f ms | %6.1f ms | %12.3f |\n", "without fapolicyd", a, b, b / a
	printf "| %-34s | %6.1f ms | %6.1f ms | %12.3f |\n", "fapolicyd 1.1.7, permissive", c, d, d / c
	printf "| %-34s | %9.3f | %9.3f | %12s |\n", "ratio fapolicyd / without", c / a, d / b, ""
	printf "\nclip-python under fapolicyd / plain python3 without it: %.3f\n", d / a
}'
echo "the machine may be shared with other work; phases are sequential, runs interleaved within each"
