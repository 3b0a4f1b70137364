/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctx-internal.h"
#include "log.h"

bool
log_enabled(const struct clip_ctx *ctx, int priority)
{
	return ctx && ctx->log.fn && priority <= ctx->log.priority;
}

void
clip_log(const struct clip_ctx *ctx, int priority, const char *format, ...)
{
	char stackbuf[512];
	char *heap = NULL;
	const char *msg = stackbuf;
	va_list ap;
	int n;

	if (!log_enabled(ctx, priority))
		return;

	va_start(ap, format);
	n = vsnprintf(stackbuf, sizeof(stackbuf), format, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(stackbuf)) {
		va_start(ap, format);
		n = vasprintf(&heap, format, ap);
		va_end(ap);
		if (n >= 0)
			msg = heap;
	}
	/* The handler may keep a reference but cannot change our state. */
	ctx->log.fn((struct clip_ctx *)ctx, priority, msg, ctx->log.userdata);
	free(heap);
}
