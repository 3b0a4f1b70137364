/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

/* Given out when there is no memory for the real message. */
static struct clip_error oom_error = {
	.error = -ENOMEM,
	.offset = -1,
	.is_static = true,
};

/*
 * The closed set of errnos the API returns; each function documents its
 * own subset. Anything else reaching the boundary is a bug or a kernel
 * surprise and is reported as -EFAULT.
 */
/* One group per module, each packed (clang-format would put one per line). */
/* clang-format off */
static const int api_errnos[] = {
	E2BIG,  EACCES, EBADF,       EBADMSG,      ECHILD,  EDQUOT, EFAULT,
	EINVAL, EIO,    EMEDIUMTYPE, ENAMETOOLONG, ENODATA, ENODEV, ENOKEY,
	ENOMEM, ENOSPC, ENOTDIR,     EOPNOTSUPP,   EPERM,   EROFS,
	/* exec: opening and checking a file to interpret */
	EISDIR, ELOOP,  EMFILE,      ENOENT,       ETXTBSY,
	/* cage: a cage of that name is already running; a set-up past StartTimeoutSec=; a relay's signal */
	EEXIST, ETIMEDOUT, EINTR,
	/* transfer: busy audit log, changed or oversized document, no answer yet */
	EAGAIN, EBUSY, ECONNREFUSED, ECONNRESET, EFBIG,
	/* session: no runner answers on the control socket, or it answers nonsense */
	ESRCH, EPROTO,
	/* agent: a question answered already */
	EALREADY,
};
/* clang-format on */

static bool
errno_in_api(int error)
{
	for (size_t i = 0; i < ELEMENTSOF(api_errnos); i++)
		if (api_errnos[i] == error)
			return true;
	return false;
}

static int _printf_(5, 0) error_vsetf(struct clip_error **reterr, int error, int offset,
				      const char *suffix, const char *format, va_list ap)
{
	struct clip_error *e;
	char *text = NULL;
	int n;

	if (!reterr || *reterr)
		return error;

	n = vasprintf(&text, format, ap);
	if (n < 0) {
		*reterr = &oom_error;
		return error;
	}
	e = malloc(sizeof(*e) + (size_t)n + (suffix ? strlen(suffix) + 2 : 0) + 1);
	if (!e) {
		free(text);
		*reterr = &oom_error;
		return error;
	}
	e->error = error;
	e->offset = offset;
	e->is_static = false;
	strcpy(e->message, text);
	if (suffix) {
		strcat(e->message, ": ");
		strcat(e->message, suffix);
	}
	free(text);
	/* Messages are single lines: a caller may log them as they are. */
	for (char *p = e->message; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	*reterr = e;
	return error;
}

int
error_setf(struct clip_error **reterr, int error, int offset, const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	error_vsetf(reterr, error, offset, NULL, format, ap);
	va_end(ap);
	return error;
}

int
error_set_errno(struct clip_error **reterr, int error, const char *format, ...)
{
	char buf[128];
	va_list ap;

	va_start(ap, format);
	error_vsetf(reterr, error, -1, strerror_r(-error, buf, sizeof(buf)), format, ap);
	va_end(ap);
	return error;
}

int
api_return(int r, struct clip_error **reterr)
{
	char buf[128];

	if (r >= 0)
		return r;
	if (!errno_in_api(-r)) {
		error_set(reterr, -EFAULT, "unexpected error: %s",
			  strerror_r(-r, buf, sizeof(buf)));
		r = -EFAULT;
	} else
		error_set(reterr, r, "%s", strerror_r(-r, buf, sizeof(buf)));
	/* The message may come from a deeper layer; the errno is the one returned. */
	if (reterr && *reterr && !(*reterr)->is_static)
		(*reterr)->error = r;
	return r;
}
