/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clipd: the reference daemon around the transfer mediator. See clipd(8).
 *
 *   clipd --config DIR [--state-dir DIR] [--agent-socket PATH] [--ready-fd N]
 *   clipd --session FILE [--state-dir DIR] [--ready-fd N] [--secret-fd N]
 *
 * DIR/cages lists the cages ("NAME LEVEL INBOX SOCKET [uid=N] [rate=N]
 * [burst=N]"), DIR/policy is the policy (clip.policy(5)). One socket per
 * cage. With --session, clipd is a session's runner (clip.session(5)): the
 * library derives and starts the cages, their inboxes and sockets and the
 * mediator (clip-session(3)); clipd serves each cage's socket through its
 * front, as below, and stops the session on SIGTERM, or on a "stop" that
 * comes through the session's control socket.
 *
 * Privilege separation: each cage's socket is served by its own front
 * process, which runs as a uid of its own in an empty root, with no
 * capabilities and no new privileges, under a seccomp allowlist, its
 * stderr a log pipe of its own (front.c). It accepts, reads and strictly
 * decodes what the cage sends, and passes on only well-formed requests
 * (re-encoded) over a socketpair to the main process, which holds the
 * mediator, the inboxes and the audit log. A front speaks for one cage
 * only: taking one over gains nothing but that cage's own identity.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <clip/clip.h>

/* The wire format is the library's; clipd's fronts use its decoder. */
#include "base/test-hooks.h"
#include "transfer/proto.h"

#include "front.h"

#define CAGES_MAX 64
#define CONFIG_MAX (64 * 1024)
#define FRONT_CONNS_MAX 128
/* A front's refusals: at most so many records per window per cage. */
#define REJECT_WINDOW_S 10
#define REJECT_RECORDS 16

struct cage_conf {
	char name[PROTO_CAGE_MAX + 1];
	struct clip_level *level;
	char *inbox, *socket;
	int check_uid;
	uint32_t uid;
	uint32_t rate_per_s, rate_burst; /* 0: the mediator's defaults */
	int inbox_fd, listen_fd, ctrl_fd, log_fd;
	struct front_log log; /* what its front writes to its stderr */
	pid_t front;
	time_t reject_window; /* when the window of its refusals began */
	unsigned reject_records; /* recorded in that window */
	unsigned long reject_unrecorded; /* refused since the last record */
};

static struct {
	const char *config_dir, *state_dir, *agent_socket, *session_file;
	int ready_fd, verbose, no_privsep, rootless;
	int secret_fd; /* --secret-fd: the user secret of the levels' data keys */
	uint32_t timeout_ms;
	uint64_t pending_max_per_target, pending_max_per_source; /* 0: the mediator's defaults */
	struct cage_conf cages[CAGES_MAX];
	size_t n_cages;
	struct clip_session *session; /* --session */
	int session_stopped; /* a "stop" came through the control socket */
} arg = { .ready_fd = -1, .secret_fd = -1, .agent_socket = "/run/clip/confirm.sock" };

static void
log_stderr(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	fprintf(stderr, "clipd: %s\n", message);
}

static int
fail(const char *what, struct clip_error *error)
{
	fprintf(stderr, "clipd: %s: %s\n", what, error ? clip_error_get_message(error) : "");
	clip_error_free(error);
	return EXIT_FAILURE;
}

static char *
read_config(const char *name, size_t *ret_size)
{
	char path[4096];
	char *buf;
	size_t n = 0;
	ssize_t k;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", arg.config_dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		fprintf(stderr, "clipd: cannot open %s: %m\n", path);
		return NULL;
	}
	buf = malloc(CONFIG_MAX + 1);
	while (buf && n <= CONFIG_MAX && (k = read(fd, buf + n, CONFIG_MAX + 1 - n)) > 0)
		n += (size_t)k;
	close(fd);
	if (buf && n > CONFIG_MAX) {
		fprintf(stderr, "clipd: %s is over %d bytes\n", path, CONFIG_MAX);
		free(buf);
		return NULL;
	}
	if (buf)
		buf[n] = '\0';
	*ret_size = n;
	return buf;
}

