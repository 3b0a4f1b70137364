/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A session's life: start (the wiring, the audit log, the mediator, the
 * cages), the event loop (the mediator, the cages' ends and their
 * restarts, the control socket), restart of one cage, spawn, and the
 * ordered stop. doc/session.md explains the order of each.
 *
 * The wiring is made relative to directory fds, one component at a time,
 * never following a symbolic link: the state directory is opened once
 * (dir_open_walk()) and locked for the runner's life, and what is found
 * where the wiring goes (a leftover of another uid, a symbolic link
 * planted there) is refused, not reused.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <clip/audit.h>
#include <clip/feed.h>
#include <clip/label.h>
#include <clip/session.h>

#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/log.h"
#include "base/test-hooks.h"
#include "base/util.h"
#include "cage/cage-lsm.h"
#include "lsm/lsm.h"
#include "session-internal.h"

/* How long clip_audit_open() is retried while a dead runner's child still holds the log. */
#define AUDIT_TRIES 40
#define AUDIT_TRY_NS (50 * 1000 * 1000)

int
session_watch(struct clip_session *s, int fd, unsigned kind, unsigned index)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)kind << 32 | index };

	return epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

void
session_emit(struct clip_session *s, int event, const char *cage, int status)
{
	if (s->event_fn)
		s->event_fn(s, event, cage, status, s->event_userdata);
}

static unsigned
cage_index(const struct clip_session *s, const struct session_cage *c)
{
	for (size_t i = 0; i < s->n_cages; i++)
		if (s->cages[i] == c)
			return (unsigned)i;
	return 0;
}

/*
 * @dirfd/@name as a directory of the wiring, owned by @uid:@gid with
 * @mode: made when missing; when there, it must be a directory (not a
 * symbolic link) owned by @uid, else it is a leftover of something else
 * and refused; its mode is set to @mode unless @keep_mode (a data
 * directory: the user's). Its fd (O_RDONLY), or -errno with a message.
 */
static int
wiring_dir(int dirfd, const char *dirpath, const char *name, mode_t mode, bool keep_mode, uid_t uid,
	   gid_t gid, const char *what, bool *ret_made, struct clip_error **reterr)
{
	bool checked = !test_hook_disabled("session-wiring");
	bool made = false;
	struct stat st;
	int fd;

	if (mkdirat(dirfd, name, 0700) == 0)
		made = true;
	else if (errno != EEXIST)
		return error_set_errno(reterr, -errno, "cannot create %s %s/%s", what, dirpath,
				       name);
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (checked ? O_NOFOLLOW : 0));
	if (fd < 0) {
		int r = -errno;

		if ((r == -ELOOP || r == -ENOTDIR) &&
		    fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			return error_set(reterr, S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR,
					 "%s %s/%s is %s, not a directory: refused where the "
					 "session's wiring goes (remove it)",
					 what, dirpath, name,
					 S_ISLNK(st.st_mode) ? "a symbolic link"
							     : file_type_name(st.st_mode));
		return error_set_errno(reterr, r, "cannot open %s %s/%s", what, dirpath, name);
	}
	if (fstat(fd, &st) < 0) {
		int r = -errno;

		close(fd);
		return error_set_errno(reterr, r, "cannot stat %s %s/%s", what, dirpath, name);
	}
	if (made) {
		if ((st.st_uid != uid || st.st_gid != gid) && fchown(fd, uid, gid) < 0) {
			int r = -errno;

			close(fd);
			(void)unlinkat(dirfd, name, AT_REMOVEDIR);
			return error_set_errno(reterr, r, "cannot give %s %s/%s to uid %u", what,
					       dirpath, name, (unsigned)uid);
		}
	} else if (st.st_uid != uid && checked) {
		close(fd);
		return error_set(reterr, -EPERM,
				 "%s %s/%s is owned by uid %u, not uid %u: a leftover of another "
				 "uid, refused (remove it or give it to uid %u)",
				 what, dirpath, name, (unsigned)st.st_uid, (unsigned)uid,
				 (unsigned)uid);
	}
	if ((made || !keep_mode) && (st.st_mode & 07777) != mode && fchmod(fd, mode) < 0) {
		int r = -errno;

		close(fd);
		return error_set_errno(reterr, r, "cannot set the mode of %s %s/%s", what, dirpath,
				       name);
	}
	if (ret_made)
		*ret_made = made;
	return fd;
}

