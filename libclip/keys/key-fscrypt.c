/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The levels' data keys (fscrypt.h): derived through OpenSSL's KDFs
 * (HKDF-SHA512, scrypt for the user secret), given to the kernel's
 * filesystem encryption through its ioctls. Nothing here encrypts a byte
 * of a file: the kernel does (doc/data-at-rest.md).
 */
#include <errno.h>
#include <linux/fscrypt.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "base/crypto.h"
#include "base/error.h"
#include "base/test-hooks.h"
#include "base/util.h"
#include "fscrypt.h"
#include "keys-internal.h"

/* scrypt's cost: 32 MiB and about 0.1 s per unlock on these machines. */
#define SCRYPT_N (1u << 15)
#define SCRYPT_R 8u
#define SCRYPT_P 1u

static int
kdf(const char *name, OSSL_PARAM *params, uint8_t *out, size_t n)
{
	EVP_KDF *k = sym_EVP_KDF_fetch(NULL, name, NULL);
	EVP_KDF_CTX *c = k ? sym_EVP_KDF_CTX_new(k) : NULL;
	int ok = c && sym_EVP_KDF_derive(c, out, n, params) > 0;

	sym_EVP_KDF_CTX_free(c);
	sym_EVP_KDF_free(k);
	return ok ? 0 : -EIO;
}

/* HKDF-SHA512 (RFC 5869); an empty @salt is HashLen zero bytes, as the RFC says. */
static int
hkdf_sha512(const void *ikm, size_t ikm_n, const char *salt, const void *info, size_t info_n,
	    uint8_t *out, size_t n)
{
	OSSL_PARAM p[5];

	p[0] = sym_OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA512", 0);
	p[1] = sym_OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, ikm_n);
	p[2] = sym_OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt,
						     strlen(salt));
	p[3] = sym_OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_n);
	p[4] = sym_OSSL_PARAM_construct_end();
	return kdf("HKDF", p, out, n);
}

int
fscrypt_key_identifier(const uint8_t key[LEVEL_KEY_SIZE], uint8_t id[FSCRYPT_ID_SIZE])
{
	/* The kernel's (fs/crypto/hkdf.c): "fscrypt\0", then HKDF_CONTEXT_KEY_IDENTIFIER. */
	static const uint8_t info[] = { 'f', 's', 'c', 'r', 'y', 'p', 't', 0, 1 };
	int r = crypto_load(NULL);

	if (r < 0)
		return r;
	return hkdf_sha512(key, LEVEL_KEY_SIZE, "", info, sizeof(info), id, FSCRYPT_ID_SIZE);
}

int
level_key_derive(struct clip_ctx *ctx, const char *level, const void *secret, size_t n,
		 uint8_t out[LEVEL_KEY_SIZE], struct clip_error **reterr)
{
	/* The level data key, then scrypt's output: HKDF's input. */
	uint8_t ikm[CLIP_KEY_SIZE + 32];
	uint8_t salt[32];
	const uint8_t *base;
	char info[256];
	size_t ikm_n = CLIP_KEY_SIZE;
	int r;

	r = ctx_get_key(ctx, KEY_PURPOSE_LEVEL_DATA, true, &base, reterr);
	if (r < 0)
		return r;
	if (snprintf(info, sizeof(info), "libclip level data key v1: %s", level) >=
	    (int)sizeof(info))
		return error_set(reterr, -ENAMETOOLONG, "level '%.64s...' is too long for a key",
				 level);
	memcpy(ikm, base, CLIP_KEY_SIZE);
	if (secret && !test_hook_disabled("level-key-secret")) {
		uint32_t rr = SCRYPT_R, pp = SCRYPT_P;
		uint64_t nn = SCRYPT_N;
		OSSL_PARAM p[6];

		/* The salt is secret too: per context (its master key) and level. */
		r = hkdf_sha512(base, CLIP_KEY_SIZE, "libclip scrypt salt v1", info, strlen(info),
				salt, sizeof(salt));
		p[0] = sym_OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD,
							     (void *)secret, n);
		p[1] = sym_OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt,
							     sizeof(salt));
		p[2] = sym_OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_N, &nn);
		p[3] = sym_OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_R, &rr);
		p[4] = sym_OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_P, &pp);
		p[5] = sym_OSSL_PARAM_construct_end();
		if (r >= 0)
			r = kdf("SCRYPT", p, ikm + CLIP_KEY_SIZE, 32);
		secure_wipe(salt, sizeof(salt));
		if (r < 0) {
			secure_wipe(ikm, sizeof(ikm));
			return error_set(reterr, r,
					 "cannot derive the key of level '%.64s': scrypt", level);
		}
		ikm_n += 32;
	}
	r = hkdf_sha512(ikm, ikm_n, "libclip level data v1", info, strlen(info), out,
			LEVEL_KEY_SIZE);
	secure_wipe(ikm, sizeof(ikm));
	if (r < 0) {
		secure_wipe(out, LEVEL_KEY_SIZE);
		return error_set(reterr, r, "cannot derive the key of level '%.64s'", level);
	}
	return 0;
}

