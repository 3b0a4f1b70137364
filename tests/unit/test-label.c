/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Labels: every way a label can be wrong is refused, on tmpfs and ext4, in
 * the trusted and the user namespace, as root and unprivileged.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "helpers.h"
#include "label/label-internal.h"

/* No pointers: Criterion runs each case in a re-executed process. */
struct fixture {
	char fstype[8];
	unsigned flags;
};

static const char *
attr_of(unsigned flags)
{
	return flags & CLIP_LABEL_ROOTLESS ? CLIP_LABEL_XATTR_ROOTLESS : CLIP_LABEL_XATTR;
}

/* The trusted namespace needs CAP_SYS_ADMIN: those cases run as root only. */
static void
require_namespace(unsigned flags)
{
	if (!(flags & CLIP_LABEL_ROOTLESS) && !test_is_root())
		cr_skip_test("the trusted.* namespace needs root");
}

static struct clip_level *
level(const char *text)
{
	struct clip_level *l = NULL;

	cr_assert_eq(clip_level_parse(&l, text, NULL), 0, "parse %s", text);
	return l;
}

static char *
state_dir(const char *base)
{
	char *s = NULL;

	cr_assert_geq(asprintf(&s, "%s/state", base), 0);
	return s;
}

ParameterizedTestParameters(label, matrix)
{
	static struct fixture params[] = {
		{ "tmpfs", 0 },
		{ "tmpfs", CLIP_LABEL_ROOTLESS },
		{ "ext4", 0 },
		{ "ext4", CLIP_LABEL_ROOTLESS },
	};
	return cr_make_param_array(struct fixture, params, 4);
}

/*
 * One scenario per file system and namespace: the round trip, then each
 * tampering, each refused with -EBADMSG.
 */
ParameterizedTest(struct fixture *f, label, matrix)
{
	_cleanup_free_ char *dir = test_tmpdir(f->fstype), *state = state_dir(dir);
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_level *want = level("s2:c0.c3,c7"), *got = NULL;
	struct clip_error *e = NULL;
	char value[LABEL_VALUE_MAX];
	int a, b;
	ssize_t n;

	require_namespace(f->flags);
	cr_log_info("%s, %s", f->fstype, attr_of(f->flags));
	a = test_file(dir, "a", "document A");
	b = test_file(dir, "b", "document B");

	/* Round trip. */
	cr_assert_eq(clip_label_set(ctx, a, want, f->flags, &e), 0, "%s",
		     clip_error_get_message(e));
	cr_assert_eq(clip_label_get(ctx, a, f->flags, &got, NULL), 0);
	cr_assert(clip_level_equal(got, want));
	cr_assert_eq(clip_label_verify(ctx, a, f->flags, NULL), 0);
	got = clip_level_unref(got);

	/* The value is the documented text form. */
	n = fgetxattr(a, attr_of(f->flags), value, sizeof(value) - 1);
	cr_assert_gt(n, 0);
	value[n] = '\0';
	cr_assert(strncmp(value, "v1 s2:c0.c3,c7 ", 15) == 0, "value: %s", value);
	cr_assert_eq(n, 15 + 64);

	/* Copied onto another file: refused. */
	cr_assert_eq(fsetxattr(b, attr_of(f->flags), value, (size_t)n, 0), 0);
	assert_errno(clip_label_get(ctx, b, f->flags, &got, &e), -EBADMSG);
	cr_assert_null(got, "*ret must stay untouched on failure");
	cr_assert(strstr(clip_error_get_message(e), "does not verify"), "%s",
		  clip_error_get_message(e));
	e = clip_error_free(e);

	/* One byte of the level changed: refused. */
	value[1 + 3] = '3'; /* "v1 s2" -> "v1 s3" */
	cr_assert_eq(fsetxattr(a, attr_of(f->flags), value, (size_t)n, 0), 0);
	assert_errno(clip_label_verify(ctx, a, f->flags, NULL), -EBADMSG);

	/* Truncated: refused. */
	value[1 + 3] = '2';
	cr_assert_eq(fsetxattr(a, attr_of(f->flags), value, (size_t)n - 1, 0), 0);
	assert_errno(clip_label_verify(ctx, a, f->flags, NULL), -EBADMSG);
	cr_assert_eq(fsetxattr(a, attr_of(f->flags), value, 10, 0), 0);
	assert_errno(clip_label_verify(ctx, a, f->flags, NULL), -EBADMSG);

	/* Restored intact: valid again (the test above did change something). */
	cr_assert_eq(fsetxattr(a, attr_of(f->flags), value, (size_t)n, 0), 0);
	cr_assert_eq(clip_label_verify(ctx, a, f->flags, NULL), 0);

	/* Removed: no label. */
	cr_assert_eq(clip_label_remove(ctx, a, f->flags, NULL), 0);
	assert_errno(clip_label_verify(ctx, a, f->flags, NULL), -ENODATA);
	assert_errno(clip_label_remove(ctx, a, f->flags, NULL), -ENODATA);

	clip_level_unref(want);
	clip_ctx_unref(ctx);
	close(a);
	close(b);
}

