/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clip_exec_allow_tree(): the x bits an interpreter's library tree needs
 * to pass the exec check, set once by an administrator and again after
 * each package upgrade (doc/exec.md, "Deploying").
 *
 * The walk works on descriptors: each entry is opened O_PATH|O_NOFOLLOW
 * and everything (type, owner, mode, mount) is read from that descriptor,
 * so a symbolic link is never followed and the file whose mode changes is
 * the one that was looked at.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <clip/exec.h>

#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "exec-internal.h"

/* Deeper than any interpreter's library; each level holds a descriptor. */
#define TREE_DEPTH_MAX 128

/* Linux 6.6; the number is the same on every architecture. */
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif

#define STATX_WANT (STATX_TYPE | STATX_MODE | STATX_UID | STATX_MNT_ID)

struct walk {
	struct clip_ctx *ctx;
	unsigned flags;
	uid_t caller;
	struct clip_exec_tree_stats stats;
	/* The entry's path for messages: the tree as given, then the walk. */
	char path[PATH_MAX];
	size_t len;
	struct clip_error **reterr;
};

static const char *
shown(const struct walk *w, char *buf, size_t size)
{
	return exec_shown_name(w->path, -1, buf, size);
}

static int
statx_fd(int fd, struct statx *stx)
{
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_WANT, stx) <
	    0)
		return -errno;
	return 0;
}

static bool
same_mount(const struct statx *a, const struct statx *b)
{
	/* Before Linux 5.8 no mount id: another device is another mount. */
	if ((a->stx_mask & b->stx_mask & STATX_MNT_ID))
		return a->stx_mnt_id == b->stx_mnt_id;
	return a->stx_dev_major == b->stx_dev_major && a->stx_dev_minor == b->stx_dev_minor;
}

/* The x bit of each class that has its r bit. */
static mode_t
wanted_mode(mode_t mode)
{
	return mode | ((mode & 0444) >> 2);
}

/*
 * Why blessing this entry would let someone else's code pass the check,
 * or NULL. @want is the mode a file would get.
 */
static const char *
unsafe_reason(const struct walk *w, const struct statx *stx, mode_t want, char *buf, size_t size)
{
	mode_t mode = stx->stx_mode & 07777;

	if (stx->stx_uid != 0 && stx->stx_uid != w->caller)
		snprintf(buf, size, "owned by uid %u, who could change it", (unsigned)stx->stx_uid);
	else if (mode & S_IWOTH)
		snprintf(buf, size, "writable by others (mode %04o)", (unsigned)mode);
	else if (mode & S_IWGRP)
		snprintf(buf, size, "writable by its group (mode %04o)", (unsigned)mode);
	else if (S_ISREG(stx->stx_mode) && (mode & (S_ISUID | S_ISGID)) && want != mode)
		snprintf(buf, size, "set-user-ID or set-group-ID without x bits (mode %04o)",
			 (unsigned)mode);
	else
		return NULL;
	return buf;
}

static void
log_unsafe(struct walk *w, const char *what, const char *reason)
{
	char name[256];

	w->stats.unsafe++;
	log_warning(w->ctx, "%s: %s left as it is: %s", shown(w, name, sizeof(name)), what, reason);
}

