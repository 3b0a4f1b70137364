/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* clipctl lsm: load, query and unload the BPF LSM (clip-lsm(3), doc/lsm.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clipctl.h"

int
clipctl_lsm(struct clipctl *c, int argc, char **argv)
{
	struct clip_error *error = NULL;
	const char *verb = argv[0];
	struct clip_ctx *ctx;
	int r;

	if (strcmp(verb, "load") != 0 && strcmp(verb, "status") != 0 && strcmp(verb, "unload") != 0)
		return fail_usage("unknown command 'lsm %s'", verb);
	if (argc != 1)
		return fail_usage("lsm %s takes no argument", verb);
	ctx = clipctl_ctx(c);
	if (!ctx)
		return EXIT_USAGE;
	if (strcmp(verb, "status") == 0) {
		r = clip_lsm_status(ctx);
		if (r == -EOPNOTSUPP)
			say(stdout, "lsm: not built in (-Dlsm=disabled)");
		else
			say(stdout, "lsm: %s",
			    r == 1 ? "loaded (" CLIP_LSM_PIN_DIR ")" : "not loaded");
		clip_ctx_unref(ctx);
		return r == 1 ? EXIT_SUCCESS : EXIT_FAILURE;
	}
	if (strcmp(verb, "load") == 0) {
		r = clip_lsm_load(ctx, &error);
		if (r >= 0)
			say(stdout, "lsm: %s " CLIP_LSM_PIN_DIR,
			    r == 1 ? "already loaded in" : "loaded and pinned in");
	} else {
		r = clip_lsm_unload(ctx, &error);
		if (r >= 0)
			say(stdout, "lsm: unloaded");
	}
	clip_ctx_unref(ctx);
	if (r < 0)
		return fail_error(strcmp(verb, "load") == 0 ? "cannot load the BPF LSM"
							    : "cannot unload the BPF LSM",
				  r, error);
	return EXIT_SUCCESS;
}
