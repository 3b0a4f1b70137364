/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "macro.h"
#include "test-hooks.h"
#include "util.h"

void
hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xf];
	}
	out[2 * n] = '\0';
}

/* 0x10 | the value of each lowercase hex digit; 0 for every other byte. */
static const uint8_t hex_value[256] = {
	['0'] = 0x10, ['1'] = 0x11, ['2'] = 0x12, ['3'] = 0x13, ['4'] = 0x14, ['5'] = 0x15,
	['6'] = 0x16, ['7'] = 0x17, ['8'] = 0x18, ['9'] = 0x19, ['a'] = 0x1a, ['b'] = 0x1b,
	['c'] = 0x1c, ['d'] = 0x1d, ['e'] = 0x1e, ['f'] = 0x1f,
};

int
hex_decode(const char *in, size_t n, uint8_t *out)
{
	uint8_t good = 0x10;

	/* No branch per digit: a label's verification decodes 64 of them (issue 19). */
	for (size_t i = 0; i < n; i++) {
		uint8_t hi = hex_value[(unsigned char)in[2 * i]];
		uint8_t lo = hex_value[(unsigned char)in[2 * i + 1]];

		good &= hi & lo;
		out[i] = (uint8_t)(hi << 4 | (lo & 0x0f));
	}
	return good ? 0 : -EINVAL;
}

/* A stream on the directory @fd, which stays the caller's; NULL with errno set. */
DIR *
dir_stream(int fd)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	DIR *d;

	if (dup_fd < 0)
		return NULL;
	d = fdopendir(dup_fd);
	if (!d) {
		int saved = errno;

		close(dup_fd);
		errno = saved;
	}
	return d;
}

int
fd_is_opath(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0)
		return -errno;
	return !!(flags & O_PATH);
}

void
buf_put(struct buf *b, const void *p, size_t n)
{
	if (b->overflow || n > b->max - b->size) {
		b->overflow = true;
		return;
	}
	memcpy(b->data + b->size, p, n);
	b->size += n;
}

void
buf_put_u8(struct buf *b, uint8_t v)
{
	buf_put(b, &v, 1);
}

void
buf_put_u32(struct buf *b, uint32_t v)
{
	uint8_t le[4];

	for (int i = 0; i < 4; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	buf_put(b, le, sizeof(le));
}

void
buf_put_u64(struct buf *b, uint64_t v)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	buf_put(b, le, sizeof(le));
}

void
secure_wipe(void *p, size_t n)
{
	/* Not optimized away, unlike memset() on memory about to be freed. */
	explicit_bzero(p, n);
}

static _Atomic pid_t pid_cache;

void
pid_cache_reset(void)
{
	atomic_store_explicit(&pid_cache, 0, memory_order_relaxed);
}

/* Whether fork()'s child resets the cache: without that, nothing is cached. */
static bool pid_cache_usable;

static void
pid_cache_install(void)
{
	pid_cache_usable = pthread_atfork(NULL, NULL, pid_cache_reset) == 0;
}

pid_t
pid_cached(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pid_t pid = atomic_load_explicit(&pid_cache, memory_order_relaxed);

	if (pid > 0)
		return pid;
	(void)pthread_once(&once, pid_cache_install);
	pid = getpid();
	if (pid_cache_usable)
		atomic_store_explicit(&pid_cache, pid, memory_order_relaxed);
	return pid;
}

uint64_t
now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

void
token_bucket_init(struct token_bucket *b, double burst)
{
	b->tokens = burst;
	b->refilled_ns = now_ns();
}

bool
token_bucket_take(struct token_bucket *b, double per_s, double burst, uint32_t *ret_wait_ms)
{
	uint64_t now = now_ns();

	b->tokens += (double)(now - b->refilled_ns) * per_s / 1e9;
	if (b->tokens > burst)
		b->tokens = burst;
	b->refilled_ns = now;
	if (b->tokens >= 1) {
		b->tokens -= 1;
		return true;
	}
	if (ret_wait_ms)
		*ret_wait_ms = (uint32_t)((1 - b->tokens) * 1000 / per_s) + 1;
	return false;
}

long long
now_ms(void)
{
	return (long long)(now_ns() / 1000000);
}

int
write_string(const char *path, const char *value)
{
	size_t n = strlen(value);
	ssize_t k;
	int fd, r = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	k = write(fd, value, n);
	if (k < 0)
		r = -errno;
	else if ((size_t)k != n)
		r = -EIO;
	close(fd);
	return r;
}

