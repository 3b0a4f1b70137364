/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Cages: the lifecycle. doc/cage.md explains the design; cage-child.c is
 * what runs inside, cage-spawn.c runs processes in a running cage,
 * cage-registry.c keeps the named cages and cage-net.c makes the veth pair.
 *
 * start: clone3(CLONE_PIDFD | all namespaces, CLONE_INTO_CGROUP where
 *        cgroup2 holds a limit, no exit signal so that the caller's own
 *        reaper cannot take it) of an init, which waits until the parent
 *        has written its id maps, builds the file system while the parent
 *        makes the v1 cgroups, joins them, reports ready, drops
 *        everything and reaps; all by StartTimeoutSec=, or the start fails.
 * start with a first process (clip_cage_start_spawn(), what `clipctl cage
 *        run` does): init forks it once set up, before dropping its own
 *        rights, leaves the v1 cgroups to it, hands its pidfd back with
 *        "ready", and later its status (then exits, with
 *        CLIP_CAGE_START_END_WITH_FIRST).
 * stop:  SIGTERM to every process but init, wait on their pidfds until
 *        the grace period ends, then cgroup.kill (where there is a cgroup2
 *        cgroup) and SIGKILL to the init, which takes the whole pid
 *        namespace with it; the v1 cgroups go while it dies.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <clip/cage.h>

#include "cage-internal.h"
#include "cage-lsm.h"
#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/log.h"
#include "tpm/tpm.h"
#include "base/test-hooks.h"
#include "base/util.h"

CLIP_EXPORT int
clip_cage_new(struct clip_cage **ret, struct clip_ctx *ctx, struct clip_cage_profile *profile,
	      struct clip_error **reterr)
{
	struct clip_cage *c;

	clip_assert_reterr(reterr);
	cage_ctx_assert_error(ctx, reterr);
	ctx_assert_log_return(
		ctx, ret,
		api_return(error_set(reterr, -EINVAL, "%s: ret is NULL", __func__), reterr));
	ctx_assert_log_return(
		ctx, profile,
		api_return(error_set(reterr, -EINVAL, "%s: the profile is NULL", __func__),
			   reterr));

	c = calloc(1, sizeof(*c));
	if (!c)
		return api_return(-ENOMEM, reterr);
	c->n_ref = 1;
	c->creator = getpid();
	c->lsm_id = lsm_cage_id_new(); /* kept across restarts: what the session marks is its */
	c->ctx = clip_ctx_ref(ctx);
	c->profile = clip_cage_profile_ref(profile);
	c->pidfd = -1;
	c->sock = -1;
	c->audit.fd = -1;
	c->cg.v2_fd = -1;
	*ret = c;
	return 0;
}

CLIP_EXPORT struct clip_cage *
clip_cage_ref(struct clip_cage *c)
{
	if (c)
		c->n_ref++;
	return c;
}

CLIP_EXPORT struct clip_cage *
clip_cage_unref(struct clip_cage *c)
{
	if (!c || --c->n_ref > 0)
		return NULL;
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->sock >= 0)
		close(c->sock);
	cage_cgroups_forget(&c->cg);
	for (size_t i = 0; i < c->n_spawned; i++)
		if (c->spawned[i].pidfd >= 0)
			close(c->spawned[i].pidfd);
	free(c->spawned);
	cage_audit_close(&c->audit);
	clip_cage_profile_unref(c->profile);
	clip_ctx_unref(c->ctx);
	free(c);
	return NULL;
}

/* -- small helpers --------------------------------------------------- */

static int
read_sysctl(const char *path)
{
	char buf[32] = "";
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
		return -1;
	return atoi(buf);
}

/* Why the host refuses a user namespace to this user, if it says. */
static int
userns_error(int error, struct clip_error **reterr)
{
	if (read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1)
		return error_set(
			reterr, -EPERM,
			"AppArmor restricts unprivileged user namespaces on this host "
			"(kernel.apparmor_restrict_unprivileged_userns=1): run the cage as "
			"root, or give the launcher an AppArmor profile that allows 'userns'");
	if (read_sysctl("/proc/sys/kernel/unprivileged_userns_clone") == 0)
		return error_set(reterr, -EPERM,
				 "unprivileged user namespaces are disabled on this host "
				 "(kernel.unprivileged_userns_clone=0): run the cage as root");
	if (read_sysctl("/proc/sys/user/max_user_namespaces") == 0)
		return error_set(reterr, -EPERM,
				 "user namespaces are disabled on this host "
				 "(user.max_user_namespaces=0)");
	return error_set_errno(reterr, -EPERM, "cannot create the cage's namespaces");
}

unsigned long long
cage_proc_start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long t = 0;
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command may contain anything, ')' included: fields follow the last one. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* Field 22 is the start time; the one after ')' is field 3. */
	for (int field = 3; field <= 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (p)
		t = strtoull(p + 1, NULL, 10);
	return t;
}

/* -- start ----------------------------------------------------------- */

static int
write_id_maps(pid_t pid, bool rootless, uint32_t base)
{
	char path[64], map[64];
	int r;

	if (rootless) {
		snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
		r = write_string(path, "deny");
		if (r < 0)
			return r;
		snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)geteuid());
	} else
		snprintf(map, sizeof(map), "0 %u %u\n", base, CAGE_UID_RANGE);
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	r = write_string(path, map);
	if (r < 0)
		return r;
	if (rootless)
		snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)getegid());
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	return write_string(path, map);
}

/* What source number @index of @p is, in a message. */
static const char *
cage_source_kind(const struct clip_cage_profile *p, int index)
{
	const char *path = cage_source_path(p, index);

	if (index < SOURCE_INDEX_ROOT)
		return "host directory";
	if (path == p->root)
		return "Root=";
	if (path == p->data_dir)
		return "DataDirectory=";
	return "bind source";
}

