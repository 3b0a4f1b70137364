/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Cages: the lifecycle. doc/cage.md explains the design; cage-child.c is
 * what runs inside.
 *
 * start: clone3(CLONE_PIDFD | all namespaces, CLONE_INTO_CGROUP where
 *        cgroup2 holds a limit) of an init, which waits until the parent
 *        has written its id maps, builds the file system while the parent
 *        makes the v1 cgroups, joins them, reports ready, drops
 *        everything and reaps; all by StartTimeoutSec=, or the start fails.
 * start with a first process (clip_cage_start_spawn(), what `clipctl cage
 *        run` does): init forks it once set up, before dropping its own
 *        rights, leaves the v1 cgroups to it, hands its pidfd back with
 *        "ready", and later its status (then exits, with
 *        CLIP_CAGE_START_END_WITH_FIRST).
 * spawn: a helper forked from the caller joins the cgroups, setns()es
 *        into all the init's namespaces through its pidfd, and clone()s
 *        with CLONE_PARENT the process that restricts itself and executes;
 *        so the process is the caller's child, a pidfd of it is race-free.
 * stop:  SIGTERM to every process but init, wait on their pidfds until
 *        the grace period ends, then cgroup.kill (where there is a cgroup2
 *        cgroup) and SIGKILL to the init, which takes the whole pid
 *        namespace with it; the v1 cgroups go while it dies.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <dirent.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
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
#include <time.h>
#include <unistd.h>

#include <clip/cage.h>

#include "cage-internal.h"
#include "base/cleanup.h"
#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/log.h"
#include "tpm/tpm.h"
#include "base/util.h"

#define CAGE_NS_FLAGS \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET)
#define SPAWN_FDS_MAX 64
#define SPAWN_ARGS_MAX 4096
#define REGISTRY_DIR "cages"
#define REGISTRY_FILE_MAX 8192

struct spawned {
	pid_t pid; /* 0 once the caller has collected the status */
	int pidfd;
	int given_fd; /* the number of the pidfd the caller received */
	struct stat given; /* its inode: unique per process with pidfs (Linux 6.9) */
	int status;
	bool reaped;
	bool via_init; /* the first process: init's child, its status comes on the socket */
};

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

static const char *
test_disable(void)
{
#ifdef CLIP_CAGE_TEST_HOOKS
	/* Only in a build made to show that the escape suite fails without a protection. */
	return secure_getenv("CLIP_CAGE_TEST_DISABLE");
#else
	return NULL;
#endif
}

static bool
test_disabled(const char *what)
{
	const char *t = test_disable();

	return t && strstr(t, what);
}

CLIP_EXPORT int
clip_cage_new(struct clip_cage **ret, struct clip_ctx *ctx, struct clip_cage_profile *profile,
	      struct clip_error **reterr)
{
	struct clip_cage *c;

	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, ret && profile, api_return(-EINVAL, reterr));

	c = calloc(1, sizeof(*c));
	if (!c)
		return api_return(-ENOMEM, reterr);
	c->n_ref = 1;
	c->creator = getpid();
	c->ctx = clip_ctx_ref(ctx);
	c->profile = clip_cage_profile_ref(profile);
	c->pidfd = -1;
	c->sock = -1;
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

static unsigned long long
proc_start_time(pid_t pid)
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

static int
pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int
pidfd_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* -- veth, through rtnetlink ----------------------------------------- */

struct nlbuf {
	char data[512];
	size_t len;
};

static struct rtattr *
nl_put(struct nlbuf *b, unsigned short type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)(b->data + NLMSG_ALIGN(b->len));

	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	if (data)
		memcpy(RTA_DATA(a), data, len);
	b->len = NLMSG_ALIGN(b->len) + RTA_ALIGN(a->rta_len);
	return a;
}

static void
nl_end(struct nlbuf *b, struct rtattr *nest)
{
	nest->rta_len = (unsigned short)(b->data + b->len - (char *)nest);
}

static int
veth_create(const char *host_name, pid_t pid)
{
	struct nlbuf b = { .len = NLMSG_LENGTH(sizeof(struct ifinfomsg)) };
	struct nlmsghdr *h = (struct nlmsghdr *)b.data;
	struct rtattr *info, *data, *peer;
	struct ifinfomsg peer_ifi = { .ifi_family = AF_UNSPEC };
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	char reply[1024];
	uint32_t ns_pid = (uint32_t)pid;
	_cleanup_close_ int s = -1;
	struct ifreq ifr = { 0 };
	ssize_t n;

	memset(b.data, 0, sizeof(b.data));
	h->nlmsg_type = RTM_NEWLINK;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
	((struct ifinfomsg *)NLMSG_DATA(h))->ifi_family = AF_UNSPEC;
	nl_put(&b, IFLA_IFNAME, host_name, strlen(host_name) + 1);
	info = nl_put(&b, IFLA_LINKINFO, NULL, 0);
	nl_put(&b, IFLA_INFO_KIND, "veth", 5);
	data = nl_put(&b, IFLA_INFO_DATA, NULL, 0);
	peer = nl_put(&b, VETH_INFO_PEER, &peer_ifi, sizeof(peer_ifi));
	nl_put(&b, IFLA_IFNAME, "eth0", 5);
	nl_put(&b, IFLA_NET_NS_PID, &ns_pid, sizeof(ns_pid));
	nl_end(&b, peer);
	nl_end(&b, data);
	nl_end(&b, info);
	h->nlmsg_len = (uint32_t)b.len;

	s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (s < 0)
		return -errno;
	if (sendto(s, b.data, b.len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	n = recv(s, reply, sizeof(reply), 0);
	if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)))
		return n < 0 ? -errno : -EIO;
	h = (struct nlmsghdr *)reply;
	if (h->nlmsg_type == NLMSG_ERROR && ((struct nlmsgerr *)NLMSG_DATA(h))->error < 0)
		return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
	/* The host's end up; its address and routes are the administrator's. */
	close(s);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", host_name);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return -errno;
	return 0;
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