/* One "key=value" after the four fields; 0, or -1 when it is not known. */
static int
cage_option(struct cage_conf *c, const char *opt)
{
	unsigned long v;
	char *end;

	if (strcmp(opt, "rate=unlimited") == 0) {
		c->rate_per_s = CLIP_MEDIATOR_RATE_UNLIMITED;
		return 0;
	}
	if (strncmp(opt, "uid=", 4) && strncmp(opt, "rate=", 5) && strncmp(opt, "burst=", 6))
		return -1;
	errno = 0;
	v = strtoul(strchr(opt, '=') + 1, &end, 10);
	if (errno || *end || end == strchr(opt, '=') + 1 || v >= UINT32_MAX)
		return -1;
	if (opt[0] == 'u') {
		/* The fronts' own uids are no cage's. */
		if (v >= FRONT_UID_BASE && v < FRONT_UID_BASE + FRONT_UIDS)
			return -1;
		c->check_uid = 1;
		c->uid = (uint32_t)v;
	} else if (v == 0)
		return -1;
	else if (opt[0] == 'r')
		c->rate_per_s = (uint32_t)v;
	else
		c->rate_burst = (uint32_t)v;
	return 0;
}

/* DIR/cages: "NAME LEVEL INBOX SOCKET [OPTIONS]" per line, # comments. */
static int
load_cages(void)
{
	size_t size;
	char *text = read_config("cages", &size), *save = NULL, *line;
	unsigned lineno = 0;

	if (!text)
		return -1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128], level[256], inbox[1024], sock[1024], extra[3][64], more[2];
		struct cage_conf *c = &arg.cages[arg.n_cages];
		struct clip_error *error = NULL;
		int n, bad = 0;

		lineno++;
		if (line[strspn(line, " \t")] == '#' || line[strspn(line, " \t")] == '\0')
			continue;
		if (arg.n_cages == CAGES_MAX)
			bad = 1;
		else
			*c = (struct cage_conf){ 0 };
		n = bad ? 0
			: sscanf(line, "%127s %255s %1023s %1023s %63s %63s %63s %1s", name, level,
				 inbox, sock, extra[0], extra[1], extra[2], more);
		for (int i = 4; i < n && !bad; i++)
			bad = i == 7 || cage_option(c, extra[i - 4]) < 0;
		if (bad || n < 4 || inbox[0] != '/' || sock[0] != '/' ||
		    !proto_cage_name_valid(name, strlen(name))) {
			fprintf(stderr,
				"clipd: %s/cages:%u: want NAME LEVEL /INBOX /SOCKET [uid=N] "
				"[rate=N|unlimited] [burst=N]\n",
				arg.config_dir, lineno);
			free(text);
			return -1;
		}
		if (clip_level_parse(&c->level, level, &error) < 0) {
			fprintf(stderr, "clipd: %s/cages:%u: %s\n", arg.config_dir, lineno,
				clip_error_get_message(error));
			clip_error_free(error);
			free(text);
			return -1;
		}
		strcpy(c->name, name);
		c->inbox = strdup(inbox);
		c->socket = strdup(sock);
		c->inbox_fd = c->listen_fd = c->ctrl_fd = c->log_fd = -1;
		arg.n_cages++;
	}
	free(text);
	return 0;
}

static int
listen_at(const char *path, mode_t mode)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* A socket left by a killed clipd. */
	(void)unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, mode) < 0 ||
	    listen(fd, 128) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

/* --- the front: one per cage, unprivileged, under seccomp --- */

struct relay {
	int client, up;
};

/* To the main process: 'C' and a connection's fd, or 'R' and why a request was refused. */
static int
send_ctrl(int ctrl, char kind, const char *text, int fd)
{
	char body[PROTO_TEXT_MAX + 2];
	int n;

	body[0] = kind;
	n = snprintf(body + 1, sizeof(body) - 1, "%s", text ? text : "");
	return proto_send_raw(ctrl, body,
			      1 + (n < (int)sizeof(body) - 1 ? (size_t)n : sizeof(body) - 2), fd);
}

/*
 * A descriptor from the cage, closed without waiting: a socket with
 * SO_LINGER and unsent data, or one with such sockets queued in it, would
 * hold the front in close() as long as the cage chose, and with it every
 * other connection of that cage.
 */
static void
front_close_untrusted(int fd)
{
	if (fd < 0)
		return;
	if (!test_hook_disabled("front-fd-close"))
		proto_fd_defuse(fd);
	close(fd);
}

static void
front_drop_fd(int fd, void *userdata)
{
	front_close_untrusted(fd);
}

/* Its copy of a message's document, defused before it is released. */
static void
front_msg_done(struct proto_msg *msg)
{
	front_close_untrusted(msg->fd);
	msg->fd = -1;
	proto_msg_done(msg);
}

static void
relay_close(struct relay *r)
{
	front_close_untrusted(r->client);
	close(r->up);
	r->client = r->up = -1;
}

