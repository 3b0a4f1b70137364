/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The content filter of a transfer rule runs in a cage of its own
 * (deliver_filter(), doc/transfer.md "Content filters"). Each test here
 * gives it a filter that tries one way out and checks, from the host,
 * that the way was closed: each would fail if the filter ran as a plain
 * child process, as it did before.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <clip/clip.h>

#include "helpers.h"
#include "transfer/transfer-internal.h"

/* valgrind 3.19 (Debian 12) answers ENOSYS to open_tree, pidfd_send_signal, landlock. */
static bool
under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload");
}

struct fixture {
	char *dir; /* scripts and markers, 01777: only the cage keeps the filter out */
	int inbox;
	struct clip_ctx *ctx;
	struct delivery d;
};

static void
setup(struct fixture *f, const char *content)
{
	char path[600];
	int src;

	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	if (!test_is_root() && access("/proc/self/ns/user", F_OK) < 0)
		cr_skip_test("no user namespaces");
	f->dir = test_tmpdir("tmpfs");
	/* Sticky, as /tmp: a cage refuses a bind source in a directory anyone may change. */
	cr_assert_eq(chmod(f->dir, 01777), 0);
	snprintf(path, sizeof(path), "%s/inbox", f->dir);
	cr_assert_eq(mkdir(path, 0777), 0);
	cr_assert_eq(chmod(path, 0777), 0);
	f->inbox = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(f->inbox, 0);
	f->ctx = test_ctx("/nonexistent");
	src = test_file(f->dir, "source", content);
	cr_assert_eq(deliver_receive(f->inbox, src, 1 << 20, NULL, "", &f->d, NULL), 0);
	close(src);
}

static void
teardown(struct fixture *f)
{
	deliver_abort(&f->d);
	close(f->inbox);
	clip_ctx_unref(f->ctx);
	free(f->dir);
}

/* A filter script at DIR/NAME, mode 0755. */
static char *
script(struct fixture *f, const char *name, const char *text)
{
	char *path = NULL;
	FILE *s;

	cr_assert_gt(asprintf(&path, "%s/%s", f->dir, name), 0);
	s = fopen(path, "we");
	cr_assert_not_null(s);
	fputs(text, s);
	cr_assert_eq(fclose(s), 0);
	cr_assert_eq(chmod(path, 0755), 0);
	return path;
}

/*
 * Skips when this host cannot bound a rootless cage (the filter is then
 * never run: fails_closed_when_the_cage_cannot_be_bounded checks that).
 */
static void
skip_if_unbounded(int r, struct clip_error *e)
{
	if (r == -EIO && strstr(clip_error_get_message(e), "cannot bound"))
		cr_skip_test("this host cannot bound the memory and tasks of a rootless cage");
}

/* Run @program; when it is refused, the message must hold @want. */
static int
run(struct fixture *f, const char *program, const struct filter_limits *lim, const char *want)
{
	static const struct filter_limits defaults = FILTER_LIMITS_DEFAULT;
	struct clip_error *e = NULL;
	int r = deliver_filter_with(f->ctx, &f->d, program, lim ? lim : &defaults, &e);

	skip_if_unbounded(r, e);
	if (want)
		cr_assert(e && strstr(clip_error_get_message(e), want), "'%s' does not say '%s'",
			  e ? clip_error_get_message(e) : "(no error)", want);
	else
		cr_assert_eq(r, 0, "%s", e ? clip_error_get_message(e) : "");
	clip_error_free(e);
	return r;
}

static bool
exists(const char *dir, const char *name)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static void
assert_content(struct fixture *f, const char *want)
{
	char buf[256] = { 0 };
	ssize_t n = pread(f->d.fd, buf, sizeof(buf) - 1, 0);

	cr_assert_eq(n, (ssize_t)strlen(want));
	cr_assert_str_eq(buf, want, "the delivered content is untouched");
}

Test(filter, passes_what_it_reads_on_stdin)
{
	struct fixture f;
	char *p;

	setup(&f, "clean\n");
	p = script(&f, "scan", "#!/bin/sh\ngrep -qx clean || { echo \"not clean\"; exit 1; }\n");
	run(&f, p, NULL, NULL);
	assert_content(&f, "clean\n");
	free(p);
	teardown(&f);
}

