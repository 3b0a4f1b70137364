/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The descriptors a cage hands the mediator, which the cage controls
 * (doc/transfer.md, "Descriptors from a cage"). Two rules keep one cage
 * from stopping the loop that serves all of them:
 *
 * - A document is refused at once unless it is a regular file, named by
 *   what it really is ("an epoll instance", "a TCP socket"), before the
 *   audit, the policy or a worker sees it. The check never waits on the
 *   file: statx() with AT_STATX_DONT_SYNC answers from the inode in memory
 *   (FUSE, NFS, CIFS and Ceph honour it), and /proc/self/fd/N is a name,
 *   not a file system call.
 *
 * - The loop never closes a descriptor a cage handed it (a document, a
 *   connection whose queue may hold more of them): close() of a TCP
 *   socket with SO_LINGER and unsent data waits for the linger time, a
 *   FUSE file's flush waits for its server. Closing threads do it: each
 *   socket is defused first (SO_LINGER {1, 0}: reset, no wait; a UNIX
 *   socket is shut down and the descriptors queued in it are taken out and
 *   defused the same way, a few levels deep), then closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/test-hooks.h"
#include "transfer-internal.h"
#include "base/util.h"

/* Closing threads, at most; beyond, closes wait in a queue. */
#define CLOSERS_MAX 4
/* Descriptors waiting for a closing thread; beyond, closed on the loop (logged). */
#define CLOSE_QUEUE_MAX 4096
/* How deep descriptors queued in a UNIX socket are taken out, and how many messages. */

struct closer {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int queue[CLOSE_QUEUE_MAX];
	unsigned head, count;
	pthread_t threads[CLOSERS_MAX];
	unsigned n_threads, n_idle;
	bool stopping, overflow_logged;
};

/* What an anonymous inode is, from its name in /proc/self/fd. */
static const char *
anon_kind(const char *link)
{
	static const struct {
		const char *name, *kind;
	} kinds[] = {
		{ "anon_inode:[eventpoll]", "an epoll instance" },
		{ "anon_inode:[eventfd]", "an eventfd" },
		{ "anon_inode:[signalfd]", "a signalfd" },
		{ "anon_inode:[timerfd]", "a timerfd" },
		{ "anon_inode:inotify", "an inotify instance" },
		{ "anon_inode:[fanotify]", "a fanotify instance" },
		{ "anon_inode:[pidfd]", "a pidfd" },
		{ "pidfd:", "a pidfd" },
		{ "anon_inode:[io_uring]", "an io_uring instance" },
		{ "anon_inode:[userfaultfd]", "a userfaultfd" },
		{ "anon_inode:[perf_event]", "a perf event" },
		{ "anon_inode:bpf", "a BPF object" },
		{ "anon_inode:[pipe]", "a pipe" },
		{ "pipe:", "a pipe" },
		{ "socket:", "a socket" },
	};

	for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
		if (strncmp(link, kinds[i].name, strlen(kinds[i].name)) == 0)
			return kinds[i].kind;
	return NULL;
}

static const char *
socket_kind(int fd)
{
	int domain = 0, type = 0;
	socklen_t len = sizeof(domain);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0)
		return "a socket";
	len = sizeof(type);
	(void)getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len);
	if (domain == AF_UNIX)
		return "a UNIX socket";
	if ((domain == AF_INET || domain == AF_INET6) && type == SOCK_STREAM)
		return "a TCP socket";
	if ((domain == AF_INET || domain == AF_INET6) && type == SOCK_DGRAM)
		return "a UDP socket";
	if (domain == AF_NETLINK)
		return "a netlink socket";
	return "a socket";
}

const char *
transfer_fd_kind(int fd, unsigned mode)
{
	char proc[64], link[128] = "";
	const char *kind = NULL;
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = '\0';
	switch (mode & S_IFMT) {
	case S_IFREG:
		/* A regular file is on a path; a pidfd of pidfs looks like one, but is not. */
		if (n <= 0 || link[0] == '/')
			return NULL;
		kind = anon_kind(link);
		break;
	case S_IFDIR:
		kind = "a directory";
		break;
	case S_IFSOCK:
		kind = socket_kind(fd);
		break;
	case S_IFIFO:
		kind = "a pipe or FIFO";
		break;
	case S_IFCHR:
		kind = "a character device";
		break;
	case S_IFBLK:
		kind = "a block device";
		break;
	case S_IFLNK:
		kind = "a symbolic link";
		break;
	default:
		/* No type: an anonymous inode (epoll, eventfd, pidfd...). */
		kind = n > 0 ? anon_kind(link) : NULL;
		break;
	}
	return kind ? kind : "not a regular file";
}

