#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clipctl tpm, driven as an administrator would, against the swtpm that
# tests/tpm/with-swtpm started ($CLIP_TPM_TCTI): status, seal-key, measure,
# replay, an edited event log, measured cage starts, no TPM, and the
# usage errors.
set -u
clipctl=$1
. "$(dirname "$0")/../integration/tap.sh"

if [ -z "${CLIP_TPM_TCTI:-}" ]; then
	echo "1..0 # SKIP not run under tests/tpm/with-swtpm (no \$CLIP_TPM_TCTI)"
	exit 0
fi

d=$(mktemp -d)
state=$d/state
c=("$clipctl" --state-dir "$state")

expect 0 "status with a TPM" -- "${c[@]}" tpm status
like "status names the TPM" "$out" "tpm: .*TPM 2\.0 revision"
like "status names the TCTI" "$out" "tcti: $CLIP_TPM_TCTI"
like "status: no sealed key yet" "$out" "sealed key: no key: state directory .* does not exist"
like "status: the log matches" "$out" "event log: 0 events, matches the TPM"

expect 0 "seal-key seals a new key" -- "${c[@]}" tpm seal-key
like "to PCR 7, in the state directory" "$out" "sealed the context's key to PCR 7 in $state/mac.key.tpm"
is "the blob is 0600" "$(stat -c %a "$state/mac.key.tpm")" "600"
expect 0 "status again" -- "${c[@]}" tpm status
like "the key unseals" "$out" "sealed to PCR 7: unseals"
like "PCR 7 is shown" "$out" "PCR 7: [0-9a-f]{64}"
expect 0 "seal-key --pcrs 7,16 reseals the key" -- "${c[@]}" tpm seal-key --pcrs 7,16
like "to PCRs 7 and 16" "$out" "to PCR 7,16"
expect 0 "status with the same PCRs" -- "${c[@]}" tpm status --pcrs 7,16
like "sealed to 7 and 16" "$out" "sealed to PCR 7,16: unseals"

printf '[cage]\nname=alpha\nlevel=s1\n' >"$d/alpha.profile"
expect 0 "measure a profile" -- "${c[@]}" tpm measure "$d/alpha.profile" cage:alpha
like "measure says what" "$out" "measured .* as 'cage:alpha'"
expect 0 "measure with the default name" -- "${c[@]}" tpm measure "$d/alpha.profile"
expect 0 "replay matches" -- "${c[@]}" tpm replay
like "replay lists the events" "$out" "23 $(sha256sum <"$d/alpha.profile" | cut -c1-64) cage:alpha"
like "replay counts them" "$out" "2 events, matches the TPM"

cp "$state/tpm-events.log" "$d/saved.log"
sed -i 's/cage:alpha/cage:alphb/' "$state/tpm-events.log"
expect 1 "an edited event log does not match" -- "${c[@]}" tpm replay
like "the PCR and both values are named" "$err" "PCR 23 does not match the event log: the log replays to [0-9a-f]{64}, the TPM holds [0-9a-f]{64}"
head -n 2 "$d/saved.log" >"$state/tpm-events.log"
expect 1 "a truncated event log does not match" -- "${c[@]}" tpm replay
cp "$d/saved.log" "$state/tpm-events.log"
expect 0 "the saved log matches again" -- "${c[@]}" tpm replay

