/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cost of Landlock's newer rights (issue 21): start-to-exit of
 * /bin/true in a cage (clip_cage_start_spawn(), as `clipctl cage run`;
 * loopback network, two TCP ports listed) with the full ruleset of the
 * kernel's ABI (TCP ports, device ioctls, scoping, denial logging) beside
 * the ABI 3 ruleset (file rights only). Goal: no measurable cost, at most
 * 0.05 ms a start.
 *
 * The ABI 3 arm is the same start with
 * CLIP_TEST_DISABLE=landlock-net,landlock-ioctl,landlock-scope, which only
 * a -Dtest_hooks=true build honours: in another build both arms are the
 * full ruleset, which the output says (the smoke run checks that the
 * bench works, not its figures). Each arm is checked by what
 * clip_cage_get_missing() reports.
 *
 * The arms alternate round by round (A then B, B then A), so that the
 * load of a shared machine falls on both alike; each round times
 * --iterations starts of each. Printed: per arm the median wall time and
 * CPU time (this process and its children, user+system) of a start, the
 * median of the paired ratios A/B and of the paired differences, and the
 * load average before and after.
 *
 * Usage: bench-landlock [--rounds N] [--iterations N]
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <clip/clip.h>

#include "bench.h"

#define ABI3_HOOKS "landlock-net,landlock-ioctl,landlock-scope"
#define NEWER_MISSING \
	(CLIP_CAGE_MISSING_LANDLOCK_NET | CLIP_CAGE_MISSING_LANDLOCK_IOCTL | \
	 CLIP_CAGE_MISSING_LANDLOCK_SCOPE)

static int rounds = 15, iterations = 20;

/* One start-to-exit of /bin/true; its missing flags in *@missing. */
static int
cage_true(struct clip_ctx *ctx, struct clip_cage_profile *p, int *missing)
{
	static const char *const argv[] = { "/bin/true", NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv };

	return bench_cage_first(ctx, p, &o, "bench-landlock", missing);
}

/* ms of wall and CPU time per start over one batch, with the arm's hooks set. */
static int
batch(struct clip_ctx *ctx, struct clip_cage_profile *p, bool abi3, double *wall, double *cpu,
      int *missing)
{
	double t0, c0;

	if (abi3)
		setenv("CLIP_TEST_DISABLE", ABI3_HOOKS, 1);
	else
		unsetenv("CLIP_TEST_DISABLE");
	t0 = now();
	c0 = cpu_seconds();
	for (int i = 0; i < iterations; i++)
		if (cage_true(ctx, p, missing) < 0)
			return -1;
	*cpu = (cpu_seconds() - c0) * 1000.0 / iterations;
	*wall = (now() - t0) * 1000.0 / iterations;
	unsetenv("CLIP_TEST_DISABLE");
	return 0;
}

int
main(int argc, char **argv)
{
	double wall[2][64], cpu[2][64], ratio[64], diff[64];
	struct clip_cage_profile *p = NULL;
	struct clip_ctx *ctx = NULL;
	int missing[2] = { 0, 0 };
	bool abi3_real;

	if (bench_int_options(argc, argv, (const char *const[]){ "rounds", "iterations" },
			      (int *const[]){ &rounds, &iterations }, 2) != 0)
		return 2;
	if (rounds < 1 || rounds > 64 || iterations < 1)
		return 2;
	if (clip_ctx_new(&ctx) < 0 || clip_cage_profile_new(&p, "bench-ll", NULL) < 0 ||
	    clip_cage_profile_set_network(p, CLIP_CAGE_NET_LOOPBACK, NULL, NULL) < 0 ||
	    clip_cage_profile_add_port(p, CLIP_CAGE_PORT_BIND, 8080, NULL) < 0 ||
	    clip_cage_profile_add_port(p, CLIP_CAGE_PORT_CONNECT, 443, NULL) < 0)
		return 1;

	load_line("before");
	for (int r = 0; r < rounds; r++)
		/* A then B, B then A: neither always runs first. */
		for (int k = 0; k < 2; k++) {
			int arm = (r + k) % 2;

			if (batch(ctx, p, arm == 1, &wall[arm][r], &cpu[arm][r], &missing[arm]) < 0)
				return 1;
		}
	load_line("after");
	for (int r = 0; r < rounds; r++) {
		ratio[r] = wall[0][r] / wall[1][r];
		diff[r] = wall[0][r] - wall[1][r];
	}
	abi3_real = (missing[1] & NEWER_MISSING) == NEWER_MISSING;
	printf("# start-to-exit of /bin/true in a cage, %d rounds of %d starts per arm, in turns\n",
	       rounds, iterations);
	printf("# A: the kernel's full Landlock ruleset (missing 0x%x)\n", (unsigned)missing[0]);
	printf("# B: the ABI 3 ruleset (missing 0x%x)%s\n", (unsigned)missing[1],
	       abi3_real ? "" : ": NOT ABI 3, this build ignores CLIP_TEST_DISABLE (-Dtest_hooks)");
	printf("%-28s %10s %10s\n", "", "wall ms", "CPU ms");
	printf("%-28s %10.3f %10.3f\n", "A full ruleset", median(wall[0], rounds),
	       median(cpu[0], rounds));
	printf("%-28s %10.3f %10.3f\n", "B ABI 3 ruleset", median(wall[1], rounds),
	       median(cpu[1], rounds));
	printf("%-28s %10.3f\n", "paired ratio A/B (median)", median(ratio, rounds));
	printf("%-28s %10.3f\n", "paired A-B ms (median)", median(diff, rounds));
	clip_cage_profile_unref(p);
	clip_ctx_unref(ctx);
	return 0;
}
