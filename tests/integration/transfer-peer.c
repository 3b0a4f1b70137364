/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A cage-side peer for the transfer tests, driven by transfer-e2e.sh:
 *
 *   transfer-peer SOCKET hostile CASE [ARG]   one hostile request; prints
 *                                            the outcome as one line
 *   transfer-peer SOCKET load CLIENTS COUNT DIR INBOX TARGET
 *                                            CLIENTS processes, each sending
 *                                            COUNT unique documents and
 *                                            checking each delivered once,
 *                                            byte-identical
 *   transfer-peer SOCKET retry COUNT DIR TARGET
 *                                            COUNT documents, each retried
 *                                            until the mediator answers
 *                                            (the daemon is being killed)
 *   transfer-peer SOCKET linger SECONDS TARGET
 *                                            a TCP socket with unsent data
 *                                            and SO_LINGER SECONDS as the
 *                                            document; prints "sent", the
 *                                            outcome, then keeps the socket
 *                                            stuck for SECONDS
 *   transfer-peer SOCKET linger-bad SECONDS TARGET
 *                                            the same socket, with a
 *                                            malformed message that clipd's
 *                                            front refuses (and closes)
 *   transfer-peer SOCKET flood COUNT FILE TARGET [SECONDS]
 *                                            COUNT requests of FILE on
 *                                            COUNT/4 connections, answers
 *                                            not awaited; prints how many
 *                                            were refused and the first
 *                                            refusal, then holds the
 *                                            connections for SECONDS
 *
 * Output "status=N error=E message=..." for the hostile cases, where N is
 * the reply's status, or "closed" when the mediator closed the
 * connection without an answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <clip/clip.h>

#include "base/util.h"
#include "transfer/proto.h"

static const char *sock_path;

static int
connect_mediator(void)
{
	int fd;

	if (clip_transfer_connect(&fd, sock_path, NULL) < 0) {
		perror("connect");
		exit(2);
	}
	return fd;
}

/* Send raw bytes with @n_fds copies of @fd. */
static void
send_raw(int sock, const void *buf, size_t n, int fd, int n_fds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} control = { 0 };
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (n_fds > 0) {
		struct cmsghdr *c;

		mh.msg_control = control.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)n_fds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)n_fds * sizeof(int));
		for (int i = 0; i < n_fds; i++)
			memcpy(CMSG_DATA(c) + i * sizeof(int), &fd, sizeof(int));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
		perror("sendmsg");
}

static int
outcome(int sock)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };
	struct proto_msg msg;
	int r;

	if (poll(&p, 1, 10000) <= 0) {
		puts("timeout");
		return 1;
	}
	r = proto_recv(sock, &msg, NULL);
	if (r < 0) {
		puts("closed");
		return 0;
	}
	printf("status=%u error=%u name=%s message=%s\n", msg.reply.status, msg.reply.error,
	       msg.reply.name, msg.reply.message);
	return 0;
}

static size_t
request(uint8_t *buf, const char *target, const char *name, size_t name_len)
{
	struct proto_msg m = { .type = PROTO_REQUEST, .fd = -1 };
	size_t n;

	m.request.id = 1;
	snprintf(m.request.target, sizeof(m.request.target), "%s", target);
	n = (size_t)proto_encode(&m, buf);
	/* The name by hand: it may hold what the encoder would not write. */
	memmove(buf + PROTO_HEADER_SIZE + 8 + 2 + strlen(target) + 2 + name_len,
		buf + PROTO_HEADER_SIZE + 8 + 2 + strlen(target) + 2,
		n - (PROTO_HEADER_SIZE + 8 + 2 + strlen(target) + 2));
	buf[PROTO_HEADER_SIZE + 8 + 2 + strlen(target)] = (uint8_t)name_len;
	buf[PROTO_HEADER_SIZE + 8 + 2 + strlen(target) + 1] = (uint8_t)(name_len >> 8);
	memcpy(buf + PROTO_HEADER_SIZE + 8 + 2 + strlen(target) + 2, name, name_len);
	n += name_len;
	buf[8] = (uint8_t)(n - PROTO_HEADER_SIZE);
	buf[9] = (uint8_t)((n - PROTO_HEADER_SIZE) >> 8);
	return n;
}

