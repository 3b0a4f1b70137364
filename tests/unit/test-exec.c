/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exec: the kernel's answer on every kind of file (a regular file with and
 * without the x bit, on an exec and on a noexec mount, a directory, a pipe,
 * a socket, memfds, a file open for writing), the degraded check of old
 * kernels, the securebits, the decision table, logging, and the open and
 * read helpers; as root and unprivileged. Securebits are only ever set in
 * forked children.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "exec/exec-internal.h"
#include "helpers.h"

#define under_valgrind() exec_under_valgrind()

/* valgrind would run the file instead of checking it: libclip degrades there. */
static void
skip_under_valgrind(void)
{
	if (under_valgrind())
		cr_skip_test(
			"valgrind does not know AT_EXECVE_CHECK: the check is degraded under it");
}

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

#define RF CLIP_EXEC_RESTRICT_FILE
#define DI CLIP_EXEC_DENY_INTERACTIVE

/* A file of @dir with @mode; returns an O_RDONLY fd. */
static int
file_with_mode(const char *dir, const char *name, mode_t mode)
{
	char path[512];
	int fd = test_file(dir, name, "#!/bin/sh\nexit 0\n");

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(chmod(path, mode), 0);
	return fd;
}

static const char *
message(struct clip_error *e)
{
	return clip_error_get_message(e);
}

/* fork, run @fn in the child, return its exit status (128 + signal). */
static int
in_child(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(fn(arg));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

Test(exec, support_is_native_on_this_kernel)
{
	struct clip_ctx *ctx;

	skip_under_valgrind();
	ctx = test_ctx(NULL);
	/* Linux >= 6.14 here; an older kernel would make this test wrong, not skip. */
	cr_assert_eq(clip_exec_check_support(ctx), CLIP_EXEC_CHECK_NATIVE);
	cr_assert_eq(clip_exec_check_support(NULL), -EINVAL);
	clip_ctx_unref(ctx);
}

Test(exec, regular_files)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	struct clip_ctx *ctx = test_ctx(NULL);
	struct clip_error *e = NULL;
	int x = file_with_mode(dir, "x", 0755), nox = file_with_mode(dir, "nox", 0644);
	int opath;
	char path[600];

	cr_assert_eq(clip_exec_check_fd(ctx, x, &e), 0, "%s", message(e));
	assert_errno(clip_exec_check_fd(ctx, nox, &e), -EACCES);
	cr_assert(strstr(message(e), "not executable by this user (mode 0644)"), "%s", message(e));
	e = clip_error_free(e);
	/* An O_PATH descriptor is enough to ask. */
	snprintf(path, sizeof(path), "%s/x", dir);
	opath = open(path, O_PATH | O_CLOEXEC);
	cr_assert_geq(opath, 0);
	cr_assert_eq(clip_exec_check_fd(ctx, opath, NULL), 0);
	/* Asking changes nothing: the process is still here, the file still readable. */
	cr_assert_eq(lseek(x, 0, SEEK_CUR), 0);
	close(opath);
	close(x);
	close(nox);
	clip_ctx_unref(ctx);
}

Test(exec, not_regular_files)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	struct clip_ctx *ctx = test_ctx(NULL);
	struct clip_error *e = NULL;
	int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), p[2], s;

	cr_assert_geq(d, 0);
	assert_errno(clip_exec_check_fd(ctx, d, &e), -EACCES);
	cr_assert(strstr(message(e), "directory"), "%s", message(e));
	e = clip_error_free(e);

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	assert_errno(clip_exec_check_fd(ctx, p[0], &e), -EACCES);
	cr_assert(strstr(message(e), "pipe"), "%s", message(e));
	e = clip_error_free(e);

	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(s, 0);
	assert_errno(clip_exec_check_fd(ctx, s, &e), -EACCES);
	cr_assert(strstr(message(e), "socket"), "%s", message(e));
	e = clip_error_free(e);

	d = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_errno(clip_exec_check_fd(ctx, d, &e), -EACCES);
	cr_assert(strstr(message(e), "character device"), "%s", message(e));
	e = clip_error_free(e);
	clip_ctx_unref(ctx);
}

/*
 * A memfd is executable unless sealed so (MFD_NOEXEC_SEAL) or the system
 * says so (vm.memfd_noexec=2): what the kernel would fexecve(), it allows.
 */
Test(exec, memfd)
{
	struct clip_ctx *ctx = test_ctx(NULL);
	struct clip_error *e = NULL;
	int noexec, exec;
	char policy = '0';
	FILE *f = fopen("/proc/sys/vm/memfd_noexec", "r");

	if (f) {
		policy = (char)fgetc(f);
		fclose(f);
	}
	noexec = memfd_create("clip-test", MFD_CLOEXEC | MFD_NOEXEC_SEAL);
	cr_assert_geq(noexec, 0);
	assert_errno(clip_exec_check_fd(ctx, noexec, &e), -EACCES);
	e = clip_error_free(e);
	exec = memfd_create("clip-test", MFD_CLOEXEC | MFD_EXEC);
	if (policy == '2')
		cr_assert_lt(exec, 0, "vm.memfd_noexec=2 refuses MFD_EXEC");
	else
		cr_assert_eq(clip_exec_check_fd(ctx, exec, NULL), 0);
	close(exec);
	close(noexec);
	clip_ctx_unref(ctx);
}

