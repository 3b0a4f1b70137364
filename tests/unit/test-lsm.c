/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The BPF LSM's user-space half: the level comparison of its programs
 * against libclip/level/'s on the shared table (level-dominance.txt), and
 * loading, reuse and unloading in a bpffs of the test's own (a private
 * mount namespace: nothing the test pins outlives it).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "helpers.h"

#include <clip/ctx.h>
#include <clip/level.h>
#include <clip/lsm.h>

#include "config.h"
#include "lsm/lsm.h"

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

struct dominance_case {
	char a[64], b[64], order[16];
	unsigned line;
};

/* The table's cases; fails the test on a line it cannot read. */
static size_t
table_read(struct dominance_case *cases, size_t max)
{
	FILE *f = fopen(LEVEL_DOMINANCE_TABLE, "re");
	char line[256];
	size_t n = 0;
	unsigned no = 0;

	cr_assert_not_null(f, "%s: %s", LEVEL_DOMINANCE_TABLE, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		no++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		cr_assert_lt(n, max);
		cr_assert_eq(sscanf(line, "%63s %63s %15s", cases[n].a, cases[n].b, cases[n].order),
			     3, "line %u: %s", no, line);
		cases[n].line = no;
		n++;
	}
	fclose(f);
	cr_assert_gt(n, 20, "the table has %zu cases", n);
	return n;
}

static struct clip_level *
parse(const char *text)
{
	struct clip_level *l = NULL;

	cr_assert_eq(clip_level_parse(&l, text, NULL), 0, "%s", text);
	return l;
}

static const char *
order_of(int dominates, int dominated)
{
	return dominates && dominated ? "equal"
	       : dominates            ? "dominates"
	       : dominated            ? "dominated"
				      : "incomparable";
}

Test(lsm, dominance_table_c)
{
	struct dominance_case cases[64];
	size_t n = table_read(cases, 64);

	for (size_t i = 0; i < n; i++) {
		struct clip_level *a = parse(cases[i].a), *b = parse(cases[i].b);
		const char *got = order_of(clip_level_dominates(a, b), clip_level_dominates(b, a));

		cr_expect_str_eq(got, cases[i].order, "line %u: %s is %s to %s, the table says %s",
				 cases[i].line, cases[i].a, got, cases[i].b, cases[i].order);
		clip_level_unref(a);
		clip_level_unref(b);
	}
}

Test(lsm, dominance_table_bpf)
{
	struct dominance_case cases[64];
	struct lsm_dominates_args args[2 * 64];
	size_t n = table_read(cases, 64);
	int r;

	if (!HAVE_LSM)
		cr_skip_test("built without the BPF LSM (-Dlsm=disabled)");
	if (!test_is_root())
		cr_skip_test("BPF_PROG_TEST_RUN needs CAP_BPF (root of the host)");
	/* Each pair both ways: a dominating b and b dominating a give the order. */
	for (size_t i = 0; i < n; i++) {
		struct clip_level *a = parse(cases[i].a), *b = parse(cases[i].b);

		memset(&args[2 * i], 0, 2 * sizeof(args[0]));
		lsm_level_from(&args[2 * i].a, a);
		lsm_level_from(&args[2 * i].b, b);
		lsm_level_from(&args[2 * i + 1].a, b);
		lsm_level_from(&args[2 * i + 1].b, a);
		args[2 * i].dominates = args[2 * i + 1].dominates = 0xdead;
		clip_level_unref(a);
		clip_level_unref(b);
	}
	r = lsm_test_dominates(args, 2 * n);
	cr_assert_eq(r, 0, "BPF_PROG_TEST_RUN of the syscall program: %s", strerror(-r));
	for (size_t i = 0; i < n; i++) {
		const char *got =
			order_of(args[2 * i].dominates == 1, args[2 * i + 1].dominates == 1);

		cr_expect(args[2 * i].dominates <= 1 && args[2 * i + 1].dominates <= 1,
			  "line %u: the program did not answer", cases[i].line);
		cr_expect_str_eq(got, cases[i].order,
				 "line %u: for the BPF LSM %s is %s to %s, the table says %s",
				 cases[i].line, cases[i].a, got, cases[i].b, cases[i].order);
		cr_expect_eq(args[2 * i].equal, strcmp(cases[i].order, "equal") == 0, "line %u",
			     cases[i].line);
	}
}

