/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Escape attempts, run inside a cage by run-escape.sh. Each check is one
 * TAP line naming the protection it proves; each would pass the other way
 * if that protection were removed (run-escape.sh --show-failures shows a
 * few). Modes:
 *
 *   escape --serve          in the other cage: listen on an abstract and a
 *                           path UNIX socket, TCP and UDP on 127.0.0.1,
 *                           print "ready", serve until killed
 *   escape [--launcher-pid N] [--other-pid N] [--other-data DIR]
 *          [--leaked-fd N] [--wx] [--limits] [--root]
 *                           the attempts, TAP on stdout; --root: the cage
 *                           runs in root mode (the launcher set what only
 *                           the host's root may, vm.memfd_noexec)
 *   escape --landlock ADDR  in the serving cage, spawned beside the server
 *                           (so in the same namespaces, in another Landlock
 *                           domain): the attempts Landlock alone refuses,
 *                           TCP to ADDR (the cage's own veth address, or
 *                           127.0.0.1) at a port the profile does not list
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <arpa/inet.h>
#include <linux/random.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define ABSTRACT_NAME "clip-escape-serve"
#define TCP_PORT 47777
#define UDP_PORT 47778
#define HOST_TCP_PORT 47779

#ifndef AT_EXECVE_CHECK
#define AT_EXECVE_CHECK 0x10000
#endif
#ifndef MFD_EXEC
#define MFD_NOEXEC_SEAL 0x0008u
#define MFD_EXEC 0x0010u
#endif

static int n_tests, n_failed;

/*
 * In a sanitizer build: LeakSanitizer stops the world with ptrace, which
 * the cage refuses; the cage's clean environment cannot turn it off.
 */
const char *__asan_default_options(void) __attribute__((visibility("default")));
const char *
__asan_default_options(void)
{
	return "detect_leaks=0";
}

static void
check(bool ok, const char *name, const char *detail)
{
	n_tests++;
	if (!ok)
		n_failed++;
	printf("%s %d - %s%s%s\n", ok ? "ok" : "not ok", n_tests, name, detail ? ": " : "",
	       detail ? detail : "");
	fflush(stdout);
}

/* The call failed, with errno @e (0: any). */
static bool
refused(long r, int e)
{
	return r < 0 && (errno == e || e == 0);
}

#define REFUSED(expr, err, name) \
	do { \
		errno = 0; \
		long _r = (long)(expr); \
		char _d[96]; \
		snprintf(_d, sizeof(_d), "returned %ld, %s", _r, strerror(errno)); \
		check(refused(_r, err), name, refused(_r, err) ? NULL : _d); \
	} while (0)

/* -- the server in the other cage --------------------------------------- */

static int
listen_unix(const char *path, bool abstract)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (abstract) {
		memcpy(sa.sun_path + 1, path, strlen(path));
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path));
	} else {
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
		unlink(path);
		len = sizeof(sa);
	}
	if (s < 0 || bind(s, (struct sockaddr *)&sa, len) < 0 || listen(s, 8) < 0)
		return -1;
	return s;
}

static int
inet_socket(int type, int port, bool do_listen)
{
	/* Every address of the cage: loopback, and its veth address when it has one. */
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, s = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	if (do_listen && listen(s, 8) < 0)
		return -1;
	return s;
}

static int
serve(int tcp_port)
{
	int a = listen_unix(ABSTRACT_NAME, true), p = -1, t, u;
	char buf[64];

	if (access("/data", W_OK) == 0)
		p = listen_unix("/data/sock", false);
	t = inet_socket(SOCK_STREAM, tcp_port, true);
	u = tcp_port == TCP_PORT ? inet_socket(SOCK_DGRAM, UDP_PORT, false) : -1;
	if (a < 0 || t < 0) {
		perror("serve");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n;

		/* UDP echo; the stream sockets are only ever connected to. */
		if (u < 0) {
			pause();
			continue;
		}
		n = recvfrom(u, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
		if (n > 0)
			sendto(u, buf, (size_t)n, 0, (struct sockaddr *)&from, fl);
	}
	(void)p;
}

/* -- the attempts --------------------------------------------------------- */

static int
connect_unix(const char *path, bool abstract)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len = sizeof(sa);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), r;

	if (abstract) {
		memcpy(sa.sun_path + 1, path, strlen(path));
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path));
	} else
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	r = connect(s, (struct sockaddr *)&sa, len);
	close(s);
	return r;
}

