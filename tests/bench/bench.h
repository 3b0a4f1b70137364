/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The timing helpers every benchmark shares: a clock, CPU time, medians,
 * paired ratios with their spread, the load average, and the "goal" lines
 * tools/bench-report reads. Every benchmark measures libclip and its peer
 * in alternation, round by round (the order swapped every round), so that
 * a shared machine's load falls on both alike.
 */
#pragma once

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <clip/clip.h>

/* Seconds on clock @id. */
static inline double
clock_seconds(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds on the monotonic clock. */
static inline double
now(void)
{
	return clock_seconds(CLOCK_MONOTONIC);
}

static inline int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of @n values (sorts them in place). */
static inline double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return v[n / 2];
}

/*
 * CPU seconds, user and system, of this process and of its children waited
 * for: a subject's whole process tree when taken before and after it.
 */
static inline double
cpu_seconds(void)
{
	struct rusage self, kids;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	return (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
			kids.ru_stime.tv_sec) +
	       (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec +
			kids.ru_stime.tv_usec) /
		       1e6;
}

/* CPU seconds, user and system, of this process alone (its children left out). */
static inline double
cpu_self_seconds(void)
{
	return clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

/* The 1-minute load average, or -1. */
static inline double
load_now(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "re");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* A "# load average WHEN: 1 5 15" line, or nothing when the kernel has none. */
static inline void
load_line(const char *when)
{
	double l[3];

	if (getloadavg(l, 3) == 3)
		printf("# load average %s: %.2f %.2f %.2f\n", when, l[0], l[1], l[2]);
}

/* The median, lowest and highest of @n values (sorts a copy). */
struct spread {
	double median, min, max;
};

static inline struct spread
spread_of(const double *v, int n)
{
	double c[256];
	int k = n < 256 ? n : 256;

	for (int i = 0; i < k; i++)
		c[i] = v[i];
	qsort(c, (size_t)k, sizeof(double), cmp_double);
	return (struct spread){ c[k / 2], c[0], c[k - 1] };
}

/*
 * A line for tools/bench-report: "goal NAME VALUE OP TARGET met|not-met",
 * OP "<=" or ">=". The report makes it a row of its goals table.
 */
static inline void
goal_line(const char *name, double value, const char *op, double target)
{
	bool met = op[0] == '<' ? value <= target : value >= target;

	printf("goal %s %.6g %s %.6g %s\n", name, value, op, target, met ? "met" : "not-met");
}

/* One measured operation: @fn(@data), which returns < 0 on failure. */
struct bench {
	const char *name;
	int (*fn)(void *);
	void *data;
	/* The operation is a refusal being timed: its failure is the result. */
	bool may_fail;
};

/*
 * One run of @b for @duration_ms: operations per second, and CPU seconds per
 * operation in *@cpu_per_op unless NULL. Calls come in batches of 64 so that
 * reading the clock stays out of the figure. An unexpected failure ends the
 * program: a figure for an operation that did not happen would be a lie.
 */
static inline double
bench_rate_once(const struct bench *b, long duration_ms, double *cpu_per_op)
{
	double start = now(), cpu = cpu_per_op ? cpu_seconds() : 0,
	       end = start + (double)duration_ms / 1000.0, t;
	long n = 0;

	do {
		for (int i = 0; i < 64; i++)
			if (b->fn(b->data) < 0 && !b->may_fail) {
				fprintf(stderr, "bench: %s failed\n", b->name);
				exit(1);
			}
		n += 64;
		t = now();
	} while (t < end);
	if (cpu_per_op)
		*cpu_per_op = (cpu_seconds() - cpu) / (double)n;
	return (double)n / (t - start);
}

/* Operations per second: the median over @runs runs (64 at most) of @duration_ms each. */
static inline double
bench_rate(const struct bench *b, int runs, long duration_ms)
{
	double rates[64];
	int n = runs < 64 ? runs : 64;

	for (int r = 0; r < n; r++)
		rates[r] = bench_rate_once(b, duration_ms, NULL);
	return median(rates, n);
}

/* @ours beside @peer, measured round by round in alternation. */
struct pair {
	struct spread ours, peer; /* operations per second */
	struct spread ratio; /* peer's rate / ours, in the same round */
	double ours_cpu, peer_cpu; /* median CPU microseconds per operation */
};

static inline struct pair
bench_pair(const struct bench *ours, const struct bench *peer, int runs, long duration_ms)
{
	double a[64], b[64], ratio[64], ca[64], cb[64];
	struct pair p;
	int n = runs < 64 ? runs : 64;

	for (int r = 0; r < n; r++) {
		/* The order swaps every round: neither always runs on a warmer cache. */
		if (r % 2 == 0) {
			a[r] = bench_rate_once(ours, duration_ms, &ca[r]);
			b[r] = bench_rate_once(peer, duration_ms, &cb[r]);
		} else {
			b[r] = bench_rate_once(peer, duration_ms, &cb[r]);
			a[r] = bench_rate_once(ours, duration_ms, &ca[r]);
		}
		ratio[r] = b[r] / a[r];
	}
	p.ours = spread_of(a, n);
	p.peer = spread_of(b, n);
	p.ratio = spread_of(ratio, n);
	p.ours_cpu = spread_of(ca, n).median * 1e6;
	p.peer_cpu = spread_of(cb, n).median * 1e6;
	return p;
}

/*
 * The options of the rate benchmarks: --runs N (1 to 64), --duration-ms MS
 * and --dir DIR (NULL unless given). 0, or 2 after a usage message.
 */
static inline int
bench_options(int argc, char **argv, int *runs, long *duration_ms, const char **dir)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "duration-ms", required_argument, NULL, 'd' },
		{ "dir", required_argument, NULL, 'D' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'r')
			*runs = atoi(optarg);
		else if (c == 'd')
			*duration_ms = atol(optarg);
		else if (c == 'D')
			*dir = optarg;
		else
			*runs = 0;
	}
	if (*runs < 1 || *runs > 64 || *duration_ms < 1) {
		fprintf(stderr, "Usage: %s [--runs 1..64] [--duration-ms MS] [--dir DIR]\n",
			argv[0]);
		return 2;
	}
	return 0;
}