Test(label, directories_carry_labels)
{
	_cleanup_free_ char *dir = test_tmpdir("ext4"), *state = state_dir(dir);
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_level *l = level("s1:c5");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	cr_assert_eq(clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL), 0);
	cr_assert_eq(clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, NULL), 0);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
	close(fd);
}

Test(label, same_level_on_two_files_gives_two_values)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_level *l = level("s1");
	char va[LABEL_VALUE_MAX], vb[LABEL_VALUE_MAX];
	int a = test_file(dir, "a", "x"), b = test_file(dir, "b", "x");
	ssize_t na, nb;

	cr_assert_eq(clip_label_set(ctx, a, l, CLIP_LABEL_ROOTLESS, NULL), 0);
	cr_assert_eq(clip_label_set(ctx, b, l, CLIP_LABEL_ROOTLESS, NULL), 0);
	na = fgetxattr(a, CLIP_LABEL_XATTR_ROOTLESS, va, sizeof(va));
	nb = fgetxattr(b, CLIP_LABEL_XATTR_ROOTLESS, vb, sizeof(vb));
	cr_assert_eq(na, nb);
	cr_assert_neq(memcmp(va, vb, (size_t)na), 0, "the MAC must bind the inode");
	clip_level_unref(l);
	clip_ctx_unref(ctx);
}

Test(label, trusted_value_replayed_as_user_value_is_refused)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_level *l = level("s3");
	char v[LABEL_VALUE_MAX];
	int fd = test_file(dir, "a", "x");
	ssize_t n;

	require_namespace(0);
	cr_assert_eq(clip_label_set(ctx, fd, l, 0, NULL), 0);
	n = fgetxattr(fd, CLIP_LABEL_XATTR, v, sizeof(v));
	cr_assert_gt(n, 0);
	cr_assert_eq(fsetxattr(fd, CLIP_LABEL_XATTR_ROOTLESS, v, (size_t)n, 0), 0);
	assert_errno(clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, NULL), -EBADMSG);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
}

/*
 * ext4 reuses a freed inode number at once; the inode generation is what
 * tells the new file from the old one.
 */
Test(label, replay_onto_a_reused_inode_number_is_refused)
{
	_cleanup_free_ char *dir = test_tmpdir("ext4"), *state = state_dir(dir);
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_level *l = level("s2");
	char v[LABEL_VALUE_MAX], path[600];
	struct stat st_old, st_new;
	int fd = test_file(dir, "old", "x"), tries;
	ssize_t n;

	cr_assert_eq(clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL), 0);
	n = fgetxattr(fd, CLIP_LABEL_XATTR_ROOTLESS, v, sizeof(v));
	cr_assert_gt(n, 0);
	cr_assert_eq(fstat(fd, &st_old), 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/old", dir);
	cr_assert_eq(unlink(path), 0);

	for (tries = 0; tries < 1000; tries++) {
		char name[32];

		snprintf(name, sizeof(name), "new%d", tries);
		fd = test_file(dir, name, "y");
		cr_assert_eq(fstat(fd, &st_new), 0);
		if (st_new.st_ino == st_old.st_ino)
			break;
		close(fd);
	}
	cr_assert_eq(st_new.st_ino, st_old.st_ino, "ext4 did not reuse inode %llu",
		     (unsigned long long)st_old.st_ino);
	cr_assert_eq(fsetxattr(fd, CLIP_LABEL_XATTR_ROOTLESS, v, (size_t)n, 0), 0);
	assert_errno(clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, NULL), -EBADMSG);
	close(fd);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
}