Test(exec, open_for_writing_is_busy)
{
	_cleanup_free_ char *dir = (skip_under_valgrind(), test_tmpdir("tmpfs"));
	struct clip_ctx *ctx = test_ctx(NULL);
	struct clip_error *e = NULL;
	int x = file_with_mode(dir, "x", 0755), w;
	char path[600];

	snprintf(path, sizeof(path), "%s/x", dir);
	w = open(path, O_WRONLY | O_CLOEXEC);
	cr_assert_geq(w, 0);
	assert_errno(clip_exec_check_fd(ctx, x, &e), -ETXTBSY);
	cr_assert(strstr(message(e), "open for writing"), "%s", message(e));
	e = clip_error_free(e);
	close(w);
	cr_assert_eq(clip_exec_check_fd(ctx, x, NULL), 0);
	close(x);
	clip_ctx_unref(ctx);
}

Test(exec, bad_arguments)
{
	struct clip_ctx *ctx = test_ctx(NULL);
	struct clip_error *e = NULL, *set = NULL;
	unsigned bits;
	char *buf = NULL;
	size_t size;

	assert_errno(clip_exec_check_fd(NULL, 0, NULL), -EINVAL);
	assert_errno(clip_exec_check_fd(ctx, -1, &e), -EBADF);
	e = clip_error_free(e);
	assert_errno(clip_exec_check_fd(ctx, 999, &e), -EBADF);
	cr_assert(strstr(message(e), "bad file descriptor 999"), "%s", message(e));
	e = clip_error_free(e);
	/* A message already there is never overwritten. */
	clip_exec_check_fd(ctx, -1, &set);
	assert_errno(clip_exec_check_fd(ctx, 0, &set), -EINVAL);
	set = clip_error_free(set);
	assert_errno(clip_exec_get_securebits(ctx, NULL), -EINVAL);
	assert_errno(clip_exec_get_securebits(NULL, &bits), -EINVAL);
	assert_errno(clip_exec_set_securebits(ctx, 1u << 0, NULL), -EINVAL);
	assert_errno(clip_exec_may_run_file(ctx, 0, NULL, CLIP_EXEC_RESTRICT_FILE_LOCKED, NULL),
		     -EINVAL);
	assert_errno(clip_exec_may_run_interactive(ctx, -2, NULL, 0, NULL), -EBADF);
	assert_errno(clip_exec_open(ctx, AT_FDCWD, "", 0, NULL), -EINVAL);
	assert_errno(clip_exec_open(ctx, AT_FDCWD, NULL, 0, NULL), -EINVAL);
	assert_errno(clip_exec_open(ctx, -5, "x", 0, NULL), -EBADF);
	assert_errno(clip_exec_open(ctx, AT_FDCWD, "x", 1u << 5, NULL), -EINVAL);
	assert_errno(clip_exec_read_all(ctx, 0, 0, NULL, &size, NULL), -EINVAL);
	assert_errno(clip_exec_read_all(ctx, -1, 0, &buf, &size, NULL), -EBADF);
	clip_ctx_unref(ctx);
}

static int
child_uses_parent_ctx(void *arg)
{
	return clip_exec_check_fd(arg, 0, NULL) == -ECHILD ? 0 : 1;
}

Test(exec, context_after_fork)
{
	struct clip_ctx *ctx = test_ctx(NULL);

	cr_assert_eq(in_child(child_uses_parent_ctx, ctx), 0);
	clip_ctx_unref(ctx);
}

/*
 * What an interpreter's forked child gets (multiprocessing, perl's fork):
 * from the parent's context a clear -ECHILD, from one of its own the
 * check, as the parent had it. The parent has a thread running at the
 * fork, as a multiprocessing.Pool has.
 */
static struct clip_ctx *parent_ctx;

static int
child_makes_its_own_ctx(void *arg)
{
	const char *path = arg;
	struct clip_ctx *ctx = NULL;
	struct clip_error *e = NULL;
	char nox[600];
	int fd;

	if (clip_exec_open(parent_ctx, AT_FDCWD, path, 0, &e) != -ECHILD ||
	    !strstr(message(e), "does not cross fork()"))
		return 1;
	e = clip_error_free(e);
	if (clip_ctx_new(&ctx) < 0)
		return 2;
	fd = clip_exec_open(ctx, AT_FDCWD, path, 0, &e);
	if (fd < 0)
		return 3;
	close(fd);
	/* Checked, not waved through: the file without the x bit is refused. */
	snprintf(nox, sizeof(nox), "%.*s/nox", (int)(strrchr(path, '/') - path), path);
	if (clip_exec_open(ctx, AT_FDCWD, nox, RF, NULL) != -EACCES)
		return 4;
	clip_ctx_unref(ctx);
	clip_ctx_unref(parent_ctx);
	return 0;
}

static void *
spin(void *arg)
{
	while (!__atomic_load_n((bool *)arg, __ATOMIC_RELAXED))
		usleep(1000);
	return NULL;
}

Test(exec, forked_child_makes_its_own_context)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	char path[600];
	bool stop = false;
	pthread_t thread;

	skip_under_valgrind();
	parent_ctx = test_ctx(NULL);
	close(file_with_mode(dir, "prog", 0755));
	close(file_with_mode(dir, "nox", 0644));
	snprintf(path, sizeof(path), "%s/prog", dir);
	cr_assert_eq(pthread_create(&thread, NULL, spin, &stop), 0);
	cr_assert_eq(in_child(child_makes_its_own_ctx, path), 0);
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);
	pthread_join(thread, NULL);
	clip_ctx_unref(parent_ctx);
}

/* Mount a noexec tmpfs on @dir in a new mount namespace (and user one if needed). */
static int
enter_noexec(const char *dir)
{
	int r = test_unshare_mount();

	if (r)
		return r;
	if (mount("clip-noexec", dir, "tmpfs", MS_NOEXEC, "mode=0755") < 0)
		return 95;
	return 0;
}

struct noexec_case {
	const char *dir;
	bool drop;
};

