/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Logging through the context's handler; the library never prints. */
#pragma once

#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

struct clip_ctx;

/*
 * Whether a message of @priority would reach the handler: for callers that
 * build a costly message only when it is wanted. The one reader of the
 * handler besides clip_log().
 */
bool log_enabled(const struct clip_ctx *ctx, int priority);

void clip_log(const struct clip_ctx *ctx, int priority, const char *format, ...) _printf_(3, 4);

#define log_err(ctx, ...) clip_log(ctx, LOG_ERR, __VA_ARGS__)
#define log_warning(ctx, ...) clip_log(ctx, LOG_WARNING, __VA_ARGS__)
#define log_notice(ctx, ...) clip_log(ctx, LOG_NOTICE, __VA_ARGS__)
#define log_info(ctx, ...) clip_log(ctx, LOG_INFO, __VA_ARGS__)
#define log_debug(ctx, ...) clip_log(ctx, LOG_DEBUG, __VA_ARGS__)

/* A misuse of the API by the caller: logged, then answered with @r. */
#define ctx_assert_log_return(ctx, expr, r) \
	do { \
		if (_unlikely_(!(expr))) { \
			log_err(ctx, "client bug: %s: assertion '%s' failed", __func__, #expr); \
			return (r); \
		} \
	} while (0)
