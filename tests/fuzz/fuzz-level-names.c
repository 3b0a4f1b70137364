/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clip_level_names_parse() on arbitrary bytes (not NUL-terminated); an
 * accepted table is then used both ways with a few fixed names and levels.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <clip/ctx.h>
#include <clip/level.h>

#include "fuzz.h"

static const char *const probes[] = {
	"s0", "s15:c0.c1023", "s2:c0.c3", "A", "Secret", "TopSecret", "Unclassified", "s", "-",
};

/* A name found in the table must map back to itself, a level to its name. */
static void
probe(const struct clip_level_names *names, const char *text)
{
	struct clip_level *level = NULL, *again = NULL;
	char *name = NULL;

	if (clip_level_parse_name(&level, names, text, NULL) < 0)
		return;
	if (clip_level_format_name(level, names, &name) < 0)
		abort();
	if (clip_level_parse_name(&again, names, name, NULL) < 0)
		abort();
	if (clip_level_equal(level, again) != 1)
		abort();
	free(name);
	clip_level_unref(level);
	clip_level_unref(again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct clip_level_names *names = NULL;
	struct clip_error *err = NULL;
	int r;

	r = clip_level_names_parse(&names, (const char *)data, size, &err);
	if (r < 0) {
		fuzz_check_refusal(r, err, size, NULL, (const int[]){ -EINVAL, -E2BIG, 0 });
		return 0;
	}
	if (err)
		abort();
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		probe(names, probes[i]);
	clip_level_names_unref(names);
	return 0;
}
