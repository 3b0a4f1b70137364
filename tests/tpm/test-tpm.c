/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TPM 2.0 against a real software TPM. Run under tests/tpm/with-swtpm,
 * which gives each test the means to start its own swtpm (so that tests
 * running in parallel never share PCRs), to stop it and to start it again
 * on the same state (a reboot of the TPM).
 *
 * Shown: seal/unseal across a restart, unseal refused after a policy PCR
 * is extended, a blob from another TPM and every corruption of a blob
 * refused, no TPM handled per configuration, a label made with the sealed
 * key valid after a restart and refused after a PCR change, nothing left
 * in the TPM after hundreds of calls, measurements replayed and an edited
 * log refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <valgrind/valgrind.h>

#include <clip/cage.h>

#include "helpers.h"
#include "keys/fscrypt.h"
#include "keys/keys-internal.h"
#include "tpm/tpm-internal.h"

extern char **environ;

/* ---- the software TPM ---------------------------------------------------- */

struct swtpm {
	char dir[256];
	char tcti[300];
};

static void
harness(const char *verb, const char *dir)
{
	const char *script = getenv("CLIP_TEST_SWTPM");
	char *argv[] = { (char *)script, (char *)verb, (char *)dir, NULL };
	posix_spawn_file_actions_t fa;
	int status;
	pid_t pid;

	if (!script)
		cr_skip_test("not run under tests/tpm/with-swtpm (no $CLIP_TEST_SWTPM)");
	/* Its output is not TAP: to stderr. */
	cr_assert_eq(posix_spawn_file_actions_init(&fa), 0);
	cr_assert_eq(posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO), 0);
	cr_assert_eq(posix_spawn(&pid, script, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "with-swtpm %s %s failed", verb,
		  dir);
}

/* A new TPM, with a fresh state of its own. */
static void
swtpm_new(struct swtpm *s)
{
	const char *root = getenv("CLIP_TEST_SWTPM_ROOT");

	if (!root)
		cr_skip_test("not run under tests/tpm/with-swtpm (no $CLIP_TEST_SWTPM_ROOT)");
	snprintf(s->dir, sizeof(s->dir), "%s/t-XXXXXX", root);
	cr_assert_not_null(mkdtemp(s->dir));
	snprintf(s->tcti, sizeof(s->tcti), "swtpm:path=%s/s", s->dir);
	harness("--start", s->dir);
}

static void
swtpm_stop(struct swtpm *s)
{
	harness("--stop", s->dir);
}

/* The same TPM started again on its state: PCRs reset, seeds kept. */
static void
swtpm_start(struct swtpm *s)
{
	harness("--start", s->dir);
}

/* ---- contexts and keys --------------------------------------------------- */

/* Messages logged at LOG_WARNING or above, for the tests that check them. */
static char warnings[4096];

static void
log_collect(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	cr_log_info("libclip <%d>: %s", priority, message);
	if (priority <= LOG_WARNING && strlen(warnings) + strlen(message) + 2 < sizeof(warnings)) {
		strcat(warnings, message);
		strcat(warnings, "\n");
	}
}

static char *
state_in(const char *base, const char *name)
{
	char *s = NULL;

	cr_assert_geq(asprintf(&s, "%s/%s", base, name), 0);
	return s;
}

static struct clip_ctx *
tpm_ctx_opts(const char *state, const char *tcti, uint32_t seal_pcrs, uint32_t fallback)
{
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_tpm_opts o = {
		.size = sizeof(o),
		.tcti = tcti,
		.seal_pcrs = seal_pcrs,
		.fallback = fallback,
	};

	cr_assert_eq(clip_ctx_set_log_fn(ctx, log_collect, NULL), 0);
	cr_assert_eq(clip_ctx_set_tpm_options(ctx, &o), 0);
	cr_assert_eq(clip_ctx_set_key_provider(ctx, "tpm"), 0);
	return ctx;
}

static struct clip_ctx *
tpm_ctx(const char *state, const struct swtpm *s)
{
	return tpm_ctx_opts(state, s->tcti, 0, CLIP_TPM_FALLBACK_REFUSE);
}

/* The context's label key, loaded through its provider (the master key unsealed). */
static int
get_key(struct clip_ctx *ctx, bool create, uint8_t out[CLIP_KEY_SIZE], struct clip_error **e)
{
	const uint8_t *key;
	int r;

	r = ctx_get_key(ctx, KEY_PURPOSE_LABEL, create, &key, e);
	if (r == 0)
		memcpy(out, key, CLIP_KEY_SIZE);
	return r;
}

static void
assert_message(struct clip_error *e, const char *want)
{
	cr_assert_not_null(e, "no message, want one with \"%s\"", want);
	cr_assert(strstr(clip_error_get_message(e), want), "message \"%s\" lacks \"%s\"",
		  clip_error_get_message(e), want);
}

static void
extend(const struct swtpm *s, unsigned pcr)
{
	_cleanup_(clip_ctx_unrefp) struct clip_ctx *ctx = tpm_ctx("/nonexistent", s);
	_cleanup_(tpm_close) struct tpm t = { 0 };
	uint8_t digest[TPM_SHA256_SIZE];

	memset(digest, 0x5a, sizeof(digest));
	cr_assert_eq(tpm_open(ctx, &t, NULL), 0);
	cr_assert_eq(tpm_pcr_extend_sha256(&t, pcr, digest, NULL), 0);
}

/* Nothing the library created stays in the TPM: there is no resource manager. */
static void
assert_tpm_empty(const struct swtpm *s)
{
	_cleanup_(clip_ctx_unrefp) struct clip_ctx *ctx = tpm_ctx("/nonexistent", s);
	_cleanup_(tpm_close) struct tpm t = { 0 };
	unsigned objects = 99, sessions = 99;

	cr_assert_eq(tpm_open(ctx, &t, NULL), 0);
	cr_assert_eq(tpm_count_handles(&t, &objects, &sessions, NULL), 0);
	cr_assert_eq(objects, 0, "%u transient objects left in the TPM", objects);
	cr_assert_eq(sessions, 0, "%u sessions left in the TPM", sessions);
}

static size_t
read_file(const char *path, uint8_t *buf, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	n = read(fd, buf, max);
	close(fd);
	cr_assert_geq(n, 0);
	return (size_t)n;
}

static void
write_file(const char *path, const void *buf, size_t n, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	cr_assert_geq(fd, 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, buf, n), (ssize_t)n);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

/* ---- sealing ------------------------------------------------------------- */

