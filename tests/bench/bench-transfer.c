/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Mediated transfer, measured end to end through the shared library: a
 * mediator in a child process (policy "src dst allow", audit log on, label
 * on), a client in this one. Medians of several runs, beside a baseline:
 *   - one big document (1 GiB by default), fsync included, vs
 *     `openssl dgst -sha256 F && cp F DST && sync` in the same run: the
 *     mediator reads once (hash and copy in one pass), the baseline twice;
 *   - 4 KiB documents one after another: transfers per second and p50/p99
 *     latency, vs the floor of a durable atomic write of 4 KiB (O_TMPFILE,
 *     write, fsync, linkat, fsync of the directory).
 *
 * Usage: bench-transfer [--runs N] [--size-mb MB] [--count N] [--dir DIR]
 * The directory should be on the disk you care about (default /var/tmp).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <clip/clip.h>

#include "bench.h"

static int runs = 3, count = 2000;
static long size_mb = 1024;
static const char *base = "/var/tmp";
static char dir[512], src_sock[600], inbox[600];

static int
listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0)
		return -1;
	return fd;
}

/* The mediator: serve until @stop_fd closes; say ready on @ready_fd. */
static void __attribute__((noreturn)) serve(int ready_fd, int stop_fd)
{
	static const char policy_text[] = "src dst allow\n";
	/* trusted.* labels need root; another user labels in user.* (rootless). */
	const struct clip_mediator_opts opts = { .size = sizeof(opts),
						 .label_flags =
							 geteuid() == 0 ? 0 : CLIP_LABEL_ROOTLESS };
	struct clip_ctx *ctx = NULL;
	struct clip_policy *policy = NULL;
	struct clip_audit *audit = NULL;
	struct clip_mediator *m = NULL;
	struct clip_level *lo = NULL, *hi = NULL;
	struct clip_error *e = NULL;
	char path[700];
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ok = 1;

	snprintf(path, sizeof(path), "%s/state", dir);
	ok &= clip_ctx_new(&ctx) == 0 && clip_ctx_set_state_dir(ctx, path) == 0;
	ok &= ok && clip_policy_parse(&policy, policy_text, strlen(policy_text), "bench", &e) == 0;
	ok &= ok && clip_audit_open(&audit, ctx, dfd, "audit.log", 0, &e) == 0;
	ok &= ok && clip_mediator_new(&m, ctx, policy, audit, &opts, &e) == 0;
	ok &= ok && clip_level_parse(&lo, "s0", NULL) == 0 &&
	      clip_level_parse(&hi, "s1", NULL) == 0;
	for (int i = 0; ok && i < 2; i++) {
		/* One client sends as fast as it can: measured, not rate-limited. */
		struct clip_mediator_cage c = { .size = sizeof(c),
						.name = i ? "dst" : "src",
						.level = i ? hi : lo,
						.rate_per_s = CLIP_MEDIATOR_RATE_UNLIMITED };

		snprintf(path, sizeof(path), "%s/%s", dir, c.name);
		mkdir(path, 0755);
		c.inbox_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(path, sizeof(path), "%s/%s.sock", dir, c.name);
		c.socket_fd = listen_at(path);
		ok &= clip_mediator_add_cage(m, &c, &e) == 0;
	}
	if (!ok) {
		fprintf(stderr, "bench-transfer: mediator: %s\n",
			e ? clip_error_get_message(e) : "setup failed");
		_exit(1);
	}
	if (write(ready_fd, "R", 1) != 1)
		_exit(1);
	for (;;) {
		struct pollfd p[2] = { { .fd = clip_mediator_get_fd(m), .events = POLLIN },
				       { .fd = stop_fd, .events = POLLIN } };

		poll(p, 2, -1);
		if (p[1].revents)
			_exit(0);
		while (clip_mediator_dispatch(m, NULL) > 0)
			;
	}
}

static int
make_file(const char *path, long long size)
{
	static char buf[1 << 20];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 2654435761u >> 24);
	for (long long left = size; fd >= 0 && left > 0;) {
		size_t n = left < (long long)sizeof(buf) ? (size_t)left : sizeof(buf);

		if (write(fd, buf, n) != (ssize_t)n)
			return -1;
		left -= (long long)n;
	}
	if (fd < 0 || fsync(fd) < 0)
		return -1;
	close(fd);
	return 0;
}

static int
send_one(int sock, const char *path, const char *name)
{
	struct clip_transfer *t = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -1;
	r = clip_transfer_send(&t, sock, fd, "dst", name, NULL, NULL);
	close(fd);
	if (r == 0 && clip_transfer_get_status(t) != CLIP_TRANSFER_DELIVERED) {
		fprintf(stderr, "bench-transfer: %s\n", clip_transfer_get_message(t));
		r = -1;
	}
	clip_transfer_unref(t);
	return r;
}

static void
clear_inbox(void)
{
	char cmd[1400];

	snprintf(cmd, sizeof(cmd), "find '%s' -mindepth 1 -delete", inbox);
	if (system(cmd) != 0)
		fprintf(stderr, "bench-transfer: cannot clear %s\n", inbox);
}

