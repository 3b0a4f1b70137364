/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Levels as the MLS part of SELinux contexts, through libselinux. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "helpers.h"

static struct clip_level *
level(const char *text)
{
	struct clip_level *l = NULL;

	cr_assert_eq(clip_level_parse(&l, text, NULL), 0, "parse %s", text);
	return l;
}

Test(selinux, context_to_level)
{
	static const struct {
		const char *context, *level;
	} cases[] = {
		{ "system_u:object_r:user_home_t:s0", "s0" },
		{ "user_u:user_r:user_t:s2:c1", "s2:c1" },
		{ "user_u:user_r:user_t:s2:c0.c3,c7", "s2:c0.c3,c7" },
		/* A range: the low level is the current one. */
		{ "staff_u:staff_r:staff_t:s0-s15:c0.c1023", "s0" },
		{ "staff_u:staff_r:staff_t:s1:c2-s3:c2,c4", "s1:c2" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct clip_level *got = NULL, *want = level(cases[i].level);
		struct clip_error *e = NULL;

		cr_assert_eq(clip_selinux_context_get_level(cases[i].context, &got, &e), 0,
			     "%s: %s", cases[i].context, clip_error_get_message(e));
		cr_assert(clip_level_equal(got, want), "%s", cases[i].context);
		clip_level_unref(got);
		clip_level_unref(want);
	}
}

Test(selinux, level_to_context_keeps_user_role_type)
{
	struct clip_level *l = level("s3:c1,c5");
	char *out = NULL;

	cr_assert_eq(clip_selinux_context_set_level("system_u:object_r:etc_t:s0", l, &out, NULL),
		     0);
	cr_assert_str_eq(out, "system_u:object_r:etc_t:s3:c1,c5");
	free(out);
	out = NULL;
	/* A range is replaced by the single level. */
	cr_assert_eq(clip_selinux_context_set_level("u:r:t:s0-s15:c0.c1023", l, &out, NULL), 0);
	cr_assert_str_eq(out, "u:r:t:s3:c1,c5");
	free(out);
	clip_level_unref(l);
}

Test(selinux, round_trip)
{
	static const char *const levels[] = { "s0", "s15:c0.c1023", "s7:c1,c3,c5.c9" };

	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		struct clip_level *l = level(levels[i]), *back = NULL;
		char *ctx = NULL;

		cr_assert_eq(clip_selinux_context_set_level("u:r:t:s0", l, &ctx, NULL), 0);
		cr_assert_eq(clip_selinux_context_get_level(ctx, &back, NULL), 0);
		cr_assert(clip_level_equal(l, back), "%s -> %s", levels[i], ctx);
		free(ctx);
		clip_level_unref(l);
		clip_level_unref(back);
	}
}

Test(selinux, refusals)
{
	static const char *const bad[] = {
		"", /* not a context */
		"justonefield", /* not a context */
		"u:r:t", /* no MLS part */
		"u:r:t:s16", /* sensitivity out of our bounds */
		"u:r:t:s0:c1024", /* category out of bounds */
		"u:r:t:SystemHigh", /* a translated name, not a level */
	};
	struct clip_level *got = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct clip_error *e = NULL;

		assert_errno(clip_selinux_context_get_level(bad[i], &got, &e), -EINVAL);
		cr_assert_null(got, "%s", bad[i]);
		cr_assert_neq(clip_error_get_message(e)[0], '\0');
		clip_error_free(e);
	}
	assert_errno(clip_selinux_context_get_level(NULL, &got, NULL), -EINVAL);
	assert_errno(clip_selinux_context_get_level("u:r:t:s0", NULL, NULL), -EINVAL);
}

Test(selinux, oversized_context_is_refused)
{
	size_t n = 10000;
	char *huge = malloc(n + 1);
	struct clip_level *got = NULL;

	memset(huge, 'a', n);
	memcpy(huge, "u:r:t:s0:", 9);
	huge[n] = '\0';
	assert_errno(clip_selinux_context_get_level(huge, &got, NULL), -EINVAL);
	free(huge);
}