int
session_listen_at(int dirfd, const char *dirpath, const char *name, mode_t mode,
		  struct clip_error **reterr)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		/* The state directory's lock says no runner has it: a dead one's socket. */
		if (!S_ISSOCK(st.st_mode))
			return error_set(reterr, -EEXIST,
					 "%s/%s is %s, not a socket: refused where the session's "
					 "socket goes (remove it)",
					 dirpath, name,
					 S_ISLNK(st.st_mode) ? "a symbolic link"
							     : file_type_name(st.st_mode));
		if (unlinkat(dirfd, name, 0) < 0)
			return error_set_errno(reterr, -errno, "cannot remove the old socket %s/%s",
					       dirpath, name);
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return error_set_errno(reterr, -errno, "cannot create a socket");
	/* Through the directory's fd: the path is never resolved again. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dirfd, name);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return error_set_errno(reterr, -errno, "cannot bind %s/%s", dirpath, name);
	if (fchmodat(dirfd, name, mode, 0) < 0 || listen(fd, 64) < 0) {
		int r = -errno;

		(void)unlinkat(dirfd, name, 0);
		return error_set_errno(reterr, r, "cannot listen on %s/%s", dirpath, name);
	}
	return steal_fd(fd);
}

/* Start (or start again) the cage @c and watch its end. */
static int
cage_run(struct clip_session *s, struct session_cage *c, struct clip_error **reterr)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	int r;

	r = session_crypt_unlock(s, c, reterr);
	if (r < 0)
		return r;
	r = clip_cage_start(c->cage, CLIP_CAGE_START_REGISTER, &e);
	if (r < 0) {
		session_crypt_lock(s, c);
		return error_set(reterr, r, "session '%s': cannot start cage '%s': %s", s->name,
				 c->name, e ? clip_error_get_message(e) : strerror(-r));
	}
	r = session_watch(s, clip_cage_get_fd(c->cage), SESSION_EV_CAGE, cage_index(s, c));
	if (r < 0) {
		(void)clip_cage_stop(c->cage, 0, NULL);
		session_crypt_lock(s, c);
		return error_set_errno(reterr, r, "session '%s': cannot watch cage '%s'", s->name,
				       c->name);
	}
	session_feed_cage(s, CLIP_FEED_CAGE_STARTED, c->name, NULL);
	/* Its Landlock denials, where the kernel's audit gives them: to the feed as they come. */
	(void)clip_cage_set_denial_fn(c->cage, session_feed_denial, s);
	token_bucket_init(&c->denials, SESSION_DENIALS_BURST);
	c->denials_suppressed = 0;
	r = clip_cage_get_denial_fd(c->cage);
	if (r >= 0 && session_watch(s, r, SESSION_EV_DENIALS, cage_index(s, c)) < 0)
		log_warning(s->ctx,
			    "session '%s': cage '%s': its Landlock denials are read only "
			    "when it ends",
			    s->name, c->name);
	return 0;
}

/* Stop watching the fds of @c's cage, which its end closes. */
static void
cage_unwatch(struct clip_session *s, struct session_cage *c)
{
	int fd;

	if (s->epoll_fd < 0)
		return;
	fd = clip_cage_get_fd(c->cage);
	if (fd >= 0)
		(void)epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
	fd = clip_cage_get_denial_fd(c->cage);
	if (fd >= 0)
		(void)epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
}

/* Stop the cage @c if it runs (or reap it if it ended); it stays ready to start again. */
static void
cage_halt(struct clip_session *s, struct session_cage *c, unsigned grace_ms)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	int r;

	if (!c->cage || clip_cage_get_state(c->cage) == CLIP_CAGE_NEW)
		return;
	cage_unwatch(s, c);
	r = clip_cage_stop(c->cage, grace_ms, &e);
	/* Its processes are gone: the level's data locks with its last cage. */
	session_crypt_lock(s, c);
	if (r < 0 && r != -ECHILD)
		log_err(s->ctx, "session '%s': cannot stop cage '%s': %s", s->name, c->name,
			clip_error_get_message(e));
	else if (r >= 0)
		session_feed_cage(s, CLIP_FEED_CAGE_STOPPED, c->name, NULL);
}

/* The data directory: made 0700 for the cage when missing, its parents as dir_open_walk() does. */
static int
data_dir_open(struct session_cage *c, struct clip_error **reterr)
{
	_cleanup_free_ char *copy = strdup(c->data_dir), *copy2 = strdup(c->data_dir);
	_cleanup_close_ int parent = -1;
	const char *dir, *base;

	if (!copy || !copy2)
		return -ENOMEM;
	dir = dirname(copy);
	base = basename(copy2);
	parent = dir_open_walk(dir, true, "data directory's parent", reterr);
	if (parent < 0)
		return parent;
	return wiring_dir(parent, dir, base, 0700, true, c->run_uid, c->run_gid, "data directory",
			  &c->data_made, reterr);
}