static int
chmod_fd(int fd, mode_t mode)
{
	char proc[64];

	/* valgrind (3.19) does not know fchmodat2(). */
	if (!exec_under_valgrind()) {
		if (syscall(__NR_fchmodat2, fd, "", mode, AT_EMPTY_PATH) == 0)
			return 0;
		if (errno != ENOSYS && errno != EINVAL)
			return -errno;
	}
	/* Before Linux 6.6: an O_PATH descriptor is changed through /proc. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (chmod(proc, mode) < 0)
		return errno == ENOENT ? -EOPNOTSUPP : -errno;
	return 0;
}

static int
walk_file(struct walk *w, int fd, const struct statx *stx, bool noexec)
{
	mode_t mode = stx->stx_mode & 07777, want = wanted_mode(mode);
	char name[256], why[96];
	const char *reason;
	int r;

	w->stats.files++;
	reason = unsafe_reason(w, stx, want, why, sizeof(why));
	if (reason) {
		log_unsafe(w, "file", reason);
		return 0;
	}
	if (noexec)
		w->stats.noexec++;
	if (want == mode)
		return 0;
	w->stats.changed++;
	if (w->flags & CLIP_EXEC_TREE_CHECK) {
		log_info(w->ctx, "%s: mode %04o, would be %04o", shown(w, name, sizeof(name)),
			 (unsigned)mode, (unsigned)want);
		return 0;
	}
	r = chmod_fd(fd, want);
	if (r < 0)
		return error_set_errno(w->reterr, r, "cannot change the mode of %s",
				       shown(w, name, sizeof(name)));
	log_info(w->ctx, "%s: mode %04o -> %04o", shown(w, name, sizeof(name)), (unsigned)mode,
		 (unsigned)want);
	return 0;
}

static int
is_noexec(struct walk *w, int fd, bool *ret)
{
	char name[256];
	struct statvfs sv;

	if (fstatvfs(fd, &sv) < 0)
		return error_set_errno(w->reterr, -errno, "cannot read the mount of %s",
				       shown(w, name, sizeof(name)));
	*ret = sv.f_flag & ST_NOEXEC;
	if (*ret)
		log_warning(w->ctx,
			    "%s is on a file system mounted noexec: its files fail the check "
			    "whatever their mode",
			    shown(w, name, sizeof(name)));
	return 0;
}

static int walk_dir(struct walk *w, int pathfd, const struct statx *dir, bool noexec,
		    unsigned depth);

/* The entry @name of the directory @dfd, whose statx is @parent. */
static int
walk_entry(struct walk *w, int dfd, const char *name, const struct statx *parent, bool noexec,
	   unsigned depth)
{
	_cleanup_close_ int fd = -1;
	char shown_buf[256], why[96];
	const char *reason;
	struct statx stx;
	int r;

	fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* Removed while walking (an upgrade running): nothing to bless. */
		if (errno == ENOENT)
			return 0;
		return error_set_errno(w->reterr, -errno, "cannot open %s",
				       shown(w, shown_buf, sizeof(shown_buf)));
	}
	r = statx_fd(fd, &stx);
	if (r < 0)
		return error_set_errno(w->reterr, r, "cannot stat %s",
				       shown(w, shown_buf, sizeof(shown_buf)));
	if (S_ISREG(stx.stx_mode))
		return walk_file(w, fd, &stx, noexec);
	if (!S_ISDIR(stx.stx_mode)) {
		/* A link names a file that is blessed where it lives, if in a tree. */
		log_debug(w->ctx, "%s: not a regular file or a directory, left as it is",
			  shown(w, shown_buf, sizeof(shown_buf)));
		return 0;
	}
	if (!same_mount(&stx, parent)) {
		if (!(w->flags & CLIP_EXEC_TREE_CROSS_MOUNTS)) {
			w->stats.mounts++;
			log_notice(w->ctx, "%s: a mount point, not walked into",
				   shown(w, shown_buf, sizeof(shown_buf)));
			return 0;
		}
		r = is_noexec(w, fd, &noexec);
		if (r < 0)
			return r;
	}
	reason = unsafe_reason(w, &stx, stx.stx_mode & 07777, why, sizeof(why));
	if (reason) {
		log_unsafe(w, "directory (not walked)", reason);
		return 0;
	}
	return walk_dir(w, fd, &stx, noexec, depth + 1);
}

static int
walk_dir(struct walk *w, int pathfd, const struct statx *dir, bool noexec, unsigned depth)
{
	char name[256];
	size_t len = w->len;
	struct dirent *de;
	DIR *d;
	int fd, r = 0;

	if (depth > TREE_DEPTH_MAX)
		return error_set(w->reterr, -ELOOP, "%s: more than %d levels of directories",
				 shown(w, name, sizeof(name)), TREE_DEPTH_MAX);
	fd = openat(pathfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return error_set_errno(w->reterr, -errno, "cannot read the directory %s",
				       shown(w, name, sizeof(name)));
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	while (r == 0) {
		size_t n;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				r = error_set_errno(w->reterr, -errno,
						    "cannot read the directory %s",
						    shown(w, name, sizeof(name)));
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n = strlen(de->d_name);
		if (len + 1 + n >= sizeof(w->path)) {
			r = error_set(w->reterr, -ENAMETOOLONG, "%s: a name in it is too long",
				      shown(w, name, sizeof(name)));
			break;
		}
		w->path[len] = '/';
		memcpy(w->path + len + 1, de->d_name, n + 1);
		w->len = len + 1 + n;
		r = walk_entry(w, dirfd(d), de->d_name, dir, noexec, depth);
		w->path[len] = '\0';
		w->len = len;
	}
	closedir(d);
	return r;
}

/* The kernel's owner of files whose owner this user namespace does not map. */
static uid_t
overflow_uid(void)
{
	_cleanup_close_ int fd = open("/proc/sys/kernel/overflowuid", O_RDONLY | O_CLOEXEC);
	char buf[16] = "";
	unsigned long v;

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0 || sscanf(buf, "%lu", &v) != 1)
		return 65534;
	return (uid_t)v;
}

/*
 * Whoever may write to a directory above the tree can put another tree in
 * its place, unless the directory is sticky. Its owner must be root, the
 * caller, or unknown here (the overflow uid: a user namespace's view of
 * the host's /, /usr, /dev/shm).
 */
