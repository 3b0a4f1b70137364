/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A cage's cgroups. The host may be unified (cgroup2 at /sys/fs/cgroup),
 * hybrid (cgroup2 at /sys/fs/cgroup/unified, often without the memory and
 * pids controllers, and the v1 hierarchies beside it) or legacy. Each
 * limit goes where the host has its controller: cgroup2 when the
 * launcher's cgroup delegates it, else the v1 hierarchy. A cgroup2 cgroup
 * is made only where cgroup2 takes a limit: on a hybrid host whose cgroup2
 * offers none, it would cost a mkdir() before the clone and an rmdir()
 * after the init's death, for cgroup.kill alone, and stopping a cage of
 * 100 processes takes the same 5 to 6 ms without it (the pid namespace's
 * init, dying, kills them; medians of 7, doc/cage.md). What cannot be
 * applied is reported, never pretended.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "cage-internal.h"
#include "base/log.h"
#include "base/util.h"

static const char *const v1_names[_CG_V1_MAX] = { "memory", "pids", "cpu" };

static void
own_free(char *own[_CG_V1_MAX + 1])
{
	for (int i = 0; i <= _CG_V1_MAX; i++) {
		free(own[i]);
		own[i] = NULL;
	}
}

/*
 * This process's path in cgroup2 ("0::PATH", into @own[_CG_V1_MAX]) and in
 * each v1 hierarchy of a controller we use (@own[CG_V1_*]; "cpu,cpuacct"
 * lists several): "" for a root, NULL where the host has none. One read of
 * /proc/self/cgroup for the whole start.
 */
static int
own_paths(char *own[_CG_V1_MAX + 1])
{
	char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int r = 0;

	for (int i = 0; i <= _CG_V1_MAX; i++)
		own[i] = NULL;
	if (!f)
		return -errno;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2, *nl, *path;
		char *tok, *save = NULL;

		if (!c1 || !(c2 = strchr(c1 + 1, ':')))
			continue;
		*c1 = *c2 = '\0';
		nl = strchr(c2 + 1, '\n');
		if (nl)
			*nl = '\0';
		path = strcmp(c2 + 1, "/") == 0 ? "" : c2 + 1;
		if (strlen(path) >= PATH_MAX / 2) {
			r = -ENAMETOOLONG;
			break;
		}
		if (strcmp(line, "0") == 0 && c1[1] == '\0') {
			if (!own[_CG_V1_MAX] && !(own[_CG_V1_MAX] = strdup(path)))
				r = -ENOMEM;
			continue;
		}
		for (tok = strtok_r(c1 + 1, ",", &save); r == 0 && tok;
		     tok = strtok_r(NULL, ",", &save))
			for (int i = 0; i < _CG_V1_MAX; i++)
				if (strcmp(tok, v1_names[i]) == 0 && !own[i] &&
				    !(own[i] = strdup(path)))
					r = -ENOMEM;
	}
	fclose(f);
	if (r < 0)
		own_free(own);
	return r;
}

static bool
is_fs(const char *path, long magic)
{
	struct statfs s;

	return statfs(path, &s) == 0 && (long)s.f_type == magic;
}

/* @value into @dir/@file (write_string()). */
static int
write_file(const char *dir, const char *file, const char *value)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return write_string(path, value);
}

/* A short file's text ("" when it cannot be read). */
static void
read_words(const char *dir, const char *file, char buf[1024])
{
	char path[PATH_MAX];
	ssize_t n = -1;
	int fd;

	buf[0] = '\0';
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, 1023);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
}

/* Whether @word is one of the space-separated words of @text. */
static bool
has_word(const char *text, const char *word)
{
	size_t n = strlen(word);

	for (const char *t = text; (t = strstr(t, word)); t += n)
		if ((t == text || t[-1] == ' ') && (t[n] == ' ' || t[n] == '\n' || t[n] == '\0'))
			return true;
	return false;
}

