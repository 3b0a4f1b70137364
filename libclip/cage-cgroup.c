/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A cage's cgroups. The host may be unified (cgroup2 at /sys/fs/cgroup),
 * hybrid (cgroup2 at /sys/fs/cgroup/unified, often without the memory and
 * pids controllers, and the v1 hierarchies beside it) or legacy. Each
 * limit goes where the host has its controller: cgroup2 when the
 * launcher's cgroup delegates it, else the v1 hierarchy. A cgroup2 cgroup
 * is made even without controllers: it gives cgroup.kill and a
 * CLONE_INTO_CGROUP target. What cannot be applied is reported, never
 * pretended.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "cage-cgroup.h"
#include "log.h"

static const char *const v1_names[_CG_V1_MAX] = { "memory", "pids", "cpu" };

/* This process's path in a hierarchy: "0::" for cgroup2, or a v1 controller. */
static int
own_path(const char *controller, char *buf, size_t size)
{
	char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2, *nl;

		if (!c1 || !(c2 = strchr(c1 + 1, ':')))
			continue;
		*c1 = *c2 = '\0';
		nl = strchr(c2 + 1, '\n');
		if (nl)
			*nl = '\0';
		if (controller) {
			/* "cpu,cpuacct" lists several. */
			char *tok, *save = NULL;
			bool found = false;

			for (tok = strtok_r(c1 + 1, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save))
				found |= strcmp(tok, controller) == 0;
			if (!found)
				continue;
		} else if (strcmp(line, "0") != 0 || c1[1] != '\0')
			continue; /* cgroup2 is "0::PATH" */
		r = snprintf(buf, size, "%s", strcmp(c2 + 1, "/") == 0 ? "" : c2 + 1) < (int)size
			    ? 0
			    : -ENAMETOOLONG;
		break;
	}
	fclose(f);
	return r;
}

static bool
is_fs(const char *path, long magic)
{
	struct statfs s;

	return statfs(path, &s) == 0 && (long)s.f_type == magic;
}

static int
write_file(const char *dir, const char *file, const char *value)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	if (n < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	close(fd);
	return 0;
}

static bool
file_has_word(const char *dir, const char *file, const char *word)
{
	char path[PATH_MAX], buf[1024];
	char *tok, *save = NULL;
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (strcmp(tok, word) == 0)
			return true;
	return false;
}

/* Make DIR/leaf under the launcher's own cgroup of a hierarchy mounted at @mnt. */
static int
make_leaf(const char *mnt, const char *controller, const char *leaf, char **ret)
{
	char own[PATH_MAX], path[PATH_MAX];
	int r;

	r = own_path(controller, own, sizeof(own));
	if (r < 0)
		return r;
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

/* Whether a v2 cgroup can take @controller: its parent delegates it, or can be made to. */
static bool
v2_can(const char *path, const char *controller)
{
	char parent[PATH_MAX], plus[64];
	char *slash;

	if (file_has_word(path, "cgroup.controllers", controller))
		return true;
	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	if (!slash)
		return false;
	*slash = '\0';
	if (!file_has_word(parent, "cgroup.controllers", controller))
		return false;
	snprintf(plus, sizeof(plus), "+%s", controller);
	return write_file(parent, "cgroup.subtree_control", plus) == 0 &&
	       file_has_word(path, "cgroup.controllers", controller);
}

static int
apply_v2(struct cage_cgroups *cg, const struct clip_cage_limits *l, unsigned *done)
{
	char v[64];

	if (l->memory_max && v2_can(cg->v2, "memory")) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory_max);
		if (write_file(cg->v2, "memory.max", v) == 0) {
			(void)write_file(cg->v2, "memory.swap.max", "0");
			*done |= CLIP_CAGE_MISSING_MEMORY;
		}
	}
	if (l->tasks_max && v2_can(cg->v2, "pids")) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->tasks_max);
		if (write_file(cg->v2, "pids.max", v) == 0)
			*done |= CLIP_CAGE_MISSING_TASKS;
	}
	if (l->cpu_quota_percent && v2_can(cg->v2, "cpu")) {
		snprintf(v, sizeof(v), "%u 100000", l->cpu_quota_percent * 1000);
		if (write_file(cg->v2, "cpu.max", v) == 0)
			*done |= CLIP_CAGE_MISSING_CPU;
	}
	return 0;
}

