/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Atomic, sanitised delivery into an inbox; see transfer-internal.h and doc/transfer.md. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include <clip/cage.h>
#include <clip/label.h>
#include <clip/transfer.h>

#include "base/crypto.h"
#include "base/error.h"
#include "keys/key.h"
#include "base/log.h"
#include "proto.h"
#include "transfer-internal.h"
#include "base/utf8.h"
#include "base/util.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

#define DELIVER_CHUNK (1024 * 1024)
#define DELIVER_WRITEBACK (8 * DELIVER_CHUNK)
#define SMALL_BUF (32 * 1024) /* twice on a worker's stack */

DEFINE_UNREF_CLEANUP(EVP_MD_CTX, sym_EVP_MD_CTX_free)
DEFINE_UNREF_CLEANUP(EVP_CIPHER_CTX, sym_EVP_CIPHER_CTX_free)

static const char *
file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISFIFO(mode))
		return "a pipe";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	if (S_ISLNK(mode))
		return "a symbolic link";
	return "not a regular file";
}

static int
check_source(int untrusted_src, uint64_t max_size, struct stat *st, struct clip_error **reterr)
{
	int flags, r;

	r = fd_is_opath(untrusted_src);
	if (r < 0)
		return error_set_errno(reterr, r, "the document's descriptor is not valid");
	if (fstat(untrusted_src, st) < 0)
		return error_set_errno(reterr, -errno, "cannot stat the document");
	if (!S_ISREG(st->st_mode))
		return error_set(reterr, -EMEDIUMTYPE,
				 "the document is %s: only regular files are transferred",
				 file_kind(st->st_mode));
	flags = fcntl(untrusted_src, F_GETFL);
	if (r > 0 || flags < 0 || (flags & O_ACCMODE) == O_WRONLY)
		return error_set(reterr, -EBADF,
				 "the document's descriptor is not open for reading");
	if ((uint64_t)st->st_size > max_size)
		return error_set(reterr, -EFBIG,
				 "the document has %llu bytes, over the limit of %llu",
				 (unsigned long long)st->st_size, (unsigned long long)max_size);
	return 0;
}

/* A write (or fsync) into the target inbox that failed with @r. */
static int
inbox_error(struct clip_error **reterr, int r)
{
	if (r == -ENOSPC || r == -EDQUOT)
		return error_set_errno(reterr, r, "the target inbox is full");
	return error_set_errno(reterr, r, "cannot write into the target inbox");
}

static int
write_out(int fd, const void *p, size_t n, struct clip_error **reterr)
{
	int r = write_full(fd, p, n);

	return r < 0 ? inbox_error(reterr, r) : 0;
}

/*
 * The next chunk of the document, at @off, into @in: hashed, and encrypted
 * into @out with @c. The number of bytes read (and made), or -errno.
 */
static ssize_t
chunk_take(int src, uint64_t off, uint8_t *in, size_t want, EVP_MD_CTX *md, EVP_CIPHER_CTX *c,
	   uint8_t *out, struct clip_error **reterr)
{
	ssize_t n;
	int clen = 0;

	do
		n = pread(src, in, want, (off_t)off);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return error_set_errno(reterr, -errno, "cannot read the document");
	if (n == 0)
		return error_set(reterr, -EBUSY, "the document shrank while it was read");
	if (!sym_EVP_DigestUpdate(md, in, (size_t)n))
		return -EIO;
	/* GCM is a stream mode: as many bytes out as in. */
	if (c && (!sym_EVP_EncryptUpdate(c, out, &clen, in, (int)n) || clen != n))
		return error_set(reterr, -EIO, "cannot encrypt");
	return n;
}

static int
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
	return write_out(out_fd, head, sizeof(head), reterr);
}

static int
envelope_end(EVP_CIPHER_CTX *c, int out_fd, struct clip_error **reterr)
{
	uint8_t tag[ENVELOPE_TAG_SIZE], rest[32];
	int len = 0;

	if (!sym_EVP_EncryptFinal_ex(c, rest, &len) ||
	    !sym_EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, sizeof(tag), tag))
		return error_set(reterr, -EIO, "cannot seal the envelope");
	if (len > 0 && write_out(out_fd, rest, (size_t)len, reterr) < 0)
		return -EIO;
	return write_out(out_fd, tag, sizeof(tag), reterr);
}

