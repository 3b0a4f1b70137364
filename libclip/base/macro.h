/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal macros shared by every module: symbol export, cleanup
 * attributes, argument checks. Nothing here is part of the public API.
 */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* Marks a function of the public API; everything else is hidden. */
#define CLIP_EXPORT __attribute__((visibility("default")))

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _likely_(x) (__builtin_expect(!!(x), 1))
#define _unlikely_(x) (__builtin_expect(!!(x), 0))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

static inline void
freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void
closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
#define _cleanup_close_ _cleanup_(closep)

/* Take ownership of a pointer out of a cleanup variable. */
#define steal_ptr(p) \
	({ \
		__typeof__(p) _tmp = (p); \
		(p) = NULL; \
		_tmp; \
	})

#define steal_fd(fd) \
	({ \
		int _tmp = (fd); \
		(fd) = -1; \
		_tmp; \
	})

/* Define a cleanup helper for a type whose destructor returns NULL. */
#define DEFINE_UNREF_CLEANUP(type, func) \
	static inline void func##p(type **p) \
	{ \
		if (*p) \
			func(*p); \
	}

/*
 * Argument checks at the API boundary (sd-bus assert_return): a failed
 * check is a bug in the caller, answered with an error, never a crash.
 */
#define clip_assert_return(expr, r) \
	do { \
		if (_unlikely_(!(expr))) \
			return (r); \
	} while (0)
