/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lsm: the BPF LSM's user-space half: loading and pinning the programs
 * (clip/lsm.h), registering a cage's processes, a cage's sockets and the
 * labelled inodes in the pinned maps (lsm.h, for cage, label and session).
 *
 * Calls: base level
 */
#pragma once

#include "lsm.h"

/* The pins under CLIP_LSM_PIN_DIR: the maps by their names, links as "link-HOOK". */
#define LSM_MAP_TASKS "tasks"
#define LSM_MAP_SOCKS "socks"
#define LSM_MAP_INODES "inodes"
#define LSM_MAP_LEVELS "levels"