/*
 * -EIO: source number @index of @p's mounts (cage_source_path()) cannot be
 * opened; the first @bad bytes of its path are at fault (cage_sources_open()).
 */
static int
cage_source_error(struct clip_error **reterr, const struct clip_cage_profile *p, int index,
		  int error, int bad)
{
	const char *path = cage_source_path(p, index), *kind = cage_source_kind(p, index);
	int len = (int)strlen(path);
	char buf[128];
	struct stat st;

	if (bad <= 0 || bad > len)
		bad = len;
	if (error == -ELOOP)
		return error_setf(reterr, -EIO, -1,
				  "%s: %s %s refused: %.*s is a symbolic link (sources are opened "
				  "without following any, so that whoever can write beside one "
				  "cannot point it elsewhere)",
				  p->name, kind, path, bad, path);
	if (error == -EPERM && bad < len) {
		char dir[CAGE_PATH_MAX];

		snprintf(dir, sizeof(dir), "%.*s", bad, path);
		if (lstat(dir, &st) < 0)
			st = (struct stat){ 0 };
		return error_setf(
			reterr, -EIO, -1,
			"%s: %s %s refused: the directory %s that holds it can be "
			"changed by the cage (owner %u, group %u, mode %04o), which could "
			"replace the source",
			p->name, kind, path, dir, (unsigned)st.st_uid, (unsigned)st.st_gid,
			(unsigned)(st.st_mode & 07777));
	}
	return error_setf(reterr, -EIO, -1, "%s: cannot open the %s %s: %s%s%.*s%s", p->name, kind,
			  path, strerror_r(-error, buf, sizeof(buf)), bad < len ? " (at " : "",
			  bad < len ? bad : 0, path, bad < len ? ")" : "");
}

/* Whether @path is @dir or lies beneath it (both absolute and normalised). */
static bool
path_within(const char *path, const char *dir, bool strictly)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return !strictly || strcmp(path, "/") != 0;
	if (strncmp(path, dir, n) != 0)
		return false;
	return path[n] == '/' || (!strictly && path[n] == '\0');
}

/*
 * What the cage writes from inside, by the profile: its data directory and
 * its read-write binds. No other source may lie beneath one, where the
 * cage could replace it (a directory for another, between two starts),
 * nor be one and read-only: what the cage wrote there, noexec, would be
 * executable through the read-only bind. -EIO, naming both.
 */
static int
cage_sources_overlap(const struct clip_cage_profile *p, struct clip_error **reterr)
{
	const int n = SOURCE_INDEX_MOUNTS + (int)p->n_mounts;

	for (int i = 0; i < n; i++) {
		const char *path = cage_source_path(p, i);
		bool ro = i < SOURCE_INDEX_MOUNTS ? i != SOURCE_INDEX_DATA
						  : !p->mounts[i - SOURCE_INDEX_MOUNTS].rw;

		if (!path || (i < SOURCE_INDEX_ROOT && p->root))
			continue;
		for (int w = SOURCE_INDEX_DATA; w < n; w++) {
			const char *wpath = cage_source_path(p, w);

			if (!wpath ||
			    (w > SOURCE_INDEX_DATA && !p->mounts[w - SOURCE_INDEX_MOUNTS].rw))
				continue;
			if (w == i || !path_within(path, wpath, !ro))
				continue;
			return error_setf(
				reterr, -EIO, -1,
				"%s: %s %s refused: it %s %s %s, which the cage writes, "
				"so that it could %s",
				p->name, cage_source_kind(p, i), path,
				strcmp(path, wpath) == 0 ? "is" : "lies beneath",
				cage_source_kind(p, w), wpath,
				ro ? "execute what it wrote there through a read-only bind"
				   : "replace it between two starts");
		}
	}
	return 0;
}

/* -ETIMEDOUT: @what of @p's cage did not end within its StartTimeoutSec=. */
int
cage_timeout_error(struct clip_error **reterr, const struct clip_cage_profile *p, const char *what)
{
	return error_setf(reterr, -ETIMEDOUT, -1,
			  "%s: %s did not end within %u s (StartTimeoutSec=)", p->name, what,
			  cage_profile_start_timeout_ms(p) / 1000);
}

/* What a child's MSG_ERROR @m says, as cage_child_report() (@argv0: the command, or NULL). */
int
cage_msg_error(const struct cage_msg *m, bool rootless, const struct clip_cage_profile *p,
	       const char *argv0, struct clip_error **reterr)
{
	char buf[128], shown[CAGE_SHOWN_MAX];

	if (m->step == STEP_MOUNT_SOURCES && cage_source_path(p, m->value))
		return cage_source_error(reterr, p, m->value, -m->error, m->detail);
	if (rootless && m->error == EPERM && m->step <= STEP_PIVOT_ROOT)
		return userns_error(-EPERM, reterr);
	if (m->step == STEP_EXEC && argv0 &&
	    (m->error == ENOENT || m->error == EACCES || m->error == EPERM))
		return error_setf(reterr, -m->error, -1, "%s: cannot execute '%s'%s: %s", p->name,
				  cage_shown(argv0, shown),
				  strchr(argv0, '/') ? "" : " (looked for in " CAGE_EXEC_PATH ")",
				  strerror_r(m->error, buf, sizeof(buf)));
	return error_setf(reterr, -EIO, -1, "%s: failed while %s: %s", p->name,
			  cage_step_names[m->step], strerror_r(m->error, buf, sizeof(buf)));
}

/*
 * The report of a child of @p's cage, by @deadline_ms (now_ms(); one in
 * the past reads only a report already there): 0 when ready, else -EIO
 * (or -EPERM, -ETIMEDOUT) with what failed; a passed fd to @ret_fd.
 */
