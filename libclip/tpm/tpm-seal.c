/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sealing a secret to PCR values, and the blob that holds the result.
 *
 * The storage primary key is an ECC P-256 key created from the TCG
 * template each time (the same owner seed gives the same key, so nothing
 * is persisted in the TPM). The secret becomes a sealed data object whose
 * only authorisation is a PolicyPCR policy; the secret travels encrypted
 * between library and TPM (sessions salted with the primary key). Blob
 * layout, all integers big-endian as the TPM's own structures:
 *
 *   "CLIPSEAL" | u32 version (1) | u32 PCR set (bit n = PCR n, SHA-256)
 *   | 32-byte value of each PCR of the set at sealing, ascending
 *   | TPM2B_PUBLIC | TPM2B_PRIVATE          (Tss2_MU marshalling)
 *
 * The values are not trusted: the parser checks that they and the set give
 * exactly the policy digest of the public area, and only uses them to name
 * the PCRs that changed when unsealing is refused.
 */
#include <errno.h>
#include <string.h>

#include "base/crypto.h"
#include "base/log.h"
#include "tpm-internal.h"
#include "base/util.h"

#define BLOB_MAGIC "CLIPSEAL"
#define BLOB_MAGIC_SIZE 8
#define BLOB_VERSION 1

/* What a sealed data object of libclip looks like: policy only, no password. */
#define SEALED_ATTRIBUTES (TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT)

/* TPM2_PolicyPCR from an empty policy: H(0^32 || TPM_CC_PolicyPCR || pcrs || H(values)). */
static int
policy_pcr_digest(uint32_t pcrs, const uint8_t values[TPM_PCR_COUNT][TPM_SHA256_SIZE],
		  uint8_t pcr_digest[TPM_SHA256_SIZE], uint8_t policy[TPM_SHA256_SIZE])
{
	uint8_t buf[TPM_PCR_COUNT * TPM_SHA256_SIZE + sizeof(TPML_PCR_SELECTION) + 64];
	TPML_PCR_SELECTION sel = tpm_pcr_selection(pcrs);
	size_t n = 0;
	int r;

	for (unsigned pcr = 0; pcr < TPM_PCR_COUNT; pcr++)
		if (pcrs & (UINT32_C(1) << pcr)) {
			memcpy(buf + n, values[pcr], TPM_SHA256_SIZE);
			n += TPM_SHA256_SIZE;
		}
	r = crypto_sha256(buf, n, pcr_digest);
	if (r < 0)
		return r;
	memset(buf, 0, TPM_SHA256_SIZE);
	n = TPM_SHA256_SIZE;
	if (sym_Tss2_MU_UINT32_Marshal(TPM2_CC_PolicyPCR, buf, sizeof(buf), &n) !=
		    TSS2_RC_SUCCESS ||
	    sym_Tss2_MU_TPML_PCR_SELECTION_Marshal(&sel, buf, sizeof(buf), &n) != TSS2_RC_SUCCESS)
		return -EIO;
	memcpy(buf + n, pcr_digest, TPM_SHA256_SIZE);
	return crypto_sha256(buf, n + TPM_SHA256_SIZE, policy);
}

static int
create_primary(struct tpm *t, ESYS_TR *ret, struct clip_error **reterr)
{
	/* The ECC storage root key template of the TCG provisioning guidance. */
	const TPM2B_PUBLIC tmpl = {
		.publicArea = {
			.type = TPM2_ALG_ECC,
			.nameAlg = TPM2_ALG_SHA256,
			.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
					    TPMA_OBJECT_SENSITIVEDATAORIGIN |
					    TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA |
					    TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT,
			.parameters.eccDetail = {
				.symmetric = {
					.algorithm = TPM2_ALG_AES,
					.keyBits.aes = 128,
					.mode.aes = TPM2_ALG_CFB,
				},
				.scheme.scheme = TPM2_ALG_NULL,
				.curveID = TPM2_ECC_NIST_P256,
				.kdf.scheme = TPM2_ALG_NULL,
			},
			.unique.ecc = { .x.size = 32, .y.size = 32 },
		},
	};
	const TPM2B_SENSITIVE_CREATE sensitive = { 0 };
	const TPM2B_DATA outside = { 0 };
	const TPML_PCR_SELECTION creation = { 0 };
	TSS2_RC rc, base;

	rc = sym_Esys_CreatePrimary(t->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE,
				    ESYS_TR_NONE, &sensitive, &tmpl, &outside, &creation, ret, NULL,
				    NULL, NULL, NULL);
	if (rc == TSS2_RC_SUCCESS)
		return 0;
	*ret = ESYS_TR_NONE;
	base = tpm_rc_base(rc);
	if (base == TPM2_RC_BAD_AUTH || base == TPM2_RC_AUTH_FAIL || base == TPM2_RC_LOCKOUT)
		return tpm_rc_error(reterr, -EACCES, rc,
				    "cannot create the storage primary key: the owner hierarchy "
				    "has a password (libclip needs it empty)");
	if (base == TPM2_RC_HIERARCHY)
		return tpm_rc_error(reterr, -EACCES, rc,
				    "cannot create the storage primary key: the owner hierarchy "
				    "is disabled");
	return tpm_rc_error(reterr, -EIO, rc, "cannot create the storage primary key");
}

