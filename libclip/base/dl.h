/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Optional libraries loaded with dlopen() on first use (dl.c), as systemd
 * does: tpm2-tss (tss2-dl.h) and libselinux (selinux.c). Linking them cost
 * every process that links libclip at start-up, and most never use them.
 * A module lists, per library (its soname, the major version libclip was
 * built against), the functions it calls as sym_NAME pointers.
 */
#pragma once

#include <pthread.h>
#include <stddef.h>

#include "macro.h"

struct clip_error;

struct dl_symbol {
	const char *name;
	void **where;
};

struct dl_library {
	const char *soname;
	const struct dl_symbol *symbols;
	size_t n;
};

struct dl_set {
	const char *what; /* for the message: "the TPM libraries (tpm2-tss)" */
	const struct dl_library *libraries;
	size_t n;
	pthread_mutex_t lock;
	int result; /* 1 before the first try, then 0 or -EOPNOTSUPP */
	char why[256];
};

#define DL_SET(what_, libraries_) \
	{ \
		.what = (what_), .libraries = (libraries_), .n = ELEMENTSOF(libraries_), \
		.lock = PTHREAD_MUTEX_INITIALIZER, .result = 1, \
	}

/* The sym_NAME pointer of each function NAME, and its table entry. */
#define DL_DEFINE(name) static __typeof__(name) *sym_##name;
#define DL_ENTRY(name) { #name, (void **)&sym_##name },

/*
 * Load the libraries of @set once per process (thread-safe; they stay
 * loaded); later calls return the first result: 0, or -EOPNOTSUPP with
 * what is missing.
 */
int dl_load(struct dl_set *set, struct clip_error **reterr);