/* What the cage sent: decoded strictly here, re-encoded upstream. */
static void
front_from_client(int ctrl, struct relay *r)
{
	struct clip_error *error = NULL;
	struct proto_msg msg;
	int k;

	k = proto_recv_with(r->client, &msg, front_drop_fd, NULL, &error);
	if (k == -EAGAIN)
		return;
	if (k == 0 && msg.type != PROTO_REQUEST && msg.type != PROTO_REPORT) {
		front_msg_done(&msg);
		k = -EBADMSG;
		error = NULL;
		(void)send_ctrl(ctrl, 'R', "a cage may only send requests and reports", -1);
	} else if (k == -EBADMSG)
		(void)send_ctrl(ctrl, 'R', clip_error_get_message(error), -1);
	clip_error_free(error);
	if (k < 0) {
		relay_close(r);
		return;
	}
	if (proto_send(r->up, &msg, NULL) < 0)
		relay_close(r);
	front_msg_done(&msg);
}

static void
front_from_up(struct relay *r)
{
	struct proto_msg msg;
	int k;

	k = proto_recv(r->up, &msg, NULL);
	if (k == -EAGAIN)
		return;
	if (k < 0 || msg.type != PROTO_REPLY || proto_send(r->client, &msg, NULL) < 0) {
		proto_msg_done(&msg);
		relay_close(r);
	}
}

static void
front_accept(struct cage_conf *c, int ctrl, struct relay *relays, size_t *n)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd, sp[2];

	fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    (c->check_uid && cred.uid != c->uid && !test_hook_disabled("mediator-peer-uid")) ||
	    *n == FRONT_CONNS_MAX ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0) {
		(void)send_ctrl(ctrl, 'R', "a peer was refused (uid, or too many connections)", -1);
		front_close_untrusted(fd);
		return;
	}
	if (send_ctrl(ctrl, 'C', NULL, sp[1]) < 0) {
		close(fd), close(sp[0]), close(sp[1]);
		return;
	}
	close(sp[1]);
	relays[*n] = (struct relay){ fd, sp[0] };
	(*n)++;
}

static void __attribute__((noreturn)) front_run(struct cage_conf *c, int ctrl)
{
	static struct relay relays[FRONT_CONNS_MAX];
	struct pollfd p[2 + 2 * FRONT_CONNS_MAX];
	size_t n = 0;

	int flags = front_sandbox((unsigned)(c - arg.cages));

	/* Its stderr is its log channel: the main process says whose line it is. */
	if (flags < 0) {
		fprintf(stderr, "cannot confine itself: %s\n", strerror(-flags));
		_exit(EXIT_FAILURE);
	}
	if (flags & FRONT_SHARED_UID)
		fprintf(stderr, "one id only here: the fronts share a uid, each in a user "
				"namespace of its own\n");
	if (flags & FRONT_HOST_VIEW)
		fprintf(stderr, "no mount namespace of its own here: host paths stay in sight\n");
	if (arg.verbose && !(flags & FRONT_SHARED_UID))
		fprintf(stderr, "confined: uid %u\n", front_uid((unsigned)(c - arg.cages)));
	for (;;) {
		size_t k = 0;

		/* Compact the closed relays away. */
		for (size_t i = 0; i < n;)
			if (relays[i].client < 0)
				relays[i] = relays[--n];
			else
				i++;
		p[0] = (struct pollfd){ .fd = c->listen_fd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = ctrl, .events = POLLIN };
		for (size_t i = 0; i < n; i++) {
			p[2 + 2 * i] = (struct pollfd){ .fd = relays[i].client, .events = POLLIN };
			p[3 + 2 * i] = (struct pollfd){ .fd = relays[i].up, .events = POLLIN };
		}
		if (poll(p, 2 + 2 * n, -1) < 0)
			continue;
		if (p[1].revents)
			_exit(0); /* the main process went away */
		for (size_t i = 0; i < n; i++) {
			if (relays[i].client >= 0 && p[2 + 2 * i].revents)
				front_from_client(ctrl, &relays[i]);
			if (relays[i].client >= 0 && p[3 + 2 * i].revents)
				front_from_up(&relays[i]);
		}
		if (p[0].revents)
			front_accept(c, ctrl, relays, &n);
		(void)k;
	}
}

