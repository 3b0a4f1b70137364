/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which cage is this? Two registered cages (low at s0, high at s2), a
 * process in each and one in the core, asked by pidfd, by pid and by a
 * socket's peer; a cage's process that ends and whose pid a core process
 * takes over is not taken for the cage.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <clip/clip.h>

#include "base/util.h"
#include "cage/cage-internal.h"
#include "helpers.h"

struct world {
	char *dir;
	struct clip_ctx *ctx;
	struct clip_cage *cage[2];
};

static bool
under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload");
}

static void
world_setup(struct world *w)
{
	static const char *const names[] = { "low", "high" }, *const levels[] = { "s0", "s2" };

	if (!test_is_root() && access("/proc/self/ns/user", F_OK) != 0)
		cr_skip_test("no user namespaces");
	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	memset(w, 0, sizeof(*w));
	w->dir = test_tmpdir("tmpfs");
	cr_assert_eq(chmod(w->dir, 0755), 0);
	w->ctx = test_ctx(w->dir);
	for (int i = 0; i < 2; i++) {
		struct clip_cage_profile *p = NULL;
		struct clip_error *e = NULL;
		char text[1024];

		/* The socket directory, bound into each cage at /sock. */
		snprintf(text, sizeof(text), "[Cage]\nName=%s\nLevel=%s\n[Files]\nBind=%s:/sock\n",
			 names[i], levels[i], w->dir);
		cr_assert_eq(clip_cage_profile_parse(&p, names[i], text, strlen(text), &e), 0, "%s",
			     e ? clip_error_get_message(e) : "");
		cr_assert_eq(clip_cage_new(&w->cage[i], w->ctx, p, NULL), 0);
		clip_cage_profile_unref(p);
		cr_assert_eq(clip_cage_start(w->cage[i], CLIP_CAGE_START_REGISTER, &e), 0,
			     "start %s: %s", names[i], clip_error_get_message(e));
	}
}

static void
world_teardown(struct world *w)
{
	for (int i = 0; i < 2; i++) {
		clip_cage_stop(w->cage[i], 0, NULL);
		w->cage[i] = clip_cage_unref(w->cage[i]);
	}
	w->ctx = clip_ctx_unref(w->ctx);
	free(w->dir);
	w->dir = NULL;
}

/* Registered cages outlive their starter: a failed assertion must not leave them. */
static struct world W;

static void
fini(void)
{
	world_teardown(&W);
}

TestSuite(cage_identify, .fini = fini);

/* A process running @script in cage @i; its pidfd. */
static int
spawn(struct world *w, int i, const char *const *argv)
{
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = (const char **)argv };
	struct clip_error *e = NULL;
	int pidfd = -1;

	cr_assert_eq(clip_cage_spawn(w->cage[i], &o, &pidfd, &e), 0, "spawn: %s",
		     clip_error_get_message(e));
	return pidfd;
}

static const char *const sleeper[] = { "/bin/sleep", "1000", NULL };

/* The process of @pidfd is in cage @name at sensitivity @s. */
static void
assert_in_cage(struct world *w, int pidfd, const char *name, int s)
{
	struct clip_level *level = NULL;
	struct clip_error *e = NULL;
	unsigned flags = 99;
	char *got = NULL;

	cr_assert_eq(clip_cage_identify_pidfd(w->ctx, pidfd, &got, &level, &flags, &e), 0, "%s",
		     e ? clip_error_get_message(e) : "");
	cr_assert_str_eq(got, name);
	cr_assert_not_null(level);
	cr_assert_eq(clip_level_get_sensitivity(level), s);
	cr_assert_eq(flags, 0);
	free(got);
	clip_level_unref(level);
}

