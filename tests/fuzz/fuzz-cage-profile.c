/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clip_cage_profile_parse() on arbitrary bytes (not NUL-terminated). A
 * refusal carries its errno and an offset inside the input; an accepted
 * profile formats to text that parses back to the same text.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <clip/cage.h>
#include <clip/ctx.h>

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct clip_cage_profile *p = NULL, *q = NULL;
	struct clip_error *err = NULL;
	char *a = NULL, *b = NULL;
	int r;

	r = clip_cage_profile_parse(&p, "fuzz", (const char *)data, size, &err);
	if (r < 0) {
		int offset = clip_error_get_offset(err);

		if ((r != -EINVAL && r != -E2BIG) || clip_error_get_errno(err) != r || p)
			abort();
		if (offset < -1 || (offset >= 0 && (size_t)offset > size))
			abort();
		if (strncmp(clip_error_get_message(err), "fuzz", 4) != 0)
			abort();
		clip_error_free(err);
		return 0;
	}
	if (err || !p)
		abort();
	if (clip_cage_profile_format(p, &a) < 0)
		abort();
	if (clip_cage_profile_parse(&q, "again", a, strlen(a), NULL) < 0)
		abort();
	if (clip_cage_profile_format(q, &b) < 0 || strcmp(a, b) != 0)
		abort();
	free(a);
	free(b);
	clip_cage_profile_unref(p);
	clip_cage_profile_unref(q);
	return 0;
}