Test(tpm, seal_then_unseal_across_a_restart)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	_cleanup_free_ char *blob = state_in(state, "mac.key.tpm"),
			    *file = state_in(state, "mac.key");
	uint8_t first[CLIP_KEY_SIZE], again[CLIP_KEY_SIZE], bytes[TPM_BLOB_MAX];
	struct clip_ctx *ctx;
	struct clip_error *e = NULL;
	struct swtpm s;
	struct stat st;
	size_t n;

	swtpm_new(&s);
	ctx = tpm_ctx(state, &s);
	/* Verifying never creates a key. */
	assert_errno(get_key(ctx, false, first, &e), -ENOKEY);
	assert_message(e, "no key");
	e = clip_error_free(e);
	cr_assert_eq(get_key(ctx, true, first, &e), 0, "%s", clip_error_get_message(e));
	cr_assert_eq(stat(blob, &st), 0, "the blob is in the state directory");
	cr_assert_eq(st.st_mode & 07777, 0600);
	cr_assert_neq(stat(file, &st), 0, "no key file: the key exists only sealed");
	/* The blob does not hold the master key in the clear. */
	n = read_file(blob, bytes, sizeof(bytes));
	cr_assert_null(memmem(bytes, n, ctx->keyring->master, CLIP_KEY_SIZE));
	clip_ctx_unref(ctx);

	ctx = tpm_ctx(state, &s);
	cr_assert_eq(get_key(ctx, false, again, &e), 0, "%s", clip_error_get_message(e));
	cr_assert_eq(memcmp(first, again, CLIP_KEY_SIZE), 0,
		     "another context unseals the same key");
	clip_ctx_unref(ctx);

	swtpm_stop(&s);
	ctx = tpm_ctx(state, &s);
	assert_errno(get_key(ctx, false, again, &e), -ENOKEY);
	assert_message(e, "no TPM at 'swtpm:path=");
	assert_message(e, "fallback: refuse");
	e = clip_error_free(e);
	clip_ctx_unref(ctx);

	swtpm_start(&s);
	ctx = tpm_ctx(state, &s);
	memset(again, 0, sizeof(again));
	cr_assert_eq(get_key(ctx, false, again, &e), 0, "%s", clip_error_get_message(e));
	cr_assert_eq(memcmp(first, again, CLIP_KEY_SIZE), 0, "the key unseals after a restart");
	clip_ctx_unref(ctx);
	assert_tpm_empty(&s);
	swtpm_stop(&s);
}

Test(tpm, unseal_refused_after_a_policy_pcr_is_extended)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	uint8_t key[CLIP_KEY_SIZE];
	struct clip_error *e = NULL;
	struct clip_ctx *ctx;
	struct swtpm s;
	uint32_t pcrs = 0;

	swtpm_new(&s);
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(get_key(ctx, true, key, NULL), 0);
	clip_ctx_unref(ctx);

	/* PCR 8 is not in the policy. */
	extend(&s, 8);
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(get_key(ctx, false, key, &e), 0, "%s", clip_error_get_message(e));
	clip_ctx_unref(ctx);

	extend(&s, 7);
	ctx = tpm_ctx(state, &s);
	assert_errno(get_key(ctx, false, key, &e), -EACCES);
	assert_message(e, "PCR 7 changed since the key was sealed");
	/* TPM_RC_POLICY_FAIL for session 1, and its decoding. */
	assert_message(e, "TPM response 0x99d");
	assert_message(e, "policy check failed");
	e = clip_error_free(e);
	assert_errno(clip_tpm_check_key(ctx, &pcrs, &e), -EACCES);
	cr_assert_eq(clip_error_get_errno(e), -EACCES);
	cr_assert_eq(pcrs, 0, "*ret_pcrs untouched on failure");
	e = clip_error_free(e);
	/* Resealing what does not unseal is refused; a new key is not. */
	assert_errno(clip_tpm_seal_key(ctx, 0, &e), -EACCES);
	assert_message(e, "CLIP_TPM_SEAL_NEW");
	e = clip_error_free(e);
	clip_ctx_unref(ctx);

	/* Another PCR set: 7 and 16. */
	ctx = tpm_ctx_opts(state, s.tcti, (1u << 7) | (1u << 16), 0);
	cr_assert_eq(clip_tpm_seal_key(ctx, CLIP_TPM_SEAL_NEW, &e), 0, "%s",
		     clip_error_get_message(e));
	cr_assert_eq(clip_tpm_check_key(ctx, &pcrs, NULL), 0);
	cr_assert_eq(pcrs, (1u << 7) | (1u << 16));
	extend(&s, 16);
	assert_errno(clip_tpm_check_key(ctx, NULL, &e), -EACCES);
	assert_message(e, "PCR 16 changed");
	e = clip_error_free(e);
	clip_ctx_unref(ctx);
	assert_tpm_empty(&s);
	swtpm_stop(&s);
}

Test(tpm, sealed_to_every_pcr)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	struct clip_error *e = NULL;
	struct clip_ctx *ctx;
	struct swtpm s;
	uint32_t pcrs = 0;

	swtpm_new(&s);
	/* The longest PCR list a message names; the TPM reads 8 PCRs at a time. */
	ctx = tpm_ctx_opts(state, s.tcti, 0xffffff, 0);
	cr_assert_eq(clip_tpm_seal_key(ctx, 0, &e), 0, "%s", clip_error_get_message(e));
	cr_assert_eq(clip_tpm_check_key(ctx, &pcrs, NULL), 0);
	cr_assert_eq(pcrs, 0xffffff);
	clip_ctx_unref(ctx);
	/* Configured for PCR 7 only: it still unseals, with a warning to reseal. */
	warnings[0] = '\0';
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(clip_tpm_check_key(ctx, NULL, NULL), 0);
	cr_assert(strstr(warnings, "the key is sealed to PCR 0, 1, 2"), "%s", warnings);
	cr_assert(strstr(warnings, "22, 23, the configuration says PCR 7"), "%s", warnings);
	extend(&s, 23);
	assert_errno(clip_tpm_check_key(ctx, NULL, &e), -EACCES);
	assert_message(e, "PCR 23 changed");
	e = clip_error_free(e);
	clip_ctx_unref(ctx);
	swtpm_stop(&s);
}

Test(tpm, a_blob_from_another_tpm_is_refused)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	uint8_t key[CLIP_KEY_SIZE];
	struct clip_error *e = NULL;
	struct clip_ctx *ctx;
	struct swtpm a, b;

	swtpm_new(&a);
	swtpm_new(&b);
	ctx = tpm_ctx(state, &a);
	cr_assert_eq(get_key(ctx, true, key, NULL), 0);
	clip_ctx_unref(ctx);

	ctx = tpm_ctx(state, &b);
	assert_errno(get_key(ctx, false, key, &e), -EBADMSG);
	assert_message(e, "sealed by another TPM");
	assert_message(e, "TPM response 0x");
	e = clip_error_free(e);
	/* Nor does the other TPM create a key over it. */
	assert_errno(get_key(ctx, true, key, NULL), -EBADMSG);
	clip_ctx_unref(ctx);
	assert_tpm_empty(&b);
	swtpm_stop(&a);
	swtpm_stop(&b);
}

