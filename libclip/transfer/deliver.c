/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Atomic, sanitised delivery into an inbox; see transfer-internal.h and doc/transfer.md. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <clip/label.h>

#include "base/crypto.h"
#include "base/error.h"
#include "base/log.h"
#include "base/test-hooks.h"
#include "transfer-internal.h"
#include "base/test-hooks.h"
#include "base/utf8.h"
#include "base/util.h"

#define DELIVER_WRITEBACK (8 * DELIVER_CHUNK)
#define SMALL_BUF (32 * 1024) /* twice on a worker's stack */

DEFINE_UNREF_CLEANUP(EVP_MD_CTX, sym_EVP_MD_CTX_free)
DEFINE_UNREF_CLEANUP(EVP_CIPHER_CTX, sym_EVP_CIPHER_CTX_free)

static int
check_source(int untrusted_src, uint64_t max_size, struct stat *st, struct clip_error **reterr)
{
	const char *kind;
	int flags, r;

	r = fd_is_opath(untrusted_src);
	if (r < 0)
		return error_set_errno(reterr, r, "the document's descriptor is not valid");
	if (fstat(untrusted_src, st) < 0)
		return error_set_errno(reterr, -errno, "cannot stat the document");
	kind = transfer_fd_kind(untrusted_src, st->st_mode);
	if (kind)
		return error_set(reterr, -EMEDIUMTYPE,
				 "the document is %s: only regular files are transferred", kind);
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

int
deliver_write_out(int fd, const void *p, size_t n, struct clip_error **reterr)
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

/*
 * Holes. A sparse document is copied sparse: its holes (SEEK_DATA and
 * SEEK_HOLE on the cage's fd) are hashed as the zeros they read as, but
 * neither read nor written, so a 1 GiB hole costs no block in the inbox,
 * and the hash is still that of the whole logical content. Extents are
 * widened to DIRECT_ALIGN (a hole shorter than that is copied), so that
 * every chunk written stays aligned for O_DIRECT. An envelope is never
 * sparse: zeros encrypt to anything but zeros.
 */
#define DIRECT_ALIGN 4096

struct segment {
	uint64_t len;
	bool hole;
};

/*
 * The next segment of the document at @off, at most @max bytes: data to
 * read, or a hole. Without @holes (or where the file system cannot tell),
 * everything is data.
 */
static void
segment_next(int src, uint64_t off, uint64_t size, bool holes, uint64_t max, struct segment *s)
{
	const uint64_t mask = DIRECT_ALIGN - 1;
	off_t data, hole;

	*s = (struct segment){ .len = size - off < max ? size - off : max };
	if (!holes)
		return;
	data = lseek(src, (off_t)off, SEEK_DATA);
	if (data < 0 && errno == ENXIO)
		data = (off_t)size; /* nothing but a hole up to the end (or the file shrank) */
	else if (data < 0)
		return;
	if (((uint64_t)data & ~mask) > off) {
		uint64_t end = (uint64_t)data < size ? (uint64_t)data & ~mask : size;

		s->hole = true;
		if (end - off < s->len)
			s->len = end - off;
		return;
	}
	/* From the data, not from @off: a file system finer than 4 KiB may have a hole at @off. */
	hole = lseek(src, data, SEEK_HOLE);
	if (hole >= 0 && (uint64_t)hole > off) {
		uint64_t end = ((uint64_t)hole + mask) & ~mask;

		if (end < off + s->len)
			s->len = end - off;
	}
}

/* A hole of @len bytes at @off: hashed as zeros (and encrypted: never, see above). */
static int
hole_take(int src, uint64_t off, uint64_t len, EVP_MD_CTX *md, struct clip_error **reterr)
{
	static const uint8_t zeros[64 * 1024];
	uint8_t byte;
	ssize_t n;

	/* Still there: a hole past the end is a file that shrank (or a cancelled job). */
	do
		n = pread(src, &byte, 1, (off_t)(off + len - 1));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return error_set_errno(reterr, -errno, "cannot read the document");
	if (n == 0)
		return error_set(reterr, -EBUSY, "the document shrank while it was read");
	for (uint64_t done = 0; done < len;) {
		size_t k = len - done < sizeof(zeros) ? (size_t)(len - done) : sizeof(zeros);

		if (!sym_EVP_DigestUpdate(md, zeros, k))
			return -EIO;
		done += k;
	}
	return 0;
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

struct pipeline {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int fd;
	uint8_t *slot[PIPE_SLOTS];
	size_t len[PIPE_SLOTS];
	uint64_t off[PIPE_SLOTS]; /* where in the file: a hole between two is not written */
	unsigned head, count;
	uint64_t written; /* bytes written, for the write-back */
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
pipeline_write(struct pipeline *p, const uint8_t *b, uint64_t off, size_t len)
{
	size_t done = 0;

	if (p->direct && (len % DIRECT_ALIGN != 0 || off % DIRECT_ALIGN != 0))
		p->direct = !direct_set(p->fd, false);
	while (done < len) {
		ssize_t n = pwrite(p->fd, b + done, len - done, (off_t)(off + done));

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
		r = pipeline_write(p, p->slot[h], p->off[h], p->len[h]);
		pthread_mutex_lock(&p->lock);
		if (r < 0) {
			p->error = r;
			break;
		}
		/* Buffered: start the write-back early, so that fsync() waits for the tail only. */
		if (!p->direct &&
		    (p->written + p->len[h]) / DELIVER_WRITEBACK != p->written / DELIVER_WRITEBACK)
			(void)sync_file_range(p->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
		p->written += p->len[h];
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
pipeline_give(struct pipeline *p, unsigned i, uint64_t off, size_t len)
{
	pthread_mutex_lock(&p->lock);
	p->off[i] = off;
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
copy_small(int src, uint64_t size, int out_fd, EVP_MD_CTX *md, EVP_CIPHER_CTX *c, bool holes,
	   struct clip_error **reterr)
{
	uint8_t in[SMALL_BUF], out[SMALL_BUF];
	uint64_t off = 0;

	while (off < size) {
		struct segment s;
		ssize_t n;
		int r;

		segment_next(src, off, size, holes, sizeof(in), &s);
		if (s.hole) {
			r = hole_take(src, off, s.len, md, reterr);
			if (r < 0)
				return r;
			if (lseek(out_fd, (off_t)s.len, SEEK_CUR) < 0)
				return inbox_error(reterr, -errno);
			off += s.len;
			continue;
		}
		n = chunk_take(src, off, in, (size_t)s.len, md, c, out, reterr);
		if (n < 0)
			return (int)n;
		r = deliver_write_out(out_fd, c ? out : in, (size_t)n, reterr);
		if (r < 0)
			return r;
		off += (uint64_t)n;
	}
	return 0;
}

/* The writer thread and its buffers, for more than one chunk; see copy_in(). */
static int
copy_big(int src, uint64_t size, int out_fd, EVP_MD_CTX *md, EVP_CIPHER_CTX *c, bool holes,
	 struct clip_error **reterr)
{
	const size_t stride = DELIVER_CHUNK + DIRECT_ALIGN;
	_cleanup_free_ uint8_t *buf = c ? malloc(DELIVER_CHUNK) : NULL,
			       *slots = aligned_alloc(DIRECT_ALIGN, PIPE_SLOTS * stride);
	struct pipeline p = { .lock = PTHREAD_MUTEX_INITIALIZER,
			      .cond = PTHREAD_COND_INITIALIZER,
			      .fd = out_fd };
	off_t start = lseek(out_fd, 0, SEEK_CUR);
	uint64_t off = 0;
	pthread_t writer;
	int r = 0;

	if ((c && !buf) || !slots)
		return -ENOMEM;
	if (start < 0)
		return inbox_error(reterr, -errno);
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
		struct segment s;
		unsigned i = 0;
		uint8_t *out, *in;
		ssize_t n;

		segment_next(src, off, size, holes, DELIVER_CHUNK, &s);
		if (s.hole) {
			r = hole_take(src, off, s.len, md, reterr);
			off += s.len;
			continue;
		}
		out = pipeline_take(&p, &i);
		if (!out)
			break;
		/* Plain text is read straight into the slot; cipher text is made there. */
		in = c ? buf : out;
		n = chunk_take(src, off, in, (size_t)s.len, md, c, out, reterr);
		if (n < 0) {
			r = (int)n;
			break;
		}
		pipeline_give(&p, i, (uint64_t)start + off, (size_t)n);
		off += (uint64_t)n;
	}
	if (pipeline_end(&p, writer) < 0 && r == 0)
		return inbox_error(reterr, p.error);
	if (r == 0 && lseek(out_fd, start + (off_t)size, SEEK_SET) < 0)
		return inbox_error(reterr, -errno);
	return r;
}

/*
 * Copy exactly @size bytes from the current end of @out_fd (after an
 * envelope's header), hashing and maybe encrypting; the source is only
 * pread (and its holes looked up, with @holes). A document of one chunk
 * or less is copied in this thread, from the stack: a writer thread and
 * its buffers (an mmap() whose munmap() interrupts every CPU the
 * mediator's threads run on) cost more than they save there. A hole at
 * the end is made by the file's size.
 */
static int
copy_in(int src, uint64_t size, int out_fd, EVP_MD_CTX *md, EVP_CIPHER_CTX *c, bool holes,
	struct clip_error **reterr)
{
	int r = size <= DELIVER_CHUNK ? copy_small(src, size, out_fd, md, c, holes, reterr)
				      : copy_big(src, size, out_fd, md, c, holes, reterr);

	if (r == 0 && holes && ftruncate(out_fd, (off_t)size) < 0)
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

static bool
timespec_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static bool
same_file_state(const struct stat *a, const struct stat *b, bool check_ctime)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       (!check_ctime || (a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
				 a->st_ctim.tv_nsec == b->st_ctim.tv_nsec));
}

/*
 * Make sure that any change of the document from now on moves its ctime.
 * The ctime is what a cage cannot set back (utimensat() sets the mtime,
 * and moves the ctime to now); but without fine-grained timestamps
 * (before Linux 6.13's multigrain ones) a change stamps the coarse clock,
 * so a change in the same tick as the last one keeps the same ctime. When
 * the document's ctime is not before the coarse clock, wait (a tick, 50
 * ms at most) until it is, and stat again: unchanged, any later change
 * shows.
 */
static int
settle(int src, struct stat *st, struct clip_error **reterr)
{
	struct timespec now, tick = { .tv_nsec = 1000000 };
	struct stat again;

	for (unsigned waited_ms = 0;; waited_ms++) {
		if (clock_gettime(CLOCK_REALTIME_COARSE, &now) < 0 ||
		    timespec_before(&st->st_ctim, &now) || waited_ms == 50)
			break;
		(void)nanosleep(&tick, NULL);
	}
	if (fstat(src, &again) < 0)
		return error_set_errno(reterr, -errno, "cannot stat the document");
	if (!same_file_state(st, &again, true))
		return error_set(reterr, -EBUSY, "the document is being changed");
	return 0;
}

static int
receive(int inbox_fd, int untrusted_src, uint64_t max_size, const uint8_t *key, const char *aad,
	struct delivery *d, off_t *pos, struct clip_error **reterr)
{
	_cleanup_(sym_EVP_MD_CTX_freep) EVP_MD_CTX *md = NULL;
	_cleanup_(sym_EVP_CIPHER_CTX_freep) EVP_CIPHER_CTX *c = NULL;
	/* The ctime, not only size and mtime, which a cage sets back at will. */
	const bool check_ctime = !test_hook_disabled("deliver-unchanged");
	/* Holes are kept (never in an envelope). */
	const bool holes = !key && !test_hook_disabled("deliver-sparse");
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
	if (holes)
		*pos = lseek(untrusted_src, 0, SEEK_CUR);
	if (check_ctime) {
		r = settle(untrusted_src, &st, reterr);
		if (r < 0)
			return r;
	}
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
	r = copy_in(untrusted_src, (uint64_t)st.st_size, d->fd, md, c, holes, reterr);
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
	if (!same_file_state(&st, &after, check_ctime))
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
	off_t pos = -1;
	int r;

	*d = (struct delivery)DELIVERY_INIT;
	r = receive(inbox_fd, untrusted_src, max_size, key, aad, d, &pos, reterr);
	/* Looking for holes moves the file offset, which the sender shares: put it back. */
	if (pos >= 0)
		(void)lseek(untrusted_src, pos, SEEK_SET);
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
		uint32_t c = 0;
		size_t k = utf8_decode(untrusted_name + i, n - i, &c);
		bool bad = k == 0 || utf8_is_dangerous(c) || c == '/' || c == '\\';

		/* The mediator refused these; a name from elsewhere is mended. */
		if (!bad && utf8_name_refusal(c) && !test_hook_disabled("name-invisible"))
			bad = true;

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
deliver_link(struct clip_ctx *ctx, struct delivery *d, int inbox_fd, const char *untrusted_name,
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
out:
	deliver_abort(d);
	return r;
}

int
deliver_commit(struct clip_ctx *ctx, struct delivery *d, int inbox_fd, const char *untrusted_name,
	       const struct clip_level *level, unsigned label_flags,
	       char ret_name[DELIVER_NAME_MAX + 1], struct clip_error **reterr)
{
	int r = deliver_link(ctx, d, inbox_fd, untrusted_name, level, label_flags, ret_name,
			     reterr);

	if (r == 0 && fsync(inbox_fd) < 0) {
		r = error_set_errno(reterr, -errno, "cannot sync the target inbox");
		(void)unlinkat(inbox_fd, ret_name, 0);
	}
	return r;
}
