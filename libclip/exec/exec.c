/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * W^X for interpreters: the kernel's exec check on a file descriptor, the
 * exec securebits, and the decision table of the kernel's
 * Documentation/userspace-api/check_exec.rst. doc/exec.md explains what an
 * interpreter built on this covers and what it does not.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <clip/exec.h>

#include "base/ctx-internal.h"
#include "base/error.h"
#include "exec-internal.h"
#include "base/log.h"
#include "base/test-hooks.h"

/*
 * valgrind (3.19) does not know AT_EXECVE_CHECK: it turns the call into an
 * execve() of the file under itself, running it instead of checking it.
 */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define under_valgrind() (RUNNING_ON_VALGRIND != 0)
#endif
#endif
#ifndef under_valgrind
#define under_valgrind() false
#endif

bool
exec_under_valgrind(void)
{
	return under_valgrind();
}

/* The installed headers may predate Linux 6.14. */
#ifndef AT_EXECVE_CHECK
#define AT_EXECVE_CHECK 0x10000
#endif
#ifndef SECBIT_EXEC_RESTRICT_FILE
#define SECBIT_EXEC_RESTRICT_FILE (1u << 8)
#endif
#ifndef SECBIT_EXEC_DENY_INTERACTIVE
#define SECBIT_EXEC_DENY_INTERACTIVE (1u << 10)
#endif

#define NAME_MAX_SHOWN 200

/*
 * 0: not probed yet; else CLIP_EXEC_CHECK_NATIVE or _DEGRADED: what the
 * kernel knows, and what the check uses (degraded under valgrind too).
 */
static int kernel_support, check_support;

void
exec_forget_probe(void)
{
	__atomic_store_n(&check_support, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&kernel_support, 0, __ATOMIC_RELAXED);
}

static int
execveat_check(int fd, const char *argv0)
{
	/* A real argv and an empty envp, as for a script run directly. */
	char *const argv[] = { (char *)argv0, NULL };
	char *const envp[] = { NULL };

	if (syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH | AT_EXECVE_CHECK) < 0)
		return -errno;
	/* Success without the flag would have replaced this process: not reached. */
	return 0;
}

static int
probe_support(struct clip_ctx *ctx)
{
	int s = __atomic_load_n(&check_support, __ATOMIC_RELAXED), r;
	bool valgrind = under_valgrind();

	if (s != 0)
		return s;
	/*
	 * fd -1 with AT_EMPTY_PATH can execute nothing: a kernel that knows
	 * the flag answers -EBADF, an older one rejects the flag with
	 * -EINVAL before it looks at the file (a kernel without execveat,
	 * or a filter that hides it, gives -ENOSYS).
	 */
	r = valgrind ? -EBADF : execveat_check(-1, "clip-exec-probe");
	s = (r == -EINVAL || r == -ENOSYS) ? CLIP_EXEC_CHECK_DEGRADED : CLIP_EXEC_CHECK_NATIVE;
	__atomic_store_n(&kernel_support, s, __ATOMIC_RELAXED);
	if (valgrind)
		s = CLIP_EXEC_CHECK_DEGRADED;
	__atomic_store_n(&check_support, s, __ATOMIC_RELAXED);
	if (valgrind)
		log_warning(ctx, "running under valgrind, which would execute the file instead of "
				 "checking it: exec checks are degraded to file type, noexec mount "
				 "and execute permission");
	else if (s == CLIP_EXEC_CHECK_DEGRADED)
		log_warning(ctx,
			    "the kernel has no AT_EXECVE_CHECK (Linux < 6.14): exec checks are "
			    "degraded to file type, noexec mount and execute permission");
	else
		log_debug(ctx, "exec checks use AT_EXECVE_CHECK");
	return s;
}

