/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The registry of long-lived cages: a cage started with
 * CLIP_CAGE_START_REGISTER is recorded under its name in STATE_DIR/cages,
 * NAME.run (its init's pid and start time, its cgroups) and NAME.cage (its
 * profile), so that another process finds it again (clip_cage_attach(),
 * clip_cage_list()), checking through a pidfd that the pid was not reused.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <clip/cage.h>

#include "cage-internal.h"
#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/log.h"

#define REGISTRY_DIR "cages"
#define REGISTRY_FILE_MAX 8192
/* NAME.spawned: one 32-bit pid per slot, pid % SPAWNED_SLOTS. */
#define SPAWNED_SLOTS 256

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
		return error_set_errno(reterr, -errno, "cannot create the cage registry %s/%s",
				       clip_ctx_get_state_dir(ctx), REGISTRY_DIR);
	fd = openat(state, REGISTRY_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT)
		return -ENODATA;
	if (fd < 0)
		return error_set_errno(reterr, -errno, "cannot open the cage registry %s/%s",
				       clip_ctx_get_state_dir(ctx), REGISTRY_DIR);
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
	int fd = cage_pidfd_open(e->pid);

	if (fd < 0)
		return -ENODATA;
	/* Checked after opening: the pidfd cannot move to a recycled pid. */
	if (cage_proc_start_time(e->pid) != e->start || cage_pidfd_signal(fd, 0) < 0) {
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
	snprintf(file, sizeof(file), "%s.spawned", name);
	(void)unlinkat(dir, file, 0);
}

/* The name must be free: a live entry is refused, a stale one removed. */
int
cage_registry_claim(struct clip_cage *c, struct clip_error **reterr)
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

int
cage_registry_write(struct clip_cage *c, struct clip_error **reterr)
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
	/* A new registration knows no spawned process yet (NAME.spawned of a stale one goes). */
	snprintf(file, sizeof(file), "%s.spawned", c->profile->name);
	(void)unlinkat(dir, file, 0);
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
		return error_set_errno(reterr, r, "cannot write %s/%s/%s, cage %s's registry entry",
				       clip_ctx_get_state_dir(c->ctx), REGISTRY_DIR, file,
				       c->profile->name);
	c->registered = true;
	return 0;
}

void
cage_registry_remove(struct clip_cage *c)
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

/*
 * The processes spawned into a registered cage, by whichever launcher:
 * NAME.spawned, one pid per slot, so that the reader of the cage's
 * Landlock denials (cage-audit.c) knows the domains they made, even
 * after they ended. A slot is overwritten by a later pid of the same
 * residue: the last processes are known, as in the launcher's own ring.
 */
void
cage_registry_note_spawn(struct clip_cage *c, pid_t pid)
{
	_cleanup_close_ int dir = -1, fd = -1;
	uint32_t v = (uint32_t)pid;
	char file[NAME_MAX];

	if (!c->registered || pid <= 0)
		return; /* not the registered cage's object (its launcher's, or attached) */
	dir = registry_dir(c->ctx, false, NULL);
	if (dir < 0)
		return;
	snprintf(file, sizeof(file), "%s.run", c->profile->name);
	if (faccessat(dir, file, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return; /* removed meanwhile */
	snprintf(file, sizeof(file), "%s.spawned", c->profile->name);
	fd = openat(dir, file, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0 &&
	    pwrite(fd, &v, sizeof(v), (off_t)(pid % SPAWNED_SLOTS) * (off_t)sizeof(v)) < 0)
		log_debug(c->ctx, "cage %s: cannot note spawned pid %d: %m", c->profile->name,
			  (int)pid);
}

bool
cage_registry_spawned(struct clip_cage *c, pid_t pid)
{
	_cleanup_close_ int dir = -1, fd = -1;
	uint32_t v = 0;
	char file[NAME_MAX];

	if (!c->registered || pid <= 0)
		return false;
	dir = registry_dir(c->ctx, false, NULL);
	if (dir < 0)
		return false;
	snprintf(file, sizeof(file), "%s.spawned", c->profile->name);
	fd = openat(dir, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	return fd >= 0 &&
	       pread(fd, &v, sizeof(v), (off_t)(pid % SPAWNED_SLOTS) * (off_t)sizeof(v)) ==
		       (ssize_t)sizeof(v) &&
	       v == (uint32_t)pid;
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
	int r;

	clip_assert_reterr(reterr);
	cage_ctx_assert_error(ctx, reterr);
	ctx_assert_log_return(
		ctx, ret,
		api_return(error_set(reterr, -EINVAL, "%s: ret is NULL", __func__), reterr));
	ctx_assert_log_return(
		ctx, name,
		api_return(error_set(reterr, -EINVAL, "%s: the name is NULL", __func__), reterr));
	/* The same rule as profile names: it becomes a file name. */
	r = cage_name_check(name, reterr);
	if (r < 0)
		return api_return(r, reterr);

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
	dp = dir_stream(dir);
	if (!dp)
		return -ENOMEM;
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
	cage_ctx_assert_error(ctx, reterr);
	ctx_assert_log_return(
		ctx, ret,
		api_return(error_set(reterr, -EINVAL, "%s: ret is NULL", __func__), reterr));

	return api_return(cage_list(ctx, ret, reterr), reterr);
}
