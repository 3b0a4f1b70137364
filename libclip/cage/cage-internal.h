/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cage: cages, the isolated process trees of one level each: their
 * profiles, their start, spawn and stop, their cgroups and the registry of
 * named cages.
 *
 * Calls: base level lsm tpm
 */
#pragma once

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <linux/filter.h>

#include <clip/cage.h>
#include <clip/level.h>

#include "base/macro.h"
#include "lsm/lsm.h"

/* -- the profile, shared by the parser and the runtime (cage-profile.c, cage-seccomp.c) -- */

#define CAGE_PATH_MAX 4096
#define CAGE_UID_RANGE 65536u
/* How long a start, or a spawn, waits for the cage's set-up by default; the most it may wait. */
#define CAGE_START_TIMEOUT_S 30u
#define CAGE_START_TIMEOUT_MAX_S 3600u
/* The first uid of the ranges derived from a cage's name (systemd's container range). */
#define CAGE_UID_BASE_MIN 0x80000u
#define CAGE_UID_BASE_SLOTS 0x6000u

struct cage_mount {
	char *source; /* NULL for a tmpfs */
	char *target;
	bool rw;
};

struct clip_cage_profile {
	unsigned n_ref;
	char *name;
	struct clip_level *level;
	char *root;
	char *data_dir;
	uint32_t uid_base; /* 0: derived from the name */
	unsigned start_timeout_s; /* 0: CAGE_START_TIMEOUT_S */

	struct cage_mount mounts[CLIP_CAGE_BINDS_MAX];
	size_t n_mounts;

	int net_mode;
	char *address; /* as written, "a.b.c.d/n" */
	uint32_t addr_be;
	unsigned prefix;

	struct clip_cage_limits limits;

	uint64_t caps; /* bit n: capability n kept */
	int syscalls[CLIP_CAGE_SYSCALLS_MAX];
	size_t n_syscalls;
	bool wx;
	bool measure; /* Measure=yes: the start extends the TPM's measurement PCR */
	unsigned landlock_min_abi; /* LandlockMinimumABI=, 0: none */
	/* TCPBindPorts=, TCPConnectPorts=: sorted, each once */
	uint16_t bind_ports[CLIP_CAGE_PORTS_MAX];
	size_t n_bind_ports;
	uint16_t connect_ports[CLIP_CAGE_PORTS_MAX];
	size_t n_connect_ports;

	/* The compiled seccomp filter of the additions, made once per profile, or NULL (cage-seccomp.c). */
	struct sock_filter *bpf;
	size_t bpf_len;
};

DEFINE_UNREF_CLEANUP(struct clip_cage_profile, clip_cage_profile_unref)

/*
 * A string of the caller's (a path, a name, a command) quoted in a message:
 * its first 128 bytes, "..." after them, '?' for each byte that is not
 * printable ASCII. Returns @buf.
 */
#define CAGE_SHOWN_MAX (128 + sizeof("..."))
const char *cage_shown(const char *s, char buf[CAGE_SHOWN_MAX]);

/* Where a command without a '/' is looked for in a cage. */
#define CAGE_EXEC_PATH "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"

/* 0, or -EINVAL with what makes @name no cage name (it becomes a file name). */
int cage_name_check(const char *name, struct clip_error **reterr);

/*
 * The argument checks of an exported function with a reterr
 * (clip_assert_return()): a failed one is the caller's bug, and the
 * message names the argument and says what is wrong with it.
 */
#define cage_assert_arg(expr, reterr, ...) \
	clip_assert_return(expr, api_return(error_set(reterr, -EINVAL, __VA_ARGS__), reterr))

/* How long a start or a spawn waits for the cage's set-up: StartTimeoutSec=, in ms. */
unsigned cage_profile_start_timeout_ms(const struct clip_cage_profile *p);

/* The uid range of a cage run by root: the profile's, or one derived from its name. */
uint32_t cage_profile_uid_base(const struct clip_cage_profile *p);

