/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exec: W^X for interpreters, the kernel's AT_EXECVE_CHECK on a
 * descriptor, the exec securebits and the decision table. Its internals
 * are here for its unit tests.
 *
 * Calls: base
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <clip/exec.h>

struct clip_ctx;
struct clip_error;

/*
 * The raw answer for @fd (native or degraded), with @name as argv[0]:
 * 0 or -errno, where anything unexpected fails closed as -EACCES.
 */
int exec_check(struct clip_ctx *ctx, int fd, const char *name);

int exec_may_run_file(struct clip_ctx *ctx, int fd, const char *name, unsigned flags,
		      struct clip_error **reterr);
int exec_open(struct clip_ctx *ctx, int dirfd, const char *path, unsigned flags,
	      struct clip_error **reterr);

/*
 * @name fit for a one-line message (control characters replaced, cut
 * after 200 bytes), or "file descriptor @fd" when NULL; in @buf.
 */
const char *exec_shown_name(const char *name, int fd, char *buf, size_t size);

int exec_allow_tree(struct clip_ctx *ctx, int dirfd, const char *path, unsigned flags,
		    struct clip_exec_tree_stats *ret, struct clip_error **reterr);

/* Whether valgrind runs us: it would execute a checked file, so the check degrades. */
bool exec_under_valgrind(void);

/* Forget the per-process probe of AT_EXECVE_CHECK (tests that hide it). */
void exec_forget_probe(void);