/*
 * One pass: each chunk is read once from the cage's fd into a buffer,
 * hashed (and encrypted) from that buffer, and that same buffer is what
 * is written, so the hash is of exactly the delivered bytes. A second
 * thread writes while this one reads and hashes the next chunks: hashing
 * is user time, writing is kernel time, and the two overlap. A few
 * buffers go round between the two.
 *
 * Plain text is written with O_DIRECT where the inbox's file system takes
 * it: the buffer goes to the disk without a second copy into the page
 * cache, and the final fsync() has little left to wait for. Chunks are
 * aligned in memory and in the file; the first short chunk (the tail, or
 * a short read) switches back to buffered writes for the rest.
 */
#define PIPE_SLOTS 4
#define DIRECT_ALIGN 4096

struct pipeline {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int fd;
	uint8_t *slot[PIPE_SLOTS];
	size_t len[PIPE_SLOTS];
	unsigned head, count;
	uint64_t written;
	bool direct, closing;
	int error;
};

static bool
direct_set(int fd, bool on)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0)
		return false;
	return fcntl(fd, F_SETFL, on ? flags | O_DIRECT : flags & ~O_DIRECT) == 0;
}

/* Write one chunk at its offset; a direct write the file system refuses is retried buffered. */
static int
pipeline_write(struct pipeline *p, const uint8_t *b, size_t len)
{
	size_t done = 0;

	if (p->direct && len % DIRECT_ALIGN != 0)
		p->direct = !direct_set(p->fd, false);
	while (done < len) {
		ssize_t n = pwrite(p->fd, b + done, len - done, (off_t)(p->written + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL && p->direct && direct_set(p->fd, false)) {
			p->direct = false;
			continue;
		}
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
		/* A short direct write leaves the rest unaligned. */
		if (done < len && p->direct)
			p->direct = !direct_set(p->fd, false);
	}
	return 0;
}

static void *
pipeline_writer(void *userdata)
{
	struct pipeline *p = userdata;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		unsigned h;
		int r;

		while (p->count == 0 && !p->closing)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->count == 0)
			break;
		h = p->head;
		pthread_mutex_unlock(&p->lock);
		r = pipeline_write(p, p->slot[h], p->len[h]);
		pthread_mutex_lock(&p->lock);
		if (r < 0) {
			p->error = r;
			break;
		}
		p->written += p->len[h];
		/* Buffered: start the write-back early, so that fsync() waits for the tail only. */
		if (!p->direct && p->written % DELIVER_WRITEBACK == 0)
			(void)sync_file_range(p->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
		p->head = (h + 1) % PIPE_SLOTS;
		p->count--;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* A free slot to fill, or NULL when the writer failed. */
static uint8_t *
pipeline_take(struct pipeline *p, unsigned *ret)
{
	uint8_t *b = NULL;

	pthread_mutex_lock(&p->lock);
	while (p->count == PIPE_SLOTS && !p->error)
		pthread_cond_wait(&p->cond, &p->lock);
	if (!p->error) {
		*ret = (p->head + p->count) % PIPE_SLOTS;
		b = p->slot[*ret];
	}
	pthread_mutex_unlock(&p->lock);
	return b;
}

static void
pipeline_give(struct pipeline *p, unsigned i, size_t len)
{
	pthread_mutex_lock(&p->lock);
	p->len[i] = len;
	p->count++;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* Let the writer drain (or stop), then its error. */
static int
pipeline_end(struct pipeline *p, pthread_t t)
{
	pthread_mutex_lock(&p->lock);
	p->closing = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(t, NULL);
	if (p->direct)
		(void)direct_set(p->fd, false);
	return p->error;
}

/* One chunk at most: read, hash (maybe encrypt) and write in this thread, buffered. */
static int
copy_small(int src, uint64_t size, int out_fd, EVP_MD_CTX *md, EVP_CIPHER_CTX *c,
	   struct clip_error **reterr)
{
	uint8_t in[SMALL_BUF], out[SMALL_BUF];
	uint64_t off = 0;

	while (off < size) {
		size_t want = size - off < sizeof(in) ? (size_t)(size - off) : sizeof(in);
		ssize_t n = chunk_take(src, off, in, want, md, c, out, reterr);
		int r;

		if (n < 0)
			return (int)n;
		r = write_out(out_fd, c ? out : in, (size_t)n, reterr);
		if (r < 0)
			return r;
		off += (uint64_t)n;
	}
	return 0;
}

/*
 * Copy exactly @size bytes from the current end of @out_fd (after an
 * envelope's header), hashing and maybe encrypting; the source is only
 * pread. A document of one chunk or less is copied in this thread, from
 * the stack: a writer thread and its buffers (an mmap() whose munmap()
 * interrupts every CPU the mediator's threads run on) cost more than
 * they save there.
 */
static int
copy_in(int src, uint64_t size, int out_fd, EVP_MD_CTX *md, EVP_CIPHER_CTX *c,
	struct clip_error **reterr)
{
	const size_t stride = DELIVER_CHUNK + DIRECT_ALIGN;
	const bool big = size > DELIVER_CHUNK;
	_cleanup_free_ uint8_t *buf = big && c ? malloc(DELIVER_CHUNK) : NULL,
			       *slots = big ? aligned_alloc(DIRECT_ALIGN, PIPE_SLOTS * stride)
					    : NULL;
	struct pipeline p = { .lock = PTHREAD_MUTEX_INITIALIZER,
			      .cond = PTHREAD_COND_INITIALIZER,
			      .fd = out_fd };
	off_t start = lseek(out_fd, 0, SEEK_CUR);
	uint64_t off = 0;
	pthread_t writer;
	int r = 0;

	if (size <= DELIVER_CHUNK)
		return copy_small(src, size, out_fd, md, c, reterr);
	if ((c && !buf) || !slots)
		return -ENOMEM;
	if (start < 0)
		return inbox_error(reterr, -errno);
	p.written = (uint64_t)start;
	for (unsigned i = 0; i < PIPE_SLOTS; i++)
		p.slot[i] = slots + i * stride;
	/* Cipher text follows a header of its own: buffered. */
	p.direct = !c && start == 0 && direct_set(out_fd, true);
	if (pthread_create(&writer, NULL, pipeline_writer, &p) != 0) {
		if (p.direct)
			(void)direct_set(out_fd, false);
		return -ENOMEM;
	}
	while (off < size && r == 0) {
		size_t want = size - off < DELIVER_CHUNK ? (size_t)(size - off) : DELIVER_CHUNK;
		unsigned i = 0;
		uint8_t *out = pipeline_take(&p, &i);
		/* Plain text is read straight into the slot; cipher text is made there. */
		uint8_t *in = c ? buf : out;
		ssize_t n;

		if (!out)
			break;
		n = chunk_take(src, off, in, want, md, c, out, reterr);
		if (n < 0) {
			r = (int)n;
			break;
		}
		pipeline_give(&p, i, (size_t)n);
		off += (uint64_t)n;
	}
	if (pipeline_end(&p, writer) < 0 && r == 0)
		return inbox_error(reterr, p.error);
	if (r == 0 && lseek(out_fd, (off_t)p.written, SEEK_SET) < 0)
		return inbox_error(reterr, -errno);
	return r;
}

/* One byte more than the size at fstat() time means the file grew while read. */
static int
check_growth(int src, uint64_t size, struct clip_error **reterr)
{
	uint8_t byte;

	for (;;) {
		ssize_t n = pread(src, &byte, 1, (off_t)size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n != 0)
			return error_set(reterr, -EBUSY, "the document grew while it was read");
		return 0;
	}
}

static int
receive(int inbox_fd, int untrusted_src, uint64_t max_size, const uint8_t *key, const char *aad,
	struct delivery *d, struct clip_error **reterr)
{
	_cleanup_(sym_EVP_MD_CTX_freep) EVP_MD_CTX *md = NULL;
	_cleanup_(sym_EVP_CIPHER_CTX_freep) EVP_CIPHER_CTX *c = NULL;
	struct stat st, after;
	unsigned mdlen = 0;
	int r;

	r = crypto_load(reterr);
	if (r < 0)
		return r;
	md = sym_EVP_MD_CTX_new();
	c = key ? sym_EVP_CIPHER_CTX_new() : NULL;
	if (!md || (key && !c))
		return -ENOMEM;
	r = check_source(untrusted_src, max_size, &st, reterr);
	if (r < 0)
		return r;
	d->fd = openat(inbox_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0640);
	if (d->fd < 0)
		return error_set_errno(reterr, -errno, "cannot create a file in the target inbox");
	if (!sym_EVP_DigestInit_ex(md, sym_EVP_sha256(), NULL))
		return -EIO;
	(void)posix_fadvise(untrusted_src, 0, 0, POSIX_FADV_SEQUENTIAL);
	if (c) {
		r = envelope_begin(c, key, aad, d->fd, reterr);
		if (r < 0)
			return r;
	}
	r = copy_in(untrusted_src, (uint64_t)st.st_size, d->fd, md, c, reterr);
	if (r < 0)
		return r;
	r = check_growth(untrusted_src, (uint64_t)st.st_size, reterr);
	if (r < 0)
		return r;
	if (c) {
		r = envelope_end(c, d->fd, reterr);
		if (r < 0)
			return r;
	}
	if (fstat(untrusted_src, &after) < 0)
		return error_set_errno(reterr, -errno, "cannot stat the document");
	if (after.st_size != st.st_size || after.st_mtim.tv_sec != st.st_mtim.tv_sec ||
	    after.st_mtim.tv_nsec != st.st_mtim.tv_nsec)
		return error_set(reterr, -EBUSY, "the document changed while it was read");
	if (!sym_EVP_DigestFinal_ex(md, d->sha256, &mdlen) || mdlen != 32)
		return -EIO;
	if (fsync(d->fd) < 0)
		return inbox_error(reterr, -errno);
	d->size = (uint64_t)st.st_size;
	d->encrypted = key != NULL;
	return 0;
}

int
deliver_receive(int inbox_fd, int untrusted_src, uint64_t max_size,
		const uint8_t key[CLIP_KEY_SIZE], const char *aad, struct delivery *d,
		struct clip_error **reterr)
{
	int r;

	*d = (struct delivery)DELIVERY_INIT;
	r = receive(inbox_fd, untrusted_src, max_size, key, aad, d, reterr);
	if (r < 0)
		deliver_abort(d);
	return r;
}

void
deliver_abort(struct delivery *d)
{
	/* An O_TMPFILE never linked disappears with its last descriptor. */
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

void
deliver_sanitize_name(const char *untrusted_name, char out[DELIVER_NAME_MAX + 1])
{
	const size_t max = DELIVER_NAME_MAX - 8;
	size_t n = strnlen(untrusted_name, 4096), o = 0;

	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t k = utf8_decode(untrusted_name + i, n - i, &c);
		bool bad = k == 0 || utf8_is_dangerous(c) || c == '/' || c == '\\';

		if (k == 0)
			k = 1;
		if (o == 0 && (c == '.' || c == ' ' || c == '-'))
			bad = true; /* no hidden file, no option look-alike */
		if (o + (bad ? 1 : k) > max)
			break;
		if (bad)
			out[o++] = '_';
		else {
			memcpy(out + o, untrusted_name + i, k);
			o += k;
		}
		i += k;
	}
	while (o > 0 && (out[o - 1] == ' ' || out[o - 1] == '.'))
		o--;
	out[o] = '\0';
	if (o == 0 || strspn(out, "_") == o)
		strcpy(out, "document");
}

/* "stem-N.ext" for the @n-th collision. */
static void
name_with_suffix(const char *name, unsigned n, char out[DELIVER_NAME_MAX + 1])
{
	const char *dot = strrchr(name, '.');
	size_t stem = dot && dot != name ? (size_t)(dot - name) : strlen(name);

	snprintf(out, DELIVER_NAME_MAX + 1, "%.*s-%u%s", (int)stem, name, n, name + stem);
}

static int
link_unique(int fd, int inbox_fd, const char *base, char ret_name[DELIVER_NAME_MAX + 1],
	    struct clip_error **reterr)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	for (unsigned i = 0; i < 1000; i++) {
		if (i == 0)
			snprintf(ret_name, DELIVER_NAME_MAX + 1, "%s", base);
		else
			name_with_suffix(base, i, ret_name);
		if (linkat(fd, "", inbox_fd, ret_name, AT_EMPTY_PATH) == 0 ||
		    (errno != EEXIST &&
		     linkat(AT_FDCWD, path, inbox_fd, ret_name, AT_SYMLINK_FOLLOW) == 0))
			return 0;
		if (errno != EEXIST)
			return error_set_errno(reterr, -errno,
					       "cannot link the document into the "
					       "target inbox");
	}
	return error_set(reterr, -EEXIST, "a thousand documents named '%s' are in the inbox", base);
}

int
deliver_commit(struct clip_ctx *ctx, struct delivery *d, int inbox_fd, const char *untrusted_name,
	       const struct clip_level *level, unsigned label_flags,
	       char ret_name[DELIVER_NAME_MAX + 1], struct clip_error **reterr)
{
	char base[DELIVER_NAME_MAX + 1];
	struct stat st;
	int r;

	/* Labelled before it has a name: never visible without its label. */
	r = clip_label_set(ctx, d->fd, level, label_flags, reterr);
	if (r < 0)
		goto out;
	/* The target cage owns what lands in its inbox. */
	if (fstat(inbox_fd, &st) == 0 && geteuid() == 0 && fchown(d->fd, st.st_uid, st.st_gid) < 0)
		log_debug(ctx, "cannot give the delivered file to uid %u", (unsigned)st.st_uid);
	deliver_sanitize_name(untrusted_name, base);
	r = link_unique(d->fd, inbox_fd, base, ret_name, reterr);
	if (r < 0)
		goto out;
	if (fsync(inbox_fd) < 0) {
		r = error_set_errno(reterr, -errno, "cannot sync the target inbox");
		(void)unlinkat(inbox_fd, ret_name, 0);
	}
out:
	deliver_abort(d);
	return r;
}

/*
 * The content filter runs in a cage of its own (doc/transfer.md "Content
 * filters"): its own namespaces, no network, a read-only root with the
 * program alone bound under FILTER_DIR, no data directory, no capability,
 * the default seccomp filter, W^X, memory and task limits, and a deadline
 * after which the whole cage is killed. No cage, no filter run: the
 * transfer fails.
 */
DEFINE_UNREF_CLEANUP(struct clip_cage_profile, clip_cage_profile_unref)
DEFINE_UNREF_CLEANUP(struct clip_cage, clip_cage_unref)

#define FILTER_DIR "/filter"
#define FILTER_UID 65534
#define FILTER_REASON_MAX 160

static int
filter_profile(const char *program, const struct filter_limits *lim, char *target, size_t size,
	       struct clip_cage_profile **ret, struct clip_error **reterr)
{
	_cleanup_(clip_cage_profile_unrefp) struct clip_cage_profile *p = NULL;
	struct clip_cage_limits l = { .size = sizeof(l),
				      .cpu_quota_percent = 100,
				      .memory_max = lim->memory_max,
				      .tasks_max = lim->tasks_max };
	const char *base = strrchr(program, '/');
	int r;

	if (program[0] != '/' || !base || !base[1] ||
	    snprintf(target, size, FILTER_DIR "/%s", base + 1) >= (int)size)
		return error_set(reterr, -EINVAL, "the filter '%.64s' is not an absolute path",
				 program);
	r = clip_cage_profile_new(&p, "clip-filter");
	if (r == 0)
		r = clip_cage_profile_set_limits(p, &l);
	if (r == 0)
		r = clip_cage_profile_set_wx(p, 1);
	/* The program alone: not its directory, nothing of the host next to it. */
	if (r == 0)
		r = clip_cage_profile_add_bind(p, program, target, 0);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot make a cage profile for the filter %.64s",
				       program);
	*ret = steal_ptr(p);
	return 0;
}

/* What the filter writes on stdout and stderr: its first line is the reason. */
struct filter_output {
	int fd; /* non-blocking; -1 at end of file */
	char text[FILTER_REASON_MAX + 1];
	size_t len;
	bool line_done;
};

/* Read what is there; the rest of a long output is read and dropped. */
static void
filter_output_read(struct filter_output *o)
{
	char buf[512];

	for (unsigned k = 0; o->fd >= 0 && k < 256; k++) {
		ssize_t n = read(o->fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (n < 0 && errno != EAGAIN)) {
			close(o->fd);
			o->fd = -1;
		}
		if (n <= 0)
			return;
		for (ssize_t i = 0; i < n && !o->line_done; i++) {
			char c = buf[i];

			if (c == '\n')
				o->line_done = true;
			else if (o->len < FILTER_REASON_MAX)
				o->text[o->len++] = c == '\t' || c == '\r'  ? ' '
						    : c >= 0x20 && c < 0x7f ? c
									    : '?';
		}
	}
}

static const char *
filter_output_reason(struct filter_output *o)
{
	while (o->len > 0 && o->text[o->len - 1] == ' ')
		o->len--;
	o->text[o->len] = '\0';
	return o->text;
}

/* Until the filter exits (0) or the deadline (1), reading what it says. */
static int
filter_wait(int pidfd, struct filter_output *o, unsigned timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;

	for (;;) {
		struct pollfd p[2] = { { .fd = pidfd, .events = POLLIN },
				       { .fd = o->fd, .events = POLLIN } };
		long long left = deadline - now_ms();
		int n;

		if (left <= 0)
			return 1;
		n = poll(p, o->fd >= 0 ? 2 : 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (o->fd >= 0 && p[1].revents)
			filter_output_read(o);
		if (p[0].revents)
			return 0;
	}
}

static int
filter_verdict(const char *program, int status, bool timed_out, const struct filter_limits *lim,
	       const char *reason, struct clip_error **reterr)
{
	const char *sep = reason[0] ? ": " : "";

	if (timed_out)
		return error_set(reterr, -EPERM,
				 "the filter %s did not finish within %u ms: its cage was killed",
				 program, lim->timeout_ms);
	if (status == 0)
		return 0;
	if (status == 126 || status == 127)
		return error_set(reterr, -EIO, "the filter %s could not run (exit %d)%s%s", program,
				 status, sep, reason);
	if (status > 128)
		return error_set(reterr, -EPERM, "the filter %s was killed (signal %d)%s%s",
				 program, status - 128, sep, reason);
	return error_set(reterr, -EPERM, "the filter %s rejected the document (exit %d)%s%s",
			 program, status, sep, reason);
}

/* Run the filter in the running @cage, its stdin @doc; the cage is stopped on return. */
static int
filter_run(struct clip_cage *cage, int doc, const char *program, const char *target,
	   const struct filter_limits *lim, struct clip_error **reterr)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	const char *argv[] = { target, NULL };
	const char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	struct filter_output o = { .fd = -1 };
	_cleanup_close_ int pidfd = -1;
	int p[2], fds[3], status = 0, r;
	bool timed_out;
	struct clip_cage_spawn_opts opts = {
		.size = sizeof(opts),
		.n_fds = 3,
		.argv = argv,
		.envp = envp,
		.fds = fds,
		/* A uid of its own inside the cage when there is more than one. */
		.uid = geteuid() == 0 ? FILTER_UID : 0,
		.gid = geteuid() == 0 ? FILTER_UID : 0,
	};

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return error_set_errno(reterr, -errno, "cannot make a pipe for the filter");
	o.fd = p[0];
	fds[0] = doc, fds[1] = fds[2] = p[1];
	r = clip_cage_spawn(cage, &opts, &pidfd, &e);
	close(p[1]);
	if (r < 0) {
		close(o.fd);
		return error_set(reterr, -EIO, "the filter %s could not run: %s", program,
				 clip_error_get_message(e));
	}
	r = filter_wait(pidfd, &o, lim->timeout_ms);
	timed_out = r > 0;
	/* Whatever it left behind (a child, a process in the background) dies with the cage. */
	if (clip_cage_stop(cage, 0, NULL) < 0 && r >= 0)
		r = error_set(reterr, -EIO, "cannot stop the cage of the filter %s", program);
	filter_output_read(&o);
	if (o.fd >= 0)
		close(o.fd);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot wait for the filter %s", program);
	if (clip_cage_wait_process(cage, pidfd, &status) < 0)
		return error_set(reterr, -EIO, "cannot collect the status of the filter %s",
				 program);
	return filter_verdict(program, status, timed_out, lim, filter_output_reason(&o), reterr);
}

int
deliver_filter_with(struct clip_ctx *ctx, struct delivery *d, const char *program,
		    const struct filter_limits *lim, struct clip_error **reterr)
{
	_cleanup_(clip_cage_profile_unrefp) struct clip_cage_profile *p = NULL;
	_cleanup_(clip_cage_unrefp) struct clip_cage *cage = NULL;
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	_cleanup_close_ int doc = -1;
	char path[64], target[PATH_MAX];
	int r;

	r = filter_profile(program, lim, target, sizeof(target), &p, reterr);
	if (r < 0)
		return r;
	/* A new read-only open: the filter never holds the descriptor we write through. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", d->fd);
	doc = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (doc < 0)
		return error_set_errno(reterr, -errno, "cannot reopen the document for the filter");
	r = clip_cage_new(&cage, ctx, p, &e);
	if (r == 0)
		r = clip_cage_start(cage, 0, &e);
	if (r < 0)
		return error_set(
			reterr, -EIO,
			"the filter %s is not run: its cage cannot start (%s); the document "
			"is not delivered",
			program, e ? clip_error_get_message(e) : strerror(-r));
	if (clip_cage_get_missing(cage) & (CLIP_CAGE_MISSING_MEMORY | CLIP_CAGE_MISSING_TASKS)) {
		(void)clip_cage_stop(cage, 0, NULL);
		return error_set(
			reterr, -EIO,
			"the filter %s is not run: this host cannot bound the memory and "
			"tasks of its cage (no usable cgroup); the document is not delivered",
			program);
	}
	return filter_run(cage, doc, program, target, lim, reterr);
}

int
deliver_filter(struct clip_ctx *ctx, struct delivery *d, const char *program,
	       struct clip_error **reterr)
{
	static const struct filter_limits defaults = FILTER_LIMITS_DEFAULT;

	return deliver_filter_with(ctx, d, program, &defaults, reterr);
}
/* Sealing may create the master key; opening never does (no key: -ENOKEY). */
static int
target_key(struct clip_ctx *ctx, const char *target, bool create, uint8_t out[CLIP_KEY_SIZE],
	   struct clip_error **reterr)
{
	char info[128];
	const uint8_t *key;
	int n, r;

	r = ctx_get_key(ctx, KEY_PURPOSE_ENVELOPE, create, &key, reterr);
	if (r < 0)
		return r;
	n = snprintf(info, sizeof(info), "libclip envelope v1 target: %s", target);
	if (n < 0 || (size_t)n >= sizeof(info))
		return -EINVAL;
	return mac_sha256(key, info, (size_t)n, out);
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
envelope_body(EVP_CIPHER_CTX *c, int in_fd, int tmp_fd, const char *target,
	      struct clip_error **reterr)
{
	_cleanup_free_ uint8_t *in = malloc(DELIVER_CHUNK + ENVELOPE_TAG_SIZE),
			       *out = malloc(DELIVER_CHUNK + 32);
	uint64_t total = ENVELOPE_HEAD;
	size_t held = 0; /* bytes at the start of @in that may be the tag */
	int len = 0;

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
		if (write_full(tmp_fd, out, (size_t)len) < 0)
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

static int
open_envelope(struct clip_ctx *ctx, const char *target, int in_fd, int out_fd,
	      struct clip_error **reterr)
{
	_cleanup_(sym_EVP_CIPHER_CTX_freep) EVP_CIPHER_CTX *c = NULL;
	_cleanup_close_ int tmp = -1;
	uint8_t key[CLIP_KEY_SIZE];
	struct stat st;
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
	if (fstat(in_fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > ENVELOPE_MAX)
		return error_set(reterr, -EFBIG,
				 "the envelope has %llu bytes, more than AES-GCM can hold",
				 (unsigned long long)st.st_size);
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
	tmp = memfd_create("clip-envelope", MFD_CLOEXEC | MFD_NOEXEC_SEAL);
	if (tmp < 0 && errno == EINVAL)
		tmp = memfd_create("clip-envelope", MFD_CLOEXEC);
	if (tmp < 0)
		return error_set_errno(reterr, -ENOMEM, "cannot make a memory file");
	r = envelope_body(c, in_fd, tmp, target, reterr);
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
	ctx_assert_log_return(ctx, target && proto_cage_name_valid(target, strlen(target)),
			      api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, in_fd >= 0 && out_fd >= 0 && in_fd != out_fd,
			      api_return(-EINVAL, reterr));

	return api_return(open_envelope(ctx, target, in_fd, out_fd, reterr), reterr);
}