/* The profile's mounts sorted by target, parents before children: @sorted gets n_mounts entries. */
void cage_profile_sorted_mounts(const struct clip_cage_profile *p,
				const struct cage_mount *sorted[CLIP_CAGE_BINDS_MAX]);

/*
 * Compile (first call) the default seccomp filter, and the profile's
 * additions into p->bpf (left NULL without any).
 */
int cage_seccomp_compile(struct clip_cage_profile *p, struct clip_error **reterr);

/* The default filter, once cage_seccomp_compile() succeeded; lock-free, for the cage's processes. */
struct sock_fprog cage_seccomp_default(void);

/*
 * The filter a W^X cage's processes load where vm.memfd_noexec is below 2
 * in its pid namespace (rootless): memfd_create() only with
 * MFD_NOEXEC_SEAL. Compiled with the default one.
 */
struct sock_fprog cage_seccomp_memfd(void);

/* Whether a syscall name/number is in the default deny-list (for tests). */
bool cage_seccomp_is_default_denied(int nr);

/* -- a cage's cgroups, on a unified, hybrid or legacy host (cage-cgroup.c) -- */

struct clip_ctx;

enum {
	CG_V1_MEMORY,
	CG_V1_PIDS,
	CG_V1_CPU,
	_CG_V1_MAX,
};

struct cage_cgroups {
	char *v2; /* the cage's cgroup2 directory, or NULL */
	int v2_fd;
	char *v1[_CG_V1_MAX]; /* v1 directories used for a limit, or NULL */
	/* While being made: */
	unsigned wanted, done; /* CLIP_CAGE_MISSING_* bits of the limits, and of those applied */
	char *own[_CG_V1_MAX + 1]; /* the launcher's own cgroups: v1 (CG_V1_*), then cgroup2 */
};

/*
 * The cgroups named @leaf beside the launcher's own, made in two steps so
 * that most of the work overlaps the init's set-up (doc/cage.md): before
 * the init exists, the cgroup2 cgroup if cgroup2 takes any of the limits,
 * with those (the init is cloned into it); after, the v1 cgroups for the
 * other limits, which the init joins itself. The second step returns the
 * CLIP_CAGE_MISSING_* flags of what could not be done (CGROUP: the cage
 * has limits but no cgroup of its own).
 */
void cage_cgroups_create_v2(struct clip_ctx *ctx, struct cage_cgroups *cg, const char *leaf,
			    const struct clip_cage_limits *limits);
unsigned cage_cgroups_create_v1(struct clip_ctx *ctx, struct cage_cgroups *cg, const char *leaf,
				const struct clip_cage_limits *limits);

/*
 * The v1 "tasks" files, opened for the init to move itself (-1 where
 * none): the cage's, or with @parent those of the launcher's own cgroups
 * beside them, which the init moves back to once the cage's processes are
 * in (so that stopping removes the cage's while the init dies). And closed.
 */
int cage_cgroups_open_tasks(const struct cage_cgroups *cg, bool parent, int fds[_CG_V1_MAX]);
void cage_cgroups_close_tasks(int fds[_CG_V1_MAX]);

/* Move the calling single-threaded process through the opened "tasks" files. */
int cage_cgroups_join_tasks(const int fds[_CG_V1_MAX]);

/* Move the calling single-threaded process into the v1 cgroups. */
int cage_cgroups_join_v1_self(const struct cage_cgroups *cg);

/* Move @pid into the cgroup2 cgroup (where CLONE_INTO_CGROUP was refused). */
int cage_cgroups_join_v2(const struct cage_cgroups *cg, pid_t pid);

/* cgroup.kill: -EOPNOTSUPP without a cgroup2 cgroup. */
int cage_cgroups_kill(const struct cage_cgroups *cg);

/* Remove the v1 cgroups that are empty already, and forget those. */
void cage_cgroups_remove_v1(struct cage_cgroups *cg);

/* Remove the (empty) cgroups and free the paths. */
void cage_cgroups_destroy(struct cage_cgroups *cg);

/* Free the paths only. */
void cage_cgroups_forget(struct cage_cgroups *cg);

