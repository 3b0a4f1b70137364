/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cage's terminal (cage-pty.c): the relay's output filter, byte by
 * byte and cut anywhere; a spawn that refuses a terminal, or replaces it
 * by a pty of the cage's own with CLIP_CAGE_SPAWN_PTY; the relay from such
 * a pty to a pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cage/cage-internal.h"
#include "helpers.h"

/* What passes of @in, fed @step bytes at a time (the state carried across), in a new string. */
static char *
filtered(const char *in, size_t n, size_t step)
{
	struct pty_filter f = { 0 };
	char *out = calloc(1, 3 * n + 256);
	size_t k = 0;

	cr_assert(out);
	for (size_t i = 0; i < n; i += step) {
		size_t len = n - i < step ? n - i : step;

		pty_filter(&f, in + i, len);
		memcpy(out + k, f.out, f.n_out);
		k += f.n_out;
	}
	return out;
}

/* @in filters to @want whatever the cuts. */
static void
assert_filters(const char *in, const char *want)
{
	size_t n = strlen(in);

	for (size_t step = 1; step <= n + 1; step++) {
		char *out = filtered(in, n, step);

		cr_assert_str_eq(out, want, "%zu bytes at a time: got '%s'", step, out);
		free(out);
	}
}

Test(pty_filter, text_and_the_controls_a_shell_needs_pass)
{
	assert_filters("ls -l\r\n\ttab\bx\a", "ls -l\r\n\ttab\bx\a");
	assert_filters("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		       "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

Test(pty_filter, other_controls_are_dropped)
{
	assert_filters("a\x0e"
		       "b\x0f"
		       "c\x7f"
		       "d\x01"
		       "e\x18"
		       "f",
		       "abcdef");
}

Test(pty_filter, colours_and_cursor_movement_pass)
{
	const char *const pass[] = {
		"\033[0m",     "\033[1;31m",  "\033[38;5;196m", "\033[38:2::1:2:3m",
		"\033[H",      "\033[12;40H", "\033[2J",        "\033[K",
		"\033[3A",     "\033[5C",     "\033[?1049h",    "\033[?25l",
		"\033[?2004h", "\033[?1h",    "\033[1;20r",     "\0337",
		"\0338",       "\033M",       "\033=",          "\033(0",
		"\033[s",      "\033[u",      "\033[?7l",       "\033[2P",
		"\033[4@",
	};

	for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
		char in[64];

		snprintf(in, sizeof(in), "<%s>", pass[i]);
		assert_filters(in, in);
	}
}

Test(pty_filter, osc_dcs_apc_pm_sos_are_dropped_whole)
{
	assert_filters("a\033]52;c;U0VDUkVU\007b", "ab");
	assert_filters("a\033]0;title\033\\b", "ab");
	assert_filters("a\033]8;;http://x\033\\link\033]8;;\033\\b", "alinkb");
	assert_filters("a\033P+q544e\033\\b", "ab");
	assert_filters("a\033_apc\033\\b\033^pm\033\\c\033Xsos\033\\d", "abcd");
	/* CAN aborts a string; ESC and another byte end it and start a sequence. */
	assert_filters("a\033]0;x\030b", "ab");
	assert_filters("a\033]0;x\033[31mb", "a\033[31mb");
}

Test(pty_filter, c1_controls_in_utf8_are_dropped)
{
	/* U+009D is OSC, U+009B is CSI, U+0090 is DCS for a terminal that takes C1. */
	assert_filters("a\xc2\x9d"
		       "0;t\x07"
		       "b\xc2\x9b"
		       "6n\xc2\x90q",
		       "a0;t\x07"
		       "b6nq");
	/* Broken UTF-8, overlong forms and surrogates become '?'. */
	assert_filters("a\xc0\x9b"
		       "b",
		       "a??b");
	assert_filters("a\xed\xa0\x80"
		       "b",
		       "a???b");
	assert_filters("a\xe2\x82"
		       "b",
		       "a?b");
	assert_filters("a\x9b"
		       "6n",
		       "a?6n");
}

Test(pty_filter, queries_window_operations_and_other_modes_are_dropped)
{
	const char *const drop[] = {
		"\033[6n",     "\033[c",   "\033[>c",  "\033[21t",  "\033[8;1;1t",    "\033[?1000h",
		"\033[?1006h", "\033[4h",  "\033[3J",  "\033c",     "\033[?25;1000h", "\033[ q",
		"\033#8",      "\033[1$p", "\033[?5h", "\033[200b", "\033(%5",        "\033[g",
	};

	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
		char in[64];

		snprintf(in, sizeof(in), "<%s>", drop[i]);
		assert_filters(in, "<>");
	}
}

