/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Processes in a running cage, and waiting for them. cage.c starts the
 * cage; cage-child.c is what a process runs until it executes.
 *
 * spawn: a helper forked from the caller joins the cgroups, setns()es
 *        into all the init's namespaces through its pidfd, and clone()s
 *        with CLONE_PARENT the process that restricts itself and executes;
 *        so the process is the caller's child, with a pidfd from its clone.
 *        Both are cloned with no exit signal (CAGE_EXIT_SIGNAL), out of
 *        reach of the caller's own reaper (an init's waitpid(-1)), until
 *        the process's execve() gives it SIGCHLD back: a status such a
 *        reaper took then comes from the pidfd (status_of_reaped()).
 * first: the first process of clip_cage_start_spawn() is init's child
 *        instead: its pidfd comes from init with "ready", its status on
 *        the socket to init once init has reaped it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <clip/cage.h>

#include "cage-internal.h"
#include "base/error.h"
#include "base/log.h"
#include "base/test-hooks.h"
#include "base/util.h"

#define SPAWN_FDS_MAX 64
#define SPAWN_ARGS_MAX 4096
/* The smallest struct clip_cage_spawn_opts accepted: up to fds, without cwd, uid and gid. */
#define SPAWN_OPTS_SIZE_MIN offsetof(struct clip_cage_spawn_opts, cwd)

/* -- pidfds ---------------------------------------------------------- */

int
cage_fd_above_stdio(int fd)
{
	int moved;

	if (fd < 0 || fd > STDERR_FILENO || test_hook_disabled("fd-above-stdio"))
		return fd;
	moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	if (moved < 0)
		return fd;
	close(fd);
	return moved;
}

int
cage_pidfd_open(pid_t pid)
{
	return cage_fd_above_stdio((int)syscall(SYS_pidfd_open, pid, 0));
}

int
cage_pidfd_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

pid_t
cage_pidfd_pid(int pidfd)
{
	char path[64], line[128];
	pid_t pid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Pid:", 4) == 0)
			pid = (pid_t)atoi(line + 4);
	fclose(f);
	return pid;
}

/* -- spawned processes ----------------------------------------------- */

static int
exit_status(const siginfo_t *si)
{
	return si->si_code == CLD_EXITED ? si->si_status : 128 + si->si_status;
}

/*
 * The first process is init's child: once it has exited (or, with @block,
 * when it does), its status is init's MSG_EXIT; an init gone first took
 * it down with SIGKILL, as the kernel does to a pid namespace.
 */
static void
first_collect(struct clip_cage *c, struct spawned *s, bool block)
{
	struct pollfd pfd = { .fd = s->pidfd, .events = POLLIN };
	struct cage_msg m;
	ssize_t n = -1;

	if (!block && poll(&pfd, 1, 0) <= 0)
		return;
	if (c->sock >= 0)
		do
			n = recv(c->sock, &m, sizeof(m), 0);
		while (n < 0 && errno == EINTR);
	s->status = n == sizeof(m) && m.type == MSG_EXIT ? m.value : 128 + SIGKILL;
	s->reaped = true;
	close(s->pidfd);
	s->pidfd = -1;
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
}

/*
 * PIDFD_GET_INFO (Linux 6.13) with PIDFD_INFO_EXIT (Linux 6.15): the exit
 * status of a process already reaped, kept for whoever holds a pidfd of
 * it. The first published struct (64 bytes), which has exit_code.
 */
struct pidfd_info_v0 {
	uint64_t mask;
	uint64_t cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
};

#define CAGE_PIDFD_GET_INFO _IOWR(0xFF, 11, struct pidfd_info_v0)
#define CAGE_PIDFD_INFO_EXIT (UINT64_C(1) << 3)

/*
 * The status of a spawned process that someone else reaped: an embedding
 * init's waitpid(-1), which takes it once the process has executed its
 * command (execve() gives it back the exit signal that CAGE_EXIT_SIGNAL
 * took away). The reaper marks it dead a moment before the kernel records
 * its exit, hence the few retries. -ECHILD where the kernel cannot tell
 * (before Linux 6.15): clip-cage(3) gives the reaper its rule there.
 */
