/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small internal helpers shared by the modules. */
#pragma once

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct clip_error;

/* Lowercase hex of @n bytes into @out, which holds 2 * @n + 1 bytes. */
void hex_encode(const uint8_t *in, size_t n, char *out);

/*
 * Strict decode of exactly 2 * @n lowercase hex digits into @out.
 * Returns 0, or -EINVAL on any other character.
 */
int hex_decode(const char *in, size_t n, uint8_t *out);

/* Whether @fd was opened with O_PATH: 1, 0, or -errno (-EBADF). */
/* A readdir() stream on a duplicate of the directory @fd (CLOEXEC), which stays the caller's; NULL with errno set. */
DIR *dir_stream(int fd);

int fd_is_opath(int fd);

/* Append little-endian integers to a buffer with a bound; see mac.c. */
struct buf {
	uint8_t *data;
	size_t size;
	size_t max;
	bool overflow;
};

void buf_put(struct buf *b, const void *p, size_t n);
void buf_put_u8(struct buf *b, uint8_t v);
void buf_put_u32(struct buf *b, uint32_t v);
void buf_put_u64(struct buf *b, uint64_t v);

/* Wipe a secret so that the compiler cannot drop the stores. */
void secure_wipe(void *p, size_t n);

/*
 * getpid() without a system call after the first (the context's check in
 * every exported function asks it: 0.1 µs of a 1.5 µs label verification,
 * issue 19). fork() resets it through pthread_atfork(); the library's own
 * raw clone() calls pid_cache_reset() in the child. A caller's raw clone()
 * is not seen, as with systemd's getpid_cached() (clip-ctx(3)).
 */
pid_t pid_cached(void);
void pid_cache_reset(void);

/* CLOCK_MONOTONIC, in nanoseconds and in milliseconds. */
uint64_t now_ns(void);
long long now_ms(void);

/*
 * A token bucket: @per_s tokens a second, at most @burst at once, full
 * when initialised. Take one token: true, or false and, if @ret_wait_ms
 * is not NULL, in how many milliseconds one comes.
 */
struct token_bucket {
	double tokens;
	uint64_t refilled_ns;
};
void token_bucket_init(struct token_bucket *b, double burst);
bool token_bucket_take(struct token_bucket *b, double per_s, double burst, uint32_t *ret_wait_ms);

/* Until @fd is readable (or hung up) or now_ms() reaches @deadline_ms: 0, -ETIMEDOUT or -errno. */
int wait_readable(int fd, long long deadline_ms);

/*
 * Read or write exactly @n bytes, retrying on EINTR and short transfers.
 * 0, or -errno; reading fails with -EIO at end of file.
 */
int read_full(int fd, void *p, size_t n);
int write_full(int fd, const void *p, size_t n);

/*
 * Write @value to the existing file @path in one write() (a kernel file:
 * /proc, cgroupfs), not following a final symbolic link. 0, or -errno
 * (-EIO for a short write).
 */
int write_string(const char *path, const char *value);

/*
 * Open @path (relative to @dirfd) for reading where someone less trusted
 * can write, a cage's inbox for one: a symbolic link is not followed
 * (O_NOFOLLOW), a FIFO or a device is not waited on (O_NONBLOCK,
 * O_NOCTTY), and anything but a regular file is refused after the open
 * (fstat), before a byte is read. @max, when not 0, bounds its size.
 * O_NONBLOCK is cleared on the descriptor returned; *@ret_st (optional)
 * gets its stat. The descriptor, or -errno with a message naming @path
 * and what was there: -ELOOP (a symbolic link), -EMEDIUMTYPE (a FIFO, a
 * device, a socket, a directory), -EFBIG (over @max); -ENOENT comes
 * without a message, for callers to whom a missing file is no error.
 * Test hook "core-open-regular" (off: the plain open of before).
 */
int open_regular(int dirfd, const char *path, uint64_t max, struct stat *ret_st,
		 struct clip_error **reterr);

/*
 * Open the directory @path (absolute) for reading, walking it from "/" one
 * component at a time without following a symbolic link (O_PATH |
 * O_NOFOLLOW, then fstat), so that nobody but root and the caller can
 * decide where it leads. Every directory above it must be owned by root or
 * by the effective uid (in a user namespace, also by an owner the
 * namespace does not map: the host's root, as far as it can tell) and not
 * writable by group or others, unless sticky (/tmp: others may add
 * entries there, but not move the next one, which is checked in turn).
 * The directory itself must be owned by the effective uid and not
 * writable by group or others. "." components are skipped, a ".." is
 * refused (-EINVAL). With @create, missing components are made 0700.
 * The descriptor; -ENOENT without a message for a missing component
 * (without @create); else -errno with a message that starts with @what
 * ("state directory") and names the component at fault, its owner or
 * its mode.
 */