static int
connect_tcp(int port, const char *addr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), r;

	if (addr && inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return -2;
	r = connect(s, (struct sockaddr *)&sa, sizeof(sa));
	close(s);
	return r;
}

/* A UDP round trip: on loopback, nobody listening answers ECONNREFUSED at once. */
static int
udp_echo(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 2 };
	char buf[8];
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	r = connect(s, (struct sockaddr *)&sa, sizeof(sa));
	if (r == 0)
		r = (int)send(s, "ping", 4, 0);
	if (r >= 0)
		r = (int)recv(s, buf, sizeof(buf), 0);
	close(s);
	return r;
}

static bool
status_zero(const char *field)
{
	char line[256];
	bool zero = false;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, field, strlen(field)) == 0)
			zero = strspn(line + strlen(field), "\t0") ==
			       strlen(line + strlen(field)) - 1;
	if (f)
		fclose(f);
	return zero;
}

static int
count_pids(void)
{
	struct dirent *d;
	DIR *dir = opendir("/proc");
	int n = 0;

	while (dir && (d = readdir(dir)))
		n += d->d_name[0] >= '1' && d->d_name[0] <= '9';
	if (dir)
		closedir(dir);
	return n;
}

static void
attempts_processes(pid_t launcher, pid_t other)
{
	pid_t child;
	char path[64], detail[64];
	struct iovec local, remote;
	char buf[8];

	if (launcher > 0) {
		REFUSED(kill(launcher, 0), ESRCH,
			"pid namespace: the launcher cannot be signalled");
		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)launcher);
		/* The pid may exist in here by chance; then it is not the launcher's. */
		check(access(path, F_OK) < 0 || launcher < 10,
		      "pid namespace: the launcher is not in /proc", NULL);
	}
	if (other > 0)
		REFUSED(kill(other, 0), ESRCH,
			"pid namespace: another cage's init cannot be signalled");
	snprintf(detail, sizeof(detail), "%d processes", count_pids());
	check(count_pids() < 10, "pid namespace: only the cage's few processes are visible",
	      detail);
	check(getppid() == 0 || getppid() == 1, "pid namespace: the parent is outside or init",
	      NULL);
	/* Init of a pid namespace ignores what it has no handler for, even SIGKILL. */
	kill(1, SIGKILL);
	/* Alive: in /proc (Landlock's scoping refuses even signal 0 to init's domain). */
	check(access("/proc/1/stat", F_OK) == 0,
	      "pid namespace: the cage's init survives SIGKILL from inside", NULL);

	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	REFUSED(ptrace(PTRACE_ATTACH, child, NULL, NULL), EPERM,
		"seccomp: ptrace, even of one's own child");
	local = (struct iovec){ buf, sizeof(buf) };
	remote = (struct iovec){ (void *)&n_tests, sizeof(buf) };
	REFUSED(process_vm_readv(child, &local, 1, &remote, 1, 0), EPERM,
		"seccomp: process_vm_readv of one's own child");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

