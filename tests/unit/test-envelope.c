/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clip_transfer_open_envelope(): what the mediator seals (deliver_receive()
 * with the target's key, as a rule with encrypt does) opens to the same
 * bytes; anything else is refused with -EBADMSG and nothing is written.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <clip/clip.h>

#include "helpers.h"
#include "transfer/transfer-internal.h"

struct env {
	char *dir;
	struct clip_ctx *ctx;
	uint8_t *sealed;
	size_t n;
};

static struct clip_ctx *
ctx_in(const char *dir, const char *name)
{
	char state[600];

	snprintf(state, sizeof(state), "%s/%s", dir, name);
	return test_ctx(state);
}

/* Seal @size bytes of @plain for @target as the mediator does. */
static void
seal(struct env *e, const char *target, const uint8_t *plain, size_t size)
{
	uint8_t key[CLIP_KEY_SIZE];
	struct delivery d;
	char path[600];
	int inbox, src;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/source", e->dir);
	src = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(src, 0);
	cr_assert_eq(write(src, plain, size), (ssize_t)size);
	inbox = open(e->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_eq(envelope_key(e->ctx, target, key, NULL), 0);
	cr_assert_eq(deliver_receive(inbox, src, 1 << 30, key, target, &d, NULL), 0);
	cr_assert(d.encrypted);
	free(e->sealed);
	e->n = size + 8 + 12 + 16;
	e->sealed = malloc(e->n + 1);
	n = pread(d.fd, e->sealed, e->n + 1, 0);
	cr_assert_eq(n, (ssize_t)e->n);
	deliver_abort(&d);
	close(src);
	close(inbox);
}

static void
env_setup(struct env *e, const char *target, const uint8_t *plain, size_t size)
{
	memset(e, 0, sizeof(*e));
	e->dir = test_tmpdir("tmpfs");
	e->ctx = ctx_in(e->dir, "state");
	seal(e, target, plain, size);
}

static void
env_teardown(struct env *e)
{
	free(e->sealed);
	clip_ctx_unref(e->ctx);
	free(e->dir);
}

static int
memfd_with(const void *p, size_t n)
{
	int fd = memfd_create("envelope", MFD_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, p, n), (ssize_t)n);
	cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

/*
 * Open @n bytes at @in for @target with @ctx. The output is returned in
 * *@ret_out (malloc'd) and *@ret_n; *@ret_msg is the error message.
 */
static int
try_open(struct clip_ctx *ctx, const char *target, const void *in, size_t n, uint8_t **ret_out,
	 size_t *ret_n, char **ret_msg)
{
	struct clip_error *e = NULL;
	int in_fd = memfd_with(in, n), out_fd = memfd_with("", 0), r;
	struct stat st;

	r = clip_transfer_open_envelope(ctx, target, in_fd, out_fd, &e);
	cr_assert_eq(fstat(out_fd, &st), 0);
	*ret_n = (size_t)st.st_size;
	*ret_out = malloc(*ret_n + 1);
	cr_assert_eq(pread(out_fd, *ret_out, *ret_n, 0), (ssize_t)*ret_n);
	if (ret_msg)
		*ret_msg = strdup(e ? clip_error_get_message(e) : "");
	if (r < 0)
		cr_assert_eq(clip_error_get_errno(e), r);
	clip_error_free(e);
	close(in_fd);
	close(out_fd);
	return r;
}

/* Refused with -EBADMSG, its message saying @why, and nothing written. */
static void
refused(struct clip_ctx *ctx, const char *target, const void *in, size_t n, const char *why,
	const char *what)
{
	uint8_t *out;
	size_t out_n;
	char *msg;

	assert_errno(try_open(ctx, target, in, n, &out, &out_n, &msg), -EBADMSG);
	cr_assert_eq(out_n, 0, "%s: %zu bytes written on a refusal", what, out_n);
	cr_assert(strstr(msg, why), "%s: '%s' does not say '%s'", what, msg, why);
	free(out);
	free(msg);
}

static uint8_t *
random_bytes(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	for (size_t i = 0; i < n;) {
		ssize_t k = getrandom(p + i, n - i, 0);

		cr_assert_gt(k, 0);
		i += (size_t)k;
	}
	return p;
}

Test(envelope, what_the_mediator_seals_opens_to_the_same_bytes)
{
	/* Over three read chunks, and not a multiple of anything. */
	const size_t sizes[] = { 0, 1, 15, 16, 17, 4096, 3 * 1024 * 1024 + 5 };
	struct env e;

	env_setup(&e, "low", (const uint8_t *)"", 0);
	for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
		uint8_t *plain = random_bytes(sizes[i]), *out;
		size_t n;

		seal(&e, "low", plain, sizes[i]);
		assert_errno(try_open(e.ctx, "low", e.sealed, e.n, &out, &n, NULL), 0);
		cr_assert_eq(n, sizes[i], "size %zu: %zu bytes out", sizes[i], n);
		cr_assert_eq(memcmp(out, plain, n), 0, "size %zu: other bytes out", sizes[i]);
		free(out);
		free(plain);
	}
	env_teardown(&e);
}

Test(envelope, opens_from_a_pipe_to_a_pipe)
{
	struct env e;
	int in[2], out[2];
	char buf[64] = { 0 };

	env_setup(&e, "low", (const uint8_t *)"piped secret", 12);
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	cr_assert_eq(write(in[1], e.sealed, e.n), (ssize_t)e.n);
	close(in[1]);
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", in[0], out[1], NULL), 0);
	close(out[1]);
	cr_assert_eq(read(out[0], buf, sizeof(buf)), 12);
	cr_assert_str_eq(buf, "piped secret");
	close(in[0]);
	close(out[0]);
	env_teardown(&e);
}

Test(envelope, another_target_does_not_open)
{
	struct env e;

	env_setup(&e, "low", (const uint8_t *)"for low only", 12);
	refused(e.ctx, "high", e.sealed, e.n, "not for cage 'high'", "another target");
	refused(e.ctx, "low-2", e.sealed, e.n, "does not verify", "a longer name");
	env_teardown(&e);
}

Test(envelope, every_flipped_byte_is_refused)
{
	struct env e;
	uint8_t *plain = random_bytes(5000);

	env_setup(&e, "low", plain, 5000);
	/* Magic, nonce, first, middle and last cipher text bytes, tag. */
	const size_t at[] = { 0, 7, 8, 13, 19, 20, 2500, e.n - 17, e.n - 16, e.n - 8, e.n - 1 };
	for (size_t i = 0; i < ELEMENTSOF(at); i++) {
		char what[64];

		snprintf(what, sizeof(what), "byte %zu flipped", at[i]);
		for (uint8_t bit = 1; bit; bit <<= 4) {
			e.sealed[at[i]] ^= bit;
			refused(e.ctx, "low", e.sealed, e.n,
				at[i] < 8 ? "not an envelope" : "does not verify", what);
			e.sealed[at[i]] ^= bit;
		}
	}
	/* The untouched envelope still opens: the refusals were the flips'. */
	{
		uint8_t *out;
		size_t n;

		assert_errno(try_open(e.ctx, "low", e.sealed, e.n, &out, &n, NULL), 0);
		cr_assert_eq(n, 5000);
		cr_assert_eq(memcmp(out, plain, n), 0);
		free(out);
	}
	free(plain);
	env_teardown(&e);
}

Test(envelope, a_cut_envelope_is_refused)
{
	struct env e;
	uint8_t *plain = random_bytes(3000);

	env_setup(&e, "low", plain, 3000);
	const struct {
		size_t n;
		const char *why;
	} cuts[] = {
		{ 0, "empty" },
		{ 5, "cut short" },
		{ 8, "cut short" },
		{ 19, "cut short" },
		{ 20, "cut short" },
		{ 35, "cut short" },
		{ 36, "does not verify" },
		{ 1000, "does not verify" },
		{ e.n - 16, "does not verify" },
		{ e.n - 1, "does not verify" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cuts); i++) {
		char what[64];

		snprintf(what, sizeof(what), "cut at %zu", cuts[i].n);
		refused(e.ctx, "low", e.sealed, cuts[i].n, cuts[i].why, what);
	}
	/* One byte more is no better. */
	e.sealed = realloc(e.sealed, e.n + 1);
	e.sealed[e.n] = 0;
	refused(e.ctx, "low", e.sealed, e.n + 1, "does not verify", "a byte appended");
	free(plain);
	env_teardown(&e);
}

Test(envelope, what_is_not_an_envelope_is_refused)
{
	static const char text[] = "just a text file, long enough to look like one";
	struct env e;

	env_setup(&e, "low", (const uint8_t *)"x", 1);
	refused(e.ctx, "low", "", 0, "the file is empty", "an empty file");
	refused(e.ctx, "low", text, sizeof(text) - 1, "not an envelope", "a text");
	refused(e.ctx, "low", "CLIPENV2", 8, "not an envelope", "another version");
	env_teardown(&e);
}

Test(envelope, another_key_does_not_open_and_no_key_is_not_made)
{
	struct env e;
	struct clip_ctx *other, *empty;
	uint8_t *out;
	size_t n;
	char *msg, path[700];
	struct stat st;

	env_setup(&e, "low", (const uint8_t *)"sealed under the first key", 26);
	other = ctx_in(e.dir, "other");
	/* The other context gets a master key of its own by sealing once. */
	{
		uint8_t key[CLIP_KEY_SIZE];

		cr_assert_eq(envelope_key(other, "low", key, NULL), 0);
	}
	refused(other, "low", e.sealed, e.n, "under this context's key", "another key");
	/* A context without any key: -ENOKEY, and opening does not create one. */
	empty = ctx_in(e.dir, "empty");
	cr_assert_eq(mkdir(clip_ctx_get_state_dir(empty), 0700), 0);
	assert_errno(try_open(empty, "low", e.sealed, e.n, &out, &n, &msg), -ENOKEY);
	cr_assert_eq(n, 0);
	cr_assert(strstr(msg, "key"), "%s", msg);
	snprintf(path, sizeof(path), "%s", clip_ctx_get_state_dir(empty));
	{
		DIR *d = opendir(path);
		struct dirent *de;
		int entries = 0;

		cr_assert_not_null(d);
		while ((de = readdir(d)))
			entries += de->d_name[0] != '.';
		closedir(d);
		cr_assert_eq(entries, 0, "opening made a key");
	}
	cr_assert_eq(stat(path, &st), 0);
	free(out);
	free(msg);
	clip_ctx_unref(empty);
	clip_ctx_unref(other);
	env_teardown(&e);
}

Test(envelope, over_what_aes_gcm_holds_is_refused_unread)
{
	struct env e;
	struct clip_error *err = NULL;
	char path[600];
	int fd, out;
	struct stat st;

	env_setup(&e, "low", (const uint8_t *)"x", 1);
	snprintf(path, sizeof(path), "%s/huge", e.dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, e.sealed, e.n), (ssize_t)e.n);
	/* Sparse: 64 GiB and a little, over 2^36 - 32 bytes of plain text. */
	cr_assert_eq(ftruncate(fd, (off_t)(UINT64_C(1) << 36) + 64), 0);
	cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
	out = memfd_with("", 0);
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", fd, out, &err), -EFBIG);
	cr_assert(strstr(clip_error_get_message(err), "more than AES-GCM can hold"), "%s",
		  clip_error_get_message(err));
	cr_assert_eq(lseek(fd, 0, SEEK_CUR), 0, "not read at all");
	cr_assert_eq(fstat(out, &st), 0);
	cr_assert_eq(st.st_size, 0);
	clip_error_free(err);
	close(out);
	close(fd);
	unlink(path);
	env_teardown(&e);
}

