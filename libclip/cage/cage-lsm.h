/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the cage module gives the modules above it for the BPF LSM (doc/lsm.md). */
#pragma once

#include <clip/cage.h>

/*
 * The listening UNIX socket @fd is @c's to connect to (its transfer
 * socket): the only socket not made in the cage that its processes may
 * reach while the LSM is loaded. 0, -EOPNOTSUPP (the LSM is not loaded),
 * or -errno.
 */
int cage_lsm_allow_socket(struct clip_cage *c, int fd);
