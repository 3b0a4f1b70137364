/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libcrypto, loaded when first used (dl.h, crypto.c): linked, it cost
 * every process that links libclip 1.2 ms at start-up, and a cage
 * launcher, clip-python or 'clipctl cage run' compute no MAC, hash or
 * cipher. The code calls sym_NAME for each function NAME below, after
 * crypto_load(); the helpers load it themselves.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/sha.h>

struct clip_error;

#define CRYPTO_FUNCTIONS(X) \
	X(CRYPTO_memcmp) \
	X(EVP_CIPHER_CTX_ctrl) \
	X(EVP_CIPHER_CTX_free) \
	X(EVP_CIPHER_CTX_new) \
	X(EVP_DecryptFinal_ex) \
	X(EVP_DecryptInit_ex) \
	X(EVP_DecodeBlock) \
	X(EVP_DecryptUpdate) \
	X(EVP_Digest) \
	X(EVP_DigestSign) \
	X(EVP_DigestSignInit) \
	X(EVP_DigestVerify) \
	X(EVP_DigestVerifyInit) \
	X(EVP_EncodeBlock) \
	X(EVP_DigestFinal_ex) \
	X(EVP_DigestInit_ex) \
	X(EVP_DigestUpdate) \
	X(EVP_EncryptFinal_ex) \
	X(EVP_EncryptInit_ex) \
	X(EVP_EncryptUpdate) \
	X(EVP_KDF_CTX_free) \
	X(EVP_KDF_CTX_new) \
	X(EVP_KDF_derive) \
	X(EVP_KDF_fetch) \
	X(EVP_KDF_free) \
	X(EVP_MD_CTX_free) \
	X(EVP_MD_CTX_new) \
	X(EVP_MD_fetch) \
	X(EVP_MD_free) \
	X(EVP_MD_get_size) \
	X(EVP_PKEY_free) \
	X(EVP_PKEY_get_raw_public_key) \
	X(EVP_PKEY_new_raw_private_key) \
	X(EVP_PKEY_new_raw_public_key) \
	X(EVP_aes_256_gcm) \
	X(EVP_sha256) \
	X(OSSL_PARAM_construct_end) \
	X(OSSL_PARAM_construct_octet_string) \
	X(OSSL_PARAM_construct_uint32) \
	X(OSSL_PARAM_construct_uint64) \
	X(OSSL_PARAM_construct_utf8_string)

#define CRYPTO_DL_DECLARE(name) extern __typeof__(name) *sym_##name;
CRYPTO_FUNCTIONS(CRYPTO_DL_DECLARE)
#undef CRYPTO_DL_DECLARE

/*
 * SHA256_Init/Update/Final, deprecated in OpenSSL 3 but not removed, typed
 * here rather than through __typeof__ (which would carry the deprecation
 * into every file): the keyring keeps HMAC's pad states in its secret page
 * as SHA256_CTX (keys/keyring.c says why), which the EVP interface, whose
 * contexts live in libcrypto's heap, cannot do.
 */
extern int (*sym_SHA256_Init)(SHA256_CTX *c);
extern int (*sym_SHA256_Update)(SHA256_CTX *c, const void *data, size_t len);
extern int (*sym_SHA256_Final)(unsigned char *md, SHA256_CTX *c);

/* Load libcrypto once per process: 0, or -EOPNOTSUPP saying it is missing. */
int crypto_load(struct clip_error **reterr);

/* SHA-256 of @n bytes: 0, -EIO, or -EOPNOTSUPP without libcrypto. */
int crypto_sha256(const void *data, size_t n, uint8_t out[32]);

/* Whether @a and @b are equal, in time independent of where they differ; false without libcrypto. */
bool crypto_equal(const void *a, const void *b, size_t n);