/* An output file with a name, so that the plain text is staged in memory. */
static int
named_output(const struct env *e)
{
	char path[600];
	int fd;

	snprintf(path, sizeof(path), "%s/opened", e->dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	return fd;
}

Test(envelope, an_endless_stream_is_refused_at_the_memory_bound, .timeout = 240)
{
	struct clip_error *err = NULL;
	struct stat st;
	struct env e;
	int in[2], out, status;
	pid_t pid;

	env_setup(&e, "low", (const uint8_t *)"x", 1);
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* The head of an envelope, then more than the library holds: 300 MiB. */
		static uint8_t zeros[1 << 16];

		close(in[0]);
		if (write(in[1], e.sealed, 20) != 20)
			_exit(1);
		for (int i = 0; i < 300 * 16; i++)
			if (write(in[1], zeros, sizeof(zeros)) != sizeof(zeros))
				_exit(2);
		_exit(0);
	}
	close(in[1]);
	out = named_output(&e);
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", in[0], out, &err), -EFBIG);
	cr_assert(strstr(clip_error_get_message(err), "goes on past 256 MiB of plain text"), "%s",
		  clip_error_get_message(err));
	clip_error_free(err);
	close(in[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE,
		  "the writer was cut off, not read to its end");
	cr_assert_eq(fstat(out, &st), 0);
	cr_assert_eq(st.st_size, 0);
	close(out);
	env_teardown(&e);
}

Test(envelope, a_sparse_file_is_refused_unread)
{
	struct clip_error *err = NULL;
	char path[600];
	struct env e;
	int fd, out;

	env_setup(&e, "low", (const uint8_t *)"x", 1);
	snprintf(path, sizeof(path), "%s/sparse", e.dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, e.sealed, 20), 20);
	cr_assert_eq(ftruncate(fd, 64 << 20), 0);
	cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
	out = named_output(&e);
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", fd, out, &err), -EBADMSG);
	cr_assert(strstr(clip_error_get_message(err),
			 "the envelope is a sparse file (67108864 bytes, "),
		  "%s", clip_error_get_message(err));
	cr_assert_eq(lseek(fd, 0, SEEK_CUR), 0, "not read at all");
	clip_error_free(err);
	close(fd);
	close(out);
	env_teardown(&e);
}