static int
check_on_noexec(void *arg)
{
	struct noexec_case *c = arg;
	struct clip_ctx *ctx = NULL;
	struct clip_error *e = NULL;
	char path[600];
	int fd, r;

	if (c->drop) {
		test_drop_privileges();
		/* Or /proc/self/uid_map stays root's to write. */
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	}
	r = enter_noexec(c->dir);
	if (r)
		return r;
	snprintf(path, sizeof(path), "%s/prog", c->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
	if (fd < 0 || write(fd, "#!/bin/sh\n", 10) != 10)
		return 96;
	close(fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (clip_ctx_new(&ctx) < 0)
		return 97;
	r = clip_exec_check_fd(ctx, fd, &e);
	if (r != -EACCES || !strstr(message(e), "mounted noexec"))
		return 1;
	clip_error_free(e);
	e = NULL;
	/* Enforced: refused; not enforced: allowed, and said so (1). */
	if (clip_exec_may_run_file(ctx, fd, path, RF, NULL) != -EACCES ||
	    clip_exec_may_run_file(ctx, fd, path, 0, NULL) != 1)
		return 2;
	clip_ctx_unref(ctx);
	return 0;
}

static void
noexec_case(bool drop)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	struct noexec_case c = { dir, drop };
	int r;

	if (drop && !test_is_root())
		cr_skip_test("dropping to another uid needs root");
	r = in_child(check_on_noexec, &c);
	if (r == 77)
		cr_skip_test("no mount namespace: unprivileged user namespaces are off");
	cr_assert_eq(r, 0, "child failed at step %d", r);
}

Test(exec, noexec_mount)
{
	noexec_case(false);
}

Test(exec, noexec_mount_unprivileged)
{
	noexec_case(true);
}

static int
unprivileged_modes(void *arg)
{
	const char *dir = arg;
	struct clip_ctx *ctx = NULL;
	char path[600];
	int fd, r = 0;

	if (clip_ctx_new(&ctx) < 0)
		return 90;
	/* 0700 root-owned: root may run it, nobody may not (not even read, so O_PATH). */
	snprintf(path, sizeof(path), "%s/private", dir);
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0 || clip_exec_check_fd(ctx, fd, NULL) != -EACCES)
		r = 1;
	close(fd);
	snprintf(path, sizeof(path), "%s/public", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || clip_exec_check_fd(ctx, fd, NULL) != 0)
		r = 2;
	close(fd);
	/* A file with only the owner's x bit: root may run it (one x bit), nobody not. */
	snprintf(path, sizeof(path), "%s/owner", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || clip_exec_check_fd(ctx, fd, NULL) != -EACCES)
		r = 3;
	close(fd);
	clip_ctx_unref(ctx);
	return r;
}

Test(exec, unprivileged_permissions)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	struct clip_ctx *ctx = test_ctx(NULL);
	int priv, pub, owner;

	if (!test_is_root())
		cr_skip_test("files of another owner need root to create");
	priv = file_with_mode(dir, "private", 0700);
	pub = file_with_mode(dir, "public", 0755);
	owner = file_with_mode(dir, "owner", 0744);
	cr_assert_eq(clip_exec_check_fd(ctx, priv, NULL), 0, "root may run a 0700 file");
	cr_assert_eq(clip_exec_check_fd(ctx, owner, NULL), 0, "root may run a 0744 file");
	cr_assert_eq(test_run_unprivileged(unprivileged_modes, dir), 0);
	close(priv);
	close(pub);
	close(owner);
	clip_ctx_unref(ctx);
}

/* Securebits: only ever changed in children. */
static int
securebits_child(void *arg)
{
	struct clip_ctx *ctx = NULL;
	struct clip_error *e = NULL;
	unsigned bits = 1;
	int status;

	if (clip_ctx_new(&ctx) < 0)
		return 90;
	if (clip_exec_get_securebits(ctx, &bits) < 0 || bits != 0)
		return 1;
	if (clip_exec_set_securebits(ctx, RF, NULL) < 0)
		return 2;
	if (clip_exec_get_securebits(ctx, &bits) < 0 || bits != RF)
		return 3;
	/* Already set: not an error, even without CAP_SETPCAP. */
	if (clip_exec_set_securebits(ctx, RF, NULL) < 0)
		return 4;
	if (clip_exec_set_securebits(
		    ctx, CLIP_EXEC_RESTRICT_FILE_LOCKED | CLIP_EXEC_DENY_INTERACTIVE_LOCKED, NULL) <
	    0)
		return 5;
	/* Locked off. */
	if (clip_exec_set_securebits(ctx, DI, &e) != -EPERM ||
	    !strstr(message(e), "SECBIT_EXEC_DENY_INTERACTIVE is locked off"))
		return 6;
	clip_error_free(e);
	/* Locked on: the kernel refuses to clear it. */
	if (prctl(PR_SET_SECUREBITS, (unsigned long)CLIP_EXEC_RESTRICT_FILE_LOCKED, 0, 0, 0) == 0)
		return 7;
	if (clip_exec_get_securebits(ctx, &bits) < 0 ||
	    bits != (RF | CLIP_EXEC_RESTRICT_FILE_LOCKED | CLIP_EXEC_DENY_INTERACTIVE_LOCKED))
		return 8;
	/* Inherited by a grandchild. */
	if (fork() == 0)
		_exit(prctl(PR_GET_SECUREBITS, 0, 0, 0, 0) == (int)bits ? 0 : 1);
	if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 9;
	clip_ctx_unref(ctx);
	return 0;
}

Test(exec, securebits)
{
	int r = in_child(securebits_child, NULL);

	cr_assert_eq(r, 0, "step %d failed", r);
}