static int
hostile(const char *what, const char *arg)
{
	static uint8_t buf[64 * 1024];
	int sock = connect_mediator(), fd = -1, n_fds = 1;
	const char *target = arg ? arg : "high";
	size_t n;

	if (strcmp(what, "name") == 0) {
		/* arg: the name, with \\0 standing for NUL */
		char name[PROTO_NAME_MAX + 1];
		size_t len = 0;

		for (const char *p = getenv("PEER_NAME"); p && *p && len < sizeof(name); p++) {
			if (p[0] == '\\' && p[1] == '0') {
				name[len++] = '\0';
				p++;
			} else
				name[len++] = *p;
		}
		fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
		n = request(buf, target, name, len);
	} else if (strcmp(what, "long-name") == 0) {
		char *name = malloc(10240);

		memset(name, 'a', 10240);
		fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
		n = request(buf, target, name, 10240);
		free(name);
	} else if (strcmp(what, "fd") == 0) {
		const char *path = getenv("PEER_FD_PATH");
		int p[2];

		if (strcmp(path, "pipe") == 0) {
			if (pipe2(p, O_CLOEXEC) < 0)
				return 2;
			fd = p[0];
		} else if (strcmp(path, "socket") == 0) {
			if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0)
				return 2;
			fd = p[0];
		} else if (strcmp(path, "epoll") == 0)
			fd = epoll_create1(EPOLL_CLOEXEC);
		else if (strcmp(path, "eventfd") == 0)
			fd = eventfd(0, EFD_CLOEXEC);
		else if (strcmp(path, "pidfd") == 0)
			fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
		else if (strcmp(path, "udp") == 0)
			fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		else
			fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		n = request(buf, target, "x", 1);
	} else if (strcmp(what, "two-fds") == 0) {
		fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
		n = request(buf, target, "x", 1);
		n_fds = 2;
	} else if (strcmp(what, "version") == 0) {
		fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
		n = request(buf, target, "x", 1);
		buf[4] = 7;
	} else if (strcmp(what, "absurd-length") == 0) {
		fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
		n = request(buf, target, "x", 1);
		memset(buf + 8, 0xff, 4);
	} else if (strcmp(what, "claim-source") == 0) {
		/* A request with a "source" appended: the format has no such field. */
		fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
		n = request(buf, target, "x", 1);
		memcpy(buf + n, "\x04\x00high", 6);
		n += 6;
		buf[8] = (uint8_t)(n - PROTO_HEADER_SIZE);
	} else if (strcmp(what, "disconnect") == 0) {
		/* Half a header, then gone. */
		send_raw(sock, "CLXF\x01", 5, -1, 0);
		close(sock);
		puts("sent");
		return 0;
	} else {
		fprintf(stderr, "unknown case %s\n", what);
		return 2;
	}
	send_raw(sock, buf, n, fd, fd >= 0 ? n_fds : 0);
	return outcome(sock);
}

/*
 * A TCP connection on the loopback to a listener that never accepts: the
 * peer's window closes, the rest stays unsent, and with SO_LINGER the last
 * close() of the socket waits @secs for it. That socket is the document.
 */