int
cage_child_report(int fd, bool rootless, const struct clip_cage_profile *p, const char *argv0,
		  long long deadline_ms, int *ret_fd, struct clip_error **reterr)
{
	const char *what = p->name;
	struct cage_msg m;
	int passed = -1, r;
	size_t n_fds;
	ssize_t n;

	r = wait_readable(fd, deadline_ms);
	if (r == -ETIMEDOUT)
		return cage_timeout_error(reterr, p, "the set-up");
	if (r < 0)
		return error_set_errno(reterr, r, "%s: cannot wait for the set-up", what);
	/*
	 * A child that exited with a message of ours unread (the cgroups'
	 * "c") left ECONNRESET on our socket, which the kernel reports, once,
	 * before the report queued behind it.
	 */
	for (int i = 0; i < 2; i++) {
		n = recv_fds(fd, &m, sizeof(m), &passed, 1, &n_fds);
		if (n != -ECONNRESET)
			break;
	}
	if (n == 0 || n == -ECONNRESET)
		return error_set(reterr, -EIO, "%s: the cage's process died during set-up", what);
	if (n != sizeof(m) || m.step < 0 || m.step >= _STEP_MAX) {
		if (passed >= 0)
			close(passed);
		return error_set(reterr, -EIO, "%s: bad report from the cage's process", what);
	}
	if (m.type != MSG_ERROR) {
		if (ret_fd)
			*ret_fd = passed;
		else if (passed >= 0)
			close(passed);
		return 0;
	}
	if (passed >= 0)
		close(passed);
	return cage_msg_error(&m, rootless, p, argv0, reterr);
}

/*
 * A send to the init failed (@error): it has exited, most likely once it
 * had written why (a bind source it cannot open, say). That report is in
 * our queue already, and says more than the send: it wins. -EIO.
 */
static int
cage_send_failed(int sock, const struct clip_cage *c, const struct cage_exec_args *first, int error,
		 const char *what, struct clip_error **reterr)
{
	struct cage_msg m;
	ssize_t n = -EAGAIN;
	size_t n_fds;
	int passed = -1;

	for (int i = 0; i < 2 && (i == 0 || n == -ECONNRESET); i++) {
		if (wait_readable(sock, 0) < 0)
			break;
		n = recv_fds(sock, &m, sizeof(m), &passed, 1, &n_fds);
	}
	if (passed >= 0)
		close(passed);
	if (n == sizeof(m) && m.type == MSG_ERROR && m.step >= 0 && m.step < _STEP_MAX)
		return cage_msg_error(&m, c->rootless, c->profile, first ? first->argv[0] : NULL,
				      reterr);
	return error_setf(reterr, -EIO, -1, "%s: %s: %s", c->profile->name, what, strerror(-error));
}

/*
 * "c", the number of the cage's v1 "tasks" files, then those open and
 * those of the launcher's cgroups beside them, which the init returns to
 * (none where one of them could not be opened) (cage-child.c,
 * cgroups_join()).
 */
static int
send_tasks(int sock, const int tasks[_CG_V1_MAX], const int parents[_CG_V1_MAX])
{
	int fds[2 * _CG_V1_MAX];
	size_t k = 0, n;
	bool back = true;

	for (size_t i = 0; i < _CG_V1_MAX; i++)
		if (tasks[i] >= 0) {
			fds[k++] = tasks[i];
			back = back && parents[i] >= 0;
		}
	n = k;
	for (size_t i = 0; back && i < _CG_V1_MAX; i++)
		if (tasks[i] >= 0)
			fds[n++] = parents[i];
	return send_fds(sock, (char[]){ 'c', (char)k }, 2, fds, n);
}

/*
 * Off this thread's CPU, the init just cloned, when the launcher has work
 * left while the init sets up (the v1 cgroups, 0.25 ms): on this 2-CPU
 * machine the kernel queued the init on the launcher's own CPU in 63
 * starts of 100, where it waited for that work to end (its first
 * instruction came 0.26 ms after clone3() instead of 0.05 ms), while the
 * other CPU idled. The init takes back @cpus, the launcher's, once it has
 * read "go", so that nothing of the cage keeps the narrower set.
 */
static void
steer_init(pid_t pid, const cpu_set_t *cpus)
{
	cpu_set_t others = *cpus;
	int cpu = sched_getcpu();

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return;
	CPU_CLR(cpu, &others);
	if (CPU_COUNT(&others) > 0)
		(void)sched_setaffinity(pid, sizeof(others), &others);
}

/*
 * The BPF LSM (doc/lsm.md): the cage's processes register in its pinned
 * map under a fresh cage id, or, where it is not loaded (or this process
 * cannot open its map: rootless), the cage goes without it, as without a
 * cgroup limit: a CLIP_CAGE_MISSING_* bit and one line.
 */
static void
lsm_going_without(struct clip_cage *c, const char *why)
{
	c->lsm = false;
	c->missing |= CLIP_CAGE_MISSING_LSM;
	log_warning(c->ctx, "cage %s: the BPF LSM %s: going without it (doc/lsm.md)",
		    c->profile->name, why);
}

static void
lsm_missing(struct clip_cage *c)
{
	c->lsm = !test_hook_disabled("lsm-register") && lsm_active();
	if (!c->lsm)
		lsm_going_without(c, "is not loaded (clip_lsm_load())");
}

