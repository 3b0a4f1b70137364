/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The keyring: the providers' table, the provider a context uses, and the
 * master key and its derived keys cached in the context's secret page.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <clip/keys.h>

#include "config.h"

#include "base/crypto.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "keys-internal.h"

static const char *const purpose_names[_KEY_PURPOSE_MAX] = {
	[KEY_PURPOSE_LABEL] = "label",           [KEY_PURPOSE_AUDIT] = "audit",
	[KEY_PURPOSE_ENVELOPE] = "envelope",     [KEY_PURPOSE_AUDIT_SIGN] = "audit-sign",

	[KEY_PURPOSE_LEVEL_DATA] = "level data",
};

/*
 * HMAC-SHA256 (RFC 2104) from the two hash states a key gives once it has
 * gone through its inner and outer pad blocks. A context keeps these states
 * of each derived key beside the key in its keyring page: a MAC then costs
 * the hashing of its data and no key schedule (making and keying an
 * EVP_MAC_CTX per MAC cost ten times the MAC of a label, issue 19). The
 * states are as secret as the key (they forge MACs), which is why they are
 * plain SHA256_CTX in the page (MADV_DONTDUMP, MADV_WIPEONFORK, wiped at
 * free) and not an EVP_MAC_CTX kept in libcrypto's heap.
 */
static int
mac_key_init(struct mac_key *k, const uint8_t key[CLIP_KEY_SIZE])
{
	uint8_t pad[SHA256_CBLOCK];
	int ok;

	memset(pad, 0x36, sizeof(pad));
	for (size_t i = 0; i < CLIP_KEY_SIZE; i++)
		pad[i] ^= key[i];
	ok = sym_SHA256_Init(&k->inner) && sym_SHA256_Update(&k->inner, pad, sizeof(pad));
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] ^= 0x36 ^ 0x5c;
	ok = ok && sym_SHA256_Init(&k->outer) && sym_SHA256_Update(&k->outer, pad, sizeof(pad));
	secure_wipe(pad, sizeof(pad));
	return ok ? 0 : -EIO;
}

static int
mac_key_mac(const struct mac_key *k, const void *data, size_t n, uint8_t out[32])
{
	SHA256_CTX c = k->inner;
	uint8_t inner[SHA256_DIGEST_LENGTH];
	int ok;

	ok = sym_SHA256_Update(&c, data, n) && sym_SHA256_Final(inner, &c);
	c = k->outer;
	ok = ok && sym_SHA256_Update(&c, inner, sizeof(inner)) && sym_SHA256_Final(out, &c);
	secure_wipe(&c, sizeof(c));
	secure_wipe(inner, sizeof(inner));
	return ok ? 0 : -EIO;
}

int
mac_sha256(const uint8_t key[CLIP_KEY_SIZE], const void *data, size_t n, uint8_t out[32])
{
	struct mac_key k;
	int r = crypto_load(NULL);

	if (r < 0)
		return r;
	r = mac_key_init(&k, key);
	if (r == 0)
		r = mac_key_mac(&k, data, n, out);
	secure_wipe(&k, sizeof(k));
	return r;
}

int
key_derive(const uint8_t master[CLIP_KEY_SIZE], enum key_purpose purpose,
	   uint8_t out[CLIP_KEY_SIZE])
{
	char info[64];
	int n;

	n = snprintf(info, sizeof(info), "libclip key v1: %s", purpose_names[purpose]);
	return mac_sha256(master, info, (size_t)n, out);
}

static const struct key_provider *const providers[] = {
	&key_provider_file,
#if HAVE_TPM
	&key_provider_tpm,
#endif
};

static const struct key_provider *
provider_find(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(providers); i++)
		if (strcmp(providers[i]->name, name) == 0)
			return providers[i];
	return NULL;
}

static const struct key_provider *
provider_of(const struct clip_ctx *ctx)
{
	return ctx->key_provider ? ctx->key_provider : &key_provider_file;
}

CLIP_EXPORT int
clip_ctx_set_key_provider(struct clip_ctx *ctx, const char *name)
{
	const struct key_provider *p;

	ctx_assert_return(ctx, -EINVAL);
	ctx_assert_log_return(ctx, name, -EINVAL);

	p = provider_find(name);
	if (!p && !HAVE_TPM && strcmp(name, "tpm") == 0) {
		log_err(ctx, "the key provider 'tpm' is not in this build: libclip was built "
			     "without TPM support (-Dtpm=disabled)");
		return -EOPNOTSUPP;
	}
	if (!p) {
		log_err(ctx, "unknown key provider '%.64s'", name);
		return -EOPNOTSUPP;
	}
	if (p != provider_of(ctx)) {
		ctx->key_provider = p;
		ctx_forget_keys(ctx);
	}
	return 0;
}

CLIP_EXPORT const char *
clip_ctx_get_key_provider(const struct clip_ctx *ctx)
{
	if (!ctx || ctx->pid != pid_cached())
		return NULL;
	return provider_of(ctx)->name;
}

static int
keyring_get(struct clip_ctx *ctx, struct keyring **ret)
{
	_Static_assert(sizeof(struct keyring) <= SECRET_PAGE_SIZE, "the keyring is one page");

	if (!ctx->keyring) {
		ctx->keyring = secret_page_new();
		if (!ctx->keyring)
			return -ENOMEM;
	}
	*ret = ctx->keyring;
	return 0;
}

int
ctx_get_key(struct clip_ctx *ctx, enum key_purpose purpose, bool create, const uint8_t **ret,
	    struct clip_error **reterr)
{
	const struct key_provider *p = provider_of(ctx);
	struct keyring *k;
	int r;

	/* Every use of a key is a MAC: without libcrypto, say so before loading it. */
	r = crypto_load(reterr);
	if (r < 0)
		return r;
	r = keyring_get(ctx, &k);
	if (r < 0)
		return r;
	if (!k->loaded) {
		r = p->load(ctx, create, k->master, reterr);
		if (r < 0) {
			secure_wipe(k->master, sizeof(k->master));
			return r;
		}
		k->loaded = true;
		log_debug(ctx, "loaded the master key from the '%s' provider", p->name);
	}
	if (!k->derived_ok[purpose]) {
		r = key_derive(k->master, purpose, k->derived[purpose]);
		if (r == 0)
			r = mac_key_init(&k->mac[purpose], k->derived[purpose]);
		if (r < 0)
			return error_set(reterr, r, "cannot derive a key");
		k->derived_ok[purpose] = true;
	}
	*ret = k->derived[purpose];
	return 0;
}

int
ctx_mac(struct clip_ctx *ctx, enum key_purpose purpose, bool create, const void *data, size_t n,
	uint8_t out[32], struct clip_error **reterr)
{
	const uint8_t *key;
	int r;

	r = ctx_get_key(ctx, purpose, create, &key, reterr);
	if (r < 0)
		return r;
	return mac_key_mac(&ctx->keyring->mac[purpose], data, n, out);
}