Test(filter, rejects_with_its_exit_status_and_first_line)
{
	struct fixture f;
	char *p;

	setup(&f, "X5O EICAR test\n");
	p = script(&f, "scan",
		   "#!/bin/sh\ngrep -q EICAR && { printf 'EICAR \\033[31mfound\\n'; exit 1; }\n");
	assert_errno(run(&f, p, NULL, "rejected the document (exit 1): EICAR ?[31mfound"), -EPERM);
	free(p);
	teardown(&f);
}

Test(filter, its_output_is_bounded_and_does_not_block_it)
{
	struct fixture f;
	struct clip_error *e = NULL;
	static const struct filter_limits lim = { .timeout_ms = 20000,
						  .memory_max = 64 << 20,
						  .tasks_max = 16 };
	char *p;
	int r;

	setup(&f, "x");
	/* 1 MiB on one line, far over a pipe's buffer: read and dropped as it comes. */
	p = script(&f, "chatty", "#!/bin/sh\nhead -c 1048576 /dev/zero | tr '\\0' A\nexit 4\n");
	r = deliver_filter_with(f.ctx, &f.d, p, &lim, &e);
	skip_if_unbounded(r, e);
	assert_errno(r, -EPERM);
	cr_assert(strstr(clip_error_get_message(e), "(exit 4): AAAA"), "%s",
		  clip_error_get_message(e));
	cr_assert_lt(strlen(clip_error_get_message(e)), strlen(p) + 250, "%s",
		     clip_error_get_message(e));
	clip_error_free(e);
	free(p);
	teardown(&f);
}

Test(filter, its_stdin_is_read_only)
{
	struct fixture f;
	char *p;

	setup(&f, "original");
	p = script(
		&f, "tamper",
		"#!/bin/sh\n"
		"exec 2>/dev/null\n"
		"printf tampered >&0 2>/dev/null && { echo 'wrote through stdin'; exit 0; }\n"
		"printf tampered 1<>/proc/self/fd/0 2>/dev/null && { echo 'reopened stdin'; exit "
		"0; }\n"
		"printf tampered 1<>/dev/stdin 2>/dev/null && { echo 'reopened /dev/stdin'; exit "
		"0; }\n"
		"echo 'stdin is read-only'; exit 3\n");
	assert_errno(run(&f, p, NULL, "(exit 3): stdin is read-only"), -EPERM);
	assert_content(&f, "original");
	free(p);
	teardown(&f);
}

Test(filter, cannot_write_outside_its_cage)
{
	struct fixture f;
	char *p, *text = NULL, tmp_marker[128];

	setup(&f, "x");
	snprintf(tmp_marker, sizeof(tmp_marker), "clip-filter-escape-%d", (int)getpid());
	cr_assert_gt(asprintf(&text,
			      "#!/bin/sh\n"
			      "echo x >/tmp/%s\n"
			      "echo x >%s/inbox/escaped\n"
			      "echo x >%s/escaped\n"
			      "echo x >>\"$0\"\n"
			      "exit 0\n",
			      tmp_marker, f.dir, f.dir),
		     0);
	p = script(&f, "writer", text);
	run(&f, p, NULL, NULL);
	cr_assert_not(exists("/tmp", tmp_marker), "the filter wrote the host's /tmp");
	cr_assert_not(exists(f.dir, "inbox/escaped"), "the filter wrote into the inbox");
	cr_assert_not(exists(f.dir, "escaped"), "the filter wrote next to its program");
	{
		struct stat st;

		cr_assert_eq(stat(p, &st), 0);
		cr_assert_eq(st.st_size, (off_t)strlen(text), "the filter changed its program");
	}
	snprintf(text, strlen(text), "/tmp/%s", tmp_marker);
	unlink(text);
	free(text);
	free(p);
	teardown(&f);
}

Test(filter, has_no_network)
{
	struct fixture f;
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	char *p, *text = NULL;
	int l;

	setup(&f, "x");
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cr_assert_geq(l, 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(l, 8), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&sa, &len), 0);
	cr_assert_gt(asprintf(&text,
			      "#!/bin/bash\n"
			      "exec 2>/dev/null\n"
			      "exec 3<>/dev/tcp/127.0.0.1/%d && { echo connected; exit 0; }\n"
			      "echo 'no network'; exit 3\n",
			      ntohs(sa.sin_port)),
		     0);
	p = script(&f, "phone-home", text);
	assert_errno(run(&f, p, NULL, "(exit 3): no network"), -EPERM);
	cr_assert_lt(accept4(l, NULL, NULL, SOCK_CLOEXEC), 0, "the host's listener was reached");
	cr_assert_eq(errno, EAGAIN);
	close(l);
	free(text);
	free(p);
	teardown(&f);
}