/* -ETIMEDOUT: @what of @p's cage did not end within its StartTimeoutSec=. */
static int
timeout_error(struct clip_error **reterr, const struct clip_cage_profile *p, const char *what)
{
	return error_setf(reterr, -ETIMEDOUT, -1,
			  "%s: %s did not end within %u s (StartTimeoutSec=)", p->name, what,
			  cage_profile_start_timeout_ms(p) / 1000);
}

/*
 * The report of a child of @p's cage, by @deadline_ms (now_ms(); one in
 * the past reads only a report already there): 0 when ready, else -EIO
 * (or -EPERM, -ETIMEDOUT) with what failed; a passed fd to @ret_fd.
 */
static int
child_report(int fd, bool rootless, const struct clip_cage_profile *p, long long deadline_ms,
	     int *ret_fd, struct clip_error **reterr)
{
	const char *what = p->name;
	struct cage_msg m;
	int passed = -1, r;
	char buf[128];
	size_t n_fds;
	ssize_t n;

	r = wait_readable(fd, deadline_ms);
	if (r == -ETIMEDOUT)
		return timeout_error(reterr, p, "the set-up");
	if (r < 0)
		return error_set_errno(reterr, r, "%s: cannot wait for the set-up", what);
	n = recv_fds(fd, &m, sizeof(m), &passed, 1, &n_fds);
	if (n == 0)
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
	if (rootless && m.error == EPERM && m.step <= STEP_PIVOT_ROOT)
		return userns_error(-EPERM, reterr);
	if (m.step == STEP_EXEC && (m.error == ENOENT || m.error == EACCES || m.error == EPERM))
		return error_setf(reterr, -m.error, -1, "%s: cannot execute: %s", what,
				  strerror_r(m.error, buf, sizeof(buf)));
	return error_setf(reterr, -EIO, -1, "%s: failed while %s: %s", what,
			  cage_step_names[m.step], strerror_r(m.error, buf, sizeof(buf)));
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

static int
cage_clone(struct clip_cage *c, int sock, int other, unsigned flags,
	   const struct cage_exec_args *first, bool *into_cgroup)
{
	struct cage_init_args args = {
		.profile = c->profile,
		.sock = sock,
		.rootless = c->rootless,
		.veth = c->profile->net_mode == CLIP_CAGE_NET_VETH,
		.netns = !test_disabled("netns"),
		.die_with_parent = !(flags & CLIP_CAGE_START_REGISTER),
		.landlock_abi = c->landlock_abi,
		.first = first,
		.end_with_first = first && (flags & CLIP_CAGE_START_END_WITH_FIRST),
	};
	struct clone_args ca = {
		.flags = CLONE_PIDFD | CAGE_NS_FLAGS,
		.pidfd = (uint64_t)(uintptr_t)&c->pidfd,
		.exit_signal = SIGCHLD,
	};
	long pid;

	if (test_disabled("netns"))
		ca.flags &= ~(uint64_t)CLONE_NEWNET;
	/* v1 limits: the launcher makes their cgroups while the init sets up. */
	args.steer = (c->cg.wanted & ~c->cg.done) &&
		     sched_getaffinity(0, sizeof(args.cpus), &args.cpus) == 0;
	*into_cgroup = c->cg.v2_fd >= 0;
	if (*into_cgroup) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)c->cg.v2_fd;
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
	if (pid < 0)
		return -errno;
	if (args.steer)
		steer_init((pid_t)pid, &args.cpus);
	return (int)pid;
}

static void
cage_kill_reap(struct clip_cage *c)
{
	siginfo_t si;

	(void)cage_cgroups_kill(&c->cg);
	(void)pidfd_signal(c->pidfd, SIGKILL);
	(void)waitid(P_PIDFD, (id_t)c->pidfd, &si, WEXITED);
	close(c->pidfd);
	c->pidfd = -1;
}

static int registry_write(struct clip_cage *c, struct clip_error **reterr);
static int registry_claim(struct clip_cage *c, struct clip_error **reterr);

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

