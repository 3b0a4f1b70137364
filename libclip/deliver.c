/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Atomic, sanitised delivery into an inbox; see deliver.h and doc/transfer.md. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <openssl/evp.h>

#include <clip/label.h>

#include "deliver.h"
#include "error.h"
#include "key.h"
#include "log.h"
#include "utf8.h"
#include "util.h"

#define DELIVER_CHUNK (1024 * 1024)
#define DELIVER_WRITEBACK (8 * DELIVER_CHUNK)
#define FILTER_TIMEOUT_MS 30000
#define FILTER_UID 65534

DEFINE_UNREF_CLEANUP(EVP_MD_CTX, EVP_MD_CTX_free)
DEFINE_UNREF_CLEANUP(EVP_CIPHER_CTX, EVP_CIPHER_CTX_free)

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

static int
write_out(int fd, const void *p, size_t n, struct clip_error **reterr)
{
	int r = write_full(fd, p, n);

	if (r == -ENOSPC || r == -EDQUOT)
		return error_set_errno(reterr, r, "the target inbox is full");
	if (r < 0)
		return error_set_errno(reterr, r, "cannot write into the target inbox");
	return 0;
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
	if (!EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, head + ENVELOPE_MAGIC_SIZE) ||
	    !EVP_EncryptUpdate(c, NULL, &len, head, sizeof(head)) ||
	    !EVP_EncryptUpdate(c, NULL, &len, (const uint8_t *)aad, (int)strlen(aad)))
		return error_set(reterr, -EIO, "cannot start the envelope");
	return write_out(out_fd, head, sizeof(head), reterr);
}

static int
envelope_end(EVP_CIPHER_CTX *c, int out_fd, struct clip_error **reterr)
{
	uint8_t tag[ENVELOPE_TAG_SIZE], rest[32];
	int len = 0;

	if (!EVP_EncryptFinal_ex(c, rest, &len) ||
	    !EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, sizeof(tag), tag))
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

/*
 * Copy exactly @size bytes from the current end of @out_fd (after an
 * envelope's header), hashing and maybe encrypting; the source is only
 * pread.
 */
static int
copy_in(int src, uint64_t size, int out_fd, EVP_MD_CTX *md, EVP_CIPHER_CTX *c,
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
		return error_set_errno(reterr, -errno, "cannot write into the target inbox");
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
		int clen = 0;

		if (!out)
			break;
		n = pread(src, in, want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = error_set_errno(reterr, -errno, "cannot read the document");
		else if (n == 0)
			r = error_set(reterr, -EBUSY, "the document shrank while it was read");
		else if (!EVP_DigestUpdate(md, in, (size_t)n))
			r = -EIO;
		else if (c && !EVP_EncryptUpdate(c, out, &clen, in, (int)n))
			r = error_set(reterr, -EIO, "cannot encrypt");
		if (r < 0)
			break;
		pipeline_give(&p, i, c ? (size_t)clen : (size_t)n);
		off += (uint64_t)n;
	}
	if (pipeline_end(&p, writer) < 0 && r == 0) {
		r = p.error;
		if (r == -ENOSPC || r == -EDQUOT)
			return error_set_errno(reterr, r, "the target inbox is full");
		return error_set_errno(reterr, r, "cannot write into the target inbox");
	}
	if (r == 0 && lseek(out_fd, (off_t)p.written, SEEK_SET) < 0)
		return error_set_errno(reterr, -errno, "cannot write into the target inbox");
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
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *md = EVP_MD_CTX_new();
	_cleanup_(EVP_CIPHER_CTX_freep) EVP_CIPHER_CTX *c = key ? EVP_CIPHER_CTX_new() : NULL;
	struct stat st, after;
	unsigned mdlen = 0;
	int r;

	if (!md || (key && !c))
		return -ENOMEM;
	r = check_source(untrusted_src, max_size, &st, reterr);
	if (r < 0)
		return r;
	d->fd = openat(inbox_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0640);
	if (d->fd < 0)
		return error_set_errno(reterr, -errno, "cannot create a file in the target inbox");
	if (!EVP_DigestInit_ex(md, EVP_sha256(), NULL))
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
	if (!EVP_DigestFinal_ex(md, d->sha256, &mdlen) || mdlen != 32)
		return -EIO;
	if (fsync(d->fd) < 0) {
		r = -errno;
		if (r == -ENOSPC || r == -EDQUOT)
			return error_set_errno(reterr, r, "the target inbox is full");
		return error_set_errno(reterr, r, "cannot write into the target inbox");
	}
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

static void __attribute__((noreturn)) filter_child(int fd, const char *program)
{
	char path[64];
	int in;
	struct rlimit cpu = { 10, 10 }, files = { 16, 16 }, fsize = { 0, 0 };

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0 || dup2(in, 0) < 0)
		_exit(126);
	for (int k = 1; k <= 2; k++) {
		int nul = open("/dev/null", O_WRONLY);

		if (nul < 0 || dup2(nul, k) < 0)
			_exit(126);
	}
	if (syscall(SYS_close_range, 3, ~0u, 0) < 0)
		_exit(126);
	if (setsid() < 0 || setrlimit(RLIMIT_CPU, &cpu) < 0 ||
	    setrlimit(RLIMIT_NOFILE, &files) < 0 || setrlimit(RLIMIT_FSIZE, &fsize) < 0)
		_exit(126);
	if (geteuid() == 0 &&
	    (setgroups(0, NULL) < 0 || setresgid(FILTER_UID, FILTER_UID, FILTER_UID) < 0 ||
	     setresuid(FILTER_UID, FILTER_UID, FILTER_UID) < 0))
		_exit(126);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || chdir("/") < 0)
		_exit(126);
	execve(program, (char *const[]){ (char *)program, NULL }, (char *const[]){ NULL });
	_exit(127);
}