int
wait_readable(int fd, long long deadline_ms)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long left = deadline_ms - now_ms();
		int n = poll(&p, 1, left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left);

		if (n > 0)
			return 0;
		if (n == 0 && left <= 0)
			return -ETIMEDOUT;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

int
read_full(int fd, void *p, size_t n)
{
	uint8_t *q = p;

	while (n > 0) {
		ssize_t k = read(fd, q, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EIO;
		q += k;
		n -= (size_t)k;
	}
	return 0;
}

int
write_full(int fd, const void *p, size_t n)
{
	const uint8_t *q = p;

	while (n > 0) {
		ssize_t k = write(fd, q, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		q += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Link the unnamed file @fd in as @name; a unique temporary name first when replacing. */
static int
link_tmpfile(int fd, int dirfd, const char *name, bool replace)
{
	char path[64], tmp[NAME_MAX + 1];
	uint8_t rnd[8];
	char hex[2 * sizeof(rnd) + 1];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!replace)
		return linkat(AT_FDCWD, path, dirfd, name, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
	for (int attempt = 0; attempt < 16; attempt++) {
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			return -EIO;
		hex_encode(rnd, sizeof(rnd), hex);
		if (snprintf(tmp, sizeof(tmp), ".%s.%s", name, hex) >= (int)sizeof(tmp))
			return -ENAMETOOLONG;
		if (linkat(AT_FDCWD, path, dirfd, tmp, AT_SYMLINK_FOLLOW) < 0) {
			if (errno == EEXIST)
				continue;
			return -errno;
		}
		if (renameat(dirfd, tmp, dirfd, name) < 0) {
			int r = -errno;

			(void)unlinkat(dirfd, tmp, 0);
			return r;
		}
		return 0;
	}
	return -EEXIST;
}

int
write_file_atomic(int dirfd, const char *name, const void *data, size_t size, mode_t mode,
		  bool replace)
{
	_cleanup_close_ int fd = -1;
	int r;

	fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	r = write_full(fd, data, size);
	if (r < 0)
		return r;
	if (fsync(fd) < 0)
		return -errno;
	r = link_tmpfile(fd, dirfd, name, replace);
	if (r < 0)
		return r;
	return fsync(dirfd) < 0 ? -errno : 0;
}

const char *
file_type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFSOCK:
		return "a socket";
	case S_IFLNK:
		return "a symbolic link";
	default:
		return "a file of unknown type";
	}
}

int
open_regular(int dirfd, const char *path, uint64_t max, struct stat *ret_st,
	     struct clip_error **reterr)
{
	int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK;
	bool check = !test_hook_disabled("core-open-regular");
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (!check)
		flags = O_RDONLY | O_CLOEXEC | O_NOCTTY;
	fd = openat(dirfd, path, flags);
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	/* O_NOFOLLOW says ELOOP for a final symbolic link (and for a loop). */
	if (fd < 0 && errno == ELOOP && fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		return error_set(reterr, -ELOOP,
				 "%.200s is a symbolic link: not followed where another party "
				 "can write",
				 path);
	if (fd < 0)
		return error_set_errno(reterr, -errno, "cannot open %.200s", path);
	if (fstat(fd, &st) < 0)
		return error_set_errno(reterr, -errno, "cannot stat %.200s", path);
	if (check && !S_ISREG(st.st_mode))
		return error_set(reterr, -EMEDIUMTYPE,
				 "%.200s is %s, not a regular file: refused without reading it",
				 path, file_type_name(st.st_mode));
	if (check && max > 0 && (uint64_t)st.st_size > max)
		return error_set(reterr, -EFBIG,
				 "%.200s has %llu bytes, over the limit of %llu: refused without "
				 "reading it",
				 path, (unsigned long long)st.st_size, (unsigned long long)max);
	if (check && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		return error_set_errno(reterr, -errno, "cannot set %.200s blocking", path);
	if (ret_st)
		*ret_st = st;
	return steal_fd(fd);
}

int
send_fds(int sock, const void *buf, size_t n, const int *fds, size_t n_fds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(FDS_MAX * sizeof(int))];
	} control = { 0 };
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (n_fds > FDS_MAX)
		return -EINVAL;
	if (n_fds > 0) {
		struct cmsghdr *c;

		mh.msg_control = control.buf;
		mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
	}
	for (;;) {
		if (sendmsg(sock, &mh, MSG_NOSIGNAL) >= 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

ssize_t
recv_fds(int sock, void *buf, size_t size, int *fds, size_t max_fds, size_t *ret_n_fds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(FDS_MAX * sizeof(int))];
	} control;
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control.buf,
			     .msg_controllen = CMSG_SPACE(max_fds * sizeof(int)) };
	size_t n_fds = 0;
	bool bad = false;
	ssize_t n;

	*ret_n_fds = 0;
	if (max_fds > FDS_MAX)
		return -EINVAL;
	if (max_fds == 0)
		mh.msg_control = NULL, mh.msg_controllen = 0;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* Every descriptor collected first, so that each is closed on a refusal. */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k = c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS
				   ? (c->cmsg_len - CMSG_LEN(0)) / sizeof(int)
				   : 0;

		bad |= k == 0;
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (n_fds < max_fds)
				fds[n_fds++] = fd;
			else {
				close(fd);
				bad = true;
			}
		}
	}
	if (bad || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (size_t i = 0; i < n_fds; i++)
			close(fds[i]);
		return -EBADMSG;
	}
	*ret_n_fds = n_fds;
	return n;
}

