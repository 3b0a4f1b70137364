/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A connection to the TPM and sealing a secret to PCRs: what the "tpm" key
 * provider (keys/key-tpm.c) calls. Only in a build with the TPM.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "tss2-dl.h"
#include "tpm.h"

/* One connection to the TPM; every handle it creates is flushed before the call returns. */
struct tpm {
	struct clip_ctx *ctx;
	const char *tcti_conf;
	TSS2_TCTI_CONTEXT *tcti;
	ESYS_CONTEXT *esys;
};

/*
 * Connect through the context's TCTI. -ENODEV when there is no TPM there,
 * -EACCES when its device cannot be opened, -EIO otherwise; tpm_close()
 * is safe on a struct tpm that failed to open.
 */
int tpm_open(struct clip_ctx *ctx, struct tpm *t, struct clip_error **reterr);
void tpm_close(struct tpm *t);

/*
 * Open a file of the state directory that libclip owns (the sealed key,
 * the event log): not a symbolic link, a regular file of the effective
 * uid that nobody else may write (-EPERM). -ENOENT (no message) when it
 * does not exist.
 */
int tpm_state_file_open(struct clip_ctx *ctx, int dirfd, const char *name, int flags,
			const char *what, struct stat *st, struct clip_error **reterr);

/*
 * The sealed-key blob (doc/tpm.md): the sealed object's public and private
 * areas, the PCR set and, as a hint for error messages, the PCR values it
 * was sealed to.
 */
#define TPM_BLOB_MAX 4096

struct tpm_blob {
	uint32_t pcrs;
	uint8_t values[TPM_PCR_COUNT][TPM_SHA256_SIZE];
	TPM2B_PUBLIC public;
	TPM2B_PRIVATE private;
};

/*
 * Strict parse of a blob file's bytes: -EBADMSG with a message on any
 * defect, including a policy that does not match the PCR set and values.
 */
int tpm_blob_parse(const uint8_t *untrusted, size_t size, struct tpm_blob *blob,
		   struct clip_error **reterr);

/* The bytes of a blob; 0, or -EIO when it does not fit. */
int tpm_blob_marshal(const struct tpm_blob *b, uint8_t out[TPM_BLOB_MAX], size_t *ret_size);

/* Seal @secret to the current values of @pcrs; the blob's bytes into @out. */
int tpm_seal(struct tpm *t, uint32_t pcrs, const uint8_t secret[CLIP_KEY_SIZE],
	     uint8_t out[TPM_BLOB_MAX], size_t *ret_size, struct clip_error **reterr);

/*
 * Unseal a parsed blob: -EACCES when the PCRs differ from the sealed ones
 * (the message names them), -EBADMSG when the TPM refuses the blob (from
 * another TPM, or damaged).
 */
int tpm_unseal(struct tpm *t, const struct tpm_blob *blob, uint8_t secret[CLIP_KEY_SIZE],
	       struct clip_error **reterr);