Test(tpm, every_corruption_of_a_blob_is_refused, .timeout = 240)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	_cleanup_free_ char *blob = state_in(state, "mac.key.tpm");
	uint8_t orig[TPM_BLOB_MAX + 2], bad[TPM_BLOB_MAX + 2], key[CLIP_KEY_SIZE];
	struct clip_error *e = NULL;
	struct clip_ctx *ctx;
	struct swtpm s;
	size_t n;

	swtpm_new(&s);
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(get_key(ctx, true, key, NULL), 0);
	n = read_file(blob, orig, sizeof(orig));
	cr_log_info("blob: %zu bytes", n);

	/* Each byte flipped: the header, the PCR values, the public and private areas. */
	for (size_t i = 0; i < n; i++) {
		memcpy(bad, orig, n);
		bad[i] ^= 0x01;
		write_file(blob, bad, n, 0600);
		ctx_forget_keys(ctx);
		cr_assert_eq(get_key(ctx, false, key, &e), -EBADMSG, "byte %zu of %zu flipped", i,
			     n);
		cr_assert_not_null(e);
		cr_log_info("byte %zu: %s", i, clip_error_get_message(e));
		e = clip_error_free(e);
	}
	/* Each truncation, and a byte too many. */
	for (size_t len = 0; len < n; len++) {
		write_file(blob, orig, len, 0600);
		ctx_forget_keys(ctx);
		assert_errno(get_key(ctx, false, key, NULL), -EBADMSG);
	}
	memcpy(bad, orig, n);
	bad[n] = 0;
	write_file(blob, bad, n + 1, 0600);
	ctx_forget_keys(ctx);
	assert_errno(get_key(ctx, false, key, &e), -EBADMSG);
	assert_message(e, "1 bytes after the private area");
	e = clip_error_free(e);
	/* A blob that others may write, or a symbolic link: refused. */
	write_file(blob, orig, n, 0666);
	ctx_forget_keys(ctx);
	assert_errno(get_key(ctx, false, key, NULL), -EPERM);
	cr_assert_eq(unlink(blob), 0);
	cr_assert_eq(symlink("/dev/null", blob), 0);
	assert_errno(get_key(ctx, false, key, NULL), -EPERM);
	cr_assert_eq(unlink(blob), 0);

	/* The original again: it unseals. */
	write_file(blob, orig, n, 0600);
	ctx_forget_keys(ctx);
	cr_assert_eq(get_key(ctx, false, key, &e), 0, "%s", clip_error_get_message(e));
	clip_ctx_unref(ctx);
	assert_tpm_empty(&s);
	swtpm_stop(&s);
}

Test(tpm, no_tpm_is_refused_by_default)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	_cleanup_free_ char *file = state_in(state, "mac.key");
	uint8_t key[CLIP_KEY_SIZE];
	struct clip_error *e = NULL;
	struct clip_ctx *ctx;
	struct stat st;
	char *info = NULL;

	ctx = tpm_ctx_opts(state, "swtpm:path=/nonexistent/s", 0, CLIP_TPM_FALLBACK_REFUSE);
	assert_errno(get_key(ctx, true, key, &e), -ENOKEY);
	assert_message(e, "no TPM at 'swtpm:path=/nonexistent/s'");
	assert_message(e, "refuses to work without a TPM (fallback: refuse)");
	e = clip_error_free(e);
	cr_assert_neq(stat(file, &st), 0, "no key file was created");
	assert_errno(clip_tpm_get_info(ctx, &info, &e), -ENODEV);
	cr_assert_null(info);
	assert_message(e, "no TPM");
	e = clip_error_free(e);
	assert_errno(clip_tpm_measure(ctx, "cage:a", "x", 1, NULL), -ENODEV);
	clip_ctx_unref(ctx);

	ctx = tpm_ctx_opts(state, "device:/nonexistent/tpmrm0", 0, CLIP_TPM_FALLBACK_REFUSE);
	assert_errno(get_key(ctx, true, key, &e), -ENOKEY);
	assert_message(e, "no TPM: /nonexistent/tpmrm0 does not exist");
	e = clip_error_free(e);
	clip_ctx_unref(ctx);
}

Test(tpm, no_tpm_falls_back_to_the_key_file_when_configured)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	_cleanup_free_ char *file = state_in(state, "mac.key");
	uint8_t key[CLIP_KEY_SIZE], from_file[CLIP_KEY_SIZE];
	struct clip_error *e = NULL;
	struct clip_ctx *ctx;
	struct stat st;

	warnings[0] = '\0';
	ctx = tpm_ctx_opts(state, "swtpm:path=/nonexistent/s", 0, CLIP_TPM_FALLBACK_KEY_FILE);
	cr_assert_eq(get_key(ctx, true, key, &e), 0, "%s", clip_error_get_message(e));
	cr_assert_null(e, "no message on success");
	cr_assert_eq(stat(file, &st), 0, "the key file was created");
	cr_assert(strstr(warnings, "no TPM at 'swtpm:path=/nonexistent/s'"), "%s", warnings);
	cr_assert(strstr(warnings, "using the key file"), "%s", warnings);
	cr_assert(strstr(warnings, "NOT sealed"), "%s", warnings);
	clip_ctx_unref(ctx);

	/* It is the file provider's key. */
	ctx = test_ctx(state);
	cr_assert_eq(get_key(ctx, false, from_file, NULL), 0);
	cr_assert_eq(memcmp(key, from_file, CLIP_KEY_SIZE), 0);
	clip_ctx_unref(ctx);
}

/* ---- labels with the sealed key ----------------------------------------- */

Test(tpm, a_label_verifies_after_a_restart_and_fails_after_a_pcr_change)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	struct clip_level *level = NULL, *got = NULL;
	struct clip_error *e = NULL;
	struct clip_ctx *ctx;
	struct swtpm s;
	int fd;

	swtpm_new(&s);
	cr_assert_eq(clip_level_parse(&level, "s2:c1", NULL), 0);
	fd = test_file(dir, "report", "quarterly figures");
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(clip_label_set(ctx, fd, level, CLIP_LABEL_ROOTLESS, &e), 0, "%s",
		     clip_error_get_message(e));
	cr_assert_eq(clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, NULL), 0);
	clip_ctx_unref(ctx);

	swtpm_stop(&s);
	swtpm_start(&s);
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(clip_label_get(ctx, fd, CLIP_LABEL_ROOTLESS, &got, &e), 0, "%s",
		     clip_error_get_message(e));
	cr_assert(clip_level_equal(got, level));
	clip_ctx_unref(ctx);

	extend(&s, 7);
	ctx = tpm_ctx(state, &s);
	assert_errno(clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, &e), -EACCES);
	cr_assert_eq(clip_error_get_errno(e), -EACCES);
	assert_message(e, "cannot unseal the key: PCR 7 changed since the key was sealed");
	e = clip_error_free(e);
	clip_ctx_unref(ctx);

	close(fd);
	clip_level_unref(level);
	clip_level_unref(got);
	swtpm_stop(&s);
}

/* ---- resources ----------------------------------------------------------- */