static int
cage_clone(struct clip_cage *c, int sock, int other, unsigned flags,
	   const struct cage_exec_args *first, const struct cage_sources *sources,
	   const struct cage_source_rules *rules, bool *into_cgroup)
{
	struct cage_init_args args = {
		.profile = c->profile,
		.sock = sock,
		.rootless = c->rootless,
		.sources = sources,
		.source_rules = *rules,
		.veth = c->profile->net_mode == CLIP_CAGE_NET_VETH,
		.netns = !test_hook_disabled("netns"),
		.private_inodes = !test_hook_disabled("private-inodes"),
		.die_with_parent = !(flags & CLIP_CAGE_START_REGISTER),
		.landlock_abi = c->landlock_abi,
		.first = first,
		.end_with_first = first && (flags & CLIP_CAGE_START_END_WITH_FIRST),
		.test_disable = test_hook_list(),
		.lsm_fd = -1,
	};
	struct clone_args ca = {
		.flags = CLONE_PIDFD | CAGE_NS_FLAGS,
		.pidfd = (uint64_t)(uintptr_t)&c->pidfd,
		.exit_signal = CAGE_EXIT_SIGNAL, /* out of reach of the caller's own reaper */
	};
	long pid;

	if (test_hook_disabled("netns"))
		ca.flags &= ~(uint64_t)CLONE_NEWNET;
	/* v1 limits: the launcher makes their cgroups while the init sets up. */
	args.steer = (c->cg.wanted & ~c->cg.done) &&
		     sched_getaffinity(0, sizeof(args.cpus), &args.cpus) == 0;
	*into_cgroup = c->cg.v2_fd >= 0;
	if (*into_cgroup) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)c->cg.v2_fd;
	}
	if (c->lsm) {
		args.lsm_fd = lsm_tasks_open();
		lsm_task_init(&args.lsm_task, c->lsm_id, c->profile->level);
		if (args.lsm_fd < 0)
			lsm_going_without(c, "is loaded, but its map cannot be opened (not root?)");
	}
	pid = cage_clone3(&ca);
	if (pid < 0 && *into_cgroup && errno != EPERM && errno != ENOSPC && errno != EUSERS) {
		/* A cgroup the kernel will not clone into: join it afterwards. */
		*into_cgroup = false;
		ca.flags &= ~CLONE_INTO_CGROUP;
		pid = cage_clone3(&ca);
	}
	if (pid == 0) {
		close(other);
		cage_init_main(&args);
	}
	if (args.lsm_fd >= 0)
		close(args.lsm_fd);
	if (pid < 0)
		return -errno;
	c->pidfd = cage_fd_above_stdio(c->pidfd);
	if (args.steer)
		steer_init((pid_t)pid, &args.cpus);
	return (int)pid;
}

static void
cage_kill_reap(struct clip_cage *c)
{
	siginfo_t si;

	(void)cage_cgroups_kill(&c->cg);
	(void)cage_pidfd_signal(c->pidfd, SIGKILL);
	(void)waitid(P_PIDFD, (id_t)c->pidfd, &si, CAGE_WAIT_FLAGS);
	close(c->pidfd);
	c->pidfd = -1;
}

/*
 * Measure=yes: the canonical profile into the TPM as "cage:NAME"
 * (doc/tpm.md), before any process of the cage exists. The message says
 * that the cage was not started, and why.
 */
static int
cage_measure(struct clip_cage *c, struct clip_error **reterr)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	_cleanup_free_ char *text = NULL;
	char what[sizeof("cage:") + CLIP_CAGE_NAME_MAX];
	int r;

	r = clip_cage_profile_format(c->profile, &text);
	if (r < 0)
		return r;
	snprintf(what, sizeof(what), "cage:%s", c->profile->name);
	r = tpm_measure(c->ctx, what, text, strlen(text), &e);
	if (r < 0)
		return error_set(reterr, r,
				 "cage %s not started: its profile says Measure=yes and its start "
				 "cannot be measured: %s",
				 c->profile->name, e ? clip_error_get_message(e) : strerror(-r));
	log_debug(c->ctx, "cage %s: measured into the TPM as %s", c->profile->name, what);
	return 0;
}

static int cage_stop(struct clip_cage *c, unsigned grace_ms, struct clip_error **reterr);

/*
 * What the kernel's Landlock cannot enforce (or a test-hooks build
 * switched off), as a missing cgroup limit: a CLIP_CAGE_MISSING_* bit
 * each, and one line.
 */
static void
landlock_missing(struct clip_cage *c)
{
	const unsigned f = cage_landlock_features(c->landlock_abi, test_hook_list());
	const char *why = NULL;

	if (!(f & CAGE_LL_NET))
		c->missing |= CLIP_CAGE_MISSING_LANDLOCK_NET;
	if (!(f & CAGE_LL_IOCTL))
		c->missing |= CLIP_CAGE_MISSING_LANDLOCK_IOCTL;
	if (!(f & CAGE_LL_SCOPE))
		c->missing |= CLIP_CAGE_MISSING_LANDLOCK_SCOPE;
	cage_audit_close(&c->audit);
	if (!(f & CAGE_LL_LOG))
		why = "they need Landlock ABI 7";
	else
		(void)cage_audit_open(&c->audit, &why);
	if (why)
		c->missing |= CLIP_CAGE_MISSING_LANDLOCK_LOG;
	if (c->missing & (CLIP_CAGE_MISSING_LANDLOCK_NET | CLIP_CAGE_MISSING_LANDLOCK_IOCTL |
			  CLIP_CAGE_MISSING_LANDLOCK_SCOPE))
		log_warning(c->ctx, "cage %s: Landlock ABI %d does not enforce:%s%s%s",
			    c->profile->name, c->landlock_abi,
			    (c->missing & CLIP_CAGE_MISSING_LANDLOCK_NET) ? " TCP ports" : "",
			    (c->missing & CLIP_CAGE_MISSING_LANDLOCK_IOCTL) ? " device ioctls" : "",
			    (c->missing & CLIP_CAGE_MISSING_LANDLOCK_SCOPE)
				    ? " abstract sockets and signals"
				    : "");
	if (why)
		log_info(c->ctx, "cage %s: Landlock's denials are not shown: %s", c->profile->name,
			 why);
}

