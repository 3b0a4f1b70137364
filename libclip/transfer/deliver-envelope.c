/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Envelopes (doc/transfer.md, "Envelopes and their keys"): what a rule
 * with `encrypt` delivers, AES-256-GCM under a key of the target cage's
 * own. Sealed in the pass that copies the document (deliver.c calls
 * envelope_begin() and envelope_end() around it), opened by
 * clip_transfer_open_envelope().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <clip/transfer.h>

#include "base/crypto.h"
#include "base/error.h"
#include "keys/key.h"
#include "base/log.h"
#include "base/test-hooks.h"
#include "proto.h"
#include "transfer-internal.h"
#include "base/util.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

DEFINE_UNREF_CLEANUP(EVP_CIPHER_CTX, sym_EVP_CIPHER_CTX_free)

int
envelope_begin(EVP_CIPHER_CTX *c, const uint8_t *key, const char *aad, int out_fd,
	       struct clip_error **reterr)
{
	uint8_t head[ENVELOPE_MAGIC_SIZE + ENVELOPE_NONCE_SIZE];
	int len;

	memcpy(head, ENVELOPE_MAGIC, ENVELOPE_MAGIC_SIZE);
	if (getrandom(head + ENVELOPE_MAGIC_SIZE, ENVELOPE_NONCE_SIZE, 0) != ENVELOPE_NONCE_SIZE)
		return error_set(reterr, -EIO, "getrandom failed");
	if (!sym_EVP_EncryptInit_ex(c, sym_EVP_aes_256_gcm(), NULL, key,
				    head + ENVELOPE_MAGIC_SIZE) ||
	    !sym_EVP_EncryptUpdate(c, NULL, &len, head, sizeof(head)) ||
	    !sym_EVP_EncryptUpdate(c, NULL, &len, (const uint8_t *)aad, (int)strlen(aad)))
		return error_set(reterr, -EIO, "cannot start the envelope");
	return deliver_write_out(out_fd, head, sizeof(head), reterr);
}

int
envelope_end(EVP_CIPHER_CTX *c, int out_fd, struct clip_error **reterr)
{
	uint8_t tag[ENVELOPE_TAG_SIZE], rest[32];
	int len = 0;

	if (!sym_EVP_EncryptFinal_ex(c, rest, &len) ||
	    !sym_EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, sizeof(tag), tag))
		return error_set(reterr, -EIO, "cannot seal the envelope");
	if (len > 0 && deliver_write_out(out_fd, rest, (size_t)len, reterr) < 0)
		return -EIO;
	return deliver_write_out(out_fd, tag, sizeof(tag), reterr);
}

/* Sealing may create the master key; opening never does (no key: -ENOKEY). */
static int
target_key(struct clip_ctx *ctx, const char *target, bool create, uint8_t out[CLIP_KEY_SIZE],
	   struct clip_error **reterr)
{
	char info[128];
	int n;

	n = snprintf(info, sizeof(info), "libclip envelope v1 target: %s", target);
	if (n < 0 || (size_t)n >= sizeof(info))
		return -EINVAL;
	return ctx_mac(ctx, KEY_PURPOSE_ENVELOPE, create, info, (size_t)n, out, reterr);
}

int
envelope_key(struct clip_ctx *ctx, const char *target, uint8_t out[CLIP_KEY_SIZE],
	     struct clip_error **reterr)
{
	return target_key(ctx, target, true, out, reterr);
}

