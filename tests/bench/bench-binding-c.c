/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The C side of the bindings' overhead benches (bench-perl.pl): one
 * operation of bench-label.c, timed for a while through the shared library
 * as a user links it, and printed as counts for the driver to pair with
 * the same operation from the binding:
 *
 *   bench-binding-c compare A B DURATION_MS         clip_level_compare, levels parsed once
 *   bench-binding-c parse-compare A B DURATION_MS   bench-label's parse+compare row
 *   bench-binding-c verify STATE FILE DURATION_MS   clip_label_verify (rootless label)
 *
 * Output: "ops=N wall=SECONDS cpu=SECONDS" (cpu: CLOCK_PROCESS_CPUTIME_ID).
 * Exit 0, 1 when an operation fails, 2 on bad usage.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <clip/clip.h>

#include "bench.h"

struct op {
	struct clip_ctx *ctx;
	struct clip_level *a, *b;
	const char *ta, *tb;
	int fd;
};

static int
do_compare(struct op *o)
{
	return clip_level_compare(o->a, o->b);
}

static int
do_parse_compare(struct op *o)
{
	struct clip_level *a = NULL, *b = NULL;
	int r = clip_level_parse(&a, o->ta, NULL);

	if (r == 0)
		r = clip_level_parse(&b, o->tb, NULL);
	if (r == 0)
		r = clip_level_compare(a, b);
	clip_level_unref(a);
	clip_level_unref(b);
	return r;
}

static int
do_verify(struct op *o)
{
	return clip_label_verify(o->ctx, o->fd, CLIP_LABEL_ROOTLESS, NULL);
}

int
main(int argc, char **argv)
{
	struct op o = { .fd = -1 };
	int (*fn)(struct op *) = NULL;
	double start, cpu0, end, t;
	long n = 0, ms;

	if (argc != 5 || (ms = atol(argv[4])) < 1) {
		fprintf(stderr, "usage: bench-binding-c compare|parse-compare A B DURATION_MS\n"
				"       bench-binding-c verify STATE FILE DURATION_MS\n");
		return 2;
	}
	if (strcmp(argv[1], "compare") == 0 || strcmp(argv[1], "parse-compare") == 0) {
		o.ta = argv[2];
		o.tb = argv[3];
		if (clip_level_parse(&o.a, o.ta, NULL) < 0 ||
		    clip_level_parse(&o.b, o.tb, NULL) < 0) {
			fprintf(stderr, "bench-binding-c: bad levels %s, %s\n", o.ta, o.tb);
			return 2;
		}
		fn = strcmp(argv[1], "compare") == 0 ? do_compare : do_parse_compare;
	} else if (strcmp(argv[1], "verify") == 0) {
		if (clip_ctx_new(&o.ctx) < 0 || clip_ctx_set_state_dir(o.ctx, argv[2]) < 0 ||
		    (o.fd = open(argv[3], O_RDONLY | O_CLOEXEC)) < 0) {
			fprintf(stderr, "bench-binding-c: cannot open %s\n", argv[3]);
			return 2;
		}
		fn = do_verify;
	} else {
		fprintf(stderr, "bench-binding-c: unknown operation %s\n", argv[1]);
		return 2;
	}
	/* Warm, as the Perl side is: the key loaded, the caches filled. */
	for (int i = 0; i < 1000; i++)
		if (fn(&o) < 0) {
			fprintf(stderr, "bench-binding-c: %s failed\n", argv[1]);
			return 1;
		}
	start = now();
	cpu0 = cpu_self_seconds();
	end = start + (double)ms / 1000.0;
	/* Batches of 64, as bench_rate(): the clock stays out of the figure. */
	do {
		for (int i = 0; i < 64; i++)
			if (fn(&o) < 0) {
				fprintf(stderr, "bench-binding-c: %s failed\n", argv[1]);
				return 1;
			}
		n += 64;
		t = now();
	} while (t < end);
	printf("ops=%ld wall=%.6f cpu=%.6f\n", n, t - start, cpu_self_seconds() - cpu0);
	if (o.fd >= 0)
		close(o.fd);
	clip_level_unref(o.a);
	clip_level_unref(o.b);
	clip_ctx_unref(o.ctx);
	return 0;
}