/*
 * The BPF LSM, when loaded (doc/lsm.md): the cage's transfer socket is the
 * one socket not of the cage that its processes may connect to, and its
 * data directory is at its level.
 */
static void
lsm_wire(struct clip_session *s, struct session_cage *c, int data)
{
	int r;

	if (!lsm_active())
		return;
	r = cage_lsm_allow_socket(c->cage, c->listen_fd);
	if (r >= 0 && !test_hook_disabled("lsm-files"))
		r = lsm_inode_set(data, c->level);
	if (r < 0)
		log_warning(s->ctx,
			    "session '%s': cage %s: the BPF LSM is not told of its socket "
			    "and data directory: %s",
			    s->name, c->name, strerror(-r));
}

int
session_stop_leftover(struct clip_ctx *ctx, const char *session, const char *cage_name,
		      unsigned grace_ms)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	struct clip_cage *old = NULL;
	int r;

	r = clip_cage_attach(&old, ctx, cage_name, &e);
	if (r == -ENODATA || r == -ENOENT)
		return 0;
	if (r < 0) {
		log_err(ctx, "session '%s': cannot reach the leftover cage %s: %s", session,
			cage_name, clip_error_get_message(e));
		return r;
	}
	log_warning(ctx,
		    "session '%s': cage %s was left running by a runner that is gone: stopping it",
		    session, cage_name);
	r = clip_cage_stop(old, grace_ms, &e);
	if (r < 0)
		log_err(ctx, "session '%s': cannot stop the leftover cage %s: %s", session,
			cage_name, clip_error_get_message(e));
	clip_cage_unref(old);
	return r < 0 ? r : 1;
}

static int
audit_open(struct clip_session *s, struct clip_error **reterr)
{
	struct clip_error *e = NULL;
	int r;

	/* A runner restarted at once may find the log held by its predecessor's child. */
	for (int tries = 0;; tries++) {
		r = clip_audit_open(&s->audit, s->ctx, -1, NULL, CLIP_AUDIT_SYSLOG, &e);
		if (r != -EBUSY || tries == AUDIT_TRIES)
			break;
		e = clip_error_free(e);
		nanosleep(&(struct timespec){ .tv_nsec = AUDIT_TRY_NS }, NULL);
	}
	if (r < 0)
		r = error_set(reterr, r, "session '%s': cannot open the audit log: %s", s->name,
			      e ? clip_error_get_message(e) : strerror(-r));
	clip_error_free(e);
	return r;
}

static int
mediator_make(struct clip_session *s, unsigned flags, struct clip_error **reterr)
{
	struct clip_mediator_opts opts = s->mediator_opts;
	struct clip_policy *policy = NULL;
	_cleanup_close_ int agent = -1;
	int r;

	if (s->policy)
		policy = clip_policy_ref(s->policy);
	else {
		/* No rule: every transfer is denied. */
		r = clip_policy_parse(&policy, "", 0, "(no policy)", reterr);
		if (r < 0)
			return r;
	}
	opts.size = sizeof(opts);
	if (s->mode == CLIP_CAGE_MODE_ROOTLESS)
		opts.label_flags |= CLIP_LABEL_ROOTLESS;
	r = clip_mediator_new(&s->mediator, s->ctx, policy, s->audit, &opts, reterr);
	clip_policy_unref(policy);
	if (r < 0)
		return r;
	for (size_t i = 0; i < s->n_cages; i++) {
		struct session_cage *c = s->cages[i];
		struct clip_mediator_cage mc = {
			.size = sizeof(mc),
			.name = c->name,
			.level = c->level,
			.inbox_fd = c->inbox_fd,
			.socket_fd =
				flags & CLIP_SESSION_START_EXTERNAL_SOCKETS ? -1 : c->listen_fd,
			/* Rootless, every cage runs as the caller: no uid tells them
			   apart. With external sockets, the caller checks the peers itself
			   (clip_session_get_cage_uid()): what reaches the mediator comes
			   from the caller's front, not from the cage. */
			.check_uid = s->mode == CLIP_CAGE_MODE_ROOT &&
				     !(flags & CLIP_SESSION_START_EXTERNAL_SOCKETS),
			.uid = c->run_uid,
		};

		r = clip_mediator_add_cage(s->mediator, &mc, reterr);
		if (r < 0)
			return r;
	}
	agent = session_listen_at(s->state_fd, "session state directory", SESSION_AGENT_SOCKET,
				  0600, reterr);
	if (agent < 0)
		return agent;
	r = clip_mediator_add_agent_socket(s->mediator, agent, reterr);
	if (r < 0)
		return r;
	return session_watch(s, clip_mediator_get_fd(s->mediator), SESSION_EV_MEDIATOR, 0);
}

