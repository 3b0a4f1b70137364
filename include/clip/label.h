/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tamper-evident file labels.
 *
 * A label is a level stored in an extended attribute of the file together
 * with an HMAC-SHA256, under the context's key, over the level and the
 * file's identity (filesystem, inode number, inode generation). A label
 * copied onto another file, edited offline or replayed from another file
 * fails verification with -EBADMSG. Everything works on file descriptors,
 * never on paths.
 *
 * See clip-label(3).
 */
#ifndef CLIP_LABEL_H
#define CLIP_LABEL_H

#ifdef __cplusplus
extern "C" {
#endif

struct clip_ctx;
struct clip_level;
struct clip_error;

/*
 * Use the "user.clip.label" attribute instead of "trusted.clip.label".
 * Any process that can write the file can write that attribute, so in
 * this mode integrity rests on the MAC alone.
 */
#define CLIP_LABEL_ROOTLESS (1u << 0)

/* Names of the attributes, for tools such as getfattr(1). */
#define CLIP_LABEL_XATTR "trusted.clip.label"
#define CLIP_LABEL_XATTR_ROOTLESS "user.clip.label"

/**
 * clip_label_set - label a file
 *
 * Loads the context's key, creating it when the provider allows.
 *
 * @param ctx a context
 * @param fd a regular file or directory, open for reading or writing (not
 *	  O_PATH)
 * @param level the level to write
 * @param flags 0 or CLIP_LABEL_ROOTLESS
 * @param reterr optional
 * @return 0, or -EINVAL (bad arguments, unknown flags), -EBADF (@fd is not
 *	   open, or is an O_PATH descriptor), -EMEDIUMTYPE (neither a regular
 *	   file nor a directory), -EOPNOTSUPP (the filesystem stores no such
 *	   attribute), -EPERM (no right to write the attribute; or the key
 *	   file or state directory is unsafe: see clip_ctx_set_key_provider()),
 *	   -EBADMSG (the key file has the wrong size), -EACCES, -ENOTDIR,
 *	   -ENAMETOOLONG (the state directory cannot be opened), -ENOKEY,
 *	   -ENOSPC, -EDQUOT, -EROFS, -EIO, -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_label_set(struct clip_ctx *ctx, int fd, const struct clip_level *level, unsigned flags,
		   struct clip_error **reterr);

/**
 * clip_label_get - read and verify a file's label
 *
 * There is no way to read a label without verifying it.
 *
 * @param ctx a context
 * @param fd as for clip_label_set()
 * @param flags 0 or CLIP_LABEL_ROOTLESS
 * @param ret where the verified level is stored; untouched on failure
 * @param reterr optional
 * @return 0, or -ENODATA (no label), -EBADMSG (malformed value, or a MAC
 *	   that does not match this file and this key), -ENOKEY (no key to
 *	   verify with), and the errors of clip_label_set().
 * @since 0.1
 */
int clip_label_get(struct clip_ctx *ctx, int fd, unsigned flags, struct clip_level **ret,
		   struct clip_error **reterr);

/**
 * clip_label_verify - verify a file's label
 *
 * @return 0 when the label is valid, or the errors of clip_label_get().
 * @since 0.1
 */
int clip_label_verify(struct clip_ctx *ctx, int fd, unsigned flags, struct clip_error **reterr);

/**
 * clip_label_remove - remove a file's label
 *
 * @return 0, or -ENODATA (no label), and the errors of clip_label_set()
 *	   but for -ENOKEY.
 * @since 0.1
 */
int clip_label_remove(struct clip_ctx *ctx, int fd, unsigned flags, struct clip_error **reterr);

#ifdef __cplusplus
}
#endif

#endif