/* A session; @salt_key salts it and lets @attrs ask for parameter encryption. */
static int
start_session(struct tpm *t, ESYS_TR salt_key, TPM2_SE type, TPMA_SESSION attrs, ESYS_TR *ret,
	      struct clip_error **reterr)
{
	const TPMT_SYM_DEF aes = {
		.algorithm = TPM2_ALG_AES,
		.keyBits.aes = 128,
		.mode.aes = TPM2_ALG_CFB,
	};
	const TPMT_SYM_DEF none = { .algorithm = TPM2_ALG_NULL };
	TSS2_RC rc;

	rc = sym_Esys_StartAuthSession(t->esys, salt_key, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
				       ESYS_TR_NONE, NULL, type,
				       type == TPM2_SE_TRIAL ? &none : &aes, TPM2_ALG_SHA256, ret);
	if (rc != TSS2_RC_SUCCESS) {
		*ret = ESYS_TR_NONE;
		return tpm_rc_error(reterr, -EIO, rc, "cannot start a TPM session");
	}
	if (!attrs)
		return 0;
	rc = sym_Esys_TRSess_SetAttributes(t->esys, *ret, attrs | TPMA_SESSION_CONTINUESESSION,
					   0xff);
	if (rc != TSS2_RC_SUCCESS)
		return tpm_rc_error(reterr, -EIO, rc, "cannot set the session's attributes");
	return 0;
}

/* The policy digest as the TPM computes it, in a trial session. */
static int
trial_policy(struct tpm *t, uint32_t pcrs, const uint8_t pcr_digest[TPM_SHA256_SIZE],
	     uint8_t policy[TPM_SHA256_SIZE], struct clip_error **reterr)
{
	_cleanup_tpm_scope_ struct tpm_scope s = TPM_SCOPE(t);
	TPML_PCR_SELECTION sel = tpm_pcr_selection(pcrs);
	TPM2B_DIGEST digest = { .size = TPM_SHA256_SIZE }, *out = NULL;
	TSS2_RC rc;
	int r;

	r = start_session(t, ESYS_TR_NONE, TPM2_SE_TRIAL, 0, &s.handles[0], reterr);
	if (r < 0)
		return r;
	memcpy(digest.buffer, pcr_digest, TPM_SHA256_SIZE);
	rc = sym_Esys_PolicyPCR(t->esys, s.handles[0], ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
				&digest, &sel);
	if (rc != TSS2_RC_SUCCESS)
		return tpm_rc_error(reterr, -EIO, rc, "cannot compute the PCR policy");
	rc = sym_Esys_PolicyGetDigest(t->esys, s.handles[0], ESYS_TR_NONE, ESYS_TR_NONE,
				      ESYS_TR_NONE, &out);
	if (rc != TSS2_RC_SUCCESS)
		return tpm_rc_error(reterr, -EIO, rc, "cannot read the PCR policy");
	r = out->size == TPM_SHA256_SIZE ? 0 : -EIO;
	if (r == 0)
		memcpy(policy, out->buffer, TPM_SHA256_SIZE);
	sym_Esys_Free(out);
	return r < 0 ? error_set(reterr, r, "the TPM gave a policy digest of another size") : 0;
}

