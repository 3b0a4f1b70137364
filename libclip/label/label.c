/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tamper-evident file labels; doc/labels.md explains the choices.
 *
 * Value: "v1 LEVEL MAC", MAC = HMAC-SHA256(label key, identity || level)
 * where the identity binds the value to one inode of one filesystem, so
 * that a value moved to any other file stops verifying.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>

#include <clip/label.h>
#include <clip/level.h>

#include "base/macro.h"
#include "base/crypto.h"
#include "base/ctx-internal.h"
#include "base/error.h"
#include "keys/key.h"
#include "label-internal.h"
#include "lsm/lsm.h"
#include "base/log.h"
#include "base/util.h"
#include "base/test-hooks.h"
#include "level/level.h"

#define LABEL_VERSION_PREFIX "v1 "
#define LABEL_DOMAIN "libclip label v1"

/* What binds a label to one file. */
struct file_identity {
	uint64_t fs_type;
	uint32_t fsid[2];
	uint64_t ino;
	uint32_t generation;
	bool has_generation;
};

static const char *
xattr_name(unsigned flags)
{
	return (flags & CLIP_LABEL_ROOTLESS) ? CLIP_LABEL_XATTR_ROOTLESS : CLIP_LABEL_XATTR;
}

int
label_value_format(const struct clip_level *level, const uint8_t mac[LABEL_MAC_SIZE],
		   char out[LABEL_VALUE_MAX])
{
	_cleanup_free_ char *text = NULL;
	char hex[2 * LABEL_MAC_SIZE + 1];
	int r, n;

	r = clip_level_format(level, &text);
	if (r < 0)
		return r;
	hex_encode(mac, LABEL_MAC_SIZE, hex);
	n = snprintf(out, LABEL_VALUE_MAX, LABEL_VERSION_PREFIX "%s %s", text, hex);
	if (n < 0 || n >= LABEL_VALUE_MAX)
		return -E2BIG;
	return n;
}

int
label_value_parse(const char *untrusted_value, size_t size, struct clip_level **ret_level,
		  uint8_t ret_mac[LABEL_MAC_SIZE], struct clip_error **reterr)
{
	_cleanup_(clip_level_unrefp) struct clip_level *level = NULL;
	char canonical[LEVEL_FORMAT_MAX];
	const size_t prefix = strlen(LABEL_VERSION_PREFIX), hexlen = 2 * LABEL_MAC_SIZE;
	char text[LABEL_VALUE_MAX];
	size_t level_len;
	int r;

	if (size < prefix || memcmp(untrusted_value, "v", 1) != 0)
		return error_set(reterr, -EBADMSG, "label value is not in a known format");
	if (memcmp(untrusted_value, LABEL_VERSION_PREFIX, prefix) != 0)
		return error_set(reterr, -EBADMSG, "label value has an unsupported format version");
	if (size >= LABEL_VALUE_MAX)
		return error_set(reterr, -EBADMSG, "label value is too long (%zu bytes)", size);
	if (size < prefix + 2 + hexlen || untrusted_value[size - hexlen - 1] != ' ')
		return error_set(reterr, -EBADMSG, "label value is truncated or malformed");
	level_len = size - prefix - hexlen - 1;
	if (memchr(untrusted_value, '\0', size))
		return error_set(reterr, -EBADMSG, "label value contains a NUL byte");
	if (hex_decode(untrusted_value + size - hexlen, LABEL_MAC_SIZE, ret_mac) < 0)
		return error_set(reterr, -EBADMSG, "label MAC is not %zu lowercase hex digits",
				 hexlen);

	memcpy(text, untrusted_value + prefix, level_len);
	text[level_len] = '\0';
	r = clip_level_parse(&level, text, NULL);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return error_set(reterr, -EBADMSG, "label level is malformed");
	/* Only the canonical text was signed; anything else is an edit. */
	if (level_format_buf(level, canonical) != level_len ||
	    memcmp(canonical, text, level_len) != 0)
		return error_set(reterr, -EBADMSG, "label level is not in canonical form");
	*ret_level = steal_ptr(level);
	return 0;
}

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x4000U /* Linux 6.8 */
#endif

