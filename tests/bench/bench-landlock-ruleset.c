/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cost of Landlock's newer rights (issue 21), alone: what a cage's
 * start does more with the kernel's ABI than with ABI 3, timed without the
 * rest of the start, whose noise on a shared machine is larger than the
 * goal (bench-landlock times whole starts). Per start, the init builds
 * the ruleset (cage_landlock_ruleset(): with ABI 4 to 6 the TCP ports,
 * the terminals' ioctls and the scoping), and the launcher joins the
 * kernel's audit group (cage_audit_open(), ABI 7). Whether the audit is on
 * (cage_audit_check(), whose answer comes from a kernel thread) is asked
 * while the init sets up, off the start's path: timed too, and shown
 * apart. Goal: at most 0.05 ms a start.
 *
 * Four arms, in a rotating order round by round so that the load of a
 * shared machine falls on all alike: A the ruleset of the kernel's ABI,
 * B the ABI 3 ruleset, C the audit group joined, D the audit's state
 * asked; each round times
 * --iterations of each. Printed: per arm the median µs, wall and CPU
 * time, the median of the paired differences A − B and of A − B + C (the
 * cost a start pays) with their spread (first and third quartiles), the
 * load average, and whether the goal was met on this run.
 *
 * Usage: bench-landlock-ruleset [--rounds N] [--iterations N]
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <clip/clip.h>

#include "bench.h"
#include "cage/cage-internal.h"

#define ROUNDS_MAX 256
#define GOAL_US 50.0

/* µs of wall and CPU time per build of the ruleset under @abi, or per audit join (@abi 0) or
 * audit check (@abi -1). */
static int
batch(const struct clip_cage_profile *p, int abi, int iterations, double *wall, double *cpu)
{
	double t0 = now(), c0 = cpu_self_seconds();

	for (int i = 0; i < iterations; i++) {
		struct cage_audit a = { .fd = -1 };
		const char *why = NULL;
		int fd;

		if (abi == 0) {
			if (cage_audit_open(&a, &why) == 0)
				cage_audit_close(&a);
			continue;
		}
		if (abi < 0) {
			(void)cage_audit_enabled();
			continue;
		}
		fd = cage_landlock_ruleset(p, abi, NULL);
		if (fd < 0) {
			fprintf(stderr, "bench-landlock-ruleset: ABI %d: %m\n", abi);
			return -1;
		}
		close(fd);
	}
	*wall = (now() - t0) * 1e6 / iterations;
	*cpu = (cpu_self_seconds() - c0) * 1e6 / iterations;
	return 0;
}

/* Median, first and third quartiles of @n values (sorted in place). */
static void
spread(double *v, int n, double *med, double *q1, double *q3)
{
	*med = median(v, n);
	*q1 = v[n / 4];
	*q3 = v[3 * n / 4];
}

int
main(int argc, char **argv)
{
	static const char text[] = "[Cage]\nName=bench\n[Network]\nMode=loopback\n"
				   "TCPBindPorts=8080\nTCPConnectPorts=443\n";
	double wall[4][ROUNDS_MAX], cpu[4][ROUNDS_MAX], diff[ROUNDS_MAX], cost[ROUNDS_MAX],
		cpu_cost[ROUNDS_MAX];
	struct clip_cage_profile *p = NULL;
	struct clip_error *e = NULL;
	int rounds = 21, iterations = 200, abi = cage_landlock_abi();

	if (bench_int_options(argc, argv, (const char *const[]){ "rounds", "iterations" },
			      (int *const[]){ &rounds, &iterations }, 2) != 0)
		return 2;
	if (rounds < 1 || rounds > ROUNDS_MAX || iterations < 1) {
		fprintf(stderr, "bench-landlock-ruleset: --rounds 1..%d, --iterations >= 1\n",
			ROUNDS_MAX);
		return 2;
	}
	if (abi < 4) {
		printf("1..0 # SKIP this kernel has Landlock ABI %d: nothing newer than 3 to "
		       "time\n",
		       abi);
		return 77;
	}
	if (clip_cage_profile_parse(&p, "bench", text, strlen(text), &e) < 0) {
		fprintf(stderr, "bench-landlock-ruleset: %s\n", clip_error_get_message(e));
		return 1;
	}
	printf("# Landlock's work per cage start: the ABI %d ruleset (A), the ABI 3 one (B), the "
	       "audit group joined (C) and its state asked (D, off the start's path) for ABI 7; "
	       "%d rounds of %d\n",
	       abi, rounds, iterations);
	load_line("before");
	for (int r = 0; r < rounds; r++) {
		/* A B C D, then B C D A, and so on. */
		for (int k = 0; k < 4; k++) {
			int arm = (r + k) % 4;
			int arm_abi = arm == 0 ? abi : arm == 1 ? 3 : arm == 2 ? 0 : -1;

			if (arm_abi <= 0 && abi < 7)
				wall[arm][r] = cpu[arm][r] = 0;
			else if (batch(p, arm_abi, iterations, &wall[arm][r], &cpu[arm][r]) < 0)
				return 1;
		}
		diff[r] = wall[0][r] - wall[1][r];
		cost[r] = diff[r] + wall[2][r];
		cpu_cost[r] = cpu[0][r] - cpu[1][r] + cpu[2][r];
	}
	load_line("after");
	{
		double d, dq1, dq3, c, cq1, cq3, cc, ccq1, ccq3;

		spread(diff, rounds, &d, &dq1, &dq3);
		spread(cost, rounds, &c, &cq1, &cq3);
		spread(cpu_cost, rounds, &cc, &ccq1, &ccq3);
		printf("| arm | wall µs | CPU µs |\n| --- | --- | --- |\n");
		printf("| A: ABI %d ruleset | %.1f | %.1f |\n", abi, median(wall[0], rounds),
		       median(cpu[0], rounds));
		printf("| B: ABI 3 ruleset | %.1f | %.1f |\n", median(wall[1], rounds),
		       median(cpu[1], rounds));
		printf("| C: audit group joined (ABI 7) | %.1f | %.1f |\n", median(wall[2], rounds),
		       median(cpu[2], rounds));
		printf("| D: audit state asked (ABI 7), while the init sets up | %.1f | %.1f |\n",
		       median(wall[3], rounds), median(cpu[3], rounds));
		printf("A − B, paired: median %.1f µs wall (quartiles %.1f to %.1f)\n", d, dq1,
		       dq3);
		printf("A − B + C, a start's added cost: median %.1f µs wall (quartiles %.1f to "
		       "%.1f), "
		       "%.1f µs CPU (quartiles %.1f to %.1f)\n",
		       c, cq1, cq3, cc, ccq1, ccq3);
		/* Every step is a system call the caller runs to its end: on a quiet machine
		   wall is CPU; on a busy one wall adds the waits for a CPU, which CPU time
		   leaves out. The goal lines are tools/bench-report's. */
		printf("goal landlock-added-cpu-us %.1f <= %.0f %s\n", cc, GOAL_US,
		       cc <= GOAL_US ? "met" : "not-met");
		printf("goal landlock-added-wall-us %.1f <= %.0f %s\n", c, GOAL_US,
		       c <= GOAL_US ? "met" : "not-met");
	}
	clip_cage_profile_unref(p);
	return 0;
}