int
fscrypt_get_policy(int dirfd, uint8_t id[FSCRYPT_ID_SIZE])
{
	struct fscrypt_get_policy_ex_arg arg = { .policy_size = sizeof(arg.policy) };
	const struct fscrypt_policy_v2 *v2 = &arg.policy.v2;

	if (ioctl(dirfd, FS_IOC_GET_ENCRYPTION_POLICY_EX, &arg) < 0) {
		if (errno == ENODATA)
			return 0;
		/* ENOTTY: a filesystem without the ioctl at all. */
		return errno == ENOTTY ? -EOPNOTSUPP : -errno;
	}
	if (arg.policy.version != FSCRYPT_POLICY_V2 ||
	    v2->contents_encryption_mode != FSCRYPT_MODE_AES_256_XTS ||
	    v2->filenames_encryption_mode != FSCRYPT_MODE_AES_256_CTS ||
	    v2->flags != FSCRYPT_POLICY_FLAGS_PAD_32)
		return -EKEYREJECTED;
	memcpy(id, v2->master_key_identifier, FSCRYPT_ID_SIZE);
	return 1;
}

int
fscrypt_set_policy(int dirfd, const uint8_t id[FSCRYPT_ID_SIZE])
{
	struct fscrypt_policy_v2 p = {
		.version = FSCRYPT_POLICY_V2,
		.contents_encryption_mode = FSCRYPT_MODE_AES_256_XTS,
		.filenames_encryption_mode = FSCRYPT_MODE_AES_256_CTS,
		.flags = FSCRYPT_POLICY_FLAGS_PAD_32,
	};

	memcpy(p.master_key_identifier, id, FSCRYPT_ID_SIZE);
	if (ioctl(dirfd, FS_IOC_SET_ENCRYPTION_POLICY, &p) < 0)
		return errno == ENOTTY ? -EOPNOTSUPP : -errno;
	return 0;
}

int
fscrypt_add_key(int fd, const uint8_t key[LEVEL_KEY_SIZE], uint8_t id[FSCRYPT_ID_SIZE])
{
	/* The argument and the raw key after it, wiped whatever happens. */
	union {
		struct fscrypt_add_key_arg arg;
		uint8_t bytes[sizeof(struct fscrypt_add_key_arg) + LEVEL_KEY_SIZE];
	} u = { .arg = { .key_spec.type = FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER,
			 .raw_size = LEVEL_KEY_SIZE } };
	int r = 0;

	memcpy(u.arg.raw, key, LEVEL_KEY_SIZE);
	if (ioctl(fd, FS_IOC_ADD_ENCRYPTION_KEY, &u.arg) < 0)
		r = errno == ENOTTY ? -EOPNOTSUPP : -errno;
	else
		memcpy(id, u.arg.key_spec.u.identifier, FSCRYPT_ID_SIZE);
	secure_wipe(&u, sizeof(u));
	return r;
}

int
fscrypt_remove_key(int fd, const uint8_t id[FSCRYPT_ID_SIZE], bool all_users)
{
	struct fscrypt_remove_key_arg arg = { .key_spec.type = FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER };

	memcpy(arg.key_spec.u.identifier, id, FSCRYPT_ID_SIZE);
	if (ioctl(fd,
		  all_users ? FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS : FS_IOC_REMOVE_ENCRYPTION_KEY,
		  &arg) < 0)
		return -errno;
	if (arg.removal_status_flags & FSCRYPT_KEY_REMOVAL_STATUS_FLAG_FILES_BUSY)
		return 1;
	if (arg.removal_status_flags & FSCRYPT_KEY_REMOVAL_STATUS_FLAG_OTHER_USERS)
		return 2;
	return 0;
}

int
fscrypt_key_status(int fd, const uint8_t id[FSCRYPT_ID_SIZE])
{
	struct fscrypt_get_key_status_arg arg = { .key_spec.type =
							  FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER };

	memcpy(arg.key_spec.u.identifier, id, FSCRYPT_ID_SIZE);
	if (ioctl(fd, FS_IOC_GET_ENCRYPTION_KEY_STATUS, &arg) < 0)
		return -errno;
	return (int)arg.status;
}
