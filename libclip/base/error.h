/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal side of struct clip_error.
 *
 * The rule every module follows: an internal function that fails returns a
 * negative errno and, when it has something useful to say, calls
 * error_setf() with the caller's reterr. The first (most specific) message
 * wins. Every exported function ends with api_return(), which maps errnos
 * outside the library's closed set to -EFAULT (libseccomp's _rc_filter)
 * and guarantees that a failure with a non-NULL reterr always carries a
 * message.
 */
#pragma once

#include <stdbool.h>

#include <clip/ctx.h>

#include "macro.h"

/*
 * An error as allocated by error_setf() and freed by clip_error_free():
 * the layout both sides of libclip.so's boundary share.
 */
struct clip_error {
	int error;
	int offset;
	bool is_static; /* the out-of-memory error, never freed */
	char message[];
};

/*
 * Store an error in *reterr unless one is there already. @error is a
 * negative errno, @offset a position in a parsed input or -1.
 * Returns @error, so that callers can write `return error_setf(...)`.
 */
int error_setf(struct clip_error **reterr, int error, int offset, const char *format, ...)
	_printf_(4, 5);

#define error_set(reterr, error, ...) error_setf(reterr, error, -1, __VA_ARGS__)

/* As error_setf() with the text of errno @error appended after ": ". */
int error_set_errno(struct clip_error **reterr, int error, const char *format, ...) _printf_(3, 4);

/* Filter at the API boundary; see above. */
int api_return(int r, struct clip_error **reterr);

/* reterr, when given, must point to NULL on entry. */
#define clip_assert_reterr(reterr) clip_assert_return(!(reterr) || !*(reterr), -EINVAL)

DEFINE_UNREF_CLEANUP(struct clip_error, clip_error_free)
