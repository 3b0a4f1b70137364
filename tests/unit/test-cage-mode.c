/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Root or rootless, decided from what the process has and not from its
 * uid: uid 0 in a namespace that maps one id (a rootless CI container)
 * starts cages rootless, and a cage forced into root mode there is refused
 * with its ids named. Bind sources are opened with the caller's
 * credentials: a source in a directory that only the caller can open
 * works, and one that cannot be opened is named.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <clip/cage.h>

#include "helpers.h"

static bool
under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload");
}

static void
skip_without_cages(void)
{
	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	if (!test_is_root() && unshare(0) < 0)
		cr_skip_test("cannot test namespaces here");
}

/* A cage of @text with @mode (CLIP_CAGE_MODE_*), not started. */
static struct clip_cage *
cage_new(struct clip_ctx *ctx, int mode, const char *text)
{
	struct clip_cage_profile *p = NULL;
	struct clip_error *e = NULL;
	struct clip_cage *c = NULL;

	cr_assert_eq(clip_cage_profile_parse(&p, "t.cage", text, strlen(text), &e), 0, "%s",
		     clip_error_get_message(e));
	cr_assert_eq(clip_ctx_set_cage_mode(ctx, mode), 0);
	cr_assert_eq(clip_cage_new(&c, ctx, p, NULL), 0);
	clip_cage_profile_unref(p);
	return c;
}

/* Run @script in @c; its exit status. */
static int
run_in(struct clip_cage *c, const char *script)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv };
	struct clip_error *e = NULL;
	int pidfd = -1, status = -1;

	cr_assert_eq(clip_cage_spawn(c, &o, &pidfd, &e), 0, "spawn: %s", clip_error_get_message(e));
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	close(pidfd);
	return status;
}

static bool
initial_user_namespace(void)
{
	char buf[128] = "";
	int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		(void)!read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	return strcmp(buf, "         0          0 4294967295\n") == 0;
}

Test(cage_mode, decided_from_what_the_process_has)
{
	struct clip_ctx *ctx = test_ctx("/nonexistent");
	int mode = clip_ctx_get_cage_mode(ctx);

	if (test_is_root() && initial_user_namespace())
		cr_assert_eq(mode, CLIP_CAGE_MODE_ROOT,
			     "root on the host makes cages in root mode");
	else
		cr_assert_eq(mode, CLIP_CAGE_MODE_ROOTLESS, "uid %u, %s user namespace: rootless",
			     (unsigned)geteuid(),
			     initial_user_namespace() ? "the initial" : "another");
	/* Forced either way, then back to the decision. */
	cr_assert_eq(clip_ctx_set_cage_mode(ctx, CLIP_CAGE_MODE_ROOTLESS), 0);
	cr_assert_eq(clip_ctx_get_cage_mode(ctx), CLIP_CAGE_MODE_ROOTLESS);
	cr_assert_eq(clip_ctx_set_cage_mode(ctx, CLIP_CAGE_MODE_ROOT), 0);
	cr_assert_eq(clip_ctx_get_cage_mode(ctx), CLIP_CAGE_MODE_ROOT);
	cr_assert_eq(clip_ctx_set_cage_mode(ctx, CLIP_CAGE_MODE_AUTO), 0);
	cr_assert_eq(clip_ctx_get_cage_mode(ctx), mode);
	assert_errno(clip_ctx_set_cage_mode(ctx, 3), -EINVAL);
	assert_errno(clip_ctx_set_cage_mode(ctx, -1), -EINVAL);
	assert_errno(clip_ctx_set_cage_mode(NULL, CLIP_CAGE_MODE_AUTO), -EINVAL);
	assert_errno(clip_ctx_get_cage_mode(NULL), -EINVAL);
	cr_assert_eq(clip_ctx_get_cage_mode(ctx), mode, "a refused mode changes nothing");
	clip_ctx_unref(ctx);
}