Test(envelope, a_file_over_the_memory_bound_is_refused_unread)
{
	struct clip_error *err = NULL;
	char *dir = test_tmpdir("ext4"), path[600];
	struct stat st;
	struct env e;
	int fd, out;

	env_setup(&e, "low", (const uint8_t *)"x", 1);
	snprintf(path, sizeof(path), "%s/big", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	/* Allocated, not sparse: 257 MiB of blocks, none written. */
	cr_assert_eq(fallocate(fd, 0, 0, 257 << 20), 0);
	cr_assert_eq(pwrite(fd, e.sealed, 20, 0), 20);
	out = named_output(&e);
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", fd, out, &err), -EFBIG);
	cr_assert(strstr(clip_error_get_message(err),
			 "the envelope has 269484032 bytes, over the 256 MiB of plain text held "
			 "in memory"),
		  "%s", clip_error_get_message(err));
	cr_assert_eq(lseek(fd, 0, SEEK_CUR), 0, "not read at all");
	cr_assert_eq(fstat(out, &st), 0);
	cr_assert_eq(st.st_size, 0);
	clip_error_free(err);
	close(out);
	close(fd);
	unlink(path);
	free(dir);
	env_teardown(&e);
}

Test(envelope, an_unnamed_output_gets_the_plain_text_and_is_cut_back_on_a_refusal)
{
	uint8_t buf[64] = { 0 };
	struct stat st;
	struct env e;
	int in, out;

	env_setup(&e, "low", (const uint8_t *)"straight to disk", 16);
	out = open(e.dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	cr_assert_geq(out, 0);
	cr_assert_eq(write(out, "kept", 4), 4);
	in = memfd_with(e.sealed, e.n);
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", in, out, NULL), 0);
	cr_assert_eq(pread(out, buf, sizeof(buf), 0), 20);
	cr_assert_eq(memcmp(buf, "keptstraight to disk", 20), 0);
	close(in);
	/* A flipped tag: what was decrypted is cut away again, what was there kept. */
	e.sealed[e.n - 1] ^= 1;
	in = memfd_with(e.sealed, e.n);
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", in, out, NULL), -EBADMSG);
	cr_assert_eq(fstat(out, &st), 0);
	cr_assert_eq(st.st_size, 20);
	close(in);
	close(out);
	env_teardown(&e);
}

Test(envelope, bad_arguments)
{
	struct env e;
	struct clip_error *err = NULL, *set = NULL;
	int in, out, ro, wo;

	env_setup(&e, "low", (const uint8_t *)"x", 1);
	in = memfd_with(e.sealed, e.n);
	out = memfd_with("", 0);
	ro = open("/dev/null", O_RDONLY | O_CLOEXEC);
	wo = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_errno(clip_transfer_open_envelope(NULL, "low", in, out, NULL), -EINVAL);
	assert_errno(clip_transfer_open_envelope(e.ctx, NULL, in, out, NULL), -EINVAL);
	assert_errno(clip_transfer_open_envelope(e.ctx, "", in, out, NULL), -EINVAL);
	assert_errno(clip_transfer_open_envelope(e.ctx, "Not A Name", in, out, NULL), -EINVAL);
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", -1, out, NULL), -EINVAL);
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", in, -1, NULL), -EINVAL);
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", in, in, NULL), -EINVAL);
	/* An error already set is never overwritten. */
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", in, ro, &set), -EBADF);
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", in, out, &set), -EINVAL);
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", wo, out, &err), -EBADF);
	clip_error_free(err), err = NULL;
	assert_errno(clip_transfer_open_envelope(e.ctx, "low", in, ro, &err), -EBADF);
	cr_assert(strstr(clip_error_get_message(err), "not open for writing"));
	clip_error_free(err);
	clip_error_free(set);
	close(ro), close(wo), close(in), close(out);
	env_teardown(&e);
}