static int
apply_v1(struct cage_cgroups *cg, const char *leaf, const struct clip_cage_limits *l,
	 unsigned *done)
{
	static const unsigned bits[_CG_V1_MAX] = { CLIP_CAGE_MISSING_MEMORY,
						   CLIP_CAGE_MISSING_TASKS, CLIP_CAGE_MISSING_CPU };
	const uint64_t want[_CG_V1_MAX] = { l->memory_max, l->tasks_max, l->cpu_quota_percent };
	char mnt[64], v[64];

	for (int i = 0; i < _CG_V1_MAX; i++) {
		int r = 0;

		if (!want[i] || (*done & bits[i]))
			continue;
		snprintf(mnt, sizeof(mnt), "/sys/fs/cgroup/%s", v1_names[i]);
		if (!is_fs(mnt, CGROUP_SUPER_MAGIC))
			continue;
		if (make_leaf(mnt, v1_names[i], leaf, &cg->v1[i]) < 0)
			continue;
		switch (i) {
		case CG_V1_MEMORY:
			snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory_max);
			r = write_file(cg->v1[i], "memory.limit_in_bytes", v);
			/* Swap counted too, where the kernel accounts it. */
			if (r == 0)
				(void)write_file(cg->v1[i], "memory.memsw.limit_in_bytes", v);
			break;
		case CG_V1_PIDS:
			snprintf(v, sizeof(v), "%llu", (unsigned long long)l->tasks_max);
			r = write_file(cg->v1[i], "pids.max", v);
			break;
		case CG_V1_CPU:
			r = write_file(cg->v1[i], "cpu.cfs_period_us", "100000");
			snprintf(v, sizeof(v), "%u", l->cpu_quota_percent * 1000);
			if (r == 0)
				r = write_file(cg->v1[i], "cpu.cfs_quota_us", v);
			break;
		}
		if (r == 0)
			*done |= bits[i];
	}
	return 0;
}

unsigned
cage_cgroups_create(struct clip_ctx *ctx, struct cage_cgroups *cg, const char *leaf,
		    const struct clip_cage_limits *l)
{
	unsigned wanted = 0, done = 0;
	const char *root = v2_root();

	*cg = (struct cage_cgroups){ .v2_fd = -1 };
	if (l->memory_max)
		wanted |= CLIP_CAGE_MISSING_MEMORY;
	if (l->tasks_max)
		wanted |= CLIP_CAGE_MISSING_TASKS;
	if (l->cpu_quota_percent)
		wanted |= CLIP_CAGE_MISSING_CPU;
	/*
	 * No limit, no cgroup: stopping kills the pid namespace's init anyway,
	 * and the cgroup namespace already roots the cage at our cgroup.
	 */
	if (!wanted)
		return 0;

	if (root && make_leaf(root, NULL, leaf, &cg->v2) == 0) {
		cg->v2_fd = open(cg->v2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		apply_v2(cg, l, &done);
	} else
		log_info(ctx, "no cgroup2 cgroup for the cage: stopping kills its pid namespace");
	apply_v1(cg, leaf, l, &done);
	if (wanted & ~done)
		log_warning(ctx, "cage limits not applied on this host:%s%s%s",
			    (wanted & ~done & CLIP_CAGE_MISSING_MEMORY) ? " memory" : "",
			    (wanted & ~done & CLIP_CAGE_MISSING_TASKS) ? " tasks" : "",
			    (wanted & ~done & CLIP_CAGE_MISSING_CPU) ? " cpu" : "");
	return (wanted & ~done) | (cg->v2 ? 0 : CLIP_CAGE_MISSING_CGROUP);
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
cage_cgroups_open_tasks(const struct cage_cgroups *cg, int fds[_CG_V1_MAX])
{
	char path[PATH_MAX];

	for (int i = 0; i < _CG_V1_MAX; i++)
		fds[i] = -1;
	for (int i = 0; i < _CG_V1_MAX; i++) {
		if (!cg->v1[i])
			continue;
		if (snprintf(path, sizeof(path), "%s/tasks", cg->v1[i]) >= (int)sizeof(path))
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

	r = cage_cgroups_open_tasks(cg, fds);
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
cage_cgroups_destroy(struct cage_cgroups *cg)
{
	if (cg->v2_fd >= 0)
		close(cg->v2_fd);
	cg->v2_fd = -1;
	if (cg->v2)
		(void)rmdir(cg->v2);
	free(cg->v2);
	cg->v2 = NULL;
	for (int i = 0; i < _CG_V1_MAX; i++) {
		if (cg->v1[i])
			(void)rmdir(cg->v1[i]);
		free(cg->v1[i]);
		cg->v1[i] = NULL;
	}
}

void
cage_cgroups_forget(struct cage_cgroups *cg)
{
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