static int first_adopt(struct clip_cage *c, int pidfd, int *ret_pidfd, struct clip_error **reterr);
static int cage_stop(struct clip_cage *c, unsigned grace_ms, struct clip_error **reterr);
static int spawn_prepare(struct clip_cage *c, const struct clip_cage_spawn_opts *o,
			 struct cage_exec_args *args, struct clip_error **reterr);

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
	long long deadline;
	bool into_cgroup;

	r = cage_seccomp_compile(p, reterr);
	if (r < 0)
		return r;
	c->rootless = geteuid() != 0;
	if (p->net_mode == CLIP_CAGE_NET_VETH && c->rootless)
		return error_set(reterr, -EOPNOTSUPP,
				 "cage %s: a veth pair needs root in the host's network namespace",
				 p->name);
	c->landlock_abi = cage_landlock_abi();
	if (c->landlock_abi <= 0) {
		c->missing |= CLIP_CAGE_MISSING_LANDLOCK;
		log_warning(c->ctx, "cage %s: the kernel has no Landlock; going without", p->name);
	}
	if (first_opts) {
		r = spawn_prepare(c, first_opts, &first_args, reterr);
		if (r < 0)
			return r;
		first = &first_args;
	}
	if (flags & CLIP_CAGE_START_REGISTER) {
		r = registry_claim(c, reterr);
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
	cage_cgroups_create_v2(c->ctx, &c->cg, leaf, &p->limits);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		cage_cgroups_destroy(&c->cg);
		return error_set_errno(reterr, -errno, "socketpair");
	}
	sock = sv[0];
	deadline = now_ms() + cage_profile_start_timeout_ms(p);
	pid = cage_clone(c, sv[1], sv[0], flags, first, &into_cgroup);
	close(sv[1]);
	if (pid < 0) {
		cage_cgroups_destroy(&c->cg);
		if (pid == -EPERM || pid == -ENOSPC || pid == -EUSERS)
			return userns_error(pid, reterr);
		return error_set_errno(reterr, pid, "cannot create the cage's init");
	}
	c->pid = pid;
	c->is_child = true;

	r = into_cgroup ? 0 : cage_cgroups_join_v2(&c->cg, pid);
	if (r < 0)
		error_set_errno(reterr, -EIO, "cannot move the cage into its cgroups");
	if (r >= 0) {
		r = write_id_maps(pid, c->rootless, cage_profile_uid_base(p));
		if (r < 0)
			error_set_errno(reterr, -EIO, "cannot write the cage's id maps");
	}
	if (r >= 0 && p->net_mode == CLIP_CAGE_NET_VETH && !test_disabled("netns")) {
		snprintf(veth, sizeof(veth), "clipv%d", pid);
		r = veth_create(veth, pid);
		if (r < 0)
			error_set_errno(reterr, -EIO, "cannot create the veth pair %s", veth);
	}
	/* MSG_NOSIGNAL: a child that died early must not kill the launcher with SIGPIPE. */
	if (r >= 0 && send(sock, "g", 1, MSG_NOSIGNAL) != 1)
		r = error_set_errno(reterr, -EIO, "cannot wake the cage's init");
	/* The v1 cgroups while the init sets up; it joins them once done. */
	if (r >= 0) {
		c->missing |= cage_cgroups_create_v1(c->ctx, &c->cg, leaf, &p->limits);
		r = cage_cgroups_open_tasks(&c->cg, false, tasks);
		/* Without them (a rootless launcher, say) the init stays in the cage's. */
		if (r >= 0 && cage_cgroups_open_tasks(&c->cg, true, parents) < 0)
			cage_cgroups_close_tasks(parents);
		if (r < 0)
			error_set_errno(reterr, r, "cannot open the cage's cgroups");
		else if (send_tasks(sock, tasks, parents) < 0)
			r = error_set_errno(reterr, -EIO, "cannot send the cage's cgroups");
		cage_cgroups_close_tasks(tasks);
		cage_cgroups_close_tasks(parents);
	}
	if (r >= 0)
		r = child_report(sock, c->rootless, p, deadline, first ? &first_pidfd : NULL,
				 reterr);
	if (r < 0) {
		cage_kill_reap(c);
		cage_cgroups_destroy(&c->cg);
		/* A command that cannot be executed says so (as clip_cage_spawn()). */
		return r == -EPERM || r == -ETIMEDOUT || (first && (r == -ENOENT || r == -EACCES))
			       ? r
			       : -EIO;
	}
	c->start_time = proc_start_time(pid);
	c->state = CLIP_CAGE_RUNNING;
	log_debug(c->ctx, "cage %s started: init pid %d%s", p->name, pid,
		  c->rootless ? ", rootless" : "");
	if (flags & CLIP_CAGE_START_REGISTER) {
		r = registry_write(c, reterr);
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
		r = first_adopt(c, first_pidfd, ret_pidfd, reterr);
		if (r < 0) {
			cage_stop(c, 0, NULL);
			return r;
		}
		c->sock = sock; /* the first process's status comes on it */
		sock = -1;
	}
	return 0;
}

