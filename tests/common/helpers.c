/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/magic.h>
#include <linux/netlink.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cage/cage-internal.h"
#include "helpers.h"

#ifndef EXT4_SUPER_MAGIC
#define EXT4_SUPER_MAGIC 0xEF53
#endif

static char cleanup_dirs[8][256];
static int n_cleanup_dirs;

static int
remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

/*
 * FTW_MOUNT: a mount a test left inside its directory (a bind of a host
 * file or tree) is never walked into, so that the clean-up cannot remove
 * what the mount shows from elsewhere, such as /dev/null.
 */
static void
remove_tmpdirs(void)
{
	for (int i = 0; i < n_cleanup_dirs; i++)
		if (nftw(cleanup_dirs[i], remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0)
			fprintf(stderr, "cannot remove %s: %s\n", cleanup_dirs[i], strerror(errno));
}

char *
test_tmpdir(const char *fstype)
{
	static const struct {
		const char *type;
		unsigned long magic;
		const char *bases[3];
	} candidates[] = {
		{ "tmpfs", TMPFS_MAGIC, { "/dev/shm", "/run", "/tmp" } },
		{ "ext4", EXT4_SUPER_MAGIC, { "/var/tmp", "/tmp", "/root" } },
	};

	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		if (strcmp(candidates[i].type, fstype) != 0)
			continue;
		for (int j = 0; j < 3; j++) {
			struct statfs s;
			char path[256];

			if (statfs(candidates[i].bases[j], &s) < 0 ||
			    (unsigned long)s.f_type != candidates[i].magic)
				continue;
			snprintf(path, sizeof(path), "%s/clip-test-XXXXXX", candidates[i].bases[j]);
			if (!mkdtemp(path))
				continue;
			/* Readable by the unprivileged tests too. */
			chmod(path, 0755);
			if (n_cleanup_dirs == 0)
				atexit(remove_tmpdirs);
			if (n_cleanup_dirs < 8)
				strcpy(cleanup_dirs[n_cleanup_dirs++], path);
			return strdup(path);
		}
	}
	cr_skip_test("no writable %s file system here", fstype);
	return NULL;
}

static void
log_to_criterion(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	cr_log_info("libclip <%d>: %s", priority, message);
}

struct clip_ctx *
test_ctx(const char *state_dir)
{
	struct clip_ctx *ctx = NULL;

	cr_assert_eq(clip_ctx_new(&ctx), 0);
	cr_assert_eq(clip_ctx_set_log_fn(ctx, log_to_criterion, NULL), 0);
	cr_assert_eq(clip_ctx_set_log_priority(ctx, LOG_DEBUG), 0);
	if (state_dir)
		cr_assert_eq(clip_ctx_set_state_dir(ctx, state_dir), 0);
	return ctx;
}

int
test_file(const char *dir, const char *name, const char *content)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	return fd;
}

bool
test_is_root(void)
{
	unsigned inside, outside, count;
	FILE *f;
	bool initial;

	if (geteuid() != 0)
		return false;
	/* The initial user namespace maps every id; a container's does not. */
	f = fopen("/proc/self/uid_map", "re");
	if (!f)
		return false;
	initial = fscanf(f, "%u %u %u", &inside, &outside, &count) == 3 && inside == 0 &&
		  outside == 0 && count == UINT32_MAX;
	fclose(f);
	return initial;
}

void
test_drop_privileges(void)
{
	if (!test_is_root())
		return;
	if (setgroups(0, NULL) < 0 || setresgid(TEST_GID, TEST_GID, TEST_GID) < 0 ||
	    setresuid(TEST_UID, TEST_UID, TEST_UID) < 0)
		_exit(99);
}

static int
write_map(const char *file, const char *text)
{
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

int
test_unshare_mount(void)
{
	if (geteuid() != 0) {
		char uid_map[64], gid_map[64];

		snprintf(uid_map, sizeof(uid_map), "0 %u 1", (unsigned)geteuid());
		snprintf(gid_map, sizeof(gid_map), "0 %u 1", (unsigned)getegid());
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			return 77;
		if (write_map("/proc/self/setgroups", "deny") < 0)
			return 90;
		if (write_map("/proc/self/uid_map", uid_map) < 0)
			return 91;
		if (write_map("/proc/self/gid_map", gid_map) < 0)
			return 92;
	} else if (unshare(CLONE_NEWNS) < 0)
		return 93;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return 94;
	return 0;
}

int
test_run_unprivileged(int (*fn)(void *), void *userdata)
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		test_drop_privileges();
		_exit(fn(userdata));
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

struct clip_level *
test_level(const char *text)
{
	struct clip_level *l = NULL;
	struct clip_error *err = NULL;
	int r = clip_level_parse(&l, text, &err);

	cr_assert_eq(r, 0, "parse \"%s\": %d %s", text, r, clip_error_get_message(err));
	cr_assert_not_null(l);
	return l;
}

struct clip_policy *
test_policy(const char *text)
{
	struct clip_policy *p = NULL;
	struct clip_error *e = NULL;

	cr_assert_eq(clip_policy_parse(&p, text, strlen(text), "test.policy", &e), 0, "%s",
		     e ? clip_error_get_message(e) : "");
	return p;
}

bool
test_dir_is_empty(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(fd);
	struct dirent *de;
	bool empty = true;

	cr_assert_not_null(d, "cannot read the directory");
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	closedir(d);
	return empty;
}

int
test_audit_set(int enabled)
{
	struct {
		struct nlmsghdr h;
		struct audit_status s;
	} m = { .h = { .nlmsg_len = NLMSG_LENGTH(sizeof(m.s)),
		       .nlmsg_type = AUDIT_SET,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK },
		.s = { .mask = AUDIT_STATUS_ENABLED, .enabled = (uint32_t) !!enabled } };
	struct {
		struct nlmsghdr h;
		struct nlmsgerr e;
	} ack;
	int was = cage_audit_enabled(), fd, r = 0;

	if (was < 0)
		return -EOPNOTSUPP;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
	if (fd < 0)
		return -errno;
	if (send(fd, &m, m.h.nlmsg_len, 0) < 0)
		r = -errno;
	else if (recv(fd, &ack, sizeof(ack), 0) < (ssize_t)sizeof(ack))
		r = -EPROTO;
	else if (ack.h.nlmsg_type == NLMSG_ERROR && ack.e.error < 0)
		r = ack.e.error;
	close(fd);
	return r < 0 ? r : was;
}
