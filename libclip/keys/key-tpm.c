/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The "tpm" key provider: the context's master key sealed to PCRs in
 * STATE_DIR/mac.key.tpm (tpm-seal.c gives the blob's layout). Sealed at
 * first use when the caller may create a key, unsealed on each context's
 * first use of it (ctx_get_key() caches it in the keyring page). With no
 * TPM, the configured fallback decides: refuse, or the key file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys-internal.h"
#include "base/log.h"
#include "tpm/tpm-seal.h"
#include "base/util.h"

#define BLOB_FILE_NAME "mac.key.tpm"

#define PCR_LIST_MAX 128 /* all 24: 84 bytes */

/* "7, 11" */
static const char *
pcr_list(uint32_t mask, char buf[PCR_LIST_MAX])
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned pcr = 0; pcr < TPM_PCR_COUNT && n < PCR_LIST_MAX; pcr++)
		if (mask & (UINT32_C(1) << pcr))
			n += (size_t)snprintf(buf + n, PCR_LIST_MAX - n, "%s%u", n ? ", " : "",
					      pcr);
	return buf;
}

/* Hand a message obtained on the side to the caller (first message wins). */
static int
error_pass(struct clip_error **reterr, struct clip_error **error, int r)
{
	if (reterr && !*reterr)
		*reterr = steal_ptr(*error);
	return r;
}

/* The blob's bytes; -ENOENT (no message) when there is none. */
static int
blob_read(struct clip_ctx *ctx, int dirfd, uint8_t buf[TPM_BLOB_MAX], size_t *ret_size,
	  struct clip_error **reterr)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	fd = tpm_state_file_open(ctx, dirfd, BLOB_FILE_NAME, O_RDONLY, "sealed key", &st, reterr);
	if (fd < 0)
		return fd;
	if (st.st_size == 0 || st.st_size > TPM_BLOB_MAX)
		return error_set(reterr, -EBADMSG, "sealed key %s/%s has %lld bytes",
				 ctx->state_dir, BLOB_FILE_NAME, (long long)st.st_size);
	r = read_full(fd, buf, (size_t)st.st_size);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot read sealed key %s/%s", ctx->state_dir,
				       BLOB_FILE_NAME);
	*ret_size = (size_t)st.st_size;
	return 0;
}

/* Unseal the blob of the state directory into @key; -ENOENT when there is none. */
static int
unseal_file(struct clip_ctx *ctx, struct tpm *t, int dirfd, uint8_t key[CLIP_KEY_SIZE],
	    uint32_t *ret_pcrs, struct clip_error **reterr)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	uint8_t untrusted[TPM_BLOB_MAX];
	struct tpm_blob blob;
	char a[PCR_LIST_MAX], b[PCR_LIST_MAX];
	size_t size = 0;
	int r;

	r = blob_read(ctx, dirfd, untrusted, &size, reterr);
	if (r < 0)
		return r;
	r = tpm_blob_parse(untrusted, size, &blob, &e);
	if (r < 0)
		return error_set(reterr, r, "sealed key %s/%s is damaged: %s", ctx->state_dir,
				 BLOB_FILE_NAME, clip_error_get_message(e));
	r = tpm_unseal(t, &blob, key, reterr);
	if (r < 0)
		return r;
	if (blob.pcrs != tpm_seal_pcrs(ctx))
		log_warning(ctx,
			    "the key is sealed to PCR %s, the configuration says PCR %s: reseal "
			    "it (clip_tpm_seal_key(), clipctl tpm seal-key)",
			    pcr_list(blob.pcrs, a), pcr_list(tpm_seal_pcrs(ctx), b));
	if (ret_pcrs)
		*ret_pcrs = blob.pcrs;
	return 0;
}

/* Seal @key to the configured PCRs and write the blob (replacing one, or not). */
static int
seal_file(struct clip_ctx *ctx, struct tpm *t, int dirfd, const uint8_t key[CLIP_KEY_SIZE],
	  bool replace, struct clip_error **reterr)
{
	uint8_t blob[TPM_BLOB_MAX];
	size_t size;
	char list[PCR_LIST_MAX];
	int r;

	r = tpm_seal(t, tpm_seal_pcrs(ctx), key, blob, &size, reterr);
	if (r < 0)
		return r;
	r = write_file_atomic(dirfd, BLOB_FILE_NAME, blob, size, 0600, replace);
	if (r == -EEXIST)
		return r;
	if (r < 0)
		return error_set_errno(reterr, r, "cannot write sealed key %s/%s", ctx->state_dir,
				       BLOB_FILE_NAME);
	log_notice(ctx, "sealed the key to PCR %s of the TPM at '%s' in %s/%s",
		   pcr_list(tpm_seal_pcrs(ctx), list), t->tcti_conf, ctx->state_dir,
		   BLOB_FILE_NAME);
	return 0;
}

/* The state directory; a missing one means no key. */
static int
state_dir(struct clip_ctx *ctx, bool create, struct clip_error **reterr)
{
	int dirfd = ctx_open_state_dir(ctx, create, reterr);

	if (dirfd == -ENOENT)
		return error_set(reterr, -ENOKEY, "no key: state directory %s does not exist",
				 ctx->state_dir);
	return dirfd;
}

/* What each operation on the sealed key needs: the TPM, and the state directory's fd. */
static int
open_tpm_and_state(struct clip_ctx *ctx, struct tpm *t, bool create, struct clip_error **reterr)
{
	int r = tpm_open(ctx, t, reterr);

	return r < 0 ? r : state_dir(ctx, create, reterr);
}