CLIP_EXPORT int
clip_cage_start(struct clip_cage *c, unsigned flags, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_return(c, api_return(-EINVAL, reterr));
	ctx_assert_log_return(c->ctx, (flags & ~CLIP_CAGE_START_REGISTER) == 0,
			      api_return(-EINVAL, reterr));
	ctx_assert_log_return(c->ctx, c->state == CLIP_CAGE_NEW, api_return(-EINVAL, reterr));

	return api_return(cage_start(c, flags, NULL, NULL, reterr), reterr);
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
	int fd = pidfd_open_(pid);

	if (fd < 0)
		return -errno;
	if (ns_of(c->pid, &init_ns) < 0 || ns_of(pid, &st) < 0 || st.st_ino != init_ns.st_ino ||
	    st.st_dev != init_ns.st_dev) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

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

/* Reap the processes we spawned that have exited (all of them when @block). */
static void
spawned_reap(struct clip_cage *c, bool block)
{
	for (size_t i = 0; i < c->n_spawned; i++) {
		struct spawned *s = &c->spawned[i];
		siginfo_t si = { 0 };

		if (s->reaped)
			continue;
		if (s->via_init) {
			first_collect(c, s, block);
			continue;
		}
		if (waitid(P_PIDFD, (id_t)s->pidfd, &si, WEXITED | (block ? 0 : WNOHANG)) < 0 ||
		    si.si_pid == 0)
			continue;
		s->reaped = true;
		s->status = exit_status(&si);
		close(s->pidfd);
		s->pidfd = -1;
	}
}

static int
spawned_add(struct clip_cage *c, pid_t pid)
{
	struct spawned *s;
	int fd;

	/* Forget those whose status the caller has collected. */
	for (size_t i = 0; i < c->n_spawned; i++)
		if (c->spawned[i].reaped && c->spawned[i].pid == 0)
			c->spawned[i--] = c->spawned[--c->n_spawned];
	fd = pidfd_open_(pid);
	if (fd < 0)
		return -errno;
	s = realloc(c->spawned, (c->n_spawned + 1) * sizeof(*s));
	if (!s) {
		close(fd);
		return -ENOMEM;
	}
	c->spawned = s;
	c->spawned[c->n_spawned++] = (struct spawned){ .pid = pid, .pidfd = fd };
	return 0;
}

/* The process just added failed before executing: reap it, forget it. */
static void
spawned_drop_last(struct clip_cage *c)
{
	struct spawned *s = &c->spawned[c->n_spawned - 1];
	siginfo_t si;

	(void)waitid(P_PIDFD, (id_t)s->pidfd, &si, WEXITED);
	close(s->pidfd);
	c->n_spawned--;
}

static int
spawn_check(const struct clip_cage_spawn_opts *o)
{
	size_t n = 0;

	if (!o->argv || !o->argv[0] || !o->argv[0][0])
		return -EINVAL;
	for (size_t i = 0; o->argv[i]; i++)
		if (++n > SPAWN_ARGS_MAX)
			return -E2BIG;
	for (size_t i = 0; o->envp && o->envp[i]; i++)
		if (++n > 2 * SPAWN_ARGS_MAX)
			return -E2BIG;
	if (o->n_fds > SPAWN_FDS_MAX || (o->n_fds && !o->fds))
		return -EINVAL;
	for (uint32_t i = 0; i < o->n_fds; i++)
		if (o->fds[i] < 0 || fcntl(o->fds[i], F_GETFD) < 0)
			return -EBADF;
	if (o->cwd && o->cwd[0] != '/')
		return -EINVAL;
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
	if (fd >= 0 && pidfd_signal(c->pidfd, 0) < 0) {
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
	struct clone_args ca = { .flags = CLONE_PARENT };
	struct cage_exec_args a = *args;
	int v2 = c->cg.v2_fd, cgns;
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
	cage_msg_send(err_fd, MSG_PID, 0, 0, (int)pid);
	_exit(0);
}

/* Checked spawn options (of any known size) into what the process needs. */
static int
spawn_prepare(struct clip_cage *c, const struct clip_cage_spawn_opts *o,
	      struct cage_exec_args *args, struct clip_error **reterr)
{
	struct clip_cage_spawn_opts opts = { .size = sizeof(opts) };
	int r;

	memcpy(&opts, o, o->size < sizeof(opts) ? o->size : sizeof(opts));
	r = spawn_check(&opts);
	if (r < 0)
		return error_set(reterr, r, "bad spawn options (argv, fds, cwd)");
	if (c->rootless && (opts.uid != 0 || opts.gid != 0))
		return error_set(reterr, -EINVAL, "a rootless cage maps only uid and gid 0");
	if (opts.uid >= CAGE_UID_RANGE || opts.gid >= CAGE_UID_RANGE)
		return error_set(reterr, -EINVAL, "uid and gid in a cage are below %u",
				 CAGE_UID_RANGE);
	r = cage_seccomp_compile(c->profile, reterr);
	if (r < 0)
		return r;
	*args = (struct cage_exec_args){
		.profile = c->profile,
		.argv = opts.argv,
		.envp = opts.envp,
		.fds = opts.fds,
		.n_fds = opts.n_fds,
		.cwd = opts.cwd,
		.uid = opts.uid,
		.gid = opts.gid,
		.rootless = c->rootless,
		.err_fd = -1,
		.cgroupns_fd = -1,
		.landlock_abi = c->landlock_abi,
		.landlock_ruleset = -1,
		.test_disable = test_disable(),
	};
	return 0;
}

static int
cage_spawn(struct clip_cage *c, const struct clip_cage_spawn_opts *o, int *ret_pidfd,
	   struct clip_error **reterr)
{
	long long deadline = now_ms() + cage_profile_start_timeout_ms(c->profile);
	struct cage_exec_args args;
	_cleanup_close_ int rfd = -1;
	struct cage_msg m;
	pid_t helper, pid = 0;
	int pipefd[2], status, r = 0;
	ssize_t n;

	r = spawn_prepare(c, o, &args, reterr);
	if (r < 0)
		return r;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	rfd = pipefd[0];
	args.err_fd = pipefd[1];
	helper = fork();
	if (helper < 0) {
		close(pipefd[1]);
		return error_set_errno(reterr, -errno, "fork");
	}
	if (helper == 0) {
		close(rfd);
		spawn_helper(c, &args, pipefd[1]);
	}
	close(pipefd[1]);
	while (waitpid(helper, &status, 0) < 0 && errno == EINTR)
		;
	/* The pid first, then nothing (executed) or an error; by the deadline. */
	while ((n = wait_readable(rfd, deadline)) == 0 &&
	       (n = read(rfd, &m, sizeof(m))) == sizeof(m) && m.type == MSG_PID)
		pid = m.value;
	if (pid > 0)
		r = spawned_add(c, pid);
	if (n == -ETIMEDOUT) {
		/* Our child (CLONE_PARENT), not reaped: its pid is still its own. */
		if (pid > 0)
			(void)kill(pid, SIGKILL);
		if (pid > 0 && r >= 0)
			spawned_drop_last(c);
		else if (pid > 0)
			(void)waitpid(pid, &status, 0);
		return timeout_error(reterr, c->profile, "the process's set-up");
	}
	if (n == sizeof(m) && m.type == MSG_ERROR) {
		/* Put the message back in front of the reader. */
		int s[2];

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s) == 0) {
			cage_msg_send(s[1], m.type, m.step, m.error, m.value);
			close(s[1]);
			r = child_report(s[0], c->rootless, c->profile, -1, NULL, reterr);
			close(s[0]);
		} else
			r = -EIO;
		if (pid > 0)
			spawned_drop_last(c);
		return r;
	}
	if (pid <= 0)
		return error_set(reterr, -EIO, "%s: the spawn helper failed", c->profile->name);
	if (r < 0)
		return r;
	*ret_pidfd = pidfd_open_(pid);
	if (*ret_pidfd < 0)
		return error_set_errno(reterr, -errno, "pidfd_open");
	c->spawned[c->n_spawned - 1].given_fd = *ret_pidfd;
	(void)fstat(*ret_pidfd, &c->spawned[c->n_spawned - 1].given);
	return 0;
}