int
tpm_blob_marshal(const struct tpm_blob *b, uint8_t out[TPM_BLOB_MAX], size_t *ret_size)
{
	size_t n = BLOB_MAGIC_SIZE;

	/* Loaded already: a blob is made from a sealed object, through an open TPM. */
	if (tss2_dl_load(NULL) < 0)
		return -EOPNOTSUPP;
	memcpy(out, BLOB_MAGIC, BLOB_MAGIC_SIZE);
	if (sym_Tss2_MU_UINT32_Marshal(BLOB_VERSION, out, TPM_BLOB_MAX, &n) != TSS2_RC_SUCCESS ||
	    sym_Tss2_MU_UINT32_Marshal(b->pcrs, out, TPM_BLOB_MAX, &n) != TSS2_RC_SUCCESS)
		return -EIO;
	for (unsigned pcr = 0; pcr < TPM_PCR_COUNT; pcr++)
		if (b->pcrs & (UINT32_C(1) << pcr)) {
			memcpy(out + n, b->values[pcr], TPM_SHA256_SIZE);
			n += TPM_SHA256_SIZE;
		}
	if (sym_Tss2_MU_TPM2B_PUBLIC_Marshal(&b->public, out, TPM_BLOB_MAX, &n) !=
		    TSS2_RC_SUCCESS ||
	    sym_Tss2_MU_TPM2B_PRIVATE_Marshal(&b->private, out, TPM_BLOB_MAX, &n) !=
		    TSS2_RC_SUCCESS)
		return -EIO;
	*ret_size = n;
	return 0;
}

int
tpm_blob_parse(const uint8_t *untrusted, size_t size, struct tpm_blob *b,
	       struct clip_error **reterr)
{
	uint8_t pcr_digest[TPM_SHA256_SIZE], policy[TPM_SHA256_SIZE];
	const TPMT_PUBLIC *pub = &b->public.publicArea;
	size_t n = BLOB_MAGIC_SIZE, start;
	uint32_t version;
	int r;

	memset(b, 0, sizeof(*b));
	r = tss2_dl_load(reterr);
	if (r < 0)
		return r;
	if (size > TPM_BLOB_MAX)
		return error_set(reterr, -EBADMSG, "too large (%zu bytes)", size);
	if (size < BLOB_MAGIC_SIZE || memcmp(untrusted, BLOB_MAGIC, BLOB_MAGIC_SIZE) != 0)
		return error_set(reterr, -EBADMSG, "not a sealed key of libclip");
	if (sym_Tss2_MU_UINT32_Unmarshal(untrusted, size, &n, &version) != TSS2_RC_SUCCESS ||
	    sym_Tss2_MU_UINT32_Unmarshal(untrusted, size, &n, &b->pcrs) != TSS2_RC_SUCCESS)
		return error_set(reterr, -EBADMSG, "truncated header");
	if (version != BLOB_VERSION)
		return error_set(reterr, -EBADMSG, "unsupported version %u", (unsigned)version);
	if (b->pcrs == 0 || (b->pcrs & ~TPM_PCR_MASK))
		return error_set(reterr, -EBADMSG, "invalid PCR set 0x%08x", (unsigned)b->pcrs);
	for (unsigned pcr = 0; pcr < TPM_PCR_COUNT; pcr++) {
		if (!(b->pcrs & (UINT32_C(1) << pcr)))
			continue;
		if (size - n < TPM_SHA256_SIZE)
			return error_set(reterr, -EBADMSG, "truncated PCR values");
		memcpy(b->values[pcr], untrusted + n, TPM_SHA256_SIZE);
		n += TPM_SHA256_SIZE;
	}
	start = n;
	/* Tss2_MU takes the public area's own length, not its size field: both must agree. */
	if (sym_Tss2_MU_TPM2B_PUBLIC_Unmarshal(untrusted, size, &n, &b->public) !=
		    TSS2_RC_SUCCESS ||
	    n - start != sizeof(uint16_t) + b->public.size)
		return error_set(reterr, -EBADMSG, "malformed public area");
	if (sym_Tss2_MU_TPM2B_PRIVATE_Unmarshal(untrusted, size, &n, &b->private) !=
	    TSS2_RC_SUCCESS)
		return error_set(reterr, -EBADMSG, "malformed private area");
	if (n != size)
		return error_set(reterr, -EBADMSG, "%zu bytes after the private area", size - n);
	if (pub->type != TPM2_ALG_KEYEDHASH || pub->nameAlg != TPM2_ALG_SHA256 ||
	    pub->objectAttributes != SEALED_ATTRIBUTES ||
	    pub->parameters.keyedHashDetail.scheme.scheme != TPM2_ALG_NULL)
		return error_set(reterr, -EBADMSG, "not a sealed data object of libclip");
	r = policy_pcr_digest(b->pcrs, b->values, pcr_digest, policy);
	if (r < 0)
		return error_set(reterr, r, "cannot compute the PCR policy");
	if (pub->authPolicy.size != TPM_SHA256_SIZE ||
	    memcmp(pub->authPolicy.buffer, policy, TPM_SHA256_SIZE) != 0)
		return error_set(reterr, -EBADMSG,
				 "the policy does not match the PCR set and values");
	return 0;
}