/* Once, at start: what a rootless session cannot have. */
static void
say_rootless(struct clip_session *s)
{
	char unlimited[CLIP_SESSION_CAGES_MAX * (CLIP_SESSION_NAME_MAX + 2) + 1] = "";
	size_t n = 0;

	for (size_t i = 0; i < s->n_cages; i++) {
		int missing = clip_cage_get_missing(s->cages[i]->cage);

		if (missing > 0 && (missing & (CLIP_CAGE_MISSING_MEMORY | CLIP_CAGE_MISSING_TASKS |
					       CLIP_CAGE_MISSING_CPU | CLIP_CAGE_MISSING_CGROUP)))
			n += (size_t)snprintf(unlimited + n, sizeof(unlimited) - n, "%s%s",
					      n ? ", " : "", s->cages[i]->name);
	}
	log_notice(s->ctx,
		   "session '%s' is rootless: its labels are user.clip.label attributes that the "
		   "user's other processes can rewrite%s%s",
		   s->name, n ? "; without a delegated cgroup, no limit holds in cage " : "",
		   unlimited);
}

static int
session_start(struct clip_session *s, unsigned flags, struct clip_error **reterr)
{
	_cleanup_free_ char *state = NULL;
	bool root;
	struct stat st;
	int r;

	r = clip_ctx_get_cage_mode(s->ctx);
	if (r < 0)
		return error_set(reterr, r, "session '%s': cannot decide how to make the cages",
				 s->name);
	s->mode = r;
	root = s->mode == CLIP_CAGE_MODE_ROOT;
	r = clip_session_check(s, reterr);
	if (r < 0)
		return r;

	/* Each cage's profile with its wiring, and the uid that owns its inbox and data. */
	for (size_t i = 0; i < s->n_cages; i++) {
		_cleanup_(clip_cage_profile_unrefp) struct clip_cage_profile *p = NULL;
		struct session_cage *c = s->cages[i];

		r = session_cage_profile(s, c, &p, reterr);
		if (r < 0)
			return r;
		c->run_uid = root ? clip_cage_profile_get_uid_base(p) : geteuid();
		c->run_gid = root ? c->run_uid : getegid();
		r = clip_cage_new(&c->cage, s->ctx, p, reterr);
		if (r < 0)
			return r;
	}

	/* The state directory, locked for the runner's life: one runner per session. */
	state = session_state_path(s);
	if (!state)
		return -ENOMEM;
	s->state_made = lstat(state, &st) < 0 && errno == ENOENT;
	s->state_fd = dir_open_walk(state, true, "session state directory", reterr);
	if (s->state_fd < 0)
		return s->state_fd;
	if (flock(s->state_fd, LOCK_EX | LOCK_NB) < 0) {
		r = -errno;
		/* Not ours: nothing in it may be touched, not even on the way out. */
		close(s->state_fd);
		s->state_fd = -1;
		s->state_made = false;
		if (r == -EWOULDBLOCK)
			return error_set(reterr, -EEXIST,
					 "session '%s': state directory %s is in use by another "
					 "runner",
					 s->name, state);
		return error_set_errno(reterr, r, "cannot lock %s", state);
	}
	if (fchmod(s->state_fd, root ? 0711 : 0700) < 0)
		return error_set_errno(reterr, -errno, "cannot set the mode of %s", state);

	for (size_t i = 0; i < s->n_cages; i++)
		(void)session_stop_leftover(s->ctx, s->name, s->cages[i]->cage_name,
					    SESSION_GRACE_MS);

	/* The wiring: inbox/CAGE, run/CAGE/transfer.sock, the data directories. */
	{
		_cleanup_close_ int inboxes = -1;

		inboxes = wiring_dir(s->state_fd, state, SESSION_INBOX_DIR, 0711, false, geteuid(),
				     getegid(), "inbox directory", &s->inbox_made, reterr);
		if (inboxes < 0)
			return inboxes;
		s->run_fd = wiring_dir(s->state_fd, state, SESSION_RUN_DIR, 0755, false, geteuid(),
				       getegid(), "socket directory", NULL, reterr);
		if (s->run_fd < 0)
			return s->run_fd;
		for (size_t i = 0; i < s->n_cages; i++) {
			_cleanup_free_ char *inbox_path = NULL, *run_path = NULL;
			_cleanup_close_ int run = -1, data = -1;
			struct session_cage *c = s->cages[i];

			if (asprintf(&inbox_path, "%s/" SESSION_INBOX_DIR, state) < 0 ||
			    asprintf(&run_path, "%s/" SESSION_RUN_DIR "/%s", state, c->name) < 0)
				return -ENOMEM;
			c->inbox_fd =
				wiring_dir(inboxes, inbox_path, c->name, 0700, false, c->run_uid,
					   c->run_gid, "inbox", &c->inbox_made, reterr);
			if (c->inbox_fd < 0)
				return c->inbox_fd;
			run = wiring_dir(s->run_fd, state, c->name, 0755, false, geteuid(),
					 getegid(), "socket directory", NULL, reterr);
			if (run < 0)
				return run;
			c->listen_fd =
				session_listen_at(run, run_path, SESSION_SOCKET_NAME, 0666, reterr);
			if (c->listen_fd < 0)
				return c->listen_fd;
			data = data_dir_open(c, reterr);
			if (data < 0)
				return data;
			lsm_wire(s, c, data);
		}
	}

	s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epoll_fd < 0)
		return error_set_errno(reterr, -errno, "cannot create an epoll fd");
	r = audit_open(s, reterr);
	if (r >= 0)
		r = mediator_make(s, flags, reterr);
	if (r >= 0)
		r = session_feed_open(s, reterr);
	if (r >= 0)
		r = session_control_listen(s, reterr);
	if (r < 0)
		return r;
	for (size_t i = 0; i < s->n_cages; i++) {
		r = cage_run(s, s->cages[i], reterr);
		if (r < 0)
			return r;
	}
	if (!root)
		say_rootless(s);
	log_info(s->ctx, "session '%s' started: %zu cages", s->name, s->n_cages);
	return 0;
}