/* Make MNT/OWN/leaf: beside the launcher's own cgroup of a hierarchy mounted at @mnt. */
static int
make_leaf(const char *mnt, const char *own, const char *leaf, char **ret)
{
	char path[PATH_MAX];

	if (!own)
		return -ENOENT;
	if (snprintf(path, sizeof(path), "%s%s/%s", mnt, own, leaf) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	*ret = strdup(path);
	return *ret ? 0 : -ENOMEM;
}

static const char *
v2_root(void)
{
	if (is_fs("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC))
		return "/sys/fs/cgroup";
	if (is_fs("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC))
		return "/sys/fs/cgroup/unified";
	return NULL;
}

/* Each limit's CLIP_CAGE_MISSING_* bit and value, in CG_V1_* order. */
static const unsigned limit_bits[_CG_V1_MAX] = { CLIP_CAGE_MISSING_MEMORY, CLIP_CAGE_MISSING_TASKS,
						 CLIP_CAGE_MISSING_CPU };

static uint64_t
limit_of(const struct clip_cage_limits *l, int i)
{
	return i == CG_V1_MEMORY ? l->memory_max
	       : i == CG_V1_PIDS ? l->tasks_max
				 : l->cpu_quota_percent;
}

/*
 * Whether the launcher's cgroup2 cgroup @parent, which offers @controller,
 * gives it to its children: delegated already, or delegated now.
 */
static bool
v2_delegates(const char *parent, const char *controller)
{
	char plus[64], words[1024];

	read_words(parent, "cgroup.subtree_control", words);
	if (has_word(words, controller))
		return true;
	snprintf(plus, sizeof(plus), "+%s", controller);
	return write_file(parent, "cgroup.subtree_control", plus) == 0;
}

/*
 * Limit @i of @l into the cgroup @dir, of cgroup2 (@v2) or of its v1
 * hierarchy: memory and tasks as counts, the CPU as a quota in
 * microseconds per 100 ms period.
 */
static int
limit_write(const char *dir, bool v2, int i, const struct clip_cage_limits *l)
{
	unsigned long long value = limit_of(l, i) * (i == CG_V1_CPU ? 1000 : 1);
	char v[64];
	int r;

	snprintf(v, sizeof(v), v2 && i == CG_V1_CPU ? "%llu 100000" : "%llu", value);
	switch (i) {
	case CG_V1_MEMORY:
		r = write_file(dir, v2 ? "memory.max" : "memory.limit_in_bytes", v);
		/* No swap on cgroup2; on v1, swap counted too where the kernel accounts it. */
		if (r == 0)
			(void)write_file(dir,
					 v2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes",
					 v2 ? "0" : v);
		return r;
	case CG_V1_PIDS:
		return write_file(dir, "pids.max", v);
	default:
		if (v2)
			return write_file(dir, "cpu.max", v);
		r = write_file(dir, "cpu.cfs_period_us", "100000");
		return r < 0 ? r : write_file(dir, "cpu.cfs_quota_us", v);
	}
}

void
cage_cgroups_create_v2(struct clip_ctx *ctx, struct cage_cgroups *cg, const char *leaf,
		       const struct clip_cage_limits *l)
{
	const char *root;
	char parent[PATH_MAX], offered[1024];
	unsigned take = 0;
	int r;

	*cg = (struct cage_cgroups){ .v2_fd = -1 };
	for (int i = 0; i < _CG_V1_MAX; i++)
		if (limit_of(l, i))
			cg->wanted |= limit_bits[i];
	/*
	 * No limit, no cgroup: stopping kills the pid namespace's init anyway,
	 * and the cgroup namespace already roots the cage at our cgroup.
	 */
	if (!cg->wanted)
		return;
	r = own_paths(cg->own);
	if (r < 0) {
		log_warning(ctx, "cannot read this process's cgroups: %s", strerror(-r));
		return;
	}
	root = v2_root();
	if (!root || !cg->own[_CG_V1_MAX] ||
	    snprintf(parent, sizeof(parent), "%s%s", root, cg->own[_CG_V1_MAX]) >=
		    (int)sizeof(parent))
		return;
	/* One read where cgroup2 offers nothing (a hybrid host). */
	read_words(parent, "cgroup.controllers", offered);
	for (int i = 0; i < _CG_V1_MAX; i++)
		if ((cg->wanted & limit_bits[i]) && has_word(offered, v1_names[i]) &&
		    v2_delegates(parent, v1_names[i]))
			take |= 1u << i;
	if (!take)
		return;
	if (make_leaf(root, cg->own[_CG_V1_MAX], leaf, &cg->v2) < 0) {
		log_info(ctx, "no cgroup2 cgroup for the cage: stopping kills its pid namespace");
		return;
	}
	cg->v2_fd = cage_fd_above_stdio(open(cg->v2, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	for (int i = 0; i < _CG_V1_MAX; i++)
		if ((take & (1u << i)) && limit_write(cg->v2, true, i, l) == 0)
			cg->done |= limit_bits[i];
}

/* The launcher's pid in a leaf name of ours, clip-NAME-PID-N; 0 for any other name. */
static pid_t
leaf_launcher(const char *name)
{
	const char *last = strrchr(name, '-'), *p;
	char *end;
	long pid;

	if (strncmp(name, "clip-", 5) != 0 || !last || !last[1] ||
	    strspn(last + 1, "0123456789") != strlen(last + 1))
		return 0;
	for (p = last - 1; p > name + 5 && *p != '-'; p--)
		;
	if (p <= name + 5)
		return 0;
	errno = 0;
	pid = strtol(p + 1, &end, 10);
	return errno == 0 && end == last && pid > 0 && pid <= INT_MAX ? (pid_t)pid : 0;
}

/*
 * The cgroups of cages whose launcher died without removing them (killed,
 * say: its unregistered cage's init dies with it, the cgroups stay): the
 * leaves named clip-NAME-PID-N beside @leaf whose PID no longer runs.
 * rmdir() refuses a cgroup that still holds a process, so a cage that
 * runs on (registered, its launcher gone) keeps its own; a leaf made in
 * the last minute is left alone, since its launcher may be alive in
 * another pid namespace and about to move its init in.
 */
static void
sweep_beside(struct clip_ctx *ctx, const char *leaf)
{
	char parent[PATH_MAX], *slash;
	time_t now = time(NULL);
	struct dirent *e;
	DIR *d;

	snprintf(parent, sizeof(parent), "%s", leaf);
	slash = strrchr(parent, '/');
	if (!slash)
		return;
	*slash = '\0';
	d = opendir(parent);
	if (!d)
		return;
	while ((e = readdir(d))) {
		pid_t pid = e->d_type == DT_DIR ? leaf_launcher(e->d_name) : 0;
		struct stat st;

		if (!pid || kill(pid, 0) == 0 || errno != ESRCH ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    now - st.st_mtime < 60)
			continue;
		if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) == 0)
			log_info(ctx, "removed %s/%s, left by a launcher that died (pid %d)",
				 parent, e->d_name, (int)pid);
	}
	closedir(d);
}

/* Whether the cage has a cgroup of its own, cgroup2 or v1. */
static bool
any_cgroup(const struct cage_cgroups *cg)
{
	for (int i = 0; i < _CG_V1_MAX; i++)
		if (cg->v1[i])
			return true;
	return cg->v2 != NULL;
}

unsigned
cage_cgroups_create_v1(struct clip_ctx *ctx, struct cage_cgroups *cg, const char *leaf,
		       const struct clip_cage_limits *l)
{
	unsigned missing;
	char mnt[64];

	for (int i = 0; i < _CG_V1_MAX; i++) {
		if (!(cg->wanted & limit_bits[i]) || (cg->done & limit_bits[i]) || !cg->own[i])
			continue;
		snprintf(mnt, sizeof(mnt), "/sys/fs/cgroup/%s", v1_names[i]);
		if (!is_fs(mnt, CGROUP_SUPER_MAGIC) ||
		    make_leaf(mnt, cg->own[i], leaf, &cg->v1[i]) < 0)
			continue;
		if (limit_write(cg->v1[i], false, i, l) == 0)
			cg->done |= limit_bits[i];
	}
	own_free(cg->own);
	/* Here, while the init sets up: off the start's path. */
	if (cg->v2)
		sweep_beside(ctx, cg->v2);
	for (int i = 0; i < _CG_V1_MAX; i++)
		if (cg->v1[i])
			sweep_beside(ctx, cg->v1[i]);
	missing = cg->wanted & ~cg->done;
	if (missing)
		log_warning(ctx, "cage limits not applied on this host:%s%s%s",
			    (missing & CLIP_CAGE_MISSING_MEMORY) ? " memory" : "",
			    (missing & CLIP_CAGE_MISSING_TASKS) ? " tasks" : "",
			    (missing & CLIP_CAGE_MISSING_CPU) ? " cpu" : "");
	return missing | (cg->wanted && !any_cgroup(cg) ? CLIP_CAGE_MISSING_CGROUP : 0);
}

/*
 * Moving a task into a cgroup normally takes the kernel's global
 * cgroup_threadgroup_rwsem for writing, which waits for an RCU grace period
 * when no move happened just before (most of what cgroup limits used to
 * cost a cage's start). A process moving itself through a v1 "tasks" file
 * (a single thread, "0" for the caller) skips that lock; a single-threaded
 * process is thus moved whole. cgroup2 has no such file: there the cage
 * uses CLONE_INTO_CGROUP, and "cgroup.procs" only as a fallback.
 *
 * v1 checks the permission with the credentials of whoever opened the
 * file: the launcher opens the files, its init (in a new user namespace)
 * writes them.
 */
int
cage_cgroups_open_tasks(const struct cage_cgroups *cg, bool parent, int fds[_CG_V1_MAX])
{
	char path[PATH_MAX];

	for (int i = 0; i < _CG_V1_MAX; i++)
		fds[i] = -1;
	for (int i = 0; i < _CG_V1_MAX; i++) {
		const char *slash = cg->v1[i] ? strrchr(cg->v1[i], '/') : NULL;
		int len = parent && slash ? (int)(slash - cg->v1[i]) : INT_MAX;

		if (!cg->v1[i])
			continue;
		if (snprintf(path, sizeof(path), "%.*s/tasks", len, cg->v1[i]) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		fds[i] = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fds[i] < 0)
			return -errno;
	}
	return 0;
}

void
cage_cgroups_close_tasks(int fds[_CG_V1_MAX])
{
	for (int i = 0; i < _CG_V1_MAX; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

int
cage_cgroups_join_tasks(const int fds[_CG_V1_MAX])
{
	for (int i = 0; i < _CG_V1_MAX; i++)
		if (fds[i] >= 0 && write(fds[i], "0", 1) != 1)
			return -errno;
	return 0;
}

int
cage_cgroups_join_v1_self(const struct cage_cgroups *cg)
{
	int fds[_CG_V1_MAX], r;

	r = cage_cgroups_open_tasks(cg, false, fds);
	if (r >= 0)
		r = cage_cgroups_join_tasks(fds);
	cage_cgroups_close_tasks(fds);
	return r;
}

/* Only where CLONE_INTO_CGROUP was refused: the launcher moves its init into cgroup2. */
int
cage_cgroups_join_v2(const struct cage_cgroups *cg, pid_t pid)
{
	char v[32];

	if (!cg->v2)
		return 0;
	snprintf(v, sizeof(v), "%d", (int)pid);
	return write_file(cg->v2, "cgroup.procs", v);
}

int
cage_cgroups_kill(const struct cage_cgroups *cg)
{
	if (!cg->v2)
		return -EOPNOTSUPP;
	return write_file(cg->v2, "cgroup.kill", "1");
}

void
cage_cgroups_remove_v1(struct cage_cgroups *cg)
{
	for (int i = 0; i < _CG_V1_MAX; i++)
		if (cg->v1[i] && rmdir(cg->v1[i]) == 0) {
			free(cg->v1[i]);
			cg->v1[i] = NULL;
		}
}

void
cage_cgroups_destroy(struct cage_cgroups *cg)
{
	if (cg->v2)
		(void)rmdir(cg->v2);
	cage_cgroups_remove_v1(cg);
	cage_cgroups_forget(cg);
}

void
cage_cgroups_forget(struct cage_cgroups *cg)
{
	own_free(cg->own);
	if (cg->v2_fd >= 0)
		close(cg->v2_fd);
	cg->v2_fd = -1;
	free(cg->v2);
	cg->v2 = NULL;
	for (int i = 0; i < _CG_V1_MAX; i++) {
		free(cg->v1[i]);
		cg->v1[i] = NULL;
	}
}
