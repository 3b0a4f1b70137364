#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Bind sources, attacked from inside real cages (issue 14, finding 5), as
# root or rootless (uid 65534, through setpriv):
#  - cage low replaces the directory it publishes, which cage side binds,
#    with a symbolic link to cage high's data, or to the host's /: side's
#    next start must fail, naming the link, and mount nothing;
#  - a cage whose read-only bind lies in its own data directory writes a
#    binary there and runs it through the bind (W^X): refused at start;
#  - the same with Bind=<its data>/shared, which it could swap.
# The test hooks bind-nofollow and bind-writable switch the two checks off
# (a -Dtest_hooks=true build): then the attacks succeed and this fails.
#
# usage: bind-sources.sh CLIPCTL root|rootless
set -u
clipctl=$1
mode=$2
. "$(dirname "$0")/../integration/tap.sh"

. "$(dirname "$0")/mode.sh"

tmp=$(mktemp -d /tmp/clip-binds-XXXXXX)
chmod 755 "$tmp"
cleanup() {
	rm -rf "$tmp" "$tap_tmp"
}
trap cleanup EXIT

base=$((0x100000 + ($$ % 64) * 0x40000))
low_base=$base side_base=$((base + 0x10000)) high_base=$((base + 0x20000)) x_base=$((base + 0x30000))
mkdir -m 0700 "$tmp/state" "$tmp/data-low" "$tmp/data-high" "$tmp/data-side" "$tmp/data-x"
mkdir -m 0755 "$tmp/data-low/pub" "$tmp/data-x/tools" "$tmp/data-x/shared"
echo "level s2 secret" >"$tmp/data-high/secret"
if [ "$mode" = root ]; then
	chown -R "$low_base:$low_base" "$tmp/data-low"
	chown -R "$high_base:$high_base" "$tmp/data-high"
	chown -R "$side_base:$side_base" "$tmp/data-side"
	chown -R "$x_base:$x_base" "$tmp/data-x"
else
	chown -R "$owner" "$tmp/state" "$tmp/data-low" "$tmp/data-high" "$tmp/data-side" "$tmp/data-x"
fi

