/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A compromised clipd front (issue 20, finding 6; doc/threat-model.md
 * T32, T33): this program puts its children in exactly the sandbox a
 * front puts itself in (programs/clipd/front.c, front_sandbox()), as
 * fronts 0 and 1, and attacks from front 0: the other front (F_SETOWN,
 * SIGIO, kill, ptrace), another cage's file (stat and open by path), the
 * log (forged lines on its stderr). Every attack must fail; with
 * CLIP_TEST_DISABLE naming the mechanism (a -Dtest_hooks=true build),
 * the one it stops goes through. Front 1 is also stopped and continued
 * 100 times in its poll() (finding 5).
 *
 *   front-attack
 *
 * TAP on stdout. Run by root (the fronts have uids of their own), by a
 * plain user and as uid 0 of a rootless container (one id: each front
 * has a user namespace of its own).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "front.h"

static int n_tests, n_failed;
static char secret[4096];
static pid_t other = -1;
static int other_release = -1;

static void
check(int good, const char *name, const char *detail)
{
	n_tests++;
	n_failed += !good;
	printf("%sok %d - %s%s%s\n", good ? "" : "not ", n_tests, name, detail ? ": " : "",
	       detail ? detail : "");
	fflush(stdout);
}

static void
sleep_ms(long ms)
{
	nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000 }, NULL);
}

/* Front 1: confined, then in poll() until released (or killed). */
static pid_t
start_other(void)
{
	int ready[2], release[2];
	pid_t pid;
	char c;

	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(release, O_CLOEXEC) < 0)
		exit(2);
	pid = fork();
	if (pid == 0) {
		struct pollfd p = { .fd = release[0], .events = POLLIN };

		close(ready[0]), close(release[1]);
		if (front_sandbox(1) < 0)
			_exit(3);
		(void)!write(ready[1], "r", 1);
		for (;;)
			if (poll(&p, 1, -1) > 0)
				_exit(0);
	}
	close(ready[1]), close(release[0]);
	if (read(ready[0], &c, 1) != 1) {
		printf("Bail out! the other front did not confine itself\n");
		exit(1);
	}
	close(ready[0]);
	other_release = release[1];
	return pid;
}

static int
other_alive(void)
{
	int status;

	sleep_ms(100);
	return waitpid(other, &status, WNOHANG) == 0;
}

/* How an attack ended: its errno (0: it worked), or -SIGNAL if it was killed. */
typedef int (*attack_fn)(void);