static int
front_start(struct cage_conf *c)
{
	int sp[2], lp[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	/* Its log: a pipe of its own, never blocking it (a full pipe loses lines). */
	if (pipe2(lp, O_CLOEXEC | O_NONBLOCK) < 0) {
		close(sp[0]), close(sp[1]);
		return -errno;
	}
	c->front = fork();
	if (c->front < 0)
		return -errno;
	if (c->front == 0) {
		/*
		 * Only this cage's socket (fd 3), the channel up (fd 4) and its
		 * log (fds 1 and 2) stay open: not the inboxes, the audit log
		 * (its lock would outlive a killed main process), the
		 * mediator's fds, other cages', or clipd's own stderr.
		 */
		int l = fcntl(c->listen_fd, F_DUPFD_CLOEXEC, 64),
		    u = fcntl(sp[1], F_DUPFD_CLOEXEC, 64), w = fcntl(lp[1], F_DUPFD_CLOEXEC, 64),
		    z = open("/dev/null", O_RDONLY | O_CLOEXEC);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (l < 0 || u < 0 || w < 0 || dup3(l, 3, O_CLOEXEC) < 0 ||
		    dup3(u, 4, O_CLOEXEC) < 0 || dup3(w, 2, O_CLOEXEC) < 0 ||
		    dup3(w, 1, O_CLOEXEC) < 0 || (z >= 0 && z != 0 && dup3(z, 0, O_CLOEXEC) < 0) ||
		    syscall(SYS_close_range, 5, ~0u, 0) < 0)
			_exit(EXIT_FAILURE);
		if (z < 0)
			close(0);
		c->listen_fd = 3;
		front_run(c, 4);
	}
	close(sp[1]);
	close(lp[1]);
	close(c->listen_fd);
	c->listen_fd = -1;
	c->ctrl_fd = sp[0];
	c->log_fd = lp[0];
	return 0;
}

/* --- the main process --- */

/*
 * What a front refused: recorded, but at most REJECT_RECORDS times per
 * window per cage (then counted, and the count recorded with the next
 * one), so that a cage sending garbage in a loop cannot make us write the
 * log as fast as the disk allows; the mediator bounds requests with a
 * token bucket per cage.
 */
static void
front_rejected(struct clip_audit *audit, struct cage_conf *c, const char *why)
{
	struct timespec now;
	struct clip_error *error = NULL;
	char reason[PROTO_TEXT_MAX + 64];
	struct clip_audit_entry e = { .size = sizeof(e),
				      .event = "rejected",
				      .source = c->name,
				      .decision = "deny",
				      .decided_by = "clipd front",
				      .reason = reason };

	(void)clock_gettime(CLOCK_MONOTONIC, &now);
	if (!c->reject_window || now.tv_sec - c->reject_window >= REJECT_WINDOW_S) {
		c->reject_window = now.tv_sec ? now.tv_sec : 1;
		c->reject_records = 0;
	}
	if (c->reject_records == REJECT_RECORDS) {
		c->reject_unrecorded++;
		return;
	}
	if (c->reject_unrecorded)
		snprintf(reason, sizeof(reason), "%s; %lu more refused, not recorded", why,
			 c->reject_unrecorded);
	else
		snprintf(reason, sizeof(reason), "%s", why);
	c->reject_records++;
	c->reject_unrecorded = 0;
	fprintf(stderr, "clipd: cage '%s': %s\n", c->name, reason);
	if (clip_audit_append(audit, &e, &error) < 0)
		fail("cannot audit", error);
}

static void
from_front(struct clip_mediator *m, struct clip_audit *audit, struct cage_conf *c)
{
	char body[PROTO_TEXT_MAX + 2] = { 0 };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	struct iovec iov = { .iov_base = body, .iov_len = sizeof(body) - 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control.buf,
			     .msg_controllen = sizeof(control.buf) };
	struct clip_error *error = NULL;
	struct cmsghdr *cm;
	int fd = -1;
	ssize_t n;

	n = recvmsg(c->ctrl_fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n <= 0)
		return;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (body[0] == 'C' && fd >= 0) {
		/* Refused over its cap: recorded as the front's refusals are, boundedly. */
		if (clip_mediator_add_connection(m, c->name, fd, &error) < 0)
			front_rejected(audit, c, clip_error_get_message(error));
		clip_error_free(error);
	} else if (body[0] == 'R')
		front_rejected(audit, c, body + 1);
	if (fd >= 0)
		close(fd);
}

static void
notify_ready(void)
{
	const char *sock = getenv("NOTIFY_SOCKET");

	if (arg.ready_fd >= 0) {
		if (write(arg.ready_fd, "READY=1\n", 8) != 8)
			fprintf(stderr, "clipd: cannot write to the ready fd: %m\n");
		close(arg.ready_fd);
	}
	if (sock && (sock[0] == '/' || sock[0] == '@') && strlen(sock) < 108) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(sock));
		int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		strcpy(sa.sun_path, sock);
		if (sa.sun_path[0] == '@')
			sa.sun_path[0] = '\0';
		if (fd >= 0)
			(void)sendto(fd, "READY=1", 7, MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
		if (fd >= 0)
			close(fd);
	}
}

