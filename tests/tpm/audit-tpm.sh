#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The audit log bound to the TPM's NV counter (issue 14, finding 11),
# against the swtpm of tests/tpm/with-swtpm ($CLIP_TPM_TCTI): a log and
# its anchor rolled back together to an older consistent pair verify with
# the key file, and are refused with the tpm key provider, by the verifier
# and by the writer; a log deleted with its anchor is not silently started
# again; no TPM is an error, not a pass.
#
#   audit-tpm.sh CLIPCTL AUDIT_APPEND
set -u
clipctl=$1 append=$2
. "$(dirname "$0")/../integration/tap.sh"

if [ -z "${CLIP_TPM_TCTI:-}" ]; then
	echo "1..0 # SKIP not run under tests/tpm/with-swtpm (no \$CLIP_TPM_TCTI)"
	exit 0
fi

d=$(mktemp -d)
trap 'rm -rf "$d" "$tap_tmp"' EXIT
s=$d/state
c=("$clipctl" --state-dir "$s" --key-provider tpm)
index=0x013c11a0

# The key file's key sealed to the TPM: both providers hold the same key,
# so the log verifies with either, and only the TPM sees a rollback.
mkdir -p "$s"
chmod 700 "$s"
head -c 32 /dev/urandom >"$s/mac.key"
chmod 600 "$s/mac.key"
expect 0 "the key file's key sealed to the TPM" -- "$clipctl" --state-dir "$s" tpm seal-key --from-key-file
expect 0 "the writer appends three records with the tpm key provider" -- "$append" "$s" tpm 3
like "the anchor carries the counter's value" "$(cat "$s/audit.log.head")" "^v1 count=3 last=[0-9a-f]{64} tpm=[0-9]+ mac="
expect 0 "the bound log verifies" -- "${c[@]}" audit verify
is "the bound log verifies: plain valid" "$out" "audit.log: 3 records, valid"
is "the bound log verifies: no warning" "$err" ""

echo "# a rollback of the log with its anchor"
cp "$s/audit.log" "$d/log.3"
cp "$s/audit.log.head" "$d/head.3"
expect 0 "two more records" -- "$append" "$s" tpm 2
cp "$s/audit.log" "$d/log.5"
cp "$s/audit.log.head" "$d/head.5"
cp "$d/log.3" "$s/audit.log"
cp "$d/head.3" "$s/audit.log.head"
expect 1 "the rolled-back pair is refused by audit verify" -- "${c[@]}" audit verify
like "the rollback: the message" "$err" "the log audit.log and its anchor were rolled back: the anchor says TPM count [0-9]+, the TPM counter $index is at [0-9]+"
expect 1 "the writer refuses the rolled-back pair" -- "$append" "$s" tpm 1
like "the writer: the message" "$err" "rolled back"
expect 3 "with the key file, the rolled-back pair is valid with a warning only" -- "$clipctl" --state-dir "$s" audit verify
like "with the key file: the counter was not read, said without -v" "$err" "^clipctl: warning: audit log audit.log: bound to the TPM counter $index, which was not read"
cp "$d/log.5" "$s/audit.log"
cp "$d/head.5" "$s/audit.log.head"
expect 0 "the current pair put back verifies" -- "${c[@]}" audit verify
is "the current pair: five records" "$out" "audit.log: 5 records, valid"

echo "# a stale anchor under the current log"
cp "$d/head.3" "$s/audit.log.head"
expect 1 "an anchor rolled back alone is refused too" -- "${c[@]}" audit verify
like "an anchor rolled back alone: the message" "$err" "were rolled back"
cp "$d/head.5" "$s/audit.log.head"

echo "# a log deleted with its anchor"
mv "$s/audit.log" "$d/log.keep"
mv "$s/audit.log.head" "$d/head.keep"
expect 1 "the writer does not start a new log over a counter in use" -- "$append" "$s" tpm 1
like "deleted: the message" "$err" "not bound to the TPM counter $index, which is at [0-9]+: the log was rolled back to before its binding, deleted or replaced"
rm -f "$s/audit.log"
mv "$d/log.keep" "$s/audit.log"
mv "$d/head.keep" "$s/audit.log.head"
expect 0 "the log put back verifies" -- "${c[@]}" audit verify

echo "# no TPM"
expect 1 "no TPM: audit verify fails, with the tpm key provider" -- env CLIP_TPM_TCTI=swtpm:path=/nonexistent/s "${c[@]}" audit verify
like "no TPM: the message names the TPM" "$err" "TPM"
expect 1 "no TPM: the writer fails" -- env CLIP_TPM_TCTI=swtpm:path=/nonexistent/s "$append" "$s" tpm 1
expect 0 "the log is untouched by the failed writer" -- "${c[@]}" audit verify
is "still five records" "$out" "audit.log: 5 records, valid"

tap_plan_end
