/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fdatasync(2) that fails on demand (sync-fault.h). */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sync-fault.h"

struct test_sync_fault test_sync_fault;

int
fdatasync(int fd)
{
	struct test_sync_fault *f = &test_sync_fault;
	int r;

	if (f->fail > 0 && (!f->match || f->match(fd))) {
		f->fail--;
		errno = EIO;
		return -1;
	}
	r = (int)syscall(SYS_fdatasync, fd);
	if (r == 0 && f->synced)
		f->synced(fd);
	return r;
}
