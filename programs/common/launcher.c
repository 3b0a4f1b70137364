/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "launcher.h"

static struct {
	const char *program;
	int priority;
	volatile sig_atomic_t forked;
} launcher;

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

static void
after_fork_in_child(void)
{
	launcher.forked = 1;
}

int
launcher_ctx_new(const char *program, struct clip_ctx **ret)
{
	int r;

	r = pthread_atfork(NULL, NULL, after_fork_in_child);
	if (r != 0)
		return -r;
	r = clip_ctx_new(ret);
	if (r < 0)
		return r;
	launcher_log_to_stderr(*ret, program);
	/* Kept for the child's context: the environment may change after start. */
	launcher.program = program;
	launcher.priority = clip_ctx_get_log_priority(*ret);
	return 0;
}

struct clip_ctx *
launcher_ctx(struct clip_ctx **ctx)
{
	struct clip_ctx *fresh = NULL;

	if (!launcher.forked)
		return *ctx;
	launcher.forked = 0;
	/* A fork that ran no atfork handler (a raw clone) is not seen: -ECHILD then. */
	if (clip_ctx_get_log_priority(*ctx) != -ECHILD || clip_ctx_new(&fresh) < 0)
		return *ctx;
	clip_ctx_set_log_fn(fresh, log_to_stderr, (void *)launcher.program);
	clip_ctx_set_log_priority(fresh, launcher.priority);
	clip_ctx_unref(*ctx);
	*ctx = fresh;
	return fresh;
}

void
launcher_report_refusal(const char *what, int error, const char *text)
{
	int r = clip_transfer_report(NULL, CLIP_TRANSFER_REPORT_EXEC_REFUSED, what, error, text,
				     NULL);

	if (r == -EINVAL && text) /* a message that is not one line of UTF-8: the file alone */
		(void)clip_transfer_report(NULL, CLIP_TRANSFER_REPORT_EXEC_REFUSED, what, error,
					   NULL, NULL);
}
