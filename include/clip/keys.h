/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a context's keys come from: the key provider. The keys sign file
 * labels and the audit log, and wrap the envelopes of downgraded
 * documents; all of them are derived from one master key that the
 * provider gives.
 *
 * See clip-ctx(3) and clip-tpm(3).
 */
#ifndef CLIP_KEYS_H
#define CLIP_KEYS_H

#ifdef __cplusplus
extern "C" {
#endif

struct clip_ctx;

/**
 * clip_ctx_set_key_provider - choose where the MAC key comes from
 *
 * "file": a 32-byte key in STATE_DIR/mac.key, created 0600 on first signing.
 * When the key is loaded, it is refused with -EPERM when its mode gives any
 * access to group or others, when it is not owned by the effective uid,
 * when it is a symbolic link, or when the state directory is writable by
 * group or others or owned by another uid; with -EBADMSG when it is not 32
 * bytes long; verifying without a key gives -ENOKEY.
 *
 * "tpm": the key sealed to the TPM's PCRs in STATE_DIR/mac.key.tpm; see
 * clip-tpm(3) (-EACCES when a sealed PCR changed, -EBADMSG for a blob of
 * another TPM, -ENOKEY without a TPM unless the settings fall back).
 *
 * @param ctx a context
 * @param name the provider's name
 * @return 0, or -EINVAL (NULL), -EOPNOTSUPP (unknown provider), -ECHILD.
 * @since 0.1
 */
int clip_ctx_set_key_provider(struct clip_ctx *ctx, const char *name);

/**
 * clip_ctx_get_key_provider - the name of the key provider
 *
 * @param ctx a context
 * @return the name, or NULL when @ctx is invalid.
 * @since 0.1
 */
const char *clip_ctx_get_key_provider(const struct clip_ctx *ctx);

#ifdef __cplusplus
}
#endif

#endif
