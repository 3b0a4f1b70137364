/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The libclip library context, errors and logging.
 *
 * Every module hangs off a struct clip_ctx: it holds the log handler and the
 * state directory; the key provider is chosen with clip/keys.h, which this
 * header includes. Functions return 0 (or a positive
 * value where documented) on success and a negative errno on failure. Where
 * a human-readable reason helps, the last argument is an optional
 * struct clip_error **reterr; pass NULL when the message is not wanted.
 *
 * See clip-ctx(3).
 */
#ifndef CLIP_CTX_H
#define CLIP_CTX_H

#ifdef __cplusplus
extern "C" {
#endif

struct clip_ctx;
struct clip_error;

/**
 * clip_version - the version of the loaded library
 *
 * @return a static string "MAJOR.MINOR.MICRO", never NULL.
 * @since 0.1
 */
const char *clip_version(void);

/**
 * clip_error_get_errno - the negative errno an error carries
 *
 * @param error an error, or NULL
 * @return the negative errno (always < 0), or 0 when @error is NULL.
 * @since 0.1
 */
int clip_error_get_errno(const struct clip_error *error);

/**
 * clip_error_get_message - the message an error carries
 *
 * @param error an error, or NULL
 * @return a NUL-terminated, single-line message owned by @error, never NULL
 *	   ("" when @error is NULL).
 * @since 0.1
 */
const char *clip_error_get_message(const struct clip_error *error);

/**
 * clip_error_get_offset - where in the parsed input an error was found
 *
 * @param error an error, or NULL
 * @return the 0-based byte offset of the offending character for a parser
 *	   error, or -1 when the error is not about a position in an input.
 * @since 0.1
 */
int clip_error_get_offset(const struct clip_error *error);

/**
 * clip_error_free - free an error
 *
 * An error has a single owner: the caller that received it.
 *
 * @param error an error, or NULL (a no-op)
 * @return NULL.
 * @since 0.1
 */
struct clip_error *clip_error_free(struct clip_error *error);

/**
 * clip_ctx_new - create a library context
 *
 * The new context logs nothing (no handler) at priority LOG_ERR, uses the
 * state directory named by $CLIP_STATE_DIR (read with secure_getenv()) or
 * else /var/lib/clip, and the "file" key provider. Nothing is read or
 * created on disk until a function needs it.
 *
 * @param ret where the new context is stored; untouched on failure
 * @return 0, or -EINVAL (@ret is NULL), -ENOMEM.
 * @since 0.1
 */
int clip_ctx_new(struct clip_ctx **ret);

/**
 * clip_ctx_ref - take a reference
 *
 * @param ctx a context, or NULL
 * @return @ctx.
 * @since 0.1
 */
struct clip_ctx *clip_ctx_ref(struct clip_ctx *ctx);

/**
 * clip_ctx_unref - drop a reference; the last one frees the context and
 * wipes the keys it holds
 *
 * @param ctx a context, or NULL (a no-op)
 * @return NULL.
 * @since 0.1
 */
struct clip_ctx *clip_ctx_unref(struct clip_ctx *ctx);

/**
 * clip_log_fn - a log handler
 *
 * @param ctx the context that logs
 * @param priority a syslog(3) priority, LOG_EMERG (0) to LOG_DEBUG (7)
 * @param message one line, without a trailing newline
 * @param userdata as given to clip_ctx_set_log_fn()
 */
typedef void (*clip_log_fn)(struct clip_ctx *ctx, int priority, const char *message,
			    void *userdata);

/**
 * clip_ctx_set_log_fn - set the log handler
 *
 * The library never prints: every diagnostic goes to this handler.
 *
 * @param ctx a context
 * @param fn a handler, or NULL to drop all messages
 * @param userdata passed to @fn
 * @return 0, or -EINVAL, -ECHILD (the context was created before a fork()).
 * @since 0.1
 */
int clip_ctx_set_log_fn(struct clip_ctx *ctx, clip_log_fn fn, void *userdata);

/**
 * clip_ctx_set_log_priority - set the highest priority passed to the handler
 *
 * @param ctx a context
 * @param priority LOG_EMERG (0) to LOG_DEBUG (7)
 * @return 0, or -EINVAL (bad priority), -ECHILD.
 * @since 0.1
 */
int clip_ctx_set_log_priority(struct clip_ctx *ctx, int priority);

/**
 * clip_ctx_get_log_priority - the current log priority
 *
 * @param ctx a context
 * @return the priority (0 to 7), or -EINVAL, -ECHILD.
 * @since 0.1
 */
int clip_ctx_get_log_priority(const struct clip_ctx *ctx);

/**
 * clip_ctx_set_state_dir - set the state directory (keys, later logs)
 *
 * The directory is opened (and created 0700 with its missing parents) only
 * when first needed. Changing it drops any key already loaded.
 *
 * @param ctx a context
 * @param path an absolute path, shorter than PATH_MAX bytes
 * @return 0, or -EINVAL (not absolute, empty or too long), -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_ctx_set_state_dir(struct clip_ctx *ctx, const char *path);

/**
 * clip_ctx_get_state_dir - the state directory
 *
 * @param ctx a context
 * @return the path, owned by @ctx, or NULL when @ctx is invalid.
 * @since 0.1
 */
const char *clip_ctx_get_state_dir(const struct clip_ctx *ctx);

#ifdef __cplusplus
}
#endif

/* clip_ctx_set_key_provider() was declared here before 0.1 had keys.h. */
#include <clip/keys.h>

#endif
