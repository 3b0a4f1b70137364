/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The TPM module from inside the library: one connection (struct tpm), the
 * seal/unseal and PCR primitives (tpm.c), the sealed-key blob and the
 * "tpm" key provider (key-tpm.c), the event log (tpm-log.c).
 * doc/tpm.md explains the choices.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "tss2-dl.h"

#include <clip/tpm.h>

#include "base/ctx-internal.h"
#include "base/error.h"

#define TPM_DEFAULT_TCTI "device:/dev/tpmrm0"
#define TPM_DEFAULT_SEAL_PCRS (UINT32_C(1) << 7)
#define TPM_DEFAULT_MEASURE_PCR 23u
#define TPM_PCR_COUNT 24u
#define TPM_PCR_MASK ((UINT32_C(1) << TPM_PCR_COUNT) - 1)
#define TPM_SHA256_SIZE 32

/* One connection to the TPM; every handle it creates is flushed before the call returns. */
struct tpm {
	struct clip_ctx *ctx;
	const char *tcti_conf;
	TSS2_TCTI_CONTEXT *tcti;
	ESYS_CONTEXT *esys;
};

/* The settings in effect, defaults resolved. */
const char *tpm_tcti(const struct clip_ctx *ctx);
uint32_t tpm_seal_pcrs(const struct clip_ctx *ctx);
unsigned tpm_measure_pcr(const struct clip_ctx *ctx);

/* Whether a measurement PCR is allowed: resets to zero, extendable at locality 0. */
bool tpm_measure_pcr_valid(uint32_t pcr);

/*
 * Connect through the context's TCTI. -ENODEV when there is no TPM there,
 * -EACCES when its device cannot be opened, -EIO otherwise; tpm_close()
 * is safe on a struct tpm that failed to open.
 */
int tpm_open(struct clip_ctx *ctx, struct tpm *t, struct clip_error **reterr);
void tpm_close(struct tpm *t);

/*
 * The message of a failed TPM call: FORMAT, then the response code and
 * its decoding (Tss2_RC_Decode). Returns @error.
 */
int tpm_rc_error(struct clip_error **reterr, int error, TSS2_RC rc, const char *format, ...)
	_printf_(4, 5);

/*
 * Open a file of the state directory that libclip owns (the sealed key,
 * the event log): not a symbolic link, a regular file of the effective
 * uid that nobody else may write (-EPERM). -ENOENT (no message) when it
 * does not exist.
 */
int tpm_state_file_open(struct clip_ctx *ctx, int dirfd, const char *name, int flags,
			const char *what, struct stat *st, struct clip_error **reterr);

/* A TPM response code without the number of the handle, session or parameter it names. */
TSS2_RC tpm_rc_base(TSS2_RC rc);

/*
 * The transient objects and sessions one call creates: flushed when the
 * scope ends, whatever the path (_cleanup_tpm_scope_).
 */
struct tpm_scope {
	ESYS_CONTEXT *esys;
	ESYS_TR handles[4];
};

#define TPM_SCOPE(t) \
	{ \
		.esys = (t)->esys, \
		.handles = { ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE }, \
	}

void tpm_scope_flush(struct tpm_scope *s);
#define _cleanup_tpm_scope_ _cleanup_(tpm_scope_flush)

/* A selection of the PCRs in @mask (bit n is PCR n) in the SHA-256 bank. */
TPML_PCR_SELECTION tpm_pcr_selection(uint32_t mask);

/* The values of the PCRs in @mask (SHA-256 bank) into @values[pcr]. */
int tpm_pcr_read(struct tpm *t, uint32_t mask, uint8_t values[TPM_PCR_COUNT][TPM_SHA256_SIZE],
		 struct clip_error **reterr);

/* Extend @pcr with @digest in the SHA-256 bank only (tests change PCR 7 with it). */
int tpm_pcr_extend_sha256(struct tpm *t, unsigned pcr, const uint8_t digest[TPM_SHA256_SIZE],
			  struct clip_error **reterr);

/*
 * Extend @pcr with the hash of @event in every bank the PCR has, each with
 * the bank's algorithm (a bank left at its reset value could be extended
 * by anyone to any value). -EOPNOTSUPP without a SHA-256 bank.
 */
int tpm_pcr_extend_event(struct tpm *t, unsigned pcr, const void *event, size_t n,
			 struct clip_error **reterr);

/* How many transient objects and loaded sessions the TPM holds (tests: nothing leaks). */
int tpm_count_handles(struct tpm *t, unsigned *ret_objects, unsigned *ret_sessions,
		      struct clip_error **reterr);

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

/* The measurement, for the cage start hook (cages issue) as for clip_tpm_measure(). */
int tpm_measure(struct clip_ctx *ctx, const char *what, const void *data, size_t size,
		struct clip_error **reterr);

/*
 * Replay an event log held in memory: @values[pcr] gets the value each PCR
 * would have, @ret_used the set of PCRs the log names. Calls @fn for each
 * event. Returns the number of events, or -EBADMSG on a malformed log.
 */
int tpm_log_replay_buffer(const char *untrusted, size_t size,
			  uint8_t values[TPM_PCR_COUNT][TPM_SHA256_SIZE], uint32_t *ret_used,
			  clip_tpm_event_fn fn, void *userdata, struct clip_error **reterr);

/* Whether @what may name an event: 1 to 255 printable ASCII characters. */
bool tpm_event_name_valid(const char *what);
