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
		if (p)
			abort();
		fuzz_check_refusal(r, err, size, "fuzz", (const int[]){ -EINVAL, -E2BIG, 0 });
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
