/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clipctl exec-check FILE: may FILE run as code (the kernel's answer)?
 * clipctl exec-policy [BIT... -- COMMAND [ARG...]]: print the exec
 * securebits, or add some and run COMMAND under them.
 * clipctl exec-policy allow-tree: clipctl-exec-tree.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clipctl.h"

static const struct {
	const char *name;
	unsigned bit;
} exec_bits[] = {
	{ "restrict-file", CLIP_EXEC_RESTRICT_FILE },
	{ "restrict-file-locked", CLIP_EXEC_RESTRICT_FILE_LOCKED },
	{ "deny-interactive", CLIP_EXEC_DENY_INTERACTIVE },
	{ "deny-interactive-locked", CLIP_EXEC_DENY_INTERACTIVE_LOCKED },
};

int
clipctl_exec_check(struct clipctl *c, int argc, char **argv)
{
	struct clip_error *error = NULL;
	struct clip_ctx *ctx;
	int fd, r;

	if (argc != 1)
		return fail_usage("exec-check takes one FILE");
	ctx = clipctl_ctx(c);
	if (!ctx)
		return EXIT_USAGE;
	r = open_file(argv[0], OPEN_FOLLOW, &fd);
	if (r != 0) {
		clip_ctx_unref(ctx);
		return r;
	}
	r = clip_exec_check_fd(ctx, fd, &error);
	if (r < 0) {
		say(stderr, "clipctl: %s: refused: %s", argv[0], clip_error_get_message(error));
		clip_error_free(error);
		r = EXIT_INVALID;
	} else {
		say(stdout, "%s: allowed%s", argv[0],
		    clip_exec_check_support(ctx) == CLIP_EXEC_CHECK_DEGRADED ? " (degraded check)"
									     : "");
	}
	close(fd);
	clip_ctx_unref(ctx);
	return r;
}

static int
print_policy(struct clip_ctx *ctx)
{
	unsigned bits = 0;

	if (clip_exec_get_securebits(ctx, &bits) < 0)
		return fail_error("cannot read the securebits", -EINVAL, NULL);
	printf("securebits 0x%04x\n", bits);
	for (size_t i = 0; i < sizeof(exec_bits) / sizeof(exec_bits[0]); i++)
		say(stdout, "%s %s", exec_bits[i].name, bits & exec_bits[i].bit ? "on" : "off");
	say(stdout, "check %s",
	    clip_exec_check_support(ctx) == CLIP_EXEC_CHECK_NATIVE ? "native" : "degraded");
	return 0;
}

int
clipctl_exec_policy(struct clipctl *c, int argc, char **argv)
{
	struct clip_error *error = NULL;
	struct clip_ctx *ctx;
	unsigned bits = 0;
	int i, r;

	if (argc > 0 && strcmp(argv[0], "allow-tree") == 0)
		return clipctl_exec_allow_tree(c, argc, argv);
	for (i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
		size_t j;

		for (j = 0; j < sizeof(exec_bits) / sizeof(exec_bits[0]); j++)
			if (strcmp(argv[i], exec_bits[j].name) == 0)
				break;
		if (j == sizeof(exec_bits) / sizeof(exec_bits[0]))
			return fail_usage("unknown securebit '%s'", argv[i]);
		bits |= exec_bits[j].bit;
	}
	if (i > 0 && i + 1 >= argc)
		return fail_usage("exec-policy BIT... needs -- COMMAND to run under the bits");
	if (i == 0 && argc > 0)
		return fail_usage("exec-policy takes no argument but BIT... -- COMMAND");
	ctx = clipctl_ctx(c);
	if (!ctx)
		return EXIT_USAGE;
	if (argc == 0) {
		r = print_policy(ctx);
		clip_ctx_unref(ctx);
		return r;
	}
	r = clip_exec_set_securebits(ctx, bits, &error);
	clip_ctx_unref(ctx);
	if (r < 0)
		return fail_error("cannot set the securebits", r, error);
	execvp(argv[i + 1], argv + i + 1);
	say(stderr, "clipctl: cannot run %s: %s", argv[i + 1], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