static int setup_session(struct clip_ctx *ctx, struct clip_audit **audit, struct clip_mediator **m);

static int
setup(struct clip_ctx **ctx, struct clip_audit **audit, struct clip_mediator **m)
{
	struct clip_mediator_opts opts = { .size = sizeof(opts),
					   .confirm_timeout_ms = arg.timeout_ms,
					   .pending_max_per_target = arg.pending_max_per_target,
					   .pending_max_per_source = arg.pending_max_per_source,
					   .label_flags = arg.rootless ? CLIP_LABEL_ROOTLESS : 0 };
	struct clip_policy *policy = NULL;
	struct clip_error *error = NULL;
	char origin[4200];
	size_t size;
	char *text;
	int r, agent;

	if (clip_ctx_new(ctx) < 0)
		return EXIT_FAILURE;
	clip_ctx_set_log_fn(*ctx, log_stderr, NULL);
	clip_ctx_set_log_priority(*ctx, arg.verbose ? LOG_DEBUG : LOG_NOTICE);
	/* The library asserts an absolute path: a person is told here (issue 20, 9). */
	if (arg.state_dir && arg.state_dir[0] != '/') {
		fprintf(stderr, "clipd: bad --state-dir '%.200s': give an absolute path\n",
			arg.state_dir);
		return EXIT_FAILURE;
	}
	if (arg.state_dir && clip_ctx_set_state_dir(*ctx, arg.state_dir) < 0)
		return fail("bad state directory", NULL);
	if (arg.session_file) {
		if (arg.rootless && clip_ctx_set_cage_mode(*ctx, CLIP_CAGE_MODE_ROOTLESS) < 0)
			return fail("cannot choose the rootless mode", NULL);
		return setup_session(*ctx, audit, m);
	}
	if (load_cages() < 0)
		return EXIT_FAILURE;
	text = read_config("policy", &size);
	if (!text)
		return EXIT_FAILURE;
	snprintf(origin, sizeof(origin), "%s/policy", arg.config_dir);
	r = clip_policy_parse(&policy, text, size, origin, &error);
	free(text);
	if (r < 0)
		return fail("bad policy", error);
	/*
	 * One writer at a time: a clipd restarted at once after a crash may
	 * find the lock still held by a child of its predecessor on its way
	 * out. Wait for it a little (2 s), not for ever.
	 */
	for (int tries = 0;; tries++) {
		r = clip_audit_open(audit, *ctx, -1, NULL, CLIP_AUDIT_SYSLOG, &error);
		if (r != -EBUSY || tries == 40)
			break;
		clip_error_free(error);
		error = NULL;
		nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
	}
	if (r < 0) {
		clip_policy_unref(policy);
		return fail("cannot open the audit log", error);
	}
	r = clip_mediator_new(m, *ctx, policy, *audit, &opts, &error);
	clip_policy_unref(policy);
	if (r < 0)
		return fail("cannot create the mediator", error);
	for (size_t i = 0; i < arg.n_cages; i++) {
		struct cage_conf *c = &arg.cages[i];
		struct clip_mediator_cage mc = { .size = sizeof(mc),
						 .name = c->name,
						 .level = c->level,
						 /* With fronts, the front checks the peer. */
						 .check_uid = arg.no_privsep && c->check_uid,
						 .uid = c->uid,
						 .rate_per_s = c->rate_per_s,
						 .rate_burst = c->rate_burst };

		c->inbox_fd = open(c->inbox, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (c->inbox_fd < 0) {
			fprintf(stderr, "clipd: cannot open the inbox %s: %m\n", c->inbox);
			return EXIT_FAILURE;
		}
		/* The cage reaches it through a bind mount; the file system mode is not its fence. */
		c->listen_fd = listen_at(c->socket, 0666);
		if (c->listen_fd < 0) {
			fprintf(stderr, "clipd: cannot listen on %s: %s\n", c->socket,
				strerror(-c->listen_fd));
			return EXIT_FAILURE;
		}
		mc.inbox_fd = c->inbox_fd;
		mc.socket_fd = arg.no_privsep ? c->listen_fd : -1;
		if (clip_mediator_add_cage(*m, &mc, &error) < 0)
			return fail("bad cage", error);
	}
	agent = listen_at(arg.agent_socket, 0600);
	if (agent < 0) {
		fprintf(stderr, "clipd: cannot listen on %s: %s\n", arg.agent_socket,
			strerror(-agent));
		return EXIT_FAILURE;
	}
	r = clip_mediator_add_agent_socket(*m, agent, &error);
	close(agent);
	if (r < 0)
		return fail("bad agent socket", error);
	for (size_t i = 0; i < arg.n_cages && !arg.no_privsep; i++)
		if (front_start(&arg.cages[i]) < 0) {
			fprintf(stderr, "clipd: cannot start the front of '%s': %m\n",
				arg.cages[i].name);
			return EXIT_FAILURE;
		}
	return 0;
}

static void
session_event(struct clip_session *s, int event, const char *cage, int status, void *userdata)
{
	switch (event) {
	case CLIP_SESSION_EVENT_CAGE_ENDED:
		fprintf(stderr, "clipd: cage '%s' ended (status %d)\n", cage, status);
		break;
	case CLIP_SESSION_EVENT_CAGE_RESTARTED:
		fprintf(stderr, "clipd: cage '%s' restarted\n", cage);
		break;
	case CLIP_SESSION_EVENT_CAGE_FAILED:
		fprintf(stderr, "clipd: cage '%s' is down and stays down\n", cage);
		break;
	case CLIP_SESSION_EVENT_STOPPED:
		arg.session_stopped = 1;
		break;
	}
}

/*
 * --secret-fd: the user secret, read whole (at most 4096 bytes, one final
 * newline dropped) from a descriptor, never from the arguments or the
 * environment; wiped once the session holds its copy.
 */
static int
session_secret(struct clip_session *s, int fd)
{
	char buf[4097];
	struct clip_error *error = NULL;
	size_t n = 0;
	ssize_t k;
	int r;

	while (n < sizeof(buf) && (k = read(fd, buf + n, sizeof(buf) - n)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			fprintf(stderr, "clipd: cannot read the secret from fd %d: %m\n", fd);
			return EXIT_FAILURE;
		}
		n += (size_t)k;
	}
	close(fd);
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n == 0 || n > sizeof(buf) - 1) {
		explicit_bzero(buf, sizeof(buf));
		fprintf(stderr, "clipd: the secret of fd %d is empty or longer than 4096 bytes\n",
			fd);
		return EXIT_FAILURE;
	}
	r = clip_session_set_secret(s, buf, n, &error);
	explicit_bzero(buf, sizeof(buf));
	return r < 0 ? fail("cannot take the secret", error) : 0;
}

