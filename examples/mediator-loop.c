/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A transfer mediator embedded in the caller's own event loop.
 *
 *   mediator-loop DIR [SECONDS]
 *
 * Serves two cages, low (s0) and high (s2), under a small policy, with
 * everything in DIR: the state (keys, audit log) in DIR/state, the cages'
 * inboxes DIR/low and DIR/high, their sockets DIR/low.sock and
 * DIR/high.sock, and the confirmation agent's socket DIR/confirm.sock. A
 * cage manager would bind each cage's socket into that cage at
 * /run/clip/transfer.sock, its inbox at /inbox, and the agent's socket
 * into none. The mediator's fd, a signalfd (SIGTERM, SIGINT) and a timerfd
 * (SECONDS, 60 by default, so that it always ends) share one poll() loop.
 *
 * Drive it from a shell (clip-confirm answers the `ask` rules):
 *   mediator-loop /tmp/m &
 *   clip-confirm --socket /tmp/m/confirm.sock --auto yes &
 *   clipctl transfer send report.txt --to high --socket /tmp/m/low.sock
 *   cat /tmp/m/high/report.txt
 *
 * Run by root, deliveries are labelled in trusted.clip.label; by anyone
 * else, in user.clip.label (CLIP_LABEL_ROOTLESS).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <clip/clip.h>

/*
 * Up needs the user's yes; down too, and is delivered in an envelope that
 * the low cage cannot open; anything else is refused.
 */
static const char policy_text[] = "# SOURCE TARGET ACTION [OPTIONS]\n"
				  "low      high   ask\n"
				  "high     low    ask     encrypt\n"
				  "@any     @any   deny\n";

static const struct {
	const char *name, *level;
} cages[] = { { "low", "s0" }, { "high", "s2" } };

static void
log_stderr(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	fprintf(stderr, "mediator-loop: %s\n", message);
}

static int
fail(const char *what, int r, struct clip_error *error)
{
	fprintf(stderr, "mediator-loop: %s: %s\n", what,
		error ? clip_error_get_message(error) : strerror(-r));
	clip_error_free(error);
	return -1;
}

