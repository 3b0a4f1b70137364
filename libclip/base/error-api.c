/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The exported side of struct clip_error. Apart from error.c so that the
 * programs' internal library (programs/meson.build), which reports errors
 * with error_setf(), carries no copy of an exported function: what they
 * free, they free with libclip.so's clip_error_free().
 */
#include <stdlib.h>

#include "error.h"

CLIP_EXPORT int
clip_error_get_errno(const struct clip_error *error)
{
	return error ? error->error : 0;
}

CLIP_EXPORT const char *
clip_error_get_message(const struct clip_error *error)
{
	if (!error)
		return "";
	/* The only static error is the one given out when memory ran out. */
	if (error->is_static)
		return "out of memory";
	return error->message;
}

CLIP_EXPORT int
clip_error_get_offset(const struct clip_error *error)
{
	return error ? error->offset : -1;
}

CLIP_EXPORT struct clip_error *
clip_error_free(struct clip_error *error)
{
	if (error && !error->is_static)
		free(error);
	return NULL;
}
