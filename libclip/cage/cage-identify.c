/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which cage is this process in? Asked by a compositor or a panel of a
 * client, answered from the kernel: the pid namespace of the process, read
 * through a pidfd (never through a pid, which a process that ended leaves
 * to the next one), compared with the pid namespaces of the running cages
 * of the registry (each init checked through its own pidfd) and with the
 * caller's. A cage cannot leave its pid namespace, nor make one that is
 * not below it: what it says or names itself plays no part.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <clip/cage.h>
#include <clip/level.h>

#include "cage-internal.h"
#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/log.h"
#include "base/test-hooks.h"

/* Linux 6.11: a namespace of a process, from its pidfd. */
#ifndef PIDFD_GET_PID_NAMESPACE
#define PIDFD_GET_PID_NAMESPACE _IO(0xFF, 5)
#endif
/* Linux 6.5: the peer of a UNIX socket as a pidfd, taken when it connected. */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* Nested pid namespaces go 32 deep at most (MAX_PID_NS_LEVEL). */
#define PID_NS_DEPTH_MAX 33

struct ns_id {
	dev_t dev;
	ino_t ino;
};

static int
ns_id_of(int fd, struct ns_id *ret)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	*ret = (struct ns_id){ st.st_dev, st.st_ino };
	return 0;
}

static bool
ns_id_eq(const struct ns_id *a, const struct ns_id *b)
{
	return a->dev == b->dev && a->ino == b->ino;
}

/* Whether the process of @pidfd still runs (a zombie holds its pid too): 0, -ESRCH, -EBADF. */
static int
pidfd_alive(int pidfd)
{
	if (cage_pidfd_signal(pidfd, 0) == 0 || errno == EPERM)
		return 0;
	return errno == ESRCH ? -ESRCH : errno == EBADF || errno == EINVAL ? -EBADF : -errno;
}

/*
 * The pid namespace of the process of @pidfd, as an fd: from the pidfd
 * itself, or (before Linux 6.11) from /proc, the pidfd then checked to be
 * still alive, so that the pid read was not taken over meanwhile.
 */
