/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cage's side of clone(): the init that builds the cage's file system
 * and the processes spawned into it. doc/cage.md gives the order and the
 * reasons for it. Only system calls here: the parent prepared everything.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <linux/seccomp.h>

#include <cap-ng.h>

#include "cage-internal.h"
#include "base/test-hooks.h"
#include "base/util.h"

/* Newer than the headers of Debian 12 (Linux 6.1). */
#ifndef SECBIT_EXEC_RESTRICT_FILE
#define SECBIT_EXEC_RESTRICT_FILE (1u << 8)
#define SECBIT_EXEC_RESTRICT_FILE_LOCKED (1u << 9)
#define SECBIT_EXEC_DENY_INTERACTIVE (1u << 10)
#define SECBIT_EXEC_DENY_INTERACTIVE_LOCKED (1u << 11)
#endif
#define SECBITS_BASE 0x2fu /* NOROOT, NO_SETUID_FIXUP and their locks, KEEP_CAPS_LOCKED */
#define SECBITS_KEEP_CAPS_LOCKED (1u << 5)

#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_EXECUTE (1ull << 0)
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_REMOVE_DIR (1ull << 4)
#define LL_FS_REMOVE_FILE (1ull << 5)
#define LL_FS_MAKE_CHAR (1ull << 6)
#define LL_FS_MAKE_DIR (1ull << 7)
#define LL_FS_MAKE_REG (1ull << 8)
#define LL_FS_MAKE_SOCK (1ull << 9)
#define LL_FS_MAKE_FIFO (1ull << 10)
#define LL_FS_MAKE_BLOCK (1ull << 11)
#define LL_FS_MAKE_SYM (1ull << 12)
#define LL_FS_REFER (1ull << 13) /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14) /* ABI 3 */
/* Newer than the headers of Debian 12 (Landlock ABI 3): linux/landlock.h of Linux 6.15. */
#define LL_FS_IOCTL_DEV (1ull << 15) /* ABI 5 */
#define LL_RULE_NET_PORT 2 /* ABI 4 */
#define LL_NET_BIND_TCP (1ull << 0)
#define LL_NET_CONNECT_TCP (1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ull << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ull << 1)
#define LL_RESTRICT_SELF_LOG_NEW_EXEC_ON (1u << 1) /* ABI 7 */

/* The first 8 bytes up to ABI 3, 16 from ABI 4, all from ABI 6: the kernel takes the size. */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

#define STAGING "/tmp"
/* Host directories bound read-only when the profile has no Root=. */
static const char *const host_dirs[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
};
static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };

const char *const cage_step_names[_STEP_MAX] = {
	[STEP_NONE] = "none",
	[STEP_SYNC] = "waiting for the parent",
	[STEP_IDS] = "switching to the cage's ids",
	[STEP_HOSTNAME] = "setting the host name",
	[STEP_NETWORK] = "setting up the network",
	[STEP_MOUNT_PRIVATE] = "making the mounts private",
	[STEP_MOUNT_SOURCES] = "opening the bind sources",
	[STEP_MOUNT_ROOT] = "mounting the root",
	[STEP_MOUNT_BINDS] = "mounting the binds",
	[STEP_MOUNT_PROC] = "mounting /proc",
	[STEP_MOUNT_DEV] = "populating /dev",
	[STEP_MOUNT_TMP] = "mounting /tmp",
	[STEP_PIVOT_ROOT] = "pivot_root",
	[STEP_SESSION] = "starting a session",
	[STEP_FDS] = "arranging the fds",
	[STEP_CHDIR] = "changing directory",
	[STEP_SECUREBITS] = "setting the securebits",
	[STEP_CAPABILITIES] = "dropping capabilities",
	[STEP_NO_NEW_PRIVS] = "setting no_new_privs",
	[STEP_LANDLOCK] = "applying Landlock",
	[STEP_SECCOMP] = "loading the seccomp filter",
	[STEP_CGROUP] = "joining the cage's cgroups",
	[STEP_SETNS] = "entering the cage's namespaces",
	[STEP_FORK] = "forking into the cage",
	[STEP_EXEC] = "executing the command",
	[STEP_LSM] = "registering with the BPF LSM",
};

void
cage_msg_send(int fd, int type, int step, int error, int value)
{
	struct cage_msg m = { .type = type, .step = step, .error = error, .value = value };
	ssize_t n;

	do
		n = write(fd, &m, sizeof(m));
	while (n < 0 && errno == EINTR);
}

_Noreturn void
cage_child_fail(int fd, enum cage_step step, int error)
{
	cage_msg_send(fd, MSG_ERROR, step, error > 0 ? error : EIO, 0);
	_exit(127);
}

#define CHECK(step, expr) \
	do { \
		if ((expr) < 0) \
			cage_child_fail(fail_fd, step, errno); \
	} while (0)

/* -- network --------------------------------------------------------- */

static int
if_up(int sock, const char *name)
{
	struct ifreq ifr = { 0 };

	strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
	if (ioctl(sock, SIOCGIFFLAGS, &ifr) < 0)
		return -1;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(sock, SIOCSIFFLAGS, &ifr);
}

static int
if_address(int sock, const char *name, uint32_t addr_be, unsigned prefix)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;

	strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = addr_be;
	if (ioctl(sock, SIOCSIFADDR, &ifr) < 0)
		return -1;
	sin->sin_addr.s_addr = htonl(prefix ? ~0u << (32 - prefix) : 0);
	return ioctl(sock, SIOCSIFNETMASK, &ifr);
}

static int
network_setup(const struct clip_cage_profile *p)
{
	int s, r = 0;

	if (p->net_mode == CLIP_CAGE_NET_NONE)
		return 0;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	r = if_up(s, "lo");
	if (r == 0 && p->net_mode == CLIP_CAGE_NET_VETH) {
		r = if_address(s, "eth0", p->addr_be, p->prefix);
		if (r == 0)
			r = if_up(s, "eth0");
	}
	close(s);
	return r;
}

/* -- mounts ---------------------------------------------------------- */

/*
 * @path and its missing parents, which get @mode too. The directory itself
 * first: in the staging tree its parent nearly always exists, and one
 * system call is then all it costs.
 */
static int
mkdir_p(char *path, mode_t mode)
{
	char *slash;
	int r;

	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	slash = strrchr(path, '/');
	if (errno != ENOENT || !slash || slash == path)
		return -1;
	*slash = '\0';
	r = mkdir_p(path, mode);
	*slash = '/';
	if (r < 0)
		return -1;
	return mkdir(path, mode) == 0 || errno == EEXIST ? 0 : -1;
}

