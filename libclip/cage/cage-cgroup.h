/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A cage's cgroups on a unified, hybrid or legacy host: cage-cgroup.c. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include <clip/cage.h>

struct clip_ctx;

enum {
	CG_V1_MEMORY,
	CG_V1_PIDS,
	CG_V1_CPU,
	_CG_V1_MAX,
};

struct cage_cgroups {
	char *v2; /* the cage's cgroup2 directory, or NULL */
	int v2_fd;
	char *v1[_CG_V1_MAX]; /* v1 directories used for a limit, or NULL */
	/* While being made: */
	unsigned wanted, done; /* CLIP_CAGE_MISSING_* bits of the limits, and of those applied */
	char *own[_CG_V1_MAX + 1]; /* the launcher's own cgroups: v1 (CG_V1_*), then cgroup2 */
};

/*
 * The cgroups named @leaf beside the launcher's own, made in two steps so
 * that most of the work overlaps the init's set-up (doc/cage.md): before
 * the init exists, the cgroup2 cgroup if cgroup2 takes any of the limits,
 * with those (the init is cloned into it); after, the v1 cgroups for the
 * other limits, which the init joins itself. The second step returns the
 * CLIP_CAGE_MISSING_* flags of what could not be done (CGROUP: the cage
 * has limits but no cgroup of its own).
 */
void cage_cgroups_create_v2(struct clip_ctx *ctx, struct cage_cgroups *cg, const char *leaf,
			    const struct clip_cage_limits *limits);
unsigned cage_cgroups_create_v1(struct clip_ctx *ctx, struct cage_cgroups *cg, const char *leaf,
				const struct clip_cage_limits *limits);

/*
 * The v1 "tasks" files, opened for the init to move itself (-1 where
 * none): the cage's, or with @parent those of the launcher's own cgroups
 * beside them, which the init moves back to once the cage's processes are
 * in (so that stopping removes the cage's while the init dies). And closed.
 */
int cage_cgroups_open_tasks(const struct cage_cgroups *cg, bool parent, int fds[_CG_V1_MAX]);
void cage_cgroups_close_tasks(int fds[_CG_V1_MAX]);

/* Move the calling single-threaded process through the opened "tasks" files. */
int cage_cgroups_join_tasks(const int fds[_CG_V1_MAX]);

/* Move the calling single-threaded process into the v1 cgroups. */
int cage_cgroups_join_v1_self(const struct cage_cgroups *cg);

/* Move @pid into the cgroup2 cgroup (where CLONE_INTO_CGROUP was refused). */
int cage_cgroups_join_v2(const struct cage_cgroups *cg, pid_t pid);

/* cgroup.kill: -EOPNOTSUPP without a cgroup2 cgroup. */
int cage_cgroups_kill(const struct cage_cgroups *cg);

/* Remove the v1 cgroups that are empty already, and forget those. */
void cage_cgroups_remove_v1(struct cage_cgroups *cg);

/* Remove the (empty) cgroups and free the paths. */
void cage_cgroups_destroy(struct cage_cgroups *cg);

/* Free the paths only. */
void cage_cgroups_forget(struct cage_cgroups *cg);