/*
 * -- what runs in a cage's processes between clone() and execve() (cage-child.c) --
 * Everything is prepared by the parent; the children make system calls
 * only (no allocation), since the launcher may have threads.
 */

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
	STEP_LSM,
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
	int detail; /* STEP_MOUNT_SOURCES: the length of the source's prefix at fault */
};

/*
 * What a cage's mounts come from, each a detached tree (open_tree()) or
 * -1: the host directories bound when the profile has no Root= (or the
 * link that replaces one), the root, the data directory, the binds. In
 * root mode the launcher opens them, with its own credentials and before
 * any id switch, so that any source it can open works, a 0700 directory
 * included; in rootless mode the init opens them with the caller's
 * credentials, which it has too.
 */
#define CAGE_HOST_DIRS 8
struct cage_sources {
	int host[CAGE_HOST_DIRS];
	char host_link[CAGE_HOST_DIRS][64];
	int root, data;
	int mounts[CLIP_CAGE_BINDS_MAX];
};

/*
 * How sources are resolved (doc/cage.md, "Bind sources"): @nofollow, no
 * symbolic link at any component (ELOOP); @writable, no directory on the
 * way that the cage could change (EPERM), judged by its owner and group
 * where @owners (root mode: the cage's ids are @base and the 65535 after).
 * Both false only in a test-hooks build.
 */
struct cage_source_rules {
	bool nofollow, writable, owners;
	uint32_t base;
};

/*
 * Open every source of @p into @s (all -1 on failure): 0, or -errno with
 * the number of the source at fault in @ret_index (cage_source_path())
 * and the length of the part of its path at fault in @ret_bad.
 */
int cage_sources_open(const struct clip_cage_profile *p, const struct cage_source_rules *rules,
		      struct cage_sources *s, int *ret_index, int *ret_bad);
void cage_sources_close(struct cage_sources *s);
/* Sources are numbered: the host directories, the root, the data directory, the binds. */
#define SOURCE_INDEX_ROOT CAGE_HOST_DIRS
#define SOURCE_INDEX_DATA (SOURCE_INDEX_ROOT + 1)
#define SOURCE_INDEX_MOUNTS (SOURCE_INDEX_DATA + 1)
/* The path of source number @index of @p, or NULL. */
const char *cage_source_path(const struct clip_cage_profile *p, int index);

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
	const struct cage_sources *sources; /* opened by the launcher, or NULL */
	struct cage_source_rules source_rules; /* to open them, rootless */
	bool veth;
	bool netns; /* false only in a test-hooks build, see cage.c */
	/*
	 * The host's directories as overlays of their own (cage-child.c,
	 * private_tree()); false only in a test-hooks build.
	 */
	bool private_inodes;
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
	const char *test_disable; /* test_hook_list() of the launcher */
	/*
	 * The BPF LSM's map of the cages' processes (lsm/lsm.h), or -1: init
	 * registers itself in it once its mounts are made and before the
	 * first process, which inherits the entry, as everything it forks.
	 */
	int lsm_fd;
	struct lsm_task lsm_task;
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
	int ctty; /* the fd (a pty slave of CLIP_CAGE_SPAWN_PTY) to make the controlling terminal, or -1 */
	const char *test_disable;
};

_Noreturn void cage_exec_main(const struct cage_exec_args *a);

/* Send a message on @fd, then _exit(). */
_Noreturn void cage_child_fail(int fd, enum cage_step step, int error);

void cage_msg_send(int fd, int type, int step, int error, int value);

/* The highest Landlock ABI of the running kernel, or 0. */
int cage_landlock_abi(void);

/* What a cage's ruleset uses of the Landlock ABIs after 3 (cage_landlock_features()). */
#define CAGE_LL_NET (1u << 0) /* ABI 4: TCP bind and connect by port */
#define CAGE_LL_IOCTL (1u << 1) /* ABI 5: ioctl on devices */
#define CAGE_LL_SCOPE (1u << 2) /* ABI 6: abstract UNIX sockets and signals */
#define CAGE_LL_LOG (1u << 3) /* ABI 7: denials logged after execve() */

