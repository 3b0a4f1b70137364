/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The "file" key provider, the default: the master key in
 * STATE_DIR/mac.key, 0600, owned by the caller, created at first use.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "keys-internal.h"

#define KEY_FILE_NAME "mac.key"

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