int
envelope_open(const uint8_t key[CLIP_KEY_SIZE], const char *aad, const uint8_t *in, size_t n,
	      uint8_t *out)
{
	_cleanup_(sym_EVP_CIPHER_CTX_freep) EVP_CIPHER_CTX *c = NULL;
	const size_t head = ENVELOPE_MAGIC_SIZE + ENVELOPE_NONCE_SIZE;
	int len = 0, fin = 0, r = crypto_load(NULL);

	if (r < 0)
		return r;
	c = sym_EVP_CIPHER_CTX_new();
	if (!c)
		return -ENOMEM;
	if (n < head + ENVELOPE_TAG_SIZE || n - head - ENVELOPE_TAG_SIZE > INT32_MAX ||
	    memcmp(in, ENVELOPE_MAGIC, ENVELOPE_MAGIC_SIZE) != 0)
		return -EBADMSG;
	if (!sym_EVP_DecryptInit_ex(c, sym_EVP_aes_256_gcm(), NULL, key,
				    in + ENVELOPE_MAGIC_SIZE) ||
	    !sym_EVP_DecryptUpdate(c, NULL, &len, in, (int)head) ||
	    !sym_EVP_DecryptUpdate(c, NULL, &len, (const uint8_t *)aad, (int)strlen(aad)) ||
	    !sym_EVP_DecryptUpdate(c, out, &len, in + head, (int)(n - head - ENVELOPE_TAG_SIZE)) ||
	    !sym_EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, ENVELOPE_TAG_SIZE,
				     (void *)(in + n - ENVELOPE_TAG_SIZE)) ||
	    sym_EVP_DecryptFinal_ex(c, out + len, &fin) <= 0)
		return -EBADMSG;
	return len + fin;
}

/*
 * clip_transfer_open_envelope(): one pass decrypts into an unnamed
 * memory file while GCM authenticates; only once the tag verifies is the
 * plain text copied to the caller's fd, so a refused envelope writes
 * nothing there. Reading the input twice instead (verify, then decrypt)
 * would let whoever can write the envelope change it between the passes.
 */
#define ENVELOPE_HEAD (ENVELOPE_MAGIC_SIZE + ENVELOPE_NONCE_SIZE)
/* One AES-GCM message: at most 2^36 - 32 bytes of plain text (NIST SP 800-38D). */
#define ENVELOPE_MAX ((UINT64_C(1) << 36) - 32 + ENVELOPE_HEAD + ENVELOPE_TAG_SIZE)
/*
 * The most plain text held in memory before it is authenticated: a
 * larger regular file is refused before it is read, a stream that goes on
 * (a pipe) when it gets there, rather than followed until memory runs
 * out. Larger documents are opened into an unnamed file (on disk).
 */
#define ENVELOPE_MEMORY_MAX (UINT64_C(256) << 20)
/* Cipher text has no holes: a sparse "envelope" over this size is refused unread. */
#define ENVELOPE_SPARSE_MIN (UINT64_C(1) << 20)

/* How much of the envelope may be read, and where its plain text goes. */
struct envelope_io {
	uint64_t in_max; /* the bytes from in_fd's offset to its end when a regular file, else 0 */
	uint64_t plain_max; /* the most plain text staged in memory, 0: no bound */
	int out_fd; /* the staging memfd, or the caller's unnamed file */
	off_t out_start; /* where the caller's unnamed file was, to cut it back */
	bool direct; /* writing straight into the caller's unnamed file */
};

static int
envelope_refused(uint64_t size, const char *target, struct clip_error **reterr)
{
	if (size == 0)
		return error_set(reterr, -EBADMSG, "the file is empty: not an envelope");
	return error_set(reterr, -EBADMSG,
			 "the envelope does not verify: it was altered or cut, or it is not for "
			 "cage '%s' under this context's key",
			 target);
}