/* fstatfs() as the library calls it, counted (the per-mount cache saves it). */
static unsigned fstatfs_calls;

int
fstatfs(int fd, struct statfs *buf)
{
	fstatfs_calls++;
	return (int)syscall(SYS_fstatfs, fd, buf);
}

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x4000U
#endif

/*
 * The case below, in a child of its own: unshare(CLONE_NEWUSER) refuses a
 * threaded process, which Criterion's test process may be. 0, 77 (no user
 * namespace), 78 (no unique mount ids: Linux before 6.8), or the step that
 * failed.
 */
static int
fresh_tmpfs_case(const char *dir, const char *state)
{
	struct clip_level *l = NULL;
	struct clip_ctx *ctx = NULL;
	struct stat first, second;
	struct statx sx;
	char mnt[600], v[LABEL_VALUE_MAX];
	int r, fd;
	ssize_t n;

	r = test_unshare_mount();
	if (r)
		return r;
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	if (mkdir(mnt, 0700) < 0 || clip_ctx_new(&ctx) < 0 ||
	    clip_ctx_set_state_dir(ctx, state) < 0 || clip_level_parse(&l, "s2:c1", NULL) < 0)
		return 1;
	if (mount("clip-test", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0)
		return 2;
	if (statx(AT_FDCWD, mnt, 0, STATX_MNT_ID_UNIQUE, &sx) < 0)
		return 3;
	if (!(sx.stx_mask & STATX_MNT_ID_UNIQUE))
		return 78;
	fd = test_file(mnt, "doc", "first");
	if (clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL) < 0)
		return 4;
	/* The mount's identity is known: verifications ask no fstatfs(). */
	fstatfs_calls = 0;
	for (int i = 0; i < 3; i++)
		if (clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, NULL) < 0)
			return 5;
	if (fstatfs_calls != 0)
		return 6;
	n = fgetxattr(fd, CLIP_LABEL_XATTR_ROOTLESS, v, sizeof(v));
	if (n <= 0 || fstat(fd, &first) < 0)
		return 7;
	close(fd);
	if (umount(mnt) < 0 ||
	    mount("clip-test", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0)
		return 8;
	fd = test_file(mnt, "doc", "second");
	/* What makes the case: were it otherwise, it would not test the cache's key. */
	if (fstat(fd, &second) < 0 || second.st_dev != first.st_dev ||
	    second.st_ino != first.st_ino)
		return 9;
	if (fsetxattr(fd, CLIP_LABEL_XATTR_ROOTLESS, v, (size_t)n, 0) < 0)
		return 10;
	/* The copied value: refused, the new mount's identity asked. */
	fstatfs_calls = 0;
	if (clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, NULL) != -EBADMSG)
		return 11;
	if (fstatfs_calls != 1)
		return 12;
	/* Labelled anew there, it verifies: the context learnt the second mount. */
	if (clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL) < 0 ||
	    clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, NULL) < 0)
		return 13;
	close(fd);
	if (umount(mnt) < 0 || rmdir(mnt) < 0)
		return 14;
	clip_level_unref(l);
	clip_ctx_unref(ctx);
	return 0;
}

