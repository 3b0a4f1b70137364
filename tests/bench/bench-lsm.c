/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cost of the BPF LSM (issue 17, doc/lsm.md), with it loaded and not,
 * in alternate rounds (with then without, without then with):
 *
 *  - open+read+close of a small file by a core process (this one) and by
 *    a cage's process (this program again, run in a cage with --inner).
 *    Goals: core at most 1.03 times, cage at most 1.10 times;
 *  - start-to-exit of /bin/true in a cage (clip_cage_start_spawn(), as
 *    `clipctl cage run`). Goal: 0.2 ms more at most.
 *
 * As root it works in a mount namespace of its own with a bpffs of its
 * own on /sys/fs/bpf, so that what it loads goes with it, whatever
 * happens. Not root, or where the kernel refuses the programs, it runs
 * the arms without the LSM only, and says so: the smoke run checks that
 * the bench works, not its figures.
 *
 * Usage: bench-lsm --build-root DIR [--rounds N] [--iterations N] [--opens N]
 *        bench-lsm --inner N FILE   (in the cage: ns per open+read+close)
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <clip/clip.h>

#include "bench.h"

/* Where a cage of the bench sees the build tree. */
#define BENCH_ROOT "/opt/clip-bench"

static int rounds = 9, iterations = 10, opens = 20000;

/* ns per open+read+close of @file, over @n. */
static double
open_read_close(const char *file, int n)
{
	char buf[64];
	double t0 = now();

	for (int i = 0; i < n; i++) {
		int fd = open(file, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || read(fd, buf, sizeof(buf)) < 0)
			return -1;
		close(fd);
	}
	return (now() - t0) * 1e9 / n;
}

/* @argv in a new cage of @p, to its end; its standard output in @out. */
static int
cage_run(struct clip_ctx *ctx, struct clip_cage_profile *p, const char *const *argv, char *out,
	 size_t size)
{
	int pipefd[2], fds[3], r;
	ssize_t n = 0;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fds[1] = pipefd[1];
	fds[2] = 2;
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv, .fds = fds, .n_fds = 3 };
	/* The output is one short line: the pipe holds it until the command has ended. */
	r = bench_cage_first(ctx, p, &o, "bench-lsm", NULL);
	close(pipefd[1]);
	close(fds[0]);
	if (out) {
		n = read(pipefd[0], out, size - 1);
		out[n > 0 ? n : 0] = '\0';
	}
	close(pipefd[0]);
	return r;
}