static int
status_of_reaped(int pidfd, int *ret_status)
{
	for (int i = 0; i < 1000; i++) {
		struct pidfd_info_v0 info = { .mask = CAGE_PIDFD_INFO_EXIT };

		if (ioctl(pidfd, CAGE_PIDFD_GET_INFO, &info) < 0)
			return -ECHILD;
		if (info.mask & CAGE_PIDFD_INFO_EXIT) {
			*ret_status = WIFEXITED(info.exit_code) ? WEXITSTATUS(info.exit_code)
								: 128 + WTERMSIG(info.exit_code);
			return 0;
		}
		(void)poll(NULL, 0, 1);
	}
	return -ECHILD;
}

/*
 * Reap @s, a process spawned from outside (not the first), or take its
 * status where another reaped it: 0 once its status is in, -EAGAIN while
 * it runs (without @block: else it waits), -ECHILD when its status is lost.
 */
static int
spawned_collect(struct spawned *s, bool block)
{
	siginfo_t si = { 0 };
	int r = 0;

	for (;;) {
		if (waitid(P_PIDFD, (id_t)s->pidfd, &si, CAGE_WAIT_FLAGS | (block ? 0 : WNOHANG)) ==
		    0) {
			if (si.si_pid == 0)
				return -EAGAIN;
			s->status = exit_status(&si);
			break;
		}
		if (errno == EINTR)
			continue;
		/* Not our child any more: another reaped it. */
		r = status_of_reaped(s->pidfd, &s->status);
		break;
	}
	s->reaped = true;
	s->lost = r < 0;
	close(s->pidfd);
	s->pidfd = -1;
	return r;
}

/* Reap the processes we spawned that have exited (all of them when @block). */
void
cage_spawned_reap(struct clip_cage *c, bool block)
{
	for (size_t i = 0; i < c->n_spawned; i++) {
		struct spawned *s = &c->spawned[i];

		if (s->reaped)
			continue;
		if (s->via_init)
			first_collect(c, s, block);
		else
			(void)spawned_collect(s, block);
	}
}