/* An empty file or directory at @path to mount a clone of @fd on. */
static int
make_mountpoint(char *path, int fd)
{
	struct stat st;
	char *slash;
	int f;

	if (fstat(fd, &st) < 0)
		return -1;
	if (S_ISDIR(st.st_mode))
		return mkdir_p(path, 0755);
	slash = strrchr(path, '/');
	*slash = '\0';
	f = slash == path ? 0 : mkdir_p(path, 0755);
	*slash = '/';
	if (f < 0)
		return -1;
	f = open(path, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (f < 0)
		return errno == EEXIST ? 0 : -1;
	close(f);
	return 0;
}

static int
set_attr(int fd, const char *path, unsigned flags, uint64_t attr)
{
	struct mount_attr a = { .attr_set = attr, .propagation = MS_PRIVATE };

	return mount_setattr(fd, path, flags, &a, sizeof(a));
}

/* Attach a detached tree at STAGING/@target with @attr. */
static int
attach(int tree, const char *target, uint64_t attr)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), STAGING "%s", target) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (set_attr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, attr) < 0)
		return -1;
	if (make_mountpoint(path, tree) < 0)
		return -1;
	return move_mount(tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH);
}

/*
 * A read-only overlay of the tree attached at @path, mounted over it, so
 * that the cage's files there are inodes of its own: a lock (flock(),
 * POSIX or OFD), a lease or an inotify watch taken on them is on the
 * overlay's inode, which no other cage holds, and no longer a way to
 * signal between cages through the host's shared inodes
 * (doc/covert-channels.md). The tree was attached read-only: the overlay
 * reads through a clone of it, which then updates no access time another
 * cage could read. Not the detached tree itself: in root mode the launcher
 * cloned it, in the host's namespaces, and the kernel refuses (EPERM) it
 * as a layer of the cage's overlay. Overlayfs wants two lower layers without
 * an upper one; the second is @empty, an empty directory. The layers go by
 * fd ("lowerdir+", Linux 6.13): no path is resolved again.
 */
static int
private_tree(const char *path, int empty)
{
	int fs, lower, mnt = -1, r = -1;

	lower = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lower < 0)
		return -1;
	fs = fsopen("overlay", FSOPEN_CLOEXEC);
	if (fs >= 0 && fsconfig(fs, FSCONFIG_SET_FD, "lowerdir+", NULL, lower) == 0 &&
	    fsconfig(fs, FSCONFIG_SET_FD, "lowerdir+", NULL, empty) == 0 &&
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		mnt = fsmount(fs, FSMOUNT_CLOEXEC,
			      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (mnt >= 0)
		r = move_mount(mnt, "", lower, "",
			       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	if (fs >= 0)
		close(fs);
	if (mnt >= 0)
		close(mnt);
	close(lower);
	return r;
}

static int
mount_tmpfs(const char *target, unsigned long flags, const char *options)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), STAGING "%s", target);
	if (mkdir_p(path, 0755) < 0)
		return -1;
	return mount("tmpfs", path, "tmpfs", flags, options);
}

_Static_assert(ELEMENTSOF(host_dirs) == CAGE_HOST_DIRS, "cage_sources.host");

#define SOURCE_ROOT SOURCE_INDEX_ROOT
#define SOURCE_DATA SOURCE_INDEX_DATA
#define SOURCE_MOUNTS SOURCE_INDEX_MOUNTS

const char *
cage_source_path(const struct clip_cage_profile *p, int index)
{
	if (index >= 0 && index < SOURCE_ROOT)
		return host_dirs[index];
	if (index == SOURCE_ROOT)
		return p->root;
	if (index == SOURCE_DATA)
		return p->data_dir;
	if (index >= SOURCE_MOUNTS && (size_t)(index - SOURCE_MOUNTS) < p->n_mounts)
		return p->mounts[index - SOURCE_MOUNTS].source;
	return NULL;
}

static void
fd_drop(int *fd)
{
	closep(fd);
	*fd = -1;
}

void
cage_sources_close(struct cage_sources *s)
{
	for (size_t i = 0; i < CAGE_HOST_DIRS; i++)
		fd_drop(&s->host[i]);
	fd_drop(&s->root);
	fd_drop(&s->data);
	for (size_t i = 0; i < CLIP_CAGE_BINDS_MAX; i++)
		fd_drop(&s->mounts[i]);
}

/*
 * Whether the cage could replace @entry, an entry of directory @dir (both
 * stat'ed): @dir is the cage's (its owner is one of the cage's uids, who
 * may chmod it), or writable by a group of the cage's or by everyone
 * without the sticky bit, or with it where the cage owns @entry. @owners:
 * whether ownership says anything, that is in root mode, where the cage's
 * uids are its own range; rootless, the cage's uid is the caller's, whose
 * directories its other processes write anyway (cage-internal.h).
 */
static bool
source_swappable(const struct stat *dir, const struct stat *entry, bool owners, uint32_t base)
{
#define CAGE_ID(id) (owners && (uint32_t)(id) >= base && (uint32_t)(id)-base < CAGE_UID_RANGE)
	bool writable =
		(dir->st_mode & S_IWOTH) || (CAGE_ID(dir->st_gid) && (dir->st_mode & S_IWGRP));

	if (CAGE_ID(dir->st_uid))
		return true;
	if (!(dir->st_mode & S_ISVTX))
		return writable;
	return writable && CAGE_ID(entry->st_uid);
#undef CAGE_ID
}

/*
 * @path (absolute, normalised: cage-profile.c) opened as O_PATH one
 * component at a time with openat2(RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS): a symbolic link anywhere fails with ELOOP, and
 * no path is resolved twice. Each directory on the way is checked before
 * its entry is taken (source_swappable(): EPERM). On failure,
 * @ret_bad gets the length of the prefix of @path at fault.
 */