/*
 * --session: the library starts the session; each cage's socket is then
 * served by a front of ours, exactly as a cage of DIR/cages is.
 */
static int
setup_session(struct clip_ctx *ctx, struct clip_audit **audit, struct clip_mediator **m)
{
	struct clip_session_status *st = NULL;
	struct clip_error *error = NULL;
	int r;

	r = clip_session_load(&arg.session, ctx, arg.session_file, &error);
	if (r < 0)
		return fail("bad session", error);
	clip_session_set_event_fn(arg.session, session_event, NULL);
	if (arg.secret_fd >= 0) {
		r = session_secret(arg.session, arg.secret_fd);
		if (r != 0)
			return r;
	}
	r = clip_session_start(arg.session,
			       arg.no_privsep ? 0 : CLIP_SESSION_START_EXTERNAL_SOCKETS, &error);
	if (r < 0)
		return fail("cannot start the session", error);
	r = clip_session_get_status(arg.session, &st, &error);
	if (r < 0)
		return fail("session status", error);
	for (size_t i = 0; i < clip_session_status_get_n_cages(st) && !arg.no_privsep; i++) {
		struct cage_conf *c = &arg.cages[arg.n_cages];
		const char *name =
			clip_session_status_get_cage(st, i, NULL, NULL, NULL, NULL, NULL);
		int fd = clip_session_get_socket_fd(arg.session, name);

		*c = (struct cage_conf){ .inbox_fd = -1, .ctrl_fd = -1, .log_fd = -1 };
		snprintf(c->name, sizeof(c->name), "%s", name);
		c->check_uid = clip_session_get_cage_uid(arg.session, name, &c->uid) == 0;
		c->listen_fd = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
		arg.n_cages++;
		if (c->listen_fd < 0 || front_start(c) < 0) {
			fprintf(stderr, "clipd: cannot start the front of '%s': %m\n", name);
			clip_session_status_free(st);
			return EXIT_FAILURE;
		}
	}
	clip_session_status_free(st);
	*m = clip_mediator_ref(clip_session_get_mediator(arg.session));
	*audit = clip_audit_ref(clip_session_get_audit(arg.session));
	return 0;
}