static int
degraded_check(int fd)
{
	char path[64];
	struct statvfs sv;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	if (fstatvfs(fd, &sv) < 0)
		return -errno;
	if (sv.f_flag & ST_NOEXEC)
		return -EACCES;
	if (faccessat(fd, "", X_OK, AT_EACCESS | AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return errno == EACCES || errno == EPERM ? -EACCES : -errno;
	/* Kernels before 5.8 have no faccessat2(): ask through /proc. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) < 0)
		return errno == EPERM ? -EACCES : -errno;
	return 0;
}

const char *
exec_shown_name(const char *name, int fd, char *buf, size_t size)
{
	size_t i = 0;

	if (!name) {
		snprintf(buf, size, "file descriptor %d", fd);
		return buf;
	}
	for (; name[i] && i + 4 < size && i < NAME_MAX_SHOWN; i++)
		buf[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
	if (name[i])
		buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
	buf[i] = '\0';
	return buf;
}

static const char *
file_type(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a pipe or FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFLNK:
		return "a symbolic link";
	default:
		return "not a regular file";
	}
}

/*
 * Why the check said no, as far as userspace can tell: the kernel only
 * answers an errno, so the reason is found again from the file.
 */
static void
explain(int fd, int r, char *buf, size_t size)
{
	struct statvfs sv;
	struct stat st = { 0 };

	if (r == -ETXTBSY) {
		snprintf(buf, size, "it is open for writing");
		return;
	}
	if (r == -EPERM) {
		snprintf(buf, size,
			 "the system's execution policy refused it (a fanotify listener "
			 "such as fapolicyd)");
		return;
	}
	if (r != -EACCES) {
		snprintf(buf, size, "%s", strerror(-r));
		return;
	}
	if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode))
		snprintf(buf, size, "it is %s", file_type(st.st_mode));
	else if (fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_NOEXEC))
		snprintf(buf, size, "its file system is mounted noexec");
	else if (faccessat(fd, "", X_OK, AT_EACCESS | AT_EMPTY_PATH) < 0 && errno == EACCES)
		snprintf(buf, size, "it is not executable by this user (mode %04o)",
			 (unsigned)(st.st_mode & 07777));
	else
		snprintf(buf, size, "a security module refused it");
}

int
exec_check(struct clip_ctx *ctx, int fd, const char *name)
{
	int r;

	if (probe_support(ctx) == CLIP_EXEC_CHECK_NATIVE) {
		r = execveat_check(fd, name ? name : "clip-exec-check");
		/* An fd that is not open fails the lookup of "" with -EBADF or -ENOENT. */
		if (r == -ENOENT && fcntl(fd, F_GETFD) < 0)
			r = -EBADF;
	} else
		r = degraded_check(fd);
	/* -EFAULT or -E2BIG would mean a bug here: fail closed, as a refusal. */
	if (r == -EFAULT || r == -E2BIG || r == -ENOEXEC || r == -ELOOP || r == -ENOENT)
		r = -EACCES;
	return test_hook_disabled("exec-check") && r != -EBADF ? 0 : r;
}

static int
refusal(struct clip_ctx *ctx, int fd, int r, const char *name, const char *why_enforced,
	struct clip_error **reterr)
{
	char shown[NAME_MAX_SHOWN + 8], reason[160];
	bool degraded =
		__atomic_load_n(&check_support, __ATOMIC_RELAXED) == CLIP_EXEC_CHECK_DEGRADED;

	if (!reterr && !log_enabled(ctx, LOG_WARNING))
		return r;
	explain(fd, r, reason, sizeof(reason));
	exec_shown_name(name, fd, shown, sizeof(shown));
	log_warning(ctx, "refused to run %s as code: %s (%s%s)", shown, reason, why_enforced,
		    degraded ? ", degraded check" : "");
	return error_set(reterr, r, "%s may not run as code: %s (%s%s)", shown, reason,
			 why_enforced, degraded ? ", degraded check" : "");
}

static void
would_refuse(struct clip_ctx *ctx, int fd, int r, const char *name, const char *bit)
{
	char shown[NAME_MAX_SHOWN + 8], reason[160];

	if (!log_enabled(ctx, LOG_NOTICE))
		return;
	explain(fd, r, reason, sizeof(reason));
	log_notice(ctx, "%s fails the exec check (%s): allowed, but %s would refuse it",
		   exec_shown_name(name, fd, shown, sizeof(shown)), reason, bit);
}