profile() { # NAME LEVEL DATA BASE [FILES...]: a profile on stdout
	printf '[Cage]\nName=%s\nLevel=%s\nDataDirectory=%s\nUidBase=%s\n' "$1" "$2" "$3" "$4"
	shift 4
	[ $# -gt 0 ] && printf '[Files]\n%s\n' "$@"
	printf '[Security]\nWriteXorExecute=yes\n'
}
profile low s0 "$tmp/data-low" "$low_base" >"$tmp/low.cage"
profile side s0 "$tmp/data-side" "$side_base" "BindReadOnly=$tmp/data-low/pub:/pub" >"$tmp/side.cage"
profile side-rw s0 "$tmp/data-side" "$side_base" "Bind=$tmp/data-low/pub:/pub" >"$tmp/side-rw.cage"
c=("${as[@]}" "$clipctl" --state-dir "$tmp/state")

# run PROFILE SCRIPT: sh -c SCRIPT in a new cage; $out, $err, $status
run() {
	out=$("${c[@]}" cage run --profile "$1" -- /bin/sh -c "$2" 2>"$tap_tmp/err") && status=0 || status=$?
	err=$(cat "$tap_tmp/err")
}

# Control: side reads what low publishes.
echo "published" >"$tmp/data-low/pub/note"
[ "$mode" = root ] && chown "$low_base:$low_base" "$tmp/data-low/pub/note"
run "$tmp/side.cage" 'cat /pub/note'
is "bind-nofollow control: side reads low's published directory" "$out" "published"

# The attack: low, from inside, replaces pub with a link to high's data.
run "$tmp/low.cage" "rm -r /data/pub && ln -s '$tmp/data-high' /data/pub && echo planted"
is "bind-nofollow attack: low plants a link in place of pub" "$out" "planted"
run "$tmp/side.cage" 'cat /pub/secret; echo ran'
is "bind-nofollow: side's start fails once pub is a link" "$status" 1
like "bind-nofollow: the message names the link and says why" "$err" \
	"bind source $tmp/data-low/pub refused: $tmp/data-low/pub is a symbolic link"
if printf '%s' "$out" | grep -q -e secret -e ran; then
	not_ok "bind-nofollow: nothing of side ran, high's secret is not read"
	echo "#   out: $out"
else
	ok "bind-nofollow: nothing of side ran, high's secret is not read"
fi

# Again, to the host's / read-write.
run "$tmp/low.cage" "rm /data/pub && ln -s / /data/pub && echo planted"
is "bind-nofollow attack: low links pub to /" "$out" "planted"
run "$tmp/side-rw.cage" "cat '/pub$tmp/data-high/secret'; echo ran"
is "bind-nofollow: a read-write bind of a link to / fails" "$status" 1
like "bind-nofollow: and names it" "$err" "$tmp/data-low/pub is a symbolic link"
if printf '%s' "$out" | grep -q -e secret -e ran; then
	not_ok "bind-nofollow: the host's / is not mounted"
	echo "#   out: $out"
else
	ok "bind-nofollow: the host's / is not mounted"
fi

# A link further up the path, and a DataDirectory that is one.
mkdir -m 0755 "$tmp/real" "$tmp/real/dir"
ln -s real "$tmp/link"
profile up s0 "$tmp/data-side" "$side_base" "BindReadOnly=$tmp/link/dir:/d" >"$tmp/up.cage"
run "$tmp/up.cage" 'true'
is "bind-nofollow: a link at any component of a source is refused" "$status" 1
like "bind-nofollow: the message names that component" "$err" "$tmp/link is a symbolic link"
ln -s data-high "$tmp/data-link"
profile dl s0 "$tmp/data-link" "$high_base" >"$tmp/dl.cage"
run "$tmp/dl.cage" 'cat /data/secret'
is "bind-nofollow: a DataDirectory that is a link is refused" "$status" 1
like "bind-nofollow: the message names the DataDirectory" "$err" \
	"DataDirectory= $tmp/data-link refused: $tmp/data-link is a symbolic link"

# W^X through a read-only bind of what the cage writes.
profile x s0 "$tmp/data-x" "$x_base" "BindReadOnly=$tmp/data-x/tools:/tools" >"$tmp/x.cage"
run "$tmp/x.cage" 'cp /usr/bin/true /data/tools/payload && chmod 755 /data/tools/payload && /tools/payload && echo EXECUTED'
is "bind-writable: a read-only bind inside the data directory fails to start" "$status" 1
like "bind-writable: the message says it lies in the DataDirectory" "$err" \
	"bind source $tmp/data-x/tools refused: it lies beneath DataDirectory= $tmp/data-x, which the cage writes"
if printf '%s' "$out" | grep -q EXECUTED; then
	not_ok "bind-writable: what the cage wrote does not execute"
else
	ok "bind-writable: what the cage wrote does not execute"
fi
profile xs s0 "$tmp/data-x" "$x_base" "Bind=$tmp/data-x/shared:/shared" >"$tmp/xs.cage"
run "$tmp/xs.cage" 'echo started'
is "bind-writable: Bind=<its data>/shared fails to start" "$status" 1
like "bind-writable: the message says the cage could replace it" "$err" \
	"bind source $tmp/data-x/shared refused: it lies beneath DataDirectory= $tmp/data-x, which the cage writes, so that it could replace it"

# Directories that others may change: refused; a sticky one (as /tmp) is fine.
mkdir -m 0777 "$tmp/open"
chmod 0777 "$tmp/open"
mkdir -m 0755 "$tmp/open/dir"
profile o s0 "$tmp/data-side" "$side_base" "BindReadOnly=$tmp/open/dir:/d" >"$tmp/o.cage"
run "$tmp/o.cage" 'true'
is "bind-writable: a source in a world-writable directory is refused" "$status" 1
like "bind-writable: the message names the directory and its mode" "$err" \
	"the directory $tmp/open that holds it can be changed by the cage \\(owner [0-9]+, group [0-9]+, mode 0777\\)"
chmod 1777 "$tmp/open"
run "$tmp/o.cage" 'test -d /d && echo started'
is "bind-writable control: the same in a sticky directory starts" "$out" "started"
if [ "$mode" = root ]; then
	mkdir -m 0755 "$tmp/owned" "$tmp/owned/dir"
	chown "$side_base" "$tmp/owned"
	profile ow s0 "$tmp/data-side" "$side_base" "BindReadOnly=$tmp/owned/dir:/d" >"$tmp/ow.cage"
	run "$tmp/ow.cage" 'true'
	is "bind-writable: root mode, a source in a directory of the cage's uids is refused" "$status" 1
	like "bind-writable: root mode, the message names the owner" "$err" \
		"the directory $tmp/owned that holds it can be changed by the cage \\(owner $side_base,"
fi
tap_plan_end
