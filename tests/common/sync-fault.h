/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fdatasync(2) as a test sees it (sync-fault.c): a disk that cannot write,
 * on demand. Linking this file replaces libc's fdatasync() for the whole
 * process (the library's calls included); it is linked only into the tests
 * that use test_sync_fault.
 */
#pragma once

#include <stdbool.h>

struct test_sync_fault {
	/* The next @fail calls on a file @match accepts (any when NULL) fail with EIO. */
	unsigned fail;
	bool (*match)(int fd);
	/* Called after each fdatasync() that succeeded; NULL: nothing. */
	void (*synced)(int fd);
};

extern struct test_sync_fault test_sync_fault;