/* The kernel needs no privilege for the exec bits (Linux 6.14+). */
Test(exec, securebits_unprivileged)
{
	int r = test_is_root() ? test_run_unprivileged(securebits_child, NULL)
			       : in_child(securebits_child, NULL);

	cr_assert_eq(r, 0, "step %d failed", r);
}

/* Log capture: the last refusal (LOG_WARNING) and would-be refusal (LOG_NOTICE). */
struct log_capture {
	int warnings, notices;
	char last[512];
};

static void
capture(struct clip_ctx *ctx, int priority, const char *msg, void *userdata)
{
	struct log_capture *c = userdata;

	if (priority == LOG_WARNING)
		c->warnings++;
	if (priority == LOG_NOTICE)
		c->notices++;
	if (priority <= LOG_NOTICE)
		snprintf(c->last, sizeof(c->last), "%s", msg);
}

struct table_case {
	unsigned bits;
	char dir[256];
};

/* The decision table of Documentation/userspace-api/check_exec.rst. */
static int
table_child(void *arg)
{
	struct table_case *t = arg;
	struct log_capture log = { 0 };
	struct clip_ctx *ctx = NULL;
	char path[600];
	int x, nox, p[2], r;
	bool rf = t->bits & RF, di = t->bits & DI;

	if (clip_ctx_new(&ctx) < 0 || clip_ctx_set_log_fn(ctx, capture, &log) < 0 ||
	    clip_ctx_set_log_priority(ctx, LOG_DEBUG) < 0)
		return 90;
	if (t->bits && clip_exec_set_securebits(ctx, t->bits, NULL) < 0)
		return 91;
	/* The probe may say something (degraded under valgrind): not counted. */
	clip_exec_check_support(ctx);
	log = (struct log_capture){ 0 };
	snprintf(path, sizeof(path), "%s/x", t->dir);
	x = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/nox", t->dir);
	nox = open(path, O_RDONLY | O_CLOEXEC);
	if (x < 0 || nox < 0 || pipe2(p, O_CLOEXEC) < 0)
		return 92;

	/* A file that passes always runs, silently. */
	if (clip_exec_may_run_file(ctx, x, "x", 0, NULL) != 0 || log.warnings || log.notices)
		return 1;
	/* A file that fails: refused and logged as such, or run and logged as would-be. */
	r = clip_exec_may_run_file(ctx, nox, "nox", 0, NULL);
	if (r != (rf ? -EACCES : 1))
		return 2;
	if (rf ? log.warnings != 1 || !strstr(log.last, "refused to run nox as code")
	       : log.notices != 1 || !strstr(log.last, "would refuse it"))
		return 3;
	/* The caller may enforce more than the bits, never less. */
	if (clip_exec_may_run_file(ctx, nox, "nox", RF, NULL) != -EACCES)
		return 4;
	log = (struct log_capture){ 0 };
	/* -c / -e: refused only under DENY_INTERACTIVE. */
	r = clip_exec_may_run_interactive(ctx, -1, "-c", 0, NULL);
	if (r != (di ? -EACCES : 0) || log.warnings != (di ? 1 : 0))
		return 5;
	/* A pipe on stdin fails the check: refused under DENY_INTERACTIVE. */
	r = clip_exec_may_run_interactive(ctx, p[0], "standard input", 0, NULL);
	if (r != (di ? -EACCES : 1))
		return 6;
	/* An executable regular file on stdin is not interactive: runs. */
	if (clip_exec_may_run_interactive(ctx, x, "standard input", 0, NULL) != 0)
		return 7;
	if (clip_exec_may_run_interactive(ctx, -1, "-c", DI, NULL) != -EACCES)
		return 8;
	clip_ctx_unref(ctx);
	return 0;
}

Test(exec, decision_table)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	const unsigned cases[] = { 0, RF, DI, RF | DI };

	close(file_with_mode(dir, "x", 0755));
	close(file_with_mode(dir, "nox", 0644));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct table_case t = { .bits = cases[i] };
		int r;

		snprintf(t.dir, sizeof(t.dir), "%s", dir);
		r = in_child(table_child, &t);
		cr_expect_eq(r, 0, "bits %#x: step %d", cases[i], r);
		if (test_is_root()) {
			r = test_run_unprivileged(table_child, &t);
			cr_expect_eq(r, 0, "bits %#x, unprivileged: step %d", cases[i], r);
		}
	}
}

/* A seccomp filter that answers @error to execveat(): a kernel without the flag. */
static int
hide_execveat(int error)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)error),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		return -errno;
	return 0;
}

struct degraded_case {
	int error;
	char dir[256];
};

static int
degraded_child(void *arg)
{
	struct degraded_case *c = arg;
	struct log_capture log = { 0 };
	struct clip_ctx *ctx = NULL;
	struct clip_error *e = NULL;
	char path[600];
	int x, nox, d;

	if (hide_execveat(c->error) < 0)
		return 90;
	exec_forget_probe();
	if (clip_ctx_new(&ctx) < 0 || clip_ctx_set_log_fn(ctx, capture, &log) < 0)
		return 91;
	clip_ctx_set_log_priority(ctx, LOG_WARNING);
	if (clip_exec_check_support(ctx) != CLIP_EXEC_CHECK_DEGRADED)
		return 1;
	/* Said once, loudly. */
	if (log.warnings != 1 || !strstr(log.last, "degraded"))
		return 2;
	clip_exec_check_support(ctx);
	if (log.warnings != 1)
		return 3;
	snprintf(path, sizeof(path), "%s/x", c->dir);
	x = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/nox", c->dir);
	nox = open(path, O_RDONLY | O_CLOEXEC);
	d = open(c->dir, O_RDONLY | O_CLOEXEC);
	if (clip_exec_check_fd(ctx, x, NULL) != 0)
		return 4;
	if (clip_exec_check_fd(ctx, nox, NULL) != -EACCES ||
	    clip_exec_check_fd(ctx, d, NULL) != -EACCES)
		return 5;
	if (clip_exec_may_run_file(ctx, nox, "nox", RF, &e) != -EACCES ||
	    !strstr(message(e), "degraded check"))
		return 6;
	clip_error_free(e);
	e = NULL;
	/* valgrind hides the kernel from the probe: it only degrades the check. */
	if (!under_valgrind() && clip_exec_set_securebits(ctx, RF, &e) != -EOPNOTSUPP)
		return 7;
	clip_error_free(e);
	clip_ctx_unref(ctx);
	return 0;
}

