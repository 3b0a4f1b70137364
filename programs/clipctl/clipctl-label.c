/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* clipctl label: set, get, verify and remove file labels. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clipctl.h"

int
clipctl_label(struct clipctl *c, int argc, char **argv)
{
	static const char *const verbs[] = { "set", "get", "verify", "remove" };
	const char *verb = argv[0];
	struct clip_level *level = NULL;
	struct clip_error *error = NULL;
	struct clip_ctx *ctx = NULL;
	bool known = false;
	int fd = -1, r;

	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		known |= strcmp(verb, verbs[i]) == 0;
	if (!known)
		return fail_usage("unknown command 'label %s'", verb);
	argc--;
	argv++;
	if (strcmp(verb, "set") == 0 ? argc != 2 : argc != 1)
		return fail_usage("wrong number of arguments for label %s", verb);
	if (strcmp(verb, "set") == 0) {
		r = parse_level(c, argv[1], &level);
		if (r != 0)
			return r;
	}
	ctx = clipctl_ctx(c);
	if (!ctx) {
		r = EXIT_USAGE;
		goto out;
	}
	r = open_file(argv[0], OPEN_REGULAR_OR_DIR, &fd);
	if (r != 0)
		goto out;

	if (strcmp(verb, "set") == 0)
		r = clip_label_set(ctx, fd, level, c->label_flags, &error);
	else if (strcmp(verb, "remove") == 0)
		r = clip_label_remove(ctx, fd, c->label_flags, &error);
	else
		r = clip_label_get(ctx, fd, c->label_flags, &level, &error);
	if (r < 0) {
		r = fail_error(argv[0], r, error);
		goto out;
	}
	if (strcmp(verb, "get") == 0)
		r = print_level(c, level, "\n");
	else if (strcmp(verb, "verify") == 0) {
		put_name(stdout, argv[0]);
		printf(": valid (");
		r = print_level(c, level, ")\n");
	}
out:
	if (fd >= 0)
		close(fd);
	clip_level_unref(level);
	clip_ctx_unref(ctx);
	return r;
}
