/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A session's control socket (STATE/control.sock) and its status object.
 *
 * The runner serves the socket in clip_session_dispatch(): a
 * SOCK_SEQPACKET socket, 0600, whose peers must also be root or the
 * runner's euid (SO_PEERCRED), at most CONTROL_CONNS_MAX at once, each
 * closed after one request or CONTROL_TIMEOUT_MS; and, the same way, the
 * roles' sockets (session-roles.c), whose peers may ask what their role
 * may. A request is one message of at most CONTROL_REQUEST_MAX bytes:
 * "status", "stop", "restart CAGE", "start CAGE", "stop CAGE", "reload",
 * "trail", "audit-key" or "watch" (session-watch.c: the connection stays, and the
 * session's events stream on it). The answer is one message:
 *
 *   ok\n                                   (stop, restart)
 *   ok\nmediator PENDING AGENT\n           (status, then one line a cage,
 *   cage NAME STATE LEVEL PIDS MISSING RESTARTS\n    sorted by name)
 *   error ERRNO MESSAGE\n
 *
 * The client, clip_session_control(), reads the answer as a peer's words:
 * bounded, every field checked, nothing of it trusted further.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <clip/session.h>

#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/log.h"
#include "base/test-hooks.h"
#include "base/util.h"
#include "session-internal.h"

#define CONTROL_CONNS_MAX 4
#define CONTROL_REQUEST_MAX 256
#define CONTROL_ANSWER_MAX (64 * 1024)
#define CONTROL_TIMEOUT_MS 5000 /* for a peer to send its request */
#define CONTROL_LEVEL_MAX 255 /* of a level's text in a status */
#define CONTROL_PIDS_MAX (1u << 22) /* the kernel's pid_max bound */
/* clip_session_down(): how long a dying runner's lock is waited for (2 s). */
#define DOWN_LOCK_TRIES 40
#define DOWN_LOCK_TRY_NS (50 * 1000 * 1000)

struct session_control {
	int timer_fd;
	struct {
		int fd;
		long long deadline_ms;
		uid_t uid;
		unsigned roles; /* SESSION_PEER_*; 0: answered EPERM */
	} conns[CONTROL_CONNS_MAX];
	int role_fds[SESSION_ROLES]; /* the roles' listening sockets, or -1 */
};

struct status_cage {
	char name[CLIP_SESSION_NAME_MAX + 1];
	char level[CONTROL_LEVEL_MAX + 1];
	int state;
	unsigned pids, missing, restarts;
};

struct clip_session_status {
	size_t n_cages;
	struct status_cage cages[CLIP_SESSION_CAGES_MAX];
	unsigned pending;
	int agent;
};

/* -- the status ------------------------------------------------------- */

static int
status_cage_cmp(const void *a, const void *b)
{
	return strcmp(((const struct status_cage *)a)->name, ((const struct status_cage *)b)->name);
}

CLIP_EXPORT int
clip_session_get_status(struct clip_session *s, struct clip_session_status **ret,
			struct clip_error **reterr)
{
	_cleanup_free_ struct clip_session_status *st = NULL;

	clip_assert_reterr(reterr);
	session_assert_arg(s, reterr, "%s: the session is NULL", __func__);
	ctx_assert_return_error(s->ctx, reterr);
	session_assert_arg(ret, reterr, "%s: ret is NULL", __func__);
	st = calloc(1, sizeof(*st));
	if (!st)
		return api_return(-ENOMEM, reterr);
	for (size_t i = 0; i < s->n_cages; i++) {
		struct session_cage *c = s->cages[i];
		struct status_cage *sc = &st->cages[st->n_cages++];
		_cleanup_free_ char *level = NULL;
		int state = c->cage ? clip_cage_get_state(c->cage) : CLIP_CAGE_STOPPED;

		snprintf(sc->name, sizeof(sc->name), "%s", c->name);
		if (clip_level_format(c->level, &level) < 0)
			return api_return(-ENOMEM, reterr);
		snprintf(sc->level, sizeof(sc->level), "%s", level);
		sc->state = state == CLIP_CAGE_RUNNING ? CLIP_CAGE_RUNNING : CLIP_CAGE_STOPPED;
		if (sc->state == CLIP_CAGE_RUNNING) {
			_cleanup_free_ int *pids = NULL;
			size_t n = 0;
			int missing = clip_cage_get_missing(c->cage);

			if (clip_cage_get_pids(c->cage, &pids, &n) == 0)
				sc->pids = (unsigned)n;
			sc->missing = missing > 0 ? (unsigned)missing : 0;
		}
		sc->restarts = c->restarts;
	}
	qsort(st->cages, st->n_cages, sizeof(st->cages[0]), status_cage_cmp);
	if (s->started && s->mediator) {
		int pending = clip_mediator_get_pending(s->mediator);

		st->pending = pending > 0 ? (unsigned)pending : 0;
		st->agent = clip_mediator_get_agent_connected(s->mediator) == 1;
	}
	*ret = steal_ptr(st);
	return 0;
}

CLIP_EXPORT void
clip_session_status_free(struct clip_session_status *st)
{
	free(st);
}

CLIP_EXPORT size_t
clip_session_status_get_n_cages(const struct clip_session_status *st)
{
	return st ? st->n_cages : 0;
}

CLIP_EXPORT const char *
clip_session_status_get_cage(const struct clip_session_status *st, size_t i, int *ret_state,
			     const char **ret_level, unsigned *ret_pids, unsigned *ret_missing,
			     unsigned *ret_restarts)
{
	const struct status_cage *c;

	if (!st || i >= st->n_cages)
		return NULL;
	c = &st->cages[i];
	if (ret_state)
		*ret_state = c->state;
	if (ret_level)
		*ret_level = c->level;
	if (ret_pids)
		*ret_pids = c->pids;
	if (ret_missing)
		*ret_missing = c->missing;
	if (ret_restarts)
		*ret_restarts = c->restarts;
	return c->name;
}

CLIP_EXPORT int
clip_session_status_get_mediator(const struct clip_session_status *st, unsigned *ret_pending,
				 int *ret_agent)
{
	clip_assert_return(st, -EINVAL);
	if (ret_pending)
		*ret_pending = st->pending;
	if (ret_agent)
		*ret_agent = st->agent;
	return 0;
}

/* The status as the control socket sends it; NULL on ENOMEM. */
static char *
status_format(const struct clip_session_status *st)
{
	size_t size = 64 + st->n_cages * (sizeof(struct status_cage) + 64), n;
	char *text = malloc(size);

	if (!text)
		return NULL;
	n = (size_t)snprintf(text, size, "ok\nmediator %u %d\n", st->pending, st->agent);
	for (size_t i = 0; i < st->n_cages; i++) {
		const struct status_cage *c = &st->cages[i];

		n += (size_t)snprintf(text + n, size - n, "cage %s %d %s %u %u %u\n", c->name,
				      c->state, c->level, c->pids, c->missing, c->restarts);
	}
	return text;
}

/* -- the server -------------------------------------------------------- */

int
session_control_listen(struct clip_session *s, struct clip_error **reterr)
{
	struct session_control *ctl;
	int r;

	ctl = calloc(1, sizeof(*ctl));
	if (!ctl)
		return -ENOMEM;
	for (size_t i = 0; i < CONTROL_CONNS_MAX; i++)
		ctl->conns[i].fd = -1;
	for (size_t i = 0; i < SESSION_ROLES; i++)
		ctl->role_fds[i] = -1;
	s->control = ctl;
	ctl->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ctl->timer_fd < 0)
		return error_set_errno(reterr, -errno, "cannot create a timerfd");
	s->control_fd = session_listen_at(s->state_fd, "session state directory",
					  SESSION_CONTROL_SOCKET, 0600, reterr);
	if (s->control_fd < 0)
		return s->control_fd;
	r = session_watch(s, s->control_fd, SESSION_EV_CONTROL, 0);
	if (r >= 0)
		r = session_watch(s, ctl->timer_fd, SESSION_EV_CONTROL_TIMER, 0);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot watch the control socket");
	return session_roles_listen(s, ctl->role_fds, reterr);
}