static int
check_fd(struct clip_ctx *ctx, int fd, struct clip_error **reterr)
{
	char reason[160];
	int r;

	r = exec_check(ctx, fd, NULL);
	if (r == -EBADF)
		return error_set(reterr, r, "bad file descriptor %d", fd);
	if (r < 0 && reterr) {
		explain(fd, r, reason, sizeof(reason));
		error_set(reterr, r, "%s", reason);
	}
	log_debug(ctx, "exec check of file descriptor %d: %s", fd,
		  r < 0 ? strerror(-r) : "allowed");
	return r;
}

static unsigned
policy(unsigned flags)
{
	int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);

	/* Only a broken seccomp filter fails this: then enforce everything. */
	if (bits < 0)
		return CLIP_EXEC_RESTRICT_FILE | CLIP_EXEC_DENY_INTERACTIVE;
	return ((unsigned)bits | flags) & (CLIP_EXEC_RESTRICT_FILE | CLIP_EXEC_DENY_INTERACTIVE);
}

int
exec_may_run_file(struct clip_ctx *ctx, int fd, const char *name, unsigned flags,
		  struct clip_error **reterr)
{
	char shown[NAME_MAX_SHOWN + 8];
	int r;

	r = exec_check(ctx, fd, name);
	if (r == -EBADF)
		return error_set(reterr, r, "bad file descriptor %d", fd);
	if (r == -ENOMEM)
		return error_set(reterr, r, "out of memory for the exec check");
	if (r == 0) {
		if (log_enabled(ctx, LOG_DEBUG))
			log_debug(ctx, "%s passes the exec check",
				  exec_shown_name(name, fd, shown, sizeof(shown)));
		return 0;
	}
	if (policy(flags) & CLIP_EXEC_RESTRICT_FILE)
		return refusal(ctx, fd, r, name, "SECBIT_EXEC_RESTRICT_FILE", reterr);
	would_refuse(ctx, fd, r, name, "SECBIT_EXEC_RESTRICT_FILE");
	return 1;
}

static int
may_run_interactive(struct clip_ctx *ctx, int fd, const char *what, unsigned flags,
		    struct clip_error **reterr)
{
	bool deny = policy(flags) & CLIP_EXEC_DENY_INTERACTIVE;
	int r;

	if (!what)
		what = fd < 0 ? "code given on the command line" : "interactive input";
	if (fd < 0) {
		if (!deny) {
			log_debug(ctx, "%s: interactive code allowed", what);
			return 0;
		}
		log_warning(ctx,
			    "refused to run %s: interactive code is denied "
			    "(SECBIT_EXEC_DENY_INTERACTIVE)",
			    what);
		return error_set(reterr, -EACCES,
				 "%s is interactive code, denied (SECBIT_EXEC_DENY_INTERACTIVE)",
				 what);
	}
	r = exec_check(ctx, fd, what);
	if (r == -EBADF)
		return error_set(reterr, r, "bad file descriptor %d", fd);
	if (r == -ENOMEM)
		return error_set(reterr, r, "out of memory for the exec check");
	if (r == 0) {
		log_debug(ctx, "%s passes the exec check", what);
		return 0;
	}
	if (deny)
		return refusal(ctx, fd, r, what, "SECBIT_EXEC_DENY_INTERACTIVE", reterr);
	would_refuse(ctx, fd, r, what, "SECBIT_EXEC_DENY_INTERACTIVE");
	return 1;
}

static int
get_securebits(unsigned *ret)
{
	int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);

	if (bits < 0)
		return -errno;
	*ret = (unsigned)bits;
	return 0;
}

