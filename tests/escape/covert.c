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
 *   pagetime   the same sender; the receiver times a read of the page
 *              (it loads it: the sender drops it again at each 0)
 *   atime      the sender reads FILE for a 1; the receiver watches its
 *              access time (statx)
 *
 * And three through what the kernel counts for the whole machine, whose
 * receiver reads a number per slot and takes those under the median as
 * ones (the sender sends as many ones as zeros, as a balanced code would):
 *
 *   meminfo    the sender holds 64 MiB for a 1; the receiver reads
 *              MemAvailable in /proc/meminfo (FILE unused)
 *   cpu        the sender keeps every CPU busy for a 1; the receiver,
 *              busy too, counts how often it reads the clock in the
 *              middle half of the slot
 *   statfs     FILE is "SENDER,RECEIVER": the sender writes 1 MiB to
 *              SENDER (its data directory) for a 1 and removes them for
 *              a 0; the receiver reads the free blocks of RECEIVER's file
 *              system (statfs()), the same one seen through its overlay
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
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

static uint64_t
read_time(int fd)
{
	uint64_t t = now_ns();

	touch_page(fd);
	return now_ns() - t;
}

static int
compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Between a cached and a dropped page's read times (medians of 7). */
static uint64_t
read_threshold(int fd)
{
	uint64_t cold[7], warm[7];

	for (int i = 0; i < 7; i++) {
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		cold[i] = read_time(fd);
		warm[i] = read_time(fd);
	}
	qsort(cold, 7, sizeof(cold[0]), compare_u64);
	qsort(warm, 7, sizeof(warm[0]), compare_u64);
	fprintf(stderr, "covert: a read takes %llu ns cold, %llu ns warm\n",
		(unsigned long long)cold[3], (unsigned long long)warm[3]);
	return (cold[3] + warm[3]) / 2;
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
		if (now_ns() >= start + (i + 1) * slot) /* late: the next bit, on time */
			continue;
		if (is_lock(ch))
			lock(ch, fd, one);
		else if (strcmp(ch, "pagecache") == 0 || strcmp(ch, "pagetime") == 0) {
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
	uint64_t threshold = 0;

	if (fd < 0)
		die("open", file);
	if (strcmp(ch, "inotify") == 0) {
		in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
		if (in < 0 || inotify_add_watch(in, file, IN_OPEN | IN_ACCESS) < 0)
			die("inotify_add_watch", file);
	} else if (strcmp(ch, "atime") == 0)
		last = atime_ns(file);
	else if (strcmp(ch, "pagetime") == 0)
		threshold = read_threshold(fd);
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
		else if (threshold)
			one = read_time(fd) < threshold;
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

#define MEM_BYTES (64u << 20)
#define FILL_BYTES (1u << 20)

static bool
is_level(const char *ch)
{
	return strcmp(ch, "meminfo") == 0 || strcmp(ch, "cpu") == 0 || strcmp(ch, "statfs") == 0;
}

static void
fill(const char *file, bool one)
{
	static char block[1 << 16];
	int fd;

	if (!one) {
		(void)unlink(file);
		return;
	}
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die("open", file);
	for (size_t n = 0; n < FILL_BYTES; n += sizeof(block))
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block))
			die("write", file);
	close(fd);
}

static int
send_level(const char *ch, const char *file, uint64_t start, uint64_t slot, const char *bits)
{
	long cpus = strcmp(ch, "cpu") == 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
	char path[4096];
	void *mem = NULL;
	int k = 0;

	snprintf(path, sizeof(path), "%.*s", (int)strcspn(file, ","), file);
	/* One busy process per CPU, each on the same schedule. */
	for (; k < cpus - 1; k++)
		if (fork() == 0)
			break;
	for (size_t i = 0; bits[i]; i++) {
		bool one = bits[i] == '1';

		sleep_until(start + i * slot);
		if (now_ns() >= start + (i + 1) * slot)
			continue;
		if (strcmp(ch, "cpu") == 0) {
			while (one && now_ns() < start + (i + 1) * slot)
				;
		} else if (strcmp(ch, "statfs") == 0)
			fill(path, one);
		else if (one && !mem) {
			mem = mmap(NULL, MEM_BYTES, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
			if (mem == MAP_FAILED)
				die("mmap", "64 MiB");
		} else if (!one && mem) {
			munmap(mem, MEM_BYTES);
			mem = NULL;
		}
	}
	sleep_until(start + strlen(bits) * slot);
	if (strcmp(ch, "statfs") == 0)
		(void)unlink(path);
	if (k < cpus - 1)
		_exit(0);
	while (wait(NULL) > 0)
		;
	return 0;
}

static int64_t
mem_available(void)
{
	char line[256];
	long long kb = -1;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		die("open", "/proc/meminfo");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int
compare_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int
recv_level(const char *ch, const char *file, uint64_t start, uint64_t slot, size_t n)
{
	const char *comma = strchr(file, ',');
	int64_t *v = calloc(n, sizeof(*v)), *sorted = calloc(n, sizeof(*v)), median;

	if (!v || !sorted)
		die("calloc", ch);
	for (size_t i = 0; i < n; i++) {
		uint64_t mid = start + i * slot + slot / 2;
		struct statfs sf;

		if (strcmp(ch, "cpu") == 0) {
			/*
			 * Busy from the first slot to the last, never asleep:
			 * a task that wakes up is owed the CPU and would not
			 * see the sender for a while.
			 */
			if (i == 0)
				sleep_until(start);
			while (now_ns() < mid - slot / 4)
				;
			while (now_ns() < mid + slot / 4)
				v[i]++;
		} else if (strcmp(ch, "statfs") == 0) {
			sleep_until(mid + slot / 4);
			if (statfs(comma ? comma + 1 : file, &sf) < 0)
				die("statfs", file);
			v[i] = (int64_t)sf.f_bfree;
		} else {
			sleep_until(mid);
			v[i] = mem_available();
		}
	}
	memcpy(sorted, v, n * sizeof(*v));
	qsort(sorted, n, sizeof(*v), compare_i64);
	median = sorted[n / 2];
	for (size_t i = 0; i < n; i++)
		putchar(v[i] < median ? '1' : '0');
	putchar('\n');
	free(v);
	free(sorted);
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
	if (is_level(argv[2]))
		return strcmp(argv[1], "send") == 0
			       ? send_level(argv[2], argv[3], start, slot, argv[6])
			       : recv_level(argv[2], argv[3], start, slot,
					    strtoul(argv[6], NULL, 10));
	if (strcmp(argv[1], "send") == 0)
		return send_bits(argv[2], argv[3], start, slot, argv[6]);
	return recv_bits(argv[2], argv[3], start, slot, strtoul(argv[6], NULL, 10));
}