Test(tpm, hundreds_of_calls_leave_nothing_in_the_tpm, .timeout = 300)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	_cleanup_free_ char *bad_state = state_in(dir, "bad");
	_cleanup_free_ char *bad_blob = state_in(bad_state, "mac.key.tpm");
	uint8_t key[CLIP_KEY_SIZE], blob[TPM_BLOB_MAX];
	struct clip_error *e = NULL;
	struct clip_ctx *ctx, *bad;
	struct swtpm s;
	size_t n;

	/*
	 * The TPM has about 3 object and 3 session slots: one handle leaked a
	 * call fails within a few calls. 300 unseals natively; 60 under
	 * valgrind, where each costs a third of a second.
	 */
	const int rounds = RUNNING_ON_VALGRIND ? 60 : 300;

	swtpm_new(&s);
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(get_key(ctx, true, key, NULL), 0);
	for (int i = 0; i < rounds; i++) {
		ctx_forget_keys(ctx);
		cr_assert_eq(get_key(ctx, false, key, &e), 0, "unseal %d: %s", i,
			     clip_error_get_message(e));
	}
	for (int i = 0; i < rounds / 6; i++)
		cr_assert_eq(clip_tpm_measure(ctx, "cage:loop", &i, sizeof(i), &e), 0, "%s",
			     clip_error_get_message(e));
	assert_tpm_empty(&s);

	/* Error paths: a blob the TPM refuses at load, then one whose policy fails. */
	bad = tpm_ctx(bad_state, &s);
	cr_assert_eq(get_key(bad, true, key, NULL), 0);
	n = read_file(bad_blob, blob, sizeof(blob));
	blob[n - 1] ^= 0x01;
	write_file(bad_blob, blob, n, 0600);
	for (int i = 0; i < rounds / 3; i++) {
		ctx_forget_keys(bad);
		assert_errno(get_key(bad, false, key, NULL), -EBADMSG);
	}
	clip_ctx_unref(bad);
	extend(&s, 7);
	for (int i = 0; i < rounds / 3; i++) {
		ctx_forget_keys(ctx);
		assert_errno(get_key(ctx, false, key, NULL), -EACCES);
	}
	assert_tpm_empty(&s);
	/* The TPM still has every slot: a new key seals and unseals. */
	cr_assert_eq(clip_tpm_seal_key(ctx, CLIP_TPM_SEAL_NEW, &e), 0, "%s",
		     clip_error_get_message(e));
	cr_assert_eq(clip_tpm_check_key(ctx, NULL, NULL), 0);
	clip_ctx_unref(ctx);
	swtpm_stop(&s);
}

/* ---- options ------------------------------------------------------------- */

Test(tpm, options_defaults_environment_and_refusals)
{
	_cleanup_(clip_ctx_unrefp) struct clip_ctx *ctx = test_ctx(NULL);
	struct clip_tpm_opts o = { .size = sizeof(o) };
	struct {
		struct clip_tpm_opts o;
		uint8_t more[8];
	} big = { .o.size = sizeof(big) };
	char long_tcti[300];

	unsetenv("CLIP_TPM_TCTI");
	cr_assert_eq(clip_ctx_get_tpm_options(ctx, &o), 0);
	cr_assert_str_eq(o.tcti, "device:/dev/tpmrm0");
	cr_assert_eq(o.seal_pcrs, 1u << 7);
	cr_assert_eq(o.measure_pcr, 23);
	cr_assert_eq(o.fallback, CLIP_TPM_FALLBACK_REFUSE);

	setenv("CLIP_TPM_TCTI", "swtpm:path=/run/env.sock", 1);
	cr_assert_eq(clip_ctx_get_tpm_options(ctx, &o), 0);
	cr_assert_str_eq(o.tcti, "swtpm:path=/run/env.sock",
			 "$CLIP_TPM_TCTI overrides the default");
	o = (struct clip_tpm_opts){ .size = sizeof(o), .tcti = "swtpm:path=/run/opt.sock" };
	cr_assert_eq(clip_ctx_set_tpm_options(ctx, &o), 0);
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	cr_assert_eq(clip_ctx_get_tpm_options(ctx, &o), 0);
	cr_assert_str_eq(o.tcti, "swtpm:path=/run/opt.sock", "the option overrides the variable");
	cr_assert_eq(clip_ctx_set_tpm_options(ctx, NULL), 0);
	cr_assert_eq(clip_ctx_get_tpm_options(ctx, &o), 0);
	cr_assert_str_eq(o.tcti, "swtpm:path=/run/env.sock", "NULL restores the defaults");

	/* A newer caller's larger struct: accepted while the unknown tail is zero. */
	cr_assert_eq(clip_ctx_set_tpm_options(ctx, &big.o), 0);
	big.more[3] = 1;
	assert_errno(clip_ctx_set_tpm_options(ctx, &big.o), -E2BIG);
	big.o.size = 4097;
	assert_errno(clip_ctx_set_tpm_options(ctx, &big.o), -E2BIG);
	/* And filled as far as this library knows it, the rest zeroed, its size kept. */
	memset(&big, 0xaa, sizeof(big));
	big.o.size = sizeof(big);
	cr_assert_eq(clip_ctx_get_tpm_options(ctx, &big.o), 0);
	cr_assert_eq(big.o.size, sizeof(big));
	cr_assert_eq(big.o.measure_pcr, 23);
	for (size_t i = 0; i < sizeof(big.more); i++)
		cr_assert_eq(big.more[i], 0, "byte %zu past the known members is not zeroed", i);

	o = (struct clip_tpm_opts){ .size = 4 };
	assert_errno(clip_ctx_set_tpm_options(ctx, &o), -EINVAL);
	assert_errno(clip_ctx_get_tpm_options(ctx, &o), -EINVAL);
	o = (struct clip_tpm_opts){ .size = sizeof(o), .tcti = "" };
	assert_errno(clip_ctx_set_tpm_options(ctx, &o), -EINVAL);
	o.tcti = "device:/dev/tpm\n0";
	assert_errno(clip_ctx_set_tpm_options(ctx, &o), -EINVAL);
	memset(long_tcti, 'a', sizeof(long_tcti) - 1);
	long_tcti[sizeof(long_tcti) - 1] = '\0';
	o.tcti = long_tcti;
	assert_errno(clip_ctx_set_tpm_options(ctx, &o), -EINVAL);
	o = (struct clip_tpm_opts){ .size = sizeof(o), .seal_pcrs = 1u << 24 };
	assert_errno(clip_ctx_set_tpm_options(ctx, &o), -EINVAL);
	for (unsigned pcr = 17; pcr <= 22; pcr++) {
		o = (struct clip_tpm_opts){ .size = sizeof(o), .measure_pcr = pcr };
		assert_errno(clip_ctx_set_tpm_options(ctx, &o), -EINVAL);
	}
	o = (struct clip_tpm_opts){ .size = sizeof(o), .measure_pcr = 24 };
	assert_errno(clip_ctx_set_tpm_options(ctx, &o), -EINVAL);
	o = (struct clip_tpm_opts){ .size = sizeof(o), .measure_pcr = 16 };
	cr_assert_eq(clip_ctx_set_tpm_options(ctx, &o), 0);
	o = (struct clip_tpm_opts){ .size = sizeof(o), .fallback = 2 };
	assert_errno(clip_ctx_set_tpm_options(ctx, &o), -EINVAL);
	assert_errno(clip_ctx_set_tpm_options(NULL, &o), -EINVAL);
	assert_errno(clip_tpm_seal_key(ctx, 1u << 5, NULL), -EINVAL);
	assert_errno(clip_tpm_seal_key(ctx, CLIP_TPM_SEAL_NEW | CLIP_TPM_SEAL_FROM_KEY_FILE, NULL),
		     -EINVAL);
	assert_errno(clip_tpm_pcr_read(ctx, 24, (uint8_t[32]){ 0 }, NULL), -EINVAL);
}

