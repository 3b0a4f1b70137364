/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

#include <clip/version.h>

#include "ctx-internal.h"
#include "error.h"
#include "log.h"
#include "test-hooks.h"
#include "util.h"

#define DEFAULT_STATE_DIR "/var/lib/clip"

CLIP_EXPORT const char *
clip_version(void)
{
	return CLIP_VERSION_STRING;
}

CLIP_EXPORT int
clip_ctx_new(struct clip_ctx **ret)
{
	struct clip_ctx *ctx;
	const char *dir;

	clip_assert_return(ret, -EINVAL);

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->n_ref = 1;
	ctx->pid = pid_cached();
	ctx->log.priority = LOG_ERR;

	dir = secure_getenv("CLIP_STATE_DIR");
	if (!dir || dir[0] != '/')
		dir = DEFAULT_STATE_DIR;
	ctx->state_dir = strdup(dir);
	if (!ctx->state_dir) {
		free(ctx);
		return -ENOMEM;
	}
	*ret = ctx;
	return 0;
}

CLIP_EXPORT struct clip_ctx *
clip_ctx_ref(struct clip_ctx *ctx)
{
	if (ctx)
		ctx->n_ref++;
	return ctx;
}

CLIP_EXPORT struct clip_ctx *
clip_ctx_unref(struct clip_ctx *ctx)
{
	if (!ctx || --ctx->n_ref > 0)
		return NULL;
	/* In a forked child the keyring page reads as zeroes (WIPEONFORK). */
	secret_page_free(ctx->keyring);
	free(ctx->state_dir);
	free(ctx);
	return NULL;
}

CLIP_EXPORT int
clip_ctx_set_log_fn(struct clip_ctx *ctx, clip_log_fn fn, void *userdata)
{
	ctx_assert_return(ctx, -EINVAL);

	ctx->log.fn = fn;
	ctx->log.userdata = userdata;
	return 0;
}

CLIP_EXPORT int
clip_ctx_set_log_priority(struct clip_ctx *ctx, int priority)
{
	ctx_assert_return(ctx, -EINVAL);
	ctx_assert_log_return(ctx, priority >= LOG_EMERG && priority <= LOG_DEBUG, -EINVAL);

	ctx->log.priority = priority;
	return 0;
}

CLIP_EXPORT int
clip_ctx_get_log_priority(const struct clip_ctx *ctx)
{
	ctx_assert_return(ctx, -EINVAL);
	return ctx->log.priority;
}

CLIP_EXPORT int
clip_ctx_set_state_dir(struct clip_ctx *ctx, const char *path)
{
	char *copy;

	ctx_assert_return(ctx, -EINVAL);
	ctx_assert_log_return(ctx, path, -EINVAL);
	ctx_assert_log_return(ctx, path[0] == '/', -EINVAL);
	ctx_assert_log_return(ctx, strnlen(path, PATH_MAX) < PATH_MAX, -EINVAL);

	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	free(ctx->state_dir);
	ctx->state_dir = copy;
	ctx_forget_keys(ctx);
	return 0;
}

CLIP_EXPORT const char *
clip_ctx_get_state_dir(const struct clip_ctx *ctx)
{
	if (!ctx || ctx->pid != pid_cached())
		return NULL;
	return ctx->state_dir;
}

int
ctx_forked_error(const struct clip_ctx *ctx, struct clip_error **reterr)
{
	return error_set(reterr, -ECHILD,
			 "the context was made by process %d, not this one (%d): a context does "
			 "not cross fork(), make a new one in the child",
			 (int)ctx->pid, (int)getpid());
}

void
ctx_forget_keys(struct clip_ctx *ctx)
{
	secret_page_wipe(ctx->keyring);
}

int
ctx_new_worker(const struct clip_ctx *parent, clip_log_fn log_fn, void *log_userdata,
	       struct clip_ctx **ret)
{
	struct clip_ctx *ctx = NULL;
	int r;

	r = clip_ctx_new(&ctx);
	if (r < 0)
		return r;
	r = clip_ctx_set_state_dir(ctx, parent->state_dir);
	if (r < 0) {
		clip_ctx_unref(ctx);
		return r;
	}
	ctx->key_provider = parent->key_provider;
	ctx->tpm = parent->tpm;
	ctx->log.priority = parent->log.priority;
	ctx->log.fn = log_fn;
	ctx->log.userdata = log_userdata;
	*ret = ctx;
	return 0;
}

static int
mkdir_parents(const char *path, struct clip_error **reterr)
{
	_cleanup_free_ char *copy = strdup(path);

	if (!copy)
		return -ENOMEM;
	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			return error_set_errno(reterr, -errno, "cannot create %s", copy);
		*p = '/';
	}
	return 0;
}

/* Before the walk (test hook "state-dir-walk" off): by path, symbolic links followed. */
static int
state_dir_open_by_path(struct clip_ctx *ctx, bool create, struct clip_error **reterr)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	fd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		r = mkdir_parents(ctx->state_dir, reterr);
		if (r < 0)
			return r;
		if (mkdir(ctx->state_dir, 0700) < 0 && errno != EEXIST)
			return error_set_errno(reterr, -errno, "cannot create state directory %s",
					       ctx->state_dir);
		fd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0) {
		/* The caller knows what a missing directory means. */
		if (errno == ENOENT)
			return -ENOENT;
		return error_set_errno(reterr, -errno, "cannot open state directory %s",
				       ctx->state_dir);
	}
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid())
		return error_set(reterr, -EPERM,
				 "state directory %s is owned by uid %u, not by uid %u",
				 ctx->state_dir, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return error_set(reterr, -EPERM,
				 "state directory %s is writable by group or others (mode %04o)",
				 ctx->state_dir, (unsigned)(st.st_mode & 07777));
	return steal_fd(fd);
}

int
ctx_open_state_dir(struct clip_ctx *ctx, bool create, struct clip_error **reterr)
{
	if (test_hook_disabled("state-dir-walk"))
		return state_dir_open_by_path(ctx, create, reterr);
	return dir_open_walk(ctx->state_dir, create, "state directory", reterr);
}
