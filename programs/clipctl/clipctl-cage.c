/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* clipctl cage: run, start, exec, stop and list cages. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clipctl.h"

#define GRACE_MS_DEFAULT 2000

struct cage_opts {
	const char *profile;
	unsigned uid, gid;
	unsigned grace_ms;
	int keep_stdio;
};

static int
parse_uint(const char *s, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !*s || v > 0xffffffffUL)
		return -1;
	*ret = (unsigned)v;
	return 0;
}

/* Options, then the operands from argv[optind]. */
static int
parse_opts(int argc, char **argv, struct cage_opts *o)
{
	static const struct option longopts[] = {
		{ "profile", required_argument, NULL, 'p' },
		{ "uid", required_argument, NULL, 'u' },
		{ "gid", required_argument, NULL, 'g' },
		{ "grace-ms", required_argument, NULL, 't' },
		{ 0 },
	};
	int opt;

	*o = (struct cage_opts){ .grace_ms = GRACE_MS_DEFAULT };
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			o->profile = optarg;
			break;
		case 'u':
			if (parse_uint(optarg, &o->uid) < 0)
				return fail_usage("bad --uid '%s'", optarg);
			break;
		case 'g':
			if (parse_uint(optarg, &o->gid) < 0)
				return fail_usage("bad --gid '%s'", optarg);
			break;
		case 't':
			if (parse_uint(optarg, &o->grace_ms) < 0)
				return fail_usage("bad --grace-ms '%s'", optarg);
			break;
		default:
			return EXIT_USAGE;
		}
	}
	return 0;
}

static int
load_profile(const char *path, struct clip_cage_profile **ret)
{
	struct clip_error *error = NULL;
	int fd, r;

	if (!path)
		return fail_usage("--profile FILE is required");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		say(stderr, "clipctl: cannot open %s: %s", path, strerror(errno));
		return EXIT_INVALID;
	}
	r = clip_cage_profile_load(ret, fd, path, &error);
	close(fd);
	if (r < 0) {
		say(stderr, "clipctl: %s", clip_error_get_message(error));
		clip_error_free(error);
		return EXIT_USAGE;
	}
	return 0;
}

/*
 * What runs @argv with our stdin, stdout and stderr; @envp has room for 5.
 * Those that are a terminal are not handed to the cage: it gets a pty of
 * its own instead (CLIP_CAGE_SPAWN_PTY), whose master lands in *@ret_pty
 * (-1 when none of them is a terminal) for relay_pty().
 */
static void
spawn_opts_fill(struct clip_cage_spawn_opts *spawn, const struct cage_opts *o, char **argv,
		const char **envp, char term_var[64], int *ret_pty)
{
	static const int fds[] = { 0, 1, 2 };
	const char *term = getenv("TERM");

	envp[0] = "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
	envp[1] = "HOME=/";
	envp[2] = "LC_ALL=C.UTF-8";
	envp[3] = envp[4] = NULL;
	if (term && strlen(term) < 32) {
		snprintf(term_var, 64, "TERM=%s", term);
		envp[3] = term_var;
	}
	*spawn = (struct clip_cage_spawn_opts){
		.size = sizeof(*spawn),
		.argv = (const char *const *)argv,
		.envp = envp,
		.fds = fds,
		.n_fds = 3,
		.uid = o->uid,
		.gid = o->gid,
		.flags = CLIP_CAGE_SPAWN_PTY,
		.ret_pty = ret_pty,
	};
}

/*
 * Between our terminal and the cage's pty until @pidfd's process ends:
 * our terminal in raw mode meanwhile, what the cage writes filtered
 * (clip_cage_pty_relay()). Then the pty is closed, which hangs up what the
 * process left behind. 0, or EXIT_INVALID after a message (a signal, a
 * terminal that hung up).
 */
static int
relay_pty(int pty, int pidfd)
{
	struct clip_error *error = NULL;
	int in = isatty(0) ? 0 : -1;
	int out = isatty(1) ? 1 : isatty(2) ? 2 : in;
	int r;

	if (pty < 0)
		return 0;
	r = clip_cage_pty_relay(pty, in, out, pidfd, &error);
	close(pty);
	return r < 0 ? fail_error("cage terminal", r, error) : 0;
}

/* The exit status of the process behind @pidfd, which is closed. */
static int
wait_status(struct clip_cage *cage, int pidfd)
{
	int status = 0, r;

	r = clip_cage_wait_process(cage, pidfd, &status);
	close(pidfd);
	if (r < 0)
		return fail_error("wait", r, NULL);
	return status;
}

