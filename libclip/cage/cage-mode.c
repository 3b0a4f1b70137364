/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Root or rootless: decided from what the process has (its capabilities
 * and the ids its user namespace maps), never from its uid. uid 0 in a
 * rootless container has every capability in a namespace that maps one
 * id: it cannot give a cage 65536 ids, and must make it as any user would.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base-internal.h"
#include "cage-internal.h"

/* The ids cages take by default: every range cage_profile_uid_base() derives. */
#define REGION_FIRST ((uint64_t)CAGE_UID_BASE_MIN)
#define REGION_COUNT ((uint64_t)CAGE_UID_BASE_SLOTS * CAGE_UID_RANGE)

static bool
have_capability(const struct __user_cap_data_struct d[2], unsigned cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

/* Does @file (/proc/self/uid_map, gid_map) map every id of [first, first + count)? */
bool
cage_ids_mapped(const char *file, uint64_t first, uint64_t count)
{
	uint64_t next = first, end = first + count;
	char buf[16384]; /* 340 extents of three 10-digit numbers at most */
	_cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC);
	bool progress = true;
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* The extents come in no order: walk them until none extends the covered prefix. */
	while (next < end && progress) {
		unsigned long long inside, outside, count_i;
		const char *p = buf;
		int used;

		progress = false;
		while (sscanf(p, "%llu %llu %llu%n", &inside, &outside, &count_i, &used) == 3) {
			p += used;
			if (inside <= next && next < inside + count_i) {
				next = inside + count_i;
				progress = true;
			}
		}
	}
	return next >= end;
}

static int
mode_decide(struct clip_ctx *ctx)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &h, d) < 0 || !have_capability(d, CAP_SYS_ADMIN) ||
	    !have_capability(d, CAP_SETUID) || !have_capability(d, CAP_SETGID)) {
		log_info(ctx, "cages run rootless: this process lacks CAP_SYS_ADMIN, CAP_SETUID "
			      "or CAP_SETGID");
		return CLIP_CAGE_MODE_ROOTLESS;
	}
	if (!cage_ids_mapped("/proc/self/uid_map", REGION_FIRST, REGION_COUNT) ||
	    !cage_ids_mapped("/proc/self/gid_map", REGION_FIRST, REGION_COUNT)) {
		log_info(ctx,
			 "cages run rootless: the user namespace of this process (uid %u) does "
			 "not map ids %" PRIu64 "-%" PRIu64 ", which cages take",
			 (unsigned)geteuid(), REGION_FIRST, REGION_FIRST + REGION_COUNT - 1);
		return CLIP_CAGE_MODE_ROOTLESS;
	}
	log_debug(ctx, "cages run in root mode: each maps 65536 ids from its UidBase");
	return CLIP_CAGE_MODE_ROOT;
}

bool
cage_rootless(struct clip_ctx *ctx)
{
	if (!ctx->cage_mode_decided)
		ctx->cage_mode_decided =
			ctx->cage_mode != CLIP_CAGE_MODE_AUTO ? ctx->cage_mode : mode_decide(ctx);
	return ctx->cage_mode_decided == CLIP_CAGE_MODE_ROOTLESS;
}

CLIP_EXPORT int
clip_ctx_set_cage_mode(struct clip_ctx *ctx, int mode)
{
	ctx_assert_return(ctx, -EINVAL);
	ctx_assert_log_return(ctx,
			      mode == CLIP_CAGE_MODE_AUTO || mode == CLIP_CAGE_MODE_ROOT ||
				      mode == CLIP_CAGE_MODE_ROOTLESS,
			      -EINVAL);
	ctx->cage_mode = mode;
	ctx->cage_mode_decided = 0;
	return 0;
}

CLIP_EXPORT int
clip_ctx_get_cage_mode(struct clip_ctx *ctx)
{
	ctx_assert_return(ctx, -EINVAL);
	return cage_rootless(ctx) ? CLIP_CAGE_MODE_ROOTLESS : CLIP_CAGE_MODE_ROOT;
}
