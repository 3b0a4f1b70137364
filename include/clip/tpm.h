/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TPM 2.0: the context's master key sealed to the boot state, and
 * measurements (cage profiles) extended into a PCR with an event log that
 * can be replayed against it.
 *
 * The key provider "tpm" (clip_ctx_set_key_provider()) seals the master
 * key that labels and the audit log derive their keys from to a set of
 * PCRs (PCR 7, the Secure Boot state, by default), under a storage primary
 * key that is created again on each use from a fixed template. Every
 * transient object and session libclip creates is flushed before the call
 * returns, on every path: no resource manager is needed.
 *
 * See clip-tpm(3) and doc/tpm.md.
 */
#ifndef CLIP_TPM_H
#define CLIP_TPM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct clip_ctx;
struct clip_error;

/* What the "tpm" key provider does when there is no TPM. */
#define CLIP_TPM_FALLBACK_REFUSE 0u /* fail with -ENOKEY (the default) */
#define CLIP_TPM_FALLBACK_KEY_FILE 1u /* use the "file" provider, logged at LOG_WARNING */

/*
 * TPM settings of a context. Set size to sizeof(struct clip_tpm_opts); a
 * zero member means its default.
 */
struct clip_tpm_opts {
	uint32_t size;
	/* TCTI configuration string ("device:/dev/tpmrm0", "swtpm:path=/run/swtpm.sock"). */
	const char *tcti;
	/* PCRs of the SHA-256 bank the key is sealed to: bit n is PCR n (PCR 7). */
	uint32_t seal_pcrs;
	/* The PCR measurements extend: 1 to 16 or 23 (PCR 23). */
	uint32_t measure_pcr;
	/* CLIP_TPM_FALLBACK_REFUSE or CLIP_TPM_FALLBACK_KEY_FILE. */
	uint32_t fallback;
};

/* Flags of clip_tpm_seal_key(). */
#define CLIP_TPM_SEAL_FROM_KEY_FILE (1u << 0) /* seal the "file" provider's key */
#define CLIP_TPM_SEAL_NEW (1u << 1) /* seal a new random key */

/**
 * clip_ctx_set_tpm_options - set the TPM settings of a context
 *
 * The TCTI is, in this order: @opts->tcti, the value of $CLIP_TPM_TCTI
 * (read with secure_getenv() when the TPM is opened), "device:/dev/tpmrm0".
 * Changing the settings drops any key already loaded.
 *
 * @param ctx a context
 * @param opts the settings, copied; NULL restores every default
 * @return 0, or -EINVAL (size smaller than the first version of the
 *	   struct; a TCTI string empty, longer than 255 bytes or with a
 *	   control character; a PCR above 23 in seal_pcrs; a measure_pcr
 *	   that is not 1 to 16 or 23; an unknown fallback), -E2BIG (size
 *	   larger than this library knows and a non-zero byte beyond what it
 *	   knows, or larger than 4096), -ECHILD.
 * @since 0.1
 */
int clip_ctx_set_tpm_options(struct clip_ctx *ctx, const struct clip_tpm_opts *opts);

/**
 * clip_ctx_get_tpm_options - the TPM settings in effect
 *
 * Fills the members that @opts->size covers with the values in effect,
 * defaults resolved; in a struct larger than this library knows, the
 * bytes past what it knows are zeroed. The TCTI string is owned by the context (or the
 * environment) and valid until the settings change or the context is
 * freed.
 *
 * @param ctx a context
 * @param opts its size member set by the caller
 * @return 0, or -EINVAL (NULL, or a size smaller than the first version
 *	   of the struct), -E2BIG (a size larger than 4096), -ECHILD.
 * @since 0.1
 */
int clip_ctx_get_tpm_options(const struct clip_ctx *ctx, struct clip_tpm_opts *opts);

