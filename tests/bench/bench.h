/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The timing helpers every benchmark shares: a clock, and medians. */
#pragma once

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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

/* One measured operation: @fn(@data), which returns < 0 on failure. */
struct bench {
	const char *name;
	int (*fn)(void *);
	void *data;
	/* The operation is a refusal being timed: its failure is the result. */
	bool may_fail;
};

/*
 * Operations per second: the median over @runs runs of @duration_ms each,
 * calling in batches of 64 so that reading the clock stays out of the
 * figure. An unexpected failure ends the program: a figure for an
 * operation that did not happen would be a lie.
 */
static inline double
bench_rate(const struct bench *b, int runs, long duration_ms)
{
	double rates[64];

	for (int r = 0; r < runs && r < 64; r++) {
		double start = now(), end = start + (double)duration_ms / 1000.0, t;
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
		rates[r] = (double)n / (t - start);
	}
	return median(rates, runs < 64 ? runs : 64);
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