CLIP_EXPORT int
clip_cage_spawn(struct clip_cage *c, const struct clip_cage_spawn_opts *opts, int *ret_pidfd,
		struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_return(c, api_return(-EINVAL, reterr));
	ctx_assert_log_return(c->ctx, opts && ret_pidfd, api_return(-EINVAL, reterr));
	ctx_assert_log_return(c->ctx, opts->size >= offsetof(struct clip_cage_spawn_opts, cwd),
			      api_return(-EINVAL, reterr));
	if (c->state != CLIP_CAGE_RUNNING)
		return api_return(error_set(reterr, -ECHILD, "the cage is not running"), reterr);

	return api_return(cage_spawn(c, opts, ret_pidfd, reterr), reterr);
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

/* The first process, from its pidfd that init passed: ours to wait for, a copy the caller's. */
static int
first_adopt(struct clip_cage *c, int pidfd, int *ret_pidfd, struct clip_error **reterr)
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
	*s = (struct spawned){
		.pid = pid > 0 ? pid : -1, .pidfd = pidfd, .given_fd = given, .via_init = true
	};
	(void)fstat(given, &s->given);
	*ret_pidfd = given;
	return 0;
}

CLIP_EXPORT int
clip_cage_start_spawn(struct clip_cage *c, unsigned flags, const struct clip_cage_spawn_opts *opts,
		      int *ret_pidfd, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_return(c, api_return(-EINVAL, reterr));
	ctx_assert_log_return(
		c->ctx, (flags & ~(CLIP_CAGE_START_REGISTER | CLIP_CAGE_START_END_WITH_FIRST)) == 0,
		api_return(-EINVAL, reterr));
	ctx_assert_log_return(c->ctx, c->state == CLIP_CAGE_NEW, api_return(-EINVAL, reterr));
	ctx_assert_log_return(c->ctx, opts && ret_pidfd, api_return(-EINVAL, reterr));
	ctx_assert_log_return(c->ctx, opts->size >= offsetof(struct clip_cage_spawn_opts, cwd),
			      api_return(-EINVAL, reterr));

	return api_return(cage_start(c, flags, opts, ret_pidfd, reterr), reterr);
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
		if (!s->reaped) {
			siginfo_t si = { 0 };

			while (waitid(P_PIDFD, (id_t)s->pidfd, &si, WEXITED) < 0)
				if (errno != EINTR)
					return -ECHILD;
			s->reaped = true;
			s->status = exit_status(&si);
			close(s->pidfd);
			s->pidfd = -1;
		}
		*ret_status = s->status;
		s->pid = 0; /* collected */
		return 0;
	}
	return -ECHILD;
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
		if (pidfd_signal(fd, sig) == 0)
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

		spawned_reap(c, false);
		for (size_t i = 0; i < n; i++)
			pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		if (poll(pfd, n, 0) < 0)
			break;
		for (size_t i = 0; i < n; i++)
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				pfd[alive++] = pfd[i];
		if (alive == 0 || left <= 0)
			break;
		if (poll(pfd, alive, (int)left) <= 0)
			break;
	}
	free(pfd);
}