static uint32_t
struct_size(const void *s)
{
	uint32_t size;

	memcpy(&size, s, sizeof(size));
	return size;
}

int
struct_copy_in(void *dst, size_t dst_size, const void *src, size_t min_size, const char *what,
	       struct clip_error **reterr)
{
	uint32_t size = struct_size(src), own = (uint32_t)dst_size;

	if (size < min_size || size < sizeof(uint32_t))
		return error_set(reterr, -EINVAL,
				 "%s has %" PRIu32 " bytes, less than its first version (%zu)",
				 what, size, min_size);
	if (size > STRUCT_SIZE_MAX)
		return error_set(reterr, -E2BIG, "%s has %" PRIu32 " bytes, over %d", what, size,
				 STRUCT_SIZE_MAX);
	for (size_t i = dst_size; i < size; i++)
		if (((const uint8_t *)src)[i] != 0)
			return error_set(reterr, -E2BIG,
					 "%s has %" PRIu32 " bytes and sets a member past the %zu "
					 "this libclip knows",
					 what, size, dst_size);
	memset(dst, 0, dst_size);
	memcpy(dst, src, size < dst_size ? size : dst_size);
	memcpy(dst, &own, sizeof(own));
	return 0;
}

int
struct_copy_out(void *dst, const void *src, size_t src_size, size_t min_size)
{
	uint32_t size = struct_size(dst);

	if (size < min_size || size < sizeof(uint32_t))
		return -EINVAL;
	if (size > STRUCT_SIZE_MAX)
		return -E2BIG;
	if (size > src_size)
		memset((uint8_t *)dst + src_size, 0, size - src_size);
	/* The size member stays the caller's. */
	memcpy((uint8_t *)dst + sizeof(uint32_t), (const uint8_t *)src + sizeof(uint32_t),
	       (size < src_size ? size : src_size) - sizeof(uint32_t));
	return 0;
}