/*
 * The identity of a file system is kept per mount (label.c, fs_seen_*()),
 * so that a verification asks no fstatfs(). A fresh tmpfs mounted where the
 * first was has the same device number and gives its first file the same
 * inode number, but another f_fsid: a value copied there must not verify,
 * in a context that verified on the first.
 */
Test(label, value_copied_to_a_fresh_tmpfs_with_the_same_dev_and_ino_is_refused)
{
	_cleanup_free_ char *dir = test_tmpdir("ext4"), *state = state_dir(dir);
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(fresh_tmpfs_case(dir, state));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "status %d", status);
	if (WEXITSTATUS(status) == 77)
		cr_skip_test("no user namespace here");
	if (WEXITSTATUS(status) == 78)
		cr_skip_test("no unique mount ids (Linux before 6.8): no cache to test");
	cr_assert_eq(WEXITSTATUS(status), 0,
		     "step %d (6: an fstatfs() per verification; 11: the copy verified)",
		     WEXITSTATUS(status));
}

Test(label, missing_key_is_enokey_and_nothing_is_created)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	struct clip_ctx *ctx = test_ctx(state), *other;
	_cleanup_free_ char *other_state = NULL;
	struct clip_level *l = level("s1");
	struct clip_error *e = NULL;
	int fd = test_file(dir, "a", "x");
	struct stat st;

	cr_assert_eq(clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL), 0);
	cr_assert_geq(asprintf(&other_state, "%s/other", dir), 0);
	other = test_ctx(other_state);
	assert_errno(clip_label_verify(other, fd, CLIP_LABEL_ROOTLESS, &e), -ENOKEY);
	cr_assert_eq(clip_error_get_errno(e), -ENOKEY);
	cr_assert_neq(stat(other_state, &st), 0, "verifying must not create a state directory");
	clip_error_free(e);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
	clip_ctx_unref(other);
}

Test(label, wrong_key_is_ebadmsg)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	_cleanup_free_ char *other_state = NULL;
	struct clip_ctx *ctx = test_ctx(state), *other;
	struct clip_level *l = level("s1");
	int fd = test_file(dir, "a", "x"), probe = test_file(dir, "probe", "y");

	cr_assert_eq(clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL), 0);
	cr_assert_geq(asprintf(&other_state, "%s/other", dir), 0);
	other = test_ctx(other_state);
	/* Signing once makes the other context create its own key. */
	cr_assert_eq(clip_label_set(other, probe, l, CLIP_LABEL_ROOTLESS, NULL), 0);
	assert_errno(clip_label_verify(other, fd, CLIP_LABEL_ROOTLESS, NULL), -EBADMSG);
	cr_assert_eq(clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, NULL), 0);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
	clip_ctx_unref(other);
}

Test(label, key_file_is_created_0600_once)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	_cleanup_free_ char *key = NULL;
	struct clip_ctx *ctx = test_ctx(state), *again;
	struct clip_level *l = level("s1");
	int fd = test_file(dir, "a", "x");
	struct stat st, st2;

	cr_assert_eq(clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL), 0);
	cr_assert_geq(asprintf(&key, "%s/mac.key", state), 0);
	cr_assert_eq(stat(key, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600);
	cr_assert_eq(st.st_size, 32);
	cr_assert_eq(stat(state, &st2), 0);
	cr_assert_eq(st2.st_mode & 07777, 0700);

	/* A new context on the same state uses the same key. */
	again = test_ctx(state);
	cr_assert_eq(clip_label_verify(again, fd, CLIP_LABEL_ROOTLESS, NULL), 0);
	cr_assert_eq(stat(key, &st2), 0);
	cr_assert_eq(st.st_ino, st2.st_ino, "the key must not be recreated");
	clip_level_unref(l);
	clip_ctx_unref(ctx);
	clip_ctx_unref(again);
}

static void
make_key(const char *state, mode_t mode, size_t size)
{
	char path[600];
	unsigned char key[64] = { 1 };
	int fd;

	cr_assert_eq(mkdir(state, 0700), 0);
	snprintf(path, sizeof(path), "%s/mac.key", state);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, key, size), (ssize_t)size);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

