/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libcrypto with dlopen() on first use (crypto.h, dl.h), and the helpers every module shares. */
#include <errno.h>

#include "crypto.h"
#include "dl.h"

#define CRYPTO_DL_DEFINE(name) __typeof__(name) *sym_##name;
CRYPTO_FUNCTIONS(CRYPTO_DL_DEFINE)
#undef CRYPTO_DL_DEFINE

int (*sym_SHA256_Init)(SHA256_CTX *c);
int (*sym_SHA256_Update)(SHA256_CTX *c, const void *data, size_t len);
int (*sym_SHA256_Final)(unsigned char *md, SHA256_CTX *c);

static const struct dl_symbol symbols[] = { CRYPTO_FUNCTIONS(DL_ENTRY) DL_ENTRY(SHA256_Final)
						    DL_ENTRY(SHA256_Init) DL_ENTRY(SHA256_Update) };
static const struct dl_library libraries[] = { { "libcrypto.so.3", symbols, ELEMENTSOF(symbols) } };
static struct dl_set libcrypto = DL_SET("libcrypto (OpenSSL 3)", libraries);

int
crypto_load(struct clip_error **reterr)
{
	return dl_load(&libcrypto, reterr);
}

int
crypto_sha256(const void *data, size_t n, uint8_t out[32])
{
	int r = crypto_load(NULL);

	if (r < 0)
		return r;
	return sym_EVP_Digest(data, n, out, NULL, sym_EVP_sha256(), NULL) ? 0 : -EIO;
}

bool
crypto_equal(const void *a, const void *b, size_t n)
{
	return crypto_load(NULL) == 0 && sym_CRYPTO_memcmp(a, b, n) == 0;
}
