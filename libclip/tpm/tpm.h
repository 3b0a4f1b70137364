/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the tpm module gives the modules above it: the settings in effect
 * and measuring (a cage whose profile says Measure=yes). Sealing is in
 * tpm-seal.h. Neither needs tpm2-tss's headers here, so that a build
 * without the TPM (tpm-disabled.c) compiles its callers unchanged.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <clip/tpm.h>

#include "base/ctx-internal.h"
#include "base/error.h"

#define TPM_DEFAULT_TCTI "device:/dev/tpmrm0"
#define TPM_DEFAULT_SEAL_PCRS (UINT32_C(1) << 7)
#define TPM_DEFAULT_MEASURE_PCR 23u
#define TPM_PCR_COUNT 24u
#define TPM_PCR_MASK ((UINT32_C(1) << TPM_PCR_COUNT) - 1)
#define TPM_SHA256_SIZE 32

/* The settings in effect, defaults resolved: the only readers of ctx->tpm. */
const char *tpm_tcti(const struct clip_ctx *ctx);
uint32_t tpm_seal_pcrs(const struct clip_ctx *ctx);
unsigned tpm_measure_pcr(const struct clip_ctx *ctx);
uint32_t tpm_fallback(const struct clip_ctx *ctx);

/* Whether a measurement PCR is allowed: resets to zero, extendable at locality 0. */
bool tpm_measure_pcr_valid(uint32_t pcr);

/* The measurement, for the cage start hook (cages issue) as for clip_tpm_measure(). */
int tpm_measure(struct clip_ctx *ctx, const char *what, const void *data, size_t size,
		struct clip_error **reterr);

/*
 * The NV index of the audit log's counter (doc/tpm.md, "The audit
 * counter"): in the owner's range, 0x01000000 to 0x013fffff.
 */
#define TPM_AUDIT_NV_INDEX UINT32_C(0x013c11a0)

/*
 * A monotonic counter in the TPM's NV memory at @index (tpm-nv.c).
 * tpm_counter_read(): its value; -ENOENT (no message) when the TPM has no
 * such index, -ENODATA (no message) when it was never incremented.
 * tpm_counter_define(): define it and increment it once, its first value
 * in *@ret (the TPM starts a counter at the highest any counter had).
 * tpm_counter_increment(): one up, the new value in *@ret.
 * tpm_counter_undefine(): remove it (the reset of doc/tpm.md).
 * -ENODEV, -EACCES (no TPM, not allowed), -EIO, -EOPNOTSUPP (no tpm2-tss).
 */
int tpm_counter_read(struct clip_ctx *ctx, uint32_t index, uint64_t *ret,
		     struct clip_error **reterr);
int tpm_counter_define(struct clip_ctx *ctx, uint32_t index, uint64_t *ret,
		       struct clip_error **reterr);
int tpm_counter_increment(struct clip_ctx *ctx, uint32_t index, uint64_t *ret,
			  struct clip_error **reterr);
int tpm_counter_undefine(struct clip_ctx *ctx, uint32_t index, struct clip_error **reterr);
