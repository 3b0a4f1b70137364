/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What clip-python and clip-perl share: how they show the library's log. */
#pragma once

#include <clip/clip.h>

/*
 * Send @ctx's log to stderr as "PROGRAM: message", at the priority named
 * by $CLIP_LOG (err|warning|notice|info|debug; read with secure_getenv),
 * LOG_ERR by default. @program must outlive @ctx.
 */
void launcher_log_to_stderr(struct clip_ctx *ctx, const char *program);