static int
attack(attack_fn fn, int log_fd)
{
	int res[2], status, r = -1;
	bool got;
	pid_t pid;

	if (pipe2(res, O_CLOEXEC) < 0)
		exit(2);
	pid = fork();
	if (pid == 0) {
		close(res[0]);
		if (log_fd >= 0 && dup2(log_fd, 2) < 0)
			_exit(3);
		if (front_sandbox(0) < 0)
			_exit(3);
		r = fn();
		(void)!write(res[1], &r, sizeof(r));
		_exit(0);
	}
	close(res[1]);
	got = read(res[0], &r, sizeof(r)) == sizeof(r);
	close(res[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	/*
	 * What it said, if it got that far: under ASan, _exit() itself
	 * (sigaltstack) is then killed by the filter, as in a front.
	 */
	if (got)
		return r;
	if (WIFSIGNALED(status))
		return -WTERMSIG(status);
	return WIFEXITED(status) && WEXITSTATUS(status) == 3 ? -1000 : -1;
}

static const char *
outcome(int r)
{
	static char buf[128];

	if (r == 0)
		return "it worked";
	if (r == -SIGSYS)
		return "killed by the seccomp filter";
	if (r == -1000)
		return "the front could not confine itself";
	if (r < 0)
		snprintf(buf, sizeof(buf), "killed by signal %d", -r);
	else
		snprintf(buf, sizeof(buf), "%s", strerror(r));
	return buf;
}

static int
refused(int r)
{
	return r != 0 && r != -1000;
}

static int
sock(void)
{
	int sp[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
		return -1;
	return sp[0];
}

static int
a_setown(void)
{
	return fcntl(sock(), F_SETOWN, other) < 0 ? errno : 0;
}

/* The whole signal attack: SIGIO of a socket, redirected as SIGKILL to the other front. */
static int
a_sigio(void)
{
	int sp[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
		return errno;
	if (fcntl(sp[0], F_SETOWN, other) < 0 || fcntl(sp[0], F_SETSIG, SIGKILL) < 0 ||
	    fcntl(sp[0], F_SETFL, O_ASYNC | O_NONBLOCK) < 0)
		return errno;
	(void)!write(sp[1], "x", 1);
	return 0;
}

static int
a_setsig(void)
{
	return fcntl(sock(), F_SETSIG, SIGKILL) < 0 ? errno : 0;
}

static int
a_async(void)
{
	return fcntl(sock(), F_SETFL, O_ASYNC | O_NONBLOCK) < 0 ? errno : 0;
}

static int
a_getfl(void)
{
	return fcntl(sock(), F_GETFL) < 0 ? errno : 0;
}

static int
a_stat_empty_path(void)
{
	struct stat st;

	/* What the filter lets through: glibc's fstat, with a path after all. */
	return syscall(SYS_newfstatat, 3, secret, &st, AT_EMPTY_PATH) < 0 ? errno : 0;
}

static int
a_stat_path(void)
{
	struct stat st;

	return syscall(SYS_newfstatat, AT_FDCWD, secret, &st, 0) < 0 ? errno : 0;
}

static int
a_fstat(void)
{
	struct stat st;

	return fstat(sock(), &st) < 0 ? errno : 0;
}

static int
a_open(void)
{
	return syscall(SYS_openat, AT_FDCWD, secret, O_RDONLY) < 0 ? errno : 0;
}

static int
a_kill(void)
{
	return kill(other, SIGKILL) < 0 ? errno : 0;
}

static int
a_ptrace(void)
{
	return ptrace(PTRACE_ATTACH, other, NULL, NULL) < 0 ? errno : 0;
}

static int
a_socketpair_other(void)
{
	int sp[2];

	return socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0 ? errno : 0;
}

static int
a_forge_log(void)
{
	char line[] = "clipd: cage 'high': forged \x1b[2J\n";

	for (int i = 0; i < 1000; i++)
		if (write(2, line, sizeof(line) - 1) < 0)
			return errno;
	return 0;
}

static char *
uid_map_of(pid_t pid)
{
	static char buf[256];
	char path[64];
	int fd, n = 0;

	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	buf[0] = '\0';
	if (fd >= 0) {
		n = (int)read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

static long
uid_of(pid_t pid)
{
	char path[64], line[256];
	long uid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %ld", &uid) == 1)
			break;
	if (f)
		fclose(f);
	return uid;
}

static int
one_id_only(void)
{
	char *map = uid_map_of(getpid());
	unsigned a, b, n;

	return geteuid() != 0 || sscanf(map, "%u %u %u", &a, &b, &n) != 3 || n < 2;
}

int
main(void)
{
	char dir[] = "/tmp/clip-front-attack-XXXXXX", detail[1024];
	struct {
		const char *name;
		attack_fn fn;
	} refusals[] = {
		{ "F_SETOWN of a socket to another front is refused", a_setown },
		{ "F_SETSIG is refused", a_setsig },
		{ "F_SETFL with O_ASYNC is refused", a_async },
		{ "stat of another cage's file by name is refused", a_stat_path },
		{ "stat of another cage's file with AT_EMPTY_PATH finds nothing",
		  a_stat_empty_path },
		{ "open of another cage's file is refused", a_open },
		{ "kill of another front is refused", a_kill },
		{ "ptrace of another front is refused", a_ptrace },
		{ "a socketpair of another kind is refused", a_socketpair_other },
	};
	int r, fd, lp[2];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!mkdtemp(dir))
		return 2;
	/* Another cage's inbox, readable by all: only the front's root hides it. */
	chmod(dir, 0755);
	snprintf(secret, sizeof(secret), "%s/inbox-high-document", dir);
	fd = open(secret, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return 2;
	close(fd);

	other = start_other();
	/* What a front does need still works, or the refusals below prove nothing. */
	r = attack(a_getfl, -1);
	check(r == 0, "a confined front can still read its flags (F_GETFL)", outcome(r));
	r = attack(a_fstat, -1);
	check(r == 0, "a confined front can still fstat its fds", outcome(r));

	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		r = attack(refusals[i].fn, -1);
		check(refused(r), refusals[i].name, outcome(r));
	}
	r = attack(a_sigio, -1);
	snprintf(detail, sizeof(detail), "the attack: %s", outcome(r));
	check(other_alive(), "a SIGIO redirected to another front does not reach it", detail);

	/* Whose uid: its own (root mode), or one id in a user namespace of its own. */
	if (!one_id_only()) {
		pid_t self = fork();

		if (self == 0) {
			if (front_sandbox(0) < 0)
				_exit(3);
			for (;;)
				pause();
		}
		sleep_ms(100);
		snprintf(detail, sizeof(detail), "%ld and %ld", uid_of(self), uid_of(other));
		check(uid_of(self) != uid_of(other) && uid_of(other) == (long)front_uid(1),
		      "root mode: two fronts run as two uids", detail);
		kill(self, SIGKILL);
		waitpid(self, NULL, 0);
	} else {
		char mine[256], theirs[256], path[64];
		ssize_t a, b;

		/* Its namespace where we may see it (not dumpable: uid 0 of a container may). */
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)other);
		a = readlink(path, theirs, sizeof(theirs) - 1);
		b = readlink("/proc/self/ns/user", mine, sizeof(mine) - 1);
		if (a <= 0 || b <= 0) {
			/* Else its map: its one id, not ours. */
			snprintf(mine, sizeof(mine), "%s", uid_map_of(getpid()));
			snprintf(theirs, sizeof(theirs), "%s", uid_map_of(other));
		} else
			theirs[a] = mine[b] = '\0';
		snprintf(detail, sizeof(detail), "its '%s', ours '%s'", theirs, mine);
		check(strcmp(theirs, mine) != 0,
		      "one id only: a front is in a user namespace of its own", detail);
	}

	/* Finding 5: stopped and continued in its poll(), 100 times. */
	for (int i = 0; i < 100; i++) {
		kill(other, SIGSTOP);
		sleep_ms(2);
		kill(other, SIGCONT);
		sleep_ms(2);
	}
	check(other_alive(), "a front stopped and continued 100 times in poll() survives", NULL);

	/* The log: forged lines on its stderr come out prefixed and escaped, and bounded. */
	if (pipe2(lp, O_CLOEXEC) < 0)
		return 2;
	{
		struct front_log log = { 0 };
		char *out = NULL, *p;
		size_t size = 0;
		FILE *f = open_memstream(&out, &size);
		unsigned lines = 0, prefixed = 0, raw_escape = 0;
		int status;

		r = attack(a_forge_log, lp[1]);
		close(lp[1]);
		while (front_log_read(&log, lp[0], "low", f) == 0)
			;
		fclose(f);
		for (p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
			lines++;
			prefixed += strncmp(p, "clipd: front of 'low': ", 23) == 0;
		}
		raw_escape = out && strchr(out, '\x1b');
		snprintf(detail, sizeof(detail), "%u of %u lines", prefixed, lines);
		check(lines > 0 && prefixed == lines,
		      "a front's forged log lines come out prefixed with its cage", detail);
		check(!raw_escape, "a front's log lines reach no terminal control", NULL);
		snprintf(detail, sizeof(detail), "%u lines for 1000 written", lines);
		check(lines <= FRONT_LOG_LINES, "a front's log is bounded", detail);
		free(out);
		close(lp[0]);
		(void)status;
	}

	close(other_release);
	waitpid(other, NULL, 0);
	unlink(secret);
	rmdir(dir);
	printf("1..%d\n", n_tests);
	return n_failed ? 1 : 0;
}