/* Run @argv in @cage with our stdin, stdout and stderr; its exit status. */
static int
run_in(struct clip_cage *cage, const struct cage_opts *o, char **argv)
{
	struct clip_cage_spawn_opts spawn;
	struct clip_error *error = NULL;
	const char *envp[5];
	char term_var[64];
	int pidfd, pty = -1, r;

	spawn_opts_fill(&spawn, o, argv, envp, term_var, &pty);
	r = clip_cage_spawn(cage, &spawn, &pidfd, &error);
	if (r < 0) {
		fail_error(argv[0], r, error);
		return 127;
	}
	/* A relay ended early closed the pty all the same: the process has had its SIGHUP. */
	(void)relay_pty(pty, pidfd);
	return wait_status(cage, pidfd);
}

/*
 * A started cage from --profile: 0, or an exit status after a message.
 * With @argv, its first process too (its pidfd in @ret_pidfd).
 */
static int
start_cage(struct clipctl *c, const struct cage_opts *o, unsigned flags, char **argv,
	   int *ret_pidfd, int *ret_pty, struct clip_ctx **ret_ctx, struct clip_cage **ret)
{
	struct clip_cage_profile *profile = NULL;
	struct clip_cage_spawn_opts spawn;
	struct clip_error *error = NULL;
	const char *envp[5];
	char term_var[64];
	int r;

	r = load_profile(o->profile, &profile);
	if (r != 0)
		return r;
	*ret_ctx = clipctl_ctx(c);
	if (!*ret_ctx) {
		clip_cage_profile_unref(profile);
		return EXIT_USAGE;
	}
	r = clip_cage_new(ret, *ret_ctx, profile, &error);
	clip_cage_profile_unref(profile);
	if (r >= 0 && argv) {
		spawn_opts_fill(&spawn, o, argv, envp, term_var, ret_pty);
		r = clip_cage_start_spawn(*ret, flags, &spawn, ret_pidfd, &error);
	} else if (r >= 0)
		r = clip_cage_start(*ret, flags, &error);
	if (r < 0) {
		*ret = clip_cage_unref(*ret);
		*ret_ctx = clip_ctx_unref(*ret_ctx);
		if (argv && (r == -ENOENT || r == -EACCES || r == -EPERM)) {
			fail_error(argv[0], r, error);
			return 127;
		}
		return fail_error("cage start", r, error);
	}
	return 0;
}

static int
cage_run(struct clipctl *c, int argc, char **argv)
{
	struct clip_error *error = NULL;
	struct clip_cage *cage = NULL;
	struct clip_ctx *ctx = NULL;
	struct cage_opts o;
	int r, status, pidfd = -1, pty = -1;

	r = parse_opts(argc, argv, &o);
	if (r != 0)
		return r;
	if (optind >= argc)
		return fail_usage("cage run: no command given");
	r = start_cage(c, &o, CLIP_CAGE_START_END_WITH_FIRST, argv + optind, &pidfd, &pty, &ctx,
		       &cage);
	if (r != 0)
		return r;
	/* A relay ended early (a signal): the command goes with its cage. */
	if (relay_pty(pty, pidfd) != 0)
		(void)clip_cage_stop(cage, 0, NULL);
	status = wait_status(cage, pidfd);
	/* The command is done: whatever it left behind goes with the cage. */
	r = clip_cage_stop(cage, 0, &error);
	if (r < 0)
		fail_error("cage stop", r, error);
	clip_cage_unref(cage);
	clip_ctx_unref(ctx);
	return status;
}

static int
cage_start(struct clipctl *c, int argc, char **argv)
{
	struct clip_cage *cage = NULL;
	struct clip_ctx *ctx = NULL;
	struct cage_opts o;
	int *pids = NULL;
	size_t n = 0;
	int r;

	r = parse_opts(argc, argv, &o);
	if (r != 0)
		return r;
	if (optind != argc)
		return fail_usage("cage start takes no operand");
	r = start_cage(c, &o, CLIP_CAGE_START_REGISTER, NULL, NULL, NULL, &ctx, &cage);
	if (r != 0)
		return r;
	r = clip_cage_get_pids(cage, &pids, &n);
	if (r == 0 && n > 0)
		say(stdout, "%s %d", clip_cage_profile_get_name(clip_cage_get_profile(cage)),
		    pids[0]);
	else
		r = fail_error("cage start", r < 0 ? r : -ECHILD, NULL);
	free(pids);
	clip_cage_unref(cage);
	clip_ctx_unref(ctx);
	return r;
}

static int
cage_attach(struct clipctl *c, const char *name, struct clip_ctx **ret_ctx, struct clip_cage **ret)
{
	struct clip_error *error = NULL;
	int r;

	*ret_ctx = clipctl_ctx(c);
	if (!*ret_ctx)
		return EXIT_USAGE;
	r = clip_cage_attach(ret, *ret_ctx, name, &error);
	if (r < 0) {
		*ret_ctx = clip_ctx_unref(*ret_ctx);
		return fail_error(name, r, error);
	}
	return 0;
}