/* Read up to @n bytes; fewer only at end of file. */
static ssize_t
read_some(int fd, uint8_t *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = read(fd, p + got, n - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

static int
envelope_head(EVP_CIPHER_CTX *c, int in_fd, const uint8_t *key, const char *target,
	      struct clip_error **reterr)
{
	uint8_t head[ENVELOPE_HEAD];
	ssize_t n = read_some(in_fd, head, sizeof(head));

	if (n < 0)
		return error_set_errno(reterr, (int)n, "cannot read the envelope");
	if (n == 0)
		return envelope_refused(0, target, reterr);
	if (memcmp(head, ENVELOPE_MAGIC,
		   (size_t)n < ENVELOPE_MAGIC_SIZE ? (size_t)n : ENVELOPE_MAGIC_SIZE) != 0)
		return error_set(reterr, -EBADMSG,
				 "not an envelope: it does not start with " ENVELOPE_MAGIC);
	if ((size_t)n < sizeof(head))
		return error_set(reterr, -EBADMSG,
				 "the envelope is cut short: %zd bytes, at least %d needed", n,
				 ENVELOPE_HEAD + ENVELOPE_TAG_SIZE);
	if (!sym_EVP_DecryptInit_ex(c, sym_EVP_aes_256_gcm(), NULL, key,
				    head + ENVELOPE_MAGIC_SIZE) ||
	    !sym_EVP_DecryptUpdate(c, NULL, &(int){ 0 }, head, (int)sizeof(head)) ||
	    !sym_EVP_DecryptUpdate(c, NULL, &(int){ 0 }, (const uint8_t *)target,
				   (int)strlen(target)))
		return error_set(reterr, -EIO, "cannot start opening the envelope");
	return 0;
}

/* Decrypt the rest of @in_fd into @tmp_fd, the last 16 bytes being the tag. */
static int
envelope_body(EVP_CIPHER_CTX *c, int in_fd, const struct envelope_io *io, const char *target,
	      struct clip_error **reterr)
{
	_cleanup_free_ uint8_t *in = malloc(DELIVER_CHUNK + ENVELOPE_TAG_SIZE),
			       *out = malloc(DELIVER_CHUNK + 32);
	uint64_t total = ENVELOPE_HEAD;
	size_t held = 0; /* bytes at the start of @in that may be the tag */
	int len = 0, r;

	if (!in || !out)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read_some(in_fd, in + held, DELIVER_CHUNK);
		size_t avail;

		if (n < 0)
			return error_set_errno(reterr, (int)n, "cannot read the envelope");
		if (n == 0)
			break;
		total += (uint64_t)n;
		/* A regular file read past the size it had: someone writes to it now. */
		if (io->in_max > 0 && total > io->in_max)
			return error_set(reterr, -EBADMSG,
					 "the envelope grows while it is read (%llu bytes when "
					 "opened): someone is writing to it",
					 (unsigned long long)io->in_max);
		if (io->plain_max > 0 && total > io->plain_max + ENVELOPE_HEAD + ENVELOPE_TAG_SIZE)
			return error_set(
				reterr, -EFBIG,
				"the envelope goes on past %llu MiB of plain text, the most "
				"held in memory before it is authenticated: open it into a "
				"file (clipctl transfer open -o)",
				(unsigned long long)(io->plain_max >> 20));
		if (total > ENVELOPE_MAX)
			return error_set(reterr, -EFBIG,
					 "the envelope is over %llu bytes, more than AES-GCM can "
					 "hold",
					 (unsigned long long)ENVELOPE_MAX);
		avail = held + (size_t)n;
		if (avail <= ENVELOPE_TAG_SIZE) {
			held = avail;
			continue;
		}
		if (!sym_EVP_DecryptUpdate(c, out, &len, in, (int)(avail - ENVELOPE_TAG_SIZE)))
			return error_set(reterr, -EIO, "cannot decrypt");
		r = write_full(io->out_fd, out, (size_t)len);
		if (r < 0 && io->direct)
			return error_set_errno(reterr, r == -ENOSPC || r == -EDQUOT ? r : -EIO,
					       "cannot write the opened document");
		if (r < 0)
			return error_set_errno(reterr, -ENOMEM,
					       "cannot hold the opened document in memory");
		memmove(in, in + avail - ENVELOPE_TAG_SIZE, ENVELOPE_TAG_SIZE);
		held = ENVELOPE_TAG_SIZE;
	}
	if (held < ENVELOPE_TAG_SIZE)
		return error_set(reterr, -EBADMSG,
				 "the envelope is cut short: %llu bytes, at least %d needed",
				 (unsigned long long)(total), ENVELOPE_HEAD + ENVELOPE_TAG_SIZE);
	if (!sym_EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, ENVELOPE_TAG_SIZE, in) ||
	    sym_EVP_DecryptFinal_ex(c, out, &len) <= 0)
		return envelope_refused(total, target, reterr);
	return 0;
}

