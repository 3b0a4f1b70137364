/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "launcher.h"

static void
log_to_stderr(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	fprintf(stderr, "%s: %s\n", (const char *)userdata, message);
}

static int
log_priority(void)
{
	static const char *const names[] = { "emerg",   "alert",  "crit", "err",
					     "warning", "notice", "info", "debug" };
	const char *v = secure_getenv("CLIP_LOG");

	for (int i = 0; v && i < 8; i++)
		if (strcmp(v, names[i]) == 0)
			return i;
	return LOG_ERR;
}

void
launcher_log_to_stderr(struct clip_ctx *ctx, const char *program)
{
	clip_ctx_set_log_fn(ctx, log_to_stderr, (void *)program);
	clip_ctx_set_log_priority(ctx, log_priority());
}