void *
secret_page_new(void)
{
	void *p = mmap(NULL, SECRET_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	/* Best effort: both are advisory hardening, not correctness. */
	(void)madvise(p, SECRET_PAGE_SIZE, MADV_DONTDUMP);
	(void)madvise(p, SECRET_PAGE_SIZE, MADV_WIPEONFORK);
	return p;
}

void
secret_page_wipe(void *page)
{
	if (page)
		secure_wipe(page, SECRET_PAGE_SIZE);
}

void
secret_page_free(void *page)
{
	if (!page)
		return;
	secure_wipe(page, SECRET_PAGE_SIZE);
	munmap(page, SECRET_PAGE_SIZE);
}

/*
 * Whether @uid is how this user namespace shows an owner it does not map:
 * the kernel's overflow uid, itself not mapped here (in the initial
 * namespace every uid is mapped, so never).
 */
static bool
uid_unmapped(uid_t uid)
{
	unsigned long inside, outside, count, overflow = 65534;
	bool mapped = false;
	FILE *f;

	f = fopen("/proc/sys/kernel/overflowuid", "re");
	if (f) {
		if (fscanf(f, "%lu", &overflow) != 1)
			overflow = 65534;
		fclose(f);
	}
	if (uid != overflow)
		return false;
	f = fopen("/proc/self/uid_map", "re");
	if (!f)
		return false;
	while (!mapped && fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
		mapped = uid >= inside && uid - inside < count;
	fclose(f);
	return !mapped;
}

/* Check one directory of the walk, @prefix (the path up to it); @last: the one asked for. */
static int
walk_check(const char *what, const char *path, const char *prefix, const struct stat *st, bool last,
	   struct clip_error **reterr)
{
	uid_t me = geteuid();

	if (!S_ISDIR(st->st_mode))
		return error_set(reterr, -ENOTDIR, "%s %.200s: %.200s is %s, not a directory", what,
				 path, prefix, file_type_name(st->st_mode));
	if (last && st->st_uid != me)
		return error_set(reterr, -EPERM, "%s %.200s is owned by uid %u, not by uid %u",
				 what, path, (unsigned)st->st_uid, (unsigned)me);
	if (!last && st->st_uid != 0 && st->st_uid != me && !uid_unmapped(st->st_uid))
		return error_set(reterr, -EPERM,
				 "%s %.200s: %.200s is owned by uid %u, not by root or uid %u: its "
				 "owner could replace what is below it",
				 what, path, prefix, (unsigned)st->st_uid, (unsigned)me);
	/* In a sticky directory only an entry's owner (checked next) may move it. */
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && (last || !(st->st_mode & S_ISVTX)))
		return error_set(reterr, -EPERM,
				 "%s %.200s: %.200s is writable by group or others (mode %04o)%s",
				 what, path, prefix, (unsigned)(st->st_mode & 07777),
				 last ? "" : ": they could replace what is below it");
	return 0;
}

int
dir_open_walk(const char *path, bool create, const char *what, struct clip_error **reterr)
{
	_cleanup_free_ char *prefix = NULL;
	_cleanup_close_ int fd = -1;
	const char *p;
	struct stat st;
	size_t len = 1;
	int r;

	if (path[0] != '/')
		return error_set(reterr, -EINVAL, "%s %.200s is not an absolute path", what, path);
	for (p = path; *p; p += strspn(p, "/")) {
		size_t n = strcspn(p, "/");

		/* Refused, not resolved: the path must say where it goes. */
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return error_set(
				reterr, -EINVAL,
				"%s %.200s has a \"..\" component: give the path without it", what,
				path);
		p += n;
	}
	prefix = malloc(strlen(path) + 2);
	if (!prefix)
		return -ENOMEM;
	strcpy(prefix, "/");
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return error_set_errno(reterr, -errno, "cannot open /");
	for (p = path;;) {
		const char *name;
		size_t n;
		int next;

		p += strspn(p, "/");
		n = strcspn(p, "/");
		if (n == 1 && p[0] == '.') {
			p++;
			continue;
		}
		r = walk_check(what, path, prefix, &st, n == 0, reterr);
		if (r < 0)
			return r;
		if (n == 0)
			break;
		if (len > 1)
			prefix[len++] = '/';
		name = prefix + len;
		memcpy(prefix + len, p, n);
		len += n;
		prefix[len] = '\0';
		p += n;
		/* O_PATH: a directory we may cross but not read (mode 0711) is no obstacle. */
		next = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(fd, name, 0700) < 0 && errno != EEXIST)
				return error_set_errno(reterr, -errno, "cannot create %.200s",
						       prefix);
			next = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0 && errno == ENOENT)
			return -ENOENT;
		if (next < 0)
			return error_set_errno(reterr, -errno, "cannot open %.200s", prefix);
		close(fd);
		fd = next;
		if (fstat(fd, &st) < 0)
			return error_set_errno(reterr, -errno, "cannot stat %.200s", prefix);
		if (S_ISLNK(st.st_mode))
			return error_set(reterr, -ELOOP,
					 "%s %.200s: %.200s is a symbolic link, not followed", what,
					 path, prefix);
	}
	/* The very directory checked, opened for reading through its O_PATH descriptor. */
	r = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r < 0)
		return error_set_errno(reterr, -errno, "cannot open %s %.200s", what, path);
	return r;
}

const char *
path_fault(const char *path)
{
	size_t n = strnlen(path, PATH_BYTES_MAX);

	if (n == 0)
		return "is empty";
	if (n >= PATH_BYTES_MAX)
		return "is longer than 4095 bytes";
	if (path[0] != '/')
		return "is not absolute";
	if (n > 1 && path[n - 1] == '/')
		return "ends with a slash (paths are normalised)";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)path[i];

		if (c <= ' ' || c >= 0x7f)
			return "has a space, a control character or a byte that is not ASCII";
		if (c == ':' || c == '\\')
			return "has a ':' or a '\\'";
		if (c == '/' && path[i + 1] == '/')
			return "has an empty component, '//' (paths are normalised)";
		if (c == '/' && path[i + 1] == '.' && (path[i + 2] == '/' || path[i + 2] == '\0'))
			return "has a '.' component (paths are normalised)";
		if (c == '/' && path[i + 1] == '.' && path[i + 2] == '.' &&
		    (path[i + 3] == '/' || path[i + 3] == '\0'))
			return "has a '..' component (paths are normalised)";
	}
	return NULL;
}

bool
path_is_beneath(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}