static void
attempts_files(const char *other_data)
{
	char path[4200];
	struct statvfs sv;

	REFUSED(open("/escape-file", O_WRONLY | O_CREAT | O_CLOEXEC, 0644), EROFS,
		"read-only root: cannot create a file in /");
	REFUSED(open("/usr/escape-file", O_WRONLY | O_CREAT | O_CLOEXEC, 0644), EROFS,
		"read-only root: cannot write /usr");
	REFUSED(open("/etc/passwd", O_WRONLY | O_APPEND | O_CLOEXEC), 0,
		"read-only root: cannot write /etc/passwd");
	REFUSED(mkdir("/run/../bin/x", 0755), 0, "read-only root: cannot mkdir through a link");
	check(statvfs("/usr/bin", &sv) == 0 && (sv.f_flag & ST_NOSUID),
	      "setuid binaries: the root is mounted nosuid", NULL);
	check(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1, "setuid binaries: no_new_privs is set",
	      NULL);
	if (other_data) {
		REFUSED(open(other_data, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ENOENT,
			"mount namespace: another level's data directory is not there");
		snprintf(path, sizeof(path), "%s/secret", other_data);
		REFUSED(open(path, O_RDONLY | O_CLOEXEC), ENOENT,
			"mount namespace: another level's file cannot be read");
		snprintf(path, sizeof(path), "%s/planted", other_data);
		REFUSED(open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644), ENOENT,
			"mount namespace: another level's data cannot be written");
		snprintf(path, sizeof(path), "%s/sock", other_data);
		REFUSED(connect_unix(path, false), ENOENT,
			"mount namespace: another cage's UNIX socket path is not there");
	}
	REFUSED(open("/proc/kcore", O_RDONLY | O_CLOEXEC), 0, "/proc/kcore cannot be read");
	REFUSED(open("/sys/firmware", O_RDONLY | O_DIRECTORY | O_CLOEXEC), ENOENT,
		"/sys/firmware is not there");
	REFUSED(open("/proc/sys/kernel/hostname", O_WRONLY | O_CLOEXEC), 0,
		"/proc/sys cannot be written");
	REFUSED(open("/proc/sysrq-trigger", O_WRONLY | O_CLOEXEC), 0,
		"/proc/sysrq-trigger cannot be written");
	REFUSED(open("/dev/sda", O_RDONLY | O_CLOEXEC), ENOENT, "minimal /dev: no disks");
	REFUSED(open("/dev/mem", O_RDONLY | O_CLOEXEC), ENOENT, "minimal /dev: no /dev/mem");
	REFUSED(mknod("/tmp/disk", S_IFBLK | 0600, makedev(8, 0)), 0,
		"no device nodes can be made");
	REFUSED(open("/proc/1/mem", O_RDONLY | O_CLOEXEC), 0, "the cage's init's memory is closed");
}

static void
attempts_mounts(void)
{
	int fd;

	REFUSED(mount("tmpfs", "/tmp", "tmpfs", 0, NULL), EPERM, "cannot mount");
	REFUSED(mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL), EPERM,
		"cannot remount the root read-write");
	REFUSED(umount2("/usr", MNT_DETACH), EPERM, "cannot unmount a read-only bind");
	REFUSED(syscall(SYS_pivot_root, "/tmp", "/tmp"), EPERM, "seccomp: pivot_root");
	REFUSED(chroot("/tmp"), EPERM, "seccomp: chroot");
	REFUSED(syscall(SYS_open_tree, AT_FDCWD, "/usr", 1), EPERM, "seccomp: open_tree");
	REFUSED(syscall(SYS_fsopen, "tmpfs", 0), EPERM, "seccomp: fsopen");
	fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	REFUSED(setns(fd, 0), EPERM, "seccomp: setns");
	close(fd);
	REFUSED(syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0), EPERM,
		"seccomp: open_by_handle_at");
}

/*
 * Run @fn in a child: an attempt that succeeds must not change the
 * namespaces of the checks that follow. The child's result comes back as
 * its exit status: 0 success, else errno.
 */
static long
in_child(long (*fn)(void))
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		long r = fn();

		_exit(r < 0 ? (errno ? errno : 255) : 0);
	}
	waitpid(pid, &status, 0);
	errno = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
	return errno ? -1 : 0;
}

static long
try_unshare_user(void)
{
	return unshare(CLONE_NEWUSER);
}

static long
try_unshare_net(void)
{
	return unshare(CLONE_NEWNET);
}

static long
try_clone_user(void)
{
	long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);

	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid((pid_t)r, NULL, 0);
	return r;
}

