/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The internal helpers every module shares: descriptors over a socket, a
 * string into a file, structs that grow, what a name may hold.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "helpers.h"
#include "base/test-hooks.h"
#include "base/utf8.h"
#include "base/util.h"

/* A SOCK_SEQPACKET pair, as the cage's and the mediator's sockets. */
static void
pair(int sv[2])
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

/* Whether @fd is open in this process. */
static bool
is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

Test(util, descriptors_go_with_their_message)
{
	int sv[2], fds[3], got[FDS_MAX] = { -1, -1, -1, -1 };
	char buf[8] = "";
	size_t n = 99;

	pair(sv);
	for (int i = 0; i < 3; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cr_assert_eq(send_fds(sv[0], "abc", 3, fds, 3), 0);
	cr_assert_eq(recv_fds(sv[1], buf, sizeof(buf), got, FDS_MAX, &n), 3);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(buf, "abc");
	for (size_t i = 0; i < n; i++) {
		cr_assert(is_open(got[i]));
		cr_assert_eq(fcntl(got[i], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
		close(got[i]);
	}
	/* None: the message alone. */
	cr_assert_eq(send_fds(sv[0], "d", 1, NULL, 0), 0);
	cr_assert_eq(recv_fds(sv[1], buf, sizeof(buf), got, FDS_MAX, &n), 1);
	cr_assert_eq(n, 0);
	/* The end of the stream. */
	close(sv[0]);
	cr_assert_eq(recv_fds(sv[1], buf, sizeof(buf), got, FDS_MAX, &n), 0);
	cr_assert_eq(n, 0);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	close(sv[1]);
}

/* More descriptors than the receiver takes, or a longer message: refused, nothing left open. */
Test(util, what_is_cut_is_refused_and_closed)
{
	int sv[2], fds[3], got[FDS_MAX] = { -1, -1, -1, -1 }, probe;
	char buf[2];
	size_t n = 99;

	pair(sv);
	for (int i = 0; i < 3; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	/* The lowest free descriptor now: what the receiver would get first. */
	probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(probe);

	cr_assert_eq(send_fds(sv[0], "a", 1, fds, 3), 0);
	cr_assert_eq(recv_fds(sv[1], buf, sizeof(buf), got, 2, &n), -EBADMSG);
	cr_assert_eq(n, 0);
	cr_assert(!is_open(probe) && !is_open(probe + 1) && !is_open(probe + 2),
		  "no received descriptor is left open");

	cr_assert_eq(send_fds(sv[0], "abc", 3, fds, 1), 0);
	cr_assert_eq(recv_fds(sv[1], buf, sizeof(buf), got, FDS_MAX, &n), -EBADMSG);
	cr_assert(!is_open(probe), "a longer message: its descriptor closed");

	cr_assert_eq(send_fds(sv[0], "a", 1, fds, FDS_MAX + 1), -EINVAL);
	cr_assert_eq(recv_fds(sv[1], buf, sizeof(buf), got, FDS_MAX + 1, &n), -EINVAL);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	close(sv[0]);
	close(sv[1]);
}

/* write_string(): the whole value into an existing file; no symbolic link, no new file. */
Test(util, a_string_goes_into_an_existing_file_only)
{
	char *dir = test_tmpdir("tmpfs"), file[4200], link[4200], missing[4200], buf[16] = "";
	int fd;

	snprintf(file, sizeof(file), "%s/f", dir);
	snprintf(link, sizeof(link), "%s/l", dir);
	snprintf(missing, sizeof(missing), "%s/missing", dir);
	fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(symlink(file, link), 0);

	cr_assert_eq(write_string(file, "0 1000 1\n"), 0);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	cr_assert_eq(read(fd, buf, sizeof(buf) - 1), 9);
	close(fd);
	cr_assert_str_eq(buf, "0 1000 1\n");
	cr_assert_eq(write_string(link, "x"), -ELOOP, "a symbolic link is not followed");
	cr_assert_eq(write_string(missing, "x"), -ENOENT, "nothing is created");
	cr_assert_eq(access(missing, F_OK), -1);
	cr_assert_eq(write_string("/dev/full", "x"), -ENOSPC);
	free(dir);
}

/* A struct of three versions: v1 (a), v2 (+b), v3 (+c). Ours is v2. */
struct v1 {
	uint32_t size;
	uint32_t a;
};
struct v2 {
	uint32_t size;
	uint32_t a;
	uint64_t b;
};
struct v3 {
	uint32_t size;
	uint32_t a;
	uint64_t b;
	uint64_t c;
};

Test(util, a_struct_from_an_older_caller_is_zero_filled)
{
	struct v1 old = { .size = sizeof(old), .a = 7 };
	struct v2 ours;

	memset(&ours, 0xaa, sizeof(ours));
	cr_assert_eq(
		struct_copy_in(&ours, sizeof(ours), &old, sizeof(struct v1), "struct v2", NULL), 0);
	cr_assert_eq(ours.a, 7);
	cr_assert_eq(ours.b, 0, "the member the caller does not know is not zero");
	cr_assert_eq(ours.size, sizeof(ours));
}

Test(util, a_struct_from_a_newer_caller_is_taken_when_its_extra_is_zero)
{
	struct v3 newer = { .size = sizeof(newer), .a = 1, .b = 2 };
	struct clip_error *e = NULL;
	struct v2 ours;

	cr_assert_eq(
		struct_copy_in(&ours, sizeof(ours), &newer, sizeof(struct v1), "struct v2", NULL),
		0);
	cr_assert_eq(ours.a, 1);
	cr_assert_eq(ours.b, 2);
	newer.c = 1;
	cr_assert_eq(
		struct_copy_in(&ours, sizeof(ours), &newer, sizeof(struct v1), "struct v2", &e),
		-E2BIG, "a request this version cannot honour was accepted");
	cr_assert_str_eq(clip_error_get_message(e),
			 "struct v2 has 24 bytes and sets a member past the 16 this libclip knows");
	clip_error_free(e);
}

Test(util, a_struct_smaller_than_its_first_version_or_huge_is_refused)
{
	struct v2 ours;
	struct v1 tiny = { .size = 2 };
	static uint8_t huge[STRUCT_SIZE_MAX + 8];
	uint32_t n = sizeof(huge);

	cr_assert_eq(
		struct_copy_in(&ours, sizeof(ours), &tiny, sizeof(struct v1), "struct v2", NULL),
		-EINVAL);
	tiny.size = 0;
	cr_assert_eq(struct_copy_in(&ours, sizeof(ours), &tiny, 0, "struct v2", NULL), -EINVAL);
	memcpy(huge, &n, sizeof(n));
	cr_assert_eq(
		struct_copy_in(&ours, sizeof(ours), huge, sizeof(struct v1), "struct v2", NULL),
		-E2BIG);
}

Test(util, a_struct_goes_out_as_far_as_the_caller_knows_it)
{
	struct v2 ours = { .size = sizeof(ours), .a = 3, .b = 4 };
	struct v1 old = { .size = sizeof(old) };
	struct v3 newer;

	cr_assert_eq(struct_copy_out(&old, &ours, sizeof(ours), sizeof(struct v1)), 0);
	cr_assert_eq(old.a, 3);
	cr_assert_eq(old.size, sizeof(old), "the caller's size was overwritten");
	memset(&newer, 0xaa, sizeof(newer));
	newer.size = sizeof(newer);
	cr_assert_eq(struct_copy_out(&newer, &ours, sizeof(ours), sizeof(struct v1)), 0);
	cr_assert_eq(newer.b, 4);
	cr_assert_eq(newer.c, 0, "the member this version does not know was left as it was");
	cr_assert_eq(newer.size, sizeof(newer));
	old.size = 2;
	cr_assert_eq(struct_copy_out(&old, &ours, sizeof(ours), sizeof(struct v1)), -EINVAL);
	newer.size = STRUCT_SIZE_MAX + 1;
	cr_assert_eq(struct_copy_out(&newer, &ours, sizeof(ours), sizeof(struct v1)), -E2BIG,
		     "a size over the bound was written through");
}

/* A build for users never switches a protection off, whatever the environment says. */
Test(test_hooks, only_a_test_hooks_build_reads_the_variable)
{
	cr_assert(setenv("CLIP_TEST_DISABLE", "netns,seccomp", 1) == 0);
#ifdef CLIP_TEST_HOOKS
	cr_expect(test_hook_disabled("seccomp"));
	cr_expect(test_hook_disabled("netns"));
#else
	cr_expect(!test_hook_disabled("seccomp"));
	cr_expect(test_hook_list() == NULL);
#endif
	cr_assert(unsetenv("CLIP_TEST_DISABLE") == 0);
	cr_expect(!test_hook_disabled("seccomp"));
}

Test(test_hooks, names_match_whole_words)
{
	cr_expect(test_hook_list_has("netns,seccomp", "seccomp"));
	cr_expect(test_hook_list_has("seccomp", "seccomp"));
	cr_expect(!test_hook_list_has("seccomp-x,a", "seccomp"));
	cr_expect(!test_hook_list_has("xseccomp", "seccomp"));
	cr_expect(!test_hook_list_has("", "seccomp"));
	cr_expect(!test_hook_list_has(NULL, "seccomp"));
	cr_expect(test_hook_list_has("a,,seccomp,", "seccomp"));
}

/* Every code point of @list is refused in a name, for @why. */
static void
expect_refused(const uint32_t *list, size_t n, const char *why)
{
	for (size_t i = 0; i < n; i++) {
		const char *got = utf8_name_refusal(list[i]);

		cr_expect(got && strcmp(got, why) == 0, "U+%04X: got %s, want %s",
			  (unsigned)list[i], got ? got : "(taken)", why);
	}
}

Test(utf8, names_refuse_control_characters)
{
	static const uint32_t c[] = { 0x00, 0x09, 0x0a, 0x1b,   0x1f,  0x7f,
				      0x80, 0x85, 0x9f, 0x2028, 0x2029 };

	expect_refused(c, ELEMENTSOF(c), "a control character");
}

Test(utf8, names_refuse_bidirectional_controls)
{
	static const uint32_t c[] = { 0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c,
				      0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069 };

	expect_refused(c, ELEMENTSOF(c), "a bidirectional control");
}

/* The whole U+200B-U+200F range doc/transfer.md promised, and every other invisible class. */
Test(utf8, names_refuse_invisible_characters)
{
	static const uint32_t c[] = {
		0x00ad, /* soft hyphen */
		0x034f, /* combining grapheme joiner */
		0x0600,  0x0605,  0x06dd,  0x070f,  0x0890,  0x0891,  0x08e2, /* format, Arabic, Syriac */
		0x115f,  0x1160,  0x3164,  0xffa0, /* Hangul fillers */
		0x17b4,  0x17b5, /* Khmer inherent vowels */
		0x180b,  0x180e,  0x180f, /* Mongolian selectors, vowel separator */
		0x200b,  0x200c,  0x200d, /* zero width space, non-joiner, joiner */
		0x2060,  0x2064,  0x2065,  0x206a,  0x206f, /* word joiner, invisible operators */
		0x2800, /* Braille pattern blank */
		0xfe00,  0xfe0f, /* variation selectors */
		0xfeff, /* BOM */
		0xfff0,  0xfff9,  0xfffb, /* interlinear annotation */
		0x110bd, 0x110cd, 0x13430, 0x1343f, 0x1bca0, 0x1bca3, 0x1d173, 0x1d17a,
		0xe0000, 0xe0001, 0xe0020, 0xe0041, 0xe007f, /* tags */
		0xe0100, 0xe01ef, 0xe0fff, /* variation selectors supplement, reserved */
	};

	expect_refused(c, ELEMENTSOF(c), "an invisible character");
}

Test(utf8, names_refuse_slash_look_alikes)
{
	static const uint32_t c[] = { 0x0337, 0x0338, 0x1735, 0x2044, 0x20e5, 0x2215,
				      0x2216, 0x2571, 0x2572, 0x27cb, 0x27cd, 0x29f5,
				      0x29f8, 0x29f9, 0x2f03, 0x3033, 0x31d3, 0x31d4,
				      0xfe68, 0xff0f, 0xff3c, 0x1d23a };

	expect_refused(c, ELEMENTSOF(c), "a look-alike of a slash");
}

Test(utf8, names_refuse_dot_look_alikes)
{
	static const uint32_t c[] = { 0x0701, 0x0702, 0x2024, 0x2025,  0xa4f8,
				      0xa60e, 0xfe52, 0xff0e, 0x10a50, 0x1d16d };

	expect_refused(c, ELEMENTSOF(c), "a look-alike of a dot");
}

/* Letters, digits, visible spaces and punctuation stay, next to every refused range. */
Test(utf8, names_keep_letters_spaces_and_symbols)
{
	static const uint32_t c[] = {
		' ',    '.',    '/',    '\\',   'a',    0xa0,   0xe9,    0x0336,  0x0339,  0x0660,
		0x06d4, 0x1161, 0x180a, 0x1810, 0x200a, 0x2010, 0x2023,  0x2026,  0x2027,  0x202f,
		0x2043, 0x2045, 0x2070, 0x2217, 0x27ff, 0x2801, 0x3000,  0x3002,  0x30ce,  0x3165,
		0x4e3f, 0xfdff, 0xfe10, 0xff0d, 0xff10, 0xffa1, 0x1f600, 0xdffff, 0xe1000, 0x10fffd,
	};

	for (size_t i = 0; i < ELEMENTSOF(c); i++)
		cr_expect_null(utf8_name_refusal(c[i]), "U+%04X refused: %s", (unsigned)c[i],
			       utf8_name_refusal(c[i]));
}

Test(utf8, name_check_names_the_code_point_and_where)
{
	static const char zwj[] = "report\xe2\x80\x8dpdf", slash[] = "a\xff\xef\xbc\x8f";
	uint32_t c = 0;
	size_t at = 99;

	cr_assert_str_eq(utf8_name_check(zwj, strlen(zwj), &c, &at), "an invisible character");
	cr_assert_eq(c, 0x200d);
	cr_assert_eq(at, 6);
	/* An invalid byte is no code point: skipped, and the next one found. */
	cr_assert_str_eq(utf8_name_check(slash, strlen(slash), &c, &at), "a look-alike of a slash");
	cr_assert_eq(c, 0xff0f);
	cr_assert_eq(at, 2);
	c = 1, at = 1;
	cr_assert_null(utf8_name_check("r\xc3\xa9sum\xc3\xa9.odt", 11, &c, &at));
	cr_assert_eq(c, 1, "a name taken wrote its arguments");
	cr_assert_null(utf8_name_check("", 0, &c, &at));
}

/* open_regular(): what a cage can put where the core reads. */
Test(util, only_a_regular_file_is_opened_where_another_party_writes, .timeout = 10)
{
	char *dir = test_tmpdir("tmpfs"), path[4200];
	struct clip_error *err = NULL;
	struct stat st;
	long long start = now_ms();
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;

	cr_assert_geq(dfd, 0);
	cr_assert_eq(mkfifoat(dfd, "fifo", 0600), 0);
	cr_assert_eq(symlinkat("/dev/zero", dfd, "zero"), 0);
	cr_assert_eq(mkdirat(dfd, "dir", 0700), 0);
	fd = openat(dfd, "file", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_eq(write(fd, "0123456789", 10), 10);
	close(fd);

	/*
	 * A FIFO without a writer: refused at once, not waited on. A writer
	 * turns up after a second all the same, so that a build without the
	 * check fails here instead of hanging to the timeout (which would leave
	 * the directory behind).
	 */
	pid_t writer = fork();

	cr_assert_geq(writer, 0);
	if (writer == 0) {
		(void)usleep(1000 * 1000);
		for (int i = 0; i < 20; i++) {
			int w = openat(dfd, "fifo", O_WRONLY | O_NONBLOCK | O_CLOEXEC);

			if (w >= 0)
				_exit(0);
			(void)usleep(100 * 1000);
		}
		_exit(0);
	}
	assert_errno(open_regular(dfd, "fifo", 0, NULL, &err), -EMEDIUMTYPE);
	cr_assert_str_eq(clip_error_get_message(err),
			 "fifo is a FIFO, not a regular file: refused without reading it");
	clip_error_free(err);
	err = NULL;
	cr_assert_lt(now_ms() - start, 2000);
	assert_errno(open_regular(dfd, "zero", 0, NULL, &err), -ELOOP);
	cr_assert(strstr(clip_error_get_message(err), "zero is a symbolic link: not followed"));
	clip_error_free(err);
	err = NULL;
	assert_errno(open_regular(dfd, "dir", 0, NULL, &err), -EMEDIUMTYPE);
	cr_assert(strstr(clip_error_get_message(err), "dir is a directory, not a regular file"));
	clip_error_free(err);
	err = NULL;
	assert_errno(open_regular(AT_FDCWD, "/dev/zero", 0, NULL, &err), -EMEDIUMTYPE);
	cr_assert(strstr(clip_error_get_message(err), "is a character device"));
	clip_error_free(err);
	err = NULL;
	assert_errno(open_regular(dfd, "file", 9, NULL, &err), -EFBIG);
	cr_assert(strstr(clip_error_get_message(err), "file has 10 bytes, over the limit of 9"));
	clip_error_free(err);
	err = NULL;
	/* Missing: -ENOENT and no message, for callers to whom that is no error. */
	assert_errno(open_regular(dfd, "missing", 0, NULL, &err), -ENOENT);
	cr_assert_null(err);

	fd = open_regular(dfd, "file", 10, &st, &err);
	cr_assert_geq(fd, 0);
	cr_assert_null(err);
	cr_assert_eq(st.st_size, 10);
	cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0, "blocking again once known regular");
	cr_assert_neq(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/file", dir);
	fd = open_regular(AT_FDCWD, path, 0, NULL, NULL);
	cr_assert_geq(fd, 0);
	close(fd);
	close(dfd);
	(void)kill(writer, SIGKILL);
	cr_assert_eq(waitpid(writer, NULL, 0), writer);
	free(dir);
}

/*
 * dir_open_walk(): the state directory, reached from "/" one component at
 * a time, with no symbolic link followed and no component another user
 * could swap.
 */
static char *
walk_path(const char *dir, const char *rest)
{
	char *p = NULL;

	cr_assert_gt(asprintf(&p, "%s/%s", dir, rest), 0);
	return p;
}

/* dir_open_walk() refuses @rest under @dir with @want and a message holding @says. */
static void
walk_refused(const char *dir, const char *rest, bool create, int want, const char *says)
{
	_cleanup_free_ char *path = walk_path(dir, rest);
	struct clip_error *err = NULL;

	assert_errno(dir_open_walk(path, create, "state directory", &err), want);
	cr_assert_not_null(err, "%s: no message", path);
	cr_assert(strstr(clip_error_get_message(err), says), "%s: \"%s\" does not say \"%s\"", path,
		  clip_error_get_message(err), says);
	cr_assert(strncmp(clip_error_get_message(err), "state directory ", 16) == 0);
	clip_error_free(err);
}

Test(state_dir_walk, a_symlink_in_the_middle_is_not_followed)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *link = NULL, *where = NULL;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	cr_assert_geq(dfd, 0);
	cr_assert_eq(mkdirat(dfd, "target", 0700), 0);
	cr_assert_eq(symlinkat("target", dfd, "link"), 0);
	link = walk_path(dir, "link");
	cr_assert_gt(asprintf(&where, "%s is a symbolic link, not followed", link), 0);
	walk_refused(dir, "link/state", true, -ELOOP, where);
	cr_assert_neq(fstatat(dfd, "target/state", &st, 0), 0, "made where the link points");
	/* The last component too, and an existing directory behind it. */
	cr_assert_eq(mkdirat(dfd, "target/state", 0700), 0);
	walk_refused(dir, "link/state", false, -ELOOP, where);
	cr_assert_eq(symlinkat("target/state", dfd, "state-link"), 0);
	walk_refused(dir, "state-link", false, -ELOOP, "state-link is a symbolic link");
	close(dfd);
}

Test(state_dir_walk, a_group_writable_component_is_refused)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	cr_assert_geq(dfd, 0);
	cr_assert_eq(mkdirat(dfd, "shared", 0700), 0);
	cr_assert_eq(fchmodat(dfd, "shared", 0770, 0), 0);
	walk_refused(dir, "shared/state", true, -EPERM,
		     "/shared is writable by group or others (mode 0770): they could replace "
		     "what is below it");
	cr_assert_neq(fstatat(dfd, "shared/state", &st, 0), 0, "made under a shared parent");
	/* The state directory itself: no sticky exception. */
	cr_assert_eq(mkdirat(dfd, "open", 0700), 0);
	cr_assert_eq(fchmodat(dfd, "open", 01777, 0), 0);
	walk_refused(dir, "open", false, -EPERM, "is writable by group or others (mode 1777)");
	close(dfd);
}

Test(state_dir_walk, a_sticky_parent_is_crossed_to_an_entry_of_ours)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *path = NULL;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;

	cr_assert_geq(dfd, 0);
	cr_assert_eq(mkdirat(dfd, "tmp", 0700), 0);
	cr_assert_eq(fchmodat(dfd, "tmp", 01777, 0), 0);
	path = walk_path(dir, "tmp/mine/state");
	fd = dir_open_walk(path, true, "state directory", NULL);
	cr_assert_geq(fd, 0, "a sticky /tmp-like parent: %s", strerror(-fd));
	close(fd);
	close(dfd);
}

Test(state_dir_walk, a_component_of_another_owner_is_refused)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *path = NULL;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;
	struct stat st;

	if (!test_is_root())
		cr_skip_test("no other owner to chown to as an unprivileged user");
	cr_assert_geq(dfd, 0);
	cr_assert_eq(mkdirat(dfd, "theirs", 0755), 0);
	cr_assert_eq(fchownat(dfd, "theirs", 65534, 65534, 0), 0);
	walk_refused(dir, "theirs/state", true, -EPERM,
		     "/theirs is owned by uid 65534, not by root or uid 0: its owner could "
		     "replace what is below it");
	cr_assert_neq(fstatat(dfd, "theirs/state", &st, 0), 0, "made in another user's directory");
	/* The state directory itself must be the caller's, even root's. */
	cr_assert_eq(mkdirat(dfd, "theirs-state", 0700), 0);
	cr_assert_eq(fchownat(dfd, "theirs-state", 65534, 65534, 0), 0);
	walk_refused(dir, "theirs-state", false, -EPERM, "is owned by uid 65534, not by uid 0");
	/* Owned by root, and the caller's below it: crossed. */
	cr_assert_eq(mkdirat(dfd, "root", 0755), 0);
	path = walk_path(dir, "root/state");
	fd = dir_open_walk(path, true, "state directory", NULL);
	cr_assert_geq(fd, 0);
	close(fd);
	close(dfd);
}

Test(state_dir_walk, missing_components_are_made_0700)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs"), *path = NULL, *other = NULL;
	struct clip_error *err = NULL;
	const char *made[] = { "a", "a/b", "a/b/state" };
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;
	mode_t mask = umask(022);
	struct stat st, got;

	cr_assert_geq(dfd, 0);
	other = walk_path(dir, "x/y");
	assert_errno(dir_open_walk(other, false, "state directory", &err), -ENOENT);
	cr_assert_null(err, "a missing directory is the caller's to name");
	cr_assert_neq(fstatat(dfd, "x", &st, 0), 0, "made without create");

	path = walk_path(dir, "a//b/./state/");
	fd = dir_open_walk(path, true, "state directory", &err);
	umask(mask);
	cr_assert_geq(fd, 0);
	cr_assert_null(err);
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		cr_assert_eq(fstatat(dfd, made[i], &st, AT_SYMLINK_NOFOLLOW), 0, "%s", made[i]);
		cr_assert(S_ISDIR(st.st_mode));
		cr_assert_eq(st.st_mode & 07777, 0700, "%s has mode %04o", made[i],
			     (unsigned)(st.st_mode & 07777));
		cr_assert_eq(st.st_uid, geteuid());
	}
	/* The descriptor is the directory made, open for reading. */
	cr_assert_eq(fstat(fd, &got), 0);
	cr_assert_eq(fstatat(dfd, "a/b/state", &st, 0), 0);
	cr_assert_eq(got.st_ino, st.st_ino);
	cr_assert_eq(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	cr_assert_eq(fd_is_opath(fd), 0);
	close(fd);
	close(dfd);
}