static int
set_securebits(struct clip_ctx *ctx, unsigned bits, struct clip_error **reterr)
{
	static const struct {
		unsigned bit, lock;
		const char *name;
	} pairs[] = {
		{ CLIP_EXEC_RESTRICT_FILE, CLIP_EXEC_RESTRICT_FILE_LOCKED,
		  "SECBIT_EXEC_RESTRICT_FILE" },
		{ CLIP_EXEC_DENY_INTERACTIVE, CLIP_EXEC_DENY_INTERACTIVE_LOCKED,
		  "SECBIT_EXEC_DENY_INTERACTIVE" },
	};
	unsigned cur = 0, want;
	int r;

	probe_support(ctx);
	if (__atomic_load_n(&kernel_support, __ATOMIC_RELAXED) != CLIP_EXEC_CHECK_NATIVE)
		return error_set(reterr, -EOPNOTSUPP,
				 "the kernel has no exec securebits (Linux < 6.14)");
	r = get_securebits(&cur);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot read the securebits");
	want = cur | bits;
	for (size_t i = 0; i < ELEMENTSOF(pairs); i++)
		if ((bits & pairs[i].bit) && !(cur & pairs[i].bit) && (cur & pairs[i].lock))
			return error_set(reterr, -EPERM, "%s is locked off", pairs[i].name);
	/* Without CAP_SETPCAP the kernel refuses a call that changes nothing. */
	if (want == cur)
		return 0;
	if (prctl(PR_SET_SECUREBITS, (unsigned long)want, 0, 0, 0) < 0)
		return error_set_errno(reterr, -errno, "cannot set the securebits to %#x", want);
	log_info(ctx, "securebits %#x -> %#x", cur, want);
	return 0;
}

static int
open_file(int dirfd, const char *path, bool magiclinks)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = magiclinks ? 0 : RESOLVE_NO_MAGICLINKS,
	};
	static bool no_openat2;
	int fd;

	/* valgrind (3.19) does not know openat2() and complains of it. */
	if (!__atomic_load_n(&no_openat2, __ATOMIC_RELAXED) && !under_valgrind()) {
		fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != ENOSYS)
			return fd >= 0 ? fd : -errno;
		__atomic_store_n(&no_openat2, true, __ATOMIC_RELAXED);
	}
	/* Before Linux 5.6: no way to refuse magic links, but the check still applies. */
	fd = openat(dirfd, path, (int)how.flags);
	return fd >= 0 ? fd : -errno;
}

int
exec_open(struct clip_ctx *ctx, int dirfd, const char *path, unsigned flags,
	  struct clip_error **reterr)
{
	_cleanup_close_ int fd = -1;
	char shown[NAME_MAX_SHOWN + 8];
	struct stat st;
	int r, fl;

	fd = open_file(dirfd, path, flags & CLIP_EXEC_OPEN_MAGICLINKS);
	if (fd < 0) {
		r = fd;
		exec_shown_name(path, -1, shown, sizeof(shown));
		if (r == -ELOOP && !(flags & CLIP_EXEC_OPEN_MAGICLINKS))
			return error_set(reterr, r,
					 "cannot open %s: too many symbolic links, or a /proc "
					 "magic link",
					 shown);
		return error_set_errno(reterr, r, "cannot open %s", shown);
	}
	if (fstat(fd, &st) < 0)
		return error_set_errno(reterr, -errno, "cannot stat %s",
				       exec_shown_name(path, -1, shown, sizeof(shown)));
	if (S_ISDIR(st.st_mode))
		return error_set(reterr, -EISDIR, "%s is a directory",
				 exec_shown_name(path, -1, shown, sizeof(shown)));
	/* O_NONBLOCK only kept the open from hanging on a FIFO. */
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return error_set_errno(reterr, -errno, "cannot make %s blocking",
				       exec_shown_name(path, -1, shown, sizeof(shown)));
	r = exec_may_run_file(ctx, fd, path, flags & ~CLIP_EXEC_OPEN_MAGICLINKS, reterr);
	if (r < 0)
		return r;
	return steal_fd(fd);
}

static int
read_all(int fd, size_t max, char **ret, size_t *ret_size, struct clip_error **reterr)
{
	_cleanup_free_ char *buf = NULL;
	size_t size = 0, alloc;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return error_set_errno(reterr, -errno, "cannot stat file descriptor %d", fd);
	if (S_ISDIR(st.st_mode))
		return error_set(reterr, -EISDIR, "file descriptor %d is a directory", fd);
	if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max)
		return error_set(reterr, -E2BIG, "the file is larger than %zu bytes", max);
	/* One byte more than the size, so that one read sees the end of file. */
	alloc = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 64 * 1024;
	if (alloc > max + 1)
		alloc = max + 1;
	buf = malloc(alloc + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		/* alloc <= max + 1, and size > max stops the loop: this grows. */
		if (size == alloc) {
			char *p;

			alloc = alloc > max / 2 ? max + 1 : 2 * alloc;
			p = realloc(buf, alloc + 1);
			if (!p)
				return -ENOMEM;
			buf = p;
		}
		n = read(fd, buf + size, alloc - size);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return error_set(reterr, -EINVAL,
						 "file descriptor %d is non-blocking", fd);
			if (errno == EISDIR || errno == EBADF || errno == EINVAL)
				return error_set_errno(reterr, -errno,
						       "cannot read file descriptor %d", fd);
			return error_set_errno(reterr, -EIO, "cannot read file descriptor %d", fd);
		}
		if (n == 0)
			break;
		size += (size_t)n;
		if (size > max)
			return error_set(reterr, -E2BIG, "the file is larger than %zu bytes", max);
	}
	buf[size] = '\0';
	*ret = steal_ptr(buf);
	*ret_size = size;
	return 0;
}