static int
cage_start(struct clip_cage *c, unsigned flags, const struct clip_cage_spawn_opts *first_opts,
	   int *ret_pidfd, struct clip_error **reterr)
{
	struct cage_exec_args first_args, *first = NULL;
	static unsigned counter; /* atomic: filters start cages from worker threads */
	struct clip_cage_profile *p = c->profile;
	_cleanup_close_ int sock = -1;
	int sv[2], r, pid, first_pidfd = -1;
	char leaf[96], veth[IFNAMSIZ];
	int tasks[_CG_V1_MAX] = { -1, -1, -1 }, parents[_CG_V1_MAX] = { -1, -1, -1 };
	struct cage_sources sources;
	struct cage_source_rules rules;
	long long deadline;
	bool into_cgroup;

	r = cage_seccomp_compile(p, reterr);
	if (r < 0)
		return r;
	c->rootless = cage_rootless(c->ctx);
	if (p->net_mode == CLIP_CAGE_NET_VETH && c->rootless)
		return error_set(reterr, -EOPNOTSUPP,
				 "cage %s: a veth pair needs root mode (this context makes cages "
				 "rootless: clip_ctx_get_cage_mode())",
				 p->name);
	if (!c->rootless) {
		uint32_t base = cage_profile_uid_base(p);

		if (!cage_ids_mapped("/proc/self/uid_map", base, CAGE_UID_RANGE) ||
		    !cage_ids_mapped("/proc/self/gid_map", base, CAGE_UID_RANGE))
			return error_setf(reterr, -EPERM, -1,
					  "cage %s: its ids %u-%u (UidBase=%u) are not all mapped "
					  "in this user namespace (/proc/self/uid_map, gid_map); "
					  "give them to it, or make the cage rootless "
					  "(clip_ctx_set_cage_mode())",
					  p->name, base, base + CAGE_UID_RANGE - 1, base);
	}
	c->landlock_abi = cage_landlock_abi();
	if (p->landlock_min_abi && (unsigned)c->landlock_abi < p->landlock_min_abi)
		return error_setf(reterr, -EOPNOTSUPP, -1,
				  "cage %s: its profile requires Landlock ABI %u "
				  "(LandlockMinimumABI=), and this kernel has %s%.0d",
				  p->name, p->landlock_min_abi,
				  c->landlock_abi > 0 ? "ABI " : "no Landlock", c->landlock_abi);
	if (c->landlock_abi <= 0) {
		c->missing |= CLIP_CAGE_MISSING_LANDLOCK | CLIP_CAGE_MISSING_LANDLOCK_NET |
			      CLIP_CAGE_MISSING_LANDLOCK_IOCTL | CLIP_CAGE_MISSING_LANDLOCK_SCOPE |
			      CLIP_CAGE_MISSING_LANDLOCK_LOG;
		log_warning(c->ctx, "cage %s: the kernel has no Landlock; going without", p->name);
	} else
		landlock_missing(c);
	lsm_missing(c);
	if (first_opts) {
		r = cage_spawn_prepare(c, first_opts, &first_args, reterr);
		if (r < 0)
			return r;
		first = &first_args;
	}
	if (flags & CLIP_CAGE_START_REGISTER) {
		r = cage_registry_claim(c, reterr);
		if (r < 0)
			return r;
	}
	if (p->measure) {
		r = cage_measure(c, reterr);
		if (r < 0)
			return r;
	}

	snprintf(leaf, sizeof(leaf), "clip-%s-%d-%u", p->name, (int)getpid(),
		 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
	if (!test_hook_disabled("bind-writable")) {
		r = cage_sources_overlap(p, reterr);
		if (r < 0)
			return r;
	}
	rules = (struct cage_source_rules){
		.nofollow = !test_hook_disabled("bind-nofollow"),
		.writable = !test_hook_disabled("bind-writable"),
		.owners = !c->rootless,
		.base = cage_profile_uid_base(p),
	};
	/* Root mode: the sources are opened with the caller's credentials (cage-internal.h). */
	if (!c->rootless) {
		int index = -1, bad = 0;

		r = cage_sources_open(p, &rules, &sources, &index, &bad);
		if (r < 0)
			return cage_source_error(reterr, p, index, r, bad);
	}
	cage_cgroups_create_v2(c->ctx, &c->cg, leaf, &p->limits);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		r = error_set_errno(reterr, -errno, "%s: socketpair", p->name);
		if (!c->rootless)
			cage_sources_close(&sources);
		cage_cgroups_destroy(&c->cg);
		return r;
	}
	sock = sv[0];
	deadline = now_ms() + cage_profile_start_timeout_ms(p);
	pid = cage_clone(c, sv[1], sv[0], flags, first, c->rootless ? NULL : &sources, &rules,
			 &into_cgroup);
	close(sv[1]);
	if (!c->rootless)
		cage_sources_close(&sources); /* the init has its own copies */
	if (pid < 0) {
		cage_cgroups_destroy(&c->cg);
		if (pid == -EPERM || pid == -ENOSPC || pid == -EUSERS)
			return userns_error(pid, reterr);
		return error_set_errno(reterr, pid, "%s: cannot create the cage's init", p->name);
	}
	c->pid = pid;
	c->is_child = true;
	cage_audit_add_pid(&c->audit, pid);

	r = into_cgroup ? 0 : cage_cgroups_join_v2(&c->cg, pid);
	if (r < 0)
		error_set_errno(reterr, -EIO, "cannot move the cage into its cgroups");
	if (r >= 0) {
		r = write_id_maps(pid, c->rootless, cage_profile_uid_base(p));
		if (r < 0)
			error_set_errno(reterr, -EIO, "cannot write the cage's id maps");
	}
	if (r >= 0 && p->net_mode == CLIP_CAGE_NET_VETH && !test_hook_disabled("netns")) {
		snprintf(veth, sizeof(veth), "clipv%d", pid);
		r = cage_veth_create(veth, pid);
		if (r < 0)
			error_set_errno(reterr, -EIO, "cannot create the veth pair %s", veth);
	}
	/* MSG_NOSIGNAL: a child that died early must not kill the launcher with SIGPIPE. */
	if (r >= 0 && send(sock, "g", 1, MSG_NOSIGNAL) != 1)
		r = cage_send_failed(sock, c, first, -errno, "cannot wake the cage's init", reterr);
	/* Whether the kernel's audit is on, while the init sets up (cage_audit_check()). */
	if (r >= 0 && c->audit.fd >= 0) {
		const char *why = NULL;

		if (cage_audit_check(&c->audit, &why) < 0) {
			c->missing |= CLIP_CAGE_MISSING_LANDLOCK_LOG;
			log_info(c->ctx, "cage %s: Landlock's denials are not shown: %s", p->name,
				 why);
		}
	}
	/* The v1 cgroups while the init sets up; it joins them once done. */
	if (r >= 0) {
		c->missing |= cage_cgroups_create_v1(c->ctx, &c->cg, leaf, &p->limits);
		r = cage_cgroups_open_tasks(&c->cg, false, tasks);
		/* Without them (a rootless launcher, say) the init stays in the cage's. */
		if (r >= 0 && cage_cgroups_open_tasks(&c->cg, true, parents) < 0)
			cage_cgroups_close_tasks(parents);
		if (r < 0)
			error_set_errno(reterr, r, "cannot open the cage's cgroups");
		else if ((r = send_tasks(sock, tasks, parents)) < 0)
			r = cage_send_failed(sock, c, first, r, "cannot send the cage's cgroups",
					     reterr);
		cage_cgroups_close_tasks(tasks);
		cage_cgroups_close_tasks(parents);
	}
	if (r >= 0)
		r = cage_child_report(sock, c->rootless, p, first ? first->argv[0] : NULL, deadline,
				      first ? &first_pidfd : NULL, reterr);
	if (r < 0) {
		cage_kill_reap(c);
		cage_cgroups_destroy(&c->cg);
		/* A command that cannot be executed says so (as clip_cage_spawn()). */
		return r == -EPERM || r == -ETIMEDOUT || (first && (r == -ENOENT || r == -EACCES))
			       ? r
			       : -EIO;
	}
	c->start_time = cage_proc_start_time(pid);
	c->state = CLIP_CAGE_RUNNING;
	log_debug(c->ctx, "cage %s started: init pid %d%s", p->name, pid,
		  c->rootless ? ", rootless" : "");
	if (flags & CLIP_CAGE_START_REGISTER) {
		r = cage_registry_write(c, reterr);
		if (r < 0) {
			if (first_pidfd >= 0)
				close(first_pidfd);
			cage_kill_reap(c);
			cage_cgroups_destroy(&c->cg);
			c->state = CLIP_CAGE_STOPPED;
			return r;
		}
	}
	if (first) {
		r = cage_first_adopt(c, first_pidfd, ret_pidfd, reterr);
		if (r < 0) {
			cage_stop(c, 0, NULL);
			return r;
		}
		c->sock = cage_fd_above_stdio(sock); /* the first process's status comes on it */
		sock = -1;
	}
	return 0;
}