int
tpm_seal(struct tpm *t, uint32_t pcrs, const uint8_t secret[CLIP_KEY_SIZE],
	 uint8_t out[TPM_BLOB_MAX], size_t *ret_size, struct clip_error **reterr)
{
	_cleanup_tpm_scope_ struct tpm_scope s = TPM_SCOPE(t);
	uint8_t pcr_digest[TPM_SHA256_SIZE], policy[TPM_SHA256_SIZE], trial[TPM_SHA256_SIZE];
	TPM2B_PUBLIC tmpl = {
		.publicArea = {
			.type = TPM2_ALG_KEYEDHASH,
			.nameAlg = TPM2_ALG_SHA256,
			.objectAttributes = SEALED_ATTRIBUTES,
			.authPolicy.size = TPM_SHA256_SIZE,
			.parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL,
		},
	};
	TPM2B_SENSITIVE_CREATE sensitive = { .sensitive.data.size = CLIP_KEY_SIZE };
	const TPM2B_DATA outside = { 0 };
	const TPML_PCR_SELECTION creation = { 0 };
	TPM2B_PRIVATE *private = NULL;
	TPM2B_PUBLIC *public = NULL;
	struct tpm_blob b = { .pcrs = pcrs };
	TSS2_RC rc;
	int r;

	r = tpm_pcr_read(t, pcrs, b.values, reterr);
	if (r < 0)
		return r;
	r = policy_pcr_digest(pcrs, b.values, pcr_digest, policy);
	if (r < 0)
		return error_set(reterr, r, "cannot compute the PCR policy");
	r = trial_policy(t, pcrs, pcr_digest, trial, reterr);
	if (r < 0)
		return r;
	/* Two computations of one policy: they must agree, or no blob would ever unseal. */
	if (memcmp(trial, policy, TPM_SHA256_SIZE) != 0)
		return error_set(reterr, -EIO, "the TPM computes another PCR policy than libclip");
	memcpy(tmpl.publicArea.authPolicy.buffer, policy, TPM_SHA256_SIZE);

	r = create_primary(t, &s.handles[0], reterr);
	if (r < 0)
		return r;
	/* The secret goes to the TPM encrypted (first parameter, salted session). */
	r = start_session(t, s.handles[0], TPM2_SE_HMAC, TPMA_SESSION_DECRYPT, &s.handles[1],
			  reterr);
	if (r < 0)
		return r;
	memcpy(sensitive.sensitive.data.buffer, secret, CLIP_KEY_SIZE);
	rc = sym_Esys_Create(t->esys, s.handles[0], s.handles[1], ESYS_TR_NONE, ESYS_TR_NONE,
			     &sensitive, &tmpl, &outside, &creation, &private, &public, NULL, NULL,
			     NULL);
	secure_wipe(&sensitive, sizeof(sensitive));
	if (rc != TSS2_RC_SUCCESS)
		return tpm_rc_error(reterr, -EIO, rc, "cannot seal the key");
	b.public = *public;
	b.private = *private;
	sym_Esys_Free(public);
	sym_Esys_Free(private);
	r = tpm_blob_marshal(&b, out, ret_size);
	if (r < 0)
		return error_set(reterr, r, "cannot marshal the sealed key");
	return 0;
}

