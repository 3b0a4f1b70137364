/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The keyring: the providers' table, the provider a context uses, and the
 * master key and its derived keys cached in the context's secret page.
 */
#include <errno.h>
#include <pthread.h>
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
	[KEY_PURPOSE_LABEL] = "label",
	[KEY_PURPOSE_AUDIT] = "audit",
	[KEY_PURPOSE_ENVELOPE] = "envelope",
};

/*
 * The HMAC implementation, fetched once per process: an implicit fetch on
 * every call (what HMAC() does) costs more than the MAC itself.
 */
static EVP_MAC *hmac_impl;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;

static void
hmac_fetch(void)
{
	hmac_impl = sym_EVP_MAC_fetch(NULL, "HMAC", NULL);
}

static void __attribute__((destructor)) hmac_release(void)
{
	if (hmac_impl)
		sym_EVP_MAC_free(hmac_impl);
	hmac_impl = NULL;
}

int
mac_sha256(const uint8_t key[CLIP_KEY_SIZE], const void *data, size_t n, uint8_t out[32])
{
	OSSL_PARAM params[2];
	EVP_MAC_CTX *c;
	size_t len = 0;
	int ok = crypto_load(NULL);

	if (ok < 0)
		return ok;
	params[0] =
		sym_OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
	params[1] = sym_OSSL_PARAM_construct_end();
	if (pthread_once(&hmac_once, hmac_fetch) != 0 || !hmac_impl)
		return -EIO;
	c = sym_EVP_MAC_CTX_new(hmac_impl);
	if (!c)
		return -ENOMEM;
	ok = sym_EVP_MAC_init(c, key, CLIP_KEY_SIZE, params) && sym_EVP_MAC_update(c, data, n) &&
	     sym_EVP_MAC_final(c, out, &len, 32) && len == 32;
	/* Frees and wipes the key schedule. */
	sym_EVP_MAC_CTX_free(c);
	return ok ? 0 : -EIO;
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
	if (!ctx || ctx->pid != getpid())
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
		if (r < 0)
			return error_set(reterr, r, "cannot derive a key");
		k->derived_ok[purpose] = true;
	}
	*ret = k->derived[purpose];
	return 0;
}
