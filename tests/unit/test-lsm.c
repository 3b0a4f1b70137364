/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The BPF LSM's user-space half: the level comparison of its programs
 * against libclip/level/'s on the shared table (level-dominance.txt), and
 * loading, reuse and unloading in a bpffs of the test's own (a private
 * mount namespace: nothing the test pins outlives it).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "helpers.h"

#include <clip/cage.h>
#include <clip/ctx.h>
#include <clip/label.h>
#include <clip/level.h>
#include <clip/lsm.h>

#include "base/macro.h"
#include "config.h"
#include "lsm/lsm.h"

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/*
 * valgrind's bpf() wrapper checks attribute bytes that libbpf leaves unset
 * for the command it runs: every load is an error there.
 */
static bool
under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload");
}

#define SKIP_UNDER_VALGRIND() \
	do { \
		if (under_valgrind()) \
			cr_skip_test( \
				"valgrind's bpf() reads attribute bytes libbpf leaves unset"); \
	} while (0)

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
	SKIP_UNDER_VALGRIND();
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
	SKIP_UNDER_VALGRIND();
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
	if (under_valgrind())
		cr_skip_test(
			"valgrind's mount() takes a propagation change's NULL type for an error");
	cr_assert_eq(test_unshare_mount(), 0, "a private mount namespace: %s", strerror(errno));
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
	SKIP_UNDER_VALGRIND();
	private_bpffs_or_skip();
	cr_assert_eq(clip_ctx_new(&ctx), 0);
	r = clip_lsm_load(ctx, &e);
	if (r == -EPERM) {
		/* The message says what the kernel refused. */
		cr_assert(strstr(clip_error_get_message(e), "refuses the BPF LSM's programs"), "%s",
			  clip_error_get_message(e));
		cr_assert_eq(stat(CLIP_LSM_PIN_DIR, &st), -1, "a failed load left its directory");
		cr_skip_test("%s", clip_error_get_message(e));
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

/*
 * The misconfigurations the LSM is for (doc/lsm.md), each shown refused
 * with the LSM loaded and let through once it is unloaded: as root, with
 * the cage's processes holding the capabilities of their user namespace
 * that would matter. In a bpffs of the test's own; skipped where the
 * kernel refuses BPF LSM programs.
 */
#define CAPS \
	"Capability=CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH CAP_FOWNER CAP_KILL CAP_SYS_PTRACE " \
	"CAP_SYS_ADMIN CAP_NET_ADMIN\n"

/* A context with the LSM loaded, its state under @dir (made 0755 for the cages) unless NULL. */
static struct clip_ctx *
lsm_loaded_or_skip(const char *dir)
{
	_cleanup_free_ char *state = NULL;
	struct clip_error *e = NULL;
	struct clip_ctx *ctx;
	int r;

	if (!HAVE_LSM)
		cr_skip_test("built without the BPF LSM (-Dlsm=disabled)");
	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	private_bpffs_or_skip();
	if (dir) {
		cr_assert_geq(asprintf(&state, "%s/state", dir), 0);
		cr_assert_eq(chmod(dir, 0755), 0);
	}
	ctx = test_ctx(state);
	r = clip_lsm_load(ctx, &e);
	if (r == -EPERM)
		cr_skip_test("%s", clip_error_get_message(e));
	cr_assert_eq(r, 0, "%s", e ? clip_error_get_message(e) : "");
	return ctx;
}

static struct clip_cage *
cage_started(struct clip_ctx *ctx, const char *text)
{
	struct clip_cage_profile *p = NULL;
	struct clip_cage *c = NULL;
	struct clip_error *e = NULL;

	cr_assert_eq(clip_cage_profile_parse(&p, "t.cage", text, strlen(text), &e), 0, "%s",
		     e ? clip_error_get_message(e) : "");
	cr_assert_eq(clip_cage_new(&c, ctx, p, NULL), 0);
	clip_cage_profile_unref(p);
	cr_assert_eq(clip_cage_start(c, 0, &e), 0, "start: %s", e ? clip_error_get_message(e) : "");
	cr_assert_eq(clip_cage_get_missing(c) & CLIP_CAGE_MISSING_LSM, 0,
		     "the cage did not register with the LSM");
	return c;
}

/* The exit status of sh -c @script in @c, with @fd as its fd 3 when not -1. */
static int
cage_run(struct clip_cage *c, const char *script, int fd)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	const int fds[] = { open("/dev/null", O_RDONLY | O_CLOEXEC), 1, 2, fd };
	struct clip_cage_spawn_opts o = {
		.size = sizeof(o), .argv = argv, .fds = fds, .n_fds = fd >= 0 ? 4 : 3
	};
	struct clip_error *e = NULL;
	int pidfd = -1, status = -1;

	cr_assert_eq(clip_cage_spawn(c, &o, &pidfd, &e), 0, "spawn: %s",
		     e ? clip_error_get_message(e) : "");
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	close(pidfd);
	close(fds[0]);
	return status;
}