/* Only regular files and directories carry labels. */
static int
file_check_type(int fd, struct statx *st, struct clip_error **reterr)
{
	if (statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_INO | STATX_MNT_ID_UNIQUE, st) < 0)
		return error_set_errno(reterr, -errno, "cannot stat file descriptor %d", fd);
	if (!S_ISREG(st->stx_mode) && !S_ISDIR(st->stx_mode))
		return error_set(reterr, -EMEDIUMTYPE,
				 "only regular files and directories carry labels");
	return 0;
}

static int
file_check(int fd, struct statx *st, struct clip_error **reterr)
{
	int r;

	r = fd_is_opath(fd);
	if (r < 0)
		return error_set_errno(reterr, r, "bad file descriptor %d", fd);
	if (r > 0)
		return error_set(reterr, -EBADF,
				 "file descriptor %d is an O_PATH descriptor: open the file "
				 "for reading to label it",
				 fd);
	return file_check_type(fd, st, reterr);
}

/*
 * File systems whose f_type and f_fsid belong to the superblock, so to
 * every file of a mount (not btrfs, whose f_fsid depends on the subvolume
 * of the file asked about). ext4's f_fsid follows its UUID, which root can
 * change while mounted (EXT4_IOC_SETFSUUID): a process that saw the mount
 * before keeps the old identity, and refuses what is labelled under the
 * new one, never the other way round (doc/labels.md).
 */
static bool
fs_identity_per_mount(uint64_t fs_type)
{
	return fs_type == EXT4_SUPER_MAGIC || fs_type == XFS_SUPER_MAGIC || fs_type == TMPFS_MAGIC;
}

/*
 * A mount's file system identity as this context saw it: its unique mount
 * id (STATX_MNT_ID_UNIQUE) is never reused while the system runs, and its
 * superblock never changes, so the fstatfs() it saves is a quarter of a
 * verification (issue 19).
 */
static bool
fs_seen_find(struct clip_ctx *ctx, const struct statx *st, struct file_identity *id)
{
	if (!(st->stx_mask & STATX_MNT_ID_UNIQUE))
		return false;
	for (size_t i = 0; i < ELEMENTSOF(ctx->fs_seen); i++)
		if (ctx->fs_seen[i].mnt_id == st->stx_mnt_id && st->stx_mnt_id != 0) {
			id->fs_type = ctx->fs_seen[i].fs_type;
			memcpy(id->fsid, ctx->fs_seen[i].fsid, sizeof(id->fsid));
			return true;
		}
	return false;
}

static void
fs_seen_add(struct clip_ctx *ctx, const struct statx *st, const struct file_identity *id)
{
	unsigned i;

	if (!(st->stx_mask & STATX_MNT_ID_UNIQUE) || !fs_identity_per_mount(id->fs_type))
		return;
	i = ctx->fs_seen_next++ % ELEMENTSOF(ctx->fs_seen);
	ctx->fs_seen[i].mnt_id = st->stx_mnt_id;
	ctx->fs_seen[i].fs_type = id->fs_type;
	memcpy(ctx->fs_seen[i].fsid, id->fsid, sizeof(id->fsid));
}

static int
file_identity(struct clip_ctx *ctx, int fd, const struct statx *st, struct file_identity *id,
	      struct clip_error **reterr)
{
	struct statfs sfs;
	int gen = 0;

	*id = (struct file_identity){ .ino = st->stx_ino };
	if (!fs_seen_find(ctx, st, id)) {
		if (fstatfs(fd, &sfs) < 0)
			return error_set_errno(reterr, -errno, "cannot stat the file system");
		id->fs_type = (uint64_t)sfs.f_type;
		memcpy(id->fsid, &sfs.f_fsid, sizeof(id->fsid));
		fs_seen_add(ctx, st, id);
	}
	/* Not every filesystem has generations (tmpfs does not): doc/labels.md. */
	if (ioctl(fd, FS_IOC_GETVERSION, &gen) == 0) {
		id->generation = (uint32_t)gen;
		id->has_generation = true;
	}
	return 0;
}

static int
label_mac(struct clip_ctx *ctx, const struct file_identity *id, unsigned flags,
	  const char *level_text, bool create, uint8_t mac[LABEL_MAC_SIZE],
	  struct clip_error **reterr)
{
	uint8_t data[LABEL_VALUE_MAX + 128];
	struct buf b = { .data = data, .max = sizeof(data) };
	size_t len = strlen(level_text);