static int
cage_exec(struct clipctl *c, int argc, char **argv)
{
	struct clip_cage *cage = NULL;
	struct clip_ctx *ctx = NULL;
	struct cage_opts o;
	int r;

	r = parse_opts(argc, argv, &o);
	if (r != 0)
		return r;
	if (argc - optind < 2)
		return fail_usage("usage: cage exec NAME [--] CMD [ARGS...]");
	r = cage_attach(c, argv[optind], &ctx, &cage);
	if (r != 0)
		return r;
	r = run_in(cage, &o, argv + optind + 1 + (strcmp(argv[optind + 1], "--") == 0));
	clip_cage_unref(cage);
	clip_ctx_unref(ctx);
	return r;
}

/* session exec [--uid N] [--gid N] NAME CAGE [--] CMD...: a cage of a session's runner. */
int
clipctl_session_exec(struct clipctl *c, int argc, char **argv)
{
	struct clip_error *error = NULL;
	struct clip_cage *cage = NULL;
	struct clip_ctx *ctx;
	struct cage_opts o;
	int r;

	r = parse_opts(argc, argv, &o);
	if (r != 0)
		return r;
	if (argc - optind < 3)
		return fail_usage("usage: session exec NAME CAGE [--] CMD [ARGS...]");
	ctx = clipctl_ctx(c);
	if (!ctx)
		return EXIT_USAGE;
	r = clip_session_attach_cage(&cage, ctx, argv[optind], argv[optind + 1], &error);
	if (r < 0) {
		clip_ctx_unref(ctx);
		return fail_error(argv[optind + 1], r, error);
	}
	r = run_in(cage, &o, argv + optind + 2 + (strcmp(argv[optind + 2], "--") == 0));
	clip_cage_unref(cage);
	clip_ctx_unref(ctx);
	return r;
}

static int
cage_stop(struct clipctl *c, int argc, char **argv)
{
	struct clip_error *error = NULL;
	struct clip_cage *cage = NULL;
	struct clip_ctx *ctx = NULL;
	struct cage_opts o;
	int r;

	r = parse_opts(argc, argv, &o);
	if (r != 0)
		return r;
	if (argc - optind != 1)
		return fail_usage("usage: cage stop [--grace-ms MS] NAME");
	r = cage_attach(c, argv[optind], &ctx, &cage);
	if (r != 0)
		return r;
	r = clip_cage_stop(cage, o.grace_ms, &error);
	r = r < 0 ? fail_error("cage stop", r, error) : 0;
	clip_cage_unref(cage);
	clip_ctx_unref(ctx);
	return r;
}

static int
cage_list(struct clipctl *c, int argc, char **argv)
{
	struct clip_error *error = NULL;
	struct clip_ctx *ctx;
	char **names = NULL;
	int r;

	if (argc != 1)
		return fail_usage("cage list takes no operand");
	ctx = clipctl_ctx(c);
	if (!ctx)
		return EXIT_USAGE;
	r = clip_cage_list(ctx, &names, &error);
	if (r < 0) {
		clip_ctx_unref(ctx);
		return fail_error("cage list", r, error);
	}
	for (char **n = names; *n; n++) {
		struct clip_cage *cage = NULL;
		int *pids = NULL;
		size_t k = 0;

		if (clip_cage_attach(&cage, ctx, *n, NULL) == 0 &&
		    clip_cage_get_pids(cage, &pids, &k) == 0) {
			put_name(stdout, *n);
			putchar('\t');
			print_level(c, clip_cage_profile_get_level(clip_cage_get_profile(cage)),
				    "");
			printf("\t%d\t%zu\n", k ? pids[0] : 0, k);
		}
		free(pids);
		clip_cage_unref(cage);
		free(*n);
	}
	free(names);
	clip_ctx_unref(ctx);
	return 0;
}

/* "root" or "rootless": how this process makes cages (the reason with -v). */
static int
cage_mode(struct clipctl *c, int argc, char **argv)
{
	struct clip_ctx *ctx;
	int mode;

	if (argc != 1)
		return fail_usage("cage mode takes no operand");
	ctx = clipctl_ctx(c);
	if (!ctx)
		return EXIT_USAGE;
	mode = clip_ctx_get_cage_mode(ctx);
	clip_ctx_unref(ctx);
	if (mode < 0)
		return fail_error("cage mode", mode, NULL);
	puts(mode == CLIP_CAGE_MODE_ROOTLESS ? "rootless" : "root");
	return 0;
}

int
clipctl_cage(struct clipctl *c, int argc, char **argv)
{
	static const struct {
		const char *verb;
		int (*run)(struct clipctl *, int, char **);
	} verbs[] = {
		{ "run", cage_run },   { "start", cage_start }, { "exec", cage_exec },
		{ "stop", cage_stop }, { "list", cage_list },   { "mode", cage_mode },
	};

	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(argv[0], verbs[i].verb) == 0)
			return verbs[i].run(c, argc, argv);
	return fail_usage("unknown command 'cage %s'", argv[0]);
}