static int
linger_attack(int secs, const char *target, bool malformed)
{
	static uint8_t buf[64 * 1024];
	/* A fixed port: the cage's profile lists it for Landlock (transfer-cages.sh). */
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(47801),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct linger l = { .l_onoff = 1, .l_linger = secs };
	struct pollfd p;
	socklen_t len = sizeof(a);
	int lst, cl, sock, small = 4096, r;
	size_t n;

	lst = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lst < 0 || setsockopt(lst, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) < 0 ||
	    bind(lst, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lst, 1) < 0 ||
	    getsockname(lst, (struct sockaddr *)&a, &len) < 0) {
		perror("listener");
		return 2;
	}
	cl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (cl < 0 || (connect(cl, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS)) {
		perror("connect");
		return 2;
	}
	p = (struct pollfd){ .fd = cl, .events = POLLOUT };
	if (poll(&p, 1, 5000) != 1)
		return 2;
	/* Until the peer's window and our buffer are full: data left unsent. */
	for (int idle = 0; idle < 20;) {
		if (send(cl, buf, sizeof(buf), MSG_NOSIGNAL) > 0)
			idle = 0;
		else if (errno == EAGAIN) {
			idle++;
			usleep(5000);
		} else {
			perror("send");
			return 2;
		}
	}
	if (setsockopt(cl, SOL_SOCKET, SO_LINGER, &l, sizeof(l)) < 0)
		return 2;
	sock = connect_mediator();
	n = request(buf, target, "stuck", 5);
	if (malformed)
		memset(buf, 'x', n); /* no magic: the decoder's refusal */
	send_raw(sock, buf, n, cl, 1);
	close(cl); /* the mediator's copy is the last one */
	puts("sent");
	fflush(stdout);
	r = outcome(sock);
	fflush(stdout);
	sleep((unsigned)secs + 1);
	close(lst);
	return r;
}

/* @count requests of @path, four per connection, answers read for a while. */
static int
flood(unsigned count, const char *path, const char *target, unsigned hold_s)
{
	static uint8_t buf[PROTO_MSG_MAX];
	unsigned n_conns = (count + 3) / 4, refused = 0, answered = 0;
	int *socks = calloc(n_conns, sizeof(int));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char first[PROTO_TEXT_MAX + 1] = "";
	size_t n = request(buf, target, "flood", 5);

	if (!socks || fd < 0)
		return 2;
	for (unsigned i = 0; i < n_conns; i++)
		socks[i] = connect_mediator();
	for (unsigned i = 0; i < count; i++)
		send_raw(socks[i / 4], buf, n, fd, 1);
	/* The refusals come at once; the questions stay unanswered. */
	for (long long end = now_ms() + 1500; now_ms() < end;) {
		for (unsigned i = 0; i < n_conns; i++) {
			struct proto_msg msg;

			if (proto_recv(socks[i], &msg, NULL) != 0)
				continue;
			answered++;
			if (msg.type == PROTO_REPLY && msg.reply.status != 0) {
				if (!refused++)
					snprintf(first, sizeof(first), "%s", msg.reply.message);
			}
		}
		usleep(10000);
	}
	printf("flood: sent=%u answered=%u refused=%u first=%s\n", count, answered, refused, first);
	fflush(stdout);
	sleep(hold_s);
	return 0;
}

static void
sha256_file(int fd, uint8_t out[32])
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	uint8_t buf[65536];
	ssize_t k;
	off_t off = 0;

	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	while ((k = pread(fd, buf, sizeof(buf), off)) > 0) {
		EVP_DigestUpdate(md, buf, (size_t)k);
		off += k;
	}
	EVP_DigestFinal_ex(md, out, NULL);
	EVP_MD_CTX_free(md);
}