Test(label, key_file_with_wider_mode_is_refused)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	_cleanup_free_ char *key = NULL;
	struct clip_ctx *ctx = test_ctx(state), *later;
	struct clip_level *l = level("s1");
	struct clip_error *e = NULL;
	int fd = test_file(dir, "a", "x"), other = test_file(dir, "b", "y");

	cr_assert_eq(clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL), 0);
	cr_assert_geq(asprintf(&key, "%s/mac.key", state), 0);
	cr_assert_eq(chmod(key, 0644), 0);
	/* A context that has not loaded the key yet refuses it, to sign and to verify. */
	later = test_ctx(state);
	assert_errno(clip_label_verify(later, fd, CLIP_LABEL_ROOTLESS, &e), -EPERM);
	cr_assert(strstr(clip_error_get_message(e), "0644"), "%s", clip_error_get_message(e));
	clip_error_free(e);
	assert_errno(clip_label_set(later, other, l, CLIP_LABEL_ROOTLESS, NULL), -EPERM);
	cr_assert_eq(chmod(key, 0640), 0);
	assert_errno(clip_label_set(later, other, l, CLIP_LABEL_ROOTLESS, NULL), -EPERM);
	cr_assert_eq(chmod(key, 0600), 0);
	cr_assert_eq(clip_label_verify(later, fd, CLIP_LABEL_ROOTLESS, NULL), 0);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
	clip_ctx_unref(later);
}

Test(label, key_file_of_wrong_size_is_refused)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_level *l = level("s1");
	int fd = test_file(dir, "a", "x");

	make_key(state, 0600, 16);
	assert_errno(clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL), -EBADMSG);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
}

Test(label, key_file_owned_by_another_user_is_refused)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	_cleanup_free_ char *key = NULL;
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_level *l = level("s1");
	int fd = test_file(dir, "a", "x");

	if (!test_is_root())
		cr_skip_test("chown needs root");
	make_key(state, 0600, 32);
	cr_assert_geq(asprintf(&key, "%s/mac.key", state), 0);
	cr_assert_eq(chown(key, TEST_UID, TEST_GID), 0);
	assert_errno(clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL), -EPERM);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
}

Test(label, key_file_as_symlink_is_refused)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	_cleanup_free_ char *key = NULL, *target = NULL;
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_level *l = level("s1");
	int fd = test_file(dir, "a", "x");

	cr_assert_eq(mkdir(state, 0700), 0);
	close(test_file(dir, "elsewhere", "0123456789abcdef0123456789abcdef"));
	cr_assert_geq(asprintf(&key, "%s/mac.key", state), 0);
	cr_assert_geq(asprintf(&target, "%s/elsewhere", dir), 0);
	cr_assert_eq(symlink(target, key), 0);
	cr_assert_lt(clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL), 0);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
}

Test(label, group_writable_state_dir_is_refused)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_level *l = level("s1");
	int fd = test_file(dir, "a", "x");

	cr_assert_eq(mkdir(state, 0700), 0);
	cr_assert_eq(chmod(state, 0770), 0);
	assert_errno(clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL), -EPERM);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
}

Test(label, opath_fd_is_refused)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_level *l = level("s1"), *got = NULL;
	struct clip_error *e = NULL;
	int fd = open(dir, O_PATH | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	assert_errno(clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, &e), -EBADF);
	cr_assert(strstr(clip_error_get_message(e), "O_PATH"), "%s", clip_error_get_message(e));
	clip_error_free(e);
	assert_errno(clip_label_get(ctx, fd, CLIP_LABEL_ROOTLESS, &got, NULL), -EBADF);
	cr_assert_null(got);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
	close(fd);
}