	/* Fixed-width fields, then the only variable one, length-prefixed. */
	buf_put(&b, LABEL_DOMAIN, sizeof(LABEL_DOMAIN));
	buf_put_u8(&b, (flags & CLIP_LABEL_ROOTLESS) ? 1 : 0);
	buf_put_u64(&b, id->fs_type);
	buf_put_u32(&b, id->fsid[0]);
	buf_put_u32(&b, id->fsid[1]);
	buf_put_u64(&b, id->ino);
	buf_put_u8(&b, id->has_generation);
	buf_put_u32(&b, id->generation);
	buf_put_u32(&b, (uint32_t)len);
	buf_put(&b, level_text, len);
	if (b.overflow)
		return -E2BIG;
	return ctx_mac(ctx, KEY_PURPOSE_LABEL, create, b.data, b.size, mac, reterr);
}

/*
 * The BPF LSM learns a file's level from here only: once the library has
 * written the label, or verified it (doc/lsm.md). A label that no longer
 * verifies leaves the last verified level in place: the stricter rule for
 * a file someone tampered with. A verification asks whether the LSM is
 * loaded as this process saw it within the second (lsm_active_recently());
 * a label set or removed, rare, and changing what the kernel should know,
 * asks now (@verified false).
 */
static void
label_to_lsm(struct clip_ctx *ctx, int fd, const struct clip_level *level, bool verified)
{
	int r;

	if (test_hook_disabled("lsm-files") || !(verified ? lsm_active_recently() : lsm_active()))
		return;
	r = level ? lsm_inode_set(fd, level) : lsm_inode_forget(fd);
	if (r < 0)
		log_debug(ctx, "the BPF LSM does not learn the level of fd %d: %s", fd,
			  strerror(-r));
}

static int
label_set(struct clip_ctx *ctx, int fd, const struct clip_level *level, unsigned flags,
	  struct clip_error **reterr)
{
	_cleanup_free_ char *text = NULL;
	struct file_identity id;
	uint8_t mac[LABEL_MAC_SIZE];
	char value[LABEL_VALUE_MAX];
	struct statx st;
	int r, n;

	r = file_check(fd, &st, reterr);
	if (r < 0)
		return r;
	r = file_identity(ctx, fd, &st, &id, reterr);
	if (r < 0)
		return r;
	r = clip_level_format(level, &text);
	if (r < 0)
		return r;
	r = label_mac(ctx, &id, flags, text, true, mac, reterr);
	if (r < 0)
		return r;
	n = label_value_format(level, mac, value);
	if (n < 0)
		return error_set(reterr, n, "label value too long");
	if (fsetxattr(fd, xattr_name(flags), value, (size_t)n, 0) < 0) {
		r = -errno;
		if (r == -ENOTSUP)
			return error_set(reterr, -EOPNOTSUPP,
					 "the file system does not store %s attributes",
					 xattr_name(flags));
		if (r == -EPERM && !(flags & CLIP_LABEL_ROOTLESS))
			return error_set(reterr, -EPERM,
					 "writing %s needs CAP_SYS_ADMIN in the initial user "
					 "namespace (use rootless mode otherwise)",
					 xattr_name(flags));
		return error_set_errno(reterr, r, "cannot write %s", xattr_name(flags));
	}
	log_debug(ctx, "labelled inode %llu as %s (%s)", (unsigned long long)st.stx_ino, text,
		  xattr_name(flags));
	label_to_lsm(ctx, fd, level, false);
	return 0;
}

static int
label_get(struct clip_ctx *ctx, int fd, unsigned flags, struct clip_level **ret,
	  struct clip_error **reterr)
{
	_cleanup_(clip_level_unrefp) struct clip_level *level = NULL;
	char untrusted_value[LABEL_VALUE_MAX], text[LABEL_VALUE_MAX];
	uint8_t untrusted_mac[LABEL_MAC_SIZE], mac[LABEL_MAC_SIZE];
	struct file_identity id;
	struct statx st;
	size_t level_len;
	ssize_t n;
	int r, k;