/* The verified plain text, from the memory file to the caller. */
static int
envelope_expose(int tmp_fd, int out_fd, struct clip_error **reterr)
{
	_cleanup_free_ uint8_t *buf = malloc(DELIVER_CHUNK);

	if (!buf)
		return -ENOMEM;
	if (lseek(tmp_fd, 0, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		ssize_t n = read_some(tmp_fd, buf, DELIVER_CHUNK);
		int r;

		if (n < 0)
			return error_set_errno(reterr, (int)n, "cannot read the opened document");
		if (n == 0)
			return 0;
		r = write_full(out_fd, buf, (size_t)n);
		if (r == -ENOSPC || r == -EDQUOT)
			return error_set_errno(reterr, r, "cannot write the opened document");
		if (r < 0)
			return error_set_errno(reterr, -EIO, "cannot write the opened document: %s",
					       strerror(-r));
	}
}

/*
 * What bounds the reading (test hook "envelope-bound" switches it off): a
 * regular file is read up to the size it has now, and refused unread when
 * sparse; the plain text staged in memory is at most ENVELOPE_MEMORY_MAX.
 * An unnamed regular output file (O_TMPFILE, memfd: no name anyone can
 * open it by) gets the plain text directly, without that bound, and is
 * cut back on a refusal.
 */
static int
envelope_bounds(int in_fd, const struct stat *st, int out_fd, const struct stat *out_st,
		struct envelope_io *io, struct clip_error **reterr)
{
	off_t pos;

	if (test_hook_disabled("envelope-bound"))
		return 0;
	if (S_ISREG(out_st->st_mode) && out_st->st_nlink == 0) {
		io->out_start = lseek(out_fd, 0, SEEK_CUR);
		io->direct = io->out_start >= 0;
	}
	io->plain_max = io->direct ? 0 : ENVELOPE_MEMORY_MAX;
	if (!S_ISREG(st->st_mode))
		return 0;
	pos = lseek(in_fd, 0, SEEK_CUR);
	if (pos < 0)
		return error_set_errno(reterr, -errno, "cannot seek the envelope");
	io->in_max = st->st_size > pos ? (uint64_t)(st->st_size - pos) : 0;
	/* An empty rest is refused as empty by envelope_head(); no bound to keep. */
	if (io->in_max == 0)
		io->in_max = 1;
	if ((uint64_t)st->st_size >= ENVELOPE_SPARSE_MIN &&
	    (uint64_t)st->st_blocks * 512 < (uint64_t)st->st_size / 2)
		return error_set(reterr, -EBADMSG,
				 "the envelope is a sparse file (%llu bytes, %llu allocated): "
				 "cipher text has no holes, refused unread",
				 (unsigned long long)st->st_size,
				 (unsigned long long)st->st_blocks * 512);
	if (io->plain_max > 0 && io->in_max > io->plain_max + ENVELOPE_HEAD + ENVELOPE_TAG_SIZE)
		return error_set(reterr, -EFBIG,
				 "the envelope has %llu bytes, over the %llu MiB of plain text "
				 "held in memory before it is authenticated: open it into a file "
				 "(clipctl transfer open -o)",
				 (unsigned long long)io->in_max,
				 (unsigned long long)(io->plain_max >> 20));
	return 0;
}

static int
open_envelope(struct clip_ctx *ctx, const char *target, int in_fd, int out_fd,
	      struct clip_error **reterr)
{
	_cleanup_(sym_EVP_CIPHER_CTX_freep) EVP_CIPHER_CTX *c = NULL;
	_cleanup_close_ int tmp = -1;
	uint8_t key[CLIP_KEY_SIZE];
	struct envelope_io io = { .out_fd = -1 };
	struct stat st, out_st;
	int in_flags = fcntl(in_fd, F_GETFL), out_flags = fcntl(out_fd, F_GETFL), r;

	r = crypto_load(reterr);
	if (r < 0)
		return r;
	c = sym_EVP_CIPHER_CTX_new();
	if (!c)
		return -ENOMEM;
	if (in_flags < 0 || fd_is_opath(in_fd) != 0 || (in_flags & O_ACCMODE) == O_WRONLY)
		return error_set(reterr, -EBADF,
				 "the envelope's descriptor is not open for reading");
	if (out_flags < 0 || fd_is_opath(out_fd) != 0 || (out_flags & O_ACCMODE) == O_RDONLY)
		return error_set(reterr, -EBADF, "the output descriptor is not open for writing");
	if (fstat(in_fd, &st) < 0 || fstat(out_fd, &out_st) < 0)
		return error_set_errno(reterr, -errno, "cannot stat the envelope or the output");
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > ENVELOPE_MAX)
		return error_set(reterr, -EFBIG,
				 "the envelope has %llu bytes, more than AES-GCM can hold",
				 (unsigned long long)st.st_size);
	r = envelope_bounds(in_fd, &st, out_fd, &out_st, &io, reterr);
	if (r < 0)
		return r;
	r = target_key(ctx, target, false, key, reterr);
	if (r == -ENOENT || r == -ENOKEY)
		return error_set(reterr, -ENOKEY,
				 "no envelope key in this context: nothing to "
				 "open envelopes with");
	if (r < 0)
		return error_set_errno(reterr, r, "cannot get the envelope key");
	r = envelope_head(c, in_fd, key, target, reterr);
	secure_wipe(key, sizeof(key));
	if (r < 0)
		return r;
	if (io.direct) {
		io.out_fd = out_fd;
		r = envelope_body(c, in_fd, &io, target, reterr);
		/* Nothing of a refused envelope stays: the file is cut back. */
		if (r < 0 && ftruncate(out_fd, io.out_start) < 0)
			return error_set_errno(reterr, -EIO, "cannot cut the refused plain text");
		return r;
	}
	tmp = memfd_create("clip-envelope", MFD_CLOEXEC | MFD_NOEXEC_SEAL);
	if (tmp < 0 && errno == EINVAL)
		tmp = memfd_create("clip-envelope", MFD_CLOEXEC);
	if (tmp < 0)
		return error_set_errno(reterr, -ENOMEM, "cannot make a memory file");
	io.out_fd = tmp;
	r = envelope_body(c, in_fd, &io, target, reterr);
	if (r < 0)
		return r;
	return envelope_expose(tmp, out_fd, reterr);
}

CLIP_EXPORT int
clip_transfer_open_envelope(struct clip_ctx *ctx, const char *target, int in_fd, int out_fd,
			    struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, target, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, in_fd >= 0 && out_fd >= 0 && in_fd != out_fd,
			      api_return(-EINVAL, reterr));

	/* A cage's name is what a person typed: said, not a client bug. */
	if (!proto_cage_name_valid(target, strnlen(target, PROTO_CAGE_MAX + 1)))
		return api_return(error_set(reterr, -EINVAL,
					    "'%.64s' is not a cage name: 1 to %d of a-z 0-9 - _, "
					    "starting with a letter or a digit, not s<digit>",
					    target, PROTO_CAGE_MAX),
				  reterr);
	return api_return(open_envelope(ctx, target, in_fd, out_fd, reterr), reterr);
}