static int cage_wait(struct clip_cage *c, int timeout_ms);

/*
 * Whether @c may start: a new cage, or one that has ended, which starts
 * again as new (fresh namespaces, cgroups and init). Of the ended one only
 * the statuses of its processes stay, for clip_cage_wait_process(). 0, or
 * -EBUSY while it runs.
 */
static int
cage_startable(struct clip_cage *c, struct clip_error **reterr)
{
	struct pollfd pfd = { .fd = c->pidfd, .events = POLLIN };

	/* Ended by itself (its first process, with END_WITH_FIRST): reaped and cleaned first. */
	if (c->state == CLIP_CAGE_RUNNING && poll(&pfd, 1, 0) > 0)
		(void)cage_wait(c, -1);
	if (c->state == CLIP_CAGE_RUNNING)
		return error_set(reterr, -EBUSY,
				 "cage %s is running: stop it (clip_cage_stop()) before starting "
				 "it again",
				 c->profile->name);
	if (c->state == CLIP_CAGE_NEW)
		return 0;
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->pidfd = -1;
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
	cage_cgroups_forget(&c->cg);
	c->pid = 0;
	c->start_time = 0;
	c->is_child = false;
	c->registered = false;
	c->missing = 0;
	c->state = CLIP_CAGE_NEW;
	log_debug(c->ctx, "cage %s: starting again", c->profile->name);
	return 0;
}

CLIP_EXPORT int
clip_cage_start(struct clip_cage *c, unsigned flags, struct clip_error **reterr)
{
	int r;

	clip_assert_reterr(reterr);
	cage_assert_error(c, reterr);
	cage_assert_log_arg(
		c, (flags & ~CLIP_CAGE_START_REGISTER) == 0, reterr,
		"%s: flags 0x%x: only CLIP_CAGE_START_REGISTER (0x%x) is known%s", __func__, flags,
		CLIP_CAGE_START_REGISTER,
		flags & CLIP_CAGE_START_END_WITH_FIRST
			? "; CLIP_CAGE_START_END_WITH_FIRST needs clip_cage_start_spawn()"
			: "");
	r = cage_startable(c, reterr);
	if (r < 0)
		return api_return(r, reterr);

	return api_return(cage_start(c, flags, NULL, NULL, reterr), reterr);
}