/* The parts of @abi a ruleset uses, less those that @test (CLIP_TEST_DISABLE) switches off. */
unsigned cage_landlock_features(int abi, const char *test);

/* The Landlock ruleset of a cage of profile @p under @abi (cage-child.c), as an fd, or -1 with
 * errno: built in the cage's mount namespace, by the init; tests/bench times it alone. */
int cage_landlock_ruleset(const struct clip_cage_profile *p, int abi, const char *test);

struct clone_args;
long cage_clone3(struct clone_args *ca);

/*
 * -- a cage, and what its files share (cage.c: the lifecycle, cage-spawn.c:
 * its processes, cage-registry.c: the named cages, cage-net.c: the veth pair) --
 */

#define CAGE_NS_FLAGS \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET)

/*
 * The processes the caller gets (the cage's init, the spawn helper and the
 * processes it clones with CLONE_PARENT) are cloned with no exit signal:
 * to the kernel they are "clone children", which waitpid(-1, ...) and
 * waitid(P_ALL, ...) pass over unless given __WALL or __WCLONE, and which
 * no SIGCHLD announces nor SIG_IGN reaps. An embedding init's reaper then
 * cannot take their statuses; the library waits for them by pidfd (or
 * pid) with these flags.
 */
#define CAGE_EXIT_SIGNAL 0
#define CAGE_WAIT_FLAGS (WEXITED | __WALL)

struct spawned {
	pid_t pid; /* 0 once the caller has collected the status */
	int pidfd;
	int given_fd; /* the number of the pidfd the caller received */
	struct stat given; /* its inode: unique per process with pidfs (Linux 6.9) */
	int status;
	bool reaped;
	bool lost; /* reaped by another, its status unknown (before Linux 6.15) */
	bool via_init; /* the first process: init's child, its status comes on the socket */
};

/* Landlock's denials of a cage, from the kernel's audit (cage-audit.c). */
#define CAGE_AUDIT_PIDS_MAX 64
#define CAGE_AUDIT_DOMAINS_MAX 64
struct cage_audit {
	int fd; /* -1: not read (doc/cage.md says when) */
	uint64_t pids[CAGE_AUDIT_PIDS_MAX]; /* the makers of the cage's domains, the last ones */
	size_t n_pids;
	uint64_t domains[CAGE_AUDIT_DOMAINS_MAX]; /* the cage's domains seen so far */
	size_t n_domains;
};

/* Whether the kernel's audit is on: 1, 0, or -1 when it does not answer. */
int cage_audit_enabled(void);
/* Joins the audit's read-only group: 0, or -1 and why not in @why (static text). */
int cage_audit_open(struct cage_audit *a, const char **why);
/* Whether the kernel's audit is on, so that records come: 0, or -1 (closed) and why not.
 * The answer comes from a kernel thread (audit_send_reply()): a start asks while its init
 * sets up, off its path. */
int cage_audit_check(struct cage_audit *a, const char **why);
/* @pid made (or will make) one of the cage's Landlock domains. */
void cage_audit_add_pid(struct cage_audit *a, pid_t pid);
struct clip_cage;
/* Logs the cage's denials read so far as "cage NAME was refused X" and tells the cage's
 * denial function: their number. NULL @c: discards what waits. */
size_t cage_audit_drain(struct cage_audit *a, struct clip_cage *c);
void cage_audit_close(struct cage_audit *a);

struct clip_cage {
	unsigned n_ref;
	pid_t creator;
	struct clip_ctx *ctx;
	struct clip_cage_profile *profile;
	int state;
	bool is_child; /* the init is our child (we started it) */
	bool rootless;
	bool registered;
	int pidfd;
	int sock; /* to init, while the first process's status is awaited */
	pid_t pid;
	unsigned long long start_time;
	unsigned missing;
	int landlock_abi;
	/* Its processes' entry in the BPF LSM's map, when the LSM is loaded (lsm/lsm.h). */
	bool lsm;
	uint64_t lsm_id;
	struct cage_audit audit;
	clip_cage_denial_fn denial_fn;
	void *denial_userdata;
	struct cage_cgroups cg;
	struct spawned *spawned;
	size_t n_spawned;
};