/**
 * clip_tpm_get_info - describe the TPM
 *
 * @param ctx a context
 * @param ret where a one-line description (manufacturer, vendor string,
 *	  firmware version, PCR banks) is stored, to be freed with free();
 *	  untouched on failure
 * @param reterr optional
 * @return 0, or -EINVAL, -ENODEV (no TPM at the TCTI), -EACCES (the TPM
 *	   device cannot be opened), -EIO (the TPM failed), -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_tpm_get_info(struct clip_ctx *ctx, char **ret, struct clip_error **reterr);

/**
 * clip_tpm_pcr_read - read a PCR of the SHA-256 bank
 *
 * @param ctx a context
 * @param pcr 0 to 23
 * @param ret_digest where the 32-byte value is stored; untouched on failure
 * @param reterr optional
 * @return 0, or -EINVAL, -ENODEV, -EACCES, -EOPNOTSUPP (the TPM has no
 *	   SHA-256 bank for that PCR), -EIO, -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_tpm_pcr_read(struct clip_ctx *ctx, unsigned pcr, uint8_t ret_digest[32],
		      struct clip_error **reterr);

/**
 * clip_tpm_seal_key - seal the context's master key to the TPM
 *
 * With @flags 0: a sealed key that exists is unsealed and sealed again to
 * the current values of the configured PCRs (after a legitimate change of
 * the PCR set, or before a planned change of their values); when none
 * exists, a new random key is sealed. CLIP_TPM_SEAL_FROM_KEY_FILE seals
 * the key of the "file" provider instead (labels made with it stay valid;
 * the key file is left in place), CLIP_TPM_SEAL_NEW a new random key
 * (labels made before no longer verify). The sealed blob
 * STATE_DIR/mac.key.tpm is replaced atomically.
 *
 * @param ctx a context
 * @param flags 0, CLIP_TPM_SEAL_FROM_KEY_FILE or CLIP_TPM_SEAL_NEW
 * @param reterr optional
 * @return 0, or -EINVAL (unknown or conflicting flags), -ENODEV, -EACCES
 *	   (the existing key does not unseal: PCRs changed; or the owner
 *	   hierarchy has a password), -EBADMSG (the existing blob is damaged
 *	   or from another TPM), -ENOKEY (no key file to seal), -EPERM (an
 *	   unsafe state directory or key file), -EOPNOTSUPP (no SHA-256 PCR
 *	   bank), -EIO, -ENOSPC, -EDQUOT, -EROFS, -ENOTDIR, -ENAMETOOLONG,
 *	   -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_tpm_seal_key(struct clip_ctx *ctx, unsigned flags, struct clip_error **reterr);

/**
 * clip_tpm_check_key - whether the sealed key unseals now
 *
 * @param ctx a context
 * @param ret_pcrs optional: where the PCR set of the sealed key is stored
 *	  (bit n is PCR n); untouched on failure
 * @param reterr optional
 * @return 0, or -ENOKEY (no sealed key), -EACCES (PCRs changed since the
 *	   key was sealed; the message names them and carries the TPM's
 *	   response code), -EBADMSG (a damaged blob, or one from another
 *	   TPM), -EPERM, -ENODEV, -EIO, -ENOMEM, -EINVAL, -ECHILD.
 * @since 0.1
 */
int clip_tpm_check_key(struct clip_ctx *ctx, uint32_t *ret_pcrs, struct clip_error **reterr);

/**
 * clip_tpm_measure - extend the measurement PCR and log the event
 *
 * The event "@what, SHA-256(@data)" is appended to the event log
 * STATE_DIR/tpm-events.log, then the measurement PCR is extended with a
 * digest that binds both (doc/tpm.md), in every PCR bank the TPM has.
 * When the PCR is found at its reset value while the log holds events for
 * it (the TPM was reset since: a reboot), the log is first moved to
 * tpm-events.log.old and a new one started. A damaged log is refused,
 * and left as it is for inspection.
 *
 * @param ctx a context
 * @param what what is measured ("cage:NAME"): 1 to 255 printable ASCII
 *	  characters
 * @param data the measured bytes (a cage's canonical profile)
 * @param size their number (may be 0)
 * @param reterr optional
 * @return 0, or -EINVAL, -ENODEV, -EACCES, -EBADMSG (the log is damaged:
 *	   move it aside to measure again), -EPERM (an unsafe state directory or log file),
 *	   -ENOSPC (the log is full, or the disk), -EIO, -EDQUOT, -EROFS,
 *	   -ENOTDIR, -ENAMETOOLONG, -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_tpm_measure(struct clip_ctx *ctx, const char *what, const void *data, size_t size,
		     struct clip_error **reterr);

/**
 * clip_tpm_event_fn - one event of the log, as clip_tpm_replay() reads it
 *
 * @param pcr the PCR the event extended
 * @param what what was measured
 * @param digest SHA-256 of the measured bytes
 * @param userdata as given to clip_tpm_replay()
 */
typedef void (*clip_tpm_event_fn)(unsigned pcr, const char *what, const uint8_t digest[32],
				  void *userdata);

/**
 * clip_tpm_replay - check the event log against the TPM
 *
 * Recomputes, from the event log, the value of every PCR it names and of
 * the measurement PCR, and compares each with the TPM's. A log that was
 * edited, truncated, reordered or extended by hand does not match.
 *
 * @param ctx a context
 * @param fn optional: called for each event, in order
 * @param userdata passed to @fn
 * @param reterr optional
 * @return the number of events (>= 0) when the log matches the TPM, or
 *	   -EBADMSG (malformed log, or a PCR that does not match it: the
 *	   message gives both values), -EPERM, -ENODEV, -EACCES, -EIO,
 *	   -ENOMEM, -EINVAL, -ECHILD.
 * @since 0.1
 */
int clip_tpm_replay(struct clip_ctx *ctx, clip_tpm_event_fn fn, void *userdata,
		    struct clip_error **reterr);

#ifdef __cplusplus
}
#endif

#endif