Test(filter, sees_only_its_own_processes)
{
	struct fixture f;
	char *p, *text = NULL;

	setup(&f, "x");
	cr_assert_gt(
		asprintf(&text,
			 "#!/bin/sh\n"
			 "grep -q test-filter /proc/%d/cmdline 2>/dev/null && { echo 'sees the "
			 "test'; exit 0; }\n"
			 "echo \"sees $(ls -d /proc/[0-9]* | wc -l) processes\"; exit 3\n",
			 (int)getpid()),
		0);
	p = script(&f, "spy", text);
	assert_errno(run(&f, p, NULL, "(exit 3): sees "), -EPERM);
	{
		static const struct filter_limits lim = FILTER_LIMITS_DEFAULT;
		struct clip_error *e = NULL;
		unsigned n = 1000;

		cr_assert_eq(deliver_filter_with(f.ctx, &f.d, p, &lim, &e), -EPERM);
		cr_assert_eq(sscanf(strstr(clip_error_get_message(e), "sees "), "sees %u", &n), 1);
		/* Its init, itself, the subshell, ls and wc: nothing of the host. */
		cr_assert_leq(n, 6, "the filter sees %u processes", n);
		clip_error_free(e);
	}
	free(text);
	free(p);
	teardown(&f);
}

/* Whether a process whose command line is exactly @argv0 @argv1 runs on the host. */
static bool
host_runs(const char *argv0, const char *argv1)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	bool found = false;

	cr_assert_not_null(d);
	while (!found && (de = readdir(d))) {
		char path[300], buf[128] = { 0 };
		ssize_t n;
		int fd;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0 && strcmp(buf, argv0) == 0 && strlen(argv0) + 1 < (size_t)n &&
		    strcmp(buf + strlen(argv0) + 1, argv1) == 0)
			found = true;
	}
	closedir(d);
	return found;
}

Test(filter, over_time_its_whole_cage_is_killed)
{
	static const struct filter_limits lim = { .timeout_ms = 1000,
						  .memory_max = 64 << 20,
						  .tasks_max = 16 };
	struct fixture f;
	struct timespec t0, t1;
	char *p;
	double s;

	setup(&f, "x");
	/* A child in the background outlives its parent unless the cage goes. */
	p = script(&f, "slow", "#!/bin/sh\nsleep 987 &\nexec sleep 986\n");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_errno(run(&f, p, &lim, "did not finish within 1000 ms"), -EPERM);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	cr_assert_lt(s, 10.0, "the deadline is kept (%.1f s)", s);
	cr_assert_not(host_runs("sleep", "986"), "the filter survived its deadline");
	cr_assert_not(host_runs("sleep", "987"), "the filter's child survived its cage");
	free(p);
	teardown(&f);
}

Test(filter, a_fork_bomb_is_bounded)
{
	static const struct filter_limits lim = { .timeout_ms = 20000,
						  .memory_max = 64 << 20,
						  .tasks_max = 16 };
	struct fixture f;
	char *p;

	setup(&f, "x");
	/* dash exits (status 2) when it cannot fork; 64 children means no bound. */
	p = script(&f, "bomb",
		   "#!/bin/sh\n"
		   "i=0\n"
		   "while [ $i -lt 64 ]; do sleep 5 & i=$((i + 1)); done\n"
		   "echo \"forked $i\"; exit 0\n");
	assert_errno(run(&f, p, &lim, "rejected the document (exit 2)"), -EPERM);
	cr_assert_not(host_runs("sleep", "5"), "children of the filter outlived it");
	free(p);
	teardown(&f);
}

Test(filter, over_memory_it_is_refused)
{
	static const struct filter_limits lim = { .timeout_ms = 20000,
						  .memory_max = 32 << 20,
						  .tasks_max = 16 };
	struct fixture f;
	struct clip_error *e = NULL;
	char *p;
	int r;

	setup(&f, "x");
	/* 96 MiB in the shell's memory, three times the cage's bound. */
	p = script(&f, "hog",
		   "#!/bin/sh\n"
		   "v=$(head -c 100663296 /dev/zero | tr '\\0' a)\n"
		   "[ ${#v} -eq 100663296 ] && { echo 'held 96 MiB'; exit 0; }\n"
		   "exit 3\n");
	r = deliver_filter_with(f.ctx, &f.d, p, &lim, &e);
	if (r == -EIO && strstr(clip_error_get_message(e), "cannot bound"))
		cr_skip_test("this host cannot bound the memory and tasks of a rootless cage");
	assert_errno(r, -EPERM);
	cr_assert(strstr(clip_error_get_message(e), "(exit 3)") ||
			  strstr(clip_error_get_message(e), "(signal 9)"),
		  "%s", clip_error_get_message(e));
	clip_error_free(e);
	free(p);
	teardown(&f);
}