static void
degraded(int error)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	struct degraded_case c = { .error = error };
	int r;

	close(file_with_mode(dir, "x", 0755));
	close(file_with_mode(dir, "nox", 0644));
	snprintf(c.dir, sizeof(c.dir), "%s", dir);
	r = in_child(degraded_child, &c);
	cr_assert_eq(r, 0, "step %d", r);
}

/* Linux < 6.14 rejects the unknown flag with EINVAL. */
Test(exec, degraded_without_the_flag)
{
	degraded(EINVAL);
}

/* No execveat at all (or a filter that hides it). */
Test(exec, degraded_without_execveat)
{
	degraded(ENOSYS);
}

Test(exec, open_helper)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	struct clip_ctx *ctx = test_ctx(NULL);
	struct clip_error *e = NULL;
	int dfd, fd, x = file_with_mode(dir, "x", 0755);
	char path[600], magic[64];

	snprintf(path, sizeof(path), "%s/x", dir);
	fd = clip_exec_open(ctx, AT_FDCWD, path, 0, &e);
	cr_assert_geq(fd, 0, "%s", message(e));
	cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	cr_assert_eq(fcntl(fd, F_GETFL) & (O_NONBLOCK | O_ACCMODE), O_RDONLY);
	close(fd);

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = clip_exec_open(ctx, dfd, "x", RF, NULL);
	cr_assert_geq(fd, 0);
	close(fd);
	assert_errno(clip_exec_open(ctx, dfd, "missing", 0, &e), -ENOENT);
	e = clip_error_free(e);
	assert_errno(clip_exec_open(ctx, AT_FDCWD, dir, 0, &e), -EISDIR);
	cr_assert(strstr(message(e), "is a directory"), "%s", message(e));
	e = clip_error_free(e);
	assert_errno(clip_exec_open(ctx, dfd, "x/y", 0, NULL), -ENOTDIR);

	/* /proc magic links only on request (valgrind emulates /proc/self itself). */
	snprintf(magic, sizeof(magic), "/proc/self/fd/%d", x);
	if (!under_valgrind()) {
		assert_errno(clip_exec_open(ctx, AT_FDCWD, magic, 0, &e), -ELOOP);
		cr_assert(strstr(message(e), "magic link"), "%s", message(e));
		e = clip_error_free(e);
	}
	fd = clip_exec_open(ctx, AT_FDCWD, magic, CLIP_EXEC_OPEN_MAGICLINKS, NULL);
	cr_assert_geq(fd, 0);
	close(fd);

	/* A file that fails the check: refused when enforced, opened otherwise. */
	close(file_with_mode(dir, "nox", 0644));
	assert_errno(clip_exec_open(ctx, dfd, "nox", RF, &e), -EACCES);
	cr_assert(strstr(message(e), "nox may not run as code"), "%s", message(e));
	e = clip_error_free(e);
	fd = clip_exec_open(ctx, dfd, "nox", 0, NULL);
	cr_assert_geq(fd, 0);
	close(fd);
	close(dfd);
	close(x);
	clip_ctx_unref(ctx);
}

/* A FIFO does not hang the open, and is handed back blocking when allowed. */
Test(exec, open_fifo)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	struct clip_ctx *ctx = test_ctx(NULL);
	char path[600];
	int fd;

	snprintf(path, sizeof(path), "%s/fifo", dir);
	cr_assert_eq(mkfifo(path, 0755), 0);
	assert_errno(clip_exec_open(ctx, AT_FDCWD, path, RF, NULL), -EACCES);
	fd = clip_exec_open(ctx, AT_FDCWD, path, 0, NULL);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);
	clip_ctx_unref(ctx);
}

Test(exec, read_all)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	struct clip_ctx *ctx = test_ctx(NULL);
	struct clip_error *e = NULL;
	const char *content = "#!/bin/sh\nexit 0\n";
	size_t size = 0, n = strlen(content);
	char *buf = NULL;
	int fd = file_with_mode(dir, "x", 0755), p[2], d;

	cr_assert_eq(clip_exec_read_all(ctx, fd, 0, &buf, &size, NULL), 0);
	cr_assert_eq(size, n);
	cr_assert_eq(memcmp(buf, content, n), 0);
	cr_assert_eq(buf[n], '\0');
	free(buf);
	buf = NULL;
	/* Exactly the bound: fine; one byte over: refused. */
	lseek(fd, 0, SEEK_SET);
	cr_assert_eq(clip_exec_read_all(ctx, fd, n, &buf, &size, NULL), 0);
	free(buf);
	buf = NULL;
	lseek(fd, 0, SEEK_SET);
	assert_errno(clip_exec_read_all(ctx, fd, n - 1, &buf, &size, &e), -E2BIG);
	cr_assert_null(buf);
	e = clip_error_free(e);

	/* A pipe, whose size is not known in advance, with the bound. */
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(write(p[1], content, n), (ssize_t)n);
	close(p[1]);
	cr_assert_eq(clip_exec_read_all(ctx, p[0], 0, &buf, &size, NULL), 0);
	cr_assert_eq(size, n);
	free(buf);
	buf = NULL;
	close(p[0]);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(write(p[1], content, n), (ssize_t)n);
	close(p[1]);
	assert_errno(clip_exec_read_all(ctx, p[0], 5 * n, &buf, &size, NULL), -E2BIG);
	close(p[0]);
	/* Non-blocking and empty: an error, not a busy loop. */
	cr_assert_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	assert_errno(clip_exec_read_all(ctx, p[0], 0, &buf, &size, NULL), -EINVAL);
	close(p[0]);
	close(p[1]);
	d = open(dir, O_RDONLY | O_CLOEXEC);
	assert_errno(clip_exec_read_all(ctx, d, 0, &buf, &size, NULL), -EISDIR);
	close(d);
	close(fd);
	clip_ctx_unref(ctx);
}

