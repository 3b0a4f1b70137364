/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tpm2-tss with dlopen() on first use (tss2-dl.h), as systemd does for its
 * optional libraries. The libraries are looked up by soname, the major
 * version libclip was built against, in the dynamic linker's usual places
 * (LD_LIBRARY_PATH is ignored for set-id programs, as for any library).
 * They stay loaded (RTLD_NODELETE): pointers into them outlive no handle.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "tss2-dl.h"

#define TSS2_DL_DEFINE(name) __typeof__(name) *sym_##name;
TSS2_ESYS_FUNCTIONS(TSS2_DL_DEFINE)
TSS2_MU_FUNCTIONS(TSS2_DL_DEFINE)
TSS2_RC_FUNCTIONS(TSS2_DL_DEFINE)
TSS2_TCTILDR_FUNCTIONS(TSS2_DL_DEFINE)
#undef TSS2_DL_DEFINE

struct symbol {
	const char *name;
	void **where;
};

#define TSS2_DL_ENTRY(name) { #name, (void **)&sym_##name },
static const struct symbol esys[] = { TSS2_ESYS_FUNCTIONS(TSS2_DL_ENTRY) };
static const struct symbol mu[] = { TSS2_MU_FUNCTIONS(TSS2_DL_ENTRY) };
static const struct symbol rc[] = { TSS2_RC_FUNCTIONS(TSS2_DL_ENTRY) };
static const struct symbol tctildr[] = { TSS2_TCTILDR_FUNCTIONS(TSS2_DL_ENTRY) };
#undef TSS2_DL_ENTRY

static const struct library {
	const char *soname;
	const struct symbol *symbols;
	size_t n;
} libraries[] = {
	{ "libtss2-esys.so.0", esys, ELEMENTSOF(esys) },
	{ "libtss2-mu.so.0", mu, ELEMENTSOF(mu) },
	{ "libtss2-rc.so.0", rc, ELEMENTSOF(rc) },
	{ "libtss2-tctildr.so.0", tctildr, ELEMENTSOF(tctildr) },
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int result = 1; /* 1: not tried yet; then 0 or -EOPNOTSUPP */
static char why[256];

static int
load(void)
{
	for (size_t i = 0; i < ELEMENTSOF(libraries); i++) {
		const struct library *l = &libraries[i];
		void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
		const char *e;

		if (!h) {
			e = dlerror();
			snprintf(why, sizeof(why), "%s", e ? e : l->soname);
			return -EOPNOTSUPP;
		}
		for (size_t j = 0; j < l->n; j++) {
			*l->symbols[j].where = dlsym(h, l->symbols[j].name);
			if (!*l->symbols[j].where) {
				snprintf(why, sizeof(why), "%s has no %s", l->soname,
					 l->symbols[j].name);
				return -EOPNOTSUPP;
			}
		}
	}
	return 0;
}

int
tss2_dl_load(struct clip_error **reterr)
{
	int r;

	pthread_mutex_lock(&lock);
	if (result == 1)
		result = load();
	r = result;
	pthread_mutex_unlock(&lock);
	if (r < 0)
		return error_set(reterr, r, "the TPM libraries (tpm2-tss) cannot be loaded: %s",
				 why);
	return 0;
}