Test(lsm, the_maps_hold_many_labelled_inodes)
{
	uint64_t t0;
	int r;

	if (!HAVE_LSM)
		cr_skip_test("built without the BPF LSM (-Dlsm=disabled)");
	if (!test_is_root())
		cr_skip_test("creating BPF maps needs CAP_BPF (root of the host)");
	/* 200000 inodes of 1000 levels: entries as they come, no preallocation. */
	t0 = now_us();
	r = lsm_test_fill_inodes(200000, 1000);
	cr_assert_eq(r, 0, "%s", strerror(-r));
	cr_log_info("200000 inodes labelled in the map in %llu ms",
		    (unsigned long long)(now_us() - t0) / 1000);
}

/* A bpffs of this test's own on /sys/fs/bpf: its pins go with the test's process. */
static void
private_bpffs_or_skip(void)
{
	if (!test_is_root())
		cr_skip_test("loading the BPF LSM needs root of the host");
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare: %s", strerror(errno));
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	cr_assert_eq(mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"), 0, "mount bpffs: %s",
		     strerror(errno));
}

Test(lsm, status_unloaded)
{
	struct clip_ctx *ctx = NULL;

	if (!HAVE_LSM)
		cr_skip_test("built without the BPF LSM (-Dlsm=disabled)");
	private_bpffs_or_skip();
	cr_assert_eq(clip_ctx_new(&ctx), 0);
	cr_assert_eq(clip_lsm_status(ctx), 0);
	/* Nothing pinned: unloading is no error. */
	cr_assert_eq(clip_lsm_unload(ctx, NULL), 0);
	cr_assert_eq(clip_lsm_status(ctx), 0);
	cr_assert_eq(clip_lsm_status(NULL), -EINVAL);
	clip_ctx_unref(ctx);
}

Test(lsm, load_reuse_unload)
{
	struct clip_error *e = NULL;
	struct clip_ctx *ctx = NULL;
	struct stat st;
	int r;

	if (!HAVE_LSM)
		cr_skip_test("built without the BPF LSM (-Dlsm=disabled)");
	private_bpffs_or_skip();
	cr_assert_eq(clip_ctx_new(&ctx), 0);
	r = clip_lsm_load(ctx, &e);
	if (r == -EPERM) {
		/* The message says what the kernel refused. */
		cr_assert(strstr(clip_error_get_message(e), "refuses the BPF LSM's programs"), "%s",
			  clip_error_get_message(e));
		cr_assert_eq(stat(CLIP_LSM_PIN_DIR "/tasks", &st), -1, "a failed load left a pin");
		cr_skip_test("the kernel refuses BPF LSM programs: %s", clip_error_get_message(e));
	}
	cr_assert_eq(r, 0, "%s", e ? clip_error_get_message(e) : "");
	cr_assert_eq(clip_lsm_status(ctx), 1);
	cr_assert_eq(stat(CLIP_LSM_PIN_DIR "/link-clip_task_alloc", &st), 0);
	/* Loaded: kept as it is. */
	cr_assert_eq(clip_lsm_load(ctx, NULL), 1);
	cr_assert_eq(clip_lsm_unload(ctx, NULL), 0);
	cr_assert_eq(clip_lsm_status(ctx), 0);
	cr_assert_eq(stat(CLIP_LSM_PIN_DIR, &st), -1, "the pin directory is left");
	clip_ctx_unref(ctx);
}