/*
 * Integer options, --@names[i] N into *@values[i] (unchecked), @n of them (at most 8). 0, or
 * 2 for an option it does not know.
 */
static inline int
bench_int_options(int argc, char **argv, const char *const *names, int *const *values, int n)
{
	struct option opts[9] = { { 0 } };
	int c;

	for (int i = 0; i < n && i < 8; i++)
		opts[i] = (struct option){ .name = names[i],
					   .has_arg = required_argument,
					   .val = i + 1 };
	while ((c = getopt_long(argc, argv, "", opts, NULL)) > 0 && c <= n && c <= 8)
		*values[c - 1] = atoi(optarg);
	return c == -1 ? 0 : 2;
}

/*
 * @o's command the first process of a new cage of @p, which ends with it: 0 when it exits 0,
 * else -1 (a failure said on stderr after @who). *@missing, unless NULL: the cage's missing
 * flags.
 */
static inline int
bench_cage_first(struct clip_ctx *ctx, struct clip_cage_profile *p,
		 const struct clip_cage_spawn_opts *o, const char *who, int *missing)
{
	struct clip_error *e = NULL;
	struct clip_cage *c = NULL;
	int pidfd = -1, status = -1, r;

	r = clip_cage_new(&c, ctx, p, &e);
	if (r >= 0)
		r = clip_cage_start_spawn(c, CLIP_CAGE_START_END_WITH_FIRST, o, &pidfd, &e);
	if (r >= 0) {
		if (missing)
			*missing = clip_cage_get_missing(c);
		r = clip_cage_wait_process(c, pidfd, &status);
		close(pidfd);
	}
	if (r < 0)
		fprintf(stderr, "%s: %s\n", who, e ? clip_error_get_message(e) : strerror(-r));
	clip_error_free(e);
	if (c)
		clip_cage_stop(c, 0, NULL);
	clip_cage_unref(c);
	return r < 0 || status != 0 ? -1 : 0;
}