CLIP_EXPORT int
clip_cage_start_spawn(struct clip_cage *c, unsigned flags, const struct clip_cage_spawn_opts *opts,
		      int *ret_pidfd, struct clip_error **reterr)
{
	struct clip_cage_spawn_opts o;
	struct cage_pty pty;
	int r, fds[64];

	clip_assert_reterr(reterr);
	cage_assert_error(c, reterr);
	cage_assert_log_arg(
		c, (flags & ~(CLIP_CAGE_START_REGISTER | CLIP_CAGE_START_END_WITH_FIRST)) == 0,
		reterr,
		"%s: flags 0x%x: only CLIP_CAGE_START_REGISTER and _END_WITH_FIRST (0x%x) are "
		"known",
		__func__, flags, CLIP_CAGE_START_REGISTER | CLIP_CAGE_START_END_WITH_FIRST);
	cage_assert_log_arg(c, opts, reterr, "%s: opts is NULL", __func__);
	cage_assert_log_arg(c, ret_pidfd, reterr, "%s: ret_pidfd is NULL", __func__);
	r = cage_spawn_opts_copy_in(c, &o, opts, reterr);
	if (r >= 0)
		r = cage_startable(c, reterr);
	if (r < 0)
		return api_return(r, reterr);

	r = cage_pty_setup(&o, fds, &pty, reterr);
	if (r >= 0)
		r = cage_start(c, flags, &o, ret_pidfd, reterr);
	cage_pty_finish(&pty, r);
	return api_return(r, reterr);
}

/* -- processes ------------------------------------------------------- */

static int
ns_of(pid_t pid, struct stat *st)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	return stat(path, st) < 0 ? -errno : 0;
}

/* The host pids in the cage's pid namespace, init first. */
static int
cage_pids(struct clip_cage *c, pid_t **ret, size_t *ret_n)
{
	_cleanup_free_ pid_t *pids = NULL;
	struct stat init_ns, st;
	size_t n = 0, allocated = 0;
	struct dirent *d;
	DIR *dir;
	int r;

	r = ns_of(c->pid, &init_ns);
	if (r < 0)
		return r == -ENOENT ? -ECHILD : r;
	dir = opendir("/proc");
	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		char *end;
		long pid = strtol(d->d_name, &end, 10);

		if (*end || pid <= 0 || ns_of((pid_t)pid, &st) < 0)
			continue;
		if (st.st_ino != init_ns.st_ino || st.st_dev != init_ns.st_dev)
			continue;
		if (n == allocated) {
			size_t k = allocated ? 2 * allocated : 64;
			pid_t *q = realloc(pids, k * sizeof(*q));

			if (!q) {
				closedir(dir);
				return -ENOMEM;
			}
			pids = q;
			allocated = k;
		}
		pids[n++] = (pid_t)pid;
		/* Init first. */
		if (pid == c->pid) {
			pids[n - 1] = pids[0];
			pids[0] = (pid_t)pid;
		}
	}
	closedir(dir);
	*ret = steal_ptr(pids);
	*ret_n = n;
	return 0;
}

/* A pidfd of @pid, checked (after opening) to still be in the cage. */
static int
cage_pidfd(struct clip_cage *c, pid_t pid)
{
	struct stat init_ns, st;
	int fd = cage_pidfd_open(pid);

	if (fd < 0)
		return -errno;
	if (ns_of(c->pid, &init_ns) < 0 || ns_of(pid, &st) < 0 || st.st_ino != init_ns.st_ino ||
	    st.st_dev != init_ns.st_dev) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

CLIP_EXPORT int
clip_cage_get_pids(struct clip_cage *c, int **ret, size_t *ret_n)
{
	pid_t *pids = NULL;
	size_t n = 0;
	int r;

	cage_assert_return(c, -EINVAL);
	clip_assert_return(ret && ret_n, -EINVAL);
	if (c->state != CLIP_CAGE_RUNNING)
		return -ECHILD;

	r = cage_pids(c, &pids, &n);
	if (r < 0)
		return r == -ENOMEM ? r : -ECHILD;
	*ret = pids;
	*ret_n = n;
	return 0;
}

/* Signal every process but init; the pidfds of those signalled into @fds, if given. */
static int
cage_signal(struct clip_cage *c, int sig, int **fds, size_t *n_fds)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0;
	int r, count = 0;

	r = cage_pids(c, &pids, &n);
	if (r < 0)
		return r;
	if (fds) {
		*fds = calloc(n ? n : 1, sizeof(int));
		if (!*fds)
			return -ENOMEM;
		*n_fds = 0;
	}
	for (size_t i = 1; i < n; i++) {
		int fd = cage_pidfd(c, pids[i]);

		if (fd < 0)
			continue;
		if (cage_pidfd_signal(fd, sig) == 0)
			count++;
		if (fds)
			(*fds)[(*n_fds)++] = fd;
		else
			close(fd);
	}
	return count;
}

CLIP_EXPORT int
clip_cage_signal(struct clip_cage *c, int sig)
{
	int r;

	cage_assert_return(c, -EINVAL);
	clip_assert_return(sig >= 0 && sig < NSIG, -EINVAL);
	if (c->state != CLIP_CAGE_RUNNING)
		return -ECHILD;

	r = cage_signal(c, sig, NULL, NULL);
	return r < 0 && r != -ENOMEM ? -ECHILD : r;
}

/* Until every process but init has exited, or the deadline. */
static void
wait_others(struct clip_cage *c, int *fds, size_t n, long long deadline)
{
	struct pollfd *pfd = calloc(n ? n : 1, sizeof(*pfd));

	if (!pfd)
		return;
	for (;;) {
		size_t alive = 0;
		long long left = deadline - now_ms();
		int k;

		cage_spawned_reap(c, false);
		for (size_t i = 0; i < n; i++)
			pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		if (poll(pfd, n, 0) < 0 && errno != EINTR)
			break;
		for (size_t i = 0; i < n; i++)
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				pfd[alive++] = pfd[i];
		if (alive == 0 || left <= 0)
			break;
		/* A signal (an init's SIGCHLD) does not cut the grace short. */
		k = poll(pfd, alive, (int)left);
		if (k == 0 || (k < 0 && errno != EINTR))
			break;
	}
	free(pfd);
}