/* The check is the kernel's own: exec_check() and the raw syscall agree. */
Test(exec, same_answer_as_the_syscall)
{
	_cleanup_free_ char *dir = (skip_under_valgrind(), test_tmpdir("tmpfs"));
	struct clip_ctx *ctx = test_ctx(NULL);
	int fds[2] = { file_with_mode(dir, "x", 0755), file_with_mode(dir, "nox", 0600) };

	for (int i = 0; i < 2; i++) {
		char *const argv[] = { "t", NULL }, *const envp[] = { NULL };
		long raw = syscall(SYS_execveat, fds[i], "", argv, envp, AT_EMPTY_PATH | 0x10000);
		int want = raw < 0 ? -errno : 0;

		cr_assert_eq(exec_check(ctx, fds[i], "t"), want);
		close(fds[i]);
	}
	clip_ctx_unref(ctx);
}

/* clip_exec_allow_tree(): a tree an administrator deploys for an interpreter. */

static mode_t
mode_of(const char *dir, const char *name)
{
	char path[600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(lstat(path, &st), 0, "%s: %s", path, strerror(errno));
	return st.st_mode & 07777;
}

static void
make_dir(const char *dir, const char *name, mode_t mode)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(mkdir(path, mode), 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(chmod(path, mode), 0);
}

#define TREE_STATS \
	{ \
		.size = sizeof(struct clip_exec_tree_stats) \
	}

static const struct {
	const char *name;
	mode_t before, after;
} tree_files[] = {
	{ "lib/a.py", 0644, 0755 },       { "lib/private.py", 0600, 0700 },
	{ "lib/group.py", 0640, 0750 },   { "lib/ro.py", 0444, 0555 },
	{ "lib/done.py", 0755, 0755 },    { "lib/none", 0000, 0000 },
	{ "lib/pkg/b.pm", 0644, 0755 },   { "lib/pkg/deep/c.pyc", 0640, 0750 },
	{ "lib/owner-x.pl", 0744, 0755 },
};

/* Files get x where they have r, once; links and FIFOs are left alone. */
Test(exec, allow_tree)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	struct clip_exec_tree_stats st = TREE_STATS;
	struct clip_ctx *ctx = test_ctx(NULL);
	char path[600], target[600];
	int fd;

	make_dir(dir, "lib", 0755);
	make_dir(dir, "lib/pkg", 0755);
	make_dir(dir, "lib/pkg/deep", 0750);
	make_dir(dir, "outside", 0755);
	for (size_t i = 0; i < ELEMENTSOF(tree_files); i++)
		close(file_with_mode(dir, tree_files[i].name, tree_files[i].before));
	close(file_with_mode(dir, "outside/o.py", 0644));
	/* Links out of the tree, to a file and to a directory: never followed. */
	snprintf(path, sizeof(path), "%s/lib/link.py", dir);
	snprintf(target, sizeof(target), "%s/outside/o.py", dir);
	cr_assert_eq(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/lib/linkdir", dir);
	snprintf(target, sizeof(target), "%s/outside", dir);
	cr_assert_eq(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/lib/fifo", dir);
	cr_assert_eq(mkfifo(path, 0644), 0);
	snprintf(path, sizeof(path), "%s/lib", dir);

	/* Checked: says what would change, changes nothing. */
	cr_assert_eq(clip_exec_allow_tree(ctx, AT_FDCWD, path, CLIP_EXEC_TREE_CHECK, &st, NULL), 1);
	cr_assert_eq(st.files, ELEMENTSOF(tree_files));
	cr_assert_eq(st.changed, 7);
	cr_assert_eq(st.unsafe + st.noexec + st.mounts, 0);
	for (size_t i = 0; i < ELEMENTSOF(tree_files); i++)
		cr_assert_eq(mode_of(dir, tree_files[i].name), tree_files[i].before);

	st = (struct clip_exec_tree_stats)TREE_STATS;
	cr_assert_eq(clip_exec_allow_tree(ctx, AT_FDCWD, path, 0, &st, NULL), 0);
	cr_assert_eq(st.changed, 7);
	for (size_t i = 0; i < ELEMENTSOF(tree_files); i++)
		cr_assert_eq(mode_of(dir, tree_files[i].name), tree_files[i].after, "%s: %04o",
			     tree_files[i].name, (unsigned)mode_of(dir, tree_files[i].name));
	cr_assert_eq(mode_of(dir, "outside/o.py"), 0644, "a link out of the tree was followed");
	cr_assert_eq(mode_of(dir, "lib/fifo"), 0644);
	cr_assert_eq(mode_of(dir, "lib/pkg/deep"), 0750, "a directory's mode changed");

	/* Again: nothing to do; and the tree now passes the check. */
	st = (struct clip_exec_tree_stats)TREE_STATS;
	cr_assert_eq(clip_exec_allow_tree(ctx, AT_FDCWD, path, 0, &st, NULL), 0);
	cr_assert_eq(st.changed, 0);
	cr_assert_eq(st.files, ELEMENTSOF(tree_files));
	cr_assert_eq(clip_exec_allow_tree(ctx, AT_FDCWD, path, CLIP_EXEC_TREE_CHECK, NULL, NULL),
		     0);
	snprintf(path, sizeof(path), "%s/lib/pkg/b.pm", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!under_valgrind())
		cr_assert_eq(clip_exec_check_fd(ctx, fd, NULL), 0);
	close(fd);
	clip_ctx_unref(ctx);
}

/* What others could write is never blessed, and says why. */
Test(exec, allow_tree_unsafe)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	struct clip_exec_tree_stats st = TREE_STATS;
	struct log_capture log = { 0 };
	struct clip_ctx *ctx = test_ctx(NULL);
	char path[600];
	int unsafe = 4;

	cr_assert_eq(clip_ctx_set_log_fn(ctx, capture, &log), 0);
	make_dir(dir, "lib", 0755);
	make_dir(dir, "lib/open", 0777);
	close(file_with_mode(dir, "lib/ok.py", 0644));
	close(file_with_mode(dir, "lib/gw.py", 0664));
	close(file_with_mode(dir, "lib/ow.py", 0646));
	close(file_with_mode(dir, "lib/suid", 04644));
	close(file_with_mode(dir, "lib/open/in.py", 0644));
	if (test_is_root()) {
		close(file_with_mode(dir, "lib/theirs.py", 0644));
		snprintf(path, sizeof(path), "%s/lib/theirs.py", dir);
		cr_assert_eq(chown(path, TEST_UID, TEST_GID), 0);
		unsafe++;
	}
	snprintf(path, sizeof(path), "%s/lib", dir);
	cr_assert_eq(clip_exec_allow_tree(ctx, AT_FDCWD, path, 0, &st, NULL), 1);
	cr_assert_eq(st.unsafe, unsafe, "%llu unsafe", (unsigned long long)st.unsafe);
	cr_assert_eq(log.warnings, unsafe);
	cr_assert_eq(st.changed, 1);
	cr_assert_eq(mode_of(dir, "lib/ok.py"), 0755, "a safe file beside unsafe ones");
	cr_assert_eq(mode_of(dir, "lib/gw.py"), 0664);
	cr_assert_eq(mode_of(dir, "lib/ow.py"), 0646);
	cr_assert_eq(mode_of(dir, "lib/suid"), 04644, "a set-user-ID file made executable");
	cr_assert_eq(mode_of(dir, "lib/open/in.py"), 0644, "a world-writable directory walked");
	if (test_is_root())
		cr_assert_eq(mode_of(dir, "lib/theirs.py"), 0644);
	/* Still unsafe, and said again: the tree does not pass. */
	log = (struct log_capture){ 0 };
	cr_assert_eq(clip_exec_allow_tree(ctx, AT_FDCWD, path, CLIP_EXEC_TREE_CHECK, NULL, NULL),
		     1);
	cr_assert_eq(log.warnings, unsafe);

	/* A tree below a directory others may write to (not sticky). */
	make_dir(dir, "shared", 0777);
	make_dir(dir, "shared/lib", 0755);
	close(file_with_mode(dir, "shared/lib/a.py", 0644));
	snprintf(path, sizeof(path), "%s/shared/lib", dir);
	log = (struct log_capture){ 0 };
	st = (struct clip_exec_tree_stats)TREE_STATS;
	cr_assert_eq(clip_exec_allow_tree(ctx, AT_FDCWD, path, 0, &st, NULL), 1);
	cr_assert_eq(st.unsafe, 1);
	cr_assert(strstr(log.last, "a directory above it is writable by others (mode 0777)"), "%s",
		  log.last);
	/* Sticky, as /tmp: others cannot take the tree away. */
	cr_assert_eq(chmod(dir, 01777) == 0 && chmod(path, 0755) == 0, 1);
	snprintf(path, sizeof(path), "%s/shared", dir);
	cr_assert_eq(chmod(path, 01777), 0);
	snprintf(path, sizeof(path), "%s/shared/lib", dir);
	cr_assert_eq(clip_exec_allow_tree(ctx, AT_FDCWD, path, 0, NULL, NULL), 0);
	cr_assert_eq(chmod(dir, 0755), 0);
	clip_ctx_unref(ctx);
}

static int
allow_tree_mounts_child(void *arg)
{
	const char *dir = arg;
	struct clip_exec_tree_stats st = TREE_STATS;
	struct clip_ctx *ctx = NULL;
	char path[600];
	int r;

	/* A tmpfs inside the tree, and the tree's own mount made noexec. */
	snprintf(path, sizeof(path), "%s/lib/mnt", dir);
	r = enter_noexec(path);
	if (r)
		return r;
	if (mount("clip-exec", path, "tmpfs", MS_REMOUNT, "mode=0755") < 0)
		return 80;
	close(test_file(path, "m.py", "pass\n"));
	snprintf(path, sizeof(path), "%s/lib", dir);
	if (clip_ctx_new(&ctx) < 0)
		return 81;
	if (clip_exec_allow_tree(ctx, AT_FDCWD, path, 0, &st, NULL) != 0)
		return 1;
	if (st.mounts != 1 || st.changed != 1 || mode_of(dir, "lib/mnt/m.py") != 0644)
		return 2;
	st = (struct clip_exec_tree_stats)TREE_STATS;
	if (clip_exec_allow_tree(ctx, AT_FDCWD, path, CLIP_EXEC_TREE_CROSS_MOUNTS, &st, NULL) != 0)
		return 3;
	if (st.mounts != 0 || st.changed != 1 || mode_of(dir, "lib/mnt/m.py") != 0755)
		return 4;
	/* The inner mount, remounted noexec: its files fail whatever their mode. */
	snprintf(path, sizeof(path), "%s/lib/mnt", dir);
	if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_NOEXEC, NULL) < 0)
		return 82;
	st = (struct clip_exec_tree_stats)TREE_STATS;
	if (clip_exec_allow_tree(ctx, AT_FDCWD, path, 0, &st, NULL) != 1 || st.noexec != 1)
		return 5;
	clip_ctx_unref(ctx);
	return 0;
}