/* 13 when the command's error says EACCES or EPERM, 0 on success, 1 otherwise. */
#define REFUSED_13(cmd) \
	"out=$(" cmd \
	" 2>&1) && exit 0; case \"$out\" in *'Permission denied'*|*'not permitted'*) " \
	"exit 13;; esac; echo \"$out\" >&2; exit 1"

static char *
dir_for_cages(const char *base, const char *name, uid_t owner)
{
	char *d = NULL;

	cr_assert_geq(asprintf(&d, "%s/%s", base, name), 0);
	cr_assert_eq(mkdir(d, 0755), 0, "%s: %s", d, strerror(errno));
	cr_assert_eq(chown(d, owner, owner), 0);
	return d;
}

/*
 * @script in a new cage of @text: refused (13) with the LSM loaded (else @refused), run (0)
 * once it is unloaded (else @run): the mistake the LSM covers shows without it.
 */
static void
refused_then_run(struct clip_ctx *ctx, const char *text, const char *script, const char *refused,
		 const char *run)
{
	struct clip_cage *c = cage_started(ctx, text);

	cr_assert_eq(cage_run(c, script, -1), 13, "%s", refused);
	cr_assert_eq(clip_lsm_unload(ctx, NULL), 0);
	cr_assert_eq(cage_run(c, script, -1), 0, "%s", run);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
}

Test(lsm_cages, an_s0_cage_reads_no_file_of_a_bound_s2_directory)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *high = NULL, *text = NULL;
	struct clip_ctx *ctx;
	int fd;

	ctx = lsm_loaded_or_skip(dir);
	high = dir_for_cages(dir, "high", 0);
	fd = test_file(high, "secret", "s2 data");
	/* Labelled, and so verified, by the library: the LSM learns its level. */
	cr_assert_eq(clip_label_set(ctx, fd, test_level("s2"), 0, NULL), 0);
	close(fd);
	/* The mistake: the s2 directory bound into the s0 cage. */
	cr_assert_geq(asprintf(&text,
			       "[Cage]\nName=lsm-low\nLevel=s0\n" CAPS
			       "[Files]\nBindReadOnly=%s:/high\n",
			       high),
		      0);
	refused_then_run(ctx, text, REFUSED_13("cat /high/secret"),
			 "the s0 cage read an s2 file with the LSM loaded",
			 "without the LSM the mistake shows: the read succeeds");
	clip_ctx_unref(ctx);
}