Test(pty_filter, a_long_csi_is_dropped)
{
	char in[300] = "a\033[";

	memset(in + 3, '1', 200);
	strcpy(in + 203, "mb");
	assert_filters(in, "ab");
}

Test(pty_filter, the_modes_left_set_are_reset_at_the_end)
{
	struct pty_filter f = { 0 };
	const char in[] = "\033[?1049h\033[?25l\033[31m\033[1;5r\033(0\033=";
	char *end;

	pty_filter(&f, in, strlen(in));
	cr_assert_eq(pty_filter_end(&f) > 0, true);
	end = strndup(f.out, f.n_out);
	cr_assert(strstr(end, "\033[?1049l") && strstr(end, "\033[?25h") &&
			  strstr(end, "\033[0m") && strstr(end, "\0337\033[r\0338") &&
			  strstr(end, "\033(B") && strstr(end, "\033>"),
		  "reset: %s", end);
	free(end);
	/* Nothing set, nothing reset. */
	cr_assert_eq(pty_filter_end(&f), 0);
}

/* -- spawns and the relay ---------------------------------------------- */

static struct clip_cage *
started_or_skip(struct clip_ctx **ctx)
{
	const char text[] = "[Cage]\nName=pty\n";
	struct clip_cage_profile *p = NULL;
	struct clip_cage *c = NULL;
	struct clip_error *e = NULL;
	const char *preload = getenv("LD_PRELOAD");

	if (!test_is_root() && access("/proc/self/ns/user", F_OK) != 0)
		cr_skip_test("no user namespaces");
	if (preload && strstr(preload, "vgpreload"))
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	cr_assert_eq(clip_cage_profile_parse(&p, "t", text, strlen(text), NULL), 0);
	*ctx = test_ctx("/nonexistent");
	cr_assert_eq(clip_cage_new(&c, *ctx, p, NULL), 0);
	clip_cage_profile_unref(p);
	cr_assert_eq(clip_cage_start(c, 0, &e), 0, "start: %s", clip_error_get_message(e));
	return c;
}

static void
stopped(struct clip_ctx *ctx, struct clip_cage *c)
{
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/* A pty of the test's own, standing for the user's terminal: its master, its slave in *@slave. */
static int
user_terminal(int *slave)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), unlock = 0;

	cr_assert(m >= 0);
	cr_assert_eq(ioctl(m, TIOCSPTLCK, &unlock), 0);
	*slave = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	cr_assert(*slave >= 0);
	return m;
}

/* Everything @fd gives until end of file, EIO or 10 s. */
static char *
read_all(int fd)
{
	static char buf[8192];
	size_t n = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t k;

		if (poll(&p, 1, 10000) <= 0)
			break;
		k = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	buf[n] = '\0';
	return buf;
}

Test(cage_pty, a_terminal_is_refused)
{
	const char *argv[] = { "/bin/true", NULL };
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c = started_or_skip(&ctx);
	struct clip_error *e = NULL;
	int slave, m = user_terminal(&slave), fds[3], pidfd = -1;
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv, .fds = fds, .n_fds = 3 };

	fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fds[1] = slave;
	fds[2] = m; /* a master is a terminal too */
	assert_errno(clip_cage_spawn(c, &o, &pidfd, &e), -EBADF);
	cr_assert(strstr(clip_error_get_message(e), "fds[1], the process's fd 1, is a terminal"),
		  "%s", clip_error_get_message(e));
	e = clip_error_free(e);
	fds[1] = fds[0];
	assert_errno(clip_cage_spawn(c, &o, &pidfd, &e), -EBADF);
	cr_assert(strstr(clip_error_get_message(e), "fds[2]"), "%s", clip_error_get_message(e));
	e = clip_error_free(e);
	cr_assert_eq(pidfd, -1);
	close(fds[0]);
	close(slave);
	close(m);
	stopped(ctx, c);
}