Test(exec, allow_tree_mounts)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	int r;

	make_dir(dir, "lib", 0755);
	make_dir(dir, "lib/mnt", 0755);
	close(file_with_mode(dir, "lib/a.py", 0644));
	r = in_child(allow_tree_mounts_child, dir);
	if (r == 77)
		cr_skip_test("no mount namespace: unprivileged user namespaces are off");
	cr_assert_eq(r, 0, "step %d failed", r);
}

static int
allow_tree_unprivileged_child(void *arg)
{
	const char *dir = arg;
	struct clip_error *e = NULL;
	struct clip_ctx *ctx = NULL;
	char path[600];
	int r;

	if (clip_ctx_new(&ctx) < 0)
		return 90;
	snprintf(path, sizeof(path), "%s/lib", dir);
	/* root's files are safe to bless, but not nobody's to change. */
	if (clip_exec_allow_tree(ctx, AT_FDCWD, path, CLIP_EXEC_TREE_CHECK, NULL, NULL) != 1)
		return 1;
	r = clip_exec_allow_tree(ctx, AT_FDCWD, path, 0, NULL, &e);
	if (r != -EPERM || !strstr(clip_error_get_message(e), "cannot change the mode of ") ||
	    !strstr(clip_error_get_message(e), "/lib/a.py: Operation not permitted"))
		return 2;
	clip_error_free(e);
	clip_ctx_unref(ctx);
	return 0;
}