static int
big(int sock)
{
	double mine[16], peer[16], mb = (double)size_mb;
	char f[700], cmd[2200];

	snprintf(f, sizeof(f), "%s/big", dir);
	if (make_file(f, (long long)size_mb << 20) < 0)
		return -1;
	for (int r = 0; r < runs; r++) {
		double t0 = now();

		if (send_one(sock, f, "big") < 0)
			return -1;
		mine[r] = now() - t0;
		clear_inbox();
		snprintf(cmd, sizeof(cmd),
			 "openssl dgst -sha256 '%s' >/dev/null && cp '%s' '%s/cp-copy' && sync", f,
			 f, dir);
		t0 = now();
		if (system(cmd) != 0)
			return -1;
		peer[r] = now() - t0;
		snprintf(cmd, sizeof(cmd), "%s/cp-copy", dir);
		unlink(cmd);
	}
	qsort(mine, (size_t)runs, sizeof(double), cmp_double);
	qsort(peer, (size_t)runs, sizeof(double), cmp_double);
	printf("| %-40s | %9.2f s | %7.0f MB/s |\n", "clip transfer (hash+copy+fsync+label)",
	       mine[runs / 2], mb / mine[runs / 2]);
	printf("| %-40s | %9.2f s | %7.0f MB/s |\n", "openssl dgst -sha256 && cp && sync",
	       peer[runs / 2], mb / peer[runs / 2]);
	printf("ratio (baseline time / transfer time): %.2f\n\n", peer[runs / 2] / mine[runs / 2]);
	unlink(f);
	return 0;
}

static double
floor_write(const char *path)
{
	static char buf[4096];
	char link_path[64], name[64];
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	double t0 = now();

	for (int i = 0; i < count; i++) {
		int fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0640);

		if (fd < 0 || write(fd, buf, sizeof(buf)) != sizeof(buf) || fsync(fd) < 0)
			return -1;
		snprintf(link_path, sizeof(link_path), "/proc/self/fd/%d", fd);
		snprintf(name, sizeof(name), "floor-%d", i);
		if (linkat(AT_FDCWD, link_path, dfd, name, AT_SYMLINK_FOLLOW) < 0 || fsync(dfd) < 0)
			return -1;
		close(fd);
	}
	close(dfd);
	return (double)count / (now() - t0);
}

static int
small(int sock)
{
	double *lat = calloc((size_t)count, sizeof(double)), rates[16], floors[16], p50 = 0,
	       p99 = 0;
	char f[700], floor_dir[700];

	snprintf(f, sizeof(f), "%s/small", dir);
	snprintf(floor_dir, sizeof(floor_dir), "%s/floor", dir);
	if (!lat || make_file(f, 4096) < 0)
		return -1;
	for (int r = 0; r < runs; r++) {
		double t0 = now();
		char cmd[800];

		for (int i = 0; i < count; i++) {
			double a = now();
			char name[32];

			snprintf(name, sizeof(name), "small-%d", i);
			if (send_one(sock, f, name) < 0)
				return -1;
			lat[i] = now() - a;
		}
		rates[r] = (double)count / (now() - t0);
		qsort(lat, (size_t)count, sizeof(double), cmp_double);
		if (r == runs / 2 || r == 0) {
			p50 = lat[count / 2];
			p99 = lat[count * 99 / 100];
		}
		clear_inbox();
		mkdir(floor_dir, 0755);
		floors[r] = floor_write(floor_dir);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", floor_dir);
		if (system(cmd) != 0)
			return -1;
	}
	qsort(rates, (size_t)runs, sizeof(double), cmp_double);
	qsort(floors, (size_t)runs, sizeof(double), cmp_double);
	printf("| %-40s | %9.0f /s | p50 %.3f ms, p99 %.3f ms |\n",
	       "clip transfer of 4 KiB (allow)", rates[runs / 2], p50 * 1e3, p99 * 1e3);
	printf("| %-40s | %9.0f /s | |\n", "floor: O_TMPFILE+write+fsync+linkat+fsync",
	       floors[runs / 2]);
	printf("ratio (floor / transfer): %.2f\n", floors[runs / 2] / rates[runs / 2]);
	free(lat);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "size-mb", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'c' },
		{ "dir", required_argument, NULL, 'd' },
		{ 0 },
	};
	int c, ready[2], stop[2], sock, r = 0, status;
	pid_t pid;
	char cmd[600];

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			runs = atoi(optarg);
			break;
		case 's':
			size_mb = atol(optarg);
			break;
		case 'c':
			count = atoi(optarg);
			break;
		case 'd':
			base = optarg;
			break;
		default:
			fprintf(stderr,
				"Usage: bench-transfer [--runs N] [--size-mb MB] [--count N] "
				"[--dir DIR]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > 15 || count < 100 || size_mb < 1) {
		fprintf(stderr, "bench-transfer: --runs 1..15, --count >= 100, --size-mb >= 1\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/bench-transfer-XXXXXX", base);
	if (!mkdtemp(dir))
		return 1;
	snprintf(src_sock, sizeof(src_sock), "%s/src.sock", dir);
	snprintf(inbox, sizeof(inbox), "%s/dst", dir);
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(stop, O_CLOEXEC) < 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		close(stop[1]);
		serve(ready[1], stop[0]);
	}
	close(stop[0]);
	close(ready[1]);
	if (read(ready[0], cmd, 1) != 1 || clip_transfer_connect(&sock, src_sock, NULL) < 0) {
		fprintf(stderr, "bench-transfer: the mediator did not start\n");
		return 1;
	}
	printf("libclip %s, %d runs, medians, in %s (machine shared with other work)\n\n",
	       clip_version(), runs, base);
	printf("%ld MiB document, end to end:\n", size_mb);
	if (big(sock) < 0 || small(sock) < 0)
		r = 1;
	close(sock);
	close(stop[1]);
	waitpid(pid, &status, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		r = 1;
	return r;
}