	/*
	 * The value first, and the descriptor's checks after: the kernel refuses
	 * the attributes of an O_PATH descriptor (EBADF), so fd_is_opath() runs
	 * only to say why a read failed, one system call less per verification
	 * (issue 19). The type is checked either way.
	 */
	n = fgetxattr(fd, xattr_name(flags), untrusted_value, sizeof(untrusted_value));
	if (n < 0) {
		r = -errno;
		k = file_check(fd, &st, reterr);
		if (k < 0)
			return k;
		if (r == -ENODATA)
			return error_set(reterr, -ENODATA, "no label (%s)", xattr_name(flags));
		if (r == -ERANGE)
			return error_set(reterr, -EBADMSG, "label value is too long");
		if (r == -ENOTSUP)
			return error_set(reterr, -EOPNOTSUPP,
					 "the file system does not store %s attributes",
					 xattr_name(flags));
		return error_set_errno(reterr, r, "cannot read %s", xattr_name(flags));
	}
	r = file_check_type(fd, &st, reterr);
	if (r < 0)
		return r;
	r = label_value_parse(untrusted_value, (size_t)n, &level, untrusted_mac, reterr);
	if (r < 0)
		return r;
	r = file_identity(ctx, fd, &st, &id, reterr);
	if (r < 0)
		return r;
	/* The level's text as stored: label_value_parse() checked it is the canonical one. */
	level_len = (size_t)n - strlen(LABEL_VERSION_PREFIX) - 2 * LABEL_MAC_SIZE - 1;
	memcpy(text, untrusted_value + strlen(LABEL_VERSION_PREFIX), level_len);
	text[level_len] = '\0';
	r = label_mac(ctx, &id, flags, text, false, mac, reterr);
	if (r < 0)
		return r;
	if (!crypto_equal(mac, untrusted_mac, sizeof(mac)) && !test_hook_disabled("label-mac")) {
		log_warning(ctx, "label of inode %llu does not verify",
			    (unsigned long long)st.stx_ino);
		return error_set(reterr, -EBADMSG,
				 "label does not verify: it was copied from another file, "
				 "edited, or made with another key");
	}
	label_to_lsm(ctx, fd, level, true);
	*ret = steal_ptr(level);
	return 0;
}

CLIP_EXPORT int
clip_label_set(struct clip_ctx *ctx, int fd, const struct clip_level *level, unsigned flags,
	       struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, fd >= 0, api_return(-EBADF, reterr));
	ctx_assert_log_return(ctx, level, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, (flags & ~CLIP_LABEL_ROOTLESS) == 0,
			      api_return(-EINVAL, reterr));

	return api_return(label_set(ctx, fd, level, flags, reterr), reterr);
}

CLIP_EXPORT int
clip_label_get(struct clip_ctx *ctx, int fd, unsigned flags, struct clip_level **ret,
	       struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, fd >= 0, api_return(-EBADF, reterr));
	ctx_assert_log_return(ctx, ret, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, (flags & ~CLIP_LABEL_ROOTLESS) == 0,
			      api_return(-EINVAL, reterr));

	return api_return(label_get(ctx, fd, flags, ret, reterr), reterr);
}

CLIP_EXPORT int
clip_label_verify(struct clip_ctx *ctx, int fd, unsigned flags, struct clip_error **reterr)
{
	_cleanup_(clip_level_unrefp) struct clip_level *level = NULL;

	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, fd >= 0, api_return(-EBADF, reterr));
	ctx_assert_log_return(ctx, (flags & ~CLIP_LABEL_ROOTLESS) == 0,
			      api_return(-EINVAL, reterr));

	return api_return(label_get(ctx, fd, flags, &level, reterr), reterr);
}

static int
label_remove(struct clip_ctx *ctx, int fd, unsigned flags, struct clip_error **reterr)
{
	struct statx st;
	int r;

	r = file_check(fd, &st, reterr);
	if (r < 0)
		return r;
	if (fremovexattr(fd, xattr_name(flags)) < 0) {
		r = -errno;
		if (r == -ENODATA)
			return error_set(reterr, -ENODATA, "no label (%s)", xattr_name(flags));
		if (r == -ENOTSUP)
			return error_set(reterr, -EOPNOTSUPP,
					 "the file system does not store %s attributes",
					 xattr_name(flags));
		return error_set_errno(reterr, r, "cannot remove %s", xattr_name(flags));
	}
	label_to_lsm(ctx, fd, NULL, false);
	return 0;
}

CLIP_EXPORT int
clip_label_remove(struct clip_ctx *ctx, int fd, unsigned flags, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, fd >= 0, api_return(-EBADF, reterr));
	ctx_assert_log_return(ctx, (flags & ~CLIP_LABEL_ROOTLESS) == 0,
			      api_return(-EINVAL, reterr));

	return api_return(label_remove(ctx, fd, flags, reterr), reterr);
}