Test(cage_mode, forced_rootless_maps_the_callers_ids_alone)
{
	struct clip_ctx *ctx;
	struct clip_cage *c;

	skip_without_cages();
	ctx = test_ctx("/nonexistent");
	c = cage_new(ctx, CLIP_CAGE_MODE_ROOTLESS, "[Cage]\nName=a\n");
	cr_assert_eq(clip_cage_start(c, 0, NULL), 0);
	cr_assert_eq(run_in(c, "[ \"$(wc -l </proc/self/uid_map)\" = 1 ] && "
			       "[ \"$(awk '{ print $3 }' /proc/self/uid_map)\" = 1 ]"),
		     0, "one id mapped");
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/*
 * In a child: a user namespace that maps our uid and gid to 0, one id
 * each, as `unshare -Urm` and rootless containers make. Returns 0 or the
 * number of the step that failed.
 */
static int
enter_one_id_container(void)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int fd;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return 1;
	fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "deny", 4) != 4)
		return 2;
	close(fd);
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, map, strlen(map)) != (ssize_t)strlen(map))
		return 3;
	close(fd);
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	fd = open("/proc/self/gid_map", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, map, strlen(map)) != (ssize_t)strlen(map))
		return 4;
	close(fd);
	return geteuid() == 0 ? 0 : 5;
}

/* The container's checks, in a child: 0, or the number of the one that failed. */
static int
in_container(void)
{
	struct clip_cage_profile *p = NULL;
	struct clip_error *e = NULL;
	struct clip_cage *c = NULL;
	struct clip_ctx *ctx = NULL;
	const char *argv[] = { "/bin/sh", "-c", "[ \"$(id -u)\" = 0 ] && exit 42", NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv };
	int r = enter_one_id_container(), pidfd = -1, status = -1;
	static const char text[] = "[Cage]\nName=ctr\nUidBase=1048576\n";

	if (r)
		return 10 + r;
	if (clip_ctx_new(&ctx) < 0)
		return 20;
	if (clip_ctx_get_cage_mode(ctx) != CLIP_CAGE_MODE_ROOTLESS)
		return 21; /* uid 0 with every capability, one id: rootless */
	if (clip_cage_profile_parse(&p, "t.cage", text, strlen(text), NULL) < 0 ||
	    clip_cage_new(&c, ctx, p, NULL) < 0)
		return 22;
	if (clip_cage_start(c, 0, &e) < 0) {
		fprintf(stderr, "start: %s\n", clip_error_get_message(e));
		return 23;
	}
	if (clip_cage_spawn(c, &o, &pidfd, NULL) < 0 ||
	    clip_cage_wait_process(c, pidfd, &status) < 0 || status != 42)
		return 24;
	if (clip_cage_stop(c, 0, NULL) < 0)
		return 25;
	clip_cage_unref(c);

	/* Root mode forced: refused, the cage's ids named. */
	clip_ctx_set_cage_mode(ctx, CLIP_CAGE_MODE_ROOT);
	if (clip_cage_new(&c, ctx, p, NULL) < 0)
		return 30;
	if (clip_cage_start(c, 0, &e) != -EPERM)
		return 31;
	if (!strstr(clip_error_get_message(e), "1048576-1114111") ||
	    !strstr(clip_error_get_message(e), "not all mapped"))
		return 32;
	if (clip_cage_get_state(c) != CLIP_CAGE_NEW)
		return 33;
	clip_error_free(e);
	clip_cage_unref(c);
	clip_cage_profile_unref(p);
	clip_ctx_unref(ctx);
	return 0;
}

Test(cage_mode, uid_0_of_a_one_id_container_starts_rootless_cages)
{
	int status;
	pid_t pid;

	skip_without_cages();
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(in_container());
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	if (WEXITSTATUS(status) == 11)
		cr_skip_test("no user namespace for uid %u here", (unsigned)geteuid());
	cr_assert_eq(WEXITSTATUS(status), 0, "check %d failed (in_container())",
		     WEXITSTATUS(status));
}