/* A bpffs of our own: nothing we load outlives us. */
static bool
private_bpffs(void)
{
	return geteuid() == 0 && unshare(CLONE_NEWNS) == 0 &&
	       mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
	       mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700") == 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "opens", required_argument, NULL, 'o' },
		{ "build-root", required_argument, NULL, 'b' },
		{ "inner", required_argument, NULL, 'n' },
		{ 0 },
	};
	/* [arm][round]: arm 0 with the LSM, 1 without. */
	double core[2][64], cage[2][64], start[2][64];
	const char *build_root = NULL;
	struct clip_cage_profile *p = NULL;
	struct clip_error *e = NULL;
	struct clip_ctx *ctx = NULL;
	char file[4096], text[8192], out[64], n_opens[16], self[4096], root[4096];
	char inner_self[4096], inner_file[4096];
	ssize_t len;
	int opt, arms = 2, inner = 0;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt == 'r')
			rounds = atoi(optarg);
		else if (opt == 'i')
			iterations = atoi(optarg);
		else if (opt == 'o')
			opens = atoi(optarg);
		else if (opt == 'b')
			build_root = optarg;
		else if (opt == 'n')
			inner = atoi(optarg);
		else
			return 2;
	}
	if (inner > 0 && optind < argc) {
		printf("%.1f\n", open_read_close(argv[optind], inner));
		return 0;
	}
	if (!build_root || rounds < 1 || rounds > 64 || iterations < 1 || opens < 1)
		return 2;
	snprintf(file, sizeof(file), "%s/tests/bench/bench-lsm.data", build_root);
	{
		FILE *f = fopen(file, "we");

		if (!f || fputs("a small file\n", f) < 0 || fclose(f) != 0)
			return 1;
	}
	/*
	 * The build tree bound at /opt/clip-bench: beneath a top-level directory
	 * of the cage's read-only root, where the cage may execute (a tree under
	 * /tmp, the cage's own tmpfs, would be bound where it may not).
	 */
	if (!realpath(build_root, root))
		return 1;
	snprintf(text, sizeof(text),
		 "[Cage]\nName=bench-lsm\n[Files]\nBindReadOnly=%s:" BENCH_ROOT "\n", root);
	if (clip_ctx_new(&ctx) < 0 ||
	    clip_cage_profile_parse(&p, "bench-lsm.cage", text, strlen(text), &e) < 0) {
		fprintf(stderr, "bench-lsm: %s\n", e ? clip_error_get_message(e) : "no context");
		return 1;
	}
	if (!private_bpffs()) {
		printf("# not root, or no bpffs of its own: the arms without the LSM only\n");
		arms = 1;
	} else if (clip_lsm_load(ctx, &e) < 0) {
		printf("# the LSM cannot be loaded here (%s): the arms without it only\n",
		       clip_error_get_message(e));
		clip_error_free(e);
		e = NULL;
		arms = 1;
	}
	snprintf(n_opens, sizeof(n_opens), "%d", opens);
	/* This program, by its path: the cage sees the build tree where it is. */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return 1;
	self[len] = '\0';
	if (strncmp(self, root, strlen(root)) != 0 || self[strlen(root)] != '/') {
		fprintf(stderr, "bench-lsm: %s is not in the build tree %s\n", self, root);
		return 1;
	}
	snprintf(inner_self, sizeof(inner_self), BENCH_ROOT "%s", self + strlen(root));
	snprintf(inner_file, sizeof(inner_file), BENCH_ROOT "/tests/bench/bench-lsm.data");
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < 2; k++) {
			/* With then without, without then with: neither always first. */
			int arm = arms == 1 ? 1 : (r + k) % 2;
			const char *const inner_argv[] = { inner_self, "--inner", n_opens,
							   inner_file, NULL };
			const char *const true_argv[] = { "/bin/true", NULL };
			double t0;

			if (arms == 2 &&
			    (arm == 0 ? clip_lsm_load(ctx, NULL) : clip_lsm_unload(ctx, NULL)) < 0)
				return 1;
			core[arm][r] = open_read_close(file, opens);
			if (cage_run(ctx, p, inner_argv, out, sizeof(out)) < 0)
				return 1;
			cage[arm][r] = atof(out);
			t0 = now();
			for (int i = 0; i < iterations; i++)
				if (cage_run(ctx, p, true_argv, NULL, 0) < 0)
					return 1;
			start[arm][r] = (now() - t0) * 1000.0 / iterations;
			if (arms == 1)
				break;
		}
	if (arms == 2)
		(void)clip_lsm_unload(ctx, NULL);
	printf("# %d rounds; open+read+close x %d; cage starts x %d%s\n", rounds, opens, iterations,
	       arms == 2 ? ", with and without the LSM in turns" : "");
	printf("%-34s %12s %12s\n", "", "with LSM", "without");
	printf("%-34s %12s %12.1f\n", "core open+read+close (ns)", arms == 2 ? "" : "-",
	       median(core[1], rounds));
	if (arms == 2) {
		printf("%-34s %12.1f %12.1f  ratio %.3f\n", "core open+read+close (ns)",
		       median(core[0], rounds), median(core[1], rounds),
		       median(core[0], rounds) / median(core[1], rounds));
		printf("%-34s %12.1f %12.1f  ratio %.3f\n", "cage open+read+close (ns)",
		       median(cage[0], rounds), median(cage[1], rounds),
		       median(cage[0], rounds) / median(cage[1], rounds));
		printf("%-34s %12.3f %12.3f  +%.3f ms\n", "cage start of /bin/true (ms)",
		       median(start[0], rounds), median(start[1], rounds),
		       median(start[0], rounds) - median(start[1], rounds));
	} else {
		printf("%-34s %12s %12.1f\n", "cage open+read+close (ns)", "-",
		       median(cage[1], rounds));
		printf("%-34s %12s %12.3f\n", "cage start of /bin/true (ms)", "-",
		       median(start[1], rounds));
	}
	unlink(file);
	clip_cage_profile_unref(p);
	clip_ctx_unref(ctx);
	return 0;
}