Test(state_dir_walk, a_dotdot_component_is_refused)
{
	_cleanup_free_ char *dir = test_tmpdir("tmpfs");
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	cr_assert_geq(dfd, 0);
	cr_assert_eq(mkdirat(dfd, "a", 0700), 0);
	walk_refused(dir, "a/../b", true, -EINVAL,
		     "has a \"..\" component: give the path without it");
	walk_refused(dir, "a/..", true, -EINVAL, "has a \"..\" component");
	cr_assert_neq(fstatat(dfd, "b", &st, 0), 0, "made through ..");
	/* A name that only starts with two dots is a name. */
	walk_refused(dir, "a/..b/../c", true, -EINVAL, "has a \"..\" component");
	close(dfd);
}

Test(state_dir_walk, a_relative_path_is_refused)
{
	struct clip_error *err = NULL;

	assert_errno(dir_open_walk("var/lib/clip", false, "state directory", &err), -EINVAL);
	cr_assert_str_eq(clip_error_get_message(err),
			 "state directory var/lib/clip is not an absolute path");
	clip_error_free(err);
}

Test(util, paths_are_absolute_normalised_and_beneath_by_component)
{
	static const char *const bad[] = { "",      "relative", "/a/",  "/a//b", "/a/./b",
					   "/a/..", "/a b",     "/a:b", "/a\\b", "/\x01" };

	cr_assert_null(path_fault("/"));
	cr_assert_null(path_fault("/srv/data/low"));
	cr_assert_null(path_fault("/a/..b/.c"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not_null(path_fault(bad[i]), "'%s' passed", bad[i]);

	cr_assert(path_is_beneath("/a/b", "/a"));
	cr_assert(path_is_beneath("/a", "/a"));
	cr_assert(!path_is_beneath("/ab", "/a"));
	cr_assert(!path_is_beneath("/a", "/a/b"));
	/* The root holds everything. */
	cr_assert(path_is_beneath("/x/y", "/"));
	cr_assert(path_is_beneath("/", "/"));
}