Test(tpm, a_forked_child_gets_echild)
{
	_cleanup_(clip_ctx_unrefp) struct clip_ctx *ctx = test_ctx(NULL);
	struct clip_tpm_opts o = { .size = sizeof(o) };
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		uint8_t d[32];

		_exit(clip_ctx_set_tpm_options(ctx, &o) == -ECHILD &&
				      clip_tpm_measure(ctx, "x", "", 0, NULL) == -ECHILD &&
				      clip_tpm_pcr_read(ctx, 7, d, NULL) == -ECHILD &&
				      clip_tpm_replay(ctx, NULL, NULL, NULL) == -ECHILD
			      ? 0
			      : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- the seal-key API ---------------------------------------------------- */

Test(tpm, seal_key_from_the_key_file_keeps_labels_valid)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	_cleanup_free_ char *blob = state_in(state, "mac.key.tpm");
	struct clip_level *level = NULL;
	struct clip_error *e = NULL;
	struct clip_ctx *file, *ctx;
	struct swtpm s;
	uint32_t pcrs = 0;
	int fd;

	swtpm_new(&s);
	cr_assert_eq(clip_level_parse(&level, "s1", NULL), 0);
	fd = test_file(dir, "doc", "a document");
	file = test_ctx(state);
	cr_assert_eq(clip_label_set(file, fd, level, CLIP_LABEL_ROOTLESS, NULL), 0);
	clip_ctx_unref(file);

	ctx = tpm_ctx(state, &s);
	assert_errno(clip_tpm_check_key(ctx, NULL, &e), -ENOKEY);
	assert_message(e, "no sealed key");
	e = clip_error_free(e);
	cr_assert_eq(clip_tpm_seal_key(ctx, CLIP_TPM_SEAL_FROM_KEY_FILE, &e), 0, "%s",
		     clip_error_get_message(e));
	cr_assert_eq(clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, &e), 0, "%s",
		     clip_error_get_message(e));
	cr_assert_eq(clip_tpm_check_key(ctx, &pcrs, NULL), 0);
	cr_assert_eq(pcrs, 1u << 7);
	/* Resealing keeps the key. */
	cr_assert_eq(clip_tpm_seal_key(ctx, 0, NULL), 0);
	cr_assert_eq(clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, NULL), 0);
	/* A new key does not verify the old labels. */
	cr_assert_eq(clip_tpm_seal_key(ctx, CLIP_TPM_SEAL_NEW, NULL), 0);
	assert_errno(clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, NULL), -EBADMSG);
	cr_assert_eq(unlink(blob), 0);
	assert_errno(clip_tpm_check_key(ctx, NULL, NULL), -ENOKEY);
	clip_ctx_unref(ctx);

	ctx = tpm_ctx("/nonexistent/clip-state", &s);
	assert_errno(clip_tpm_check_key(ctx, NULL, &e), -ENOKEY);
	assert_message(e, "does not exist");
	e = clip_error_free(e);
	clip_ctx_unref(ctx);
	close(fd);
	clip_level_unref(level);
	swtpm_stop(&s);
}

Test(tpm, get_info_describes_the_tpm)
{
	_cleanup_free_ char *info = NULL;
	struct clip_ctx *ctx;
	struct swtpm s;

	swtpm_new(&s);
	ctx = tpm_ctx("/nonexistent", &s);
	cr_assert_eq(clip_tpm_get_info(ctx, &info, NULL), 0);
	cr_log_info("%s", info);
	cr_assert(strstr(info, "TPM 2.0 revision"), "%s", info);
	cr_assert(strstr(info, "PCR banks:"), "%s", info);
	cr_assert(strstr(info, "SHA256"), "%s", info);
	clip_ctx_unref(ctx);
	swtpm_stop(&s);
}

/* ---- measurements -------------------------------------------------------- */

struct seen {
	unsigned n;
	unsigned pcr[8];
	char what[8][64];
	uint8_t digest[8][32];
};

static void
collect(unsigned pcr, const char *what, const uint8_t digest[32], void *userdata)
{
	struct seen *s = userdata;

	if (s->n < 8) {
		s->pcr[s->n] = pcr;
		snprintf(s->what[s->n], sizeof(s->what[0]), "%s", what);
		memcpy(s->digest[s->n], digest, 32);
	}
	s->n++;
}

static void
sha256_of(const void *data, size_t n, uint8_t out[32])
{
	cr_assert(EVP_Digest(data, n, out, NULL, EVP_sha256(), NULL));
}

/* The PCR value after @n events, from the format doc/tpm.md gives, independently. */
static void
expected_pcr(const char *const *whats, const char *const *datas, int n, uint8_t pcr[32])
{
	memset(pcr, 0, 32);
	for (int i = 0; i < n; i++) {
		uint8_t event[512], both[64];
		uint32_t len = (uint32_t)strlen(whats[i]);
		size_t k = 0;

		memcpy(event, "libclip tpm event v1", 21);
		k = 21;
		for (int b = 0; b < 4; b++)
			event[k++] = (uint8_t)(len >> (8 * b));
		memcpy(event + k, whats[i], len);
		k += len;
		sha256_of(datas[i], strlen(datas[i]), event + k);
		k += 32;
		memcpy(both, pcr, 32);
		sha256_of(event, k, both + 32);
		sha256_of(both, 64, pcr);
	}
}

static char *
slurp(const char *path)
{
	static char buf[8192];
	size_t n = read_file(path, (uint8_t *)buf, sizeof(buf) - 1);

	buf[n] = '\0';
	return buf;
}

static void
assert_replay_refused(struct clip_ctx *ctx, const char *log, const char *text, const char *want,
		      const char *what)
{
	struct clip_error *e = NULL;

	write_file(log, text, strlen(text), 0600);
	assert_errno(clip_tpm_replay(ctx, NULL, NULL, &e), -EBADMSG);
	cr_assert_not_null(e, "%s", what);
	cr_assert(strstr(clip_error_get_message(e), want), "%s: \"%s\" lacks \"%s\"", what,
		  clip_error_get_message(e), want);
	clip_error_free(e);
}

