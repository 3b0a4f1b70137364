/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* clipd's fronts: their sandbox and their log channel. See front.h. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/test-hooks.h"
#include "front.h"

#define NOBODY 65534

/* Whether this user namespace denies setgroups() (a rootless container's, say). */
static bool
setgroups_denied(void)
{
	char buf[16] = "";
	int fd = open("/proc/self/setgroups", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	(void)!read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return strncmp(buf, "deny", 4) == 0;
}

/*
 * A mount namespace of its own whose root is an empty, read-only tmpfs:
 * no host path resolves there, so that a path given to the one call that
 * takes one (newfstatat, for fstat) finds nothing. Needs CAP_SYS_ADMIN
 * over the current mount namespace.
 */
static int
empty_root(void)
{
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("clipd-front", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "size=4k,nr_inodes=4,mode=0555") < 0 ||
	    chdir("/tmp") < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return -errno;
	(void)mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		    NULL);
	return 0;
}

/*
 * Into a user namespace of its own, its one id mapped to itself there, so
 * that SO_PEERCRED still reads a peer of that id as the cages file names
 * it (any other shows as the overflow uid). @proc: /proc/self, opened
 * while it was in sight. 0, or -errno if there is no namespace.
 */
static int
new_userns(int proc)
{
	unsigned id = (unsigned)geteuid();
	char map[32];
	int fd, n;

	if (unshare(CLONE_NEWUSER) < 0)
		return -errno;
	n = snprintf(map, sizeof(map), "%u %u 1\n", id, id);
	fd = proc >= 0 ? openat(proc, "uid_map", O_WRONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		/* Not fatal: unmapped, a uid= cage refuses every peer (fails closed). */
		(void)!write(fd, map, (size_t)n);
		close(fd);
	}
	return 0;
}

/* To @id (uid and gid), with no supplementary groups; -EINVAL where @id is not mapped. */
static int
become(unsigned id, bool groups_denied)
{
	if (setgroups(0, NULL) < 0 && !(errno == EPERM && groups_denied))
		return -errno;
	if (setresgid(id, id, id) < 0 || setresuid(id, id, id) < 0)
		return -errno;
	return 0;
}

static int
drop_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

/*
 * Its own identity: in root mode a uid and gid of its own, so that no
 * front can signal, ptrace or F_SETOWN another (the kernel compares
 * uids). Where there is one id only (uid 0 of a rootless container, or
 * a plain user), every front has that uid: each then goes into a user
 * namespace of its own, where it holds no capability over the others'
 * or the main process's, and the seccomp filter is the fence.
 */
static int
own_identity(unsigned index, bool groups_denied, int proc, int *flags)
{
	int r;

	if (test_hook_disabled("front-identity")) {
		/* As before: everyone nobody, or everyone the one id. */
		if (geteuid() == 0 && (r = become(NOBODY, groups_denied)) < 0 && r != -EINVAL)
			return r;
		return 0;
	}
	if (geteuid() == 0 && index < FRONT_UIDS) {
		r = become(front_uid(index), groups_denied);
		if (r == 0)
			return 0;
		if (r != -EINVAL)
			return r;
	}
	*flags |= FRONT_SHARED_UID;
	/* Not fatal: a kernel may refuse user namespaces; the filter still holds. */
	(void)new_userns(proc);
	return 0;
}

/*
 * The system calls a front makes once confined, with the arguments it
 * uses where an argument makes the difference: fcntl reads and sets
 * flags but never O_ASYNC, F_SETOWN or F_SETSIG (the signals of a socket
 * go to a pid of the caller's choice); newfstatat is glibc's fstat (an
 * empty path with AT_EMPTY_PATH: the path itself cannot be filtered, the
 * empty root is what it finds); socketpair makes the one kind it passes
 * up; setsockopt sets SO_LINGER and shutdown shuts both ways, to defuse
 * a cage's descriptor before closing it. restart_syscall: a poll()
 * interrupted by a stop and continue, a cgroup freeze or a suspend is
 * resumed through it.
 */
