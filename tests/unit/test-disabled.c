/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A build with parts left out (-Dtpm=disabled, -Dselinux=disabled,
 * -Dlsm=disabled): every
 * function of those parts is still there and answers -EOPNOTSUPP with a
 * message that names the build option. Built only where a part is out.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include <clip/clip.h>

#include "config.h"
#include "helpers.h"

/* -EOPNOTSUPP and a message that says which option left it out. */
#define assert_left_out(expr, e, option) \
	do { \
		assert_errno(expr, -EOPNOTSUPP); \
		cr_assert(e &&strstr(clip_error_get_message(e), option), "message: %s", \
			  clip_error_get_message(e)); \
		e = clip_error_free(e); \
	} while (0)

#if !HAVE_TPM
static char logged[512];

static void
keep(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	snprintf(logged, sizeof(logged), "%s", message);
}

Test(disabled, every_tpm_function_says_the_build_has_no_tpm)
{
	struct clip_tpm_opts o = { .size = sizeof(o) };
	struct clip_ctx *ctx = test_ctx(NULL);
	struct clip_error *e = NULL;
	uint8_t digest[32];
	uint32_t pcrs;
	char *info = NULL;

	cr_assert_eq(clip_ctx_set_log_fn(ctx, keep, NULL), 0);
	assert_errno(clip_ctx_set_key_provider(ctx, "tpm"), -EOPNOTSUPP);
	cr_assert(strstr(logged, "-Dtpm=disabled"), "logged: %s", logged);
	cr_assert_str_eq(clip_ctx_get_key_provider(ctx), "file");
	logged[0] = '\0';
	assert_errno(clip_ctx_set_tpm_options(ctx, &o), -EOPNOTSUPP);
	cr_assert(strstr(logged, "-Dtpm=disabled"), "logged: %s", logged);
	assert_errno(clip_ctx_get_tpm_options(ctx, &o), -EOPNOTSUPP);

	assert_left_out(clip_tpm_get_info(ctx, &info, &e), e, "-Dtpm=disabled");
	cr_assert_null(info);
	assert_left_out(clip_tpm_pcr_read(ctx, 23, digest, &e), e, "-Dtpm=disabled");
	assert_left_out(clip_tpm_seal_key(ctx, 0, &e), e, "-Dtpm=disabled");
	assert_left_out(clip_tpm_check_key(ctx, &pcrs, &e), e, "-Dtpm=disabled");
	assert_left_out(clip_tpm_measure(ctx, "x", "y", 1, &e), e, "-Dtpm=disabled");
	assert_left_out(clip_tpm_replay(ctx, NULL, NULL, &e), e, "-Dtpm=disabled");
	/* Misuse is still told apart from the missing part. */
	assert_errno(clip_tpm_get_info(NULL, &info, NULL), -EINVAL);
	assert_errno(clip_tpm_measure(NULL, "x", "y", 1, NULL), -EINVAL);
	clip_ctx_unref(ctx);
}

Test(disabled, a_cage_that_must_be_measured_does_not_start_without_the_tpm)
{
	static const char text[] = "[Cage]\nName=a\n[Security]\nMeasure=yes\n";
	struct clip_cage_profile *p = NULL;
	struct clip_ctx *ctx = test_ctx(NULL);
	struct clip_cage *c = NULL;
	struct clip_error *e = NULL;

	cr_assert_eq(clip_cage_profile_parse(&p, "t.cage", text, strlen(text), NULL), 0);
	cr_assert_eq(clip_cage_new(&c, ctx, p, NULL), 0);
	assert_left_out(clip_cage_start(c, 0, &e), e, "-Dtpm=disabled");
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_NEW);
	clip_cage_unref(c);
	clip_cage_profile_unref(p);
	clip_ctx_unref(ctx);
}
#endif

#if !HAVE_SELINUX
Test(disabled, every_selinux_function_says_the_build_has_no_selinux)
{
	struct clip_level *l = NULL;
	struct clip_error *e = NULL;
	char *con = NULL;

	cr_assert_eq(clip_level_parse(&l, "s1:c2", NULL), 0);
	cr_assert_eq(clip_selinux_is_enabled(), 0);
	assert_left_out(clip_selinux_context_get_level("u:r:t:s1", &l, &e), e,
			"-Dselinux=disabled");
	assert_left_out(clip_selinux_context_set_level("u:r:t:s0", l, &con, &e), e,
			"-Dselinux=disabled");
	cr_assert_null(con);
	assert_left_out(clip_selinux_file_get_level(0, &l, &e), e, "-Dselinux=disabled");
	assert_left_out(clip_selinux_file_set_level(0, l, &e), e, "-Dselinux=disabled");
	/* Misuse is still told apart from the missing part. */
	assert_errno(clip_selinux_context_get_level(NULL, &l, NULL), -EINVAL);
	assert_errno(clip_selinux_file_get_level(-1, &l, NULL), -EBADF);
	clip_level_unref(l);
}
#endif

#if !HAVE_LSM
Test(disabled, every_lsm_function_says_the_build_has_no_lsm)
{
	struct clip_ctx *ctx = test_ctx(NULL);
	struct clip_error *e = NULL;

	assert_left_out(clip_lsm_load(ctx, &e), e, "-Dlsm=disabled");
	assert_left_out(clip_lsm_unload(ctx, &e), e, "-Dlsm=disabled");
	assert_errno(clip_lsm_status(ctx), -EOPNOTSUPP);
	/* Misuse is still told apart from the missing part. */
	assert_errno(clip_lsm_status(NULL), -EINVAL);
	assert_errno(clip_lsm_load(NULL, NULL), -EINVAL);
	clip_ctx_unref(ctx);
}
#endif