static int
pidfd_pid_ns(int pidfd)
{
	char path[64];
	pid_t pid;
	int fd, r;

	r = pidfd_alive(pidfd);
	if (r < 0)
		return r;
	fd = ioctl(pidfd, PIDFD_GET_PID_NAMESPACE, 0);
	if (fd >= 0)
		return fd;
	if (errno != ENOTTY && errno != EINVAL && errno != EOPNOTSUPP)
		return errno == ENOENT ? -ESRCH : -errno;
	pid = cage_pidfd_pid(pidfd);
	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	r = pidfd_alive(pidfd);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* A running cage of the registry and its pid namespace. */
struct known_cage {
	struct clip_cage *cage;
	struct ns_id ns;
};

/* The running cages of @ctx's registry, each with the pid namespace of its init. */
static int
known_cages(struct clip_ctx *ctx, struct known_cage **ret, size_t *ret_n,
	    struct clip_error **reterr)
{
	char **names = NULL;
	struct known_cage *k;
	size_t n = 0;
	int r;

	r = clip_cage_list(ctx, &names, reterr);
	if (r < 0)
		return r;
	k = calloc((size_t)r + 1, sizeof(*k));
	for (size_t i = 0; k && names[i]; i++) {
		struct clip_cage *c = NULL;
		int fd;

		/* One that stopped meanwhile is no answer. */
		if (clip_cage_attach(&c, ctx, names[i], NULL) < 0)
			continue;
		fd = pidfd_pid_ns(c->pidfd);
		if (fd < 0 || ns_id_of(fd, &k[n].ns) < 0) {
			if (fd >= 0)
				close(fd);
			clip_cage_unref(c);
			continue;
		}
		close(fd);
		k[n++].cage = c;
	}
	for (size_t i = 0; names[i]; i++)
		free(names[i]);
	free(names);
	if (!k)
		return -ENOMEM;
	*ret = k;
	*ret_n = n;
	return 0;
}

static int
identify(struct clip_ctx *ctx, int pidfd, char **ret_name, struct clip_level **ret_level,
	 unsigned *ret_flags, struct clip_error **reterr)
{
	struct known_cage *k = NULL;
	struct ns_id self, id = { 0 };
	size_t n = 0;
	int ns, r;

	{
		struct stat st;

		if (stat("/proc/self/ns/pid", &st) < 0)
			return error_set_errno(reterr, -errno,
					       "cannot read the caller's pid namespace");
		self = (struct ns_id){ st.st_dev, st.st_ino };
	}
	ns = pidfd_pid_ns(pidfd);
	if (ns == -ESRCH)
		return error_set(reterr, -ESRCH, "the process of pidfd %d has ended", pidfd);
	if (ns == -EBADF)
		return error_set(reterr, -EBADF, "fd %d is not a pidfd", pidfd);
	if (ns < 0)
		return error_set_errno(reterr, ns, "cannot read the pid namespace of pidfd %d",
				       pidfd);
	r = known_cages(ctx, &k, &n, reterr);
	/* Up from the process's pid namespace: the first that is a cage's or ours answers. */
	for (int depth = 0; r >= 0 && depth < PID_NS_DEPTH_MAX; depth++) {
		int parent;

		r = ns_id_of(ns, &id);
		if (r < 0)
			break;
		for (size_t i = 0; i < n; i++)
			if (ns_id_eq(&id, &k[i].ns)) {
				const struct clip_level *l = clip_cage_profile_get_level(
					clip_cage_get_profile(k[i].cage));

				if (ret_name && !(*ret_name = strdup(k[i].cage->profile->name))) {
					r = -ENOMEM;
					goto out;
				}
				if (ret_level)
					*ret_level =
						l ? clip_level_ref((struct clip_level *)l) : NULL;
				if (ret_flags)
					*ret_flags = depth ? CLIP_CAGE_IDENTITY_NESTED : 0;
				r = 1;
				goto out;
			}
		if (ns_id_eq(&id, &self)) {
			if (depth > 0)
				break; /* a namespace of the core's making, no cage's */
			if (ret_name)
				*ret_name = NULL;
			if (ret_level)
				*ret_level = NULL;
			if (ret_flags)
				*ret_flags = CLIP_CAGE_IDENTITY_CORE;
			r = 1;
			goto out;
		}
		parent = ioctl(ns, NS_GET_PARENT);
		if (parent < 0)
			break;
		close(ns);
		ns = parent;
	}
	if (r >= 0)
		r = error_set(reterr, -ENODATA,
			      "the process of pidfd %d is in no running cage of the registry, "
			      "and not in the caller's pid namespace",
			      pidfd);
out:
	close(ns);
	for (size_t i = 0; i < n; i++)
		clip_cage_unref(k[i].cage);
	free(k);
	/* The answer is about a process that was alive when its namespace was read. */
	return r < 0 ? r : 0;
}

CLIP_EXPORT int
clip_cage_identify_pidfd(struct clip_ctx *ctx, int pidfd, char **ret_name,
			 struct clip_level **ret_level, unsigned *ret_flags,
			 struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_ctx_assert_error(ctx, reterr);
	ctx_assert_log_return(
		ctx, pidfd >= 0,
		api_return(error_set(reterr, -EBADF, "%s: pidfd %d is negative", __func__, pidfd),
			   reterr));

	return api_return(identify(ctx, pidfd, ret_name, ret_level, ret_flags, reterr), reterr);
}

CLIP_EXPORT int
clip_cage_identify_pid(struct clip_ctx *ctx, int pid, char **ret_name,
		       struct clip_level **ret_level, unsigned *ret_flags,
		       struct clip_error **reterr)
{
	int fd, r;

	clip_assert_reterr(reterr);
	cage_ctx_assert_error(ctx, reterr);
	ctx_assert_log_return(
		ctx, pid > 0,
		api_return(error_set(reterr, -EINVAL, "%s: pid %d is not a pid", __func__, pid),
			   reterr));

	fd = cage_pidfd_open(pid);
	if (fd < 0)
		return api_return(errno == ESRCH
					  ? error_set(reterr, -ESRCH, "no process has pid %d", pid)
					  : error_set_errno(reterr, -errno,
							    "cannot open a pidfd of pid %d", pid),
				  reterr);
	r = identify(ctx, fd, ret_name, ret_level, ret_flags, reterr);
	close(fd);
	return api_return(r, reterr);
}

CLIP_EXPORT int
clip_cage_identify_socket(struct clip_ctx *ctx, int sock, char **ret_name,
			  struct clip_level **ret_level, unsigned *ret_flags,
			  struct clip_error **reterr)
{
	socklen_t len = sizeof(int);
	int fd = -1, r;

	clip_assert_reterr(reterr);
	cage_ctx_assert_error(ctx, reterr);
	ctx_assert_log_return(
		ctx, sock >= 0,
		api_return(error_set(reterr, -EBADF, "%s: socket %d is negative", __func__, sock),
			   reterr));

	/* The hook: the peer's pid as SO_PEERCRED gives it, looked up when asked. */
	if (test_hook_disabled("identify-pidfd")) {
		struct ucred cred;

		len = sizeof(cred);
		if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
			return api_return(-EBADF, reterr);
		fd = cage_pidfd_open(cred.pid);
		if (fd < 0)
			return api_return(-ESRCH, reterr);
	} else if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) < 0) {
		r = -errno;
		if (r == -ENOPROTOOPT)
			r = error_set(reterr, -EOPNOTSUPP,
				      "the kernel gives no SO_PEERPIDFD (Linux 6.5): no peer "
				      "to identify on socket %d",
				      sock);
		else if (r == -ESRCH)
			r = error_set(reterr, -ESRCH, "the peer of socket %d has ended", sock);
		else
			r = error_set_errno(reterr, r == -ENOTSOCK || r == -ENOTCONN ? -EBADF : r,
					    "socket %d has no peer to identify", sock);
		return api_return(r, reterr);
	}
	r = identify(ctx, fd, ret_name, ret_level, ret_flags, reterr);
	close(fd);
	return api_return(r, reterr);
}