Test(lsm_cages, an_s2_cage_writes_nothing_into_a_bound_s0_directory)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *low = NULL, *text = NULL;
	const uid_t base = 40u * 65536u;
	struct clip_ctx *ctx;
	int fd;

	ctx = lsm_loaded_or_skip(dir);
	low = dir_for_cages(dir, "low", base);
	fd = open(low, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(clip_label_set(ctx, fd, test_level("s0"), 0, NULL), 0);
	close(fd);
	cr_assert_geq(asprintf(&text,
			       "[Cage]\nName=lsm-high\nLevel=s2\nUidBase=%u\n" CAPS
			       "[Files]\nBind=%s:/low\n",
			       (unsigned)base, low),
		      0);
	refused_then_run(ctx, text, REFUSED_13("echo down > /low/leak"),
			 "the s2 cage wrote into an s0 directory with the LSM loaded",
			 "without the LSM the write down succeeds");
	clip_ctx_unref(ctx);
}

Test(lsm_cages, a_socket_of_another_cage_refuses_the_connection)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *shared = NULL, *ta = NULL, *tb = NULL;
	const uid_t base_a = 41u * 65536u, base_b = 42u * 65536u;
	const char *listen = "exec python3 -c \"import socket,os; s=socket.socket(socket.AF_UNIX); "
			     "s.bind('/shared/s'); os.chmod('/shared/s', 0o777); s.listen(8)\n"
			     "while True: s.accept()[0].close()\"";
	const char *connect =
		"for i in $(seq 50); do [ -S /shared/s ] && break; sleep 0.1; done; " REFUSED_13(
			"python3 -c \"import socket; "
			"socket.socket(socket.AF_UNIX).connect('/shared/s')\"");
	const char *argv[] = { "/bin/sh", "-c", listen, NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv };
	struct clip_cage *a, *b;
	struct clip_ctx *ctx;
	int listener = -1;

	ctx = lsm_loaded_or_skip(dir);
	shared = dir_for_cages(dir, "shared", base_a);
	cr_assert_eq(chmod(shared, 0777), 0);
	/* The mistake: one directory bound into two cages. */
	cr_assert_geq(asprintf(&ta,
			       "[Cage]\nName=lsm-a\nUidBase=%u\n" CAPS "[Files]\nBind=%s:/shared\n",
			       (unsigned)base_a, shared),
		      0);
	cr_assert_geq(asprintf(&tb,
			       "[Cage]\nName=lsm-b\nUidBase=%u\n" CAPS "[Files]\nBind=%s:/shared\n",
			       (unsigned)base_b, shared),
		      0);
	a = cage_started(ctx, ta);
	b = cage_started(ctx, tb);
	cr_assert_eq(clip_cage_spawn(a, &o, &listener, NULL), 0);
	cr_assert_eq(cage_run(b, connect, -1), 13,
		     "cage b connected to cage a's socket with the LSM loaded");
	cr_assert_eq(clip_lsm_unload(ctx, NULL), 0);
	cr_assert_eq(cage_run(b, connect, -1), 0, "without the LSM the connection is made");
	close(listener);
	cr_assert_eq(clip_cage_stop(a, 0, NULL), 0);
	cr_assert_eq(clip_cage_stop(b, 0, NULL), 0);
	clip_cage_unref(a);
	clip_cage_unref(b);
	clip_ctx_unref(ctx);
}

