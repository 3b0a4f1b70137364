/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The library context, as modules see it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <clip/ctx.h>

#include "macro.h"

#define CLIP_KEY_SIZE 32

/* Purposes of the keys derived from the master key: one key, one use. */
enum key_purpose {
	KEY_PURPOSE_LABEL,
	KEY_PURPOSE_AUDIT, /* audit records and their anchor (audit.c) */
	KEY_PURPOSE_ENVELOPE, /* per-target envelope keys (deliver.c) */
	_KEY_PURPOSE_MAX,
};

struct key_provider;

/*
 * Secrets live in their own page, excluded from core dumps and wiped in a
 * forked child (MADV_DONTDUMP, MADV_WIPEONFORK), so a child that forgets
 * the -ECHILD rule still holds no key.
 */
struct keyring {
	uint8_t master[CLIP_KEY_SIZE];
	uint8_t derived[_KEY_PURPOSE_MAX][CLIP_KEY_SIZE];
	bool loaded;
	bool derived_ok[_KEY_PURPOSE_MAX];
};

struct clip_ctx {
	unsigned n_ref;
	pid_t pid;

	clip_log_fn log_fn;
	void *log_userdata;
	int log_priority;

	char *state_dir;
	const struct key_provider *key_provider;
	struct keyring *keyring;

	/* clip_ctx_set_tpm_options() (tpm.c); all zero means the defaults. */
	struct tpm_config {
		char tcti[256];
		uint32_t seal_pcrs;
		uint32_t measure_pcr;
		uint32_t fallback;
	} tpm;
};

/* The checks every exported function on a context starts with. */
#define ctx_assert_return(ctx, r) \
	do { \
		clip_assert_return(ctx, r); \
		clip_assert_return((ctx)->pid == getpid(), -ECHILD); \
	} while (0)

/* The same for functions with a reterr (checked first: clip_assert_reterr()). */
#define ctx_assert_return_error(ctx, reterr) \
	do { \
		clip_assert_return(ctx, api_return(-EINVAL, reterr)); \
		clip_assert_return((ctx)->pid == getpid(), api_return(-ECHILD, reterr)); \
	} while (0)

/*
 * Open the state directory, creating it 0700 (with missing parents) when
 * @create. Refused (-EPERM) when not owned by the effective uid or when
 * writable by group or others. A missing directory (without @create) is
 * -ENOENT with no message: what it means is the caller's to say.
 */
int ctx_open_state_dir(struct clip_ctx *ctx, bool create, struct clip_error **reterr);

/*
 * The key for @purpose, derived from the provider's master key, loaded on
 * first use and cached in the context. @create lets the provider create a
 * master key that does not exist yet (signing does, verifying does not).
 */
int ctx_get_key(struct clip_ctx *ctx, enum key_purpose purpose, bool create, const uint8_t **ret,
		struct clip_error **reterr);

/* Drop every cached key (wiped). */
void ctx_forget_keys(struct clip_ctx *ctx);

DEFINE_UNREF_CLEANUP(struct clip_ctx, clip_ctx_unref)
