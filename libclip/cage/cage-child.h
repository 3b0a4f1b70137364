/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What runs in a cage's processes, between clone() and execve():
 * cage-child.c. Everything is prepared by the parent; the children make
 * system calls only (no allocation), since the launcher may have threads.
 */
#pragma once

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cage-cgroup.h"
#include "cage-internal.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

enum cage_step {
	STEP_NONE,
	STEP_SYNC,
	STEP_IDS,
	STEP_HOSTNAME,
	STEP_NETWORK,
	STEP_MOUNT_PRIVATE,
	STEP_MOUNT_SOURCES,
	STEP_MOUNT_ROOT,
	STEP_MOUNT_BINDS,
	STEP_MOUNT_PROC,
	STEP_MOUNT_DEV,
	STEP_MOUNT_TMP,
	STEP_PIVOT_ROOT,
	STEP_SESSION,
	STEP_FDS,
	STEP_CHDIR,
	STEP_SECUREBITS,
	STEP_CAPABILITIES,
	STEP_NO_NEW_PRIVS,
	STEP_LANDLOCK,
	STEP_SECCOMP,
	STEP_CGROUP,
	STEP_SETNS,
	STEP_FORK,
	STEP_EXEC,
	_STEP_MAX,
};

extern const char *const cage_step_names[_STEP_MAX];

enum cage_msg_type {
	MSG_READY,
	MSG_ERROR,
	MSG_PID,
	MSG_EXIT, /* the first process's status, from init; see cage_init_main() */
};

struct cage_msg {
	int type;
	int step;
	int error; /* positive errno */
	int value;
};

/* The cage's init: set up the namespaces' contents, then reap. */
struct cage_exec_args;

struct cage_init_args {
	const struct clip_cage_profile *profile;
	/*
	 * To the parent: a "go" byte in, then "c" with the v1 cgroups'
	 * "tasks" files, which init writes to move itself (cage-cgroup.c),
	 * and those of the launcher's, which it moves back to; cage_msg out.
	 */
	int sock;
	bool rootless;
	bool veth;
	bool netns; /* false only in a test-hooks build, see cage.c */
	bool die_with_parent; /* an unregistered cage ends with its launcher */
	int landlock_abi;
	/*
	 * A first process to fork once set up and before init restricts
	 * itself, or NULL. Its pidfd comes with MSG_READY (SCM_RIGHTS), its
	 * status as MSG_EXIT when init reaps it.
	 */
	const struct cage_exec_args *first;
	bool end_with_first; /* init exits once it has reaped the first process */
	/*
	 * The launcher's CPUs, which init takes back once it has read "go":
	 * the launcher may have steered it off its own CPU (cage.c,
	 * steer_init()). Unused without @steer.
	 */
	bool steer;
	cpu_set_t cpus;
};

_Noreturn void cage_init_main(const struct cage_init_args *a);

/* A process spawned into a running cage, after setns(). */
struct cage_exec_args {
	const struct clip_cage_profile *profile;
	const char *const *argv;
	const char *const *envp;
	const int *fds;
	unsigned n_fds;
	const char *cwd;
	uint32_t uid, gid;
	bool rootless;
	int err_fd; /* cage_msg on failure; closed by a successful execve() */
	int cgroupns_fd; /* a cgroup namespace to enter first, or -1 */
	int landlock_abi;
	/* Started by init (first_fork()): its Landlock ruleset to nest a domain with, or -1 */
	int landlock_ruleset;
	bool seccomp_inherited; /* and the default seccomp filter it loaded */
	const char *test_disable;
};

_Noreturn void cage_exec_main(const struct cage_exec_args *a);

/* Send a message on @fd, then _exit(). */
_Noreturn void cage_child_fail(int fd, enum cage_step step, int error);

void cage_msg_send(int fd, int type, int step, int error, int value);

/* The highest Landlock ABI of the running kernel, or 0. */
int cage_landlock_abi(void);

struct clone_args;
long cage_clone3(struct clone_args *ca);