int
mediator_doc_check(int fd, char *why, size_t size)
{
	struct statx stx = { 0 };
	const char *kind;

	if (test_hook_disabled("mediator-fd-type"))
		return 0;
	/* The type of an inode never changes: the cached one is the truth. */
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &stx) < 0) {
		snprintf(why, size, "the document's descriptor cannot be examined: %s",
			 strerror(errno));
		return -EBADF;
	}
	kind = transfer_fd_kind(fd, stx.stx_mode);
	if (!kind)
		return 0;
	snprintf(why, size, "the document is %s: only regular files are transferred", kind);
	return -EMEDIUMTYPE;
}

static void *
closer_run(void *userdata)
{
	struct closer *cl = userdata;

	/* Named, so that one is told from a worker (tests/unit/test-mediator.c). */
	(void)prctl(PR_SET_NAME, "clip-closer");
	pthread_mutex_lock(&cl->lock);
	for (;;) {
		int fd;

		while (cl->count == 0 && !cl->stopping) {
			cl->n_idle++;
			pthread_cond_wait(&cl->cond, &cl->lock);
			cl->n_idle--;
		}
		if (cl->count == 0)
			break;
		fd = cl->queue[cl->head];
		cl->head = (cl->head + 1) % CLOSE_QUEUE_MAX;
		cl->count--;
		pthread_mutex_unlock(&cl->lock);
		proto_fd_defuse(fd);
		close(fd);
		pthread_mutex_lock(&cl->lock);
	}
	pthread_mutex_unlock(&cl->lock);
	return NULL;
}

/* A closing thread more, when none is idle: false when none can start. */
static bool
closer_grow(struct closer *cl)
{
	sigset_t all, old;
	int r;

	if (cl->n_idle > 0 || cl->n_threads == CLOSERS_MAX)
		return cl->n_threads > 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&cl->threads[cl->n_threads], NULL, closer_run, cl);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0)
		cl->n_threads++;
	return cl->n_threads > 0;
}

void
mediator_close_untrusted(struct clip_mediator *m, int fd)
{
	struct closer *cl;

	if (fd < 0)
		return;
	if (test_hook_disabled("mediator-fd-close")) {
		close(fd);
		return;
	}
	/* A forked child has no closing thread (and must not take their lock). */
	if (getpid() != m->pid)
		goto inline_close;
	if (!m->closer) {
		cl = calloc(1, sizeof(*cl));
		if (!cl)
			goto inline_close;
		pthread_mutex_init(&cl->lock, NULL);
		pthread_cond_init(&cl->cond, NULL);
		m->closer = cl;
	}
	cl = m->closer;
	pthread_mutex_lock(&cl->lock);
	if (cl->count < CLOSE_QUEUE_MAX && closer_grow(cl)) {
		cl->queue[(cl->head + cl->count) % CLOSE_QUEUE_MAX] = fd;
		cl->count++;
		pthread_cond_signal(&cl->cond);
		pthread_mutex_unlock(&cl->lock);
		return;
	}
	if (!cl->overflow_logged)
		log_err(m->ctx, "the closing threads are all stuck, closing on the loop");
	cl->overflow_logged = true;
	pthread_mutex_unlock(&cl->lock);
inline_close:
	proto_fd_defuse(fd);
	close(fd);
}

void
mediator_closer_stop(struct clip_mediator *m)
{
	struct closer *cl = m->closer;

	if (!cl)
		return;
	m->closer = NULL;
	if (getpid() != m->pid) {
		/* A forked child: the threads (and the lock's state) are the parent's. */
		free(cl);
		return;
	}
	pthread_mutex_lock(&cl->lock);
	cl->stopping = true;
	pthread_cond_broadcast(&cl->cond);
	pthread_mutex_unlock(&cl->lock);
	/* What is queued is closed first; a close that still waits is waited for. */
	for (unsigned i = 0; i < cl->n_threads; i++)
		pthread_join(cl->threads[i], NULL);
	pthread_cond_destroy(&cl->cond);
	pthread_mutex_destroy(&cl->lock);
	free(cl);
}
