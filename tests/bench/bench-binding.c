/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The C side of tests/bench/bench-python.py: clip_level_compare() and
 * clip_label_verify() per second through the shared library, one timed run
 * each, with the process's CPU time beside the wall time, so that the
 * Python script can alternate this and its own loop round by round.
 *
 * Usage: bench-binding --dir DIR [--duration-ms MS]
 *   DIR holds state/ (the key) and doc (a file labelled rootless), as
 *   bench-python.py prepares them.
 * Prints one line per operation: NAME OPS_PER_S WALL_S CPU_S
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <clip/clip.h>

#include "bench.h"

struct data {
	struct clip_ctx *ctx;
	struct clip_level *a, *b;
	int fd;
};

static int
do_compare(void *p)
{
	struct data *d = p;

	return clip_level_compare(d->a, d->b);
}

static int
do_verify(void *p)
{
	struct data *d = p;

	return clip_label_verify(d->ctx, d->fd, CLIP_LABEL_ROOTLESS, NULL);
}

static void
measure(const struct bench *b, long duration_ms)
{
	double w0 = now(), c0 = cpu_self_seconds();
	double rate = bench_rate(b, 1, duration_ms);

	printf("%s %.1f %.6f %.6f\n", b->name, rate, now() - w0, cpu_self_seconds() - c0);
}

int
main(int argc, char **argv)
{
	int runs = 1;
	long duration_ms = 200;
	const char *dir = NULL;
	char path[4096];
	struct data d = { 0 };

	if (bench_options(argc, argv, &runs, &duration_ms, &dir) || !dir) {
		fprintf(stderr, "Usage: %s --dir DIR [--duration-ms MS]\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/state", dir);
	if (clip_ctx_new(&d.ctx) < 0 || clip_ctx_set_state_dir(d.ctx, path) < 0 ||
	    clip_level_parse(&d.a, "s3:c0.c9,c100", NULL) < 0 ||
	    clip_level_parse(&d.b, "s2:c1,c5,c100", NULL) < 0) {
		fprintf(stderr, "bench-binding: cannot set up the context and levels\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/doc", dir);
	d.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (d.fd < 0 || clip_label_verify(d.ctx, d.fd, CLIP_LABEL_ROOTLESS, NULL) < 0) {
		fprintf(stderr, "bench-binding: %s is not a labelled file\n", path);
		return 1;
	}
	measure(&(struct bench){ .name = "compare", .fn = do_compare, .data = &d }, duration_ms);
	measure(&(struct bench){ .name = "verify", .fn = do_verify, .data = &d }, duration_ms);
	close(d.fd);
	clip_level_unref(d.a);
	clip_level_unref(d.b);
	clip_ctx_unref(d.ctx);
	return 0;
}
