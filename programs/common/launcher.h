/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What clip-python and clip-perl share: how they show the library's log,
 * and their context across fork().
 */
#pragma once

#include <clip/clip.h>

/*
 * Send @ctx's log to stderr as "PROGRAM: message", at the priority named
 * by $CLIP_LOG (err|warning|notice|info|debug; read with secure_getenv),
 * LOG_ERR by default. @program must outlive @ctx.
 */
void launcher_log_to_stderr(struct clip_ctx *ctx, const char *program);

/*
 * The launcher's context: made here, its log sent to stderr as
 * launcher_log_to_stderr() does. 0 or a negative errno.
 */
int launcher_ctx_new(const char *program, struct clip_ctx **ret);

/*
 * The context for this process: *ctx, or in a child after fork() a new
 * one, with the same log, that replaces it.
 *
 * A context belongs to the process that made it (clip-ctx(3): -ECHILD in
 * a child), so that no child acts on state its parent set up, keys
 * included. The interpreters' children go on importing (multiprocessing,
 * perl's fork), and the exec check needs no state: the child makes its
 * own context on first use, reading nothing by path (clip_ctx_new() reads
 * only $CLIP_STATE_DIR, with secure_getenv), and drops the parent's. A
 * pthread_atfork() handler only raises a flag (async-signal-safe), so the
 * call costs nothing until a fork, and the new context is made in the
 * child's own time, not in the fork, with whatever lock another thread of
 * the parent held left alone. Not thread-safe, as a context is not.
 * Returns the context, the parent's (which answers -ECHILD) when a new one
 * cannot be made.
 */
struct clip_ctx *launcher_ctx(struct clip_ctx **ctx);

/*
 * Tell the core that @what was refused as code (clip_transfer_report()),
 * for the user to see: when this process runs in a cage with a mediator
 * ($CLIP_TRANSFER_SOCKET, else /run/clip/transfer.sock); nothing happens
 * when it does not, or when the mediator's socket is full. @error is the
 * refusal's errno (0 if none), @text the library's message or NULL.
 * Never blocks.
 */
void launcher_report_refusal(const char *what, int error, const char *text);
