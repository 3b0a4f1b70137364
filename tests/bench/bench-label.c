/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Labels and levels, measured on one core, through the shared library as a
 * user links it. Each figure is the median of several timed rounds, libclip
 * and its baseline alternated round by round (bench.h), with the paired
 * ratio's spread and the CPU time per operation:
 *   - label verify (fgetxattr + identity + HMAC-SHA256) vs a bare fgetxattr
 *     of the same attribute: what the MAC costs over reading the value;
 *   - label set vs a bare fsetxattr of a value of the same size;
 *   - level parse + compare vs strcmp of the same two strings (the floor of
 *     any text comparison).
 *
 * Usage: bench-label [--runs N] [--duration-ms MS] [--dir DIR]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <clip/clip.h>

#include "bench.h"

static int runs = 7;
static long duration_ms = 300;

struct label_data {
	struct clip_ctx *ctx;
	struct clip_level *level;
	int fd;
	char value[256];
	size_t size;
};

static int
do_verify(void *p)
{
	struct label_data *d = p;

	return clip_label_verify(d->ctx, d->fd, CLIP_LABEL_ROOTLESS, NULL);
}

static int
do_getxattr(void *p)
{
	struct label_data *d = p;
	char buf[4096];

	return fgetxattr(d->fd, CLIP_LABEL_XATTR_ROOTLESS, buf, sizeof(buf)) > 0 ? 0 : -1;
}

static int
do_set(void *p)
{
	struct label_data *d = p;

	return clip_label_set(d->ctx, d->fd, d->level, CLIP_LABEL_ROOTLESS, NULL);
}

static int
do_setxattr(void *p)
{
	struct label_data *d = p;

	return fsetxattr(d->fd, CLIP_LABEL_XATTR_ROOTLESS, d->value, d->size, 0);
}

struct level_data {
	const char *a, *b;
};

static int
do_parse_compare(void *p)
{
	struct level_data *d = p;
	struct clip_level *a = NULL, *b = NULL;
	int r;

	r = clip_level_parse(&a, d->a, NULL);
	if (r == 0)
		r = clip_level_parse(&b, d->b, NULL);
	if (r == 0)
		r = clip_level_compare(a, b);
	clip_level_unref(a);
	clip_level_unref(b);
	return r < 0 ? r : 0;
}

static volatile int sink;

static int
do_strcmp(void *p)
{
	struct level_data *d = p;

	sink += strcmp(d->a, d->b);
	return 0;
}

static struct pair
row(const char *what, const struct bench *ours, const struct bench *peer)
{
	struct pair p = bench_pair(ours, peer, runs, duration_ms);

	printf("| %-34s | %9.0f | %6.2f | %-16s | %9.0f | %6.3f | %5.2f (%.2f-%.2f) |\n", what,
	       p.ours.median, p.ours_cpu, peer->name, p.peer.median, p.peer_cpu, p.ratio.median,
	       p.ratio.min, p.ratio.max);
	return p;
}

int
main(int argc, char **argv)
{
	char tmpl[] = "/var/tmp/clip-bench-XXXXXX", state[600], file[600];
	struct label_data ld = { 0 };
	struct level_data simple = { "s2:c1", "s1" };
	struct level_data wide = { "s7:c0.c255,c300,c512.c700,c1000", "s3:c0.c100,c600" };
	const char *dir = NULL;
	struct pair verify;
	cpu_set_t one;

	if (bench_options(argc, argv, &runs, &duration_ms, &dir) != 0)
		return 2;
	if (!dir && !(dir = mkdtemp(tmpl))) {
		perror("mkdtemp");
		return 1;
	}

	/* One core, as the figures claim. */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0)
		perror("sched_setaffinity (continuing on any core)");

	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(file, sizeof(file), "%s/doc", dir);
	if (clip_ctx_new(&ld.ctx) < 0 || clip_ctx_set_state_dir(ld.ctx, state) < 0 ||
	    clip_level_parse(&ld.level, "s2:c0.c3,c7", NULL) < 0)
		return 1;
	ld.fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (ld.fd < 0 || clip_label_set(ld.ctx, ld.fd, ld.level, CLIP_LABEL_ROOTLESS, NULL) < 0) {
		fprintf(stderr, "bench-label: cannot label %s\n", file);
		return 1;
	}
	ld.size = (size_t)fgetxattr(ld.fd, CLIP_LABEL_XATTR_ROOTLESS, ld.value, sizeof(ld.value));

	printf("libclip %s, %d rounds of %ld ms each, libclip and its baseline alternated round "
	       "by round, medians, one core, file in %s; load average %.2f before\n\n",
	       clip_version(), runs, duration_ms, dir, load_now());
	printf("| %-34s | %9s | %6s | %-16s | %9s | %6s | %-17s |\n", "libclip operation", "ops/s",
	       "CPU µs", "baseline", "ops/s", "CPU µs", "ratio (spread)");
	printf("|%.36s|%.11s|%.8s|%.18s|%.11s|%.8s|%.19s|\n",
	       "------------------------------------", "-----------", "--------",
	       "------------------", "-----------", "--------", "-------------------");
	verify = row("label verify (xattr + HMAC)",
		     &(struct bench){ .name = "verify", .fn = do_verify, .data = &ld },
		     &(struct bench){ .name = "fgetxattr only", .fn = do_getxattr, .data = &ld });
	row("label set (HMAC + xattr)", &(struct bench){ .name = "set", .fn = do_set, .data = &ld },
	    &(struct bench){ .name = "fsetxattr only", .fn = do_setxattr, .data = &ld });
	row("level parse+compare (s2:c1 vs s1)",
	    &(struct bench){ .name = "parse", .fn = do_parse_compare, .data = &simple },
	    &(struct bench){ .name = "strcmp", .fn = do_strcmp, .data = &simple });
	row("level parse+compare (wide sets)",
	    &(struct bench){ .name = "parse", .fn = do_parse_compare, .data = &wide },
	    &(struct bench){ .name = "strcmp", .fn = do_strcmp, .data = &wide });
	printf("\nratio = baseline ops/s / libclip ops/s in the same round: median "
	       "(lowest-highest); "
	       "CPU µs per operation; load average %.2f after\n",
	       load_now());
	goal_line("label-verify-rate", verify.ours.median, ">=", 400000);
	goal_line("label-verify-vs-fgetxattr", verify.ratio.median, "<=", 4);

	close(ld.fd);
	unlink(file);
	clip_level_unref(ld.level);
	clip_ctx_unref(ld.ctx);
	if (dir == tmpl) {
		char key[700];

		snprintf(key, sizeof(key), "%s/mac.key", state);
		unlink(key);
		rmdir(state);
		rmdir(dir);
	}
	return 0;
}