/* The end of serve(): a session is stopped, in order, before clipd exits. */
static int
serve_end(int r)
{
	struct clip_error *error = NULL;

	if (arg.session && !arg.session_stopped && clip_session_stop(arg.session, 0, &error) < 0) {
		fail("cannot stop the session", error);
		return EXIT_FAILURE;
	}
	return r;
}

static int
serve(struct clip_mediator *m, struct clip_audit *audit)
{
	struct pollfd p[2 + 2 * CAGES_MAX];
	size_t n = 2 + 2 * arg.n_cages;
	sigset_t mask;
	int sfd;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	p[0] = (struct pollfd){ .fd = arg.session ? clip_session_get_fd(arg.session)
						  : clip_mediator_get_fd(m),
				.events = POLLIN };
	p[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	for (size_t i = 0; i < arg.n_cages; i++) {
		p[2 + i] = (struct pollfd){ .fd = arg.cages[i].ctrl_fd, .events = POLLIN };
		p[2 + arg.n_cages + i] =
			(struct pollfd){ .fd = arg.cages[i].log_fd, .events = POLLIN };
	}
	notify_ready();
	for (;;) {
		if (poll(p, n, -1) < 0 && errno != EINTR)
			return EXIT_FAILURE;
		if (p[1].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) != sizeof(si))
				continue;
			if (si.ssi_signo != SIGCHLD)
				return serve_end(EXIT_SUCCESS);
			/* A filter is reaped where it ran; a front that died fails us closed. */
			for (size_t i = 0; i < arg.n_cages; i++)
				if (arg.cages[i].front > 0 &&
				    waitpid(arg.cages[i].front, NULL, WNOHANG) > 0) {
					struct cage_conf *c = &arg.cages[i];

					/* Its last words first (to the end of its pipe). */
					while (c->log_fd >= 0 &&
					       front_log_read(&c->log, c->log_fd, c->name,
							      stderr) == 0)
						;
					fprintf(stderr, "clipd: the front of '%s' died, exiting\n",
						arg.cages[i].name);
					arg.cages[i].front = 0;
					return serve_end(EXIT_FAILURE);
				}
		}
		for (size_t i = 0; i < arg.n_cages; i++)
			if (p[2 + i].revents & POLLIN)
				from_front(m, audit, &arg.cages[i]);
		for (size_t i = 0; i < arg.n_cages; i++) {
			struct cage_conf *c = &arg.cages[i];

			if (p[2 + arg.n_cages + i].revents &&
			    front_log_read(&c->log, c->log_fd, c->name, stderr) < 0) {
				close(c->log_fd);
				c->log_fd = p[2 + arg.n_cages + i].fd = -1;
			}
		}
		if (!arg.session)
			while (clip_mediator_dispatch(m, NULL) > 0)
				;
		while (arg.session && !arg.session_stopped &&
		       clip_session_dispatch(arg.session, NULL) > 0)
			;
		if (arg.session_stopped)
			return serve_end(EXIT_SUCCESS);
	}
}

/* "N" or "N" followed by K, M, G or T (powers of 1024), at least 1. */
static int
parse_bytes(const char *text, uint64_t *ret)
{
	static const char suffixes[] = "KMGT";
	unsigned long long v;
	const char *unit;
	char *end;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || end == text || text[0] == '-' || v == 0)
		return -1;
	if (*end) {
		unit = strchr(suffixes, *end);
		if (!unit || end[1] || v > (UINT64_MAX >> (10 * (unit - suffixes + 1))))
			return -1;
		v <<= 10 * (unit - suffixes + 1);
	}
	*ret = v;
	return 0;
}