static int
cage_wait(struct clip_cage *c, int timeout_ms)
{
	long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;

	if (c->state == CLIP_CAGE_NEW)
		return -ECHILD;
	if (c->state == CLIP_CAGE_STOPPED)
		return 0;
	for (;;) {
		_cleanup_free_ struct pollfd *pfd = calloc(c->n_spawned + 1, sizeof(*pfd));
		long long left = deadline < 0 ? -1 : deadline - now_ms();
		size_t n = 1;

		if (!pfd)
			return -ENOMEM;
		/*
		 * A process we spawned keeps its pid until we reap it, and the
		 * pid namespace's init does not finish dying before that: wait
		 * for the init and for those.
		 */
		cage_spawned_reap(c, false);
		pfd[0] = (struct pollfd){ .fd = c->pidfd, .events = POLLIN };
		for (size_t i = 0; i < c->n_spawned; i++)
			if (!c->spawned[i].reaped)
				pfd[n++] = (struct pollfd){ .fd = c->spawned[i].pidfd,
							    .events = POLLIN };
		if (poll(pfd, n, left < 0 ? (deadline < 0 ? -1 : 0) : (int)left) < 0 &&
		    errno != EINTR)
			return -ECHILD;
		if (pfd[0].revents)
			break;
		if (deadline >= 0 && now_ms() >= deadline)
			return -ENODATA;
	}
	if (c->is_child) {
		siginfo_t si;

		(void)waitid(P_PIDFD, (id_t)c->pidfd, &si, CAGE_WAIT_FLAGS);
	}
	cage_spawned_reap(c, false);
	/* What Landlock refused the cage, now that nothing of it runs. */
	cage_audit_drain(&c->audit, c);
	cage_audit_close(&c->audit);
	cage_cgroups_destroy(&c->cg);
	cage_registry_remove(c);
	c->state = CLIP_CAGE_STOPPED;
	log_debug(c->ctx, "cage %s ended", c->profile->name);
	return 0;
}

CLIP_EXPORT int
clip_cage_wait(struct clip_cage *c, int timeout_ms)
{
	cage_assert_return(c, -EINVAL);
	clip_assert_return(timeout_ms >= -1, -EINVAL);

	return cage_wait(c, timeout_ms);
}

static int
cage_stop(struct clip_cage *c, unsigned grace_ms, struct clip_error **reterr)
{
	_cleanup_free_ int *fds = NULL;
	size_t n = 0;
	int r;

	if (grace_ms > 0) {
		r = cage_signal(c, SIGTERM, &fds, &n);
		if (r >= 0) {
			wait_others(c, fds, n, now_ms() + grace_ms);
			for (size_t i = 0; i < n; i++)
				close(fds[i]);
		}
	}
	/* The whole tree: the cgroup, and the init, whose death empties the namespace. */
	(void)cage_cgroups_kill(&c->cg);
	if (cage_pidfd_signal(c->pidfd, SIGKILL) < 0 && errno != ESRCH)
		return error_set_errno(reterr, -EPERM, "cannot kill the cage's init");
	/*
	 * The init left the v1 cgroups (cage-child.c, cgroups_leave()): those
	 * already empty go while it dies, the others once it is dead.
	 */
	cage_cgroups_remove_v1(&c->cg);
	return cage_wait(c, -1);
}

CLIP_EXPORT int
clip_cage_stop(struct clip_cage *c, unsigned grace_ms, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_error(c, reterr);
	if (c->state != CLIP_CAGE_RUNNING)
		return api_return(
			error_set(reterr, -ECHILD, "cage %s is not running (%s)", c->profile->name,
				  c->state == CLIP_CAGE_NEW ? "never started" : "stopped"),
			reterr);

	return api_return(cage_stop(c, grace_ms, reterr), reterr);
}

CLIP_EXPORT int
clip_cage_get_state(struct clip_cage *c)
{
	clip_assert_return(c, -EINVAL);
	if (c->state == CLIP_CAGE_RUNNING) {
		struct pollfd pfd = { .fd = c->pidfd, .events = POLLIN };

		if (poll(&pfd, 1, 0) > 0)
			return CLIP_CAGE_STOPPED;
	}
	return c->state;
}

CLIP_EXPORT int
clip_cage_get_fd(const struct clip_cage *c)
{
	clip_assert_return(c, -EINVAL);
	return c->pidfd >= 0 ? c->pidfd : -ECHILD;
}

CLIP_EXPORT int
clip_cage_set_denial_fn(struct clip_cage *c, clip_cage_denial_fn fn, void *userdata)
{
	clip_assert_return(c, -EINVAL);
	c->denial_fn = fn;
	c->denial_userdata = userdata;
	return 0;
}

CLIP_EXPORT int
clip_cage_get_denial_fd(const struct clip_cage *c)
{
	clip_assert_return(c, -EINVAL);
	if (c->state != CLIP_CAGE_RUNNING)
		return -ECHILD;
	return c->audit.fd >= 0 ? c->audit.fd : -ENODATA;
}

CLIP_EXPORT int
clip_cage_read_denials(struct clip_cage *c)
{
	int fd = clip_cage_get_denial_fd(c);

	if (fd < 0)
		return fd;
	return (int)cage_audit_drain(&c->audit, c);
}

CLIP_EXPORT const struct clip_cage_profile *
clip_cage_get_profile(const struct clip_cage *c)
{
	return c ? c->profile : NULL;
}

CLIP_EXPORT int
clip_cage_get_missing(const struct clip_cage *c)
{
	clip_assert_return(c, -EINVAL);
	return (int)c->missing;
}

int
cage_lsm_allow_socket(struct clip_cage *c, int fd)
{
	return c->lsm_id ? lsm_socket_allow(fd, c->lsm_id) : -EOPNOTSUPP;
}
