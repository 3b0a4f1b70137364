/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dlopen() of optional libraries (dl.h): by soname, in the dynamic
 * linker's usual places (LD_LIBRARY_PATH is ignored for set-id programs,
 * as for any library); RTLD_NOW so that a missing function is found here,
 * not at its first call; RTLD_NODELETE since the pointers outlive any
 * handle.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

#include "dl.h"
#include "error.h"

static int
load(struct dl_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		const struct dl_library *l = &set->libraries[i];
		void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
		const char *e;

		if (!h) {
			e = dlerror();
			snprintf(set->why, sizeof(set->why), "%s", e ? e : l->soname);
			return -EOPNOTSUPP;
		}
		for (size_t j = 0; j < l->n; j++) {
			*l->symbols[j].where = dlsym(h, l->symbols[j].name);
			if (!*l->symbols[j].where) {
				snprintf(set->why, sizeof(set->why), "%s has no %s", l->soname,
					 l->symbols[j].name);
				return -EOPNOTSUPP;
			}
		}
	}
	return 0;
}

int
dl_load(struct dl_set *set, struct clip_error **reterr)
{
	int r;

	pthread_mutex_lock(&set->lock);
	if (set->result == 1)
		set->result = load(set);
	r = set->result;
	pthread_mutex_unlock(&set->lock);
	if (r < 0)
		return error_set(reterr, r, "%s cannot be loaded: %s", set->what, set->why);
	return 0;
}