static const char *
parent_unsafe(const struct walk *w, const struct statx *stx, char *buf, size_t size)
{
	struct statx s = *stx;

	if (s.stx_mode & S_ISVTX)
		return NULL;
	if (s.stx_uid == overflow_uid())
		s.stx_uid = 0;
	return unsafe_reason(w, &s, s.stx_mode & 07777, buf, size);
}

static int
check_parents(struct walk *w, int rootfd)
{
	_cleanup_close_ int fd = -1;
	struct statx stx, up;
	char why[96], name[256];
	int r;

	r = statx_fd(rootfd, &stx);
	if (r < 0)
		return r;
	for (int i = 0; i < PATH_MAX / 2; i++) {
		int parent = openat(fd >= 0 ? fd : rootfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);

		if (parent < 0)
			return -errno;
		r = statx_fd(parent, &up);
		/* "/" is its own parent. */
		if (r < 0 || (up.stx_ino == stx.stx_ino && same_mount(&up, &stx))) {
			close(parent);
			return r;
		}
		if (fd >= 0)
			close(fd);
		fd = parent;
		stx = up;
		if (parent_unsafe(w, &up, why, sizeof(why))) {
			w->stats.unsafe++;
			log_warning(w->ctx, "%s: a directory above it is %s",
				    shown(w, name, sizeof(name)), why);
			return 0;
		}
	}
	return -ELOOP;
}

int
exec_allow_tree(struct clip_ctx *ctx, int dirfd, const char *path, unsigned flags,
		struct clip_exec_tree_stats *ret, struct clip_error **reterr)
{
	struct walk w = { .ctx = ctx, .flags = flags, .caller = geteuid(), .reterr = reterr };
	_cleanup_close_ int fd = -1;
	char name[256], why[96];
	const char *reason;
	struct statx stx;
	bool noexec;
	int r;

	w.len = strlen(path);
	memcpy(w.path, path, w.len + 1);
	/* Symbolic links in the path itself are the caller's choice (/usr/share/perl/5.36). */
	fd = openat(dirfd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		if (r == -ENOTDIR)
			return error_set(reterr, r, "%s is not a directory",
					 shown(&w, name, sizeof(name)));
		return error_set_errno(reterr, r, "cannot open the tree %s",
				       shown(&w, name, sizeof(name)));
	}
	r = statx_fd(fd, &stx);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot stat %s", shown(&w, name, sizeof(name)));
	r = check_parents(&w, fd);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot look above %s",
				       shown(&w, name, sizeof(name)));
	r = is_noexec(&w, fd, &noexec);
	if (r < 0)
		return r;
	reason = unsafe_reason(&w, &stx, stx.stx_mode & 07777, why, sizeof(why));
	if (reason)
		log_unsafe(&w, "directory (not walked)", reason);
	else {
		r = walk_dir(&w, fd, &stx, noexec, 0);
		if (r < 0)
			return r;
	}
	log_debug(ctx, "%s: %llu files, %llu %s, %llu unsafe, %llu on noexec, %llu mount points",
		  shown(&w, name, sizeof(name)), (unsigned long long)w.stats.files,
		  (unsigned long long)w.stats.changed,
		  flags & CLIP_EXEC_TREE_CHECK ? "to change" : "changed",
		  (unsigned long long)w.stats.unsafe, (unsigned long long)w.stats.noexec,
		  (unsigned long long)w.stats.mounts);
	if (ret)
		struct_copy_out(ret, &w.stats, sizeof(w.stats), sizeof(w.stats));
	if (w.stats.unsafe || w.stats.noexec)
		return 1;
	return (flags & CLIP_EXEC_TREE_CHECK) && w.stats.changed ? 1 : 0;
}

#define TREE_FLAGS (CLIP_EXEC_TREE_CHECK | CLIP_EXEC_TREE_CROSS_MOUNTS)

CLIP_EXPORT int
clip_exec_allow_tree(struct clip_ctx *ctx, int dirfd, const char *path, unsigned flags,
		     struct clip_exec_tree_stats *stats, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, dirfd >= 0 || dirfd == AT_FDCWD, api_return(-EBADF, reterr));
	ctx_assert_log_return(ctx, path && *path, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, (flags & ~TREE_FLAGS) == 0, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, strnlen(path, PATH_MAX) < PATH_MAX,
			      api_return(-ENAMETOOLONG, reterr));
	if (stats && stats->size < sizeof(*stats))
		return api_return(error_set(reterr, -EINVAL,
					    "struct clip_exec_tree_stats of %u bytes: at least %zu "
					    "expected",
					    stats->size, sizeof(*stats)),
				  reterr);
	if (stats && stats->size > STRUCT_SIZE_MAX)
		return api_return(error_set(reterr, -E2BIG,
					    "struct clip_exec_tree_stats of %u bytes: at most %d "
					    "accepted",
					    stats->size, STRUCT_SIZE_MAX),
				  reterr);

	return api_return(exec_allow_tree(ctx, dirfd, path, flags, stats, reterr), reterr);
}
