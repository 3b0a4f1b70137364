/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tpm2-tss with dlopen() on first use (tss2-dl.h, dl.h). */
#include "base/dl.h"
#include "tss2-dl.h"

#define TSS2_DL_DEFINE(name) __typeof__(name) *sym_##name;
TSS2_ESYS_FUNCTIONS(TSS2_DL_DEFINE)
TSS2_MU_FUNCTIONS(TSS2_DL_DEFINE)
TSS2_RC_FUNCTIONS(TSS2_DL_DEFINE)
TSS2_TCTILDR_FUNCTIONS(TSS2_DL_DEFINE)
#undef TSS2_DL_DEFINE

static const struct dl_symbol esys[] = { TSS2_ESYS_FUNCTIONS(DL_ENTRY) };
static const struct dl_symbol mu[] = { TSS2_MU_FUNCTIONS(DL_ENTRY) };
static const struct dl_symbol rc[] = { TSS2_RC_FUNCTIONS(DL_ENTRY) };
static const struct dl_symbol tctildr[] = { TSS2_TCTILDR_FUNCTIONS(DL_ENTRY) };

static const struct dl_library libraries[] = {
	{ "libtss2-esys.so.0", esys, ELEMENTSOF(esys) },
	{ "libtss2-mu.so.0", mu, ELEMENTSOF(mu) },
	{ "libtss2-rc.so.0", rc, ELEMENTSOF(rc) },
	{ "libtss2-tctildr.so.0", tctildr, ELEMENTSOF(tctildr) },
};

static struct dl_set tss2 = DL_SET("the TPM libraries (tpm2-tss)", libraries);

int
tss2_dl_load(struct clip_error **reterr)
{
	return dl_load(&tss2, reterr);
}