int dir_open_walk(const char *path, bool create, const char *what, struct clip_error **reterr);

/* "a FIFO", "a directory"...: the type of a file in @mode, for messages. */
const char *file_type_name(mode_t mode);

/* The most descriptors send_fds() and recv_fds() carry in one message. */
#define FDS_MAX 6

/*
 * Send @n bytes as one message with the @n_fds descriptors of @fds
 * (SCM_RIGHTS; none when 0, at most FDS_MAX), MSG_NOSIGNAL, retried on
 * EINTR. 0, or -errno. Allocates nothing: a cage's init uses it.
 */
int send_fds(int sock, const void *buf, size_t n, const int *fds, size_t n_fds);

/*
 * Receive one message into @buf (@size bytes) with up to @max_fds (at most
 * FDS_MAX) descriptors into @fds (MSG_CMSG_CLOEXEC), retried on EINTR: its
 * length, 0 at end of stream, their number in *@ret_n_fds. -EBADMSG, every
 * descriptor closed, when the data or the descriptors were cut or came
 * with other control data; -errno. Allocates nothing.
 */
ssize_t recv_fds(int sock, void *buf, size_t size, int *fds, size_t max_fds, size_t *ret_n_fds);

/*
 * Write @size bytes to an unnamed file in @dirfd (O_TMPFILE, @mode) and
 * link it in as @name only when complete and on disk, so that no reader
 * ever sees a partial file. Without @replace an existing @name is left
 * alone and the result is -EEXIST (a lost creation race); with @replace
 * it is replaced atomically (rename over it). 0 or -errno.
 */
int write_file_atomic(int dirfd, const char *name, const void *data, size_t size, mode_t mode,
		      bool replace);

/*
 * Option structs that grow (doc/conventions.md, "Structs that grow"): the
 * caller's struct starts with its uint32_t size, and the two sides may be
 * of different versions. The rule is the kernel's copy_struct_from_user()
 * and copy_struct_to_user():
 *
 * struct_copy_in() copies the caller's struct at @src into ours, @dst of
 * @dst_size bytes. Shorter (an older caller): the members past its end
 * are zero. Longer (a newer caller): accepted only when every byte past
 * ours is zero, since a non-zero one asks for something this version
 * cannot do (-E2BIG); at most STRUCT_SIZE_MAX bytes are read (-E2BIG).
 * Smaller than @min_size, the struct's first published version: -EINVAL.
 * dst's size member is then @dst_size. The message names @what (the
 * struct's type) and what is wrong with it.
 *
 * struct_copy_out() fills the caller's struct at @dst, whose size member
 * says how large it is, from ours (@src, @src_size bytes): the members
 * both know are copied, a larger caller's extra bytes are zeroed, its
 * size member kept. Smaller than @min_size: -EINVAL.
 */
#define STRUCT_SIZE_MAX 4096
int struct_copy_in(void *dst, size_t dst_size, const void *src, size_t min_size, const char *what,
		   struct clip_error **reterr);
int struct_copy_out(void *dst, const void *src, size_t src_size, size_t min_size);

/*
 * One page for secrets: excluded from core dumps and wiped in a forked
 * child (MADV_DONTDUMP, MADV_WIPEONFORK), so that a child that forgets the
 * -ECHILD rule still holds no key. Zeroed when new. NULL when out of
 * memory. secret_page_wipe() and secret_page_free() take NULL.
 */
#define SECRET_PAGE_SIZE 4096
void *secret_page_new(void);
void secret_page_wipe(void *page);
void secret_page_free(void *page);

/*
 * Paths given to the library (a bind's source, a data directory): absolute
 * and normalised (no ".", "..", "//", trailing "/"), printable ASCII
 * without space, ':' or '\\', shorter than PATH_BYTES_MAX. path_fault()
 * says what keeps @path from being one ("is not absolute"), NULL if
 * nothing.
 */
#define PATH_BYTES_MAX 4096
const char *path_fault(const char *path);

/* Whether the normalised @path is @dir or beneath it ("/a/b" is beneath "/a", "/ab" is not). */
bool path_is_beneath(const char *path, const char *dir);