/* A process just cloned, and our pidfd of it (which it takes). */
static int
spawned_add(struct clip_cage *c, pid_t pid, int pidfd)
{
	struct spawned *s;

	/* Forget those whose status the caller has collected. */
	for (size_t i = 0; i < c->n_spawned; i++)
		if (c->spawned[i].reaped && c->spawned[i].pid == 0)
			c->spawned[i--] = c->spawned[--c->n_spawned];
	s = realloc(c->spawned, (c->n_spawned + 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	c->spawned = s;
	c->spawned[c->n_spawned++] =
		(struct spawned){ .pid = pid, .pidfd = cage_fd_above_stdio(pidfd) };
	cage_audit_add_pid(&c->audit, pid);
	cage_registry_note_spawn(c, pid);
	return 0;
}

/* The process just added failed before executing: reap it, forget it. */
static void
spawned_drop_last(struct clip_cage *c)
{
	struct spawned *s = &c->spawned[c->n_spawned - 1];
	siginfo_t si;

	(void)waitid(P_PIDFD, (id_t)s->pidfd, &si, CAGE_WAIT_FLAGS);
	close(s->pidfd);
	c->n_spawned--;
}

/* The process's standard streams, for messages about its fds. */
static const char *
fd_name(uint32_t i)
{
	static const char *const names[] = { " (stdin)", " (stdout)", " (stderr)" };

	return i < ELEMENTSOF(names) ? names[i] : "";
}

/* The options that the process cannot start with: -EINVAL, -E2BIG or -EBADF, and which. */
static int
spawn_check(const struct clip_cage_spawn_opts *o, struct clip_error **reterr)
{
	char shown[CAGE_SHOWN_MAX];
	size_t n = 0;

	if (!o->argv || !o->argv[0])
		return error_set(reterr, -EINVAL, "spawn options: argv is %s: no command",
				 o->argv ? "empty" : "NULL");
	if (!o->argv[0][0])
		return error_set(reterr, -EINVAL, "spawn options: argv[0] is \"\": no command");
	for (size_t i = 0; o->argv[i]; i++)
		if (++n > SPAWN_ARGS_MAX)
			return error_set(reterr, -E2BIG, "%s: more than %d arguments",
					 cage_shown(o->argv[0], shown), SPAWN_ARGS_MAX);
	for (size_t i = 0; o->envp && o->envp[i]; i++)
		if (++n > 2 * SPAWN_ARGS_MAX)
			return error_set(reterr, -E2BIG,
					 "%s: more than %d arguments and environment variables",
					 cage_shown(o->argv[0], shown), 2 * SPAWN_ARGS_MAX);
	if (o->n_fds > SPAWN_FDS_MAX)
		return error_set(reterr, -EINVAL, "spawn options: n_fds is %u, more than %d",
				 o->n_fds, SPAWN_FDS_MAX);
	if (o->n_fds && !o->fds)
		return error_set(reterr, -EINVAL, "spawn options: n_fds is %u and fds is NULL",
				 o->n_fds);
	for (uint32_t i = 0; i < o->n_fds; i++)
		if (o->fds[i] < 0 || fcntl(o->fds[i], F_GETFD) < 0)
			return error_set(reterr, -EBADF,
					 "spawn options: fds[%u], the process's fd %u%s, is %d, "
					 "which is %s in the caller%s",
					 i, i, fd_name(i), o->fds[i],
					 o->fds[i] < 0 ? "not an open descriptor" : "closed",
					 o->fds[i] >= 0 && o->fds[i] <= STDERR_FILENO
						 ? " (started with it closed: open /dev/null on it)"
						 : "");
	if (o->flags & ~CLIP_CAGE_SPAWN_PTY)
		return error_set(
			reterr, -EINVAL,
			"spawn options: flags 0x%x: only CLIP_CAGE_SPAWN_PTY (0x%x) is known",
			o->flags, CLIP_CAGE_SPAWN_PTY);
	if (o->cwd && o->cwd[0] != '/')
		return error_set(reterr, -EINVAL, "spawn options: cwd '%s' is not an absolute path",
				 cage_shown(o->cwd, shown));
	return 0;
}

#ifndef PIDFD_GET_CGROUP_NAMESPACE
#define PIDFD_GET_CGROUP_NAMESPACE _IO(0xFF, 1) /* Linux 6.11 */
#endif

/* The init's cgroup namespace as a descriptor: from its pidfd, else /proc while it lives. */
static int
cgroupns_open(struct clip_cage *c)
{
	char path[64];
	int fd = ioctl(c->pidfd, PIDFD_GET_CGROUP_NAMESPACE, 0);

	if (fd >= 0 || errno != ENOTTY)
		return fd;
	snprintf(path, sizeof(path), "/proc/%d/ns/cgroup", (int)c->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	/* Alive after the open: the pid was still the init's, not a recycled one. */
	if (fd >= 0 && cage_pidfd_signal(c->pidfd, 0) < 0) {
		close(fd);
		fd = -1;
		errno = ESRCH;
	}
	return fd;
}

/*
 * The helper: join, enter, clone the process as the caller's child. The
 * cgroups without the kernel's global lock where it can (cage-cgroup.c):
 * v1 through its own "tasks" files, cgroup2 by cloning the process into
 * it, which works only from outside the cage's cgroup namespace; so the
 * process enters that one itself (cage_exec_main()).
 */
_Noreturn static void
spawn_helper(struct clip_cage *c, const struct cage_exec_args *args, int err_fd)
{
	struct cage_exec_args a = *args;
	int v2 = c->cg.v2_fd, cgns, pidfd = -1, r;
	struct clone_args ca = {
		.flags = CLONE_PARENT | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)&pidfd,
	};
	struct cage_msg m = { .type = MSG_PID };
	long pid;

	if (v2 < 0 && c->cg.v2) /* an attached cage */
		v2 = open(c->cg.v2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/*
	 * The process cannot enter through the pidfd itself: the init's memory
	 * belongs to the host's user namespace, where it has no ptrace right.
	 * A namespace descriptor needs none.
	 */
	cgns = cgroupns_open(c);
	if (cgns < 0)
		cage_child_fail(err_fd, STEP_SETNS, errno);
	if (cage_cgroups_join_v1_self(&c->cg) < 0)
		cage_child_fail(err_fd, STEP_CGROUP, errno);
	/* The init's entry in the BPF LSM: the process inherits it from us. */
	r = test_hook_disabled("lsm-register") ? 0 : lsm_task_register_as(c->pidfd);
	if (r < 0)
		cage_child_fail(err_fd, STEP_LSM, -r);
	if (setns(c->pidfd, CAGE_NS_FLAGS) < 0)
		cage_child_fail(err_fd, STEP_SETNS, errno);
	if (v2 >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)v2;
	}
	pid = cage_clone3(&ca);
	if (pid < 0 && (ca.flags & CLONE_INTO_CGROUP)) {
		/* A cgroup the kernel will not clone into: the slow way. */
		if (cage_cgroups_join_v2(&c->cg, getpid()) < 0)
			cage_child_fail(err_fd, STEP_CGROUP, errno);
		ca.flags &= ~CLONE_INTO_CGROUP;
		pid = cage_clone3(&ca);
	}
	if (pid < 0)
		cage_child_fail(err_fd, STEP_FORK, errno);
	if (pid == 0) {
		a.cgroupns_fd = cgns;
		cage_exec_main(&a);
	}
	/* Its pidfd, made with it: the caller's own reaper may take it once it has executed. */
	m.value = (int)pid;
	if (send_fds(err_fd, &m, sizeof(m), &pidfd, 1) < 0) {
		(void)cage_pidfd_signal(pidfd, SIGKILL);
		_exit(1);
	}
	_exit(0);
}

/*
 * The helper, as fork() would make it but with no exit signal: the process
 * it clones with CLONE_PARENT takes its exit signal from it, and so is, as
 * the helper, out of reach of the caller's waitpid(-1) (CAGE_EXIT_SIGNAL).
 * Not glibc's fork(): the helper, as every child of the library, makes
 * system calls only (cage-child.c).
 */
static pid_t
helper_fork(void)
{
	struct clone_args ca = { .exit_signal = CAGE_EXIT_SIGNAL };

	return (pid_t)cage_clone3(&ca);
}

/* Checked spawn options, ours (cage_spawn_opts_copy_in()), into what the process needs. */
int
cage_spawn_prepare(struct clip_cage *c, const struct clip_cage_spawn_opts *o,
		   struct cage_exec_args *args, struct clip_error **reterr)
{
	int r;

	r = spawn_check(o, reterr);
	if (r < 0)
		return r;
	if (c->rootless && (o->uid != 0 || o->gid != 0))
		return error_set(reterr, -EINVAL,
				 "spawn options: uid %u, gid %u: cage %s is rootless, it maps only "
				 "uid and gid 0",
				 o->uid, o->gid, c->profile->name);
	if (o->uid >= CAGE_UID_RANGE || o->gid >= CAGE_UID_RANGE)
		return error_set(reterr, -EINVAL,
				 "spawn options: uid %u, gid %u: a cage maps uids and gids 0 to %u",
				 o->uid, o->gid, CAGE_UID_RANGE - 1);
	r = cage_seccomp_compile(c->profile, reterr);
	if (r < 0)
		return r;
	*args = (struct cage_exec_args){
		.profile = c->profile,
		.argv = o->argv,
		.envp = o->envp,
		.fds = o->fds,
		.n_fds = o->n_fds,
		.cwd = o->cwd,
		.uid = o->uid,
		.gid = o->gid,
		.rootless = c->rootless,
		.err_fd = -1,
		.cgroupns_fd = -1,
		.landlock_abi = c->landlock_abi,
		.landlock_ruleset = -1,
		.ctty = o->flags & CLIP_CAGE_SPAWN_PTY ? cage_pty_ctty(o->fds, o->n_fds) : -1,
		.test_disable = test_hook_list(),
	};
	return 0;
}

static int
cage_spawn(struct clip_cage *c, const struct clip_cage_spawn_opts *o, int *ret_pidfd,
	   struct clip_error **reterr)
{
	long long deadline = now_ms() + cage_profile_start_timeout_ms(c->profile);
	struct cage_exec_args args;
	_cleanup_close_ int sock = -1;
	struct cage_msg m = { 0 };
	pid_t helper, pid = 0;
	int sv[2], status, pidfd = -1, r = 0;
	ssize_t n;

	r = cage_spawn_prepare(c, o, &args, reterr);
	if (r < 0)
		return r;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return error_set_errno(reterr, -errno, "%s: socketpair", c->profile->name);
	sock = sv[0];
	args.err_fd = sv[1];
	helper = helper_fork();
	if (helper < 0) {
		close(sv[1]);
		return error_set_errno(reterr, -errno, "%s: cannot fork the spawn helper",
				       c->profile->name);
	}
	if (helper == 0) {
		close(sock);
		spawn_helper(c, &args, sv[1]);
	}
	close(sv[1]);
	while (waitpid(helper, &status, __WALL) < 0 && errno == EINTR)
		;
	/* The pid and a pidfd first, then nothing (executed) or an error; by the deadline. */
	for (;;) {
		int fd = -1;
		size_t n_fds = 0;

		n = wait_readable(sock, deadline);
		if (n < 0)
			break;
		n = recv_fds(sock, &m, sizeof(m), &fd, 1, &n_fds);
		if (n != sizeof(m) || m.type != MSG_PID || n_fds != 1 || pidfd >= 0) {
			if (n_fds == 1)
				close(fd);
			break;
		}
		pid = m.value;
		pidfd = fd;
	}
	if (pidfd >= 0) {
		r = spawned_add(c, pid, pidfd);
		if (r < 0) {
			/* Ours to reap all the same: killed, so that no one waits for it. */
			(void)cage_pidfd_signal(pidfd, SIGKILL);
			(void)waitid(P_PIDFD, (id_t)pidfd, &(siginfo_t){ 0 }, CAGE_WAIT_FLAGS);
			close(pidfd);
			return r;
		}
	}
	if (n == -ETIMEDOUT) {
		/* Our child (CLONE_PARENT), not reaped, killed through its pidfd. */
		if (pidfd >= 0) {
			(void)cage_pidfd_signal(pidfd, SIGKILL);
			spawned_drop_last(c);
		}
		return cage_timeout_error(reterr, c->profile, "the process's set-up");
	}
	if (n == sizeof(m) && m.type == MSG_ERROR) {
		r = cage_msg_error(&m, c->rootless, c->profile, o->argv[0], reterr);
		if (pidfd >= 0)
			spawned_drop_last(c);
		return r;
	}
	if (pidfd < 0)
		return error_set(reterr, -EIO, "%s: the spawn helper failed", c->profile->name);
	*ret_pidfd = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
	if (*ret_pidfd < 0) {
		r = error_set_errno(reterr, -errno, "%s: no pidfd for %s", c->profile->name,
				    o->argv[0]);
		(void)cage_pidfd_signal(pidfd, SIGKILL);
		spawned_drop_last(c);
		return r;
	}
	c->spawned[c->n_spawned - 1].given_fd = *ret_pidfd;
	(void)fstat(*ret_pidfd, &c->spawned[c->n_spawned - 1].given);
	return 0;
}

/*
 * The caller's options, of its version of <clip/cage.h>, into ours (the
 * rule of struct_copy_in()): an older caller's lack what came later, then
 * 0 or NULL; a newer caller's may not ask for what this version cannot
 * do. Read once, at the API's edge: the spawn works on our copy.
 */
int
cage_spawn_opts_copy_in(struct clip_cage *c, struct clip_cage_spawn_opts *dst,
			const struct clip_cage_spawn_opts *opts, struct clip_error **reterr)
{
	int r = struct_copy_in(dst, sizeof(*dst), opts, SPAWN_OPTS_SIZE_MIN,
			       "struct clip_cage_spawn_opts", reterr);

	if (r == -EINVAL)
		log_err(c->ctx, "client bug: spawn options of %u bytes, fewer than %zu", opts->size,
			SPAWN_OPTS_SIZE_MIN);
	return r;
}

CLIP_EXPORT int
clip_cage_spawn(struct clip_cage *c, const struct clip_cage_spawn_opts *opts, int *ret_pidfd,
		struct clip_error **reterr)
{
	struct clip_cage_spawn_opts o;
	struct cage_pty pty;
	int r, fds[SPAWN_FDS_MAX];

	clip_assert_reterr(reterr);
	cage_assert_error(c, reterr);
	cage_assert_log_arg(c, opts, reterr, "%s: opts is NULL", __func__);
	cage_assert_log_arg(c, ret_pidfd, reterr, "%s: ret_pidfd is NULL", __func__);
	r = cage_spawn_opts_copy_in(c, &o, opts, reterr);
	if (r < 0)
		return api_return(r, reterr);
	if (c->state != CLIP_CAGE_RUNNING)
		return api_return(
			error_set(reterr, -ECHILD, "cage %s is not running (%s)", c->profile->name,
				  c->state == CLIP_CAGE_NEW ? "never started" : "stopped"),
			reterr);

	r = cage_pty_setup(&o, fds, &pty, reterr);
	if (r >= 0)
		r = cage_spawn(c, &o, ret_pidfd, reterr);
	cage_pty_finish(&pty, r);
	return api_return(r, reterr);
}

/* The first process, from its pidfd that init passed: ours to wait for, a copy the caller's. */
int
cage_first_adopt(struct clip_cage *c, int pidfd, int *ret_pidfd, struct clip_error **reterr)
{
	struct spawned *s;
	pid_t pid;
	int given;

	if (pidfd < 0)
		return error_set(reterr, -EIO, "%s: the cage's init passed no first process",
				 c->profile->name);
	/* -1 when it has already exited and been reaped: then found by its fd. */
	pid = cage_pidfd_pid(pidfd);
	given = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
	s = given < 0 ? NULL : realloc(c->spawned, (c->n_spawned + 1) * sizeof(*s));
	if (!s) {
		if (given >= 0)
			close(given);
		close(pidfd);
		return error_set_errno(reterr, -ENOMEM, "%s: the first process", c->profile->name);
	}
	c->spawned = s;
	s = &c->spawned[c->n_spawned++];
	cage_audit_add_pid(&c->audit, pid);
	*s = (struct spawned){ .pid = pid > 0 ? pid : -1,
			       .pidfd = cage_fd_above_stdio(pidfd),
			       .given_fd = given,
			       .via_init = true };
	(void)fstat(given, &s->given);
	*ret_pidfd = given;
	return 0;
}

CLIP_EXPORT int
clip_cage_wait_process(struct clip_cage *c, int pidfd, int *ret_status)
{
	struct stat st;
	pid_t pid;

	cage_assert_return(c, -EINVAL);
	clip_assert_return(pidfd >= 0 && ret_status, -EINVAL);

	/* A reaped process's pidfd has no pid any more: then its fd and inode. */
	pid = cage_pidfd_pid(pidfd);
	if (fstat(pidfd, &st) < 0)
		return -EINVAL;
	for (size_t i = 0; i < c->n_spawned; i++) {
		struct spawned *s = &c->spawned[i];

		if (s->pid == 0 || (pid > 0 && s->pid != pid))
			continue;
		if (pid <= 0 && (s->given_fd != pidfd || s->given.st_ino != st.st_ino ||
				 s->given.st_dev != st.st_dev))
			continue;
		if (!s->reaped && s->via_init)
			first_collect(c, s, true);
		if (!s->reaped)
			(void)spawned_collect(s, true);
		s->pid = 0; /* collected */
		if (s->lost)
			return -ECHILD;
		*ret_status = s->status;
		return 0;
	}
	return -ECHILD;
}
