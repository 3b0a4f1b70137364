/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The context, the error model and logging: the conventions every module uses. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "base/ctx-internal.h"
#include "config.h"
#include "base/error.h"
#include "base/util.h"
#include "keys/key.h"
#include "helpers.h"

Test(ctx, new_ref_unref)
{
	struct clip_ctx *ctx = NULL;

	cr_assert_eq(clip_ctx_new(&ctx), 0);
	cr_assert_not_null(ctx);
	cr_assert_eq(clip_ctx_ref(ctx), ctx);
	cr_assert_null(clip_ctx_unref(ctx));
	/* Still alive: one reference left. */
	cr_assert_eq(clip_ctx_get_log_priority(ctx), LOG_ERR);
	cr_assert_null(clip_ctx_unref(ctx));
}

Test(ctx, null_is_harmless)
{
	cr_assert_null(clip_ctx_ref(NULL));
	cr_assert_null(clip_ctx_unref(NULL));
	cr_assert_null(clip_error_free(NULL));
	assert_errno(clip_ctx_new(NULL), -EINVAL);
	assert_errno(clip_ctx_set_log_priority(NULL, LOG_DEBUG), -EINVAL);
	assert_errno(clip_ctx_get_log_priority(NULL), -EINVAL);
	cr_assert_null(clip_ctx_get_state_dir(NULL));
	cr_assert_eq(clip_error_get_errno(NULL), 0);
	cr_assert_str_eq(clip_error_get_message(NULL), "");
	cr_assert_eq(clip_error_get_offset(NULL), -1);
}

Test(ctx, version_matches_headers)
{
	cr_assert_str_eq(clip_version(), CLIP_VERSION_STRING);
	cr_assert(CLIP_VERSION_AT_LEAST(0, 1, 0));
	cr_assert_not(CLIP_VERSION_AT_LEAST(CLIP_VERSION_MAJOR + 1, 0, 0));
}

Test(ctx, state_dir_default_and_env)
{
	struct clip_ctx *ctx = NULL;

	/* tests/meson.build sets CLIP_STATE_DIR for every test. */
	cr_assert_eq(clip_ctx_new(&ctx), 0);
	cr_assert_str_eq(clip_ctx_get_state_dir(ctx), getenv("CLIP_STATE_DIR"));
	clip_ctx_unref(ctx);

	cr_assert_eq(setenv("CLIP_STATE_DIR", "relative/dir", 1), 0);
	cr_assert_eq(clip_ctx_new(&ctx), 0);
	cr_assert_str_eq(clip_ctx_get_state_dir(ctx), "/var/lib/clip",
			 "a relative $CLIP_STATE_DIR must be ignored");
	clip_ctx_unref(ctx);
}

Test(ctx, state_dir_must_be_absolute)
{
	struct clip_ctx *ctx = test_ctx(NULL);
	char longpath[5000];

	assert_errno(clip_ctx_set_state_dir(ctx, "relative"), -EINVAL);
	assert_errno(clip_ctx_set_state_dir(ctx, ""), -EINVAL);
	assert_errno(clip_ctx_set_state_dir(ctx, NULL), -EINVAL);
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	assert_errno(clip_ctx_set_state_dir(ctx, longpath), -EINVAL);
	cr_assert_eq(clip_ctx_set_state_dir(ctx, "/srv/clip"), 0);
	cr_assert_str_eq(clip_ctx_get_state_dir(ctx), "/srv/clip");
	clip_ctx_unref(ctx);
}

Test(ctx, key_provider)
{
	struct clip_ctx *ctx = test_ctx(NULL);

	cr_assert_str_eq(clip_ctx_get_key_provider(ctx), "file");
	assert_errno(clip_ctx_set_key_provider(ctx, "nonsense"), -EOPNOTSUPP);
	assert_errno(clip_ctx_set_key_provider(ctx, NULL), -EINVAL);
	cr_assert_eq(clip_ctx_set_key_provider(ctx, "file"), 0);
	cr_assert_str_eq(clip_ctx_get_key_provider(ctx), "file");
	clip_ctx_unref(ctx);
}

struct captured {
	int n;
	int last_priority;
	char last[256];
};

static void
capture(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	struct captured *c = userdata;

	c->n++;
	c->last_priority = priority;
	snprintf(c->last, sizeof(c->last), "%s", message);
}