static void
attempts_kernel(void)
{
	struct perf_event_attr pe = { .size = sizeof(pe), .type = PERF_TYPE_SOFTWARE };
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	REFUSED(in_child(try_unshare_user), EPERM, "seccomp: no new user namespace (unshare)");
	REFUSED(in_child(try_clone_user), EPERM, "seccomp: no new user namespace (clone)");
	REFUSED(syscall(SYS_clone3, NULL, 0), ENOSYS, "seccomp: clone3 falls back to clone");
	REFUSED(in_child(try_unshare_net), EPERM, "seccomp: no new network namespace");
	REFUSED(syscall(SYS_finit_module, fd, "", 0), EPERM, "seccomp: no module loading");
	REFUSED(syscall(SYS_init_module, NULL, 0, ""), EPERM, "seccomp: no init_module");
	REFUSED(syscall(SYS_kexec_load, 0, 0, NULL, 0), EPERM, "seccomp: no kexec");
	REFUSED(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0), EPERM,
		"seccomp: no keyring");
	REFUSED(syscall(SYS_add_key, "user", "x", "y", 1, KEY_SPEC_SESSION_KEYRING), EPERM,
		"seccomp: no add_key");
	REFUSED(syscall(SYS_bpf, 0, NULL, 0), EPERM, "seccomp: no bpf");
	REFUSED(syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0), EPERM, "seccomp: no perf");
	REFUSED(syscall(SYS_userfaultfd, 0), EPERM, "seccomp: no userfaultfd");
	REFUSED(syscall(SYS_io_uring_setup, 1, NULL), EPERM, "seccomp: no io_uring");
	close(fd);
	check(status_zero("CapEff:") && status_zero("CapPrm:") && status_zero("CapBnd:") &&
		      status_zero("CapAmb:") && status_zero("CapInh:"),
	      "capabilities: every set is empty", NULL);
	REFUSED(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, 21 /* CAP_SYS_ADMIN */, 0, 0), EPERM,
		"capabilities: none can be raised");
	REFUSED(sethostname("escaped", 7), EPERM, "cannot change the host name");
}

static void
attempts_network(const char *other_addr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(53),
				  .sin_addr.s_addr = htonl(0x01010101) };
	int s;

	REFUSED(connect_unix(ABSTRACT_NAME, true), ECONNREFUSED,
		"network namespace: another cage's abstract UNIX socket");
	REFUSED(connect_unix("clip-escape-host", true), ECONNREFUSED,
		"network namespace: the host's abstract UNIX socket");
	REFUSED(connect_tcp(TCP_PORT, NULL), ECONNREFUSED,
		"network namespace: another cage's TCP port");
	REFUSED(connect_tcp(HOST_TCP_PORT, NULL), ECONNREFUSED,
		"network namespace: the host's TCP port");
	if (other_addr)
		REFUSED(connect_tcp(TCP_PORT, other_addr), ENETUNREACH,
			"veth: another cage's address is not reachable");
	REFUSED(udp_echo(UDP_PORT), ECONNREFUSED, "network namespace: another cage's UDP port");
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	REFUSED(connect(s, (struct sockaddr *)&sa, sizeof(sa)), ENETUNREACH,
		"network namespace: no route out");
	close(s);
}

