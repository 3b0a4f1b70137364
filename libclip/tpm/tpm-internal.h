/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tpm: TPM 2.0 through tpm2-tss ESYS (loaded with dlopen(), tss2-dl.c):
 * the context's TPM settings, one connection at a time, PCR read and
 * extend, sealing to PCRs, the measurement log. doc/tpm.md explains the
 * choices.
 *
 * Calls: base
 */
#pragma once

#include <stdarg.h>

#include "tpm-seal.h"

/*
 * The message of a failed TPM call: FORMAT, then the response code and
 * its decoding (Tss2_RC_Decode). Returns @error.
 */
int tpm_rc_error(struct clip_error **reterr, int error, TSS2_RC rc, const char *format, ...)
	_printf_(4, 5);

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
 * Replay an event log held in memory: @values[pcr] gets the value each PCR
 * would have, @ret_used the set of PCRs the log names. Calls @fn for each
 * event. Returns the number of events, or -EBADMSG on a malformed log.
 */
int tpm_log_replay_buffer(const char *untrusted, size_t size,
			  uint8_t values[TPM_PCR_COUNT][TPM_SHA256_SIZE], uint32_t *ret_used,
			  clip_tpm_event_fn fn, void *userdata, struct clip_error **reterr);

/* Whether @what may name an event: 1 to 255 printable ASCII characters. */
bool tpm_event_name_valid(const char *what);
