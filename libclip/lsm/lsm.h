/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the lsm module gives the modules above it: a cage's registration
 * (cage), the marking of a cage's transfer socket (session) and of the
 * inodes whose label the library verified (label, session). Each is a
 * no-op answering -EOPNOTSUPP when the LSM is not loaded or not built.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <clip/lsm.h>

#include "lsm-abi.h"

struct clip_ctx;
struct clip_level;

/* Whether the LSM is loaded (clip_lsm_status() == 1). */
bool lsm_active(void);

/*
 * lsm_active() as this process saw it at most a second ago: for the label
 * path, where the stat of the pin cost more than the rest of a verification
 * (doc/lsm.md, "Levels on files").
 */
bool lsm_active_recently(void);

/*
 * The pinned map of the cages' processes, O_CLOEXEC, to register one with
 * lsm_task_register(); -EOPNOTSUPP when the LSM is not loaded, -EACCES
 * when this process may not open it (not root).
 */
int lsm_tasks_open(void);

/* @ret: a cage's process entry: its cage @cage_id (not 0) at @level. */
void lsm_task_init(struct lsm_task *ret, uint64_t cage_id, const struct clip_level *level);

/*
 * Registers the process of @pidfd (everything it forks from then on
 * inherits it) in @tasks_fd. Only a system call: safe in a child between
 * clone() and execve(). 0 or -errno.
 */
int lsm_task_register(int tasks_fd, int pidfd, const struct lsm_task *task);

/*
 * Registers the calling process as the process of @from_pidfd is (a cage's
 * init), if it is: what a process spawned into a running cage inherits.
 * System calls only. 0 (also when the LSM is not loaded or @from_pidfd is
 * not registered), or -errno.
 */
int lsm_task_register_as(int from_pidfd);

/* A fresh cage id: random, never 0. */
uint64_t lsm_cage_id_new(void);

/*
 * The UNIX socket @fd (a listening one) may be connected to by the
 * processes of cage @cage_id, and only by them. 0 or -errno.
 */
int lsm_socket_allow(int fd, uint64_t cage_id);

/*
 * The inode of @fd is at @level for the LSM, from now on; called only
 * once its label is verified. 0, or -errno (-EOPNOTSUPP not loaded).
 */
int lsm_inode_set(int fd, const struct clip_level *level);

/* The inode of @fd is unlabelled for the LSM again. */
int lsm_inode_forget(int fd);

/*
 * Runs the programs' level comparison on each of @cases (a, b in; the
 * answers out) through BPF_PROG_TEST_RUN: the shared table of
 * tests/unit/ checks it against libclip/level/'s. Needs CAP_BPF.
 */
int lsm_test_dominates(struct lsm_dominates_args *cases, size_t n);

/*
 * Fills the maps of a load of the programs that attaches none with
 * @n_inodes labelled inodes of @n_levels distinct levels, and finds them
 * again: the maps' sizes, shown. Needs CAP_BPF. 0, or -errno.
 */
int lsm_test_fill_inodes(unsigned n_inodes, unsigned n_levels);

/*
 * The maps alone pinned under CLIP_LSM_PIN_DIR, no program attached: what
 * the library writes into them (a cage's registration, a verified label)
 * can be read back where the kernel refuses the programs. Tests only;
 * clip_lsm_unload() removes them. 0 or -errno.
 */
int lsm_test_pin_maps(void);

/* The entry of the process of @pidfd, or of the inode of @fd: 0, or -ENOENT (-EOPNOTSUPP: no
 * maps pinned). */
int lsm_test_task(int pidfd, struct lsm_task *ret);
int lsm_test_inode(int fd, struct lsm_level *ret);
/* The cage whose processes may connect to the socket @fd: 0, or -ENOENT. */
int lsm_test_socket(int fd, uint64_t *ret_cage_id);

/* @ret: @level as the programs see it (a NULL level is s0). */
void lsm_level_from(struct lsm_level *ret, const struct clip_level *level);