/* The pid of the --serve process in this pid namespace, or 0. */
static pid_t
find_server(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;

	while (d && !found && (e = readdir(d))) {
		char path[sizeof("/proc//cmdline") + 256], cmd[256] = "";
		ssize_t n;
		int fd;

		if (atoi(e->d_name) <= 1 || atoi(e->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
		/* argv[0] NUL argv[1]: "/escape/escape\0--serve\0" */
		if (n > 0 && strcmp(cmd + strlen(cmd) + 1, "--serve") == 0)
			found = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/*
 * Landlock's own (issue 21): from a process of the serving cage in a
 * domain of its own, what the namespaces allow and Landlock alone refuses.
 */
static int
attempts_landlock(const char *addr)
{
	pid_t server = find_server();
	char detail[64];
	int fd, count = 0;

	snprintf(detail, sizeof(detail), "pid %d", (int)server);
	check(server > 1, "landlock: control, the server runs in this pid namespace", detail);
	REFUSED(connect_tcp(TCP_PORT, addr), EACCES,
		"landlock: TCP connect to a port the profile does not list");
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	check(fd >= 0, "landlock: control, /dev/urandom opens", NULL);
	REFUSED(ioctl(fd, RNDGETENTCNT, &count), EACCES, "landlock: ioctl on a device file");
	close(fd);
	REFUSED(connect_unix(ABSTRACT_NAME, true), EPERM,
		"landlock: abstract socket of a process outside the domain");
	REFUSED(server > 1 ? kill(server, 0) : -1, EPERM,
		"landlock: signal to a process outside the domain");
	printf("1..%d\n", n_tests);
	return n_failed ? 1 : 0;
}

static void
attempts_session(int leaked_fd)
{
	char c = 'x';
	int fd;

	if (leaked_fd >= 0)
		REFUSED(fcntl(leaked_fd, F_GETFD), EBADF, "fds: the launcher's fd is closed");
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	check(fd == 3, "fds: nothing but 0, 1, 2 is open", NULL);
	close(fd);
	check(getsid(0) == getpid(), "terminal: a session of its own", NULL);
	REFUSED(open("/dev/tty", O_RDWR | O_CLOEXEC), ENXIO, "terminal: no controlling terminal");
	REFUSED(ioctl(0, TIOCSTI, &c), EPERM, "seccomp: TIOCSTI on stdin");
}

static void
attempts_wx(void)
{
	const char script[] = "#!/bin/sh\necho escaped\n";
	unsigned bits = (unsigned)prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	int fd;

	fd = open("/data/x.sh", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	check(fd >= 0 && write(fd, script, sizeof(script) - 1) > 0,
	      "W^X: the data directory is writable", NULL);
	close(fd);
	REFUSED(execve("/data/x.sh", (char *[]){ "/data/x.sh", NULL }, (char *[]){ NULL }), EACCES,
		"W^X: a script in the data directory does not execute");
	fd = open("/data/x.sh", O_RDONLY | O_CLOEXEC);
	REFUSED(syscall(SYS_execveat, fd, "", (char *[]){ NULL }, (char *[]){ NULL },
			AT_EMPTY_PATH | AT_EXECVE_CHECK),
		EACCES, "W^X: AT_EXECVE_CHECK refuses the data directory's script");
	close(fd);
	check((bits & 0xf00) == 0xf00,
	      "W^X: EXEC_RESTRICT_FILE and EXEC_DENY_INTERACTIVE are locked", NULL);
	REFUSED(prctl(PR_SET_SECUREBITS, bits & ~0xf00u, 0, 0, 0), EPERM,
		"W^X: the securebits cannot be cleared");
	/* A copy of a binary into writable space does not run either. */
	fd = open("/tmp/true", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	{
		int in = open("/usr/bin/true", O_RDONLY | O_CLOEXEC);
		char buf[65536];
		ssize_t n;

		while (in >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
			(void)!write(fd, buf, (size_t)n);
		close(in);
	}
	close(fd);
	REFUSED(execve("/tmp/true", (char *[]){ "/tmp/true", NULL }, (char *[]){ NULL }), EACCES,
		"exec only from the read-only root: not from /tmp");
}

/* /usr/bin/true into @fd (mapped, for a file that has no write()): 0 or -1. */
static int
copy_true(int fd, bool mapped)
{
	char buf[65536];
	off_t off = 0;
	struct stat st;
	char *map = NULL;
	ssize_t n;
	int in = open("/usr/bin/true", O_RDONLY | O_CLOEXEC), r = 0;

	if (in < 0 || fstat(in, &st) < 0)
		r = -1;
	if (r == 0 && mapped) {
		r = ftruncate(fd, st.st_size);
		map = r < 0 ? MAP_FAILED
			    : mmap(NULL, (size_t)st.st_size, PROT_WRITE, MAP_SHARED, fd, 0);
		r = map == MAP_FAILED ? -1 : 0;
	}
	while (r == 0 && (n = read(in, buf, sizeof(buf))) > 0) {
		if (map)
			memcpy(map + off, buf, (size_t)n);
		else if (write(fd, buf, (size_t)n) != n)
			r = -1;
		off += n;
	}
	if (map && map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	if (in >= 0)
		close(in);
	/* What an attacker would do; a sealed or noexec file refuses it, and that is fine. */
	(void)fchmod(fd, 0755);
	return r;
}

/*
 * execveat(@dirfd, @path, @flags) in a child, so that a success does not
 * replace this program: 0 when it executed (/usr/bin/true exits 0) or, with
 * AT_EXECVE_CHECK, when the check passed; else -1 with its errno. No @path:
 * the file could not even be made, -1 (EBADF).
 */
static long
exec_attempt(int dirfd, const char *path, int flags)
{
	int status = 0;
	pid_t pid;

	if (!path) {
		errno = EBADF;
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		long r = syscall(SYS_execveat, dirfd, path, (char *[]){ "true", NULL },
				 (char *[]){ NULL }, flags);

		_exit(r == 0 ? 0 : errno ? errno : 255);
	}
	waitpid(pid, &status, 0);
	errno = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
	return errno ? -1 : 0;
}

/* The most executable memfd the cage can make, holding a copy of /usr/bin/true; or -1. */
static int
memfd_payload(void)
{
	const unsigned flags[] = { MFD_EXEC, 0, MFD_NOEXEC_SEAL };
	int fd = -1, e = 0;

	for (size_t i = 0; fd < 0 && i < sizeof(flags) / sizeof(flags[0]); i++) {
		fd = (int)syscall(SYS_memfd_create, "escape", flags[i]);
		if (fd < 0 && !e)
			e = errno;
	}
	if (fd >= 0 && copy_true(fd, false) < 0) {
		close(fd);
		fd = -1;
	}
	errno = fd < 0 ? e : 0;
	return fd;
}

/* Whether every writable mount of the cage is noexec; the first that is not in @bad. */
static bool
writable_mounts_noexec(char *bad, size_t size)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	bool ok = f != NULL;

	snprintf(bad, size, "%s", f ? "" : "cannot read /proc/self/mountinfo");
	while (ok && fgets(line, sizeof(line), f)) {
		char point[4096], path[4096];
		struct statvfs sv;
		struct stat st;
		size_t k = 0;

		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1)
			continue;
		/* Octal escapes (\040) as the kernel writes them. */
		for (char *p = point; *p && k < sizeof(path) - 1; p++) {
			unsigned c;

			if (p[0] == '\\' && sscanf(p + 1, "%3o", &c) == 1) {
				path[k++] = (char)c;
				p += 3;
			} else
				path[k++] = *p;
		}
		path[k] = '\0';
		/* Files (the /dev nodes) hold no new files; a directory would. */
		if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode) || statvfs(path, &sv) < 0)
			continue;
		if (!(sv.f_flag & ST_RDONLY) && !(sv.f_flag & ST_NOEXEC)) {
			snprintf(bad, size, "%s is writable and not noexec", path);
			ok = false;
		}
	}
	if (f)
		fclose(f);
	return ok;
}

/*
 * Files with no path on a noexec mount: memfds, memfd_secret, O_TMPFILE,
 * POSIX shared memory. The cage writes a copy of /usr/bin/true into each
 * and tries every way to run it (finding 4 of issue 14).
 */
static void
attempts_wx_memory(bool root)
{
	const char *const dirs[] = { "/tmp", "/dev/shm", "/run", "/data" };
	char path[64], bad[4200], name[128];
	long r;
	int fd;

	REFUSED(syscall(SYS_memfd_create, "escape", MFD_EXEC), EACCES,
		"W^X memfd: memfd_create with MFD_EXEC is refused");
	fd = memfd_payload();
	REFUSED(exec_attempt(fd, fd < 0 ? NULL : "", AT_EMPTY_PATH), 0,
		"W^X memfd: a memfd the cage wrote does not execute (execveat AT_EMPTY_PATH)");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	REFUSED(exec_attempt(fd < 0 ? -1 : AT_FDCWD, fd < 0 ? NULL : path, 0), 0,
		"W^X memfd: a memfd the cage wrote does not execute (/proc/self/fd)");
	REFUSED(exec_attempt(fd, fd < 0 ? NULL : "", AT_EMPTY_PATH | AT_EXECVE_CHECK), 0,
		"W^X memfd: AT_EXECVE_CHECK refuses a memfd the cage wrote");
	if (fd >= 0)
		close(fd);
	REFUSED(open("/proc/sys/vm/memfd_noexec", O_WRONLY | O_CLOEXEC), 0,
		"W^X memfd: vm.memfd_noexec cannot be lowered from inside");
	if (root) {
		char c = 0;

		fd = open("/proc/sys/vm/memfd_noexec", O_RDONLY | O_CLOEXEC);
		check(fd >= 0 && read(fd, &c, 1) == 1 && c == '2',
		      "W^X memfd: vm.memfd_noexec is 2 in the cage's pid namespace", NULL);
		if (fd >= 0)
			close(fd);
	}

	fd = (int)syscall(SYS_memfd_secret, 0);
	if (fd >= 0 && copy_true(fd, true) < 0) {
		close(fd);
		fd = -1;
	}
	REFUSED(exec_attempt(fd, fd < 0 ? NULL : "", AT_EMPTY_PATH), 0,
		"W^X memfd_secret: a secret memory file does not execute");
	if (fd >= 0)
		close(fd);

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		fd = open(dirs[i], O_TMPFILE | O_RDWR | O_CLOEXEC, 0755);
		if (fd >= 0 && copy_true(fd, false) < 0) {
			close(fd);
			fd = -1;
		}
		snprintf(name, sizeof(name),
			 "W^X O_TMPFILE: an unnamed file in %s does not execute", dirs[i]);
		REFUSED(exec_attempt(fd, fd < 0 ? NULL : "", AT_EMPTY_PATH), 0, name);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		snprintf(name, sizeof(name),
			 "W^X O_TMPFILE: an unnamed file in %s does not execute (/proc/self/fd)",
			 dirs[i]);
		REFUSED(exec_attempt(fd < 0 ? -1 : AT_FDCWD, fd < 0 ? NULL : path, 0), 0, name);
		if (fd >= 0)
			close(fd);
	}

	fd = shm_open("/clip-escape", O_RDWR | O_CREAT | O_CLOEXEC, 0755);
	if (fd >= 0 && copy_true(fd, false) < 0) {
		close(fd);
		fd = -1;
	}
	r = exec_attempt(fd < 0 ? -1 : AT_FDCWD, fd < 0 ? NULL : "/dev/shm/clip-escape", 0);
	REFUSED(r, 0, "W^X shm_open: a POSIX shared memory file does not execute");
	if (fd >= 0) {
		close(fd);
		shm_unlink("/clip-escape");
	}
	r = writable_mounts_noexec(bad, sizeof(bad));
	check(r, "W^X: every writable mount is noexec", r ? NULL : bad);
}

static void
attempts_limits(void)
{
	pid_t pids[256];
	int n = 0, status = 0;
	pid_t hog;

	for (; n < 256; n++) {
		pids[n] = fork();
		if (pids[n] == 0) {
			pause();
			_exit(0);
		}
		if (pids[n] < 0)
			break;
	}
	{
		char d[32];

		snprintf(d, sizeof(d), "%d forks", n);
		check(n < 64, "cgroup: TasksMax stops a fork bomb", d);
	}
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	hog = fork();
	if (hog == 0) {
		size_t size = 512u << 20;
		char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			       0);

		for (size_t i = 0; p != MAP_FAILED && i < size; i += 4096)
			p[i] = 1;
		_exit(0);
	}
	waitpid(hog, &status, 0);
	check(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      "cgroup: MemoryMax kills a process that touches 512 MiB", NULL);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "serve", no_argument, NULL, 's' },
		{ "serve-host", no_argument, NULL, 'H' },
		{ "launcher-pid", required_argument, NULL, 'l' },
		{ "other-pid", required_argument, NULL, 'o' },
		{ "other-data", required_argument, NULL, 'd' },
		{ "leaked-fd", required_argument, NULL, 'f' },
		{ "other-addr", required_argument, NULL, 'a' },
		{ "wx", no_argument, NULL, 'w' },
		{ "limits", no_argument, NULL, 'L' },
		{ "root", no_argument, NULL, 'R' },
		{ "landlock", required_argument, NULL, 'K' },
		{ 0 },
	};
	const char *other_data = NULL, *other_addr = NULL;
	pid_t launcher = 0, other = 0;
	int leaked = -1, opt;
	bool wx = false, limits = false, root = false;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			return serve(TCP_PORT);
		case 'H':
			/* On the host: the abstract name differs, TCP only. */
			{
				int a = listen_unix("clip-escape-host", true);
				int t = inet_socket(SOCK_STREAM, HOST_TCP_PORT, true);

				if (a < 0 || t < 0)
					return 1;
				printf("ready\n");
				fflush(stdout);
				for (;;)
					pause();
			}
		case 'l':
			launcher = atoi(optarg);
			break;
		case 'o':
			other = atoi(optarg);
			break;
		case 'd':
			other_data = optarg;
			break;
		case 'a':
			other_addr = optarg;
			break;
		case 'f':
			leaked = atoi(optarg);
			break;
		case 'w':
			wx = true;
			break;
		case 'L':
			limits = true;
			break;
		case 'R':
			root = true;
			break;
		case 'K':
			return attempts_landlock(optarg);
		default:
			return 2;
		}
	}
	/* Before anything opens a file. */
	attempts_session(leaked);
	attempts_processes(launcher, other);
	attempts_files(other_data);
	attempts_mounts();
	attempts_kernel();
	attempts_network(other_addr);
	if (wx) {
		attempts_wx();
		attempts_wx_memory(root);
	}
	if (limits)
		attempts_limits();
	printf("1..%d\n", n_tests);
	return n_failed ? 1 : 0;
}
