/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* clipctl level: compare and format levels. Pure: no context, no state. */
#include <stdio.h>
#include <string.h>

#include "clipctl.h"

static int
level_check(struct clipctl *c, int argc, char **argv)
{
	static const char *const words[] = {
		[CLIP_LEVEL_EQUAL] = "equal",
		[CLIP_LEVEL_DOMINATES] = "dominates",
		[CLIP_LEVEL_DOMINATED] = "dominates",
		[CLIP_LEVEL_INCOMPARABLE] = "incomparable",
	};
	struct clip_level *a = NULL, *b = NULL;
	int r, cmp;

	if (argc != 2)
		return fail_usage("level check takes two levels");
	r = parse_level(c, argv[0], &a);
	if (r == 0)
		r = parse_level(c, argv[1], &b);
	if (r == 0) {
		cmp = clip_level_compare(a, b);
		/* The dominating level is written first. */
		r = print_level(c, cmp == CLIP_LEVEL_DOMINATED ? b : a, " ");
		printf("%s ", words[cmp]);
		if (r == 0)
			r = print_level(c, cmp == CLIP_LEVEL_DOMINATED ? a : b, "\n");
	}
	clip_level_unref(a);
	clip_level_unref(b);
	return r;
}

static int
level_format(struct clipctl *c, int argc, char **argv)
{
	struct clip_level *level = NULL;
	int r;

	if (argc != 1)
		return fail_usage("level format takes one level");
	r = parse_level(c, argv[0], &level);
	if (r == 0)
		r = print_level(c, level, "\n");
	clip_level_unref(level);
	return r;
}

int
clipctl_level(struct clipctl *c, int argc, char **argv)
{
	if (strcmp(argv[0], "check") == 0)
		return level_check(c, argc - 1, argv + 1);
	if (strcmp(argv[0], "format") == 0)
		return level_format(c, argc - 1, argv + 1);
	return fail_usage("unknown command 'level %s'", argv[0]);
}