/* One document: write it, send it until answered, check what arrived. */
static int
one(int *sock, const char *dir, const char *inbox, const char *target, unsigned client, unsigned i,
    bool retry, double *ms)
{
	char path[4096], name[64], got[4096];
	uint8_t data[4096], sha[32], want[32], there[32];
	struct clip_transfer *t = NULL;
	struct timespec a, b;
	int fd, r;

	snprintf(name, sizeof(name), "doc-%u-%u", client, i);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (size_t k = 0; k < sizeof(data); k++)
		data[k] = (uint8_t)(rand() & 0xff);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, data, sizeof(data)) != sizeof(data))
		return -1;
	sha256_file(fd, want);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (b.tv_sec - a.tv_sec > 60)
			return -1; /* the daemon never came back */
		if (*sock < 0 && clip_transfer_connect(sock, sock_path, NULL) < 0) {
			if (!retry)
				return -1;
			usleep(20000); /* the daemon is restarting: poll for its socket */
			continue;
		}
		r = clip_transfer_send(&t, *sock, fd, target, name, NULL, NULL);
		if (r == 0)
			break;
		close(*sock);
		*sock = -1;
		if (!retry)
			return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	*ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	if (clip_transfer_get_status(t) != CLIP_TRANSFER_DELIVERED) {
		fprintf(stderr, "%s: %s\n", name, clip_transfer_get_message(t));
		clip_transfer_unref(t);
		return -1;
	}
	clip_transfer_get_digest(t, NULL, sha, NULL);
	snprintf(got, sizeof(got), "%s/%s", inbox, clip_transfer_get_name(t));
	clip_transfer_unref(t);
	/* The source is untouched, the reply's hash is the source's. */
	sha256_file(fd, there);
	close(fd);
	if (memcmp(sha, want, 32) != 0 || memcmp(there, want, 32) != 0)
		return -1;
	if (inbox[0]) {
		fd = open(got, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		sha256_file(fd, there);
		close(fd);
		if (memcmp(there, want, 32) != 0)
			return -1;
	}
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int
load(unsigned clients, unsigned count, const char *dir, const char *inbox, const char *target)
{
	int pipes[2], failed = 0;
	double *all = calloc((size_t)clients * count, sizeof(double));
	struct timespec a, b;
	size_t n_all = 0;

	if (!all || pipe(pipes) < 0)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (unsigned c = 0; c < clients; c++) {
		if (fork() == 0) {
			int sock = -1, bad = 0;

			srand(c + 1);
			close(pipes[0]);
			for (unsigned i = 0; i < count; i++) {
				double ms = 0;

				if (one(&sock, dir, inbox, target, c, i, false, &ms) < 0)
					bad++;
				if (write(pipes[1], &ms, sizeof(ms)) != sizeof(ms))
					_exit(2);
			}
			_exit(bad ? 1 : 0);
		}
	}
	close(pipes[1]);
	while (n_all < (size_t)clients * count &&
	       read(pipes[0], &all[n_all], sizeof(double)) == sizeof(double))
		n_all++;
	for (unsigned c = 0; c < clients; c++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	qsort(all, n_all, sizeof(double), cmp_double);
	{
		double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;

		printf("transfers=%zu clients=%u failed_clients=%d seconds=%.2f per_second=%.0f "
		       "p50_ms=%.2f p99_ms=%.2f\n",
		       n_all, clients, failed, s, (double)n_all / s, n_all ? all[n_all / 2] : 0.0,
		       n_all ? all[n_all * 99 / 100] : 0.0);
	}
	free(all);
	return failed ? 1 : 0;
}

int
main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	sock_path = argv[1];
	if (strcmp(argv[2], "hostile") == 0 && argc >= 4)
		return hostile(argv[3], argc > 4 ? argv[4] : NULL);
	if (strcmp(argv[2], "load") == 0 && argc == 8)
		return load((unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]), argv[5], argv[6],
			    argv[7]);
	if (strcmp(argv[2], "linger") == 0 && argc == 5)
		return linger_attack(atoi(argv[3]), argv[4], false);
	if (strcmp(argv[2], "linger-bad") == 0 && argc == 5)
		return linger_attack(atoi(argv[3]), argv[4], true);
	if (strcmp(argv[2], "flood") == 0 && (argc == 6 || argc == 7))
		return flood((unsigned)atoi(argv[3]), argv[4], argv[5],
			     argc == 7 ? (unsigned)atoi(argv[6]) : 0);
	if (strcmp(argv[2], "retry") == 0 && argc == 6) {
		int sock = -1, bad = 0;

		for (unsigned i = 0; i < (unsigned)atoi(argv[3]); i++) {
			double ms;

			if (one(&sock, argv[4], "", argv[5], 0, i, true, &ms) < 0)
				bad++;
		}
		printf("retry: %d failed\n", bad);
		return bad ? 1 : 0;
	}
	return 2;
}