/* The live part: only where SELinux runs (tests/expected-skips says where not). */
Test(selinux, file_live)
{
	_cleanup_free_ char *dir = NULL;
	struct clip_level *l, *got = NULL;
	int fd;

	if (!clip_selinux_is_enabled())
		cr_skip_test("SELinux is not enabled on this host");
	dir = test_tmpdir("ext4");
	fd = test_file(dir, "a", "x");
	l = level("s0");
	cr_assert_eq(clip_selinux_file_set_level(fd, l, NULL), 0);
	cr_assert_eq(clip_selinux_file_get_level(fd, &got, NULL), 0);
	cr_assert(clip_level_equal(l, got));
	clip_level_unref(l);
	clip_level_unref(got);
	close(fd);
}

Test(selinux, file_functions_say_when_selinux_is_off)
{
	struct clip_level *l = level("s0"), *got = NULL;
	struct clip_error *e = NULL;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (clip_selinux_is_enabled())
		cr_skip_test("SELinux is enabled: the refusal cannot happen");
	assert_errno(clip_selinux_file_get_level(fd, &got, &e), -EOPNOTSUPP);
	cr_assert(strstr(clip_error_get_message(e), "not enabled"), "%s",
		  clip_error_get_message(e));
	clip_error_free(e);
	assert_errno(clip_selinux_file_set_level(fd, l, NULL), -EOPNOTSUPP);
	clip_level_unref(l);
	close(fd);
}

/* Where the dynamic linker finds @soname, from ldconfig's cache; "" if nowhere. */
static void
library_path(const char *soname, char *ret, size_t size)
{
	char line[1024], *arrow;
	FILE *f = popen("ldconfig -p", "re");

	ret[0] = '\0';
	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, soname) == line + strspn(line, " \t") &&
		    (arrow = strstr(line, "=> "))) {
			arrow[3 + strcspn(arrow + 3, "\n")] = '\0';
			if (!realpath(arrow + 3, ret))
				ret[0] = '\0';
			break;
		}
	pclose(f);
}

/* In a child with libselinux hidden under /dev/null: what libclip answers. */
static int
without_libselinux(const char *lib)
{
	struct clip_level *l = NULL;
	struct clip_error *e = NULL;
	char *out = NULL;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), r = test_unshare_mount();

	if (r)
		return r == 77 ? 77 : 10;
	if (mount("/dev/null", lib, NULL, MS_BIND, NULL) < 0)
		return 10;
	if (clip_selinux_context_get_level("user_u:user_r:user_t:s0", &l, &e) != -EOPNOTSUPP ||
	    !strstr(clip_error_get_message(e), "libselinux cannot be loaded"))
		return 11;
	clip_error_free(e);
	if (clip_level_parse(&l, "s1:c2", NULL) < 0)
		return 12; /* the rest of libclip does without */
	if (clip_selinux_context_set_level("user_u:user_r:user_t:s0", l, &out, NULL) != -EOPNOTSUPP)
		return 13;
	if (clip_selinux_file_get_level(fd, &l, NULL) != -EOPNOTSUPP)
		return 14;
	if (clip_selinux_is_enabled())
		return 15;
	close(fd);
	return 0;
}

/* libselinux is loaded on first use: without it, the SELinux calls say so and nothing else fails. */
Test(selinux, without_libselinux_the_calls_say_so)
{
	char lib[4096];
	int status = -1;
	pid_t pid;

	library_path("libselinux.so.1 ", lib, sizeof(lib));
	cr_assert(lib[0], "libselinux.so.1 is not in ldconfig's cache");
	pid = fork();
	if (pid == 0)
		_exit(without_libselinux(lib));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		cr_skip_test("no user namespace here: libselinux cannot be hidden");
	cr_assert_eq(WEXITSTATUS(status), 0, "check %d failed", WEXITSTATUS(status));
}
