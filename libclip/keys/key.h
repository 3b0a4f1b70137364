/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the keys module gives the modules above it: a context's key for one
 * purpose, and the MAC made with such a key.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/ctx-internal.h"

/* Purposes of the keys derived from the master key: one key, one use. */
enum key_purpose {
	KEY_PURPOSE_LABEL,
	KEY_PURPOSE_AUDIT, /* audit records and their anchor (transfer/audit.c) */
	KEY_PURPOSE_ENVELOPE, /* per-target envelope keys (transfer/) */
	KEY_PURPOSE_AUDIT_SIGN, /* the Ed25519 seed that signs the audit anchor (transfer/audit-sign.c) */

	KEY_PURPOSE_LEVEL_DATA, /* the levels' data directories (fscrypt.h) */
	_KEY_PURPOSE_MAX,
};

/*
 * The key for @purpose, derived from the provider's master key, loaded on
 * first use and cached in the context's keyring. @create lets the provider
 * create a master key that does not exist yet (signing does, verifying
 * does not).
 */
int ctx_get_key(struct clip_ctx *ctx, enum key_purpose purpose, bool create, const uint8_t **ret,
		struct clip_error **reterr);

/*
 * HMAC-SHA256 of @n bytes at @data under the context's key for @purpose
 * (loaded as ctx_get_key() does), from the key's pad states cached in the
 * keyring: what every MAC made again and again with one key uses.
 */
int ctx_mac(struct clip_ctx *ctx, enum key_purpose purpose, bool create, const void *data, size_t n,
	    uint8_t out[32], struct clip_error **reterr);

/* HMAC-SHA256 of @n bytes at @data under a 32-byte key. */
int mac_sha256(const uint8_t key[CLIP_KEY_SIZE], const void *data, size_t n, uint8_t out[32]);