static int
source_walk(const char *path, bool owners, uint32_t base, bool nofollow, bool writable,
	    int *ret_bad)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = nofollow ? RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
						    : 0 };
	struct stat dir, entry;
	const char *c = path + 1;
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	*ret_bad = 1;
	if (fd < 0 || fstat(fd, &dir) < 0)
		goto fail;
	while (*c) {
		size_t n = strcspn(c, "/");
		char name[NAME_MAX + 1];
		int next;

		if (n > NAME_MAX) {
			errno = ENAMETOOLONG;
			goto fail;
		}
		memcpy(name, c, n);
		name[n] = '\0';
		*ret_bad = (int)(c - path + n);
		next = (int)syscall(SYS_openat2, fd, name, &how, sizeof(how));
		if (next < 0)
			goto fail;
		close(fd);
		fd = next;
		if (fstat(fd, &entry) < 0)
			goto fail;
		if (writable && source_swappable(&dir, &entry, owners, base)) {
			/* The directory holding it is at fault: "/" or the prefix before the name. */
			*ret_bad = c - path > 1 ? (int)(c - path - 1) : 1;
			errno = EPERM;
			goto fail;
		}
		dir = entry;
		c += n;
		if (*c == '/')
			c++;
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static int
source_open(int *fd, const char *path, int index, const struct cage_source_rules *rules,
	    int *ret_index, int *ret_bad)
{
	int e, walked = source_walk(path, rules->owners, rules->base, rules->nofollow,
				    rules->writable, ret_bad);

	if (walked >= 0) {
		*fd = open_tree(walked, "",
				OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
		e = errno;
		close(walked);
		if (*fd >= 0)
			return 0;
		errno = e;
		*ret_bad = (int)strlen(path);
	}
	*ret_index = index;
	return -errno;
}

int
cage_sources_open(const struct clip_cage_profile *p, const struct cage_source_rules *rules,
		  struct cage_sources *s, int *ret_index, int *ret_bad)
{
	int r = 0;

	s->root = s->data = -1;
	for (size_t i = 0; i < CAGE_HOST_DIRS; i++)
		s->host[i] = -1;
	for (size_t i = 0; i < CLIP_CAGE_BINDS_MAX; i++)
		s->mounts[i] = -1;
	for (size_t i = 0; i < CAGE_HOST_DIRS && r >= 0; i++) {
		ssize_t n;

		s->host_link[i][0] = '\0';
		if (p->root)
			continue;
		/* Merged /usr: /bin -> usr/bin is copied as a link, not bound. */
		n = readlink(host_dirs[i], s->host_link[i], sizeof(s->host_link[i]) - 1);
		if (n > 0) {
			s->host_link[i][n] = '\0';
			continue;
		}
		r = source_open(&s->host[i], host_dirs[i], (int)i, rules, ret_index, ret_bad);
		if (r == -ENOENT) /* /lib32 and the like exist on some hosts only */
			r = 0;
	}
	if (r >= 0 && p->root)
		r = source_open(&s->root, p->root, SOURCE_ROOT, rules, ret_index, ret_bad);
	if (r >= 0 && p->data_dir)
		r = source_open(&s->data, p->data_dir, SOURCE_DATA, rules, ret_index, ret_bad);
	for (size_t i = 0; i < p->n_mounts && r >= 0; i++)
		if (p->mounts[i].source)
			r = source_open(&s->mounts[i], p->mounts[i].source, SOURCE_MOUNTS + (int)i,
					rules, ret_index, ret_bad);
	if (r < 0)
		cage_sources_close(s);
	return r;
}

static int
mount_proc(void)
{
	static const char *const ro[] = { "sys", "sysrq-trigger", "irq", "bus", "fs" };
	static const char *const masked[] = { "kcore", "keys", "timer_list", "sched_debug",
					      "kallsyms" };
	char path[PATH_MAX];

	if (mkdir_p((char[]){ STAGING "/proc" }, 0555) < 0)
		return -1;
	if (mount("proc", STAGING "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -1;
	for (size_t i = 0; i < ELEMENTSOF(ro); i++) {
		snprintf(path, sizeof(path), STAGING "/proc/%s", ro[i]);
		if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) < 0) {
			if (errno == ENOENT)
				continue;
			return -1;
		}
		if (set_attr(AT_FDCWD, path, AT_RECURSIVE, MOUNT_ATTR_RDONLY) < 0)
			return -1;
	}
	for (size_t i = 0; i < ELEMENTSOF(masked); i++) {
		snprintf(path, sizeof(path), STAGING "/proc/%s", masked[i]);
		if (mount("/dev/null", path, NULL, MS_BIND, NULL) < 0 && errno != ENOENT)
			return -1;
	}
	return 0;
}

/*
 * /dev: its own small tmpfs under a Root= tree; else a directory of the
 * root tmpfs, which ends read-only too (one file system less to mount and
 * to tear down).
 */
static int
mount_dev(bool own)
{
	static const char *const links[][2] = {
		{ "/proc/self/fd", "fd" },
		{ "/proc/self/fd/0", "stdin" },
		{ "/proc/self/fd/1", "stdout" },
		{ "/proc/self/fd/2", "stderr" },
	};
	char path[PATH_MAX], host[64];

	if (own &&
	    mount_tmpfs("/dev", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64") < 0)
		return -1;
	if (!own && mkdir(STAGING "/dev", 0755) < 0)
		return -1;
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
		int fd;

		snprintf(path, sizeof(path), STAGING "/dev/%s", dev_nodes[i]);
		snprintf(host, sizeof(host), "/dev/%s", dev_nodes[i]);
		fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0666);
		if (fd < 0)
			return -1;
		close(fd);
		if (mount(host, path, NULL, MS_BIND, NULL) < 0)
			return -1;
	}
	for (size_t i = 0; i < ELEMENTSOF(links); i++) {
		snprintf(path, sizeof(path), STAGING "/dev/%s", links[i][1]);
		if (symlink(links[i][0], path) < 0)
			return -1;
	}
	if (mount_tmpfs("/dev/shm", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777") < 0)
		return -1;
	return own ? set_attr(AT_FDCWD, STAGING "/dev", 0, MOUNT_ATTR_RDONLY) : 0;
}

static void
mounts_setup(const struct clip_cage_profile *p, const struct cage_sources *given,
	     bool private_inodes, const struct cage_source_rules *rules, int fail_fd)
{
	const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	const uint64_t rw = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	const struct cage_mount *sorted[CLIP_CAGE_BINDS_MAX];
	struct cage_sources s;
	char path[PATH_MAX];
	int r, index = -1, bad = 0;

	CHECK(STEP_MOUNT_PRIVATE, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	/* Every source is a detached tree before anything is mounted over it. */
	if (given)
		s = *given;
	else if ((r = cage_sources_open(p, rules, &s, &index, &bad)) < 0) {
		struct cage_msg m = { .type = MSG_ERROR,
				      .step = STEP_MOUNT_SOURCES,
				      .error = -r,
				      .value = index,
				      .detail = bad };

		(void)!write(fail_fd, &m, sizeof(m));
		_exit(127);
	}

	if (p->root) {
		CHECK(STEP_MOUNT_ROOT, set_attr(s.root, "", AT_EMPTY_PATH | AT_RECURSIVE, ro));
		CHECK(STEP_MOUNT_ROOT,
		      move_mount(s.root, "", AT_FDCWD, STAGING, MOVE_MOUNT_F_EMPTY_PATH));
	} else {
		int empty = -1;

		CHECK(STEP_MOUNT_ROOT, mount("tmpfs", STAGING, "tmpfs", MS_NOSUID | MS_NODEV,
					     "mode=0755,size=64k,nr_inodes=256"));
		/* Empty for ever: /run's tmpfs covers it, and the root ends read-only. */
		CHECK(STEP_MOUNT_ROOT, mkdir_p((char[]){ STAGING "/run" }, 0755));
		if (private_inodes)
			CHECK(STEP_MOUNT_ROOT,
			      empty = open(STAGING "/run", O_PATH | O_DIRECTORY | O_CLOEXEC));
		for (size_t i = 0; i < ELEMENTSOF(host_dirs); i++) {
			snprintf(path, sizeof(path), STAGING "%s", host_dirs[i]);
			if (s.host_link[i][0]) {
				CHECK(STEP_MOUNT_ROOT, symlink(s.host_link[i], path));
				continue;
			}
			if (s.host[i] < 0)
				continue;
			CHECK(STEP_MOUNT_ROOT, attach(s.host[i], host_dirs[i], ro));
			/*
			 * A kernel without overlayfs or its layers by fd (before
			 * 6.13) answers ENODEV or EINVAL: the host's tree stays as
			 * it is, and so does the channel (doc/covert-channels.md).
			 */
			if (empty >= 0 && private_tree(path, empty) < 0 && errno != ENODEV &&
			    errno != EINVAL)
				cage_child_fail(fail_fd, STEP_MOUNT_ROOT, errno);
		}
		if (empty >= 0)
			close(empty);
	}

	/* In a user namespace, proc mounts only while a full /proc is visible. */
	CHECK(STEP_MOUNT_PROC, mount_proc());
	CHECK(STEP_MOUNT_DEV, mount_dev(p->root != NULL));
	CHECK(STEP_MOUNT_TMP,
	      mount_tmpfs("/tmp", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=25%"));
	if (!p->root)
		CHECK(STEP_MOUNT_TMP,
		      mount_tmpfs("/run", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=1m"));
	if (s.data >= 0)
		CHECK(STEP_MOUNT_BINDS, attach(s.data, "/data", rw));

	/* Parents before children, whatever the profile's order. */
	cage_profile_sorted_mounts(p, sorted);
	for (size_t i = 0; i < p->n_mounts; i++) {
		const struct cage_mount *m = sorted[i];
		size_t k = (size_t)(m - p->mounts);

		if (!m->source)
			CHECK(STEP_MOUNT_BINDS,
			      mount_tmpfs(m->target, MS_NOSUID | MS_NODEV | MS_NOEXEC,
					  "mode=0755"));
		else
			CHECK(STEP_MOUNT_BINDS, attach(s.mounts[k], m->target, m->rw ? rw : ro));
	}

	CHECK(STEP_PIVOT_ROOT, chdir(STAGING));
	CHECK(STEP_PIVOT_ROOT, syscall(SYS_pivot_root, ".", "."));
	CHECK(STEP_PIVOT_ROOT, umount2(".", MNT_DETACH));
	CHECK(STEP_PIVOT_ROOT, chdir("/"));
	if (!p->root)
		CHECK(STEP_PIVOT_ROOT, set_attr(AT_FDCWD, "/", 0, MOUNT_ATTR_RDONLY));
}

/* -- process restrictions -------------------------------------------- */

int
cage_landlock_abi(void)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);

	return abi < 0 ? 0 : (int)abi;
}

static int
landlock_rule_fd(int ruleset, int fd, uint64_t access)
{
	struct ll_path_beneath_attr a = { .allowed_access = access, .parent_fd = fd };

	return syscall(__NR_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &a, 0) < 0 ? -1 : 0;
}

static int
landlock_rule(int ruleset, const char *path, uint64_t access, uint64_t handled)
{
	/* What the kernel accepts on a file that is not a directory (a bound file or socket). */
	const uint64_t file = LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE |
			      LL_FS_IOCTL_DEV;
	int fd, r;
	struct stat st;

	/* Nothing of it handled (IOCTL_DEV before ABI 5): no rule, which the kernel would refuse. */
	if ((access & handled) == 0)
		return 0;
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	r = fstat(fd, &st);
	if (r == 0 && (access & handled & (S_ISDIR(st.st_mode) ? ~UINT64_C(0) : file)) != 0)
		r = landlock_rule_fd(ruleset, fd,
				     access & handled &
					     (S_ISDIR(st.st_mode) ? ~UINT64_C(0) : file));
	close(fd);
	return r;
}

/*
 * What of the ABIs after 3 a ruleset uses: the kernel's ABI, less what a
 * test-hooks build switches off (@test: CLIP_TEST_DISABLE), so that each
 * part can be shown to be the guard (tests/escape) and the ABI 3 ruleset
 * timed against the full one (tests/bench/bench-landlock.c).
 */
unsigned
cage_landlock_features(int abi, const char *test)
{
	unsigned f = 0;

	if (abi >= 4 && !test_hook_list_has(test, "landlock-net"))
		f |= CAGE_LL_NET;
	if (abi >= 5 && !test_hook_list_has(test, "landlock-ioctl"))
		f |= CAGE_LL_IOCTL;
	if (abi >= 6 && !test_hook_list_has(test, "landlock-scope"))
		f |= CAGE_LL_SCOPE;
	if (abi >= 7)
		f |= CAGE_LL_LOG;
	return f;
}

static int
landlock_port(int ruleset, uint64_t access, uint16_t port)
{
	struct ll_net_port_attr a = { .allowed_access = access, .port = port };

	return syscall(__NR_landlock_add_rule, ruleset, LL_RULE_NET_PORT, &a, 0) < 0 ? -1 : 0;
}

/*
 * Mirror the mounts: read everywhere, execute only beneath the top-level
 * directories on read-only mounts (the cage's root), write where the
 * cage may write, never execute there. From ABI 4, TCP bind and connect
 * only to the profile's ports; from ABI 5, ioctls only on the terminals
 * of /dev (/dev/tty, /dev/pts) and beneath the profile's binds; from ABI
 * 6, abstract UNIX sockets and signals only within the domain.
 */
int
cage_landlock_ruleset(const struct clip_cage_profile *p, int abi, const char *test)
{
	const uint64_t read = LL_FS_READ_FILE | LL_FS_READ_DIR;
	const uint64_t write = read | LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE |
			       LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO |
			       LL_FS_MAKE_SYM | LL_FS_REFER | LL_FS_TRUNCATE;
	const unsigned features = cage_landlock_features(abi, test);
	struct ll_ruleset_attr attr = { .handled_access_fs = (LL_FS_MAKE_SYM << 1) - 1 };
	size_t attr_size = sizeof(attr.handled_access_fs);
	char buf[4096];
	int ruleset, dir, r = 0;
	long n;

	if (abi >= 2)
		attr.handled_access_fs |= LL_FS_REFER;
	if (abi >= 3)
		attr.handled_access_fs |= LL_FS_TRUNCATE;
	if (features & CAGE_LL_IOCTL)
		attr.handled_access_fs |= LL_FS_IOCTL_DEV;
	if (features & CAGE_LL_NET) {
		attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		attr_size = offsetof(struct ll_ruleset_attr, scoped);
	}
	if (features & CAGE_LL_SCOPE) {
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
		attr_size = sizeof(attr);
	}
	ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0);
	if (ruleset < 0)
		return -1;
	r = landlock_rule(ruleset, "/", read, attr.handled_access_fs);
	/* getdents64, not opendir(): no allocation in the init of a threaded launcher. */
	dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	while (r == 0 && dir >= 0 && (n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0)
		for (long off = 0; r == 0 && off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			struct statfs sf;
			int fd;

			off += d->d_reclen;
			if (d->d_name[0] == '.' || strcmp(d->d_name, "proc") == 0 ||
			    strcmp(d->d_name, "dev") == 0 ||
			    (d->d_type != DT_DIR && d->d_type != DT_UNKNOWN))
				continue;
			/* A directory, not a link to one: the rule goes on what the fd is. */
			fd = openat(dir, d->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				continue;
			if (fstatfs(fd, &sf) == 0 && (sf.f_flags & ST_RDONLY))
				r = landlock_rule_fd(ruleset, fd,
						     (read | LL_FS_EXECUTE) &
							     attr.handled_access_fs);
			close(fd);
		}
	if (dir >= 0)
		close(dir);
	if (r == 0)
		r = landlock_rule(ruleset, "/proc", read | LL_FS_WRITE_FILE,
				  attr.handled_access_fs);
	if (r == 0)
		r = landlock_rule(ruleset, "/dev", read | LL_FS_WRITE_FILE, attr.handled_access_fs);
	/* A terminal's ioctls (TIOCGWINSZ, tcsetattr()): the controlling tty, a pty's slave. */
	for (const char *const *t = (const char *const[]){ "/dev/tty", "/dev/pts", NULL };
	     r == 0 && *t; t++)
		r = landlock_rule(ruleset, *t, LL_FS_IOCTL_DEV, attr.handled_access_fs);
	for (const char *const *w =
		     (const char *const[]){ "/tmp", "/run", "/dev/shm", "/data", NULL };
	     r == 0 && *w; w++)
		r = landlock_rule(ruleset, *w, write, attr.handled_access_fs);
	/* What the profile binds is the administrator's choice, devices included. */
	for (size_t i = 0; r == 0 && i < p->n_mounts; i++)
		if (p->mounts[i].source || p->mounts[i].rw)
			r = landlock_rule(ruleset, p->mounts[i].target,
					  (p->mounts[i].rw ? write : 0) | LL_FS_IOCTL_DEV,
					  attr.handled_access_fs);
	for (size_t i = 0; r == 0 && (features & CAGE_LL_NET) && i < p->n_bind_ports; i++)
		r = landlock_port(ruleset, LL_NET_BIND_TCP, p->bind_ports[i]);
	for (size_t i = 0; r == 0 && (features & CAGE_LL_NET) && i < p->n_connect_ports; i++)
		r = landlock_port(ruleset, LL_NET_CONNECT_TCP, p->connect_ports[i]);
	if (r < 0) {
		close(ruleset);
		return -1;
	}
	return ruleset;
}

/*
 * A Landlock domain from @ruleset: a new one, or one nested in the
 * caller's. From ABI 7, denials after the execve() to come are logged too
 * (the kernel's default logs only those before it): they are the cage's
 * program's (cage-audit.c reads them).
 */
static int
landlock_restrict(int ruleset, int abi)
{
	return (int)syscall(__NR_landlock_restrict_self, ruleset,
			    abi >= 7 ? LL_RESTRICT_SELF_LOG_NEW_EXEC_ON : 0);
}

static int
landlock_apply(const struct clip_cage_profile *p, int abi, const char *test)
{
	int ruleset = cage_landlock_ruleset(p, abi, test), r;

	if (ruleset < 0)
		return -1;
	r = landlock_restrict(ruleset, abi);
	close(ruleset);
	return r;
}

static int
seccomp_load(struct sock_fprog prog)
{
	if (!prog.filter) {
		errno = EINVAL;
		return -1;
	}
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

/* The profile's additions (cage-seccomp.c), stacked on the default filter; last, before execve(). */
static int
seccomp_additions(const struct clip_cage_profile *p)
{
	if (!p->bpf)
		return 0;
	return seccomp_load(
		(struct sock_fprog){ .len = (unsigned short)p->bpf_len, .filter = p->bpf });
}

/*
 * Keep only the profile's capabilities, in every set. The bounding set
 * first, since dropping from it needs CAP_SETPCAP, still held: one
 * PR_CAPBSET_DROP per capability the kernel knows (it answers EINVAL past
 * the last). Not capng_apply(CAPNG_SELECT_BOUNDS): libcap-ng 0.8 reads
 * /proc/PID/status twice around the same drops, which tripled the cost of
 * this step (doc/cage.md, "Start-up time"). The other sets, with libcap-ng;
 * its process id is set to 0 ("this one") since a first process runs in
 * init's memory until it executes (first_fork()), where libcap-ng's state
 * would otherwise name the other process.
 */
static int
caps_apply(uint64_t caps)
{
	for (unsigned c = 0; c < 64; c++) {
		if (caps & (UINT64_C(1) << c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			if (errno == EINVAL && c > 0)
				break;
			return -1;
		}
	}
	capng_clear(CAPNG_SELECT_ALL);
	capng_setpid(0);
	for (unsigned c = 0; c < 64; c++)
		if (caps & (UINT64_C(1) << c))
			if (capng_update(CAPNG_ADD,
					 CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_INHERITABLE |
						 CAPNG_AMBIENT,
					 c) < 0)
				return -1;
	if (capng_apply(CAPNG_SELECT_CAPS) < 0 || capng_apply(CAPNG_SELECT_AMBIENT) < 0) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/*
 * The system calls, not glibc's wrappers: those change the ids of every
 * thread of the process (POSIX), signalling each and waiting for its
 * answer. Here the process is a raw clone of a launcher that may have
 * threads: glibc still lists them and would wait for them, for ever
 * where one was still starting when the launcher cloned (seen with an
 * init whose reaper thread had just been created).
 */
static int
ids_set(uint32_t uid, uint32_t gid, bool rootless)
{
	/* Rootless: setgroups is denied in the namespace; the groups are unmapped. */
	if (!rootless && syscall(SYS_setgroups, 0, NULL) < 0)
		return -1;
	if (syscall(SYS_setresgid, gid, gid, gid) < 0)
		return -1;
	return (int)syscall(SYS_setresuid, uid, uid, uid);
}

static int
fds_arrange(const int *fds, unsigned n, int *err_fd)
{
	int moved[64];

	/* Out of the way first, so that dup2() cannot overwrite a source. */
	*err_fd = fcntl(*err_fd, F_DUPFD_CLOEXEC, (int)n + 3);
	if (*err_fd < 0)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, (int)n + 3);
		if (moved[i] < 0)
			return -1;
	}
	for (unsigned i = 0; i < n; i++)
		if (dup2(moved[i], (int)i) < 0)
			return -1;
	/* Everything else closes at execve(), the error pipe included. */
	return close_range(n, ~0u, CLOSE_RANGE_CLOEXEC);
}

/*
 * vm.memfd_noexec is per pid namespace, read and written for the caller's
 * own; a child namespace never has less than its parent's. Only the
 * host's root (euid 0 in the initial user namespace, what a root-mode
 * init still is before ids_set()) may write it, with CAP_SYS_ADMIN over
 * the namespace.
 */
#define MEMFD_NOEXEC "/proc/sys/vm/memfd_noexec"

static int
memfd_noexec_get(void)
{
	char c = 0;
	int fd = open(MEMFD_NOEXEC, O_RDONLY | O_CLOEXEC), n;

	if (fd < 0)
		return -1;
	n = (int)read(fd, &c, 1);
	close(fd);
	return n == 1 && c >= '0' && c <= '9' ? c - '0' : -1;
}

/*
 * 2: memfd_create() with MFD_EXEC fails (EACCES), and every other memfd is
 * made with MFD_NOEXEC_SEAL, so no memfd of the cage ever executes. Where
 * it cannot be set (rootless), cage_exec_main() loads a seccomp filter
 * that asks for MFD_NOEXEC_SEAL instead.
 */
static void
memfd_noexec_set(void)
{
	int fd = open(MEMFD_NOEXEC, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	(void)!write(fd, "2", 1);
	close(fd);
}

/*
 * First the securebits, locked: with NO_SETUID_FIXUP a change of uid
 * keeps the capabilities, which restrict_process() then sets exactly,
 * whether the process comes from init (uid 0 of the cage) or from a
 * helper that entered the namespaces (an unmapped uid).
 */
static void
securebits_set(bool wx, int fail_fd, const char *test)
{
	unsigned bits = SECBITS_BASE;

	if (wx)
		bits |= SECBIT_EXEC_RESTRICT_FILE | SECBIT_EXEC_RESTRICT_FILE_LOCKED |
			SECBIT_EXEC_DENY_INTERACTIVE | SECBIT_EXEC_DENY_INTERACTIVE_LOCKED;
	if (!test_hook_list_has(test, "securebits"))
		CHECK(STEP_SECUREBITS, prctl(PR_SET_SECUREBITS, bits, 0, 0, 0));
}

static void
restrict_process(uint64_t caps, int fail_fd, const char *test)
{
	if (!test_hook_list_has(test, "caps"))
		CHECK(STEP_CAPABILITIES, caps_apply(caps));
	CHECK(STEP_NO_NEW_PRIVS, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
}

_Noreturn void
cage_exec_main(const struct cage_exec_args *a)
{
	const char *const empty[] = { NULL };
	const char *const *envp = a->envp ? a->envp : empty;
	const char *test = a->test_disable;
	int fail_fd = a->err_fd, e = ENOENT;
	char file[PATH_MAX];
	sigset_t none;

	/* Spawned from outside: the cgroup namespace last (cage-spawn.c, spawn_helper()). */
	if (a->cgroupns_fd >= 0)
		CHECK(STEP_SETNS, setns(a->cgroupns_fd, CLONE_NEWCGROUP));
	/* Whoever forked us (init blocks SIGCHLD) does not choose the command's mask. */
	sigemptyset(&none);
	CHECK(STEP_SESSION, sigprocmask(SIG_SETMASK, &none, NULL));
	if (!test_hook_list_has(test, "setsid"))
		CHECK(STEP_SESSION, setsid());
	CHECK(STEP_FDS, fds_arrange(a->fds, a->n_fds, &fail_fd));
	/* The pty of its own (CLIP_CAGE_SPAWN_PTY): a shell's job control needs it as its terminal. */
	if (a->ctty >= 0 && !test_hook_list_has(test, "setsid"))
		CHECK(STEP_SESSION, ioctl(a->ctty, TIOCSCTTY, 0));
	CHECK(STEP_CHDIR, chdir(a->cwd ? a->cwd : "/"));
	securebits_set(a->profile->wx, fail_fd, test);
	CHECK(STEP_IDS, ids_set(a->uid, a->gid, a->rootless));
	restrict_process(a->profile->caps, fail_fd, test);
	/* From init: a domain nested in init's, so that we cannot reach init (ptrace scoping). */
	if (a->landlock_ruleset >= 0)
		CHECK(STEP_LANDLOCK, landlock_restrict(a->landlock_ruleset, a->landlock_abi));
	else if (a->landlock_abi > 0 && !test_hook_list_has(test, "landlock"))
		CHECK(STEP_LANDLOCK, landlock_apply(a->profile, a->landlock_abi, test));
	/*
	 * W^X: no memfd of the cage ever executes (memfd_noexec_set()); the
	 * filter where the pid namespace says otherwise. Read before the
	 * profile's additions, which may deny open() or prctl().
	 */
	if (a->profile->wx && !test_hook_list_has(test, "memfd-noexec") && memfd_noexec_get() < 2)
		CHECK(STEP_SECCOMP, seccomp_load(cage_seccomp_memfd()));
	if (!test_hook_list_has(test, "seccomp")) {
		if (!a->seccomp_inherited)
			CHECK(STEP_SECCOMP, seccomp_load(cage_seccomp_default()));
		CHECK(STEP_SECCOMP, seccomp_additions(a->profile));
	}

	if (strchr(a->argv[0], '/')) {
		execve(a->argv[0], (char *const *)a->argv, (char *const *)envp);
		cage_child_fail(fail_fd, STEP_EXEC, errno);
	}
	for (const char *dir = CAGE_EXEC_PATH, *end; *dir; dir = *end ? end + 1 : end) {
		end = dir + strcspn(dir, ":");
		if (snprintf(file, sizeof(file), "%.*s/%s", (int)(end - dir), dir, a->argv[0]) >=
		    (int)sizeof(file))
			continue;
		execve(file, (char *const *)a->argv, (char *const *)envp);
		if (errno != ENOENT && errno != ENOTDIR)
			e = errno;
	}
	cage_child_fail(fail_fd, STEP_EXEC, e);
}

/*
 * clone3(), or clone() where clone3() is missing (valgrind does not know
 * it): the same flags but CLONE_INTO_CGROUP, the pidfd at the parent_tid
 * argument, like fork() without a stack.
 */
long
cage_clone3(struct clone_args *ca)
{
	long pid = syscall(SYS_clone3, ca, sizeof(*ca));

	if (pid < 0 && errno == ENOSYS && !(ca->flags & CLONE_INTO_CGROUP))
		pid = syscall(SYS_clone, (unsigned long)ca->flags | (unsigned long)ca->exit_signal,
			      NULL, (void *)(uintptr_t)ca->pidfd, NULL, 0);
	if (pid == 0)
		pid_cache_reset();
	return pid;
}

/*
 * Reap whatever is reparented to us, until killed; the first process's
 * status to @sock. With @end_with_first, exit once it is sent: the kernel
 * then kills whatever is left in our pid namespace, as the launcher's
 * clip_cage_stop() would, and the cage starts ending while its launcher
 * reads the status.
 */
_Noreturn static void
init_loop(int sock, pid_t first, bool end_with_first)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (;;) {
		siginfo_t si;
		pid_t pid;
		int status;

		if (sigwaitinfo(&set, &si) < 0 && errno != EINTR)
			_exit(1);
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			if (pid == first) {
				cage_msg_send(sock, MSG_EXIT, 0, 0,
					      WIFEXITED(status) ? WEXITSTATUS(status)
								: 128 + WTERMSIG(status));
				close(sock);
				if (end_with_first)
					_exit(0);
				first = 0;
			}
	}
}

/*
 * The first process: started by init once the cage is set up, while init
 * still holds the rights to give it its ids and capabilities; init then
 * drops them. With vfork(): it runs in init's memory, on init's stack
 * below this frame, and init is suspended until it executes or fails.
 * init's page tables are neither copied now nor torn down at execve(),
 * and the process sets itself up with a CPU to itself (doc/cage.md,
 * "Start-up time"). Until execve() it runs only cage_exec_main(), which
 * leaves nothing init reads afterwards but libcap-ng's state, which
 * caps_apply() resets. Its failure before execve() comes back on
 * @ret_err. vfork() has no CLONE_PIDFD: the pidfd is opened afterwards,
 * when the pid cannot have been reused, since only init reaps its
 * children.
 */
static pid_t
first_fork(const struct cage_exec_args *first, int ruleset, bool seccomp, int *ret_pidfd,
	   int *ret_err, int fail_fd)
{
	struct cage_exec_args args = *first;
	int p[2];
	pid_t pid;

	CHECK(STEP_FORK, pipe2(p, O_CLOEXEC));
	args.err_fd = p[1];
	args.landlock_ruleset = ruleset;
	args.seccomp_inherited = seccomp;
	pid = vfork();
	if (pid == 0)
		cage_exec_main(&args);
	CHECK(STEP_FORK, pid);
	close(p[1]);
	CHECK(STEP_FORK, *ret_pidfd = (int)syscall(SYS_pidfd_open, pid, 0));
	*ret_err = p[0];
	return pid;
}

/* Close every descriptor from 3 up but the @n in @keep (sorted, all above 2). */
static int
close_all_but(const int *keep, size_t n)
{
	unsigned from = 3;

	for (size_t i = 0; i < n; i++) {
		if ((unsigned)keep[i] > from && close_range(from, (unsigned)keep[i] - 1, 0) < 0)
			return -1;
		from = (unsigned)keep[i] + 1;
	}
	return close_range(from, ~0u, 0);
}

/*
 * The v1 cgroups, which the parent made while we set up: it sends "c" and
 * their number, then their "tasks" files (none without v1 limits), and we
 * move ourselves; then as many of its own cgroups' "tasks" files, if it
 * could open them all, into @back (cgroups_leave()).
 */
static void
cgroups_join(int sock, int fail_fd, int back[_CG_V1_MAX])
{
	int fds[2 * _CG_V1_MAX], in[_CG_V1_MAX] = { -1, -1, -1 };
	unsigned char m[2] = { 0, 0 };
	size_t n = 0, k = 0;

	if (recv_fds(sock, m, sizeof(m), fds, 2 * _CG_V1_MAX, &n) != 2 || m[0] != 'c' ||
	    (k = m[1]) > _CG_V1_MAX || (n != k && n != 2 * k))
		cage_child_fail(fail_fd, STEP_CGROUP, EPROTO);
	for (size_t i = 0; i < _CG_V1_MAX; i++) {
		in[i] = i < k ? fds[i] : -1;
		back[i] = i < k && n == 2 * k ? fds[k + i] : -1;
	}
	CHECK(STEP_CGROUP, cage_cgroups_join_tasks(in));
	cage_cgroups_close_tasks(in);
}

/*
 * Back into the launcher's v1 cgroups, once our cgroup namespace is rooted
 * at the cage's and the first process is in them: the cage's then hold its
 * processes only, and stopping removes them while we die (cage.c,
 * cage_stop()). Our few pages stay charged to the cage's memory cgroup.
 */
static void
cgroups_leave(int back[_CG_V1_MAX], int fail_fd)
{
	CHECK(STEP_CGROUP, cage_cgroups_join_tasks(back));
	cage_cgroups_close_tasks(back);
}

/*
 * Into the BPF LSM's map of the cages' processes (doc/lsm.md): once the
 * mounts are made (a cage's process makes none) and before the first
 * process, which inherits the entry, as everything init forks. Our bpf()
 * is the last: from now on the LSM refuses it to us.
 */
static void
lsm_register_self(const struct cage_init_args *a, int fail_fd)
{
	int self, r;

	CHECK(STEP_LSM, self = (int)syscall(SYS_pidfd_open, getpid(), 0));
	r = lsm_task_register(a->lsm_fd, self, &a->lsm_task);
	if (r < 0)
		cage_child_fail(fail_fd, STEP_LSM, -r);
	close(self);
	close(a->lsm_fd);
}

/* MSG_READY, with the first process's pidfd if there is one. */
static int
send_ready(int sock, int pidfd)
{
	struct cage_msg m = { .type = MSG_READY, .value = pidfd >= 0 };

	return send_fds(sock, &m, sizeof(m), &pidfd, pidfd >= 0);
}

_Noreturn void
cage_init_main(const struct cage_init_args *a)
{
	const struct clip_cage_profile *p = a->profile;
	int sock = a->sock, fail_fd, nullfd, first_pidfd = -1, first_err = -1;
	/* A test-hooks build may switch Landlock or seccomp off for the first process (cage.c). */
	const char *test = a->first ? a->first->test_disable : NULL;
	const bool landlock_early = a->landlock_abi > 0 && !test_hook_list_has(test, "landlock");
	const bool seccomp_early = !test_hook_list_has(test, "seccomp");
	int ruleset = -1, back[_CG_V1_MAX];
	pid_t first = 0;
	sigset_t set;
	char go;

	/* Above 0-2, which become /dev/null below. */
	if (sock < 3)
		sock = fcntl(sock, F_DUPFD_CLOEXEC, 3);
	if (sock < 0)
		_exit(1);
	fail_fd = sock;

	/* SIGCHLD is waited for, never delivered; a pid-namespace init ignores the rest. */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (read(sock, &go, 1) != 1)
		_exit(1);
	if (go != 'g')
		_exit(1);
	if (a->steer)
		CHECK(STEP_SYNC, sched_setaffinity(0, sizeof(a->cpus), &a->cpus));
	(void)prctl(PR_SET_NAME, "clip-cage-init", 0, 0, 0);
	/* Still the launcher's euid: root's, in root mode (memfd_noexec_set()). */
	if (p->wx && !test_hook_list_has(a->test_disable, "memfd-noexec"))
		memfd_noexec_set();
	CHECK(STEP_IDS, ids_set(0, 0, a->rootless));
	CHECK(STEP_HOSTNAME, sethostname(p->name, strlen(p->name)));
	if (a->netns)
		CHECK(STEP_NETWORK, network_setup(p));
	mounts_setup(p, a->sources, a->private_inodes, &a->source_rules, fail_fd);
	/* Into the v1 cgroups (cgroup2: cloned into it); they become our cgroup root. */
	cgroups_join(sock, fail_fd, back);
	CHECK(STEP_SYNC, unshare(CLONE_NEWCGROUP));
	/* Before the seccomp filter, which denies bpf() (and so would our registration). */
	if (a->lsm_fd >= 0)
		lsm_register_self(a, fail_fd);
	/*
	 * Landlock and the default seccomp filter now, before the first
	 * process: it inherits the filter and nests a domain of its own in
	 * ours (so that it cannot reach us), instead of building both again
	 * on its way to execve(). None of the calls left to either of us is
	 * on the default deny-list; the profile's additions, which may deny
	 * anything, come last.
	 */
	if (landlock_early) {
		CHECK(STEP_LANDLOCK, ruleset = cage_landlock_ruleset(p, a->landlock_abi, test));
		CHECK(STEP_LANDLOCK, landlock_restrict(ruleset, a->landlock_abi));
	}
	if (seccomp_early)
		CHECK(STEP_SECCOMP, seccomp_load(cage_seccomp_default()));
	if (a->first)
		first = first_fork(a->first, ruleset, seccomp_early, &first_pidfd, &first_err,
				   fail_fd);
	cgroups_leave(back, fail_fd);
	if (ruleset >= 0)
		close(ruleset);

	CHECK(STEP_SESSION, setsid());
	nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	CHECK(STEP_FDS, nullfd);
	for (int i = 0; i < 3; i++)
		CHECK(STEP_FDS, dup2(nullfd, i));
	close(nullfd);
	/* Init never executes: whatever the launcher had open is closed for real. */
	{
		int keep[3] = { sock, first_pidfd, first_err };
		size_t n = a->first ? 3 : 1;

		for (size_t i = 1; i < n; i++) /* three at most: insertion sort */
			for (size_t j = i; j > 0 && keep[j] < keep[j - 1]; j--) {
				int t = keep[j];

				keep[j] = keep[j - 1];
				keep[j - 1] = t;
			}
		CHECK(STEP_FDS, close_all_but(keep, n));
	}
	/*
	 * Init ends no more privileged than any process of the cage: no
	 * capability, the same Landlock domain rules and seccomp filter. Run
	 * by root it is also not dumpable; rootless it must stay dumpable,
	 * since setns() through its pidfd needs ptrace access to it and the
	 * launcher has no CAP_SYS_PTRACE.
	 */
	if (!a->rootless)
		CHECK(STEP_CAPABILITIES, prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
	securebits_set(false, fail_fd, NULL);
	restrict_process(0, fail_fd, NULL);
	if (a->landlock_abi > 0 && !landlock_early)
		CHECK(STEP_LANDLOCK, landlock_apply(p, a->landlock_abi, test));
	if (!seccomp_early)
		CHECK(STEP_SECCOMP, seccomp_load(cage_seccomp_default()));
	CHECK(STEP_SECCOMP, seccomp_additions(p));
	/*
	 * An unregistered cage has no one else to stop it. Set last: changing
	 * ids or capabilities clears it. The parent is waiting for "ready" and
	 * so alive; should it be gone, the message cannot be sent.
	 */
	if (a->die_with_parent)
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (a->first) {
		/* The first process executed (its pipe closed), or says why not. */
		struct cage_msg m;
		ssize_t n;

		do
			n = read(first_err, &m, sizeof(m));
		while (n < 0 && errno == EINTR);
		close(first_err);
		if (n == sizeof(m) && m.type == MSG_ERROR) {
			(void)!send(sock, &m, sizeof(m), MSG_NOSIGNAL);
			_exit(1);
		}
	}
	if (send_ready(sock, first_pidfd) < 0)
		_exit(1);
	if (first_pidfd >= 0)
		close(first_pidfd);
	if (!a->first)
		close(sock);
	init_loop(sock, first, a->end_with_first);
}
