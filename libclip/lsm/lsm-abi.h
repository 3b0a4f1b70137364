/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the BPF programs (clip-lsm.bpf.c) and the library (lsm.c) share:
 * the values of their maps and the names they are pinned under. Plain
 * fixed-size types, so that both compilers lay them out the same.
 */
#pragma once

#ifdef __bpf__
typedef __u32 lsm_u32;
typedef __u64 lsm_u64;
#else
#include <stdint.h>
typedef uint32_t lsm_u32;
typedef uint64_t lsm_u64;
#endif

/* CLIP_LEVEL_CATEGORY_MAX + 1 bits (clip/level.h). */
#define LSM_CATEGORY_WORDS 16

/* A level: a sensitivity and a bitmap of categories, as libclip/level/. */
struct lsm_level {
	lsm_u32 sensitivity;
	lsm_u32 pad;
	lsm_u64 cats[LSM_CATEGORY_WORDS];
};

/* A cage's process (task storage, keyed by pidfd from user space). */
struct lsm_task {
	lsm_u64 cage_id; /* never 0 */
	struct lsm_level level;
};

/* A socket (socket storage, keyed by the socket's fd from user space). */
struct lsm_sock {
	lsm_u64 cage_id; /* the cage whose processes may connect to it */
};

/* A labelled inode: the kernel's dev_t (major << 20 | minor) and inode number. */
struct lsm_inode_key {
	lsm_u64 dev;
	lsm_u64 ino;
};

/* The input and output of the syscall program that tests dominance. */
struct lsm_dominates_args {
	struct lsm_level a, b;
	lsm_u32 dominates; /* out: 1 when a dominates (or equals) b */
	lsm_u32 equal; /* out */
};

/*
 * Room for millions of labelled inodes, entries allocated as they come: an
 * inode's entry holds its level's key in the map of levels (24 bytes of
 * key and value, not 160), since a host has few distinct levels.
 */
#define LSM_INODES_MAX (1u << 22)
#define LSM_LEVELS_MAX 4096u