static void
conn_close(struct clip_session *s, size_t i)
{
	struct session_control *ctl = s->control;

	if (ctl->conns[i].fd < 0)
		return;
	if (s->epoll_fd >= 0)
		(void)epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, ctl->conns[i].fd, NULL);
	close(ctl->conns[i].fd);
	ctl->conns[i].fd = -1;
}

void
session_control_close(struct clip_session *s)
{
	struct session_control *ctl = s->control;

	if (ctl) {
		for (size_t i = 0; i < CONTROL_CONNS_MAX; i++)
			conn_close(s, i);
		session_roles_close(s, ctl->role_fds);
		if (ctl->timer_fd >= 0)
			close(ctl->timer_fd);
		free(ctl);
		s->control = NULL;
	}
	if (s->control_fd >= 0)
		close(s->control_fd);
	s->control_fd = -1;
}

/* The timer at the earliest deadline of the connections, or off. */
static void
timer_arm(struct session_control *ctl)
{
	struct itimerspec it = { 0 };
	long long first = -1, left;

	for (size_t i = 0; i < CONTROL_CONNS_MAX; i++)
		if (ctl->conns[i].fd >= 0 && (first < 0 || ctl->conns[i].deadline_ms < first))
			first = ctl->conns[i].deadline_ms;
	if (first >= 0) {
		left = first - now_ms();
		if (left < 1)
			left = 1;
		it.it_value.tv_sec = left / 1000;
		it.it_value.tv_nsec = (left % 1000) * 1000000;
	}
	(void)timerfd_settime(ctl->timer_fd, 0, &it, NULL);
}

