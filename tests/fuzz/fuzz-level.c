/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clip_level_parse() and clip_range_parse() on arbitrary bytes: never
 * crash, and whatever is accepted formats to a text that parses back to an
 * equal value and formats to itself.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <clip/ctx.h>
#include <clip/level.h>

#include "fuzz.h"

static void
check_error(int r, struct clip_error *err, size_t len)
{
	int offset = clip_error_get_offset(err);

	if (r != -EINVAL || clip_error_get_errno(err) != r || !*clip_error_get_message(err))
		abort();
	/* The offending character is in the text, or its end. */
	if (offset < 0 || (size_t)offset > len)
		abort();
	clip_error_free(err);
}

static void
check_level(const struct clip_level *level)
{
	struct clip_level *again = NULL;
	char *text = NULL, *text2 = NULL;

	if (clip_level_format(level, &text) < 0)
		abort();
	if (clip_level_parse(&again, text, NULL) < 0)
		abort();
	if (clip_level_equal(level, again) != 1)
		abort();
	if (clip_level_format(again, &text2) < 0 || strcmp(text, text2) != 0)
		abort();
	free(text);
	free(text2);
	clip_level_unref(again);
}

static void
check_range(const struct clip_range *range)
{
	const struct clip_level *low = clip_range_get_low(range);
	const struct clip_level *high = clip_range_get_high(range);
	struct clip_range *again = NULL;
	char *text = NULL, *text2 = NULL;

	if (clip_level_dominates(high, low) != 1)
		abort();
	if (clip_range_contains(range, low) != 1 || clip_range_contains(range, high) != 1)
		abort();
	check_level(low);
	check_level(high);
	if (clip_range_format(range, &text) < 0)
		abort();
	if (clip_range_parse(&again, text, NULL) < 0)
		abort();
	if (clip_level_equal(low, clip_range_get_low(again)) != 1 ||
	    clip_level_equal(high, clip_range_get_high(again)) != 1)
		abort();
	if (clip_range_format(again, &text2) < 0 || strcmp(text, text2) != 0)
		abort();
	free(text);
	free(text2);
	clip_range_unref(again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct clip_level *level = NULL;
	struct clip_range *range = NULL;
	struct clip_error *err = NULL;
	size_t len;
	char *text;
	int r;

	/* Past the bound the parsers refuse at once; nothing to learn. */
	if (size > CLIP_LEVEL_TEXT_MAX + 16)
		return 0;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	len = strlen(text);

	r = clip_level_parse(&level, text, &err);
	if (r == 0) {
		if (err)
			abort();
		check_level(level);
		clip_level_unref(level);
	} else
		check_error(r, err, len);

	err = NULL;
	r = clip_range_parse(&range, text, &err);
	if (r == 0) {
		check_range(range);
		clip_range_unref(range);
	} else
		check_error(r, err, len);

	free(text);
	return 0;
}
