/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clip_session_parse() on arbitrary bytes (not NUL-terminated). A refusal
 * carries its errno, an offset inside the input and a message starting
 * with the file's name; an accepted session formats to text that parses
 * back to the same text.
 *
 * Hermetic: relative Profile= paths resolve in a private temporary
 * directory holding three profiles, low.cage, high.cage and side.cage
 * (removed at exit); the state directory named by the context is never
 * touched, as parsing reads nothing there. An input naming a kernel file
 * system (/proc, /sys, /dev) is skipped: a read of /proc/kmsg would wait,
 * and the answers would depend on the machine.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <clip/clip.h>
#include <clip/session.h>

#include "fuzz.h"

static char dir[] = "/tmp/fuzz-session-XXXXXX";
static int dirfd = -1;
static struct clip_ctx *ctx;

static const char *const profiles[][2] = {
	{ "low.cage", "[Cage]\nName=low\n[Network]\nMode=none\n[Security]\nWriteXorExecute=yes\n" },
	{ "high.cage", "[Cage]\nName=high\nLevel=s2\n[Files]\nBindReadOnly=/usr/share\n" },
	{ "side.cage", "[Cage]\nName=side\n" },
};

static void
cleanup(void)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		unlinkat(dirfd, profiles[i][0], 0);
	close(dirfd);
	rmdir(dir);
	clip_ctx_unref(ctx);
}

static void
setup(void)
{
	if (!mkdtemp(dir))
		abort();
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0 || clip_ctx_new(&ctx) < 0)
		abort();
	atexit(cleanup);
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
		int fd = openat(dirfd, profiles[i][0], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				0644);
		size_t n = strlen(profiles[i][1]);

		if (fd < 0 || write(fd, profiles[i][1], n) != (ssize_t)n)
			abort();
		close(fd);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct clip_session *s = NULL, *again = NULL;
	struct clip_error *err = NULL;
	char *a = NULL, *b = NULL;
	int r;

	if (dirfd < 0)
		setup();
	for (const char *const *k = (const char *const[]){ "/proc", "/sys", "/dev", NULL }; *k; k++)
		if (memmem(data, size, *k, strlen(*k)))
			return 0;
	r = clip_session_parse(&s, ctx, dirfd, "fuzz", (const char *)data, size, &err);
	if (r < 0) {
		if (s)
			abort();
		fuzz_check_refusal(r, err, size, "fuzz",
				   (const int[]){ -EINVAL, -E2BIG, -ENOENT, -EACCES, 0 });
		return 0;
	}
	if (err || !s)
		abort();
	if (clip_session_format(s, &a) < 0)
		abort();
	if (clip_session_parse(&again, ctx, dirfd, "again", a, strlen(a), NULL) < 0)
		abort();
	if (clip_session_format(again, &b) < 0 || strcmp(a, b) != 0)
		abort();
	free(a);
	free(b);
	clip_session_unref(s);
	clip_session_unref(again);
	return 0;
}