static int
load_filter(void)
{
	static const int allowed[] = {
		SCMP_SYS(poll),         SCMP_SYS(ppoll),      SCMP_SYS(accept4),
		SCMP_SYS(recvmsg),      SCMP_SYS(sendmsg),    SCMP_SYS(close),
		SCMP_SYS(getsockopt),   SCMP_SYS(read),       SCMP_SYS(write),
		SCMP_SYS(writev),       SCMP_SYS(exit_group), SCMP_SYS(exit),
		SCMP_SYS(rt_sigreturn), SCMP_SYS(brk),        SCMP_SYS(mmap),
		SCMP_SYS(munmap),       SCMP_SYS(mremap),     SCMP_SYS(madvise),
		SCMP_SYS(futex),        SCMP_SYS(getpid),     SCMP_SYS(clock_gettime),
		SCMP_SYS(fstat),        SCMP_SYS(getrandom),  SCMP_SYS(rt_sigprocmask),
	};
	bool any_args = test_hook_disabled("front-syscall-args");
	scmp_filter_ctx f;
	int r = 0;

	f = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]) && r == 0; i++)
		r = seccomp_rule_add(f, SCMP_ACT_ALLOW, allowed[i], 0);
	if (r == 0 && !test_hook_disabled("front-restart"))
		r = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(restart_syscall), 0);
	if (any_args) {
		if (r == 0)
			r = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 0);
		if (r == 0)
			r = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(newfstatat), 0);
		if (r == 0)
			r = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 0);
		if (r == 0)
			r = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(setsockopt), 0);
		if (r == 0)
			r = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(shutdown), 0);
	} else {
		static const int fcntl_reads[] = { F_GETFL, F_GETFD, F_SETFD };

		for (size_t i = 0; i < sizeof(fcntl_reads) / sizeof(fcntl_reads[0]) && r == 0; i++)
			r = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1,
					     SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)fcntl_reads[i]));
		if (r == 0)
			r = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 2,
					     SCMP_A1(SCMP_CMP_EQ, F_SETFL),
					     SCMP_A2(SCMP_CMP_MASKED_EQ, O_ASYNC, 0));
		if (r == 0)
			r = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(newfstatat), 1,
					     SCMP_A3(SCMP_CMP_EQ, AT_EMPTY_PATH));
		/* What defusing a cage's descriptor takes (proto_fd_defuse()). */
		if (r == 0)
			r = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(setsockopt), 2,
					     SCMP_A1(SCMP_CMP_EQ, SOL_SOCKET),
					     SCMP_A2(SCMP_CMP_EQ, SO_LINGER));
		if (r == 0)
			r = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(shutdown), 1,
					     SCMP_A1(SCMP_CMP_EQ, SHUT_RDWR));
		if (r == 0)
			r = seccomp_rule_add(
				f, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 3,
				SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
				SCMP_A1(SCMP_CMP_EQ, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK),
				SCMP_A2(SCMP_CMP_EQ, 0));
	}
	if (r == 0)
		r = seccomp_load(f);
	seccomp_release(f);
	return r;
}

int
front_sandbox(unsigned index)
{
	/* Read before /proc goes out of sight. */
	bool groups_denied = setgroups_denied();
	int proc = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC), flags = 0, r = 0;

	if (test_hook_disabled("front-mountns"))
		flags |= FRONT_HOST_VIEW;
	else if (geteuid() != 0) {
		/* A plain user: the user namespace first, for the right to mount. */
		if (!test_hook_disabled("front-identity") && new_userns(proc) == 0)
			flags |= FRONT_SHARED_UID;
		if (empty_root() < 0)
			flags |= FRONT_HOST_VIEW;
	} else if (empty_root() < 0)
		flags |= FRONT_HOST_VIEW;
	if (!(flags & FRONT_SHARED_UID))
		r = own_identity(index, groups_denied, proc, &flags);
	if (proc >= 0)
		close(proc);
	if (r < 0)
		return r;
	r = drop_caps();
	if (r < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
	    /* A change of uid cleared it. */
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	r = load_filter();
	return r < 0 ? r : flags;
}

/* --- the main process's side of a front's log --- */

static void
log_line(struct front_log *l, const char *name, FILE *out)
{
	struct timespec now;

	if (test_hook_disabled("front-log")) {
		/* As an inherited stderr: the front's bytes as they are. */
		fwrite(l->buf, 1, l->len, out);
		fputc('\n', out);
		l->len = 0;
		return;
	}
	(void)clock_gettime(CLOCK_MONOTONIC, &now);
	if (!l->window || now.tv_sec - l->window >= FRONT_LOG_WINDOW_S) {
		l->window = now.tv_sec ? now.tv_sec : 1;
		l->lines = 0;
	}
	if (l->lines == FRONT_LOG_LINES) {
		l->dropped++;
		l->len = 0;
		return;
	}
	l->lines++;
	fprintf(out, "clipd: front of '%s': ", name);
	for (size_t i = 0; i < l->len; i++) {
		unsigned char c = (unsigned char)l->buf[i];

		if (c < 0x20 || c >= 0x7f || c == '\\')
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
	if (l->dropped)
		fprintf(out, " (and %lu earlier lines not shown: over %d in %d s)", l->dropped,
			FRONT_LOG_LINES, FRONT_LOG_WINDOW_S);
	fputc('\n', out);
	fflush(out);
	l->dropped = 0;
	l->len = 0;
}

int
front_log_read(struct front_log *l, int fd, const char *name, FILE *out)
{
	char chunk[4096];
	ssize_t n = read(fd, chunk, sizeof(chunk));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		if (l->len)
			log_line(l, name, out);
		return -1;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (chunk[i] == '\n') {
			log_line(l, name, out);
			continue;
		}
		if (l->len == sizeof(l->buf))
			log_line(l, name, out);
		l->buf[l->len++] = chunk[i];
	}
	return 0;
}