Test(label, only_files_and_directories)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_level *l = level("s1");
	int fds[2], null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	assert_errno(clip_label_set(ctx, null, l, CLIP_LABEL_ROOTLESS, NULL), -EMEDIUMTYPE);
	cr_assert_eq(pipe(fds), 0);
	assert_errno(clip_label_set(ctx, fds[0], l, CLIP_LABEL_ROOTLESS, NULL), -EMEDIUMTYPE);
	assert_errno(clip_label_verify(ctx, fds[0], CLIP_LABEL_ROOTLESS, NULL), -EMEDIUMTYPE);
	close(fds[0]);
	close(fds[1]);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
	assert_errno(clip_label_set(ctx, fds[0], l, CLIP_LABEL_ROOTLESS, NULL), -EMEDIUMTYPE);
	close(null);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
}

Test(label, bad_arguments)
{
	struct clip_ctx *ctx = test_ctx("/nonexistent");
	struct clip_level *l = level("s1"), *got = NULL;
	struct clip_error *e = NULL;

	assert_errno(clip_label_set(NULL, 0, l, 0, NULL), -EINVAL);
	assert_errno(clip_label_set(ctx, -1, l, 0, NULL), -EBADF);
	assert_errno(clip_label_set(ctx, 0, NULL, 0, NULL), -EINVAL);
	assert_errno(clip_label_set(ctx, 0, l, 1u << 7, NULL), -EINVAL);
	assert_errno(clip_label_get(ctx, 0, 0, NULL, NULL), -EINVAL);
	assert_errno(clip_label_verify(ctx, 0, 1u << 9, NULL), -EINVAL);
	assert_errno(clip_label_remove(ctx, -5, 0, NULL), -EBADF);
	/* A closed descriptor number. */
	assert_errno(clip_label_get(ctx, 1000, 0, &got, &e), -EBADF);
	clip_error_free(e);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
}

/* Value codec, directly: the fuzzer's oracle in small. */
Test(label, value_codec_is_strict)
{
	static const char *const bad[] = {
		"",
		"v",
		"v2 s1 0000000000000000000000000000000000000000000000000000000000000000",
		"v1 s1 000000000000000000000000000000000000000000000000000000000000000",
		"v1 s1 00000000000000000000000000000000000000000000000000000000000000000",
		"v1 s1 000000000000000000000000000000000000000000000000000000000000000A",
		"v1  s1 0000000000000000000000000000000000000000000000000000000000000000",
		"v1 s1  0000000000000000000000000000000000000000000000000000000000000000",
		"v1 s1:c0,c1 0000000000000000000000000000000000000000000000000000000000000000",
		"v1 s99 0000000000000000000000000000000000000000000000000000000000000000",
		"v1 0000000000000000000000000000000000000000000000000000000000000000",
	};
	struct clip_level *l = NULL;
	uint8_t mac[LABEL_MAC_SIZE];
	char out[LABEL_VALUE_MAX];
	const char *good =
		"v1 s1:c0.c1 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_errno(label_value_parse(bad[i], strlen(bad[i]), &l, mac, NULL), -EBADMSG);
		cr_assert_null(l, "case %zu", i);
	}
	cr_assert_eq(label_value_parse(good, strlen(good), &l, mac, NULL), 0);
	cr_assert_eq(label_value_format(l, mac, out), (int)strlen(good));
	cr_assert_str_eq(out, good);
	clip_level_unref(l);
}

static int
rootless_as_user(void *userdata)
{
	const char *dir = userdata;
	struct clip_level *l = NULL, *got = NULL;
	struct clip_ctx *ctx = NULL;
	char state[600], file[600];
	int fd;

	if (test_is_root())
		return 10; /* not dropped */
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(file, sizeof(file), "%s/doc", dir);
	if (clip_ctx_new(&ctx) < 0 || clip_ctx_set_state_dir(ctx, state) < 0)
		return 11;
	if (clip_level_parse(&l, "s1:c2", NULL) < 0)
		return 12;
	fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return 13;
	/* The trusted namespace is out of reach... */
	if (clip_label_set(ctx, fd, l, 0, NULL) != -EPERM)
		return 14;
	/* ...the user namespace is not, and the MAC protects it. */
	if (clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL) < 0)
		return 15;
	if (clip_label_get(ctx, fd, CLIP_LABEL_ROOTLESS, &got, NULL) < 0 ||
	    !clip_level_equal(l, got))
		return 16;
	if (fsetxattr(fd, CLIP_LABEL_XATTR_ROOTLESS, "v1 s1 00", 8, 0) < 0)
		return 17;
	if (clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, NULL) != -EBADMSG)
		return 18;
	clip_level_unref(got);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
	close(fd);
	return 0;
}

