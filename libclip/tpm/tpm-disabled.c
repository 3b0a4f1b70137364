/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tpm module in a build without tpm2-tss (-Dtpm=disabled): every
 * function keeps its place in the ABI and answers -EOPNOTSUPP, with a
 * message that says why, so that a caller learns it from the library and
 * not from a missing symbol. The "tpm" key provider is refused by
 * keys/keyring.c in the same words.
 */
#include <errno.h>
#include <stdint.h>

#include <clip/tpm.h>

#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/log.h"
#include "tpm.h"

#define NO_TPM "libclip was built without TPM support (-Dtpm=disabled)"

static int
no_tpm(struct clip_error **reterr)
{
	return error_set(reterr, -EOPNOTSUPP, NO_TPM);
}

/* What every exported function with a reterr answers, after the usual checks. */
static int
refuse(const struct clip_ctx *ctx, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	return api_return(no_tpm(reterr), reterr);
}

int
tpm_measure(struct clip_ctx *ctx, const char *what, const void *data, size_t size,
	    struct clip_error **reterr)
{
	return no_tpm(reterr);
}

CLIP_EXPORT int
clip_ctx_set_tpm_options(struct clip_ctx *ctx, const struct clip_tpm_opts *opts)
{
	ctx_assert_return(ctx, -EINVAL);
	log_err(ctx, "%s", NO_TPM);
	return -EOPNOTSUPP;
}

CLIP_EXPORT int
clip_ctx_get_tpm_options(const struct clip_ctx *ctx, struct clip_tpm_opts *opts)
{
	ctx_assert_return(ctx, -EINVAL);
	log_err(ctx, "%s", NO_TPM);
	return -EOPNOTSUPP;
}

CLIP_EXPORT int
clip_tpm_get_info(struct clip_ctx *ctx, char **ret, struct clip_error **reterr)
{
	return refuse(ctx, reterr);
}

CLIP_EXPORT int
clip_tpm_pcr_read(struct clip_ctx *ctx, unsigned pcr, uint8_t ret_digest[32],
		  struct clip_error **reterr)
{
	return refuse(ctx, reterr);
}

CLIP_EXPORT int
clip_tpm_seal_key(struct clip_ctx *ctx, unsigned flags, struct clip_error **reterr)
{
	return refuse(ctx, reterr);
}

CLIP_EXPORT int
clip_tpm_check_key(struct clip_ctx *ctx, uint32_t *ret_pcrs, struct clip_error **reterr)
{
	return refuse(ctx, reterr);
}

CLIP_EXPORT int
clip_tpm_measure(struct clip_ctx *ctx, const char *what, const void *data, size_t size,
		 struct clip_error **reterr)
{
	return refuse(ctx, reterr);
}

CLIP_EXPORT int
clip_tpm_replay(struct clip_ctx *ctx, clip_tpm_event_fn fn, void *userdata,
		struct clip_error **reterr)
{
	return refuse(ctx, reterr);
}

int
tpm_counter_read(struct clip_ctx *ctx, uint32_t index, uint64_t *ret, struct clip_error **reterr)
{
	return no_tpm(reterr);
}

int
tpm_counter_define(struct clip_ctx *ctx, uint32_t index, uint64_t *ret, struct clip_error **reterr)
{
	return no_tpm(reterr);
}

int
tpm_counter_increment(struct clip_ctx *ctx, uint32_t index, uint64_t *ret,
		      struct clip_error **reterr)
{
	return no_tpm(reterr);
}

int
tpm_counter_undefine(struct clip_ctx *ctx, uint32_t index, struct clip_error **reterr)
{
	return no_tpm(reterr);
}