void
session_answer_text(int fd, const char *text)
{
	(void)send(fd, text, strlen(text), MSG_NOSIGNAL | MSG_DONTWAIT);
}

/*
 * A change's answer: its error, or "ok" when it was done and recorded; a
 * change done whose record failed (@recorded < 0) says so, -EIO: the
 * trail lacks it, and the asker is the one to know.
 */
static void
session_answer_change(int fd, int result, const struct clip_error *e, int recorded)
{
	if (result < 0)
		session_answer_error(fd, result, e ? clip_error_get_message(e) : strerror(-result));
	else if (recorded < 0)
		session_answer_error(fd, -EIO, "done, but not recorded in the audit trail");
	else
		session_answer_text(fd, "ok\n");
}

/* "error ERRNO MESSAGE", the message on one line. */
void
session_answer_error(int fd, int r, const char *message)
{
	char text[1024];
	int n = snprintf(text, sizeof(text), "error %d %s\n", -r, message);

	if (n < 0)
		return;
	if ((size_t)n >= sizeof(text))
		n = sizeof(text) - 1;
	for (int i = 6; i < n - 1; i++)
		if ((unsigned char)text[i] < ' ')
			text[i] = ' ';
	(void)send(fd, text, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void
control_accept(struct clip_session *s, int listen_fd)
{
	struct session_control *ctl = s->control;
	unsigned roles;
	uid_t uid;
	int fd;

	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	roles = session_peer_roles(s, fd, &uid);
	for (size_t i = 0; i < CONTROL_CONNS_MAX; i++)
		if (ctl->conns[i].fd < 0) {
			if (session_watch(s, fd, SESSION_EV_CONTROL_CONN, (unsigned)i) < 0)
				break;
			ctl->conns[i].fd = fd;
			ctl->conns[i].deadline_ms = now_ms() + CONTROL_TIMEOUT_MS;
			/*
			 * The socket's mode is the first fence; its peer's uid the
			 * second. A refused peer is answered once its request is
			 * read: closed before, it might find no answer at all.
			 */
			ctl->conns[i].roles = roles;
			ctl->conns[i].uid = uid;
			if (roles == 0)
				log_warning(s->ctx,
					    "session '%s': refusing a control connection of uid "
					    "%u (no role)",
					    s->name, (unsigned)uid);
			timer_arm(ctl);
			return;
		}
	session_answer_error(fd, -EBUSY, "too many control connections at once, try again");
	close(fd);
}

static int
control_request(struct clip_session *s, size_t i, struct clip_error **reterr)
{
	struct session_control *ctl = s->control;
	char req[CONTROL_REQUEST_MAX + 1];
	int fd = ctl->conns[i].fd;
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	const char *role = NULL;
	unsigned roles, needs;
	char shown[48];
	size_t k;
	int handled;
	ssize_t n;

	n = recv(fd, req, sizeof(req) - 1, MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 1;
	/* One request a connection: it is answered, then closed. */
	ctl->conns[i].fd = -1;
	(void)epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
	timer_arm(ctl);
	if (n <= 0) {
		close(fd);
		return 1;
	}
	if (n > CONTROL_REQUEST_MAX || memchr(req, '\0', (size_t)n)) {
		session_answer_error(fd, -EMSGSIZE,
				     n > CONTROL_REQUEST_MAX ? "request too long"
							     : "a NUL in the request");
		close(fd);
		return 1;
	}
	req[n] = '\0';
	/* What may be quoted of it: a peer's words, never raw in a message. */
	for (k = 0; req[k] && k < sizeof(shown) - 1; k++)
		shown[k] =
			(unsigned char)req[k] < ' ' || (unsigned char)req[k] >= 0x7f ? '?' : req[k];
	shown[k] = '\0';
	roles = ctl->conns[i].roles;
	needs = session_request_needs(req, &role);
	if (roles == 0 || (!(roles & SESSION_PEER_ALL) && !(roles & needs))) {
		char message[192];

		if (roles)
			snprintf(message, sizeof(message), "uid %u may not ask '%s': it needs %s",
				 (unsigned)ctl->conns[i].uid, shown, role);
		else
			snprintf(message, sizeof(message),
				 "uid %u may not control session '%s' (it has no role)",
				 (unsigned)ctl->conns[i].uid, s->name);
		session_answer_error(fd, -EPERM, message);
		if (roles)
			log_warning(s->ctx, "session '%s': uid %u refused a request that needs %s",
				    s->name, (unsigned)ctl->conns[i].uid, role);
	} else if (session_roles_read(s, fd, req)) {
		/* Reads: they change nothing, and are not recorded. */
	} else if ((handled = session_roles_change(s, req, &e)) != 0) {
		/* Recorded before it is answered: an "ok" is in the trail already. */
		session_answer_change(
			fd, handled, e,
			session_roles_audit(s, ctl->conns[i].uid, roles, req, handled));
	} else if (strcmp(req, "watch") == 0) {
		/* The connection stays open: the session's events stream on it. */
		session_watch_add(s, fd);
		return 1;
	} else if (strcmp(req, "status") == 0) {
		struct clip_session_status *st = NULL;
		_cleanup_free_ char *text = NULL;

		if (clip_session_get_status(s, &st, NULL) < 0 || !(text = status_format(st)))
			session_answer_error(fd, -ENOMEM, "out of memory");
		else
			session_answer_text(fd, text);
		clip_session_status_free(st);
	} else if (strncmp(req, "restart ", 8) == 0) {
		int r = clip_session_restart_cage(s, req + 8, 0, &e);

		session_answer_change(fd, r, e,
				      session_roles_audit(s, ctl->conns[i].uid, roles, req, r));
	} else if (strcmp(req, "stop") == 0) {
		/* Answered once done: the client's "ok" means nothing is left. */
		int r;

		log_notice(s->ctx, "session '%s': stop asked on the control socket by uid %u",
			   s->name, (unsigned)ctl->conns[i].uid);
		session_roles_audit(s, ctl->conns[i].uid, roles, req, 0);
		r = clip_session_stop(s, 0, &e);
		if (r < 0)
			session_answer_error(fd, r, clip_error_get_message(e));
		else
			session_answer_text(fd, "ok\n");
	} else {
		session_answer_error(
			fd, -EINVAL,
			"unknown request (status, stop, restart CAGE, start CAGE, stop CAGE, "
			"reload, trail, audit-key, watch)");
		log_notice(s->ctx, "session '%s': unknown control request '%s'", s->name, shown);
	}
	close(fd);
	(void)reterr;
	return 1;
}

static void
control_timeout(struct clip_session *s)
{
	struct session_control *ctl = s->control;
	uint64_t ticks;
	long long now = now_ms();

	if (read(ctl->timer_fd, &ticks, sizeof(ticks)) < 0)
		ticks = 0;
	for (size_t i = 0; i < CONTROL_CONNS_MAX; i++)
		if (ctl->conns[i].fd >= 0 && ctl->conns[i].deadline_ms <= now)
			conn_close(s, i);
	timer_arm(ctl);
}

int
session_control_dispatch(struct clip_session *s, uint64_t tag, struct clip_error **reterr)
{
	unsigned kind = (unsigned)(tag >> 32), index = (unsigned)tag;

	if (!s->control)
		return 1;
	switch (kind) {
	case SESSION_EV_CONTROL:
		if (index == 0)
			control_accept(s, s->control_fd);
		else if (index <= SESSION_ROLES && s->control->role_fds[index - 1] >= 0)
			control_accept(s, s->control->role_fds[index - 1]);
		return 1;
	case SESSION_EV_CONTROL_CONN:
		if (index < CONTROL_CONNS_MAX && s->control->conns[index].fd >= 0)
			return control_request(s, index, reterr);
		return 1;
	case SESSION_EV_CONTROL_TIMER:
		control_timeout(s);
		return 1;
	}
	return 1;
}

/* -- the client ------------------------------------------------------- */

/* A decimal number of at most @max, the whole of @text: 0 or -EPROTO. */
static int
untrusted_uint(const char *text, unsigned long max, unsigned *ret)
{
	unsigned long v = 0;

	if (!*text || strlen(text) > 10)
		return -EPROTO;
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9' || (p == text && *p == '0' && p[1]))
			return -EPROTO;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v > max)
		return -EPROTO;
	*ret = (unsigned)v;
	return 0;
}

/* Split @line at spaces into at most @max fields: their number, or -EPROTO for more. */
static int
split(char *line, char **fields, int max)
{
	int n = 0;

	for (char *p = line;;) {
		char *sp = strchr(p, ' ');

		if (n == max)
			return -EPROTO;
		fields[n++] = p;
		if (!sp)
			return n;
		*sp = '\0';
		p = sp + 1;
	}
}

/* The status lines after "ok\n", as the runner sent them; every field checked. */
static int
status_parse(char *untrusted_text, struct clip_session_status **ret)
{
	_cleanup_free_ struct clip_session_status *st = calloc(1, sizeof(*st));
	char *line = untrusted_text, *next, *f[8];
	bool first = true;
	unsigned agent;

	if (!st)
		return -ENOMEM;
	for (; *line; line = next) {
		int n;

		next = strchr(line, '\n');
		if (!next)
			return -EPROTO;
		*next++ = '\0';
		n = split(line, f, 8);
		if (first) {
			if (n != 3 || strcmp(f[0], "mediator") != 0 ||
			    untrusted_uint(f[1], UINT_MAX, &st->pending) < 0 ||
			    untrusted_uint(f[2], 1, &agent) < 0)
				return -EPROTO;
			st->agent = (int)agent;
			first = false;
			continue;
		}
		{
			struct status_cage *c = &st->cages[st->n_cages];
			struct clip_level *level = NULL;
			unsigned state;
			int parsed;

			if (n != 7)
				return -EPROTO;
			/* The level's own parser: strict, bounded. */
			parsed = strlen(f[3]) <= CONTROL_LEVEL_MAX
					 ? clip_level_parse(&level, f[3], NULL)
					 : -EPROTO;
			clip_level_unref(level);
			if (strcmp(f[0], "cage") != 0 || st->n_cages == CLIP_SESSION_CAGES_MAX ||
			    !session_name_valid(f[1]) ||
			    untrusted_uint(f[2], CLIP_CAGE_STOPPED, &state) < 0 ||
			    (state != CLIP_CAGE_RUNNING && state != CLIP_CAGE_STOPPED) ||
			    parsed < 0 || untrusted_uint(f[4], CONTROL_PIDS_MAX, &c->pids) < 0 ||
			    untrusted_uint(f[5], UINT_MAX, &c->missing) < 0 ||
			    untrusted_uint(f[6], UINT_MAX, &c->restarts) < 0)
				return -EPROTO;
			/* Sorted by name, each once. */
			if (st->n_cages > 0 && strcmp(st->cages[st->n_cages - 1].name, f[1]) >= 0)
				return -EPROTO;
			strcpy(c->name, f[1]);
			strcpy(c->level, f[3]);
			c->state = (int)state;
			st->n_cages++;
		}
	}
	if (first)
		return -EPROTO;
	*ret = steal_ptr(st);
	return 0;
}

int
session_client_check(struct clip_ctx *ctx, const char *session, const char *state_dir,
		     const char *func, struct clip_error **reterr)
{
	ctx_assert_return_error(ctx, reterr);
	session_assert_arg(session && session_name_valid(session), reterr, "%s: bad session name",
			   func);
	session_assert_arg(!state_dir || state_dir[0] == '/', reterr,
			   "%s: the state directory is not absolute", func);
	return 0;
}

/* Connect to the control socket of @session (in @state_dir, or the context's default) through
 * the directory's fd: the fd, or -errno with a message. */
int
session_control_connect(struct clip_ctx *ctx, const char *session, const char *state_dir,
			struct clip_error **reterr)
{
	static const char *const sockets[] = { SESSION_CONTROL_SOCKET, SESSION_ADMIN_SOCKET,
					       SESSION_AUDIT_SOCKET };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int dfd = -1, fd = -1;
	int first = 0;

	if (!state_dir && !clip_ctx_get_state_dir(ctx))
		return error_set(reterr, -EINVAL, "session '%s': no state directory to find it in",
				 session);
	dir = session_state_path_for(ctx, session, state_dir);
	if (!dir)
		return -ENOMEM;
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return error_set(reterr, -ESRCH, "session '%s' is not running (no %s)", session,
				 dir);
	if (dfd < 0 && (errno == EACCES || errno == EPERM))
		return error_set(reterr, -EPERM, "uid %u may not control session '%s' (%s)",
				 (unsigned)geteuid(), session, dir);
	if (dfd < 0)
		return error_set_errno(reterr, -errno, "cannot open %s", dir);
	/* The runner's own socket, else a role's: the first this uid may reach. */
	for (size_t i = 0; i < ELEMENTSOF(sockets); i++) {
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return error_set_errno(reterr, -errno, "cannot create a socket");
		snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dfd, sockets[i]);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return steal_fd(fd);
		if (i == 0)
			first = errno;
		close(fd);
		fd = -1;
		/* Only a uid refused the runner's socket tries the roles'. */
		if (first != EACCES && first != EPERM)
			break;
	}
	errno = first;
	if (errno == ENOENT || errno == ECONNREFUSED)
		return error_set(reterr, -ESRCH, "no runner of session '%s' answers at %s/%s",
				 session, dir, SESSION_CONTROL_SOCKET);
	if (errno == EACCES || errno == EPERM)
		return error_set(reterr, -EPERM,
				 "uid %u may not control session '%s' (%s/%s, and no role's socket "
				 "lets it in)",
				 (unsigned)geteuid(), session, dir, SESSION_CONTROL_SOCKET);
	return error_set_errno(reterr, -errno, "cannot connect to %s/%s", dir,
			       SESSION_CONTROL_SOCKET);
}

int
session_control_request(struct clip_ctx *ctx, const char *session, const char *state_dir,
			const char *request, int timeout_ms, struct clip_error **reterr)
{
	_cleanup_close_ int fd = session_control_connect(ctx, session, state_dir, reterr);
	int r;

	if (fd < 0)
		return fd;
	/* A runner that refused at once may have answered already: the caller reads it. */
	if (send(fd, request, strlen(request), MSG_NOSIGNAL) < 0 && errno != EPIPE &&
	    errno != ECONNRESET)
		return error_set_errno(reterr, -errno, "session '%s': cannot send", session);
	r = wait_readable(fd, now_ms() + timeout_ms);
	if (r == -ETIMEDOUT)
		return error_set(reterr, -ESRCH, "session '%s': no answer within %d s", session,
				 timeout_ms / 1000);
	if (r < 0)
		return error_set_errno(reterr, r, "session '%s': cannot wait for the answer",
				       session);
	return steal_fd(fd);
}

/* "error ERRNO MESSAGE\n" from the runner: its errno and its message, or -EPROTO. */
int
session_answer_error_parse(const char *session, char *untrusted_text, struct clip_error **reterr)
{
	char *sp = strchr(untrusted_text, ' '), *end = strchr(untrusted_text, '\n');
	unsigned err;

	if (!sp || !end || end[1] != '\0')
		return error_set(reterr, -EPROTO, "session '%s': a malformed answer", session);
	*sp = *end = '\0';
	if (untrusted_uint(untrusted_text, 4095, &err) < 0 || err == 0)
		return error_set(reterr, -EPROTO, "session '%s': a malformed error number",
				 session);
	for (char *p = sp + 1; *p; p++)
		if ((unsigned char)*p < ' ' || (unsigned char)*p == 0x7f)
			*p = '?';
	return error_set(reterr, -(int)err, "session '%s': %.512s", session, sp + 1);
}

CLIP_EXPORT int
clip_session_control(struct clip_ctx *ctx, const char *session, const char *state_dir,
		     const char *request, struct clip_session_status **ret_status,
		     struct clip_error **reterr)
{
	_cleanup_free_ char *untrusted_answer = NULL;
	_cleanup_close_ int fd = -1;
	ssize_t n;
	int r;

	clip_assert_reterr(reterr);
	r = session_client_check(ctx, session, state_dir, __func__, reterr);
	if (r < 0)
		return r;
	session_assert_arg(request && *request && strlen(request) <= CONTROL_REQUEST_MAX, reterr,
			   "%s: the request is NULL, empty or longer than %d bytes", __func__,
			   CONTROL_REQUEST_MAX);
	session_assert_arg(!ret_status || strcmp(request, "status") == 0, reterr,
			   "%s: a status comes only from \"status\"", __func__);
	fd = session_control_request(ctx, session, state_dir, request, CONTROL_CLIENT_TIMEOUT_MS,
				     reterr);
	if (fd < 0)
		return api_return(fd, reterr);
	untrusted_answer = malloc(CONTROL_ANSWER_MAX + 1);
	if (!untrusted_answer)
		return api_return(-ENOMEM, reterr);
	n = recv(fd, untrusted_answer, CONTROL_ANSWER_MAX, MSG_TRUNC | MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return api_return(error_set(reterr, -ECONNRESET,
					    "session '%s': the runner closed without an answer",
					    session),
				  reterr);
	if (n < 0)
		return api_return(
			error_set_errno(reterr, -errno, "session '%s': cannot receive", session),
			reterr);
	if (n > CONTROL_ANSWER_MAX || memchr(untrusted_answer, '\0', (size_t)n))
		return api_return(
			error_set(reterr, -EPROTO, "session '%s': a malformed answer", session),
			reterr);
	untrusted_answer[n] = '\0';
	if (strncmp(untrusted_answer, "error ", 6) == 0)
		return api_return(session_answer_error_parse(session, untrusted_answer + 6, reterr),
				  reterr);
	if (strncmp(untrusted_answer, "ok\n", 3) != 0)
		return api_return(
			error_set(reterr, -EPROTO, "session '%s': a malformed answer", session),
			reterr);
	if (strcmp(request, "status") != 0) {
		if (untrusted_answer[3] != '\0')
			return api_return(error_set(reterr, -EPROTO,
						    "session '%s': a malformed answer", session),
					  reterr);
		return 0;
	}
	{
		struct clip_session_status *st = NULL;

		r = status_parse(untrusted_answer + 3, &st);
		if (r == -EPROTO)
			r = error_set(reterr, r, "session '%s': a malformed status", session);
		if (r < 0)
			return api_return(r, reterr);
		if (ret_status)
			*ret_status = st;
		else
			clip_session_status_free(st);
	}
	return 0;
}

/* A runner that is gone: its registered cages (SESSION.*) stopped. The number, or -errno. */
static int
down_cages(struct clip_ctx *ctx, const char *session)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	size_t len = strlen(session);
	char **names = NULL;
	int n, stopped = 0, r = 0;

	n = clip_cage_list(ctx, &names, &e);
	if (n < 0) {
		log_err(ctx, "session '%s': cannot list the cages: %s", session,
			clip_error_get_message(e));
		return n;
	}
	for (int i = 0; i < n; i++) {
		if (strncmp(names[i], session, len) == 0 && names[i][len] == '.') {
			int k = session_stop_leftover(ctx, session, names[i], SESSION_GRACE_MS);

			if (k > 0)
				stopped++;
			else if (k < 0 && r == 0)
				r = k;
		}
		free(names[i]);
	}
	free(names);
	return r < 0 ? r : stopped;
}

CLIP_EXPORT int
clip_session_down(struct clip_ctx *ctx, const char *session, const char *state_dir,
		  struct clip_error **reterr)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int fd = -1;
	int r, cages, keys;

	clip_assert_reterr(reterr);
	r = session_client_check(ctx, session, state_dir, __func__, reterr);
	if (r < 0)
		return r;
	r = clip_session_control(ctx, session, state_dir, "stop", NULL, &e);
	/* Closed without an answer: it died as it was asked, or was dying (its lock says). */
	if (r != -ESRCH && r != -ECONNRESET) {
		if (r < 0)
			r = error_set(reterr, r, "%s", clip_error_get_message(e));
		return api_return(r, reterr);
	}
	/* No runner: what it left, under the lock a runner takes, so that none starts meanwhile. */
	dir = session_state_path_for(ctx, session, state_dir);
	if (!dir)
		return api_return(-ENOMEM, reterr);
	/* Cages are named SESSION.CAGE in the context's registry: nothing is
	   stopped by this name without this state directory, and its lock. */
	fd = dir_open_walk(dir, false, "session state directory", reterr);
	if (fd == -ENOENT)
		return api_return(error_set(reterr, -ESRCH, "session '%s' is not running (no %s)",
					    session, dir),
				  reterr);
	if (fd < 0)
		return api_return(fd, reterr);
	/*
	 * A runner killed a moment ago may leave children that hold its lock
	 * (and its control socket, which then closes without an answer) for
	 * as long as they take to go: waited for, DOWN_LOCK_TRIES times
	 * DOWN_LOCK_TRY_NS at most.
	 */
	for (int i = 0;; i++) {
		r = flock(fd, LOCK_EX | LOCK_NB) < 0 ? -errno : 0;
		if (r != -EWOULDBLOCK || i == DOWN_LOCK_TRIES)
			break;
		(void)nanosleep(&(struct timespec){ .tv_nsec = DOWN_LOCK_TRY_NS }, NULL);
	}
	if (r < 0) {
		r = r == -EWOULDBLOCK
			    ? error_set(reterr, -EBUSY,
					"session '%s': a runner holds %s but does not answer: it "
					"is starting, or stuck",
					session, dir)
			    : error_set_errno(reterr, r, "cannot lock %s", dir);
		return api_return(r, reterr);
	}
	cages = down_cages(ctx, session);
	keys = session_crypt_lock_leftovers(ctx, session, fd);
	if (cages < 0 || keys < 0)
		return api_return(error_set(reterr, cages < 0 ? cages : keys,
					    "session '%s': its runner is gone, and what it left "
					    "could not all be taken down (the log says what)",
					    session),
				  reterr);
	if (cages == 0 && keys == 0)
		return api_return(error_set(reterr, -ESRCH,
					    "session '%s' is not running, and no runner left "
					    "anything of it",
					    session),
				  reterr);
	log_notice(ctx, "session '%s': its runner was gone: %d cages stopped, %d levels locked",
		   session, cages, keys);
	return 1;
}
