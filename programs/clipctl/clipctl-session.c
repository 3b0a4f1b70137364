/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clipctl session: up, down and status of sessions (clip.session(5)); exec
 * is in clipctl-cage.c, with the other ways to run a command in a cage.
 *
 * `watch` (also `clipctl watch`) prints the session's events as they come.
 *
 * `up` starts the session's runner, clipd --session FILE, in the
 * background, relays what it says until it is ready (or has failed), and
 * returns; `down` and `status` ask the runner over the session's control
 * socket (clip_session_control()).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/macro.h"
#include "clipctl.h"

/*
 * The runner: the installed clipd, or, when this clipctl runs from a build
 * tree (PROGRAMS/clipctl/clipctl, the layout its RUNPATH $ORIGIN/../../libclip
 * relies on too), the clipd of that tree, PROGRAMS/clipd/clipd. Both are
 * found from /proc/self/exe, which no caller chooses: whoever may write
 * beside this clipctl may replace it as well.
 */
static const char *
clipd_path(char buf[PATH_MAX])
{
	static const char tail[] = "/programs/clipctl/clipctl";
	ssize_t n = readlink("/proc/self/exe", buf, PATH_MAX - 1);
	size_t t = sizeof(tail) - 1;

	if (n > (ssize_t)t && (size_t)n + 2 < PATH_MAX) {
		buf[n] = '\0';
		if (strcmp(buf + n - t, tail) == 0) {
			strcpy(buf + n - t, "/programs/clipd/clipd");
			if (access(buf, X_OK) == 0)
				return buf;
		}
	}
	return CLIPD_PATH;
}

struct session_opts {
	const char *log, *dir;
	int secret_fd; /* --secret-fd, or -1 */
};

static int
parse_opts(int argc, char **argv, struct session_opts *o)
{
	static const struct option longopts[] = {
		{ "log", required_argument, NULL, 'l' },
		{ "session-dir", required_argument, NULL, 'd' },
		{ "secret-fd", required_argument, NULL, 'k' },
		{ 0 },
	};
	int opt;

	*o = (struct session_opts){ .secret_fd = -1 };
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			o->log = optarg;
			break;
		case 'k': {
			char *end;
			long fd = strtol(optarg, &end, 10);

			if (*end || end == optarg || fd < 0 || fd > INT_MAX ||
			    fcntl((int)fd, F_GETFD) < 0)
				return fail_usage("bad --secret-fd '%s': give an open descriptor",
						  optarg);
			o->secret_fd = (int)fd;
			break;
		}
		case 'd':
			if (optarg[0] != '/')
				return fail_usage("bad --session-dir '%s': give an absolute path",
						  optarg);
			o->dir = optarg;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	return 0;
}

/* Copy what the runner says to our stderr until it is ready or gone; 0 when ready. */
static int
wait_ready(int ready, int err)
{
	struct pollfd p[2] = { { .fd = ready, .events = POLLIN }, { .fd = err, .events = POLLIN } };
	char buf[4096];
	ssize_t n;

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[1].revents) {
			n = read(err, buf, sizeof(buf));
			if (n > 0) {
				/* The runner's lines (clipd escapes what comes from a cage). */
				fwrite(buf, 1, (size_t)n, stderr);
				continue;
			}
			p[1].fd = -1;
		}
		if (p[0].revents) {
			n = read(ready, buf, sizeof(buf) - 1);
			if (n > 0) {
				buf[n] = '\0';
				if (strstr(buf, "READY=1"))
					return 0;
			}
			return -ECHILD;
		}
	}
}