Test(cage_pty, flags_are_checked)
{
	const char *argv[] = { "/bin/true", NULL };
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c = started_or_skip(&ctx);
	struct clip_error *e = NULL;
	int pidfd = -1, pty = 5, status = -1;
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv, .flags = 1u << 7 };

	assert_errno(clip_cage_spawn(c, &o, &pidfd, &e), -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), "flags 0x80"), "%s", clip_error_get_message(e));
	e = clip_error_free(e);
	o.flags = CLIP_CAGE_SPAWN_PTY;
	assert_errno(clip_cage_spawn(c, &o, &pidfd, &e), -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), "without ret_pty"), "%s",
		  clip_error_get_message(e));
	e = clip_error_free(e);
	/* No terminal among the fds: no pty. */
	o.ret_pty = &pty;
	cr_assert_eq(clip_cage_spawn(c, &o, &pidfd, &e), 0, "%s", clip_error_get_message(e));
	cr_assert_eq(pty, -1);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 0);
	close(pidfd);
	assert_errno(clip_cage_pty_relay(-1, -1, -1, 0, &e), -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), "pty -1"), "%s", clip_error_get_message(e));
	e = clip_error_free(e);
	stopped(ctx, c);
}

Test(cage_pty, a_pty_of_its_own_replaces_the_terminal)
{
	/* Its fd 0 a terminal, its controlling one, and not the test's. */
	const char *argv[] = {
		"/bin/sh", "-c",
		"test -t 0 && stat -L -c 'rdev %t:%T' /proc/self/fd/0 && "
		"cut -d' ' -f7 /proc/self/stat && printf '\\033]52;c;eA==\\007ok\\n'",
		NULL
	};
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c = started_or_skip(&ctx);
	struct clip_error *e = NULL;
	int slave, m = user_terminal(&slave), fds[3], pidfd = -1, pty = -1, status = -1, p[2];
	struct clip_cage_spawn_opts o = { .size = sizeof(o),
					  .argv = argv,
					  .fds = fds,
					  .n_fds = 3,
					  .flags = CLIP_CAGE_SPAWN_PTY,
					  .ret_pty = &pty };
	struct winsize ws = { .ws_row = 33, .ws_col = 99 }, got = { 0 };
	struct stat st;
	unsigned maj = 0, min = 0;
	long tty_nr = 0;
	char *out;

	cr_assert_eq(ioctl(m, TIOCSWINSZ, &ws), 0);
	fds[0] = fds[1] = fds[2] = slave;
	cr_assert_eq(clip_cage_spawn(c, &o, &pidfd, &e), 0, "%s", clip_error_get_message(e));
	cr_assert(pty >= 0);
	cr_assert(fcntl(pty, F_GETFD) & FD_CLOEXEC);
	cr_assert_eq(ioctl(pty, TIOCGWINSZ, &got), 0);
	cr_assert(got.ws_row == 33 && got.ws_col == 99, "the pty took the terminal's size");
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	assert_errno(clip_cage_pty_relay(pty, -1, p[1], pidfd, NULL), 0);
	close(p[1]);
	close(pty);
	out = read_all(p[0]);
	close(p[0]);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 0, "%s", out);
	cr_assert_eq(sscanf(out, "rdev %x:%x\r\n%ld", &maj, &min, &tty_nr), 3, "%s", out);
	cr_assert_eq(fstat(slave, &st), 0);
	cr_assert_neq(makedev(maj, min), st.st_rdev, "the cage got the test's terminal");
	cr_assert_eq((dev_t)tty_nr, makedev(maj, min), "its pty is its controlling terminal");
	cr_assert(strstr(out, "ok\r\n") && !strstr(out, "\033]"), "%s", out);
	close(pidfd);
	close(slave);
	close(m);
	stopped(ctx, c);
}
