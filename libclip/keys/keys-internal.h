/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * keys: where a context's 32-byte master key comes from (a provider: the
 * key file, or the key sealed to the TPM), the keys derived from it per
 * purpose, and the keyring that caches them in a secret page; the keys of
 * the levels' data directories and the kernel's filesystem encryption that
 * uses them (key-fscrypt.c). Other modules use key.h and fscrypt.h only.
 *
 * Calls: base tpm
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/crypto.h"
#include "base/ctx-internal.h"
#include "key.h"

/* A new provider is one more struct key_provider in keyring.c's table. */
struct key_provider {
	const char *name;
	/*
	 * Fill @key with the master key. When it does not exist: create it if
	 * @create, else fail with -ENOKEY.
	 */
	int (*load)(struct clip_ctx *ctx, bool create, uint8_t key[CLIP_KEY_SIZE],
		    struct clip_error **reterr);
};

/* The key file STATE_DIR/mac.key (key-file.c). */
extern const struct key_provider key_provider_file;
/* The key sealed to the TPM's PCRs (key-tpm.c, doc/tpm.md). */
extern const struct key_provider key_provider_tpm;

/* HMAC-SHA256's hash states after a key's inner and outer pad blocks (keyring.c). */
struct mac_key {
	SHA256_CTX inner, outer;
};

/* The keys of a context, in its secret page (base/util.h: secret_page_new()). */
struct keyring {
	uint8_t master[CLIP_KEY_SIZE];
	uint8_t derived[_KEY_PURPOSE_MAX][CLIP_KEY_SIZE];
	struct mac_key mac[_KEY_PURPOSE_MAX]; /* of derived[], set with it */
	bool loaded;
	bool derived_ok[_KEY_PURPOSE_MAX];
};

/* HMAC-SHA256(@master, "libclip key v1: " + purpose name). */
int key_derive(const uint8_t master[CLIP_KEY_SIZE], enum key_purpose purpose,
	       uint8_t out[CLIP_KEY_SIZE]);
