/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clipd's fronts (clipd(8), doc/transfer.md "The daemon and privilege
 * separation"): the sandbox a front puts itself in, and the main
 * process's side of a front's log channel. In a file of their own so that
 * tests/integration/front-attack.c applies exactly this sandbox to itself
 * and attacks from inside it.
 */
#pragma once

#include <stdio.h>
#include <time.h>

/*
 * A front's uid and gid in root mode: FRONT_UID_BASE + the cage's index
 * (at most FRONT_UIDS fronts). In the range systemd leaves unassigned
 * (0x70000000-0x7ffdffff): above the cages' derived ranges (524288 to
 * 1611137023), below the "foreign" range; clipd refuses a cage whose
 * uid= falls in it.
 */
#define FRONT_UID_BASE 0x7ffd0000u
#define FRONT_UIDS 64

/* What front_sandbox() could not do here (a rootless container, say). */
enum {
	FRONT_SHARED_UID = 1 << 0, /* one id only: its uid is the others' */
	FRONT_HOST_VIEW = 1 << 1, /* no empty mount namespace */
};

/*
 * Confine the calling process as front number @index: an empty root of
 * its own, its own uid and gid (else, with one id only, a user namespace
 * of its own), no capabilities, no new privileges, not dumpable, and the
 * seccomp allowlist with the arguments it uses. Returns the FRONT_* that
 * could not be had (>= 0), or -errno.
 */
int front_sandbox(unsigned index);

/* The uid front @index runs as in root mode. */
static inline unsigned
front_uid(unsigned index)
{
	return FRONT_UID_BASE + index;
}

/*
 * A front's log channel, read by the main process: each line goes out
 * prefixed "clipd: front of 'NAME': ", control and non-ASCII bytes
 * escaped as \xNN, cut at FRONT_LOG_LINE bytes, at most FRONT_LOG_LINES
 * lines per FRONT_LOG_WINDOW_S seconds (then counted, and the count said
 * with the next line let through).
 */
#define FRONT_LOG_LINE 256
#define FRONT_LOG_LINES 20
#define FRONT_LOG_WINDOW_S 10

struct front_log {
	char buf[FRONT_LOG_LINE];
	size_t len;
	time_t window;
	unsigned lines;
	unsigned long dropped;
};

/* Read what is there on @fd, write its lines to @out; -1 at end of file or error. */
int front_log_read(struct front_log *l, int fd, const char *name, FILE *out);