/* "PCR 7, PCR 11 changed", from the values the blob remembers; "" when none did. */
static void
changed_pcrs(struct tpm *t, const struct tpm_blob *b, char *out, size_t size)
{
	uint8_t now[TPM_PCR_COUNT][TPM_SHA256_SIZE];
	size_t n = 0;

	out[0] = '\0';
	if (tpm_pcr_read(t, b->pcrs, now, NULL) < 0)
		return;
	for (unsigned pcr = 0; pcr < TPM_PCR_COUNT && n < size; pcr++)
		if ((b->pcrs & (UINT32_C(1) << pcr)) &&
		    memcmp(now[pcr], b->values[pcr], TPM_SHA256_SIZE) != 0)
			n += (size_t)snprintf(out + n, size - n, "%sPCR %u", n ? ", " : "", pcr);
	if (n && n < size)
		snprintf(out + n, size - n, " changed since the key was sealed");
}

/* Whether a failed load says the blob is not for this TPM (or damaged), not that the TPM failed. */
static bool
rc_refuses_object(TSS2_RC rc)
{
	if ((rc & TSS2_RC_LAYER_MASK) == TSS2_ESAPI_RC_LAYER)
		return (rc & ~TSS2_RC_LAYER_MASK) == TSS2_BASE_RC_BAD_VALUE;
	return !(rc & TSS2_RC_LAYER_MASK) && (rc & TPM2_RC_FMT1);
}

int
tpm_unseal(struct tpm *t, const struct tpm_blob *b, uint8_t secret[CLIP_KEY_SIZE],
	   struct clip_error **reterr)
{
	_cleanup_tpm_scope_ struct tpm_scope s = TPM_SCOPE(t);
	TPML_PCR_SELECTION sel = tpm_pcr_selection(b->pcrs);
	const TPM2B_DIGEST current = { 0 };
	TPM2B_SENSITIVE_DATA *out = NULL;
	char changed[128];
	TSS2_RC rc;
	int r;

	r = create_primary(t, &s.handles[0], reterr);
	if (r < 0)
		return r;
	rc = sym_Esys_Load(t->esys, s.handles[0], ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
			   &b->private, &b->public, &s.handles[1]);
	if (rc != TSS2_RC_SUCCESS) {
		s.handles[1] = ESYS_TR_NONE;
		if (rc_refuses_object(rc))
			return tpm_rc_error(reterr, -EBADMSG, rc,
					    "the TPM refuses the sealed key: it was sealed by "
					    "another TPM, or is damaged");
		return tpm_rc_error(reterr, -EIO, rc, "cannot load the sealed key");
	}
	/* The key comes back encrypted (first response parameter, salted session). */
	r = start_session(t, s.handles[0], TPM2_SE_POLICY, TPMA_SESSION_ENCRYPT, &s.handles[2],
			  reterr);
	if (r < 0)
		return r;
	/* An empty digest: the TPM takes the PCRs' current values. */
	rc = sym_Esys_PolicyPCR(t->esys, s.handles[2], ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
				&current, &sel);
	if (rc == TSS2_RC_SUCCESS)
		rc = sym_Esys_Unseal(t->esys, s.handles[1], s.handles[2], ESYS_TR_NONE,
				     ESYS_TR_NONE, &out);
	if (rc != TSS2_RC_SUCCESS) {
		TSS2_RC base = tpm_rc_base(rc);

		if (base != TPM2_RC_POLICY_FAIL && base != TPM2_RC_PCR_CHANGED)
			return tpm_rc_error(reterr, -EIO, rc, "cannot unseal the key");
		changed_pcrs(t, b, changed, sizeof(changed));
		return tpm_rc_error(reterr, -EACCES, rc,
				    "cannot unseal the key: %s (the PCR policy is not met)",
				    changed[0] ? changed
					       : "the PCRs differ from the sealed values");
	}
	r = out->size == CLIP_KEY_SIZE ? 0 : -EBADMSG;
	if (r == 0)
		memcpy(secret, out->buffer, CLIP_KEY_SIZE);
	secure_wipe(out, sizeof(*out));
	sym_Esys_Free(out);
	if (r < 0)
		return error_set(reterr, r, "the sealed secret is not a %d-byte key",
				 CLIP_KEY_SIZE);
	return 0;
}
