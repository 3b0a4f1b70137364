/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "base/crypto.h"
#include "base/error.h"
#include "key.h"
#include "base/log.h"
#include "base/util.h"

#define KEY_FILE_NAME "mac.key"

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

static int
key_file_read(struct clip_ctx *ctx, int dirfd, uint8_t key[CLIP_KEY_SIZE],
	      struct clip_error **reterr)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	fd = openat(dirfd, KEY_FILE_NAME, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP)
		return error_set(reterr, -EPERM, "key file %s/%s is a symbolic link",
				 ctx->state_dir, KEY_FILE_NAME);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return error_set(reterr, -EPERM, "key file %s/%s is not a regular file",
				 ctx->state_dir, KEY_FILE_NAME);
	if (st.st_uid != geteuid())
		return error_set(reterr, -EPERM, "key file %s/%s is owned by uid %u, not by uid %u",
				 ctx->state_dir, KEY_FILE_NAME, (unsigned)st.st_uid,
				 (unsigned)geteuid());
	if (st.st_mode & 077)
		return error_set(reterr, -EPERM,
				 "key file %s/%s has mode %04o: refusing a key readable or "
				 "writable by others than its owner (want 0600)",
				 ctx->state_dir, KEY_FILE_NAME, (unsigned)(st.st_mode & 07777));
	if (st.st_size != CLIP_KEY_SIZE)
		return error_set(reterr, -EBADMSG, "key file %s/%s has %lld bytes, not %d",
				 ctx->state_dir, KEY_FILE_NAME, (long long)st.st_size,
				 CLIP_KEY_SIZE);
	r = read_full(fd, key, CLIP_KEY_SIZE);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot read key file %s/%s", ctx->state_dir,
				       KEY_FILE_NAME);
	return 0;
}

/*
 * A new key, written atomically (write_file_atomic()): no reader ever sees
 * a partial key. Losing a creation race to another process is fine: the
 * caller reads the winner's key.
 */
static int
key_file_create(struct clip_ctx *ctx, int dirfd, struct clip_error **reterr)
{
	uint8_t key[CLIP_KEY_SIZE];
	int r;

	if (getrandom(key, sizeof(key), 0) != sizeof(key))
		return error_set(reterr, -EIO, "getrandom failed");
	r = write_file_atomic(dirfd, KEY_FILE_NAME, key, sizeof(key), 0600, false);
	secure_wipe(key, sizeof(key));
	if (r == -EEXIST)
		return 0;
	if (r < 0)
		return error_set_errno(reterr, r, "cannot write the key file %s/%s", ctx->state_dir,
				       KEY_FILE_NAME);
	log_notice(ctx, "created a new key %s/%s", ctx->state_dir, KEY_FILE_NAME);
	return 0;
}

static int
key_file_load(struct clip_ctx *ctx, bool create, uint8_t key[CLIP_KEY_SIZE],
	      struct clip_error **reterr)
{
	_cleanup_close_ int dirfd = -1;
	int r;

	dirfd = ctx_open_state_dir(ctx, create, reterr);
	if (dirfd == -ENOENT)
		return error_set(reterr, -ENOKEY, "no key: state directory %s does not exist",
				 ctx->state_dir);
	if (dirfd < 0)
		return dirfd;

	r = key_file_read(ctx, dirfd, key, reterr);
	if (r == -ENOENT && create) {
		r = key_file_create(ctx, dirfd, reterr);
		if (r < 0)
			return r;
		r = key_file_read(ctx, dirfd, key, reterr);
	}
	if (r == -ENOENT)
		return error_set(reterr, -ENOKEY, "no key file %s/%s", ctx->state_dir,
				 KEY_FILE_NAME);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot open key file %s/%s", ctx->state_dir,
				       KEY_FILE_NAME);
	return 0;
}

const struct key_provider key_provider_file = {
	.name = "file",
	.load = key_file_load,
};

static const struct key_provider *const providers[] = {
	&key_provider_file,
	&key_provider_tpm,
};

const struct key_provider *
key_provider_find(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(providers); i++)
		if (strcmp(providers[i]->name, name) == 0)
			return providers[i];
	return NULL;
}