Test(tpm, measurements_replay_and_an_edited_log_does_not)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	_cleanup_free_ char *log = state_in(state, "tpm-events.log");
	const char *whats[] = { "cage:alpha", "cage:beta", "cage:alpha" };
	const char *datas[] = { "[cage]\nname=alpha\nlevel=s1\n", "[cage]\nname=beta\nlevel=s2\n",
				"[cage]\nname=alpha\nlevel=s1\n" };
	uint8_t want[32], have[32];
	char original[8192], edited[8192], *p;
	struct clip_error *e = NULL;
	struct seen seen = { 0 };
	struct clip_ctx *ctx;
	struct swtpm s;

	swtpm_new(&s);
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(clip_tpm_replay(ctx, NULL, NULL, &e), 0, "no log, PCR 23 at reset: %s",
		     clip_error_get_message(e));
	for (int i = 0; i < 3; i++)
		cr_assert_eq(clip_tpm_measure(ctx, whats[i], datas[i], strlen(datas[i]), &e), 0,
			     "%s", clip_error_get_message(e));
	cr_assert_eq(clip_tpm_replay(ctx, collect, &seen, &e), 3, "%s", clip_error_get_message(e));
	cr_assert_eq(seen.n, 3);
	for (int i = 0; i < 3; i++) {
		uint8_t d[32];

		sha256_of(datas[i], strlen(datas[i]), d);
		cr_assert_eq(seen.pcr[i], 23);
		cr_assert_str_eq(seen.what[i], whats[i]);
		cr_assert_eq(memcmp(seen.digest[i], d, 32), 0);
	}
	expected_pcr(whats, datas, 3, want);
	cr_assert_eq(clip_tpm_pcr_read(ctx, 23, have, NULL), 0);
	cr_assert_eq(memcmp(want, have, 32), 0, "PCR 23 is the documented chain of the events");

	strcpy(original, slurp(log));
	cr_log_info("%s", original);
	cr_assert_eq(strncmp(original, "libclip-tpm-events v1\n23 ", 25), 0);

	/* One digit of a digest. */
	strcpy(edited, original);
	p = strchr(strchr(edited, '\n') + 1, '\n') + 1 + 3;
	*p = *p == '0' ? '1' : '0';
	assert_replay_refused(ctx, log, edited, "PCR 23 does not match the event log",
			      "an edited digest");
	/* A name. */
	strcpy(edited, original);
	p = strstr(edited, "cage:beta");
	p[8] = 'x';
	assert_replay_refused(ctx, log, edited, "does not match", "an edited name");
	/* Two events swapped. */
	{
		char *l2 = strchr(original, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
		char *l4 = strchr(l3, '\n') + 1;
		size_t h = (size_t)(l2 - original), a = (size_t)(l3 - l2), b = (size_t)(l4 - l3);

		memcpy(edited, original, h);
		memcpy(edited + h, l3, b);
		memcpy(edited + h + b, l2, a);
		strcpy(edited + h + a + b, l4);
		assert_replay_refused(ctx, log, edited, "does not match", "a reordered log");
	}
	/* The last event removed: truncated at a record boundary. */
	strcpy(edited, original);
	edited[strlen(edited) - 1] = '\0';
	*(strrchr(edited, '\n') + 1) = '\0';
	assert_replay_refused(ctx, log, edited, "does not match", "a truncated log");
	/* Cut in the middle of a record. */
	strcpy(edited, original);
	edited[strlen(edited) - 5] = '\0';
	assert_replay_refused(ctx, log, edited, "partial record", "a cut log");
	/* A damaged log is not measured into: it is refused, and stays as it is. */
	assert_errno(clip_tpm_measure(ctx, "cage:gamma", "g", 1, &e), -EBADMSG);
	assert_message(e, "partial record (no newline): move");
	e = clip_error_free(e);
	cr_assert_str_eq(slurp(log), edited);
	/* A forged, well-formed event added. */
	snprintf(edited, sizeof(edited), "%s23 %064d cage:forged\n", original, 0);
	assert_replay_refused(ctx, log, edited, "does not match", "an added event");
	/* Another header. */
	snprintf(edited, sizeof(edited), "x%s", original + 1);
	assert_replay_refused(ctx, log, edited, "first line", "a bad header");
	/* A malformed PCR field. */
	snprintf(edited, sizeof(edited), "%s023 %064d cage:x\n", original, 0);
	assert_replay_refused(ctx, log, edited, "bad PCR", "a PCR with a leading zero");

	write_file(log, original, strlen(original), 0600);
	cr_assert_eq(clip_tpm_replay(ctx, NULL, NULL, &e), 3, "%s", clip_error_get_message(e));
	clip_ctx_unref(ctx);
	swtpm_stop(&s);
}

Test(tpm, measurements_extend_every_bank)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	_cleanup_(tpm_close) struct tpm t = { 0 };
	TPML_PCR_SELECTION sel = { .count = 1 }, *out = NULL;
	TPML_DIGEST *values = NULL;
	struct clip_ctx *ctx;
	struct swtpm s;

	swtpm_new(&s);
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(clip_tpm_measure(ctx, "cage:a", "profile", 7, NULL), 0);
	cr_assert_eq(tpm_open(ctx, &t, NULL), 0);
	sel.pcrSelections[0] = (TPMS_PCR_SELECTION){ .hash = TPM2_ALG_SHA1, .sizeofSelect = 3 };
	sel.pcrSelections[0].pcrSelect[2] = 0x80;
	cr_assert_eq(Esys_PCR_Read(t.esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &sel, NULL,
				   &out, &values),
		     TSS2_RC_SUCCESS);
	if (values->count == 0)
		cr_skip_test("this TPM has no SHA-1 bank");
	cr_assert_eq(values->digests[0].size, 20);
	cr_assert_neq(memcmp(values->digests[0].buffer, (uint8_t[20]){ 0 }, 20), 0,
		      "the SHA-1 bank of PCR 23 is extended too");
	Esys_Free(out);
	Esys_Free(values);
	clip_ctx_unref(ctx);
	swtpm_stop(&s);
}

Test(tpm, a_tpm_reset_starts_a_new_log)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	_cleanup_free_ char *old = state_in(state, "tpm-events.log.old");
	struct clip_error *e = NULL;
	struct clip_ctx *ctx;
	struct swtpm s;
	struct stat st;

	swtpm_new(&s);
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(clip_tpm_measure(ctx, "cage:a", "A", 1, NULL), 0);
	cr_assert_eq(clip_tpm_measure(ctx, "cage:b", "B", 1, NULL), 0);
	cr_assert_eq(clip_tpm_replay(ctx, NULL, NULL, NULL), 2);

	swtpm_stop(&s);
	swtpm_start(&s);
	assert_errno(clip_tpm_replay(ctx, NULL, NULL, &e), -EBADMSG);
	assert_message(e, "the log predates a TPM reset");
	e = clip_error_free(e);
	cr_assert_eq(clip_tpm_measure(ctx, "cage:c", "C", 1, &e), 0, "%s",
		     clip_error_get_message(e));
	cr_assert_eq(stat(old, &st), 0, "the old log is kept");
	cr_assert_eq(clip_tpm_replay(ctx, NULL, NULL, &e), 1, "%s", clip_error_get_message(e));
	clip_ctx_unref(ctx);
	swtpm_stop(&s);
}

