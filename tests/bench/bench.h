/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The timing helpers every benchmark shares: a clock, and medians. */
#pragma once

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