static void
assert_core_pid(struct world *w, pid_t pid)
{
	struct clip_level *level = (struct clip_level *)1;
	struct clip_error *e = NULL;
	char *got = (char *)1;
	unsigned flags = 0;

	cr_assert_eq(clip_cage_identify_pid(w->ctx, pid, &got, &level, &flags, &e), 0, "%s",
		     e ? clip_error_get_message(e) : "");
	cr_assert_null(got);
	cr_assert_null(level);
	cr_assert_eq(flags, CLIP_CAGE_IDENTITY_CORE);
}

static pid_t
core_child(void)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	return pid;
}

static void
reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(cage_identify, each_cages_process_and_a_core_process_are_answered)
{
	int low, high, init_fd;
	pid_t core;
	char *got = NULL;

	world_setup(&W);
	low = spawn(&W, 0, sleeper);
	high = spawn(&W, 1, sleeper);
	assert_in_cage(&W, low, "low", 0);
	assert_in_cage(&W, high, "high", 2);
	init_fd = clip_cage_get_fd(W.cage[1]);
	assert_in_cage(&W, init_fd, "high", 2);
	cr_assert_eq(clip_cage_identify_pid(W.ctx, cage_pidfd_pid(low), &got, NULL, NULL, NULL), 0);
	cr_assert_str_eq(got, "low", "by pid too");
	free(got);
	core = core_child();
	assert_core_pid(&W, core);
	assert_core_pid(&W, getpid());
	reap(core);
	close(low), close(high);
}

Test(cage_identify, refusals)
{
	struct clip_error *e = NULL;
	int fd, pair[2];

	world_setup(&W);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cr_assert_eq(clip_cage_identify_pidfd(W.ctx, fd, NULL, NULL, NULL, &e), -EBADF);
	cr_assert(strstr(clip_error_get_message(e), "is not a pidfd"), "%s",
		  clip_error_get_message(e));
	clip_error_free(e);
	e = NULL;
	cr_assert_eq(clip_cage_identify_socket(W.ctx, fd, NULL, NULL, NULL, NULL), -EBADF,
		     "no socket");
	close(fd);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
	/* A socket pair's peer is its maker: the core. */
	cr_assert_eq(clip_cage_identify_socket(W.ctx, pair[0], NULL, NULL, NULL, NULL), 0);
	close(pair[0]), close(pair[1]);
	assert_errno(clip_cage_identify_pid(W.ctx, 0, NULL, NULL, NULL, NULL), -EINVAL);
	assert_errno(clip_cage_identify_pidfd(W.ctx, -1, NULL, NULL, NULL, NULL), -EBADF);
	assert_errno(clip_cage_identify_pidfd(NULL, 0, NULL, NULL, NULL, NULL), -EINVAL);
}