Test(tpm, an_extend_outside_the_log_is_seen)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	struct clip_error *e = NULL;
	struct clip_ctx *ctx;
	struct swtpm s;

	swtpm_new(&s);
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(clip_tpm_measure(ctx, "cage:a", "A", 1, NULL), 0);
	extend(&s, 23);
	assert_errno(clip_tpm_replay(ctx, NULL, NULL, &e), -EBADMSG);
	assert_message(e, "PCR 23 does not match");
	e = clip_error_free(e);
	clip_ctx_unref(ctx);
	swtpm_stop(&s);
}

Test(tpm, measure_arguments_and_another_pcr)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	struct clip_tpm_opts o = { .size = sizeof(o) };
	uint8_t zero[32] = { 0 }, v[32];
	char name[257];
	struct clip_ctx *ctx;
	struct swtpm s;

	swtpm_new(&s);
	ctx = tpm_ctx(state, &s);
	assert_errno(clip_tpm_measure(ctx, "", "x", 1, NULL), -EINVAL);
	assert_errno(clip_tpm_measure(ctx, NULL, "x", 1, NULL), -EINVAL);
	assert_errno(clip_tpm_measure(ctx, "cage:\ta", "x", 1, NULL), -EINVAL);
	assert_errno(clip_tpm_measure(ctx, "cage:\xc3\xa9", "x", 1, NULL), -EINVAL);
	assert_errno(clip_tpm_measure(ctx, "cage:a", NULL, 1, NULL), -EINVAL);
	memset(name, 'n', 256);
	name[256] = '\0';
	assert_errno(clip_tpm_measure(ctx, name, "x", 1, NULL), -EINVAL);
	name[255] = '\0';
	cr_assert_eq(clip_tpm_measure(ctx, name, "x", 1, NULL), 0, "255 characters are fine");
	cr_assert_eq(clip_tpm_measure(ctx, "empty", NULL, 0, NULL), 0, "so is no data");

	o.tcti = s.tcti;
	o.measure_pcr = 16;
	cr_assert_eq(clip_ctx_set_tpm_options(ctx, &o), 0);
	cr_assert_eq(clip_tpm_pcr_read(ctx, 16, v, NULL), 0);
	cr_assert_eq(memcmp(v, zero, 32), 0);
	/* PCR 16 is at its reset value, but the log has no event for it: the same log goes on. */
	cr_assert_eq(clip_tpm_measure(ctx, "cage:b", "B", 1, NULL), 0);
	cr_assert_eq(clip_tpm_pcr_read(ctx, 16, v, NULL), 0);
	cr_assert_neq(memcmp(v, zero, 32), 0, "PCR 16 was extended");
	cr_assert_eq(clip_tpm_replay(ctx, NULL, NULL, NULL), 3);
	clip_ctx_unref(ctx);
	swtpm_stop(&s);
}

Test(tpm, concurrent_measurements_keep_log_and_pcr_in_step)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	struct clip_error *e = NULL;
	struct clip_ctx *ctx;
	struct swtpm s;
	pid_t pids[2];

	swtpm_new(&s);
	for (int c = 0; c < 2; c++) {
		pids[c] = fork();
		cr_assert_geq(pids[c], 0);
		if (pids[c] == 0) {
			/* No Criterion here (its logging hangs in a forked child). */
			struct clip_tpm_opts o = { .size = sizeof(o), .tcti = s.tcti };
			struct clip_ctx *child = NULL;
			int bad = clip_ctx_new(&child) < 0 ||
				  clip_ctx_set_state_dir(child, state) < 0 ||
				  clip_ctx_set_tpm_options(child, &o) < 0;

			for (int i = 0; i < 10 && !bad; i++)
				bad |= clip_tpm_measure(child, c ? "cage:b" : "cage:a", &i,
							sizeof(i), NULL) != 0;
			clip_ctx_unref(child);
			_exit(bad);
		}
	}
	for (int c = 0; c < 2; c++) {
		int status;

		cr_assert_eq(waitpid(pids[c], &status, 0), pids[c]);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(clip_tpm_replay(ctx, NULL, NULL, &e), 20, "%s", clip_error_get_message(e));
	clip_ctx_unref(ctx);
	swtpm_stop(&s);
}

/* ---- measured cages ------------------------------------------------------ */

static void
skip_unless_cages(void)
{
	if (!test_is_root() && access("/proc/self/ns/user", F_OK) != 0)
		cr_skip_test("no user namespaces: no cages");
	if (RUNNING_ON_VALGRIND)
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
}

static struct clip_cage *
cage_of(struct clip_ctx *ctx, const char *text)
{
	struct clip_cage_profile *p = NULL;
	struct clip_cage *c = NULL;
	struct clip_error *e = NULL;

	cr_assert_eq(clip_cage_profile_parse(&p, "t.cage", text, strlen(text), &e), 0, "%s",
		     clip_error_get_message(e));
	cr_assert_eq(clip_cage_new(&c, ctx, p, NULL), 0);
	clip_cage_profile_unref(p);
	return c;
}

/* Start a cage, run /bin/true in it, stop it; its canonical profile into @canonical. */
static void
run_true_in_cage(struct clip_ctx *ctx, const char *text, char **canonical)
{
	const char *argv[] = { "/bin/true", NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv };
	struct clip_cage *c = cage_of(ctx, text);
	struct clip_error *e = NULL;
	int pidfd = -1, status = -1;

	cr_assert_eq(clip_cage_start(c, 0, &e), 0, "start: %s", clip_error_get_message(e));
	cr_assert_eq(clip_cage_spawn(c, &o, &pidfd, &e), 0, "spawn: %s", clip_error_get_message(e));
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 0);
	close(pidfd);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	cr_assert_eq(clip_cage_profile_format(clip_cage_get_profile(c), canonical), 0);
	clip_cage_unref(c);
}

static void
pcr23(struct clip_ctx *ctx, uint8_t v[32])
{
	struct clip_error *e = NULL;

	cr_assert_eq(clip_tpm_pcr_read(ctx, 23, v, &e), 0, "%s", clip_error_get_message(e));
}

