/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Key providers: where the context's 32-byte master key comes from. The
 * keys modules use are derived from it per purpose (ctx_get_key()). A new
 * provider (the TPM-sealed key) is one more struct key_provider.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/ctx-internal.h"

struct key_provider {
	const char *name;
	/*
	 * Fill @key with the master key. When it does not exist: create it if
	 * @create, else fail with -ENOKEY.
	 */
	int (*load)(struct clip_ctx *ctx, bool create, uint8_t key[CLIP_KEY_SIZE],
		    struct clip_error **reterr);
};

extern const struct key_provider key_provider_file;
/* The key sealed to the TPM's PCRs (key-tpm.c, doc/tpm.md). */
extern const struct key_provider key_provider_tpm;

/* The provider called @name, or NULL. */
const struct key_provider *key_provider_find(const char *name);

/* HMAC-SHA256(@master, "libclip key v1: " + purpose name). */
int key_derive(const uint8_t master[CLIP_KEY_SIZE], enum key_purpose purpose,
	       uint8_t out[CLIP_KEY_SIZE]);

/* HMAC-SHA256 of @n bytes at @data under a 32-byte key. */
int mac_sha256(const uint8_t key[CLIP_KEY_SIZE], const void *data, size_t n, uint8_t out[32]);
