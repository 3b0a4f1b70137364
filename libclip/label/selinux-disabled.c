/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The SELinux mapping in a build without libselinux (-Dselinux=disabled):
 * every function keeps its place in the ABI and answers -EOPNOTSUPP with
 * a message; SELinux is never "enabled" for this build.
 */
#include <errno.h>

#include <clip/level.h>
#include <clip/selinux.h>

#include "base/error.h"

static int
no_selinux(struct clip_error **reterr)
{
	return error_set(reterr, -EOPNOTSUPP,
			 "libclip was built without SELinux support (-Dselinux=disabled)");
}

CLIP_EXPORT int
clip_selinux_context_get_level(const char *context, struct clip_level **ret,
			       struct clip_error **reterr)
{
	/* The argument checks of selinux.c, so that misuse is told apart. */
	clip_assert_return(context, api_return(-EINVAL, reterr));
	clip_assert_return(ret, api_return(-EINVAL, reterr));
	clip_assert_reterr(reterr);
	return api_return(no_selinux(reterr), reterr);
}

CLIP_EXPORT int
clip_selinux_context_set_level(const char *context, const struct clip_level *level, char **ret,
			       struct clip_error **reterr)
{
	clip_assert_return(context, api_return(-EINVAL, reterr));
	clip_assert_return(level, api_return(-EINVAL, reterr));
	clip_assert_return(ret, api_return(-EINVAL, reterr));
	clip_assert_reterr(reterr);
	return api_return(no_selinux(reterr), reterr);
}

CLIP_EXPORT int
clip_selinux_is_enabled(void)
{
	return 0;
}

CLIP_EXPORT int
clip_selinux_file_get_level(int fd, struct clip_level **ret, struct clip_error **reterr)
{
	clip_assert_return(fd >= 0, api_return(-EBADF, reterr));
	clip_assert_return(ret, api_return(-EINVAL, reterr));
	clip_assert_reterr(reterr);
	return api_return(no_selinux(reterr), reterr);
}

CLIP_EXPORT int
clip_selinux_file_set_level(int fd, const struct clip_level *level, struct clip_error **reterr)
{
	clip_assert_return(fd >= 0, api_return(-EBADF, reterr));
	clip_assert_return(level, api_return(-EINVAL, reterr));
	clip_assert_reterr(reterr);
	return api_return(no_selinux(reterr), reterr);
}
