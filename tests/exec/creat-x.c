/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LD_PRELOAD for tests/exec/regrtest.sh: a file created by open(),
 * openat() or creat() gets the x bit wherever it gets the r bit (0666 ->
 * 0777, before the umask). CPython's tests write the modules, scripts and
 * archives they then run; under SECBIT_EXEC_RESTRICT_FILE clip-python
 * refuses those, being 0644, as it must (tests/exec/python.sh shows it).
 * With this both python3 and clip-python run the same tests on files
 * deployed executable, and what differs is how their loaders behave.
 */
/* The real names, not the macros and inline wrappers that these select. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

static mode_t
with_x(mode_t mode)
{
	return mode | ((mode & 0444) >> 2);
}

static int
needs_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

#define EXPORT __attribute__((visibility("default")))

#define WRAP_OPEN(name) \
	EXPORT int name(const char *path, int flags, ...) \
	{ \
		static int (*next)(const char *, int, ...); \
		mode_t mode = 0; \
		if (!next) \
			next = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name); \
		if (needs_mode(flags)) { \
			va_list ap; \
			va_start(ap, flags); \
			mode = va_arg(ap, mode_t); \
			va_end(ap); \
		} \
		return next(path, flags, with_x(mode)); \
	}

#define WRAP_OPENAT(name) \
	EXPORT int name(int dirfd, const char *path, int flags, ...) \
	{ \
		static int (*next)(int, const char *, int, ...); \
		mode_t mode = 0; \
		if (!next) \
			next = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, #name); \
		if (needs_mode(flags)) { \
			va_list ap; \
			va_start(ap, flags); \
			mode = va_arg(ap, mode_t); \
			va_end(ap); \
		} \
		return next(dirfd, path, flags, with_x(mode)); \
	}

WRAP_OPEN(open)
WRAP_OPEN(open64)
WRAP_OPENAT(openat)
WRAP_OPENAT(openat64)

EXPORT int
creat(const char *path, mode_t mode)
{
	return open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

EXPORT int
creat64(const char *path, mode_t mode)
{
	return open64(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}