# A cage whose profile says Measure=yes is measured when it starts.
if [ "$(id -u)" = 0 ] || unshare -Ur true 2>/dev/null; then
	printf '[Cage]\nName=measured\nLevel=s1\n[Security]\nMeasure=yes\n' >"$d/measured.cage"
	printf '[Cage]\nName=plain\n' >"$d/plain.cage"
	expect 0 "cage run, Measure=yes" -- "${c[@]}" cage run --profile "$d/measured.cage" -- true
	expect 0 "cage run, Measure=yes, again" -- "${c[@]}" cage run --profile "$d/measured.cage" -- true
	expect 0 "replay matches after two measured cage starts" -- "${c[@]}" tpm replay
	like "the starts are in the log" "$out" "23 [0-9a-f]{64} cage:measured"
	like "two more events" "$out" "4 events, matches the TPM"
	cp "$state/tpm-events.log" "$d/saved.log"
	expect 0 "cage run, no Measure" -- "${c[@]}" cage run --profile "$d/plain.cage" -- true
	is "a cage without Measure adds nothing to the log" "$(cat "$state/tpm-events.log")" "$(cat "$d/saved.log")"
	expect 0 "and the PCR still matches" -- "${c[@]}" tpm replay
	last=$(tail -n 1 "$state/tpm-events.log")
	[ "${last:3:1}" = 0 ] && byte=1 || byte=0
	sed -i "\$ s/^23 ./23 $byte/" "$state/tpm-events.log"
	is "one byte of the last digest changed" "$(cmp -l "$state/tpm-events.log" "$d/saved.log" | wc -l)" 1
	expect 1 "a log with one byte of a cage's digest edited does not match" -- "${c[@]}" tpm replay
	like "the PCR is named" "$err" "PCR 23 does not match the event log"
	cp "$d/saved.log" "$state/tpm-events.log"
	expect 1 "Measure=yes with no TPM: the cage is not started" -- env CLIP_TPM_TCTI=swtpm:path=/nonexistent/s "${c[@]}" cage run --profile "$d/measured.cage" -- touch "$d/ran"
	like "and says why" "$err" "cage measured not started: its profile says Measure=yes and its start cannot be measured: no TPM at 'swtpm:path=/nonexistent/s'"
	is "the command did not run" "$(test -e "$d/ran" && echo ran || echo no)" no
	expect 0 "the log still matches" -- "${c[@]}" tpm replay
else
	skip "measured cages" "this host refuses user namespaces to uid $(id -u)"
fi

# Without tpm2-tss (libclip loads it when the TPM is first used): the TPM
# commands say what is missing, the rest of libclip works. The library is
# hidden under /dev/null in a mount namespace of its own.
esys=$(ldconfig -p | awk '/libtss2-esys\.so\.0 /{ print $NF; exit }')
# Not root: in a user namespace of its own, as its uid 0 (the mount needs it).
[ "$(id -u)" = 0 ] && ns=(unshare -m) || ns=(unshare -Urm)
if [ -n "$esys" ] && "${ns[@]}" true 2>/dev/null; then
	hide=("${ns[@]}" sh -c 'mount --bind /dev/null "$(readlink -f "$0")" && exec "$@"' "$esys")
	expect 1 "without tpm2-tss, status fails" -- "${hide[@]}" "${c[@]}" tpm status
	like "and names the library" "$err" "the TPM libraries \(tpm2-tss\) cannot be loaded: .*libtss2-esys"
	expect 1 "without tpm2-tss, seal-key fails" -- "${hide[@]}" "${c[@]}" tpm seal-key
	expect 0 "without tpm2-tss, levels still work" -- "${hide[@]}" "${c[@]}" level format s1:c1
	expect 0 "without tpm2-tss, an exec check still works" -- "${hide[@]}" "${c[@]}" exec-check /bin/true
else
	skip "without tpm2-tss" "no private mount namespace (${ns[*]} refused) or no tpm2-tss in ldconfig's cache"
fi

expect 1 "no TPM: status fails" -- "${c[@]}" tpm status --tcti swtpm:path=/nonexistent/s
like "and says so" "$err" "no TPM at 'swtpm:path=/nonexistent/s'"
expect 1 "no TPM: seal-key fails" -- "${c[@]}" tpm seal-key --tcti device:/nonexistent/tpmrm0
like "and says so" "$err" "no TPM: /nonexistent/tpmrm0 does not exist"
expect 1 "measuring a missing file" -- "${c[@]}" tpm measure "$d/nonexistent"
expect 2 "an event name with a tab" -- "${c[@]}" tpm measure "$d/alpha.profile" "$(printf 'a\tb')"
expect 2 "an unknown verb" -- "${c[@]}" tpm frobnicate
expect 2 "a bad PCR list" -- "${c[@]}" tpm seal-key --pcrs 7,x
expect 2 "a PCR above 23" -- "${c[@]}" tpm seal-key --pcrs 24
expect 2 "a D-RTM PCR to measure into" -- "${c[@]}" tpm replay --measure-pcr 18
expect 2 "--new with --from-key-file" -- "${c[@]}" tpm seal-key --new --from-key-file
expect 2 "--new outside seal-key" -- "${c[@]}" tpm status --new
expect 2 "replay takes no argument" -- "${c[@]}" tpm replay extra

rm -rf "$d"
tap_plan_end