static void
usage(FILE *f)
{
	fputs("Usage: clipd --config DIR [OPTIONS]\n"
	      "       clipd --session FILE [OPTIONS]\n"
	      "  --config DIR          cages (DIR/cages) and policy (DIR/policy)\n"
	      "  --session FILE        run the session of FILE (clip.session(5)): its cages,\n"
	      "                        their wiring and the mediator; not with --config,\n"
	      "                        --agent-socket and the --pending-max options\n"
	      "  --state-dir DIR       keys and audit log (default $CLIP_STATE_DIR, "
	      "/var/lib/clip)\n"
	      "  --agent-socket PATH   where the confirmation agent connects\n"
	      "                        (default /run/clip/confirm.sock)\n"
	      "  --confirm-timeout-ms N   no answer within N ms is a denial (default 60000)\n"
	      "  --pending-max-per-source SIZE   bytes of one cage's documents that may wait\n"
	      "                        for the user (K, M, G, T; default 4G)\n"
	      "  --pending-max-per-target SIZE   bytes of documents that may wait for the\n"
	      "                        user in one inbox (default 8G)\n"
	      "  --ready-fd N          write READY=1 to fd N once serving (NOTIFY_SOCKET too)\n"
	      "  --secret-fd N         with --session: read the user secret of the levels'\n"
	      "                        data keys from fd N (clip.session(5))\n"
	      "  --rootless            label deliveries with user.clip.label (with --session:\n"
	      "                        make the cages rootless too)\n"
	      "  --no-privsep          parse requests in the main process (tests, debugging)\n"
	      "  -v, --verbose\n"
	      "  -h, --help            this text\n"
	      "      --version         the version of libclip clipd runs with\n",
	      f);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "session", required_argument, NULL, 's' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "agent-socket", required_argument, NULL, 'a' },
		{ "confirm-timeout-ms", required_argument, NULL, 't' },
		{ "pending-max-per-source", required_argument, NULL, 'S' },
		{ "pending-max-per-target", required_argument, NULL, 'T' },
		{ "ready-fd", required_argument, NULL, 'r' },
		{ "secret-fd", required_argument, NULL, 'K' },
		{ "rootless", no_argument, NULL, 'R' },
		{ "no-privsep", no_argument, NULL, 'P' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct clip_ctx *ctx = NULL;
	struct clip_audit *audit = NULL;
	struct clip_mediator *m = NULL;
	int opt, r, agent_socket_set = 0;

	while ((opt = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			arg.config_dir = optarg;
			break;
		case 's':
			arg.session_file = optarg;
			break;
		case 'd':
			arg.state_dir = optarg;
			break;
		case 'a':
			arg.agent_socket = optarg;
			agent_socket_set = 1;
			break;
		case 't':
			arg.timeout_ms = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'S':
		case 'T':
			if (parse_bytes(optarg, opt == 'S' ? &arg.pending_max_per_source
							   : &arg.pending_max_per_target) < 0) {
				fprintf(stderr,
					"clipd: --pending-max-per-%s: want a size of 1 "
					"or more, with K, M, G or T, not '%s'\n",
					opt == 'S' ? "source" : "target", optarg);
				return 2;
			}
			break;
		case 'r':
			arg.ready_fd = atoi(optarg);
			break;
		case 'K':
			arg.secret_fd = atoi(optarg);
			break;
		case 'R':
			arg.rootless = 1;
			break;
		case 'P':
			arg.no_privsep = 1;
			break;
		case 'v':
			arg.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("clipd (libclip) %s\n", clip_version());
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!arg.config_dir == !arg.session_file || optind != argc) {
		usage(stderr);
		return 2;
	}
	/* The session derives these itself (clip.session(5)). */
	if (arg.session_file && (agent_socket_set || arg.pending_max_per_source ||
				 arg.pending_max_per_target || arg.timeout_ms)) {
		fprintf(stderr, "clipd: --session takes the agent's socket, the timeout and the "
				"budgets from the session, not from --agent-socket, "
				"--confirm-timeout-ms or --pending-max-*\n");
		return 2;
	}
	/* Started by `clipctl session up`, our stderr is a pipe that clipctl
	   leaves once we are ready: a line after that is lost, not fatal. */
	signal(SIGPIPE, SIG_IGN);
	openlog("clipd", LOG_PID, LOG_AUTHPRIV);
	r = setup(&ctx, &audit, &m);
	if (r == 0)
		r = serve(m, audit);
	clip_mediator_unref(m);
	clip_audit_unref(audit);
	/* A session that failed half-way is stopped by its last reference. */
	clip_session_unref(arg.session);
	clip_ctx_unref(ctx);
	for (size_t i = 0; i < arg.n_cages; i++) {
		clip_level_unref(arg.cages[i].level);
		free(arg.cages[i].inbox);
		free(arg.cages[i].socket);
		if (arg.cages[i].front > 0)
			kill(arg.cages[i].front, SIGKILL);
	}
	return r;
}