Test(filter, a_missing_program_is_an_error_not_a_pass)
{
	struct fixture f;

	setup(&f, "x");
	assert_errno(run(&f, "/nonexistent/scan", NULL, "is not run"), -EIO);
	teardown(&f);
}

/*
 * No user namespace, no cage, no filter run: in a child whose own user
 * namespace allows no nested one, the transfer fails and the filter
 * (which would leave a mark in a 0777 directory) never runs.
 */
static int
without_user_namespaces(const char *dir, const char *program)
{
	char map[64], marker[600];
	struct clip_ctx *ctx;
	struct clip_error *e = NULL;
	struct delivery d;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int fd, src, inbox, r;

	if (unshare(CLONE_NEWUSER) < 0)
		return 10;
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, map, strlen(map)) < 0)
		return 11;
	close(fd);
	fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && (write(fd, "deny", 4) < 0 || close(fd) < 0))
		return 12;
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	fd = open("/proc/self/gid_map", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, map, strlen(map)) < 0)
		return 13;
	close(fd);
	fd = open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		return 14;
	close(fd);
	inbox = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	src = open(program, O_RDONLY | O_CLOEXEC);
	if (inbox < 0 || src < 0 || deliver_receive(inbox, src, 1 << 20, NULL, "", &d, NULL) < 0)
		return 15;
	if (clip_ctx_new(&ctx) < 0)
		return 16;
	r = deliver_filter(ctx, &d, program, &e);
	snprintf(marker, sizeof(marker), "%s/ran", dir);
	if (access(marker, F_OK) == 0)
		return 1; /* the filter ran */
	if (r != -EIO || !strstr(clip_error_get_message(e), "is not run: its cage cannot start"))
		return 2;
	clip_error_free(e);
	deliver_abort(&d);
	clip_ctx_unref(ctx);
	return 0;
}

Test(filter, fails_closed_when_no_cage_can_start)
{
	struct fixture f;
	char *p, *text = NULL;
	pid_t pid;
	int status;

	setup(&f, "x");
	cr_assert_gt(asprintf(&text, "#!/bin/sh\necho x >%s/ran\nexit 0\n", f.dir), 0);
	p = script(&f, "marker", text);
	/* The marker shows the filter would run, unconfined or not, if it were started. */
	run(&f, p, NULL, NULL);
	cr_assert_not(exists(f.dir, "ran"), "in its cage the filter writes nothing outside");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(without_user_namespaces(f.dir, p));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	if (WEXITSTATUS(status) >= 10)
		cr_skip_test("cannot make a user namespace without nested ones here (step %d)",
			     WEXITSTATUS(status));
	cr_assert_neq(WEXITSTATUS(status), 1, "the filter ran without a cage");
	cr_assert_eq(WEXITSTATUS(status), 0, "no clear error");
	free(text);
	free(p);
	teardown(&f);
}

/*
 * Where no cgroup takes the limits of the filter's cage (a user without a
 * delegated cgroup, a container without one), the filter is not run and
 * the document is refused: a filter that would pass everything does not
 * pass it unfiltered. Where the limits are taken, the tests above run.
 */
Test(filter, fails_closed_when_the_cage_cannot_be_bounded)
{
	static const struct filter_limits defaults = FILTER_LIMITS_DEFAULT;
	struct fixture f;
	struct clip_error *e = NULL;
	char *p;
	int r;

	setup(&f, "x");
	p = script(&f, "pass", "#!/bin/sh\nexit 0\n");
	r = deliver_filter_with(f.ctx, &f.d, p, &defaults, &e);
	if (r == 0)
		cr_skip_test("this host bounds the filter's cage: the refusal is not reached");
	assert_errno(r, -EIO);
	cr_assert(strstr(clip_error_get_message(e),
			 "is not run: this host cannot bound the memory and tasks of its cage"),
		  "%s", clip_error_get_message(e));
	clip_error_free(e);
	free(p);
	teardown(&f);
}