Test(lsm_cages, a_core_process_refuses_a_cage_s_signal)
{
	struct clip_ctx *ctx = lsm_loaded_or_skip(NULL);
	const char *kill0 =
		REFUSED_13("python3 -c \"import signal; signal.pidfd_send_signal(3, 0)\"");
	struct clip_cage *c;
	int pidfd, status;
	pid_t core;

	core = fork();
	cr_assert_geq(core, 0);
	if (core == 0) {
		pause();
		_exit(0);
	}
	/* The mistake: a pidfd of a core process leaked into the cage. */
	pidfd = (int)syscall(SYS_pidfd_open, core, 0);
	cr_assert_geq(pidfd, 0);
	c = cage_started(ctx, "[Cage]\nName=lsm-sig\n" CAPS);
	cr_assert_eq(cage_run(c, kill0, pidfd), 13, "the cage signalled a core process");
	cr_assert_eq(clip_lsm_unload(ctx, NULL), 0);
	status = cage_run(c, kill0, pidfd);
	/* Without the LSM, Landlock's scoping (ABI 6) still refuses, unless switched off. */
	if (clip_cage_get_missing(c) & CLIP_CAGE_MISSING_LANDLOCK_SCOPE)
		cr_assert_eq(status, 0, "without the LSM nor Landlock the signal goes through");
	else
		cr_assert_eq(status, 13, "Landlock's signal scoping refuses it too");
	kill(core, SIGKILL);
	waitpid(core, NULL, 0);
	close(pidfd);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

Test(lsm_cages, a_cage_started_without_the_lsm_says_so)
{
	struct clip_cage_profile *p = NULL;
	struct clip_cage *c = NULL;
	struct clip_error *e = NULL;
	struct clip_ctx *ctx;

	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	/* An empty bpffs of the test's own: nothing loaded. */
	private_bpffs_or_skip();
	ctx = test_ctx(NULL);
	cr_assert_eq(clip_lsm_status(ctx), HAVE_LSM ? 0 : -EOPNOTSUPP);
	cr_assert_eq(clip_cage_profile_parse(&p, "t.cage", "[Cage]\nName=lsm-none\n",
					     strlen("[Cage]\nName=lsm-none\n"), NULL),
		     0);
	cr_assert_eq(clip_cage_new(&c, ctx, p, NULL), 0);
	cr_assert_eq(clip_cage_get_missing(c) & CLIP_CAGE_MISSING_LSM, 0,
		     "missing before it starts");
	cr_assert_eq(clip_cage_start(c, 0, &e), 0, "start: %s", e ? clip_error_get_message(e) : "");
	cr_assert(clip_cage_get_missing(c) & CLIP_CAGE_MISSING_LSM, "0x%x",
		  clip_cage_get_missing(c));
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_cage_profile_unref(p);
	clip_ctx_unref(ctx);
}

/*
 * The library's side where the kernel may refuse the programs: the maps
 * alone, pinned in a bpffs of the test's own (lsm_test_pin_maps()), and
 * what the library writes into them read back.
 */
static struct clip_ctx *
maps_pinned_or_skip(const char *state)
{
	struct clip_ctx *ctx;
	int r;

	if (under_valgrind())
		cr_skip_test("valgrind's bpf() reads attribute bytes libbpf leaves unset");
	private_bpffs_or_skip();
	r = lsm_test_pin_maps();
	cr_assert_eq(r, 0, "%s", strerror(-r));
	ctx = test_ctx(state);
	cr_assert_eq(clip_lsm_status(ctx), 1);
	return ctx;
}

Test(lsm_maps, a_cage_registers_its_init_under_an_id_of_its_own_at_its_level)
{
	struct clip_ctx *ctx = maps_pinned_or_skip(NULL);
	struct clip_level *level = test_level("s2:c3,c700");
	struct lsm_task t = { 0 }, t2 = { 0 };
	struct lsm_level want;
	struct clip_cage *c, *c2;

	c = cage_started(ctx, "[Cage]\nName=lsm-reg\nLevel=s2:c3,c700\n");
	c2 = cage_started(ctx, "[Cage]\nName=lsm-reg2\n");
	cr_assert_eq(lsm_test_task(clip_cage_get_fd(c), &t), 0, "the init is not registered");
	cr_assert_eq(lsm_test_task(clip_cage_get_fd(c2), &t2), 0, "the init is not registered");
	lsm_level_from(&want, level);
	cr_assert_neq(t.cage_id, 0);
	cr_assert_eq(memcmp(&t.level, &want, sizeof(want)), 0, "not the cage's level");
	cr_assert_neq(t2.cage_id, t.cage_id, "two cages, one id");
	lsm_level_from(&want, NULL);
	cr_assert_eq(memcmp(&t2.level, &want, sizeof(want)), 0, "not s0");
	/* A spawn copies the init's entry onto its helper first: it still runs. */
	cr_assert_eq(cage_run(c, "exit 7", -1), 7);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	cr_assert_eq(clip_cage_stop(c2, 0, NULL), 0);
	cr_assert_eq(clip_lsm_unload(ctx, NULL), 0);
	cr_assert_eq(clip_lsm_status(ctx), 0);
	clip_cage_unref(c);
	clip_cage_unref(c2);
	clip_level_unref(level);
	clip_ctx_unref(ctx);
}

/*
 * Whether the LSM is loaded, the label functions ask at most once a second
 * (doc/lsm.md, "Levels on files"), but a load in this process is seen at
 * once: a label written right after the maps are pinned reaches them,
 * though a label was verified a moment before, without them.
 */
Test(lsm_maps, a_label_right_after_a_load_in_this_process_reaches_the_map)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = NULL;
	struct clip_level *level = test_level("s1");
	struct lsm_level got;
	struct clip_ctx *ctx;
	int fd, r;

	if (under_valgrind())
		cr_skip_test("valgrind's bpf() reads attribute bytes libbpf leaves unset");
	cr_assert_geq(asprintf(&state, "%s/state", dir), 0);
	private_bpffs_or_skip();
	ctx = test_ctx(state);
	fd = test_file(dir, "f", "data");
	cr_assert_eq(clip_label_set(ctx, fd, level, 0, NULL), 0);
	cr_assert_eq(clip_label_verify(ctx, fd, 0, NULL), 0);
	r = lsm_test_pin_maps();
	cr_assert_eq(r, 0, "%s", strerror(-r));
	cr_assert_eq(clip_label_set(ctx, fd, level, 0, NULL), 0);
	cr_assert_eq(lsm_test_inode(fd, &got), 0,
		     "a label set at once after the load is not in "
		     "the map");
	close(fd);
	clip_level_unref(level);
	clip_ctx_unref(ctx);
}

