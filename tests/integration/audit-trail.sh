#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The audit trail's doubtful states, as `clipctl audit verify` shows them
# without -v (issue 14, finding 11): a torn last record and a stale anchor
# put back under newer records are warned about on stderr and in the exit
# status (3), not printed as plain "valid". The log is written by
# audit-append as clipd writes it.
#
#   audit-trail.sh CLIPCTL AUDIT_APPEND
set -u
clipctl=$1 append=$2
. "$(dirname "$0")/tap.sh"

d=$(mktemp -d)
trap 'rm -rf "$d" "$tap_tmp"' EXIT
s=$d/state
c=("$clipctl" --state-dir "$s")

expect 0 "three records are appended" -- "$append" "$s" file 3
expect 0 "the log verifies" -- "${c[@]}" audit verify
is "the log verifies: plain valid" "$out" "audit.log: 3 records, valid"
is "the log verifies: nothing on stderr" "$err" ""

echo "# a stale anchor put back under newer records"
cp "$s/audit.log.head" "$d/head.3"
expect 0 "two more records" -- "$append" "$s" file 2
cp "$d/head.3" "$s/audit.log.head"
expect 3 "a stale anchor: exit 3 without -v" -- "${c[@]}" audit verify
like "a stale anchor: the warning on stderr" "$err" "^clipctl: warning: audit log audit.log: 2 verified records after the anchor, which says 3"
is "a stale anchor: valid, with warnings" "$out" "audit.log: 5 records, valid, with the warnings above"
expect 3 "a stale anchor: audit show exits 3 too" -- "${c[@]}" audit show
like "a stale anchor: audit show warns" "$err" "warning: .*after the anchor"
expect 0 "the writer anchors them again" -- "$append" "$s" file 0
expect 0 "anchored again, the log verifies without warning" -- "${c[@]}" audit verify

echo "# a torn last record"
printf 'v1 seq=6 time=1.0 event=req' >>"$s/audit.log"
expect 3 "a torn tail: exit 3 without -v" -- "${c[@]}" audit verify
like "a torn tail: the warning on stderr" "$err" "^clipctl: warning: audit log audit.log: a torn last record after record 5"
is "a torn tail: valid, with warnings" "$out" "audit.log: 5 records, valid, with the warnings above"
expect 0 "the writer cuts the torn record" -- "$append" "$s" file 1
expect 0 "the torn record cut, the log verifies without warning" -- "${c[@]}" audit verify
is "six records" "$out" "audit.log: 6 records, valid"

echo "# what is not a warning stays an error"
head -c -2 "$s/audit.log.head" >"$d/h" && cp "$d/h" "$s/audit.log.head"
expect 1 "an edited anchor: exit 1" -- "${c[@]}" audit verify
like "an edited anchor: the message" "$err" "does not verify"

tap_plan_end
