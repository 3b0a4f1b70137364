/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Mediated transfer, measured end to end through the shared library: a
 * mediator in a child process (policy "src dst allow", audit log on, label
 * on), clients in this one. Medians of several rounds, libclip and its
 * baselines alternated round by round (the order swapped every round),
 * with the paired ratios' spread, the load average, and CPU time (the
 * mediator's, read from /proc, plus this process's) beside wall time:
 *   - one big document (1 GiB by default), fsync included, vs two peers:
 *     `openssl dgst -sha256 F && cp F DST && sync DST` (the fair one: it
 *     syncs its own file, as the mediator does) and the same ending in a
 *     bare `sync` (which syncs the whole machine, shown for reference). The
 *     source is evicted from the page cache before every run of every side
 *     (it was fsync'd when made, then posix_fadvise(POSIX_FADV_DONTNEED)),
 *     so each reads it from the disk: the mediator once (hash and copy in
 *     one pass), the peers twice (the second read from the cache);
 *   - 4 KiB documents, one client and then 8 concurrent clients (each its
 *     own connection): transfers per second and p50/p99 latency, vs the
 *     floor of one durable atomic write of 4 KiB (O_TMPFILE, write, fsync,
 *     linkat, fsync of the directory) after another.
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
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <clip/clip.h>

#include "bench.h"

static int runs = 3, count = 2000;
static pid_t mediator_pid;
#define CLIENTS 8
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

/* CPU seconds of this process, its children waited for, and the mediator. */
static double
cpu_all(void)
{
	unsigned long ut = 0, st = 0;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)mediator_pid);
	f = fopen(path, "re");
	if (f) {
		/* After "(comm)": fields 3 to 13, then utime and stime. */
		if (fscanf(f, "%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			   &ut, &st) != 2)
			ut = st = 0;
		fclose(f);
	}
	return cpu_seconds() + (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Drop @path's pages from the page cache (it is clean: made with fsync). */
static int
evict(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -1;
	r = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return r == 0 ? 0 : -1;
}

/* One run of a peer's shell command from an evicted source: seconds, CPU in *@cpu. */
static double
peer_once(const char *cmd, const char *f, double *cpu)
{
	double t0, c0;
	char copy[700];

	if (evict(f) < 0)
		return -1;
	c0 = cpu_all();
	t0 = now();
	if (system(cmd) != 0)
		return -1;
	t0 = now() - t0;
	*cpu = cpu_all() - c0;
	snprintf(copy, sizeof(copy), "%s/cp-copy", dir);
	unlink(copy);
	return t0;
}

static int
big(int sock)
{
	double mine[16], fair[16], whole[16], cm[16], cf[16], cw[16], rf[16], rw[16];
	double mb = (double)size_mb;
	char f[700], fair_cmd[4096], whole_cmd[4096];
	struct spread a, b, c, x, y;

	snprintf(f, sizeof(f), "%s/big", dir);
	if (make_file(f, (long long)size_mb << 20) < 0)
		return -1;
	snprintf(
		fair_cmd, sizeof(fair_cmd),
		"openssl dgst -sha256 '%s' >/dev/null && cp '%s' '%s/cp-copy' && sync '%s/cp-copy'",
		f, f, dir, dir);
	snprintf(whole_cmd, sizeof(whole_cmd),
		 "openssl dgst -sha256 '%s' >/dev/null && cp '%s' '%s/cp-copy' && sync", f, f, dir);
	for (int r = 0; r < runs; r++) {
		for (int k = 0; k < 3; k++) {
			/* The order rotates every round. */
			int which = (k + r) % 3;

			if (which == 0) {
				double t0, c0;

				if (evict(f) < 0)
					return -1;
				c0 = cpu_all();
				t0 = now();
				if (send_one(sock, f, "big") < 0)
					return -1;
				mine[r] = now() - t0;
				cm[r] = cpu_all() - c0;
				clear_inbox();
			} else if (which == 1) {
				if ((fair[r] = peer_once(fair_cmd, f, &cf[r])) < 0)
					return -1;
			} else if ((whole[r] = peer_once(whole_cmd, f, &cw[r])) < 0)
				return -1;
		}
		rf[r] = fair[r] / mine[r];
		rw[r] = whole[r] / mine[r];
	}
	a = spread_of(mine, runs);
	b = spread_of(fair, runs);
	c = spread_of(whole, runs);
	x = spread_of(rf, runs);
	y = spread_of(rw, runs);
	printf("| %-58s | %7s | %9s | %7s | %-18s |\n", "", "wall s", "MB/s", "CPU s",
	       "peer / transfer");
	printf("|%.60s|%.9s|%.11s|%.9s|%.20s|\n",
	       "------------------------------------------------------------", "---------",
	       "-----------", "---------", "--------------------");
	printf("| %-58s | %7.2f | %9.0f | %7.2f | %-18s |\n",
	       "clip transfer (hash+copy+fsync+label)", a.median, mb / a.median,
	       spread_of(cm, runs).median, "");
	printf("| %-58s | %7.2f | %9.0f | %7.2f | %.2f (%.2f-%.2f)   |\n",
	       "openssl dgst -sha256 && cp && sync DST (fair)", b.median, mb / b.median,
	       spread_of(cf, runs).median, x.median, x.min, x.max);
	printf("| %-58s | %7.2f | %9.0f | %7.2f | %.2f (%.2f-%.2f)   |\n",
	       "openssl dgst -sha256 && cp && sync (whole machine)", c.median, mb / c.median,
	       spread_of(cw, runs).median, y.median, y.min, y.max);
	printf("\nsource evicted from the page cache before every run (posix_fadvise "
	       "DONTNEED); ratio = peer's time / the transfer's in the same round\n\n");
	goal_line("transfer-1g-vs-fair-peer", x.median, ">=", 1.5);
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

/*
 * @clients processes, each with its own connection, send @count 4 KiB
 * documents in all: transfers per second; each latency in @lat.
 */
static double
small_round(int clients, const char *f, double *lat, double *cpu)
{
	double t0 = now(), c0 = cpu_all();
	int per = count / clients, ok = 1;
	pid_t pids[CLIENTS];

	for (int k = 0; k < clients; k++) {
		pids[k] = fork();
		if (pids[k] < 0)
			return -1;
		if (pids[k] == 0) {
			int sock;

			if (clip_transfer_connect(&sock, src_sock, NULL) < 0)
				_exit(1);
			for (int i = 0; i < per; i++) {
				double a = now();
				char name[32];

				snprintf(name, sizeof(name), "small-%d-%d", k, i);
				if (send_one(sock, f, name) < 0)
					_exit(1);
				lat[k * per + i] = now() - a;
			}
			_exit(0);
		}
	}
	for (int k = 0; k < clients; k++) {
		int status;

		if (waitpid(pids[k], &status, 0) != pids[k] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			ok = 0;
	}
	t0 = now() - t0;
	*cpu = cpu_all() - c0;
	clear_inbox();
	return ok ? (double)(per * clients) / t0 : -1;
}

static int
small(void)
{
	/* Shared with the client processes, which write their latencies in it. */
	double *lat = mmap(NULL, (size_t)count * sizeof(double), PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double rates[2][16], cpus[2][16], floors[16], ratio[2][16], p50[2][16], p99[2][16];
	static const int clients[2] = { 1, CLIENTS };
	char f[700], floor_dir[700];

	snprintf(f, sizeof(f), "%s/small", dir);
	snprintf(floor_dir, sizeof(floor_dir), "%s/floor", dir);
	if (lat == MAP_FAILED || make_file(f, 4096) < 0)
		return -1;
	for (int r = 0; r < runs; r++) {
		for (int k = 0; k < 3; k++) {
			int which = (k + r) % 3;
			char cmd[800];

			if (which == 2) {
				mkdir(floor_dir, 0755);
				floors[r] = floor_write(floor_dir);
				snprintf(cmd, sizeof(cmd), "rm -rf '%s'", floor_dir);
				if (floors[r] < 0 || system(cmd) != 0)
					return -1;
				continue;
			}
			rates[which][r] = small_round(clients[which], f, lat, &cpus[which][r]);
			if (rates[which][r] < 0)
				return -1;
			cpus[which][r] /= (double)count;
			qsort(lat, (size_t)count, sizeof(double), cmp_double);
			p50[which][r] = lat[count / 2] * 1e3;
			p99[which][r] = lat[count * 99 / 100] * 1e3;
		}
		for (int w = 0; w < 2; w++)
			ratio[w][r] = floors[r] / rates[w][r];
	}
	printf("\n| %-44s | %9s | %8s | %8s | %9s | %-18s |\n", "4 KiB documents, durable", "per s",
	       "p50 ms", "p99 ms", "CPU µs", "floor / transfer");
	printf("|%.46s|%.11s|%.10s|%.10s|%.11s|%.20s|\n",
	       "----------------------------------------------", "-----------", "----------",
	       "----------", "-----------", "--------------------");
	for (int w = 0; w < 2; w++) {
		struct spread x = spread_of(ratio[w], runs);
		char what[64];

		snprintf(what, sizeof(what), "clip transfer (allow), %d client%s", clients[w],
			 clients[w] > 1 ? "s at once" : "");
		printf("| %-44s | %9.0f | %8.2f | %8.2f | %9.0f | %.2f (%.2f-%.2f)   |\n", what,
		       spread_of(rates[w], runs).median, spread_of(p50[w], runs).median,
		       spread_of(p99[w], runs).median, spread_of(cpus[w], runs).median * 1e6,
		       x.median, x.min, x.max);
	}
	printf("| %-44s | %9.0f | %8s | %8s | %9s | %-18s |\n",
	       "floor: O_TMPFILE+write+fsync+linkat+fsync", spread_of(floors, runs).median, "", "",
	       "", "");
	printf("\nCPU = the mediator's and the clients' per transfer; load average %.2f after\n",
	       load_now());
	goal_line("transfer-4k-8-clients-rate", spread_of(rates[1], runs).median, ">=", 1000);
	goal_line("transfer-4k-8-clients-p99-ms", spread_of(p99[1], runs).median, "<=", 20);
	munmap(lat, (size_t)count * sizeof(double));
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
	if (runs < 1 || runs > 15 || count < 100 || count % CLIENTS || size_mb < 1) {
		fprintf(stderr,
			"bench-transfer: --runs 1..15, --count >= 100 and a multiple of %d, "
			"--size-mb >= 1\n",
			CLIENTS);
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
	mediator_pid = pid;
	close(stop[0]);
	close(ready[1]);
	if (read(ready[0], cmd, 1) != 1 || clip_transfer_connect(&sock, src_sock, NULL) < 0) {
		fprintf(stderr, "bench-transfer: the mediator did not start\n");
		return 1;
	}
	printf("libclip %s, %d rounds, medians, in %s; load average %.2f before\n\n",
	       clip_version(), runs, base, load_now());
	printf("%ld MiB document, end to end:\n\n", size_mb);
	if (big(sock) < 0 || small() < 0)
		r = 1;
	close(sock);
	close(stop[1]);
	waitpid(pid, &status, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		r = 1;
	return r;
}
