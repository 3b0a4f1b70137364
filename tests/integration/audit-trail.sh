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

echo "# the signed trail: verified with the public key only"
s2=$d/state2
expect 0 "signed: a new log of four records, exported as a stream" -- "$append" "$s2" file 4 export="$d/trail"
expect 0 "signed: export-key writes the public key" -- "$clipctl" --state-dir "$s2" audit export-key
printf '%s\n' "$out" >"$d/key.pem"
like "signed: the key is an Ed25519 key in PEM" "$(openssl pkey -pubin -in "$d/key.pem" -noout -text 2>&1)" "ED25519 Public-Key"
# The verifier needs no state directory and no secret: it runs as nobody with none.
pk=("$clipctl" --state-dir "$d/none" audit verify --public-key "$d/key.pem")
expect 0 "signed: the stream verifies with the public key alone" -- "${pk[@]}" --trail "$d/trail"
is "signed: four records" "$out" "$d/trail: 4 records, valid (signed by $d/key.pem)"
# The signature is standard Ed25519: OpenSSL's own tool verifies the signed line.
sl=$(tail -1 "$d/trail")
printf '%s' "${sl% sig=*}" >"$d/signed"
printf '%s' "${sl##* sig=}" | perl -ne 'print pack("H*", $_)' >"$d/sig"
expect 0 "signed: openssl verifies the anchor's signature" -- openssl pkeyutl -verify -pubin -inkey "$d/key.pem" -rawin -in "$d/signed" -sigfile "$d/sig"
sed '2s/name=doc-1/name=doc-X/' "$d/trail" >"$d/t"
expect 1 "signed: a modified record is refused" -- "${pk[@]}" --trail "$d/t"
like "signed: a modified record: the message names the record after it" "$err" "record 3 does not follow record 2"
sed '4s/name=doc-3/name=doc-X/' "$d/trail" >"$d/t"
expect 1 "signed: a modified last record is refused" -- "${pk[@]}" --trail "$d/t"
like "signed: a modified last record is not the one signed" "$err" "record 4 is not the one signed"
sed '4d' "$d/trail" >"$d/t"
expect 1 "signed: a truncated trail is refused" -- "${pk[@]}" --trail "$d/t"
like "signed: a truncated trail: the signature covers more" "$err" "truncated: a signature covers 4 records, 3 are there"
head -n 4 "$d/trail" >"$d/t"
expect 1 "signed: a trail cut before its signature is refused" -- "${pk[@]}" --trail "$d/t"
like "signed: cut before its signature: unsigned records" "$err" "records 1 to 4 are not signed"
{ sed -n 1p "$d/trail"; sed -n 3p "$d/trail"; sed -n 2p "$d/trail"; sed -n '4,$p' "$d/trail"; } >"$d/t"
expect 1 "signed: a reordered trail is refused" -- "${pk[@]}" --trail "$d/t"
like "signed: reordered: the record out of place is named" "$err" "record 2 is not the record expected there"
expect 0 "signed: another machine's key" -- "$append" "$d/other" file 1
expect 0 "signed: another machine's public key" -- "$clipctl" --state-dir "$d/other" audit export-key
printf '%s\n' "$out" >"$d/other.pem"
expect 1 "signed: a trail checked with another machine's key is refused" -- "$clipctl" audit verify --public-key "$d/other.pem" --trail "$d/trail"
like "signed: another key: both keys are named" "$err" "is by key [0-9a-f]{16}, not by the key given \([0-9a-f]{16}\)"
# A signature made by another key, put where this machine's was (the key id kept).
o=$(sed -n 2p "$d/other/audit.log.head")
{ head -n 4 "$d/trail"; printf '%s sig=%s\n' "${sl% sig=*}" "${o##* sig=}"; } >"$d/t"
expect 1 "signed: a signature by another key is refused" -- "${pk[@]}" --trail "$d/t"
like "signed: another key's signature does not verify" "$err" "signature of record 4 does not verify with the key given"
expect 1 "signed: a public key that is not one is refused" -- "$clipctl" audit verify --public-key "$d/trail" --trail "$d/trail"
like "signed: not a key: the message says what a key is" "$err" "not an Ed25519 key in PEM"
echo "# an anchor of a log written before signing is signed at its next open"
sed -i '2d' "$s2/audit.log.head"
expect 0 "signed: an unsigned anchor still verifies with the MAC key" -- "$clipctl" --state-dir "$s2" audit verify
expect 0 "signed: the writer signs it at open" -- "$append" "$s2" file 0
is "signed: the anchor has its signed line again" "$(sed -n 2p "$s2/audit.log.head" | cut -c1-9)" "s1 count="
last=$(sed -n '2s/.*\(.\)$/\1/p' "$s2/audit.log.head")
[ "$last" = 0 ] && flip=1 || flip=0
sed -i "2s/.\$/$flip/" "$s2/audit.log.head"
expect 1 "signed: an edited signed line fails the MAC check too" -- "$clipctl" --state-dir "$s2" audit verify
like "signed: an edited signed line: the anchor does not verify" "$err" "anchor .* does not verify"

tap_plan_end