static int
random_key(uint8_t key[CLIP_KEY_SIZE], struct clip_error **reterr)
{
	if (getrandom(key, CLIP_KEY_SIZE, 0) != CLIP_KEY_SIZE)
		return error_set(reterr, -EIO, "getrandom failed");
	return 0;
}

static int
no_tpm(struct clip_ctx *ctx, bool create, uint8_t key[CLIP_KEY_SIZE], struct clip_error *why,
       struct clip_error **reterr)
{
	if (tpm_fallback(ctx) != CLIP_TPM_FALLBACK_KEY_FILE)
		return error_set(reterr, -ENOKEY,
				 "%s: the tpm key provider refuses to work without a TPM "
				 "(fallback: refuse)",
				 clip_error_get_message(why));
	log_warning(ctx,
		    "%s: using the key file %s/mac.key instead, as configured (fallback: key "
		    "file); this key is NOT sealed to the boot state",
		    clip_error_get_message(why), ctx->state_dir);
	return key_provider_file.load(ctx, create, key, reterr);
}

static int
key_tpm_load(struct clip_ctx *ctx, bool create, uint8_t key[CLIP_KEY_SIZE],
	     struct clip_error **reterr)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	_cleanup_(tpm_close) struct tpm t = { 0 };
	_cleanup_close_ int dirfd = -1;
	int r;

	r = tpm_open(ctx, &t, &e);
	if (r == -ENODEV)
		return no_tpm(ctx, create, key, e, reterr);
	if (r < 0)
		return error_pass(reterr, &e, r);
	dirfd = state_dir(ctx, create, reterr);
	if (dirfd < 0)
		return dirfd;

	r = unseal_file(ctx, &t, dirfd, key, NULL, reterr);
	if (r != -ENOENT)
		return r;
	if (!create)
		return error_set(reterr, -ENOKEY, "no sealed key %s/%s", ctx->state_dir,
				 BLOB_FILE_NAME);
	r = random_key(key, reterr);
	if (r >= 0)
		r = seal_file(ctx, &t, dirfd, key, false, reterr);
	/* Another process sealed a key first: theirs is the key. */
	if (r == -EEXIST)
		r = unseal_file(ctx, &t, dirfd, key, NULL, reterr);
	return r;
}

const struct key_provider key_provider_tpm = {
	.name = "tpm",
	.load = key_tpm_load,
};

/* The key to seal for clip_tpm_seal_key(). */
static int
key_to_seal(struct clip_ctx *ctx, struct tpm *t, int dirfd, unsigned flags,
	    uint8_t key[CLIP_KEY_SIZE], struct clip_error **reterr)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	int r;

	if (flags & CLIP_TPM_SEAL_FROM_KEY_FILE)
		return key_provider_file.load(ctx, false, key, reterr);
	if (flags & CLIP_TPM_SEAL_NEW)
		return random_key(key, reterr);
	r = unseal_file(ctx, t, dirfd, key, NULL, &e);
	if (r == -ENOENT)
		return random_key(key, reterr);
	if (r == -EACCES || r == -EBADMSG)
		return error_set(reterr, r,
				 "%s; sealing a new key (CLIP_TPM_SEAL_NEW) replaces it, and "
				 "labels made with it stop verifying",
				 clip_error_get_message(e));
	return r < 0 ? error_pass(reterr, &e, r) : 0;
}

static int
seal_key(struct clip_ctx *ctx, unsigned flags, struct clip_error **reterr)
{
	_cleanup_(tpm_close) struct tpm t = { 0 };
	_cleanup_close_ int dirfd = -1;
	uint8_t key[CLIP_KEY_SIZE];
	int r;

	dirfd = open_tpm_and_state(ctx, &t, true, reterr);
	if (dirfd < 0)
		return dirfd;
	r = key_to_seal(ctx, &t, dirfd, flags, key, reterr);
	if (r >= 0)
		r = seal_file(ctx, &t, dirfd, key, true, reterr);
	secure_wipe(key, sizeof(key));
	if (r < 0)
		return r;
	/* The next use unseals what was just sealed. */
	ctx_forget_keys(ctx);
	return 0;
}

CLIP_EXPORT int
clip_tpm_seal_key(struct clip_ctx *ctx, unsigned flags, struct clip_error **reterr)
{
	const unsigned known = CLIP_TPM_SEAL_FROM_KEY_FILE | CLIP_TPM_SEAL_NEW;

	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, !(flags & ~known), api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, (flags & known) != known, api_return(-EINVAL, reterr));

	return api_return(seal_key(ctx, flags, reterr), reterr);
}

static int
check_key(struct clip_ctx *ctx, uint32_t *ret_pcrs, struct clip_error **reterr)
{
	_cleanup_(tpm_close) struct tpm t = { 0 };
	_cleanup_close_ int dirfd = -1;
	uint8_t key[CLIP_KEY_SIZE];
	int r;

	dirfd = open_tpm_and_state(ctx, &t, false, reterr);
	if (dirfd < 0)
		return dirfd;
	r = unseal_file(ctx, &t, dirfd, key, ret_pcrs, reterr);
	secure_wipe(key, sizeof(key));
	if (r == -ENOENT)
		return error_set(reterr, -ENOKEY, "no sealed key %s/%s", ctx->state_dir,
				 BLOB_FILE_NAME);
	return r;
}

CLIP_EXPORT int
clip_tpm_check_key(struct clip_ctx *ctx, uint32_t *ret_pcrs, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);

	return api_return(check_key(ctx, ret_pcrs, reterr), reterr);
}
