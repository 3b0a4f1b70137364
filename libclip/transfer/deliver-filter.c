/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The content filter runs in a cage of its own (doc/transfer.md "Content
 * filters"): its own namespaces, no network, a read-only root with the
 * program alone bound under FILTER_DIR, no data directory, no capability,
 * the default seccomp filter, W^X, memory and task limits, and a deadline
 * after which the whole cage is killed. No cage, no filter run: the
 * transfer fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <clip/cage.h>

#include "base/error.h"
#include "transfer-internal.h"
#include "base/util.h"

DEFINE_UNREF_CLEANUP(struct clip_cage_profile, clip_cage_profile_unref)
DEFINE_UNREF_CLEANUP(struct clip_cage, clip_cage_unref)

#define FILTER_DIR "/filter"
#define FILTER_UID 65534
#define FILTER_REASON_MAX 160

static int
filter_profile(const char *program, const struct filter_limits *lim, char *target, size_t size,
	       struct clip_cage_profile **ret, struct clip_error **reterr)
{
	_cleanup_(clip_cage_profile_unrefp) struct clip_cage_profile *p = NULL;
	struct clip_cage_limits l = { .size = sizeof(l),
				      .cpu_quota_percent = 100,
				      .memory_max = lim->memory_max,
				      .tasks_max = lim->tasks_max };
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	const char *base = strrchr(program, '/');
	int r;

	if (program[0] != '/' || !base || !base[1] ||
	    snprintf(target, size, FILTER_DIR "/%s", base + 1) >= (int)size)
		return error_set(reterr, -EINVAL, "the filter '%.64s' is not an absolute path",
				 program);
	r = clip_cage_profile_new(&p, "clip-filter", &e);
	if (r == 0)
		r = clip_cage_profile_set_limits(p, &l, &e);
	if (r == 0)
		r = clip_cage_profile_set_wx(p, 1, &e);
	/* The program alone: not its directory, nothing of the host next to it. */
	if (r == 0)
		r = clip_cage_profile_add_bind(p, program, target, 0, &e);
	if (r < 0)
		return error_set(reterr, r, "cannot make a cage profile for the filter %.64s: %s",
				 program, clip_error_get_message(e));
	*ret = steal_ptr(p);
	return 0;
}

/* What the filter writes on stdout and stderr: its first line is the reason. */
struct filter_output {
	int fd; /* non-blocking; -1 at end of file */
	char text[FILTER_REASON_MAX + 1];
	size_t len;
	bool line_done;
};

/* Read what is there; the rest of a long output is read and dropped. */
static void
filter_output_read(struct filter_output *o)
{
	char buf[512];

	for (unsigned k = 0; o->fd >= 0 && k < 256; k++) {
		ssize_t n = read(o->fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (n < 0 && errno != EAGAIN)) {
			close(o->fd);
			o->fd = -1;
		}
		if (n <= 0)
			return;
		for (ssize_t i = 0; i < n && !o->line_done; i++) {
			char c = buf[i];

			if (c == '\n')
				o->line_done = true;
			else if (o->len < FILTER_REASON_MAX)
				o->text[o->len++] = c == '\t' || c == '\r'  ? ' '
						    : c >= 0x20 && c < 0x7f ? c
									    : '?';
		}
	}
}

static const char *
filter_output_reason(struct filter_output *o)
{
	while (o->len > 0 && o->text[o->len - 1] == ' ')
		o->len--;
	o->text[o->len] = '\0';
	return o->text;
}

/* Until the filter exits (0) or the deadline (1), reading what it says. */
static int
filter_wait(int pidfd, struct filter_output *o, unsigned timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;

	for (;;) {
		struct pollfd p[2] = { { .fd = pidfd, .events = POLLIN },
				       { .fd = o->fd, .events = POLLIN } };
		long long left = deadline - now_ms();
		int n;

		if (left <= 0)
			return 1;
		n = poll(p, o->fd >= 0 ? 2 : 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (o->fd >= 0 && p[1].revents)
			filter_output_read(o);
		if (p[0].revents)
			return 0;
	}
}

static int
filter_verdict(const char *program, int status, bool timed_out, const struct filter_limits *lim,
	       const char *reason, struct clip_error **reterr)
{
	const char *sep = reason[0] ? ": " : "";

	if (timed_out)
		return error_set(reterr, -EPERM,
				 "the filter %s did not finish within %u ms: its cage was killed",
				 program, lim->timeout_ms);
	if (status == 0)
		return 0;
	if (status == 126 || status == 127)
		return error_set(reterr, -EIO, "the filter %s could not run (exit %d)%s%s", program,
				 status, sep, reason);
	if (status > 128)
		return error_set(reterr, -EPERM, "the filter %s was killed (signal %d)%s%s",
				 program, status - 128, sep, reason);
	return error_set(reterr, -EPERM, "the filter %s rejected the document (exit %d)%s%s",
			 program, status, sep, reason);
}

/* Run the filter in the running @cage, its stdin @doc; the cage is stopped on return. */
static int
filter_run(struct clip_cage *cage, bool root_mode, int doc, const char *program, const char *target,
	   const struct filter_limits *lim, struct clip_error **reterr)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	const char *argv[] = { target, NULL };
	const char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	struct filter_output o = { .fd = -1 };
	_cleanup_close_ int pidfd = -1;
	int p[2], fds[3], status = 0, r;
	bool timed_out;
	struct clip_cage_spawn_opts opts = {
		.size = sizeof(opts),
		.n_fds = 3,
		.argv = argv,
		.envp = envp,
		.fds = fds,
		/* A uid of its own inside the cage when there is more than one. */
		.uid = root_mode ? FILTER_UID : 0,
		.gid = root_mode ? FILTER_UID : 0,
	};

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return error_set_errno(reterr, -errno, "cannot make a pipe for the filter");
	o.fd = p[0];
	fds[0] = doc, fds[1] = fds[2] = p[1];
	r = clip_cage_spawn(cage, &opts, &pidfd, &e);
	close(p[1]);
	if (r < 0) {
		close(o.fd);
		return error_set(reterr, -EIO, "the filter %s could not run: %s", program,
				 clip_error_get_message(e));
	}
	r = filter_wait(pidfd, &o, lim->timeout_ms);
	timed_out = r > 0;
	/* Whatever it left behind (a child, a process in the background) dies with the cage. */
	if (clip_cage_stop(cage, 0, NULL) < 0 && r >= 0)
		r = error_set(reterr, -EIO, "cannot stop the cage of the filter %s", program);
	filter_output_read(&o);
	if (o.fd >= 0)
		close(o.fd);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot wait for the filter %s", program);
	if (clip_cage_wait_process(cage, pidfd, &status) < 0)
		return error_set(reterr, -EIO, "cannot collect the status of the filter %s",
				 program);
	return filter_verdict(program, status, timed_out, lim, filter_output_reason(&o), reterr);
}

int
deliver_filter_with(struct clip_ctx *ctx, struct delivery *d, const char *program,
		    const struct filter_limits *lim, struct clip_error **reterr)
{
	_cleanup_(clip_cage_profile_unrefp) struct clip_cage_profile *p = NULL;
	_cleanup_(clip_cage_unrefp) struct clip_cage *cage = NULL;
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	_cleanup_close_ int doc = -1;
	char path[64], target[PATH_MAX];
	int r;

	r = filter_profile(program, lim, target, sizeof(target), &p, reterr);
	if (r < 0)
		return r;
	/* A new read-only open: the filter never holds the descriptor we write through. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", d->fd);
	doc = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (doc < 0)
		return error_set_errno(reterr, -errno, "cannot reopen the document for the filter");
	r = clip_cage_new(&cage, ctx, p, &e);
	if (r == 0)
		r = clip_cage_start(cage, 0, &e);
	if (r < 0)
		return error_set(
			reterr, -EIO,
			"the filter %s is not run: its cage cannot start (%s); the document "
			"is not delivered",
			program, e ? clip_error_get_message(e) : strerror(-r));
	if (clip_cage_get_missing(cage) & (CLIP_CAGE_MISSING_MEMORY | CLIP_CAGE_MISSING_TASKS)) {
		(void)clip_cage_stop(cage, 0, NULL);
		return error_set(
			reterr, -EIO,
			"the filter %s is not run: this host cannot bound the memory and "
			"tasks of its cage (no usable cgroup); the document is not delivered",
			program);
	}
	return filter_run(cage, clip_ctx_get_cage_mode(ctx) == CLIP_CAGE_MODE_ROOT, doc, program,
			  target, lim, reterr);
}

int
deliver_filter(struct clip_ctx *ctx, struct delivery *d, const char *program,
	       struct clip_error **reterr)
{
	static const struct filter_limits defaults = FILTER_LIMITS_DEFAULT;

	return deliver_filter_with(ctx, d, program, &defaults, reterr);
}
