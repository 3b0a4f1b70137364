/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "test-hooks.h"

const char *
test_hook_list(void)
{
#ifdef CLIP_TEST_HOOKS
	return secure_getenv("CLIP_TEST_DISABLE");
#else
	return NULL;
#endif
}

bool
test_hook_list_has(const char *list, const char *what)
{
	size_t n = strlen(what);

	for (const char *p = list; p && *p; p++)
		if ((p == list || p[-1] == ',') && strncmp(p, what, n) == 0 &&
		    (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

bool
test_hook_disabled(const char *what)
{
	return test_hook_list_has(test_hook_list(), what);
}