int
deliver_filter(struct delivery *d, const char *program, struct clip_error **reterr)
{
	struct pollfd p = { .events = POLLIN };
	int status = 0;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return error_set_errno(reterr, -errno, "cannot run the filter %s", program);
	if (pid == 0)
		filter_child(d->fd, program);
	p.fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p.fd >= 0) {
		if (poll(&p, 1, FILTER_TIMEOUT_MS) == 0)
			kill(pid, SIGKILL);
		close(p.fd);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return error_set_errno(reterr, -errno, "cannot wait for the filter");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) >= 126)
		return error_set(reterr, -EIO, "the filter %s could not run", program);
	if (WIFSIGNALED(status))
		return error_set(reterr, -EPERM, "the filter %s was killed (signal %d)", program,
				 WTERMSIG(status));
	return error_set(reterr, -EPERM, "the filter %s rejected the document (exit %d)", program,
			 WEXITSTATUS(status));
}

int
envelope_key(struct clip_ctx *ctx, const char *target, uint8_t out[CLIP_KEY_SIZE],
	     struct clip_error **reterr)
{
	char info[128];
	const uint8_t *key;
	int n, r;

	r = ctx_get_key(ctx, KEY_PURPOSE_ENVELOPE, true, &key, reterr);
	if (r < 0)
		return r;
	n = snprintf(info, sizeof(info), "libclip envelope v1 target: %s", target);
	if (n < 0 || (size_t)n >= sizeof(info))
		return -EINVAL;
	return mac_sha256(key, info, (size_t)n, out);
}

int
envelope_open(const uint8_t key[CLIP_KEY_SIZE], const char *aad, const uint8_t *in, size_t n,
	      uint8_t *out)
{
	_cleanup_(EVP_CIPHER_CTX_freep) EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	const size_t head = ENVELOPE_MAGIC_SIZE + ENVELOPE_NONCE_SIZE;
	int len = 0, fin = 0;

	if (!c)
		return -ENOMEM;
	if (n < head + ENVELOPE_TAG_SIZE || n - head - ENVELOPE_TAG_SIZE > INT32_MAX ||
	    memcmp(in, ENVELOPE_MAGIC, ENVELOPE_MAGIC_SIZE) != 0)
		return -EBADMSG;
	if (!EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, in + ENVELOPE_MAGIC_SIZE) ||
	    !EVP_DecryptUpdate(c, NULL, &len, in, (int)head) ||
	    !EVP_DecryptUpdate(c, NULL, &len, (const uint8_t *)aad, (int)strlen(aad)) ||
	    !EVP_DecryptUpdate(c, out, &len, in + head, (int)(n - head - ENVELOPE_TAG_SIZE)) ||
	    !EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, ENVELOPE_TAG_SIZE,
				 (void *)(in + n - ENVELOPE_TAG_SIZE)) ||
	    EVP_DecryptFinal_ex(c, out + len, &fin) <= 0)
		return -EBADMSG;
	return len + fin;
}
