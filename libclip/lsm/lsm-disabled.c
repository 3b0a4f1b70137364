/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The lsm module in a build without the BPF LSM (-Dlsm=disabled, or no
 * libbpf, clang or bpftool): every function keeps its place in the ABI
 * and answers -EOPNOTSUPP, with a message that says why; cages start
 * without it and report CLIP_CAGE_MISSING_LSM.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <clip/lsm.h>

#include "base/ctx-internal.h"
#include "base/error.h"
#include "lsm-internal.h"

#define NO_LSM "libclip was built without the BPF LSM (-Dlsm=disabled)"

/* What every exported function with a reterr answers, after the usual checks. */
static int
refuse(const struct clip_ctx *ctx, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	return api_return(error_set(reterr, -EOPNOTSUPP, NO_LSM), reterr);
}

bool
lsm_active(void)
{
	return false;
}

bool
lsm_active_recently(void)
{
	return false;
}

int
lsm_tasks_open(void)
{
	return -EOPNOTSUPP;
}

void
lsm_level_from(struct lsm_level *ret, const struct clip_level *level)
{
	memset(ret, 0, sizeof(*ret));
}

void
lsm_task_init(struct lsm_task *ret, uint64_t cage_id, const struct clip_level *level)
{
	memset(ret, 0, sizeof(*ret));
	ret->cage_id = cage_id;
}

int
lsm_task_register(int tasks_fd, int pidfd, const struct lsm_task *task)
{
	return -EOPNOTSUPP;
}

int
lsm_task_register_as(int from_pidfd)
{
	return 0;
}

uint64_t
lsm_cage_id_new(void)
{
	return 1;
}

int
lsm_socket_allow(int fd, uint64_t cage_id)
{
	return -EOPNOTSUPP;
}

int
lsm_inode_set(int fd, const struct clip_level *level)
{
	return -EOPNOTSUPP;
}

int
lsm_inode_forget(int fd)
{
	return -EOPNOTSUPP;
}

int
lsm_test_dominates(struct lsm_dominates_args *cases, size_t n)
{
	return -EOPNOTSUPP;
}

int
lsm_test_fill_inodes(unsigned n_inodes, unsigned n_levels)
{
	return -EOPNOTSUPP;
}

int
lsm_test_pin_maps(void)
{
	return -EOPNOTSUPP;
}

int
lsm_test_task(int pidfd, struct lsm_task *ret)
{
	return -EOPNOTSUPP;
}

int
lsm_test_socket(int fd, uint64_t *ret_cage_id)
{
	return -EOPNOTSUPP;
}

int
lsm_test_inode(int fd, struct lsm_level *ret)
{
	return -EOPNOTSUPP;
}

CLIP_EXPORT int
clip_lsm_load(struct clip_ctx *ctx, struct clip_error **reterr)
{
	return refuse(ctx, reterr);
}

CLIP_EXPORT int
clip_lsm_status(struct clip_ctx *ctx)
{
	ctx_assert_return(ctx, -EINVAL);
	return -EOPNOTSUPP;
}

CLIP_EXPORT int
clip_lsm_unload(struct clip_ctx *ctx, struct clip_error **reterr)
{
	return refuse(ctx, reterr);
}