Test(ctx, log_handler_gets_client_bugs_at_priority)
{
	struct captured c = { 0 };
	struct clip_ctx *ctx = NULL;

	cr_assert_eq(clip_ctx_new(&ctx), 0);
	cr_assert_eq(clip_ctx_set_log_fn(ctx, capture, &c), 0);
	/* A bad priority is a client bug: refused and logged at LOG_ERR. */
	assert_errno(clip_ctx_set_log_priority(ctx, 8), -EINVAL);
	assert_errno(clip_ctx_set_log_priority(ctx, -1), -EINVAL);
	cr_assert_eq(c.n, 2);
	cr_assert_eq(c.last_priority, LOG_ERR);
	cr_assert(strstr(c.last, "client bug"), "message: %s", c.last);
	cr_assert(strstr(c.last, "clip_ctx_set_log_priority"), "message: %s", c.last);

	/* Below the priority: dropped. */
	cr_assert_eq(clip_ctx_set_log_priority(ctx, LOG_EMERG), 0);
	assert_errno(clip_ctx_set_state_dir(ctx, "relative"), -EINVAL);
	cr_assert_eq(c.n, 2);

	/* No handler: nothing is called, nothing crashes. */
	cr_assert_eq(clip_ctx_set_log_priority(ctx, LOG_DEBUG), 0);
	cr_assert_eq(clip_ctx_set_log_fn(ctx, NULL, NULL), 0);
	assert_errno(clip_ctx_set_state_dir(ctx, "relative"), -EINVAL);
	cr_assert_eq(c.n, 2);
	clip_ctx_unref(ctx);
}

Test(ctx, a_worker_has_its_parents_settings_and_its_own_log_and_keys)
{
	struct clip_tpm_opts opts = { .size = sizeof(opts),
				      .tcti = "swtpm:port=1",
				      .seal_pcrs = 1u << 4 };
	struct clip_tpm_opts got = { .size = sizeof(got) };
	struct captured mine = { 0 };
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = NULL;
	struct clip_ctx *ctx, *w = NULL;
	const uint8_t *parent_key, *worker_key;

	/* The key file is made in a state directory of the test's own. */
	cr_assert_gt(asprintf(&state, "%s/state", dir), 0);
	ctx = test_ctx(state);

#if HAVE_TPM
	cr_assert_eq(clip_ctx_set_key_provider(ctx, "tpm"), 0);
	cr_assert_eq(clip_ctx_set_tpm_options(ctx, &opts), 0);
#endif
	cr_assert_eq(clip_ctx_set_log_priority(ctx, LOG_NOTICE), 0);
	cr_assert_eq(ctx_new_worker(ctx, capture, &mine, &w), 0);
	cr_assert_str_eq(clip_ctx_get_state_dir(w), clip_ctx_get_state_dir(ctx));
	cr_assert_neq(clip_ctx_get_state_dir(w), clip_ctx_get_state_dir(ctx), "the path is shared");
#if HAVE_TPM
	cr_assert_str_eq(clip_ctx_get_key_provider(w), "tpm");
	cr_assert_eq(clip_ctx_get_tpm_options(w, &got), 0);
	cr_assert_str_eq(got.tcti, "swtpm:port=1");
	cr_assert_eq(got.seal_pcrs, 1u << 4);
#else
	(void)opts;
	(void)got;
#endif
	cr_assert_eq(clip_ctx_get_log_priority(w), LOG_NOTICE);
	/* Its own handler: a client bug on the worker is logged to it. */
	assert_errno(clip_ctx_set_state_dir(w, "relative"), -EINVAL);
	cr_assert_eq(mine.n, 1);

	/* Keys are loaded by each context from the provider, never shared. */
	cr_assert_eq(clip_ctx_set_key_provider(ctx, "file"), 0);
	cr_assert_eq(clip_ctx_set_key_provider(w, "file"), 0);
	cr_assert_eq(ctx_get_key(ctx, KEY_PURPOSE_LABEL, true, &parent_key, NULL), 0);
	cr_assert_eq(ctx_get_key(w, KEY_PURPOSE_LABEL, false, &worker_key, NULL), 0);
	cr_assert_neq(parent_key, worker_key);
	cr_assert_eq(memcmp(parent_key, worker_key, CLIP_KEY_SIZE), 0);
	clip_ctx_unref(w);
	clip_ctx_unref(ctx);
}