Test(lsm_maps, only_a_label_written_or_verified_reaches_the_map)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = NULL;
	struct clip_level *level = test_level("s1:c5");
	struct lsm_level want, got;
	struct clip_ctx *ctx;
	int fd, other;

	cr_assert_geq(asprintf(&state, "%s/state", dir), 0);
	ctx = maps_pinned_or_skip(state);
	fd = test_file(dir, "f", "data");
	other = test_file(dir, "g", "data");
	lsm_level_from(&want, level);
	cr_assert_eq(lsm_test_inode(fd, &got), -ENOENT, "unlabelled, yet in the map");
	cr_assert_eq(clip_label_set(ctx, fd, level, 0, NULL), 0);
	cr_assert_eq(lsm_test_inode(fd, &got), 0, "labelled, not in the map");
	cr_assert_eq(memcmp(&got, &want, sizeof(want)), 0);
	cr_assert_eq(lsm_test_inode(other, &got), -ENOENT, "another inode in the map");
	/* Forgotten, then verified again: back. */
	cr_assert_eq(lsm_inode_forget(fd), 0);
	cr_assert_eq(clip_label_verify(ctx, fd, 0, NULL), 0);
	cr_assert_eq(lsm_test_inode(fd, &got), 0, "verified, not in the map");
	/* A label that does not verify teaches the kernel nothing. */
	cr_assert_eq(fsetxattr(other, "trusted.clip.label", "s15 forged", 10, 0), 0, "%s",
		     strerror(errno));
	cr_assert_lt(clip_label_verify(ctx, other, 0, NULL), 0);
	cr_assert_eq(lsm_test_inode(other, &got), -ENOENT, "a forged label reached the map");
	cr_assert_eq(clip_label_remove(ctx, fd, 0, NULL), 0);
	cr_assert_eq(lsm_test_inode(fd, &got), -ENOENT, "removed, still in the map");
	close(fd);
	close(other);
	cr_assert_eq(clip_lsm_unload(ctx, NULL), 0);
	clip_level_unref(level);
	clip_ctx_unref(ctx);
}
