/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Mapping between libclip levels and the MLS part of SELinux contexts,
 * through libselinux. The conversions work whether or not SELinux is
 * running; the file functions need it enabled.
 *
 * See clip-selinux(3).
 */
#ifndef CLIP_SELINUX_H
#define CLIP_SELINUX_H

#ifdef __cplusplus
extern "C" {
#endif

struct clip_level;
struct clip_error;

/**
 * clip_selinux_context_get_level - the level of an SELinux context
 *
 * "user:role:type:s2:c1" gives s2:c1. When the MLS part is a range
 * "LOW-HIGH", the level is LOW (the current level of a subject, the level
 * of an object).
 *
 * @param context a full context, "user:role:type:mls"
 * @param ret where the level is stored; untouched on failure
 * @param reterr optional
 * @return 0, or -EINVAL (malformed context, no MLS part, or an MLS part
 *	   outside the level grammar), -ENOMEM.
 * @since 0.1
 */
int clip_selinux_context_get_level(const char *context, struct clip_level **ret,
				   struct clip_error **reterr);

/**
 * clip_selinux_context_set_level - replace the MLS part of a context
 *
 * @param context a full context, with or without an MLS part
 * @param level the level to write
 * @param ret where the new context (free() it) is stored
 * @param reterr optional
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_selinux_context_set_level(const char *context, const struct clip_level *level, char **ret,
				   struct clip_error **reterr);

/**
 * clip_selinux_is_enabled - whether SELinux is running on this host
 * @return 1 or 0.
 * @since 0.1
 */
int clip_selinux_is_enabled(void);

/**
 * clip_selinux_file_get_level - the level in a file's security.selinux
 *
 * @return 0, or -EOPNOTSUPP (SELinux not enabled), -EBADF, -ENODATA,
 *	   -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_selinux_file_get_level(int fd, struct clip_level **ret, struct clip_error **reterr);

/**
 * clip_selinux_file_set_level - write @level into a file's
 * security.selinux, keeping its user, role and type
 *
 * @return 0, or -EOPNOTSUPP (SELinux not enabled), -EBADF, -EPERM,
 *	   -EACCES, -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_selinux_file_set_level(int fd, const struct clip_level *level, struct clip_error **reterr);

#ifdef __cplusplus
}
#endif

#endif