Test(exec, allow_tree_unprivileged)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");

	if (!test_is_root())
		cr_skip_test("files of another owner need root to create");
	make_dir(dir, "lib", 0755);
	close(file_with_mode(dir, "lib/a.py", 0644));
	cr_assert_eq(test_run_unprivileged(allow_tree_unprivileged_child, dir), 0);
	cr_assert_eq(mode_of(dir, "lib/a.py"), 0644);
}

Test(exec, allow_tree_errors)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	struct clip_exec_tree_stats st = TREE_STATS;
	struct clip_ctx *ctx = test_ctx(NULL);
	struct clip_error *e = NULL;
	char path[600];
	size_t len;

	close(file_with_mode(dir, "file", 0644));
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_errno(clip_exec_allow_tree(ctx, AT_FDCWD, path, 0, NULL, &e), -ENOENT);
	cr_assert(strstr(message(e), "cannot open the tree ") && strstr(message(e), "/missing"),
		  "%s", message(e));
	e = clip_error_free(e);
	snprintf(path, sizeof(path), "%s/file", dir);
	assert_errno(clip_exec_allow_tree(ctx, AT_FDCWD, path, 0, NULL, &e), -ENOTDIR);
	cr_assert(strstr(message(e), "/file is not a directory"), "%s", message(e));
	e = clip_error_free(e);
	assert_errno(clip_exec_allow_tree(ctx, AT_FDCWD, NULL, 0, NULL, NULL), -EINVAL);
	assert_errno(clip_exec_allow_tree(ctx, AT_FDCWD, "", 0, NULL, NULL), -EINVAL);
	assert_errno(clip_exec_allow_tree(ctx, AT_FDCWD, dir, 1u << 7, NULL, NULL), -EINVAL);
	assert_errno(clip_exec_allow_tree(ctx, -7, dir, 0, NULL, NULL), -EBADF);
	assert_errno(clip_exec_allow_tree(NULL, AT_FDCWD, dir, 0, NULL, NULL), -EINVAL);

	/* The stats struct: too small, too large, larger and zero-padded. */
	st.size = 8;
	st.files = 42;
	assert_errno(clip_exec_allow_tree(ctx, AT_FDCWD, dir, 0, &st, &e), -EINVAL);
	cr_assert(strstr(message(e), "struct clip_exec_tree_stats of 8 bytes"), "%s", message(e));
	cr_assert_eq(st.files, 42, "stats changed on failure");
	e = clip_error_free(e);
	{
		struct {
			struct clip_exec_tree_stats st;
			uint64_t later;
		} big = { .st.size = sizeof(big), .later = 7 };

		cr_assert_eq(clip_exec_allow_tree(ctx, AT_FDCWD, dir, 0, &big.st, NULL), 0);
		cr_assert_eq(big.st.files, 1);
		cr_assert_eq(big.later, 0);
		big.st.size = 5000;
		assert_errno(clip_exec_allow_tree(ctx, AT_FDCWD, dir, 0, &big.st, NULL), -E2BIG);
	}

	/* Deeper than 128 levels: refused, not a stack to exhaust. */
	snprintf(path, sizeof(path), "%s/deep", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	len = strlen(path);
	for (int i = 0; i < 130 && len + 3 < sizeof(path); i++) {
		memcpy(path + len, "/d", 3);
		len += 2;
		cr_assert_eq(mkdir(path, 0755), 0);
	}
	snprintf(path, sizeof(path), "%s/deep", dir);
	assert_errno(clip_exec_allow_tree(ctx, AT_FDCWD, path, 0, NULL, &e), -ELOOP);
	cr_assert(strstr(message(e), "more than 128 levels of directories"), "%s", message(e));
	e = clip_error_free(e);
	clip_ctx_unref(ctx);
}