/* clone3() with set_tid: a core process given pid @pid (root only); 0 in the child. */
static pid_t
clone_with_pid(pid_t pid)
{
	pid_t tid = pid;
	struct clone_args ca = {
		.exit_signal = SIGCHLD,
		.set_tid = (uint64_t)(uintptr_t)&tid,
		.set_tid_size = 1,
	};

	return (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
}

/*
 * Whether this process may choose a child's pid: the pid in use gives
 * EEXIST when it may, EPERM when not (checked first), and no child.
 */
static bool
may_take_a_pid(void)
{
	return clone_with_pid(getpid()) < 0 && errno == EEXIST;
}

Test(cage_identify, a_reused_pid_is_not_taken_for_the_cage)
{
	int old, status;
	pid_t pid, taker;
	struct clip_error *e = NULL;

	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	if (!may_take_a_pid())
		cr_skip_test("not root: no clone3 set_tid to take a pid over");
	world_setup(&W);
	old = spawn(&W, 0, sleeper);
	pid = cage_pidfd_pid(old);
	assert_in_cage(&W, old, "low", 0);
	/* The cage's process ends, and a core process takes its pid. */
	cr_assert_eq(cage_pidfd_signal(old, SIGKILL), 0);
	cr_assert_eq(clip_cage_wait_process(W.cage[0], old, &status), 0);
	taker = clone_with_pid(pid);
	if (taker == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	cr_assert_eq(taker, pid, "the pid was taken over: %m");
	/* Asked by the pidfd of the process that ended: gone, not the cage, not the core. */
	cr_assert_eq(clip_cage_identify_pidfd(W.ctx, old, NULL, NULL, NULL, &e), -ESRCH);
	cr_assert(strstr(clip_error_get_message(e), "has ended"), "%s", clip_error_get_message(e));
	clip_error_free(e);
	/* Asked by the pid: the process that holds it now, in the core. */
	assert_core_pid(&W, pid);
	reap(taker);
	close(old);
}

/* A client in cage high: python3, connecting to /sock/s, the test's W.dir/s. */
static const char *const client[] = {
	"/usr/bin/python3",
	"-c",
	"import socket, time\n"
	"s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
	"s.connect('/sock/s')\n"
	"time.sleep(1000)\n",
	NULL,
};

/* A socket listening at W.dir/s, and the client connected to it: the accepted connection. */
static int
connect_from_high(int *ret_lfd, int *ret_pidfd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd, conn;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", W.dir);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(chmod(sa.sun_path, 0777), 0);
	cr_assert_eq(listen(lfd, 4), 0);
	*ret_pidfd = spawn(&W, 1, client);
	conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(conn, 0);
	*ret_lfd = lfd;
	return conn;
}

Test(cage_identify, a_socket_peer_in_a_cage_is_answered)
{
	struct clip_level *level = NULL;
	int lfd, conn, pidfd, status;
	char *got = NULL;

	if (access(client[0], X_OK) != 0)
		cr_skip_test("no python3 to connect from the cage");
	world_setup(&W);
	conn = connect_from_high(&lfd, &pidfd);
	cr_assert_eq(clip_cage_identify_socket(W.ctx, conn, &got, &level, NULL, NULL), 0);
	cr_assert_str_eq(got, "high");
	cr_assert_eq(clip_level_get_sensitivity(level), 2);
	free(got);
	clip_level_unref(level);
	/* The peer ends: its socket no longer says who it was. */
	cr_assert_eq(cage_pidfd_signal(pidfd, SIGKILL), 0);
	cr_assert_eq(clip_cage_wait_process(W.cage[1], pidfd, &status), 0);
	assert_errno(clip_cage_identify_socket(W.ctx, conn, NULL, NULL, NULL, NULL), -ESRCH);
	close(conn), close(lfd), close(pidfd);
}

/* A cage's client connects, ends, and a core process takes its pid over. */
Test(cage_identify, a_socket_peer_whose_pid_is_reused_is_not_answered_for)
{
	struct clip_error *e = NULL;
	int lfd, conn, pidfd, status;
	pid_t pid, taker;
	char *got = NULL;

	if (access(client[0], X_OK) != 0)
		cr_skip_test("no python3 to connect from the cage");
	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	if (!may_take_a_pid())
		cr_skip_test("not root: no clone3 set_tid to take a pid over");
	world_setup(&W);
	conn = connect_from_high(&lfd, &pidfd);
	pid = cage_pidfd_pid(pidfd);
	cr_assert_eq(clip_cage_identify_socket(W.ctx, conn, &got, NULL, NULL, NULL), 0);
	cr_assert_str_eq(got, "high");
	free(got);
	cr_assert_eq(cage_pidfd_signal(pidfd, SIGKILL), 0);
	cr_assert_eq(clip_cage_wait_process(W.cage[1], pidfd, &status), 0);
	taker = clone_with_pid(pid);
	if (taker == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	cr_assert_eq(taker, pid, "the pid was taken over: %m");
	/* The client that connected is gone: the core process that has its pid is not it. */
	cr_assert_eq(clip_cage_identify_socket(W.ctx, conn, NULL, NULL, NULL, &e), -ESRCH,
		     "the socket's peer is answered for by whoever holds its pid now");
	clip_error_free(e);
	reap(taker);
	close(conn), close(lfd), close(pidfd);
}
