/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Levels as the MLS part of SELinux contexts. libselinux's context API
 * (context_new() and friends) parses and rebuilds contexts without needing
 * SELinux to run; only the file functions need it enabled. They use the
 * _raw calls: a translated context ("SystemLow") is not a level.
 * libselinux is loaded on first use (dl.h): linked, it cost every process
 * that links libclip about 0.3 ms at start-up (with libpcre2 and its
 * constructor's search for selinuxfs).
 */
#include <errno.h>
#include <string.h>

#include <selinux/context.h>
#include <selinux/selinux.h>

#include <clip/level.h>
#include <clip/selinux.h>

#include "base/macro.h"
#include "base/dl.h"
#include "base/error.h"

#define SELINUX_FUNCTIONS(X) \
	X(context_free) \
	X(context_new) \
	X(context_range_get) \
	X(context_range_set) \
	X(context_str) \
	X(fgetfilecon_raw) \
	X(freecon) \
	X(fsetfilecon_raw) \
	X(is_selinux_enabled)

SELINUX_FUNCTIONS(DL_DEFINE)
static const struct dl_symbol symbols[] = { SELINUX_FUNCTIONS(DL_ENTRY) };
static const struct dl_library libraries[] = { { "libselinux.so.1", symbols,
						 ELEMENTSOF(symbols) } };
static struct dl_set selinux = DL_SET("libselinux", libraries);

/* Bound on a context we accept, as the kernel bounds xattr values. */
#define CONTEXT_MAX 4096

static void
context_freep(context_t *c)
{
	if (*c)
		sym_context_free(*c);
}

static void
freeconp(char **p)
{
	if (*p)
		sym_freecon(*p);
}

static int
context_parse(const char *untrusted_context, context_t *ret, struct clip_error **reterr)
{
	context_t c;
	int r = dl_load(&selinux, reterr);

	if (r < 0)
		return r;
	if (strnlen(untrusted_context, CONTEXT_MAX) >= CONTEXT_MAX)
		return error_set(reterr, -EINVAL, "SELinux context is too long");
	c = sym_context_new(untrusted_context);
	if (!c) {
		if (errno == ENOMEM)
			return -ENOMEM;
		return error_set(reterr, -EINVAL, "malformed SELinux context \"%.128s\"",
				 untrusted_context);
	}
	*ret = c;
	return 0;
}

static int
context_get_level(const char *untrusted_context, struct clip_level **ret,
		  struct clip_error **reterr)
{
	_cleanup_(context_freep) context_t c = NULL;
	_cleanup_free_ char *low = NULL;
	const char *range, *dash;
	int r;

	r = context_parse(untrusted_context, &c, reterr);
	if (r < 0)
		return r;
	range = sym_context_range_get(c);
	if (!range || !*range)
		return error_set(reterr, -EINVAL, "SELinux context \"%.128s\" has no MLS part",
				 untrusted_context);
	/* The low level of a range is the current level of a subject or object. */
	dash = strchr(range, '-');
	low = dash ? strndup(range, (size_t)(dash - range)) : strdup(range);
	if (!low)
		return -ENOMEM;
	r = clip_level_parse(ret, low, NULL);
	if (r == -EINVAL)
		return error_set(reterr, -EINVAL,
				 "MLS part \"%.128s\" of the SELinux context is not a level",
				 range);
	return r;
}

CLIP_EXPORT int
clip_selinux_context_get_level(const char *context, struct clip_level **ret,
			       struct clip_error **reterr)
{
	clip_assert_return(context, api_return(-EINVAL, reterr));
	clip_assert_return(ret, api_return(-EINVAL, reterr));
	clip_assert_reterr(reterr);

	return api_return(context_get_level(context, ret, reterr), reterr);
}

static int
context_set_level(const char *untrusted_context, const struct clip_level *level, char **ret,
		  struct clip_error **reterr)
{
	_cleanup_(context_freep) context_t c = NULL;
	_cleanup_free_ char *text = NULL;
	const char *s;
	char *copy;
	int r;

	r = context_parse(untrusted_context, &c, reterr);
	if (r < 0)
		return r;
	r = clip_level_format(level, &text);
	if (r < 0)
		return r;
	if (sym_context_range_set(c, text) < 0)
		return errno == ENOMEM ? -ENOMEM : error_set(reterr, -EINVAL, "cannot set range");
	s = sym_context_str(c);
	if (!s)
		return -ENOMEM;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	*ret = copy;
	return 0;
}

CLIP_EXPORT int
clip_selinux_context_set_level(const char *context, const struct clip_level *level, char **ret,
			       struct clip_error **reterr)
{
	clip_assert_return(context, api_return(-EINVAL, reterr));
	clip_assert_return(level, api_return(-EINVAL, reterr));
	clip_assert_return(ret, api_return(-EINVAL, reterr));
	clip_assert_reterr(reterr);

	return api_return(context_set_level(context, level, ret, reterr), reterr);
}

CLIP_EXPORT int
clip_selinux_is_enabled(void)
{
	/* Without libselinux, SELinux cannot be used from here. */
	return dl_load(&selinux, NULL) == 0 && sym_is_selinux_enabled() > 0;
}

static int
require_selinux(struct clip_error **reterr)
{
	int r = dl_load(&selinux, reterr);

	if (r < 0)
		return r;
	if (sym_is_selinux_enabled() <= 0)
		return error_set(reterr, -EOPNOTSUPP, "SELinux is not enabled on this host");
	return 0;
}

/* The file's raw context, where SELinux is on. */
static int
file_context(int fd, char **ret, struct clip_error **reterr)
{
	int r = require_selinux(reterr);

	if (r < 0)
		return r;
	if (sym_fgetfilecon_raw(fd, ret) < 0)
		return error_set_errno(reterr, -errno, "cannot read security.selinux");
	return 0;
}

static int
file_get_level(int fd, struct clip_level **ret, struct clip_error **reterr)
{
	_cleanup_(freeconp) char *con = NULL;
	int r = file_context(fd, &con, reterr);

	return r < 0 ? r : context_get_level(con, ret, reterr);
}

CLIP_EXPORT int
clip_selinux_file_get_level(int fd, struct clip_level **ret, struct clip_error **reterr)
{
	clip_assert_return(fd >= 0, api_return(-EBADF, reterr));
	clip_assert_return(ret, api_return(-EINVAL, reterr));
	clip_assert_reterr(reterr);

	return api_return(file_get_level(fd, ret, reterr), reterr);
}

static int
file_set_level(int fd, const struct clip_level *level, struct clip_error **reterr)
{
	_cleanup_(freeconp) char *con = NULL;
	_cleanup_free_ char *new_con = NULL;
	int r;

	r = file_context(fd, &con, reterr);
	if (r < 0)
		return r;
	r = context_set_level(con, level, &new_con, reterr);
	if (r < 0)
		return r;
	if (sym_fsetfilecon_raw(fd, new_con) < 0)
		return error_set_errno(reterr, -errno, "cannot write security.selinux");
	return 0;
}

CLIP_EXPORT int
clip_selinux_file_set_level(int fd, const struct clip_level *level, struct clip_error **reterr)
{
	clip_assert_return(fd >= 0, api_return(-EBADF, reterr));
	clip_assert_return(level, api_return(-EINVAL, reterr));
	clip_assert_reterr(reterr);

	return api_return(file_set_level(fd, level, reterr), reterr);
}