Test(tpm, a_measured_cage_start_extends_the_pcr_and_replays)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state");
	_cleanup_free_ char *log = state_in(state, "tpm-events.log");
	static const char alpha[] = "[Cage]\nName=alpha\nLevel=s1\n"
				    "[Security]\nWriteXorExecute=no\nMeasure=yes\n"
				    "SystemCallFilter=~mknod chmod\n";
	/* The same profile, written otherwise: the same canonical text, the same digest. */
	static const char alpha_again[] =
		"# alpha again\n[Security]\nSystemCallFilter=~chmod mknod\n"
		"Measure = yes\n[Cage]\nLevel=s1\nName=alpha\n";
	static const char beta[] = "[Cage]\nName=beta\nLevel=s2\n[Security]\nMeasure=yes\n";
	static const char gamma[] = "[Cage]\nName=gamma\nLevel=s3\n";
	const char *whats[] = { "cage:alpha", "cage:beta", "cage:alpha" };
	char *canon[3] = { NULL }, *gamma_canon = NULL, original[8192], edited[8192], *p;
	uint8_t zero[32] = { 0 }, before[32], v[32], want[32], d[32];
	struct seen seen = { 0 };
	struct clip_error *e = NULL;
	struct clip_ctx *ctx;
	struct clip_cage *c;
	struct swtpm s;

	skip_unless_cages();
	swtpm_new(&s);
	ctx = tpm_ctx(state, &s);
	pcr23(ctx, before);
	cr_assert_eq(memcmp(before, zero, 32), 0);

	run_true_in_cage(ctx, alpha, &canon[0]);
	pcr23(ctx, v);
	cr_assert_neq(memcmp(v, before, 32), 0, "the start of a measured cage extends PCR 23");
	expected_pcr(whats, (const char *const *)canon, 1, want);
	cr_assert_eq(memcmp(v, want, 32), 0,
		     "PCR 23 is the chain of cage:alpha's canonical profile");
	cr_assert_eq(clip_tpm_replay(ctx, NULL, NULL, &e), 1, "%s", clip_error_get_message(e));

	run_true_in_cage(ctx, beta, &canon[1]);
	run_true_in_cage(ctx, alpha_again, &canon[2]);
	cr_assert_str_eq(canon[2], canon[0], "two spellings of one profile are one canonical text");
	pcr23(ctx, v);
	expected_pcr(whats, (const char *const *)canon, 3, want);
	cr_assert_eq(memcmp(v, want, 32), 0);
	cr_assert_eq(clip_tpm_replay(ctx, collect, &seen, &e), 3, "%s", clip_error_get_message(e));
	for (int i = 0; i < 3; i++) {
		sha256_of(canon[i], strlen(canon[i]), d);
		cr_assert_eq(seen.pcr[i], 23);
		cr_assert_str_eq(seen.what[i], whats[i]);
		cr_assert_eq(memcmp(seen.digest[i], d, 32), 0, "event %d is the canonical profile",
			     i);
	}

	/* Without Measure: neither the PCR nor the log changes. */
	strcpy(original, slurp(log));
	memcpy(before, v, 32);
	run_true_in_cage(ctx, gamma, &gamma_canon);
	cr_assert(strstr(gamma_canon, "\nMeasure=no\n"), "%s", gamma_canon);
	pcr23(ctx, v);
	cr_assert_eq(memcmp(v, before, 32), 0, "a cage without Measure leaves PCR 23 alone");
	cr_assert_str_eq(slurp(log), original, "and the log");

	/* One byte of the first recorded digest changed: the log no longer matches. */
	strcpy(edited, original);
	p = strchr(edited, '\n') + 1 + 3;
	*p = *p == 'f' ? 'e' : 'f';
	assert_replay_refused(ctx, log, edited, "PCR 23 does not match the event log",
			      "an edited digest");
	write_file(log, original, strlen(original), 0600);
	cr_assert_eq(clip_tpm_replay(ctx, NULL, NULL, &e), 3, "%s", clip_error_get_message(e));
	assert_tpm_empty(&s);

	/* The TPM gone: a measured cage is refused, and nothing of it runs. */
	swtpm_stop(&s);
	c = cage_of(ctx, beta);
	assert_errno(clip_cage_start(c, 0, &e), -ENODEV);
	assert_message(e, "cage beta not started: its profile says Measure=yes and its start "
			  "cannot be measured: no TPM at");
	e = clip_error_free(e);
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_NEW);
	assert_errno(clip_cage_get_fd(c), -ECHILD);
	clip_cage_unref(c);
	cr_assert_str_eq(slurp(log), original, "a refused start leaves the log as it was");
	/* An unmeasured one still starts. */
	free(gamma_canon);
	run_true_in_cage(ctx, gamma, &gamma_canon);

	for (int i = 0; i < 3; i++)
		free(canon[i]);
	free(gamma_canon);
	clip_ctx_unref(ctx);
}

/*
 * A level's data key (doc/data-at-rest.md) with the "tpm" provider: the
 * same for the same TPM, state, level and secret; another with a user
 * secret (the TPM alone does not give it); none from the state directory
 * (the disk) without its TPM, or with another TPM.
 */
Test(tpm, a_level_data_key_needs_the_tpm_and_the_secret)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_in(dir, "state"),
			    *copy = state_in(dir, "copy");
	uint8_t k0[LEVEL_KEY_SIZE], k0s[LEVEL_KEY_SIZE], k2[LEVEL_KEY_SIZE], again[LEVEL_KEY_SIZE];
	struct clip_ctx *ctx;
	struct clip_error *e = NULL;
	struct swtpm s, other;
	char cmd[700];

	swtpm_new(&s);
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(level_key_derive(ctx, "s0", NULL, 0, k0, &e), 0, "%s",
		     e ? clip_error_get_message(e) : "");
	cr_assert_eq(level_key_derive(ctx, "s0", "pw", 2, k0s, NULL), 0);
	cr_assert_eq(level_key_derive(ctx, "s2", NULL, 0, k2, NULL), 0);
	cr_assert_neq(memcmp(k0, k0s, sizeof(k0)), 0, "the secret changes nothing");
	cr_assert_neq(memcmp(k0, k2, sizeof(k0)), 0, "two levels, one key");
	clip_ctx_unref(ctx);
	/* Another context on the same TPM and state: the same keys. */
	ctx = tpm_ctx(state, &s);
	cr_assert_eq(level_key_derive(ctx, "s0", "pw", 2, again, NULL), 0);
	cr_assert_eq(memcmp(k0s, again, sizeof(k0s)), 0);
	cr_assert_eq(level_key_derive(ctx, "s0", "pX", 2, again, NULL), 0);
	cr_assert_neq(memcmp(k0s, again, sizeof(k0s)), 0, "another secret gives the same key");
	clip_ctx_unref(ctx);

	/* The disk without its TPM: a copy of the state with another TPM, or none. */
	snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s'", state, copy);
	cr_assert_eq(system(cmd), 0);
	swtpm_new(&other);
	ctx = tpm_ctx(copy, &other);
	cr_assert_lt(level_key_derive(ctx, "s0", NULL, 0, again, &e), 0,
		     "another TPM opens the copied state");
	cr_log_info("another TPM: %s", clip_error_get_message(e));
	e = clip_error_free(e);
	clip_ctx_unref(ctx);
	swtpm_stop(&s);
	ctx = tpm_ctx(copy, &s);
	assert_errno(level_key_derive(ctx, "s0", NULL, 0, again, &e), -ENOKEY);
	e = clip_error_free(e);
	clip_ctx_unref(ctx);
	swtpm_stop(&other);
}