static void
unlink_quiet(int dirfd, const char *name, int flags)
{
	if (dirfd >= 0)
		(void)unlinkat(dirfd, name, flags);
}

/*
 * Take down what a start made, in order: the mediator (it stops
 * accepting, and what waits for the user is answered no), the control
 * socket, the cages, then the sockets and their directories. With @undo
 * (a start that failed), the inboxes, data and state directories this
 * start made go too when empty.
 */
static void
teardown(struct clip_session *s, unsigned grace_ms, bool undo)
{
	s->mediator = clip_mediator_unref(s->mediator);
	session_control_close(s);
	for (size_t i = 0; i < s->n_cages; i++) {
		cage_halt(s, s->cages[i], grace_ms);
		s->cages[i]->cage = clip_cage_unref(s->cages[i]->cage);
	}
	/* Nothing left unlocked, whatever the start reached, nor by a runner before. */
	for (size_t i = 0; i < s->n_cages; i++)
		session_crypt_lock(s, s->cages[i]);
	if (s->state_fd >= 0)
		(void)session_crypt_lock_leftovers(s->ctx, s->name, s->state_fd);
	for (size_t i = 0; i < s->n_cages; i++) {
		struct session_cage *c = s->cages[i];

		if (c->listen_fd >= 0 && s->run_fd >= 0) {
			int run = openat(s->run_fd, c->name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			unlink_quiet(run, SESSION_SOCKET_NAME, 0);
			if (run >= 0)
				close(run);
		}
		unlink_quiet(s->run_fd, c->name, AT_REMOVEDIR);
		if (c->listen_fd >= 0)
			close(c->listen_fd);
		if (c->inbox_fd >= 0)
			close(c->inbox_fd);
		c->listen_fd = c->inbox_fd = -1;
		if (undo && c->inbox_made && s->state_fd >= 0) {
			int inboxes = openat(s->state_fd, SESSION_INBOX_DIR,
					     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			unlink_quiet(inboxes, c->name, AT_REMOVEDIR);
			if (inboxes >= 0)
				close(inboxes);
		}
		if (undo && c->data_made)
			(void)rmdir(c->data_dir);
		c->inbox_made = c->data_made = false;
	}
	if (s->run_fd >= 0)
		close(s->run_fd);
	s->run_fd = -1;
	unlink_quiet(s->state_fd, SESSION_RUN_DIR, AT_REMOVEDIR);
	unlink_quiet(s->state_fd, SESSION_AGENT_SOCKET, 0);
	unlink_quiet(s->state_fd, SESSION_CONTROL_SOCKET, 0);
	if (undo && s->inbox_made)
		unlink_quiet(s->state_fd, SESSION_INBOX_DIR, AT_REMOVEDIR);
	s->audit = clip_audit_unref(s->audit);
	/* The cages' last events reach the watchers, then the stream ends. */
	session_feed_close(s);
	if (s->epoll_fd >= 0)
		close(s->epoll_fd);
	s->epoll_fd = -1;
	if (undo && s->state_made) {
		_cleanup_free_ char *state = session_state_path(s);

		if (state)
			(void)rmdir(state);
	}
	s->state_made = s->inbox_made = false;
	/* Last: the lock goes with it. */
	if (s->state_fd >= 0)
		close(s->state_fd);
	s->state_fd = -1;
	s->started = false;
}

void
session_stop_all(struct clip_session *s, unsigned grace_ms)
{
	teardown(s, grace_ms, false);
}

CLIP_EXPORT int
clip_session_start(struct clip_session *s, unsigned flags, struct clip_error **reterr)
{
	int r;

	clip_assert_reterr(reterr);
	session_assert_arg(s, reterr, "%s: the session is NULL", __func__);
	ctx_assert_return_error(s->ctx, reterr);
	session_assert_arg(!(flags & ~CLIP_SESSION_START_EXTERNAL_SOCKETS), reterr,
			   "%s: unknown flags 0x%x", __func__, flags);
	if (s->started)
		return api_return(error_set(reterr, -EBUSY, "session '%s' is started", s->name),
				  reterr);
	if (s->n_cages == 0)
		return api_return(error_set(reterr, -EINVAL, "session '%s' has no cage", s->name),
				  reterr);
	if (s->require_lsm && !test_hook_disabled("require-lsm") && !lsm_active())
		return api_return(error_set(reterr, -EOPNOTSUPP,
					    "session '%s' requires the BPF LSM (RequireLSM=yes), "
					    "which is not loaded (clipctl lsm load)",
					    s->name),
				  reterr);
	s->run_fd = -1;
	s->started = true;
	r = session_start(s, flags, reterr);
	if (r < 0) {
		if (r == -ENOMEM)
			r = error_set(reterr, r, "session '%s': out of memory", s->name);
		teardown(s, 0, true);
	}
	return api_return(r, reterr);
}

/* @s given, of this process, and started, for @func: 0, or -EINVAL / -ECHILD with a message. */
static int
started_check(struct clip_session *s, const char *func, struct clip_error **reterr)
{
	session_assert_arg(s, reterr, "%s: the session is NULL", func);
	ctx_assert_return_error(s->ctx, reterr);
	if (!s->started)
		return api_return(
			error_set(reterr, -ECHILD, "session '%s' is not started", s->name), reterr);
	return 0;
}

CLIP_EXPORT int
clip_session_stop(struct clip_session *s, unsigned grace_ms, struct clip_error **reterr)
{
	int r;

	clip_assert_reterr(reterr);
	r = started_check(s, __func__, reterr);
	if (r < 0)
		return r;
	teardown(s, grace_ms ? grace_ms : SESSION_GRACE_MS, false);
	log_info(s->ctx, "session '%s' stopped", s->name);
	session_emit(s, CLIP_SESSION_EVENT_STOPPED, NULL, -1);
	return 0;
}

CLIP_EXPORT int
clip_session_get_fd(struct clip_session *s)
{
	clip_assert_return(s, -EINVAL);
	ctx_assert_return(s->ctx, -ECHILD);
	return s->started ? s->epoll_fd : -ECHILD;
}

/* The exit status of the ended init of @c (left to reap), or -1. */
static int
init_status(struct session_cage *c)
{
	siginfo_t si = { 0 };
	int fd = clip_cage_get_fd(c->cage);

	if (fd < 0 || waitid(P_PIDFD, (id_t)fd, &si, WEXITED | WNOWAIT | __WALL) < 0 ||
	    si.si_pid == 0)
		return -1;
	return si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
}

/* A cage ended by itself: reap it, report it, restart it when its rule says so. */
static int
cage_ended(struct clip_session *s, struct session_cage *c)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	time_t now = (time_t)(now_ms() / 1000); /* monotonic: a clock set back opens no window */
	int status, r;
	bool again;

	cage_unwatch(s, c);
	status = init_status(c);
	/* Its processes, cgroups and registry entry go. */
	(void)clip_cage_wait(c->cage, -1);
	session_crypt_lock(s, c);
	log_warning(s->ctx, "session '%s': cage '%s' ended by itself (status %d)", s->name, c->name,
		    status);
	session_emit(s, CLIP_SESSION_EVENT_CAGE_ENDED, c->name, status);
	{
		char how[64];

		if (status > 128)
			snprintf(how, sizeof(how), "killed by signal %d", status - 128);
		else
			snprintf(how, sizeof(how), "exit status %d", status);
		session_feed_cage(s, CLIP_FEED_CAGE_DIED, c->name, how);
	}
	if (!s->started)
		return 1;
	again = c->restart == CLIP_SESSION_RESTART_ALWAYS ||
		(c->restart == CLIP_SESSION_RESTART_ON_FAILURE && status != 0);
	if (!again)
		return 1;
	if (c->restarts_in_window == 0 || now - c->restart_window >= SESSION_RESTART_WINDOW_S) {
		c->restart_window = now;
		c->restarts_in_window = 0;
	}
	if (c->restarts_in_window >= SESSION_RESTART_BURST) {
		c->failed = true;
		log_err(s->ctx,
			"session '%s': cage '%s' ended %u times within %d s: not restarted again",
			s->name, c->name, SESSION_RESTART_BURST + 1, SESSION_RESTART_WINDOW_S);
		session_emit(s, CLIP_SESSION_EVENT_CAGE_FAILED, c->name, status);
		return 1;
	}
	c->restarts_in_window++;
	r = cage_run(s, c, &e);
	if (r < 0) {
		c->failed = true;
		log_err(s->ctx, "%s", clip_error_get_message(e));
		session_emit(s, CLIP_SESSION_EVENT_CAGE_FAILED, c->name, status);
		return 1;
	}
	c->restarts++;
	c->failed = false;
	log_notice(s->ctx, "session '%s': cage '%s' restarted", s->name, c->name);
	session_emit(s, CLIP_SESSION_EVENT_CAGE_RESTARTED, c->name, -1);
	return 1;
}

CLIP_EXPORT int
clip_session_dispatch(struct clip_session *s, struct clip_error **reterr)
{
	struct epoll_event ev;
	unsigned kind, index;
	int n, r;

	clip_assert_reterr(reterr);
	r = started_check(s, __func__, reterr);
	if (r < 0)
		return r;
	n = epoll_wait(s->epoll_fd, &ev, 1, 0);
	if (n < 0 && errno != EINTR)
		return api_return(
			error_set_errno(reterr, -errno, "session '%s': epoll_wait", s->name),
			reterr);
	if (n <= 0)
		return 0;
	kind = (unsigned)(ev.data.u64 >> 32);
	index = (unsigned)ev.data.u64;
	/* An event function may drop the caller's reference. */
	clip_session_ref(s);
	switch (kind) {
	case SESSION_EV_MEDIATOR:
		r = clip_mediator_dispatch(s->mediator, reterr);
		r = r < 0 ? r : 1;
		break;
	case SESSION_EV_CAGE:
		r = index < s->n_cages && s->cages[index]->cage ? cage_ended(s, s->cages[index])
								: 1;
		break;
	case SESSION_EV_FEED:
		session_feed_flush(s);
		r = 1;
		break;
	case SESSION_EV_DENIALS:
		if (index < s->n_cages && s->cages[index]->cage)
			(void)clip_cage_read_denials(s->cages[index]->cage);
		r = 1;
		break;
	default:
		r = session_control_dispatch(s, ev.data.u64, reterr);
		break;
	}
	clip_session_unref(s);
	return api_return(r, reterr);
}

CLIP_EXPORT int
clip_session_set_event_fn(struct clip_session *s,
			  void (*fn)(struct clip_session *session, int event, const char *cage,
				     int status, void *userdata),
			  void *userdata)
{
	clip_assert_return(s, -EINVAL);
	s->event_fn = fn;
	s->event_userdata = userdata;
	return 0;
}

/* The started cage @name of @s, for @func (one of the functions below), its arguments checked:
 * 0, or -EINVAL / -ECHILD with a message. */
static int
find_started(struct clip_session *s, const char *name, const char *func, struct session_cage **ret,
	     struct clip_error **reterr)
{
	struct session_cage *c;

	session_assert_arg(s, reterr, "%s: the session is NULL", func);
	ctx_assert_return_error(s->ctx, reterr);
	session_assert_arg(name, reterr, "%s: the cage is NULL", func);
	c = session_find_cage(s, name);
	if (!c)
		return error_set(reterr, -EINVAL, "session '%s' has no cage '%s'", s->name, name);
	if (!s->started || !c->cage)
		return error_set(reterr, -ECHILD, "session '%s' is not started", s->name);
	*ret = c;
	return 0;
}

CLIP_EXPORT int
clip_session_restart_cage(struct clip_session *s, const char *cage, unsigned grace_ms,
			  struct clip_error **reterr)
{
	struct session_cage *c = NULL;
	int r;

	clip_assert_reterr(reterr);
	r = find_started(s, cage, __func__, &c, reterr);
	if (r < 0)
		return api_return(r, reterr);
	/* The mediator and its socket for this cage stay: a transfer in flight goes on. */
	cage_halt(s, c, grace_ms ? grace_ms : SESSION_GRACE_MS);
	c->failed = false;
	c->restarts_in_window = 0;
	r = cage_run(s, c, reterr);
	if (r < 0)
		c->failed = true;
	else {
		c->restarts++;
		log_notice(s->ctx, "session '%s': cage '%s' restarted on request", s->name,
			   c->name);
	}
	return api_return(r, reterr);
}

CLIP_EXPORT int
clip_session_spawn(struct clip_session *s, const char *cage,
		   const struct clip_cage_spawn_opts *opts, int *ret_pidfd,
		   struct clip_error **reterr)
{
	struct session_cage *c = NULL;
	int r;

	clip_assert_reterr(reterr);
	r = find_started(s, cage, __func__, &c, reterr);
	if (r >= 0)
		r = clip_cage_spawn(c->cage, opts, ret_pidfd, reterr);
	return api_return(r, reterr);
}

CLIP_EXPORT struct clip_cage *
clip_session_get_cage(struct clip_session *s, const char *cage)
{
	struct session_cage *c = s ? session_find_cage(s, cage) : NULL;

	return c && s->started ? c->cage : NULL;
}

CLIP_EXPORT struct clip_mediator *
clip_session_get_mediator(struct clip_session *s)
{
	return s && s->started ? s->mediator : NULL;
}

CLIP_EXPORT int
clip_session_get_socket_fd(struct clip_session *s, const char *cage)
{
	struct session_cage *c;

	clip_assert_return(s, -EINVAL);
	c = session_find_cage(s, cage);
	if (!c)
		return -EINVAL;
	return s->started && c->listen_fd >= 0 ? c->listen_fd : -ECHILD;
}

CLIP_EXPORT int
clip_session_attach_cage(struct clip_cage **ret, struct clip_ctx *ctx, const char *session,
			 const char *cage, struct clip_error **reterr)
{
	char name[2 * CLIP_SESSION_NAME_MAX + 2];

	clip_assert_reterr(reterr);
	session_assert_arg(ret, reterr, "%s: ret is NULL", __func__);
	ctx_assert_return_error(ctx, reterr);
	session_assert_arg(session && cage, reterr, "%s: the session or the cage is NULL",
			   __func__);
	session_assert_arg(strlen(session) <= CLIP_SESSION_NAME_MAX &&
				   strlen(cage) <= CLIP_SESSION_NAME_MAX && !strchr(session, '.'),
			   reterr, "%s: no session '%.32s' with a cage '%.32s' can exist", __func__,
			   session, cage);
	snprintf(name, sizeof(name), "%s.%s", session, cage);
	return api_return(clip_cage_attach(ret, ctx, name, reterr), reterr);
}

CLIP_EXPORT int
clip_session_get_cage_uid(struct clip_session *s, const char *cage, uint32_t *ret_uid)
{
	struct session_cage *c;

	clip_assert_return(s && ret_uid, -EINVAL);
	c = session_find_cage(s, cage);
	if (!c)
		return -EINVAL;
	if (!s->started)
		return -ECHILD;
	if (s->mode == CLIP_CAGE_MODE_ROOTLESS)
		return -ENODATA;
	*ret_uid = c->run_uid;
	return 0;
}

CLIP_EXPORT struct clip_audit *
clip_session_get_audit(struct clip_session *s)
{
	return s && s->started ? s->audit : NULL;
}

/* One cage started or stopped on request (session-roles.c), the others left alone. */
int
session_cage_start(struct clip_session *s, struct session_cage *c, struct clip_error **reterr)
{
	if (c->cage && clip_cage_get_state(c->cage) == CLIP_CAGE_RUNNING)
		return error_set(reterr, -EBUSY, "session '%s': cage '%s' is running", s->name,
				 c->name);
	/* A profile a reload brought: the cage is made anew from it, with the same wiring. */
	if (c->reloaded) {
		_cleanup_(clip_cage_profile_unrefp) struct clip_cage_profile *p = NULL;
		struct clip_cage *cage = NULL;
		int r = session_cage_profile(s, c, &p, reterr);

		if (r >= 0)
			r = clip_cage_new(&cage, s->ctx, p, reterr);
		if (r < 0)
			return r;
		clip_cage_unref(c->cage);
		c->cage = cage;
		c->reloaded = false;
		/* A new cage, a new id for the BPF LSM: its transfer socket is marked anew. */
		if (lsm_active() && cage_lsm_allow_socket(c->cage, c->listen_fd) < 0)
			log_warning(s->ctx,
				    "session '%s': cage %s: the BPF LSM is not told of its socket",
				    s->name, c->name);
	}
	c->failed = false;
	c->restarts_in_window = 0;
	return cage_run(s, c, reterr);
}

void
session_cage_stop(struct clip_session *s, struct session_cage *c, unsigned grace_ms)
{
	cage_halt(s, c, grace_ms ? grace_ms : SESSION_GRACE_MS);
}