/* A listening SOCK_SEQPACKET socket at DIR/NAME.sock, or -1. */
static int
listen_at(const char *dir, const char *name, mode_t mode)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s.sock", dir, name) >=
	    (int)sizeof(sa.sun_path))
		return fail(name, -ENAMETOOLONG, NULL);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	/* A socket left by an earlier run would make bind() fail. */
	(void)unlink(sa.sun_path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(sa.sun_path, mode) < 0 || listen(fd, 16) < 0) {
		fail(sa.sun_path, -errno, NULL);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Serve cage @i: its level, its inbox DIR/NAME and its socket DIR/NAME.sock. */
static int
add_cage(struct clip_mediator *m, const char *dir, size_t i)
{
	struct clip_mediator_cage mc = {
		.size = sizeof(mc),
		.name = cages[i].name,
		.inbox_fd = -1,
		.socket_fd = -1,
		/*
		 * Whoever reaches the socket speaks for the cage: a cage manager
		 * sets check_uid and uid (the cage's) so that only the cage can.
		 */
		.check_uid = 0,
	};
	struct clip_error *error = NULL;
	struct clip_level *level = NULL;
	char inbox[4096];
	int r;

	r = clip_level_parse(&level, cages[i].level, &error);
	if (r < 0)
		return fail(cages[i].level, r, error);
	mc.level = level;
	snprintf(inbox, sizeof(inbox), "%s/%s", dir, cages[i].name);
	r = -1;
	if (mkdir(inbox, 0700) < 0 && errno != EEXIST) {
		fail(inbox, -errno, NULL);
		goto out;
	}
	mc.inbox_fd = open(inbox, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (mc.inbox_fd < 0) {
		fail(inbox, -errno, NULL);
		goto out;
	}
	mc.socket_fd = listen_at(dir, cages[i].name, 0666);
	if (mc.socket_fd < 0)
		goto out;
	r = clip_mediator_add_cage(m, &mc, &error);
	if (r < 0)
		fail("cannot add the cage", r, error);
out:
	/* The mediator keeps copies of the fds and of the level. */
	if (mc.inbox_fd >= 0)
		close(mc.inbox_fd);
	if (mc.socket_fd >= 0)
		close(mc.socket_fd);
	clip_level_unref(level);
	return r < 0 ? -1 : 0;
}

/* The mediator, with its cages and the agent's socket (bound in no cage). */
static int
setup(struct clip_ctx *ctx, const char *dir, struct clip_mediator **ret)
{
	struct clip_mediator_opts opts = {
		.size = sizeof(opts),
		/*
		 * trusted.* labels need root of the host; the context's cage
		 * mode says whether this process is (uid 0 of a rootless
		 * container is not).
		 */
		.label_flags = clip_ctx_get_cage_mode(ctx) == CLIP_CAGE_MODE_ROOT
				       ? 0
				       : CLIP_LABEL_ROOTLESS,
	};
	struct clip_policy *policy = NULL;
	struct clip_audit *audit = NULL;
	struct clip_error *error = NULL;
	int r, agent;

	r = clip_policy_parse(&policy, policy_text, strlen(policy_text), "policy", &error);
	if (r < 0)
		return fail("bad policy", r, error);
	/* Every request and decision is recorded, chained and MAC'd, in DIR/state. */
	r = clip_audit_open(&audit, ctx, -1, NULL, 0, &error);
	if (r >= 0)
		r = clip_mediator_new(ret, ctx, policy, audit, &opts, &error);
	/* The mediator holds its own references. */
	clip_policy_unref(policy);
	clip_audit_unref(audit);
	if (r < 0)
		return fail("cannot make the mediator", r, error);
	for (size_t i = 0; i < sizeof(cages) / sizeof(cages[0]); i++)
		if (add_cage(*ret, dir, i) < 0)
			return -1;
	agent = listen_at(dir, "confirm", 0600);
	if (agent < 0)
		return -1;
	r = clip_mediator_add_agent_socket(*ret, agent, &error);
	close(agent);
	if (r < 0)
		return fail("bad agent socket", r, error);
	return 0;
}

/* Serve until a signal or the timer; 0, or -1 when the mediator fails. */
static int
event_loop(struct clip_mediator *m, int sfd, int tfd)
{
	struct pollfd p[] = {
		{ .fd = clip_mediator_get_fd(m), .events = POLLIN },
		{ .fd = sfd, .events = POLLIN },
		{ .fd = tfd, .events = POLLIN },
	};
	struct clip_error *error = NULL;
	struct signalfd_siginfo si;
	int r;

	for (;;) {
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return fail("poll", -errno, NULL);
		}
		if ((p[1].revents & POLLIN) && read(sfd, &si, sizeof(si)) == sizeof(si)) {
			printf("%s, stopping\n", strsignal((int)si.ssi_signo));
			return 0;
		}
		if (p[2].revents & POLLIN) {
			printf("time is up, stopping\n");
			return 0;
		}
		/* One event per call, without blocking: call it until nothing is left. */
		while ((r = clip_mediator_dispatch(m, &error)) > 0)
			;
		if (r < 0)
			return fail("dispatch", r, error);
	}
}

int
main(int argc, char **argv)
{
	struct itimerspec timeout = { .it_value.tv_sec = argc > 2 ? atoi(argv[2]) : 60 };
	struct clip_mediator *m = NULL;
	struct clip_ctx *ctx = NULL;
	int r = -1, sfd = -1, tfd = -1;
	char state[4096];
	sigset_t mask;

	if (argc < 2 || argc > 3 || argv[1][0] != '/' || timeout.it_value.tv_sec <= 0) {
		fprintf(stderr, "usage: %s /DIR [SECONDS]\n", argv[0]);
		return 2;
	}
	/*
	 * Blocked before the mediator starts its worker threads: a signal that
	 * some thread leaves unblocked kills the process instead of reaching
	 * the signalfd.
	 */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (sfd < 0 || tfd < 0 || timerfd_settime(tfd, 0, &timeout, NULL) < 0) {
		fail("signalfd, timerfd", -errno, NULL);
		goto out;
	}
	snprintf(state, sizeof(state), "%s/state", argv[1]);
	r = clip_ctx_new(&ctx);
	if (r >= 0)
		r = clip_ctx_set_state_dir(ctx, state);
	if (r < 0) {
		fail("cannot make a context", r, NULL);
		goto out;
	}
	/* The library never prints: what goes wrong with a transfer comes here. */
	clip_ctx_set_log_fn(ctx, log_stderr, NULL);
	clip_ctx_set_log_priority(ctx, LOG_WARNING);
	r = setup(ctx, argv[1], &m);
	if (r < 0)
		goto out;
	printf("ready: cages low and high, agent at %s/confirm.sock\n", argv[1]);
	fflush(stdout);
	r = event_loop(m, sfd, tfd);
out:
	/* Deliveries still under way are stopped: nothing half-written stays in an inbox. */
	clip_mediator_unref(m);
	clip_ctx_unref(ctx);
	if (tfd >= 0)
		close(tfd);
	if (sfd >= 0)
		close(sfd);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