static void __attribute__((noreturn))
exec_runner(const struct clipctl *c, const char *file, int ready, int err, int secret)
{
	char ready_arg[16], path[PATH_MAX];
	const char *argv[12], *clipd = clipd_path(path);
	size_t n = 0;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	/* The secret's fd moves out of the way of 3 and 4, then to 4. */
	if (secret >= 0 && (secret = fcntl(secret, F_DUPFD_CLOEXEC, 10)) < 0)
		_exit(127);
	/* Its own session: no terminal of ours to read, no signal of our shell. */
	if (setsid() < 0 || null < 0 || dup2(null, STDIN_FILENO) < 0 ||
	    dup2(null, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0 || dup2(ready, 3) != 3 ||
	    (secret >= 0 && dup2(secret, 4) != 4))
		_exit(127);
	snprintf(ready_arg, sizeof(ready_arg), "3");
	argv[n++] = clipd;
	argv[n++] = "--session";
	argv[n++] = file;
	argv[n++] = "--ready-fd";
	argv[n++] = ready_arg;
	if (c->state_dir) {
		argv[n++] = "--state-dir";
		argv[n++] = c->state_dir;
	}
	if (c->label_flags & CLIP_LABEL_ROOTLESS)
		argv[n++] = "--rootless";
	if (secret >= 0) {
		argv[n++] = "--secret-fd";
		argv[n++] = "4";
	}
	argv[n] = NULL;
	execv(clipd, (char *const *)argv);
	fprintf(stderr, "clipctl: cannot run the session's runner %s: %m\n", clipd);
	_exit(127);
}

static int
session_up(struct clipctl *c, int argc, char **argv)
{
	_cleanup_close_ int log = -1;
	struct clip_session *s = NULL;
	struct clip_error *error = NULL;
	struct clip_ctx *ctx;
	struct session_opts o;
	char file[PATH_MAX];
	int rp[2], ep[2], r, status;
	pid_t pid;

	r = parse_opts(argc, argv, &o);
	if (r != 0)
		return r;
	if (argc - optind != 1)
		return fail_usage("usage: session up [--log FILE] [--secret-fd N] FILE");
	/* Refused here, with the parser's message, before any process starts. */
	ctx = clipctl_ctx(c);
	if (!ctx)
		return EXIT_USAGE;
	r = clip_session_load(&s, ctx, argv[optind], &error);
	clip_ctx_unref(ctx);
	if (r < 0)
		return fail_error(argv[optind], r, error);
	if (!realpath(argv[optind], file)) {
		clip_session_unref(s);
		return fail_error(argv[optind], -errno, NULL);
	}
	if (o.log) {
		log = open(o.log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (log < 0) {
			clip_session_unref(s);
			return fail_error(o.log, -errno, NULL);
		}
	}
	if (pipe2(rp, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
		clip_session_unref(s);
		return fail_error("pipe", -errno, NULL);
	}
	pid = fork();
	if (pid < 0) {
		clip_session_unref(s);
		return fail_error("fork", -errno, NULL);
	}
	if (pid == 0) {
		/* Double fork: the runner is nobody's child but init's. */
		if (fork() != 0)
			_exit(0);
		exec_runner(c, file, rp[1], log >= 0 ? log : ep[1], o.secret_fd);
	}
	close(rp[1]);
	close(ep[1]);
	(void)waitpid(pid, &status, 0);
	r = wait_ready(rp[0], ep[0]);
	close(rp[0]);
	close(ep[0]);
	if (r < 0) {
		fprintf(stderr,
			"clipctl: session up: the runner of session '%s' exited before it was "
			"ready; %s%s\n",
			clip_session_get_name(s),
			o.log ? "its messages are in " : "its messages are above",
			o.log ? o.log : "");
		clip_session_unref(s);
		return EXIT_INVALID;
	}
	say(stdout, "session %s up", clip_session_get_name(s));
	clip_session_unref(s);
	return 0;
}

/*
 * The options and the words of `session VERB [--session-dir DIR] NAME`
 * (with @cage, NAME CAGE), and a context: 0, or the exit code once said.
 * @prefix comes before the verb in the usage line ("session ", or "").
 */
static int
session_args(struct clipctl *c, int argc, char **argv, bool cage, const char *prefix,
	     struct session_opts *o, struct clip_ctx **ret_ctx)
{
	int r = parse_opts(argc, argv, o);

	if (r != 0)
		return r;
	if (argc - optind != (cage ? 2 : 1))
		return fail_usage("usage: %s%s [--session-dir DIR] NAME%s", prefix, argv[0],
				  cage ? " CAGE" : "");
	if (cage && strlen(argv[optind + 1]) > 32)
		return fail_usage("session %s: no cage is named '%.40s...'", argv[0],
				  argv[optind + 1]);
	*ret_ctx = clipctl_ctx(c);
	return *ret_ctx ? 0 : EXIT_USAGE;
}

static int
session_down(struct clipctl *c, int argc, char **argv)
{
	struct clip_error *error = NULL;
	struct clip_ctx *ctx = NULL;
	struct session_opts o;
	int r;

	r = session_args(c, argc, argv, false, "session ", &o, &ctx);
	if (r != 0)
		return r;
	/* What it stops and locks of a runner that is gone, it says at warning. */
	if (!c->verbose)
		clip_ctx_set_log_priority(ctx, LOG_WARNING);
	r = clip_session_down(ctx, argv[optind], o.dir, &error);
	if (r < 0)
		r = fail_error(argv[optind], r, error);
	else {
		say(stdout, "session %s down%s", argv[optind],
		    r == 1 ? ": its runner was gone, what it left is stopped and locked" : "");
		r = 0;
	}
	clip_ctx_unref(ctx);
	return r;
}

static void
print_missing(unsigned missing)
{
	/* Bit n of CLIP_CAGE_MISSING_*. */
	static const char *const names[] = { "memory",
					     "tasks",
					     "cpu",
					     "landlock",
					     "cgroup",
					     "landlock-net",
					     "landlock-ioctl",
					     "landlock-scope",
					     "landlock-log",
					     "lsm" };
	const char *sep = "  missing: ";

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (missing & (1u << i)) {
			printf("%s%s", sep, names[i]);
			sep = ",";
		}
}

static int
session_status(struct clipctl *c, int argc, char **argv)
{
	struct clip_session_status *st = NULL;
	struct clip_error *error = NULL;
	struct clip_ctx *ctx = NULL;
	struct session_opts o;
	unsigned pending = 0;
	int r, agent = 0;

	r = session_args(c, argc, argv, false, "session ", &o, &ctx);
	if (r != 0)
		return r;
	r = clip_session_control(ctx, argv[optind], o.dir, "status", &st, &error);
	clip_ctx_unref(ctx);
	if (r < 0)
		return fail_error(argv[optind], r, error);
	(void)clip_session_status_get_mediator(st, &pending, &agent);
	say(stdout, "session %s: %s, %u question%s pending", argv[optind],
	    agent ? "agent connected" : "no agent connected", pending, pending == 1 ? "" : "s");
	for (size_t i = 0; i < clip_session_status_get_n_cages(st); i++) {
		const char *level = NULL, *name;
		unsigned pids = 0, missing = 0, restarts = 0;
		int state = 0;

		name = clip_session_status_get_cage(st, i, &state, &level, &pids, &missing,
						    &restarts);
		printf("  ");
		put_name(stdout, name);
		printf("  ");
		put_name(stdout, level ? level : "?");
		printf("  %s  %u process%s  %u restart%s",
		       state == CLIP_CAGE_RUNNING ? "running" : "stopped", pids,
		       pids == 1 ? "" : "es", restarts, restarts == 1 ? "" : "s");
		print_missing(missing);
		putchar('\n');
	}
	clip_session_status_free(st);
	return 0;
}

/*
 * session restart|start|stop [--session-dir DIR] NAME CAGE: one cage, the
 * others left running; session reload [--session-dir DIR] NAME: the runner
 * reads its file again.
 */
static int
session_request(struct clipctl *c, int argc, char **argv)
{
	bool cage = strcmp(argv[0], "reload") != 0;
	struct clip_error *error = NULL;
	struct clip_ctx *ctx = NULL;
	struct session_opts o;
	char request[64];
	int r;

	r = session_args(c, argc, argv, cage, "session ", &o, &ctx);
	if (r != 0)
		return r;
	snprintf(request, sizeof(request), "%s%s%s", argv[0], cage ? " " : "",
		 cage ? argv[optind + 1] : "");
	r = clip_session_control(ctx, argv[optind], o.dir, request, NULL, &error);
	clip_ctx_unref(ctx);
	if (r < 0)
		return fail_error(argv[optind], r, error);
	if (!cage)
		say(stdout, "session %s reloaded", argv[optind]);
	else
		say(stdout, "cage %s of session %s %s", argv[optind + 1], argv[optind],
		    strcmp(argv[0], "stop") == 0    ? "stopped"
		    : strcmp(argv[0], "start") == 0 ? "started"
						    : "restarted");
	return 0;
}

/* session trail NAME: the trail stream on standard output (the audit role's). */
static int
session_trail(struct clipctl *c, int argc, char **argv)
{
	struct clip_error *error = NULL;
	struct clip_ctx *ctx = NULL;
	struct session_opts o;
	char buf[65536];
	ssize_t n;
	int r, fd = -1;

	r = session_args(c, argc, argv, false, "session ", &o, &ctx);
	if (r != 0)
		return r;
	r = clip_session_get_trail(ctx, argv[optind], o.dir, &fd, &error);
	clip_ctx_unref(ctx);
	if (r < 0)
		return fail_error(argv[optind], r, error);
	/* Verified records are printable ASCII; an unverified copy goes to a file or a verifier. */
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			break;
	close(fd);
	if (n != 0 || fflush(stdout) != 0) {
		say(stderr, "clipctl: session %s: cannot copy the trail: %m", argv[optind]);
		return EXIT_INVALID;
	}
	return 0;
}

/* session audit-key NAME: the public key that signs the session's trail. */
static int
session_audit_key(struct clipctl *c, int argc, char **argv)
{
	struct clip_error *error = NULL;
	struct clip_ctx *ctx = NULL;
	struct session_opts o;
	char *pem = NULL;
	int r;

	r = session_args(c, argc, argv, false, "session ", &o, &ctx);
	if (r != 0)
		return r;
	r = clip_session_get_audit_key(ctx, argv[optind], o.dir, &pem, &error);
	clip_ctx_unref(ctx);
	if (r < 0)
		return fail_error(argv[optind], r, error);
	fputs(pem, stdout);
	free(pem);
	return 0;
}

/* One event on one line, escaped as a whole: TYPE CAGE[ -> TARGET][: NAME][ (TEXT)]. */
static void
print_event(const struct clip_feed_event *e)
{
	const char *cage = clip_feed_event_get_cage(e), *target = clip_feed_event_get_target(e);
	const char *name = clip_feed_event_get_name(e), *text = clip_feed_event_get_text(e);

	say(stdout, "%s%s%s%s%s%s%s%s%s%s", clip_feed_event_type_name(clip_feed_event_get_type(e)),
	    cage ? " " : "", cage ? cage : "", target ? " -> " : "", target ? target : "",
	    name ? ": " : "", name ? name : "", text ? " (" : "", text ? text : "",
	    text ? ")" : "");
}

/* session watch [--session-dir DIR] NAME: the session's events, until it stops. */
static int
session_watch(struct clipctl *c, int argc, char **argv)
{
	struct clip_error *error = NULL;
	struct clip_ctx *ctx = NULL;
	struct session_opts o;
	uint64_t last = 0;
	int r, fd = -1;

	r = session_args(c, argc, argv, false, "", &o, &ctx);
	if (r != 0)
		return r;
	r = clip_session_watch(ctx, argv[optind], o.dir, &fd, &error);
	clip_ctx_unref(ctx);
	if (r < 0)
		return fail_error(argv[optind], r, error);
	say(stdout, "watching session %s", argv[optind]);
	fflush(stdout);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct clip_feed_event *e = NULL;

		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			break;
		while ((r = clip_session_watch_read(fd, &e, &error)) > 0) {
			uint64_t seq = clip_feed_event_get_seq(e);

			if (last && seq > last + 1)
				say(stdout, "(%llu events lost)",
				    (unsigned long long)(seq - last - 1));
			last = seq;
			print_event(e);
			clip_feed_event_unref(e);
		}
		fflush(stdout);
		if (r < 0)
			break;
	}
	close(fd);
	if (r == -ECONNRESET) {
		clip_error_free(error);
		say(stdout, "session %s: the stream ended", argv[optind]);
		return 0;
	}
	return fail_error(argv[optind], r, error);
}

/* clipctl watch ARGS: session watch ARGS (@argv has no command word: add it). */
int
clipctl_watch(struct clipctl *c, int argc, char **argv)
{
	char **v = calloc((size_t)argc + 2, sizeof(char *));
	int r;

	if (!v)
		return fail_usage("out of memory");
	v[0] = (char *)"watch";
	memcpy(v + 1, argv, (size_t)argc * sizeof(char *));
	r = session_watch(c, argc + 1, v);
	free(v);
	return r;
}

int
clipctl_session(struct clipctl *c, int argc, char **argv)
{
	if (argc < 1)
		return fail_usage("session: up, down, status, restart, start, stop, reload, exec, "
				  "watch, trail or audit-key");
	if (strcmp(argv[0], "up") == 0)
		return session_up(c, argc, argv);
	if (strcmp(argv[0], "down") == 0)
		return session_down(c, argc, argv);
	if (strcmp(argv[0], "status") == 0)
		return session_status(c, argc, argv);
	if (strcmp(argv[0], "exec") == 0)
		return clipctl_session_exec(c, argc, argv);
	if (strcmp(argv[0], "watch") == 0)
		return session_watch(c, argc, argv);
	if (strcmp(argv[0], "restart") == 0 || strcmp(argv[0], "start") == 0 ||
	    strcmp(argv[0], "stop") == 0 || strcmp(argv[0], "reload") == 0)
		return session_request(c, argc, argv);
	if (strcmp(argv[0], "trail") == 0)
		return session_trail(c, argc, argv);
	if (strcmp(argv[0], "audit-key") == 0)
		return session_audit_key(c, argc, argv);
	return fail_usage("session: unknown command '%s'", argv[0]);
}
