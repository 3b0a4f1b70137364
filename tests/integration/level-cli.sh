#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clipctl level: the exact output forms scripts rely on, and the refusals.
set -u
clipctl=$1
. "$(dirname "$0")/tap.sh"

expect 0 "dominates" -- "$clipctl" level check s2:c0.c3 s1:c1
is "A dominates B is written out" "$out" "s2:c0.c3 dominates s1:c1"
expect 0 "dominated" -- "$clipctl" level check s0 s3:c0,c1,c2
is "B dominates A puts the dominating level first" "$out" "s3:c0.c2 dominates s0"
expect 0 "equal" -- "$clipctl" level check s2:c0,c1 s2:c0.c1
is "equal levels in canonical form" "$out" "s2:c0.c1 equal s2:c0.c1"
expect 0 "incomparable" -- "$clipctl" level check s2:c1 s2:c2
is "incomparable" "$out" "s2:c1 incomparable s2:c2"
expect 0 "format" -- "$clipctl" level format s5:c1,c2,c3,c9
is "canonical form" "$out" "s5:c1.c3,c9"

expect 2 "a bad level exits 2" -- "$clipctl" level check s2:x3 s1
like "the parser's message names the offset" "$err" "offset 3"
like "a caret points at the offending character" "$err" $'\n     \\^'
expect 2 "s16 is out of bounds" -- "$clipctl" level check s16 s1
expect 2 "c1024 is out of bounds" -- "$clipctl" level check s1 s1:c1024
expect 2 "a control character is refused" -- "$clipctl" level check $'s1\x01' s1
expect 2 "missing argument" -- "$clipctl" level check s1
expect 2 "unknown command" -- "$clipctl" level frobnicate s1

names="$tap_tmp/setrans.conf"
cat >"$names" <<'NAMES'
# Example translations
s0=public
s2:c1=secret-hr
  s3:c0.c1023 = top
NAMES
expect 0 "names: name to level" -- "$clipctl" --names "$names" level check secret-hr public
is "names both ways" "$out" "secret-hr dominates public"
expect 0 "names: a level without a name stays canonical" -- "$clipctl" --names "$names" level check s2:c1,c2 secret-hr
is "unnamed level" "$out" "s2:c1.c2 dominates secret-hr"
expect 0 "names: level to name" -- "$clipctl" --names "$names" level format s3:c0.c1023
is "level to name" "$out" "top"
printf 's0=dup\ns1=dup\n' >"$tap_tmp/dup.conf"
expect 2 "a duplicate name is refused" -- "$clipctl" --names "$tap_tmp/dup.conf" level format s0
like "the line is named" "$err" "line 2"

tap_plan_end