Test(label, rootless_mode_as_unprivileged_user)
{
	_cleanup_free_ char *dir = test_tmpdir("ext4");

	if (test_is_root())
		cr_assert_eq(chown(dir, TEST_UID, TEST_GID), 0);
	cr_assert_eq(test_run_unprivileged(rootless_as_user, dir), 0,
		     "see rootless_as_user() for the failing step");
}

static int
trusted_invisible_to_user(void *userdata)
{
	const char *path = userdata;
	struct clip_level *got = NULL;
	struct clip_ctx *ctx = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0 || clip_ctx_new(&ctx) < 0)
		return 20;
	/* An unprivileged reader cannot even see a trusted label. */
	r = clip_label_get(ctx, fd, 0, &got, NULL);
	clip_ctx_unref(ctx);
	return r == -ENODATA ? 0 : 21;
}

Test(label, trusted_label_is_invisible_to_unprivileged_users)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	_cleanup_free_ char *path = NULL;
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_level *l = level("s4");
	int fd = test_file(dir, "a", "x");

	if (!test_is_root())
		cr_skip_test("setting a trusted label needs root");
	cr_assert_eq(clip_label_set(ctx, fd, l, 0, NULL), 0);
	cr_assert_geq(asprintf(&path, "%s/a", dir), 0);
	cr_assert_eq(test_run_unprivileged(trusted_invisible_to_user, path), 0);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
}

Test(label, failures_always_carry_a_message)
{
	struct clip_ctx *ctx = test_ctx("/nonexistent");
	struct clip_level *l = level("s1"), *got = NULL;
	struct clip_error *e = NULL;

	/* Even argument checks fill reterr: a caller never gets a bare errno. */
	assert_errno(clip_label_set(ctx, 0, l, 1u << 5, &e), -EINVAL);
	cr_assert_not_null(e);
	cr_assert_eq(clip_error_get_errno(e), -EINVAL);
	e = clip_error_free(e);
	assert_errno(clip_label_get(NULL, 0, 0, &got, &e), -EINVAL);
	cr_assert_not_null(e);
	e = clip_error_free(e);
	assert_errno(clip_label_verify(ctx, -1, 0, &e), -EBADF);
	cr_assert_eq(clip_error_get_errno(e), -EBADF);
	e = clip_error_free(e);
	assert_errno(clip_selinux_context_get_level(NULL, &got, &e), -EINVAL);
	cr_assert_not_null(e);
	clip_error_free(e);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
}

Test(label, changing_the_state_dir_drops_the_loaded_key)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *state = state_dir(dir);
	_cleanup_free_ char *other = NULL;
	struct clip_ctx *ctx = test_ctx(state);
	struct clip_level *l = level("s1");
	int fd = test_file(dir, "a", "x");

	cr_assert_eq(clip_label_set(ctx, fd, l, CLIP_LABEL_ROOTLESS, NULL), 0);
	cr_assert_geq(asprintf(&other, "%s/other", dir), 0);
	/* A key cached from the old directory must not answer for the new one. */
	cr_assert_eq(clip_ctx_set_state_dir(ctx, other), 0);
	assert_errno(clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, NULL), -ENOKEY);
	cr_assert_eq(clip_ctx_set_state_dir(ctx, state), 0);
	cr_assert_eq(clip_label_verify(ctx, fd, CLIP_LABEL_ROOTLESS, NULL), 0);
	clip_level_unref(l);
	clip_ctx_unref(ctx);
	close(fd);
}
