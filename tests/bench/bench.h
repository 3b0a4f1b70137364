/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The timing helpers every benchmark shares: a clock, and medians. */
#pragma once

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
