/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The library context, as modules see it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <clip/ctx.h>

#include "macro.h"
#include "util.h"

#define CLIP_KEY_SIZE 32

struct key_provider;
struct keyring;

/* Settings of the tpm module (clip_ctx_set_tpm_options()); all zero means the defaults. */
struct tpm_config {
	char tcti[256];
	uint32_t seal_pcrs;
	uint32_t measure_pcr;
	uint32_t fallback;
};

/*
 * The context holds what every module needs (the log, the state directory,
 * the pid it was made in) and keeps, for the modules above base, the state
 * they attach to a context without base reading it:
 * - keys/: the provider chosen and the keyring, one secret page
 *   (secret_page_new()) that base wipes when the state directory changes
 *   and frees with the context;
 * - tpm/: its settings, read only through tpm/'s accessors;
 * - cage/: the cage mode, root or rootless (cage-mode.c);
 * - label/: the identities of the file systems it verified labels on.
 * Only log.c reads the log handler.
 */
struct clip_ctx {
	unsigned n_ref;
	pid_t pid;

	struct {
		clip_log_fn fn;
		void *userdata;
		int priority;
	} log;

	char *state_dir;

	const struct key_provider *key_provider; /* NULL: the key file */
	struct keyring *keyring; /* a secret page, or NULL */

	struct tpm_config tpm;

	/* cage/: the mode asked (CLIP_CAGE_MODE_*), and the one decided (0: not yet) */
	int cage_mode;
	int cage_mode_decided;

	/* label/: file systems' identities by unique mount id (label.c, fs_seen_*()) */
	struct {
		uint64_t mnt_id;
		uint64_t fs_type;
		uint32_t fsid[2];
	} fs_seen[4];
	unsigned fs_seen_next;
};

/* The checks every exported function on a context starts with. */
#define ctx_assert_return(ctx, r) \
	do { \
		clip_assert_return(ctx, r); \
		clip_assert_return((ctx)->pid == pid_cached(), -ECHILD); \
	} while (0)

/*
 * The same for functions with a reterr (checked first: clip_assert_reterr()),
 * where -ECHILD says why: a context used in a forked child.
 */
#define ctx_assert_return_error(ctx, reterr) \
	do { \
		clip_assert_return(ctx, api_return(-EINVAL, reterr)); \
		clip_assert_return((ctx)->pid == pid_cached(), ctx_forked_error(ctx, reterr)); \
	} while (0)

/*
 * -ECHILD, and a message naming the process that made @ctx: a context
 * belongs to it, and a child after fork() makes its own (clip-ctx(3)).
 * Nothing of @ctx but its pid is read, and nothing is logged: its log
 * handler is the parent's.
 */
int ctx_forked_error(const struct clip_ctx *ctx, struct clip_error **reterr);

/*
 * Open the state directory, creating it 0700 (with missing parents, 0700)
 * when @create: dir_open_walk() (base/util.h), component by component
 * without following a symbolic link, each owned by root or the effective
 * uid and not writable by others, the directory itself owned by the
 * effective uid. Every file in it is then opened relative to the
 * descriptor, with O_NOFOLLOW. A missing directory (without @create) is
 * -ENOENT with no message: what it means is the caller's to say.
 * Test hook "state-dir-walk" (off: opened by path, as before).
 */
int ctx_open_state_dir(struct clip_ctx *ctx, bool create, struct clip_error **reterr);

/* Wipe the context's cached keys: the next use loads them again. */
void ctx_forget_keys(struct clip_ctx *ctx);

/*
 * A new context with the settings of @parent (state directory, key
 * provider, TPM settings, log priority) and its own log handler: what a
 * worker thread gets instead of sharing its parent's. Keys are not
 * copied; the worker loads its own on first use.
 */
int ctx_new_worker(const struct clip_ctx *parent, clip_log_fn log_fn, void *log_userdata,
		   struct clip_ctx **ret);

DEFINE_UNREF_CLEANUP(struct clip_ctx, clip_ctx_unref)
