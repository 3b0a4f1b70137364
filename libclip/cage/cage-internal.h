/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cage module's internals: the profile, shared by the parser and the runtime. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/filter.h>

#include <clip/cage.h>
#include <clip/level.h>

#include "base/macro.h"

#define CAGE_PATH_MAX 4096
#define CAGE_UID_RANGE 65536u
/* How long a start, or a spawn, waits for the cage's set-up by default; the most it may wait. */
#define CAGE_START_TIMEOUT_S 30u
#define CAGE_START_TIMEOUT_MAX_S 3600u
/* The first uid of the ranges derived from a cage's name (systemd's container range). */
#define CAGE_UID_BASE_MIN 0x80000u
#define CAGE_UID_BASE_SLOTS 0x6000u

struct cage_mount {
	char *source; /* NULL for a tmpfs */
	char *target;
	bool rw;
};

struct clip_cage_profile {
	unsigned n_ref;
	char *name;
	struct clip_level *level;
	char *root;
	char *data_dir;
	uint32_t uid_base; /* 0: derived from the name */
	unsigned start_timeout_s; /* 0: CAGE_START_TIMEOUT_S */

	struct cage_mount mounts[CLIP_CAGE_BINDS_MAX];
	size_t n_mounts;

	int net_mode;
	char *address; /* as written, "a.b.c.d/n" */
	uint32_t addr_be;
	unsigned prefix;

	struct clip_cage_limits limits;

	uint64_t caps; /* bit n: capability n kept */
	int syscalls[CLIP_CAGE_SYSCALLS_MAX];
	size_t n_syscalls;
	bool wx;
	bool measure; /* Measure=yes: the start extends the TPM's measurement PCR */

	/* The compiled seccomp filter of the additions, made once per profile, or NULL (cage-seccomp.c). */
	struct sock_filter *bpf;
	size_t bpf_len;
};

DEFINE_UNREF_CLEANUP(struct clip_cage_profile, clip_cage_profile_unref)

/* The pid behind @pidfd in this pid namespace (its fdinfo), or -1. */
pid_t cage_pidfd_pid(int pidfd);

/* How long a start or a spawn waits for the cage's set-up: StartTimeoutSec=, in ms. */
unsigned cage_profile_start_timeout_ms(const struct clip_cage_profile *p);

/* The uid range of a cage run by root: the profile's, or one derived from its name. */
uint32_t cage_profile_uid_base(const struct clip_cage_profile *p);

/* The profile's mounts sorted by target, parents before children: @sorted gets n_mounts entries. */
void cage_profile_sorted_mounts(const struct clip_cage_profile *p,
				const struct cage_mount *sorted[CLIP_CAGE_BINDS_MAX]);

/*
 * Compile (first call) the default seccomp filter, and the profile's
 * additions into p->bpf (left NULL without any).
 */
int cage_seccomp_compile(struct clip_cage_profile *p, struct clip_error **reterr);

/* The default filter, once cage_seccomp_compile() succeeded; lock-free, for the cage's processes. */
struct sock_fprog cage_seccomp_default(void);

/* Whether a syscall name/number is in the default deny-list (for tests). */
bool cage_seccomp_is_default_denied(int nr);
