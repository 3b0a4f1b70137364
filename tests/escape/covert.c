/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Covert channels between two cages (doc/covert-channels.md). One
 * process, in the higher cage, sends bits; another, in the lower cage,
 * reads them. They share no fd and no socket, only the clock (there is
 * no time namespace) and what the kernel lets both see: bit i is sent
 * during the time slot [start + i*slot, start + (i+1)*slot) of
 * CLOCK_MONOTONIC, and read in the middle of it. run-covert.sh runs the
 * pairs as the attack (does any bit pass?) and measures each channel's
 * bandwidth (how fast can bits pass?). Links nothing of libclip.
 *
 *   covert now                              CLOCK_MONOTONIC in ns
 *   covert send CHANNEL FILE START SLOT BITS
 *   covert recv CHANNEL FILE START SLOT N   prints the N bits read
 *
 * START in ns of CLOCK_MONOTONIC, SLOT in µs, BITS a string of 0 and 1.
 * The channels, all through one FILE both cages can open read-only:
 *
 *   flock      the sender holds flock(LOCK_EX) for a 1; the receiver
 *              tries flock(LOCK_EX | LOCK_NB)
 *   ofd        the sender holds an OFD read lock (F_OFD_SETLK) for a 1;
 *              the receiver asks F_OFD_GETLK whether a write lock would
 *              conflict (it takes nothing)
 *   posix      the same with process-associated locks (F_SETLK, F_GETLK)
 *   inotify    the sender opens and reads FILE for a 1; the receiver
 *              watches it and counts the events of the slot
 *   pagecache  the sender reads FILE's first page for a 1 and drops it
 *              (POSIX_FADV_DONTNEED) for a 0; the receiver asks whether
 *              the page is cached (preadv2(RWF_NOWAIT): EAGAIN if not)
 *   atime      the sender reads FILE for a 1; the receiver watches its
 *              access time (statx)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

static uint64_t
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void
sleep_until(uint64_t ns)
{
	struct timespec t = { .tv_sec = (time_t)(ns / 1000000000u),
			      .tv_nsec = (long)(ns % 1000000000u) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
		;
}

static _Noreturn void
die(const char *what, const char *file)
{
	fprintf(stderr, "covert: %s %s: %s\n", what, file, strerror(errno));
	exit(2);
}

static void
lock(const char *ch, int fd, bool on)
{
	struct flock l = { .l_type = on ? F_RDLCK : F_UNLCK, .l_whence = SEEK_SET };
	int r;

	if (strcmp(ch, "flock") == 0)
		r = flock(fd, on ? LOCK_EX : LOCK_UN);
	else
		r = fcntl(fd, strcmp(ch, "ofd") == 0 ? F_OFD_SETLK : F_SETLK, &l);
	if (r < 0)
		die("lock", ch);
}

/* Whether someone else holds a lock on @fd's file. */
static bool
locked(const char *ch, int fd)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (strcmp(ch, "flock") == 0) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			flock(fd, LOCK_UN);
			return false;
		}
		return errno == EWOULDBLOCK;
	}
	if (fcntl(fd, strcmp(ch, "ofd") == 0 ? F_OFD_GETLK : F_GETLK, &l) < 0)
		die("test lock", ch);
	return l.l_type != F_UNLCK;
}

static void
touch_page(int fd)
{
	char c;

	if (pread(fd, &c, 1, 0) < 0)
		die("read", "file");
}

static bool
cached(int fd)
{
	char c;
	struct iovec v = { &c, 1 };

	return preadv2(fd, &v, 1, 0, RWF_NOWAIT) == 1;
}

static int64_t
atime_ns(const char *file)
{
	struct statx sx;

	if (statx(AT_FDCWD, file, 0, STATX_ATIME, &sx) < 0)
		die("statx", file);
	return (int64_t)sx.stx_atime.tv_sec * 1000000000 + sx.stx_atime.tv_nsec;
}

static bool
is_lock(const char *ch)
{
	return strcmp(ch, "flock") == 0 || strcmp(ch, "ofd") == 0 || strcmp(ch, "posix") == 0;
}

static int
send_bits(const char *ch, const char *file, uint64_t start, uint64_t slot, const char *bits)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("open", file);
	for (size_t i = 0; bits[i]; i++) {
		bool one = bits[i] == '1';

		sleep_until(start + i * slot);
		if (is_lock(ch))
			lock(ch, fd, one);
		else if (strcmp(ch, "pagecache") == 0) {
			if (one)
				touch_page(fd);
			else
				(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		} else if (one) { /* inotify, atime: an open and a read */
			int f = open(file, O_RDONLY | O_CLOEXEC);

			if (f < 0)
				die("open", file);
			touch_page(f);
			close(f);
		}
	}
	sleep_until(start + strlen(bits) * slot);
	close(fd);
	return 0;
}

/* Whether any inotify event is queued on @in; drains it. */
static bool
events(int in)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool any = false;

	while (read(in, buf, sizeof(buf)) > 0)
		any = true;
	return any;
}

static int
recv_bits(const char *ch, const char *file, uint64_t start, uint64_t slot, size_t n)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC), in = -1;
	int64_t last = 0;

	if (fd < 0)
		die("open", file);
	if (strcmp(ch, "inotify") == 0) {
		in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
		if (in < 0 || inotify_add_watch(in, file, IN_OPEN | IN_ACCESS) < 0)
			die("inotify_add_watch", file);
	} else if (strcmp(ch, "atime") == 0)
		last = atime_ns(file);
	else if (!is_lock(ch) && strcmp(ch, "pagecache") != 0) {
		fprintf(stderr, "covert: no channel %s\n", ch);
		return 2;
	}
	/* The inotify watch counts what came since the last slot's reading. */
	if (in >= 0) {
		sleep_until(start - slot / 4);
		events(in);
	}
	for (size_t i = 0; i < n; i++) {
		bool one;

		sleep_until(start + i * slot + (in >= 0 ? slot * 3 / 4 : slot / 2));
		if (is_lock(ch))
			one = locked(ch, fd);
		else if (in >= 0)
			one = events(in);
		else if (strcmp(ch, "pagecache") == 0)
			one = cached(fd);
		else {
			int64_t t = atime_ns(file);

			one = t != last;
			last = t;
		}
		putchar(one ? '1' : '0');
	}
	putchar('\n');
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "now") == 0) {
		printf("%llu\n", (unsigned long long)now_ns());
		return 0;
	}
	if (argc != 7 || (strcmp(argv[1], "send") != 0 && strcmp(argv[1], "recv") != 0)) {
		fprintf(stderr, "usage: covert now\n"
				"       covert send|recv CHANNEL FILE START_NS SLOT_US BITS|N\n");
		return 2;
	}
	uint64_t start = strtoull(argv[4], NULL, 10), slot = strtoull(argv[5], NULL, 10) * 1000;

	if (slot == 0) {
		fprintf(stderr, "covert: a slot of 0 µs\n");
		return 2;
	}
	if (strcmp(argv[1], "send") == 0)
		return send_bits(argv[2], argv[3], start, slot, argv[6]);
	return recv_bits(argv[2], argv[3], start, slot, strtoul(argv[6], NULL, 10));
}