/* A profile binding @source at /mnt. */
static struct clip_cage *
cage_binding(struct clip_ctx *ctx, int mode, const char *source)
{
	char text[4096 + 64];

	snprintf(text, sizeof(text), "[Cage]\nName=b\n[Files]\nBindReadOnly=%s:/mnt\n", source);
	return cage_new(ctx, mode, text);
}

static void
bind_from_a_private_directory(int mode, uid_t owner)
{
	struct clip_ctx *ctx;
	struct clip_cage *c;
	_cleanup_free_ char *dir = NULL;
	char path[4096];
	struct clip_error *e = NULL;

	skip_without_cages();
	dir = test_tmpdir("tmpfs");
	snprintf(path, sizeof(path), "%s/private", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/private/src", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	close(test_file(path, "f", "secret\n"));
	snprintf(path, sizeof(path), "%s/private", dir);
	if (owner != geteuid())
		cr_assert_eq(chown(path, owner, owner), 0);
	ctx = test_ctx("/nonexistent");
	snprintf(path, sizeof(path), "%s/private/src", dir);
	c = cage_binding(ctx, mode, path);
	cr_assert_eq(clip_cage_start(c, 0, &e), 0, "start: %s", clip_error_get_message(e));
	cr_assert_eq(run_in(c, "grep -qx secret /mnt/f"), 0, "the bound file reads in the cage");
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

Test(cage_sources, a_source_under_the_callers_0700_directory)
{
	bind_from_a_private_directory(CLIP_CAGE_MODE_AUTO, geteuid());
}

Test(cage_sources, root_mode_opens_a_source_only_root_can_reach)
{
	if (!test_is_root() || !initial_user_namespace())
		cr_skip_test("root mode on the host is what is tested");
	/* Owned by another uid, mode 0700: only CAP_DAC_OVERRIDE, the launcher's, gets in. */
	bind_from_a_private_directory(CLIP_CAGE_MODE_ROOT, 4242);
}

static void
missing_source_named(int mode)
{
	struct clip_ctx *ctx;
	struct clip_cage *c;
	struct clip_error *e = NULL;

	skip_without_cages();
	ctx = test_ctx("/nonexistent");
	c = cage_binding(ctx, mode, "/nonexistent/clip-test-source");
	assert_errno(clip_cage_start(c, 0, &e), -EIO);
	cr_assert(
		strstr(clip_error_get_message(e),
		       "b: cannot open the bind source /nonexistent/clip-test-source: No such file "
		       "or directory"),
		"%s", clip_error_get_message(e));
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_NEW);
	clip_error_free(e);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

Test(cage_sources, a_missing_source_is_named)
{
	missing_source_named(CLIP_CAGE_MODE_AUTO);
}

Test(cage_sources, a_missing_source_is_named_by_a_rootless_init_too)
{
	missing_source_named(CLIP_CAGE_MODE_ROOTLESS);
}

/*
 * A start that fails in the init says why, every time (issue 14, finding
 * 12): the init writes its report and exits, and the launcher, whose own
 * sends then fail (EPIPE) or whose first read meets ECONNRESET (the init
 * died with our message unread), read that report all the same. It was
 * lost in 2-3% of starts. @text: a profile whose set-up fails in the init;
 * @want: what each message must hold.
 */
static void
failing_start_says_why(int mode, const char *text, const char *want)
{
	struct clip_ctx *ctx;
	struct clip_cage *c;
	int wrong = 0;
	char first[1024] = "";

	skip_without_cages();
	ctx = test_ctx("/nonexistent");
	c = cage_new(ctx, mode, text);
	for (int i = 0; i < 300; i++) {
		struct clip_error *e = NULL;

		assert_errno(clip_cage_start(c, 0, &e), -EIO);
		if (!strstr(clip_error_get_message(e), want) && wrong++ == 0)
			snprintf(first, sizeof(first), "start %d: %s", i,
				 clip_error_get_message(e));
		clip_error_free(e);
		cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_NEW);
	}
	cr_assert_eq(wrong, 0, "%d of 300 failed starts did not say '%s'; the first: %s", wrong,
		     want, first);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

Test(cage_sources, a_missing_source_is_named_by_every_rootless_start)
{
	failing_start_says_why(CLIP_CAGE_MODE_ROOTLESS,
			       "[Cage]\nName=b\n[Files]\nBindReadOnly=/nonexistent/clip-src:/mnt\n",
			       "cannot open the bind source /nonexistent/clip-src: No such file");
}

Test(cage_sources, an_init_that_fails_is_heard_by_every_root_mode_start)
{
	_cleanup_free_ char *dir = NULL;
	char text[4200];

	if (!test_is_root() || !initial_user_namespace())
		cr_skip_test("root mode on the host is what is tested");
	/* An empty Root=: no /proc to mount on, and it is read-only. */
	dir = test_tmpdir("tmpfs");
	snprintf(text, sizeof(text), "[Cage]\nName=r\nRoot=%s\n", dir);
	failing_start_says_why(CLIP_CAGE_MODE_ROOT, text, "r: failed while mounting /proc");
}

/*
 * In a child with fd 0 closed: a cage started and registered, attached
 * again (as `clipctl cage exec` does), and a process spawned with fds 0, 1,
 * 2 through each. 0 when both spawns are refused, saying fd 0 is closed; 1
 * when one ran, with whatever the library had opened at 0 as its stdin
 * (the attached cage's pidfd of its init, before issue 14); 2-3 for the
 * other failures.
 */
static int
spawn_with_stdin_closed(int mode, const char *state)
{
	static const int fds[] = { 0, 1, 2 };
	const char *argv[] = { "/bin/true", NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv, .fds = fds, .n_fds = 3 };
	struct clip_cage_profile *p = NULL;
	struct clip_cage *c = NULL, *a = NULL;
	struct clip_ctx *ctx = NULL;
	int r = 0;

	close(0);
	if (clip_ctx_new(&ctx) < 0 || clip_ctx_set_cage_mode(ctx, mode) < 0 ||
	    clip_ctx_set_state_dir(ctx, state) < 0 ||
	    clip_cage_profile_parse(&p, "t.cage", "[Cage]\nName=s\n", 14, NULL) < 0 ||
	    clip_cage_new(&c, ctx, p, NULL) < 0 ||
	    clip_cage_start(c, CLIP_CAGE_START_REGISTER, NULL) < 0 ||
	    clip_cage_attach(&a, ctx, "s", NULL) < 0)
		return 2;
	for (int i = 0; i < 2 && r == 0; i++) {
		struct clip_error *e = NULL;
		int pidfd = -1, k = clip_cage_spawn(i ? a : c, &o, &pidfd, &e);

		if (k == 0)
			r = 1;
		else if (k != -EBADF ||
			 !strstr(clip_error_get_message(e),
				 "fd 0 (stdin), is 0, which is closed in the caller"))
			r = 3;
		clip_error_free(e);
	}
	clip_cage_stop(c, 0, NULL);
	clip_cage_unref(a);
	clip_cage_unref(c);
	clip_cage_profile_unref(p);
	clip_ctx_unref(ctx);
	return r;
}

static void
stdin_closed(int mode)
{
	_cleanup_free_ char *state = NULL;
	int status;
	pid_t pid;

	skip_without_cages();
	state = test_tmpdir("tmpfs");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(spawn_with_stdin_closed(mode, state));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	cr_assert_neq(WEXITSTATUS(status), 1,
		      "a process was spawned with the library's fd 0 as its stdin");
	cr_assert_eq(WEXITSTATUS(status), 0, "step %d failed (spawn_with_stdin_closed())",
		     WEXITSTATUS(status));
}

Test(cage_spawn, a_closed_stdin_is_said_and_no_fd_of_the_library_takes_its_place)
{
	stdin_closed(CLIP_CAGE_MODE_AUTO);
}

Test(cage_spawn, a_closed_stdin_is_said_rootless_too)
{
	stdin_closed(CLIP_CAGE_MODE_ROOTLESS);
}