static void registry_remove(struct clip_cage *c);

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
		spawned_reap(c, false);
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

		(void)waitid(P_PIDFD, (id_t)c->pidfd, &si, WEXITED);
	}
	spawned_reap(c, false);
	cage_cgroups_destroy(&c->cg);
	registry_remove(c);
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
	if (pidfd_signal(c->pidfd, SIGKILL) < 0 && errno != ESRCH)
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
	cage_assert_return(c, api_return(-EINVAL, reterr));
	if (c->state != CLIP_CAGE_RUNNING)
		return api_return(error_set(reterr, -ECHILD, "the cage is not running"), reterr);

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

/* -- the registry of long-lived cages -------------------------------- */

static int
registry_dir(struct clip_ctx *ctx, bool create, struct clip_error **reterr)
{
	_cleanup_close_ int state = -1;
	int fd;

	state = ctx_open_state_dir(ctx, create, reterr);
	if (state == -ENOENT && !create)
		return -ENODATA;
	if (state < 0)
		return state;
	if (create && mkdirat(state, REGISTRY_DIR, 0700) < 0 && errno != EEXIST)
		return error_set_errno(reterr, -errno, "cannot create the cage registry");
	fd = openat(state, REGISTRY_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT)
		return -ENODATA;
	if (fd < 0)
		return error_set_errno(reterr, -errno, "cannot open the cage registry");
	return fd;
}