DEFINE_UNREF_CLEANUP(struct clip_cage, clip_cage_unref)

#define cage_assert_return(c, r) \
	do { \
		clip_assert_return(c, r); \
		clip_assert_return((c)->creator == getpid(), -ECHILD); \
	} while (0)

/* The same for functions with a reterr: the message says what was wrong. */
#define cage_assert_error(c, reterr) \
	do { \
		cage_assert_arg(c, reterr, "%s: the cage is NULL", __func__); \
		clip_assert_return( \
			(c)->creator == getpid(), \
			api_return(error_set(reterr, -ECHILD, \
					     "%s: cage %s belongs to process %d, " \
					     "not to this child of it", \
					     __func__, (c)->profile->name, (int)(c)->creator), \
				   reterr)); \
	} while (0)

/* The context's checks (ctx_assert_return_error()), said in the message (base/ctx-internal.h). */
#define cage_ctx_assert_error(ctx, reterr) \
	do { \
		cage_assert_arg(ctx, reterr, "%s: the context is NULL", __func__); \
		clip_assert_return((ctx)->pid == getpid(), \
				   api_return(error_set(reterr, -ECHILD, \
							"%s: the context belongs to process " \
							"%d, not to this child of it", \
							__func__, (int)(ctx)->pid), \
					      reterr)); \
	} while (0)

/* A misuse of the API on cage @c: logged as a client bug, and said in the message. */
#define cage_assert_log_arg(c, expr, reterr, ...) \
	ctx_assert_log_return((c)->ctx, expr, \
			      api_return(error_set(reterr, -EINVAL, __VA_ARGS__), reterr))

/* The start time of @pid (/proc/PID/stat): a reused pid has another one. 0 if gone. */
unsigned long long cage_proc_start_time(pid_t pid);

/* -ETIMEDOUT: @what of @p's cage did not end within its StartTimeoutSec=. */
/* Root or rootless (cage-mode.c): decided once per context, from what the process has. */
bool cage_rootless(struct clip_ctx *ctx);
bool cage_ids_mapped(const char *file, uint64_t first, uint64_t count);

int cage_timeout_error(struct clip_error **reterr, const struct clip_cage_profile *p,
		       const char *what);

/*
 * The report of a child of @p's cage, by @deadline_ms (now_ms(); one in
 * the past reads only a report already there): 0 when ready, else -EIO
 * (or -EPERM, -ETIMEDOUT) with what failed; a passed fd to @ret_fd.
 */
int cage_child_report(int fd, bool rootless, const struct clip_cage_profile *p, const char *argv0,
		      long long deadline_ms, int *ret_fd, struct clip_error **reterr);

/* What a child's MSG_ERROR @m says, as cage_child_report() (@argv0: the command, or NULL). */
int cage_msg_error(const struct cage_msg *m, bool rootless, const struct clip_cage_profile *p,
		   const char *argv0, struct clip_error **reterr);

/*
 * @fd moved to 3 or above (and closed), or @fd itself where it is already
 * there or cannot be moved. For the descriptors a cage keeps: a caller
 * started with 0, 1 or 2 closed would otherwise hand one on as a
 * process's stdin (`clipctl cage exec` gave the cage its init's pidfd).
 */
int cage_fd_above_stdio(int fd);

/* pidfd_open(2) and pidfd_send_signal(2), through syscall(2). */
int cage_pidfd_open(pid_t pid);
int cage_pidfd_signal(int pidfd, int sig);

/* The pid behind @pidfd in this pid namespace (its fdinfo), or -1. */
pid_t cage_pidfd_pid(int pidfd);

/* Reap the processes we spawned that have exited (all of them when @block). */
void cage_spawned_reap(struct clip_cage *c, bool block);

/*
 * The caller's spawn options into ours, by the rule of struct_copy_in():
 * 0, -EINVAL (smaller than the smallest accepted) or -E2BIG (a newer caller's
 * that set what this version does not know).
 */
