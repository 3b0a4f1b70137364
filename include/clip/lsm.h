/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The BPF LSM: libclip's own mandatory policy, loaded once per host by
 * root, pinned, and shared by every cage (clip-lsm(3), doc/lsm.md). With
 * it, the kernel keeps a cage's processes from the processes of other
 * cages and of the core (ptrace, signals, UNIX sockets), from bpf(),
 * perf_event_open(), modules, keyrings and mounts, and enforces levels on
 * the files the library has labelled. It denies nothing to a process that
 * is not a cage's.
 *
 * See clip-lsm(3) and doc/lsm.md.
 */
#ifndef CLIP_LSM_H
#define CLIP_LSM_H

#ifdef __cplusplus
extern "C" {
#endif

struct clip_ctx;
struct clip_error;

/* Where the programs, their links and their maps are pinned (a bpffs). */
#define CLIP_LSM_PIN_DIR "/sys/fs/bpf/clip"

/**
 * clip_lsm_load - load the programs, attach them and pin them under
 * CLIP_LSM_PIN_DIR, or keep what is pinned there already
 *
 * Mounts a bpffs on /sys/fs/bpf first when there is none. Needs root
 * (CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN). Cages started from then on
 * register with it; those already running do not.
 * @return 0 loaded now, 1 already loaded (nothing changed), or
 *	   -EOPNOTSUPP (built without it, -Dlsm=disabled, or a kernel
 *	   without the BPF LSM), -EPERM (not root, or the kernel refuses the
 *	   programs), -EIO.
 */
int clip_lsm_load(struct clip_ctx *ctx, struct clip_error **reterr);

/**
 * clip_lsm_status - whether the LSM is loaded: every program pinned
 * @return 1 loaded, 0 not (or not visible to this process: the pins are
 *	   root's), -EOPNOTSUPP built without it, -EINVAL.
 */
int clip_lsm_status(struct clip_ctx *ctx);

/**
 * clip_lsm_unload - remove the pins, which detaches the programs and
 * frees the maps once no process holds them
 *
 * For tests and for an administrator: the cages running lose the
 * protection. Nothing pinned is not an error.
 * @return 0, or -EOPNOTSUPP, -EPERM, -EIO.
 */
int clip_lsm_unload(struct clip_ctx *ctx, struct clip_error **reterr);

#ifdef __cplusplus
}
#endif

#endif