static int
read_small(int dir, const char *name, char *buf, size_t size)
{
	_cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	size_t n = 0;
	ssize_t k;

	if (fd < 0)
		return -errno;
	while (n < size - 1 && (k = read(fd, buf + n, size - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = '\0';
	return (int)n;
}

/* Write @name atomically; with @exclusive, fail with -EEXIST when it exists. */
static int
write_replace(int dir, const char *name, const char *text, bool exclusive)
{
	char tmp[NAME_MAX];
	_cleanup_close_ int fd = -1;
	size_t n = strlen(text);

	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, text, n) != (ssize_t)n)
		return -errno;
	if (renameat2(dir, tmp, dir, name, exclusive ? RENAME_NOREPLACE : 0) < 0) {
		int r = -errno;

		(void)unlinkat(dir, tmp, 0);
		return r;
	}
	return 0;
}

struct entry {
	pid_t pid;
	unsigned long long start;
	bool rootless;
	int landlock_abi;
	struct cage_cgroups cg;
};

static int
entry_parse(char *untrusted, struct entry *e)
{
	char *save = NULL;

	*e = (struct entry){ .cg.v2_fd = -1 };
	for (char *l = strtok_r(untrusted, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(l, '='), **dst = NULL;

		if (!eq)
			return -EBADMSG;
		*eq++ = '\0';
		if (strcmp(l, "pid") == 0)
			e->pid = (pid_t)strtol(eq, NULL, 10);
		else if (strcmp(l, "start") == 0)
			e->start = strtoull(eq, NULL, 10);
		else if (strcmp(l, "rootless") == 0)
			e->rootless = strcmp(eq, "1") == 0;
		else if (strcmp(l, "landlock") == 0)
			e->landlock_abi = (int)strtol(eq, NULL, 10);
		else if (strcmp(l, "cgroup2") == 0)
			dst = &e->cg.v2;
		else if (strcmp(l, "cgroup-memory") == 0)
			dst = &e->cg.v1[CG_V1_MEMORY];
		else if (strcmp(l, "cgroup-pids") == 0)
			dst = &e->cg.v1[CG_V1_PIDS];
		else if (strcmp(l, "cgroup-cpu") == 0)
			dst = &e->cg.v1[CG_V1_CPU];
		else
			return -EBADMSG;
		/* Only directories under the cgroup file systems. */
		if (dst && (strncmp(eq, "/sys/fs/cgroup/", 15) != 0 || strstr(eq, "/..") || *dst))
			return -EBADMSG;
		if (dst && !(*dst = strdup(eq)))
			return -ENOMEM;
	}
	return e->pid > 0 && e->start > 0 ? 0 : -EBADMSG;
}

/* A pidfd of the registered init when it is still the same process, else -ENODATA. */
static int
entry_pidfd(const struct entry *e)
{
	int fd = pidfd_open_(e->pid);

	if (fd < 0)
		return -ENODATA;
	/* Checked after opening: the pidfd cannot move to a recycled pid. */
	if (proc_start_time(e->pid) != e->start || pidfd_signal(fd, 0) < 0) {
		close(fd);
		return -ENODATA;
	}
	return fd;
}

static int
entry_load(int dir, const char *name, struct entry *e)
{
	char file[NAME_MAX], buf[REGISTRY_FILE_MAX];
	int r;

	*e = (struct entry){ .cg.v2_fd = -1 };
	snprintf(file, sizeof(file), "%s.run", name);
	r = read_small(dir, file, buf, sizeof(buf));
	if (r < 0)
		return r == -ENOENT ? -ENODATA : r;
	return entry_parse(buf, e);
}

static void
entry_unlink(int dir, const char *name)
{
	char file[NAME_MAX];

	snprintf(file, sizeof(file), "%s.run", name);
	(void)unlinkat(dir, file, 0);
	snprintf(file, sizeof(file), "%s.cage", name);
	(void)unlinkat(dir, file, 0);
}

/* The name must be free: a live entry is refused, a stale one removed. */
static int
registry_claim(struct clip_cage *c, struct clip_error **reterr)
{
	_cleanup_close_ int dir = -1;
	struct entry e;
	int r, fd;

	dir = registry_dir(c->ctx, true, reterr);
	if (dir < 0)
		return dir;
	r = entry_load(dir, c->profile->name, &e);
	if (r == -ENODATA)
		return 0;
	if (r == 0) {
		fd = entry_pidfd(&e);
		if (fd >= 0) {
			close(fd);
			cage_cgroups_forget(&e.cg);
			return error_set(reterr, -EEXIST, "a cage named %s is running",
					 c->profile->name);
		}
	}
	/* A stale entry: its cgroups go too (rmdir fails on any still in use). */
	cage_cgroups_destroy(&e.cg);
	entry_unlink(dir, c->profile->name);
	return 0;
}

static int
registry_write(struct clip_cage *c, struct clip_error **reterr)
{
	static const char *const keys[_CG_V1_MAX] = { "cgroup-memory", "cgroup-pids",
						      "cgroup-cpu" };
	_cleanup_close_ int dir = -1;
	_cleanup_free_ char *profile = NULL, *text = NULL;
	char file[NAME_MAX];
	size_t size = 0;
	FILE *f;
	int r;

	dir = registry_dir(c->ctx, true, reterr);
	if (dir < 0)
		return dir;
	r = clip_cage_profile_format(c->profile, &profile);
	if (r < 0)
		return r;
	f = open_memstream(&text, &size);
	if (!f)
		return -ENOMEM;
	fprintf(f, "pid=%d\nstart=%llu\nrootless=%d\nlandlock=%d\n", (int)c->pid, c->start_time,
		c->rootless, c->landlock_abi);
	if (c->cg.v2)
		fprintf(f, "cgroup2=%s\n", c->cg.v2);
	for (int i = 0; i < _CG_V1_MAX; i++)
		if (c->cg.v1[i])
			fprintf(f, "%s=%s\n", keys[i], c->cg.v1[i]);
	if (fclose(f) != 0)
		return -ENOMEM;
	/*
	 * The .run file first, never over another one: it claims the name
	 * against a concurrent start. An attach in between finds no .cage
	 * yet and fails; it never finds another cage's profile.
	 */
	snprintf(file, sizeof(file), "%s.run", c->profile->name);
	r = write_replace(dir, file, text, true);
	if (r >= 0) {
		snprintf(file, sizeof(file), "%s.cage", c->profile->name);
		r = write_replace(dir, file, profile, false);
		if (r < 0)
			entry_unlink(dir, c->profile->name);
	}
	if (r == -EEXIST)
		return error_set(reterr, -EEXIST, "a cage named %s is running", c->profile->name);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot write the cage registry");
	c->registered = true;
	return 0;
}

static void
registry_remove(struct clip_cage *c)
{
	_cleanup_close_ int dir = -1;
	struct entry e;

	if (!c->registered)
		return;
	dir = registry_dir(c->ctx, false, NULL);
	if (dir < 0)
		return;
	/* Only our own entry: another cage of the name may have replaced it. */
	if (entry_load(dir, c->profile->name, &e) == 0 && e.pid == c->pid &&
	    e.start == c->start_time)
		entry_unlink(dir, c->profile->name);
	cage_cgroups_forget(&e.cg);
	c->registered = false;
}

static int
cage_attach(struct clip_cage **ret, struct clip_ctx *ctx, const char *name,
	    struct clip_error **reterr)
{
	_cleanup_(clip_cage_profile_unrefp) struct clip_cage_profile *p = NULL;
	_cleanup_(clip_cage_unrefp) struct clip_cage *c = NULL;
	_cleanup_close_ int dir = -1;
	_cleanup_free_ char *buf = NULL;
	char file[NAME_MAX];
	struct entry e;
	int r, fd;

	dir = registry_dir(ctx, false, reterr);
	if (dir == -ENODATA)
		return error_set(reterr, -ENODATA, "no cage named %s is running", name);
	if (dir < 0)
		return dir;
	r = entry_load(dir, name, &e);
	if (r == -ENODATA)
		return error_set(reterr, -ENODATA, "no cage named %s is running", name);
	if (r < 0) {
		cage_cgroups_forget(&e.cg);
		return error_set(reterr, r == -ENOMEM ? r : -EBADMSG,
				 "the registry entry of cage %s is corrupt", name);
	}
	fd = entry_pidfd(&e);
	if (fd < 0) {
		cage_cgroups_destroy(&e.cg);
		entry_unlink(dir, name);
		return error_set(reterr, -ENODATA, "no cage named %s is running", name);
	}
	buf = malloc(CLIP_CAGE_PROFILE_SIZE_MAX + 1);
	snprintf(file, sizeof(file), "%s.cage", name);
	r = buf ? read_small(dir, file, buf, CLIP_CAGE_PROFILE_SIZE_MAX + 1) : -ENOMEM;
	if (r >= 0)
		r = clip_cage_profile_parse(&p, file, buf, (size_t)r, reterr);
	if (r >= 0)
		r = clip_cage_new(&c, ctx, p, reterr);
	if (r < 0) {
		close(fd);
		cage_cgroups_forget(&e.cg);
		return r == -ENOMEM ? r
				    : error_set(reterr, -EBADMSG, "cage %s: bad registry", name);
	}
	c->pidfd = fd;
	c->pid = e.pid;
	c->start_time = e.start;
	c->rootless = e.rootless;
	c->landlock_abi = e.landlock_abi;
	c->cg = e.cg;
	c->state = CLIP_CAGE_RUNNING;
	c->registered = true;
	*ret = steal_ptr(c);
	return 0;
}

CLIP_EXPORT int
clip_cage_attach(struct clip_cage **ret, struct clip_ctx *ctx, const char *name,
		 struct clip_error **reterr)
{
	struct clip_cage_profile *probe = NULL;

	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, ret && name, api_return(-EINVAL, reterr));
	/* The same rule as profile names: it becomes a file name. */
	if (clip_cage_profile_new(&probe, name) < 0)
		return api_return(error_set(reterr, -EINVAL, "bad cage name"), reterr);
	clip_cage_profile_unref(probe);

	return api_return(cage_attach(ret, ctx, name, reterr), reterr);
}

static int
cage_list(struct clip_ctx *ctx, char ***ret, struct clip_error **reterr)
{
	_cleanup_close_ int dir = -1;
	char **names = NULL;
	size_t n = 0;
	struct dirent *d;
	DIR *dp;
	int fd, r = 0;

	dir = registry_dir(ctx, false, reterr);
	if (dir == -ENODATA) {
		names = calloc(1, sizeof(char *));
		if (!names)
			return -ENOMEM;
		*ret = names;
		return 0;
	}
	if (dir < 0)
		return dir;
	fd = dup(dir);
	dp = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dp) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	names = calloc(1, sizeof(char *));
	while (names && (d = readdir(dp))) {
		size_t len = strlen(d->d_name);
		char name[NAME_MAX];
		struct entry e;
		char **q;

		if (len <= 4 || strcmp(d->d_name + len - 4, ".run") != 0 || d->d_name[0] == '.')
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(len - 4), d->d_name);
		if (entry_load(dir, name, &e) < 0 || (fd = entry_pidfd(&e)) < 0) {
			cage_cgroups_destroy(&e.cg);
			entry_unlink(dir, name);
			continue;
		}
		close(fd);
		cage_cgroups_forget(&e.cg);
		q = realloc(names, (n + 2) * sizeof(char *));
		if (q)
			names = q;
		if (!q || !(names[n] = strdup(name))) {
			names[n] = NULL;
			r = -ENOMEM;
			break;
		}
		names[++n] = NULL;
	}
	closedir(dp);
	if (!names || r < 0) {
		for (size_t i = 0; names && i < n; i++)
			free(names[i]);
		free(names);
		return -ENOMEM;
	}
	*ret = names;
	return (int)n;
}

CLIP_EXPORT int
clip_cage_list(struct clip_ctx *ctx, char ***ret, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, ret, api_return(-EINVAL, reterr));

	return api_return(cage_list(ctx, ret, reterr), reterr);
}
