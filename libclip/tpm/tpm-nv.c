/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A monotonic counter in the TPM's NV memory (TPM2_NT_COUNTER): it only
 * goes up, and no file put back on disk brings it down. The audit log
 * binds its anchor to it (transfer/audit.c, doc/tpm.md, "The audit
 * counter"), so that a log and its anchor rolled back together to an
 * older consistent pair are seen.
 *
 * The index is defined in the owner hierarchy, read and incremented with
 * the owner's authorization (empty, as for the sealed key's primary), and
 * no authorization failure on it counts towards the dictionary-attack
 * lockout (TPMA_NV_NO_DA). Each call opens its own connection.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/error.h"
#include "base/macro.h"
#include "tpm-internal.h"
#include "tpm.h"
#include "tss2-dl.h"

static void
nv_close(struct tpm *t, ESYS_TR *h)
{
	if (*h != ESYS_TR_NONE)
		(void)sym_Esys_TR_Close(t->esys, h);
}

/* The ESYS handle of @index: -ENOENT when the TPM has no such index. */
static int
nv_handle(struct tpm *t, uint32_t index, ESYS_TR *ret, struct clip_error **reterr)
{
	TSS2_RC rc = sym_Esys_TR_FromTPMPublic(t->esys, index, ESYS_TR_NONE, ESYS_TR_NONE,
					       ESYS_TR_NONE, ret);

	if (rc == TSS2_RC_SUCCESS)
		return 0;
	*ret = ESYS_TR_NONE;
	if (tpm_rc_base(rc) == TPM2_RC_HANDLE)
		return -ENOENT;
	return tpm_rc_error(reterr, -EIO, rc, "cannot look up the TPM's NV index 0x%08x", index);
}

/*
 * A connection to the TPM and the handle of the counter @index. With
 * @must_exist, a missing index is an error that says so; without, a bare
 * -ENOENT (the audit log reads a counter that may not be defined yet).
 */
static int
counter_open(struct clip_ctx *ctx, struct tpm *t, uint32_t index, bool must_exist, ESYS_TR *h,
	     struct clip_error **reterr)
{
	int r = tpm_open(ctx, t, reterr);

	if (r < 0)
		return r;
	r = nv_handle(t, index, h, reterr);
	if (r == -ENOENT && must_exist)
		return error_set(reterr, -ENOENT, "the TPM has no counter 0x%08x", index);
	return r;
}

static int
nv_read(struct tpm *t, ESYS_TR h, uint32_t index, uint64_t *ret, struct clip_error **reterr)
{
	TPM2B_MAX_NV_BUFFER *data = NULL;
	uint64_t v = 0;
	TSS2_RC rc;

	rc = sym_Esys_NV_Read(t->esys, ESYS_TR_RH_OWNER, h, ESYS_TR_PASSWORD, ESYS_TR_NONE,
			      ESYS_TR_NONE, 8, 0, &data);
	if (rc != TSS2_RC_SUCCESS && tpm_rc_base(rc) == TPM2_RC_NV_UNINITIALIZED)
		return -ENODATA;
	if (rc != TSS2_RC_SUCCESS)
		return tpm_rc_error(reterr, -EIO, rc, "cannot read the TPM counter 0x%08x", index);
	if (data->size != 8) {
		sym_Esys_Free(data);
		return error_set(reterr, -EIO, "the TPM's NV index 0x%08x is not a counter", index);
	}
	/* TPM values are big-endian. */
	for (unsigned i = 0; i < 8; i++)
		v = v << 8 | data->buffer[i];
	sym_Esys_Free(data);
	*ret = v;
	return 0;
}

int
tpm_counter_read(struct clip_ctx *ctx, uint32_t index, uint64_t *ret, struct clip_error **reterr)
{
	_cleanup_(tpm_close) struct tpm t = { 0 };
	ESYS_TR h = ESYS_TR_NONE;
	int r;

	r = counter_open(ctx, &t, index, false, &h, reterr);
	if (r < 0)
		return r;
	r = nv_read(&t, h, index, ret, reterr);
	nv_close(&t, &h);
	return r;
}

static int
nv_increment(struct tpm *t, ESYS_TR h, uint32_t index, uint64_t *ret, struct clip_error **reterr)
{
	TSS2_RC rc = sym_Esys_NV_Increment(t->esys, ESYS_TR_RH_OWNER, h, ESYS_TR_PASSWORD,
					   ESYS_TR_NONE, ESYS_TR_NONE);

	if (rc != TSS2_RC_SUCCESS)
		return tpm_rc_error(reterr, -EIO, rc, "cannot increment the TPM counter 0x%08x",
				    index);
	return nv_read(t, h, index, ret, reterr);
}

int
tpm_counter_increment(struct clip_ctx *ctx, uint32_t index, uint64_t *ret,
		      struct clip_error **reterr)
{
	_cleanup_(tpm_close) struct tpm t = { 0 };
	ESYS_TR h = ESYS_TR_NONE;
	int r;

	r = counter_open(ctx, &t, index, true, &h, reterr);
	if (r < 0)
		return r;
	r = nv_increment(&t, h, index, ret, reterr);
	nv_close(&t, &h);
	return r;
}

int
tpm_counter_define(struct clip_ctx *ctx, uint32_t index, uint64_t *ret, struct clip_error **reterr)
{
	_cleanup_(tpm_close) struct tpm t = { 0 };
	TPM2B_NV_PUBLIC pub = {
		.nvPublic = {
			.nvIndex = index,
			.nameAlg = TPM2_ALG_SHA256,
			.attributes = (TPM2_NT_COUNTER << TPMA_NV_TPM2_NT_SHIFT) |
				      TPMA_NV_OWNERWRITE | TPMA_NV_OWNERREAD | TPMA_NV_NO_DA,
			.dataSize = 8,
		},
	};
	TPM2B_AUTH auth = { 0 };
	ESYS_TR h = ESYS_TR_NONE;
	TSS2_RC rc;
	int r;

	r = tpm_open(ctx, &t, reterr);
	if (r < 0)
		return r;
	rc = sym_Esys_NV_DefineSpace(t.esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE,
				     ESYS_TR_NONE, &auth, &pub, &h);
	if (rc != TSS2_RC_SUCCESS)
		return tpm_rc_error(reterr, -EIO, rc,
				    "cannot define the TPM counter 0x%08x (the owner hierarchy's "
				    "authorization must be empty)",
				    index);
	/* A counter has no value until its first increment. */
	r = nv_increment(&t, h, index, ret, reterr);
	nv_close(&t, &h);
	return r;
}

int
tpm_counter_undefine(struct clip_ctx *ctx, uint32_t index, struct clip_error **reterr)
{
	_cleanup_(tpm_close) struct tpm t = { 0 };
	ESYS_TR h = ESYS_TR_NONE;
	TSS2_RC rc;
	int r;

	r = counter_open(ctx, &t, index, true, &h, reterr);
	if (r < 0)
		return r;
	/* UndefineSpace flushes the handle on success. */
	rc = sym_Esys_NV_UndefineSpace(t.esys, ESYS_TR_RH_OWNER, h, ESYS_TR_PASSWORD, ESYS_TR_NONE,
				       ESYS_TR_NONE);
	if (rc != TSS2_RC_SUCCESS) {
		nv_close(&t, &h);
		return tpm_rc_error(reterr, -EIO, rc, "cannot remove the TPM counter 0x%08x",
				    index);
	}
	return 0;
}