Test(ctx, the_state_directory_changing_wipes_the_keys)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = NULL;
	struct clip_ctx *ctx;
	const uint8_t *key;
	uint8_t copy[CLIP_KEY_SIZE], zero[CLIP_KEY_SIZE] = { 0 };

	cr_assert_gt(asprintf(&state, "%s/state", dir), 0);
	ctx = test_ctx(state);
	cr_assert_eq(ctx_get_key(ctx, KEY_PURPOSE_LABEL, true, &key, NULL), 0);
	memcpy(copy, key, sizeof(copy));
	cr_assert_neq(memcmp(key, zero, sizeof(zero)), 0);
	cr_assert_eq(clip_ctx_set_state_dir(ctx, "/nonexistent/other"), 0);
	cr_assert_eq(memcmp(key, zero, sizeof(zero)), 0, "the old key is still in memory");
	clip_ctx_unref(ctx);
}

/* RFC 4231 test cases 1 and 2 (their keys padded with zeros to 32 bytes, which HMAC does anyway). */
Test(ctx, mac_is_hmac_sha256_of_rfc_4231)
{
	static const struct {
		const char *key, *data, *mac;
	} cases[] = {
		{ "\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b"
		  "\x0b",
		  "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
		{ "Jefe", "what do ya want for nothing?",
		  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		uint8_t key[CLIP_KEY_SIZE] = { 0 }, mac[32];
		char hex[65];

		memcpy(key, cases[i].key, strlen(cases[i].key));
		cr_assert_eq(mac_sha256(key, cases[i].data, strlen(cases[i].data), mac), 0);
		hex_encode(mac, sizeof(mac), hex);
		cr_assert_str_eq(hex, cases[i].mac, "case %zu", i + 1);
	}
}

/* The MAC from the keyring's cached pad states is the MAC under the key, every time. */
Test(ctx, ctx_mac_is_the_mac_under_the_purposes_key)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = NULL;
	static const char data[] = "a message longer than one SHA-256 block, so that the cached "
				   "states are seen to carry over a block boundary correctly";
	uint8_t want[32], got[32], other[32];
	struct clip_ctx *ctx;
	const uint8_t *key;

	cr_assert_gt(asprintf(&state, "%s/state", dir), 0);
	ctx = test_ctx(state);
	cr_assert_eq(ctx_get_key(ctx, KEY_PURPOSE_AUDIT, true, &key, NULL), 0);
	cr_assert_eq(mac_sha256(key, data, sizeof(data), want), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(ctx_mac(ctx, KEY_PURPOSE_AUDIT, false, data, sizeof(data), got, NULL),
			     0);
		cr_assert_eq(memcmp(got, want, sizeof(got)), 0, "MAC %d differs", i);
	}
	cr_assert_eq(ctx_mac(ctx, KEY_PURPOSE_LABEL, false, data, sizeof(data), other, NULL), 0);
	cr_assert_neq(memcmp(other, want, sizeof(other)), 0, "two purposes share a MAC key");
	clip_ctx_unref(ctx);
}

Test(ctx, caller_strings_are_bounded_in_logs)
{
	struct captured c = { 0 };
	struct clip_ctx *ctx = NULL;
	char name[1200];

	cr_assert_eq(clip_ctx_new(&ctx), 0);
	cr_assert_eq(clip_ctx_set_log_fn(ctx, capture, &c), 0);
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	/* The provider name is quoted up to 64 bytes, so the message is bounded. */
	assert_errno(clip_ctx_set_key_provider(ctx, name), -EOPNOTSUPP);
	cr_assert_eq(c.n, 1);
	cr_assert_lt(strlen(c.last), 200);
	clip_ctx_unref(ctx);
}

Test(ctx, used_after_fork_answers_echild)
{
	struct clip_ctx *ctx = test_ctx(NULL);
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int ok = clip_ctx_set_log_priority(ctx, LOG_INFO) == -ECHILD &&
			 clip_ctx_get_log_priority(ctx) == -ECHILD &&
			 clip_ctx_set_state_dir(ctx, "/x") == -ECHILD &&
			 clip_ctx_get_state_dir(ctx) == NULL;
		_exit(ok ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "a context used in a forked child must answer -ECHILD");
	cr_assert_eq(clip_ctx_set_log_priority(ctx, LOG_INFO), 0);
	clip_ctx_unref(ctx);
}

/* The error model, from the inside: what every exported function relies on. */

Test(error, first_message_wins)
{
	struct clip_error *e = NULL;

	cr_assert_eq(error_setf(&e, -EINVAL, 4, "first %d", 1), -EINVAL);
	cr_assert_eq(error_setf(&e, -ENOMEM, -1, "second"), -ENOMEM);
	cr_assert_str_eq(clip_error_get_message(e), "first 1");
	cr_assert_eq(clip_error_get_offset(e), 4);
	cr_assert_eq(clip_error_get_errno(e), -EINVAL);
	clip_error_free(e);
	cr_assert_eq(error_setf(NULL, -EIO, -1, "nobody listens"), -EIO);
}

Test(error, messages_are_one_line)
{
	struct clip_error *e = NULL;

	error_set(&e, -EINVAL, "line one\nline two\r");
	cr_assert_str_eq(clip_error_get_message(e), "line one line two ");
	clip_error_free(e);
}

Test(error, errno_suffix)
{
	struct clip_error *e = NULL;

	error_set_errno(&e, -ENOENT, "cannot open %s", "x");
	cr_assert_str_eq(clip_error_get_message(e), "cannot open x: No such file or directory");
	clip_error_free(e);
}

Test(error, api_return_filters_unexpected_errnos)
{
	struct clip_error *e = NULL;

	/* EXDEV is in no function's documented set. */
	assert_errno(api_return(-EXDEV, &e), -EFAULT);
	cr_assert_eq(clip_error_get_errno(e), -EFAULT);
	cr_assert(strstr(clip_error_get_message(e), "unexpected error"), "%s",
		  clip_error_get_message(e));
	clip_error_free(e);
	e = NULL;

	/* A message from a deeper layer keeps its text and takes the errno returned. */
	error_set(&e, -ENOENT, "state directory /x does not exist");
	assert_errno(api_return(-ENOKEY, &e), -ENOKEY);
	cr_assert_eq(clip_error_get_errno(e), -ENOKEY);
	cr_assert_str_eq(clip_error_get_message(e), "state directory /x does not exist");
	clip_error_free(e);
	e = NULL;

	/* A failure always carries a message when one is asked for. */
	assert_errno(api_return(-EACCES, &e), -EACCES);
	cr_assert_str_eq(clip_error_get_message(e), "Permission denied");
	clip_error_free(e);
	e = NULL;

	cr_assert_eq(api_return(3, &e), 3);
	cr_assert_null(e);
	assert_errno(api_return(-EXDEV, NULL), -EFAULT);
}

Test(error, reterr_must_point_to_null)
{
	struct clip_level *l = NULL;
	struct clip_error *e = NULL;

	cr_assert_lt(clip_level_parse(&l, "bad", &e), 0);
	cr_assert_not_null(e);
	/* Reusing a filled error is a client bug. */
	assert_errno(clip_level_parse(&l, "s1", &e), -EINVAL);
	cr_assert_null(l);
	clip_error_free(e);
}

/*
 * The state directory is walked, not opened by path (finding 7 of issue
 * 20): a symbolic link on the way does not take the key elsewhere, and the
 * message names it.
 */
Test(ctx, the_key_is_not_made_where_a_link_in_the_state_path_points)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = NULL, *target = NULL,
			    *link = NULL, *key = NULL;
	struct clip_error *err = NULL;
	struct clip_ctx *ctx;
	const uint8_t *k;
	struct stat st;

	cr_assert_gt(asprintf(&target, "%s/elsewhere", dir), 0);
	cr_assert_gt(asprintf(&link, "%s/link", dir), 0);
	cr_assert_gt(asprintf(&state, "%s/link/state", dir), 0);
	cr_assert_gt(asprintf(&key, "%s/elsewhere/state/mac.key", dir), 0);
	cr_assert_eq(mkdir(target, 0700), 0);
	cr_assert_eq(symlink(target, link), 0);
	ctx = test_ctx(state);
	assert_errno(ctx_get_key(ctx, KEY_PURPOSE_LABEL, true, &k, &err), -ELOOP);
	cr_assert_not_null(err);
	cr_assert(strstr(clip_error_get_message(err), "link is a symbolic link, not followed"),
		  "%s", clip_error_get_message(err));
	cr_assert_neq(stat(key, &st), 0, "a key was made where the link points");
	clip_error_free(err);
	clip_ctx_unref(ctx);
}