CLIP_EXPORT int
clip_exec_check_support(struct clip_ctx *ctx)
{
	ctx_assert_return(ctx, -EINVAL);

	return probe_support(ctx);
}

CLIP_EXPORT int
clip_exec_check_fd(struct clip_ctx *ctx, int fd, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, fd >= 0, api_return(-EBADF, reterr));

	return api_return(check_fd(ctx, fd, reterr), reterr);
}

CLIP_EXPORT int
clip_exec_get_securebits(struct clip_ctx *ctx, unsigned *ret)
{
	unsigned bits = 0;
	int r;

	ctx_assert_return(ctx, -EINVAL);
	ctx_assert_log_return(ctx, ret, -EINVAL);

	r = get_securebits(&bits);
	if (r < 0)
		return api_return(r, NULL);
	*ret = bits & CLIP_EXEC_SECUREBITS;
	return 0;
}

CLIP_EXPORT int
clip_exec_set_securebits(struct clip_ctx *ctx, unsigned bits, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, (bits & ~CLIP_EXEC_SECUREBITS) == 0,
			      api_return(-EINVAL, reterr));

	return api_return(set_securebits(ctx, bits, reterr), reterr);
}

#define POLICY_FLAGS (CLIP_EXEC_RESTRICT_FILE | CLIP_EXEC_DENY_INTERACTIVE)

CLIP_EXPORT int
clip_exec_may_run_file(struct clip_ctx *ctx, int fd, const char *name, unsigned flags,
		       struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, fd >= 0, api_return(-EBADF, reterr));
	ctx_assert_log_return(ctx, (flags & ~POLICY_FLAGS) == 0, api_return(-EINVAL, reterr));

	return api_return(exec_may_run_file(ctx, fd, name, flags, reterr), reterr);
}

CLIP_EXPORT int
clip_exec_may_run_interactive(struct clip_ctx *ctx, int fd, const char *what, unsigned flags,
			      struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, fd >= -1, api_return(-EBADF, reterr));
	ctx_assert_log_return(ctx, (flags & ~POLICY_FLAGS) == 0, api_return(-EINVAL, reterr));

	return api_return(may_run_interactive(ctx, fd, what, flags, reterr), reterr);
}

CLIP_EXPORT int
clip_exec_open(struct clip_ctx *ctx, int dirfd, const char *path, unsigned flags,
	       struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, dirfd >= 0 || dirfd == AT_FDCWD, api_return(-EBADF, reterr));
	ctx_assert_log_return(ctx, path && *path, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, strnlen(path, PATH_MAX) < PATH_MAX,
			      api_return(-ENAMETOOLONG, reterr));
	ctx_assert_log_return(ctx, (flags & ~(POLICY_FLAGS | CLIP_EXEC_OPEN_MAGICLINKS)) == 0,
			      api_return(-EINVAL, reterr));

	return api_return(exec_open(ctx, dirfd, path, flags, reterr), reterr);
}

CLIP_EXPORT int
clip_exec_read_all(struct clip_ctx *ctx, int fd, size_t max, char **ret, size_t *ret_size,
		   struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, fd >= 0, api_return(-EBADF, reterr));
	ctx_assert_log_return(ctx, ret && ret_size, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, max < SIZE_MAX - 1, api_return(-EINVAL, reterr));

	return api_return(read_all(fd, max ? max : CLIP_EXEC_READ_MAX, ret, ret_size, reterr),
			  reterr);
}