int cage_spawn_opts_copy_in(struct clip_cage *c, struct clip_cage_spawn_opts *dst,
			    const struct clip_cage_spawn_opts *opts, struct clip_error **reterr);

/* Checked spawn options, ours, into what the process needs. */
int cage_spawn_prepare(struct clip_cage *c, const struct clip_cage_spawn_opts *o,
		       struct cage_exec_args *args, struct clip_error **reterr);

/*
 * -- the cage's terminal (cage-pty.c): never the host's; a pty of its own
 * with CLIP_CAGE_SPAWN_PTY, relayed through a filter --
 */

/* The pty of a spawn: its master, the slave passed, where the caller wants the master. */
struct cage_pty {
	int master, slave;
	int *ret;
};

/*
 * Before a spawn: a terminal among @o's fds is refused (-EBADF), or with
 * CLIP_CAGE_SPAWN_PTY replaced by the slave of a new pty; @o->fds then
 * points to @fds, which must outlive the spawn. 0 or -errno.
 */
int cage_pty_setup(struct clip_cage_spawn_opts *o, int fds[64], struct cage_pty *pty,
		   struct clip_error **reterr);

/* After it (@r its result): the slave closed, the master to the caller on success. */
void cage_pty_finish(struct cage_pty *pty, int r);

/* The first of @fds that is a terminal (the slave: the process's controlling one), or -1. */
int cage_pty_ctty(const int *fds, unsigned n);

/* The modes a cage set on the user's terminal through the filter, reset when the relay ends. */
#define PTY_DIRTY_SGR (1u << 0)
#define PTY_DIRTY_CURSOR_KEYS (1u << 1)
#define PTY_DIRTY_WRAP (1u << 2)
#define PTY_DIRTY_BLINK (1u << 3)
#define PTY_DIRTY_CURSOR (1u << 4)
#define PTY_DIRTY_ALT47 (1u << 5)
#define PTY_DIRTY_ALT1049 (1u << 6)
#define PTY_DIRTY_PASTE (1u << 7)
#define PTY_DIRTY_MARGINS (1u << 8)
#define PTY_DIRTY_KEYPAD (1u << 9)
#define PTY_DIRTY_CHARSET (1u << 10)

/* The output filter's state, kept across reads: a sequence may be cut anywhere. */
struct pty_filter {
	int state;
	char csi[64];
	size_t n_csi;
	bool csi_long;
	char charset;
	unsigned char u[4];
	unsigned u_n, u_need;
	unsigned dirty;
	/* What passed, of the last call: at most what came in, plus a held sequence. */
	char out[2 * 4096 + 128];
	size_t n_out;
};

/* Filter @n bytes (at most 4096) into f->out: their number. A zeroed struct starts. */
size_t pty_filter(struct pty_filter *f, const void *in, size_t n);

/* The resets of what the cage left set, into f->out: their number. */
size_t pty_filter_end(struct pty_filter *f);

/* The first process, from its pidfd that init passed: ours to wait for, a copy the caller's. */
int cage_first_adopt(struct clip_cage *c, int pidfd, int *ret_pidfd, struct clip_error **reterr);

/* Before a start with CLIP_CAGE_START_REGISTER: the name must be free; a stale entry goes. */
int cage_registry_claim(struct clip_cage *c, struct clip_error **reterr);

/* Once started: the entry, which claims the name against a concurrent start. */
int cage_registry_write(struct clip_cage *c, struct clip_error **reterr);

/* Once ended: our own entry goes, not one another cage of the name wrote since. */
void cage_registry_remove(struct clip_cage *c);
/* Note @pid as spawned into @c (if it is registered), for cage_registry_spawned(). */
void cage_registry_note_spawn(struct clip_cage *c, pid_t pid);
/* Whether @pid was (among the last) spawned into @c, the registered cage of this launcher. */
bool cage_registry_spawned(struct clip_cage *c, pid_t pid);

/* The veth pair: @host_name up on the host, its peer eth0 in @pid's network namespace. */
int cage_veth_create(const char *host_name, pid_t pid);
