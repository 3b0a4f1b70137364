/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tpm2-tss, loaded when the TPM is first used (tss2-dl.c): its libraries
 * and the libcrypto they pull in cost every process that links libclip
 * about 1 ms at start-up, and most never touch the TPM. The code calls
 * sym_NAME for each function NAME below.
 */
#pragma once

#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

struct clip_error;

/* Each library (its soname) and the functions of it libclip calls. */
#define TSS2_ESYS_FUNCTIONS(X) \
	X(Esys_Create) \
	X(Esys_CreatePrimary) \
	X(Esys_Finalize) \
	X(Esys_FlushContext) \
	X(Esys_Free) \
	X(Esys_GetCapability) \
	X(Esys_Initialize) \
	X(Esys_Load) \
	X(Esys_NV_DefineSpace) \
	X(Esys_NV_Increment) \
	X(Esys_NV_Read) \
	X(Esys_NV_UndefineSpace) \
	X(Esys_PCR_Extend) \
	X(Esys_PCR_Read) \
	X(Esys_PolicyGetDigest) \
	X(Esys_PolicyPCR) \
	X(Esys_StartAuthSession) \
	X(Esys_TR_Close) \
	X(Esys_TR_FromTPMPublic) \
	X(Esys_TRSess_SetAttributes) \
	X(Esys_Unseal)
#define TSS2_MU_FUNCTIONS(X) \
	X(Tss2_MU_TPM2B_PRIVATE_Marshal) \
	X(Tss2_MU_TPM2B_PRIVATE_Unmarshal) \
	X(Tss2_MU_TPM2B_PUBLIC_Marshal) \
	X(Tss2_MU_TPM2B_PUBLIC_Unmarshal) \
	X(Tss2_MU_TPML_PCR_SELECTION_Marshal) \
	X(Tss2_MU_UINT32_Marshal) \
	X(Tss2_MU_UINT32_Unmarshal)
#define TSS2_RC_FUNCTIONS(X) X(Tss2_RC_Decode)
#define TSS2_TCTILDR_FUNCTIONS(X) \
	X(Tss2_TctiLdr_Finalize) \
	X(Tss2_TctiLdr_Initialize)

#define TSS2_DL_DECLARE(name) extern __typeof__(name) *sym_##name;
TSS2_ESYS_FUNCTIONS(TSS2_DL_DECLARE)
TSS2_MU_FUNCTIONS(TSS2_DL_DECLARE)
TSS2_RC_FUNCTIONS(TSS2_DL_DECLARE)
TSS2_TCTILDR_FUNCTIONS(TSS2_DL_DECLARE)
#undef TSS2_DL_DECLARE

/*
 * Load the libraries once per process (thread-safe); later calls return
 * the first result. -EOPNOTSUPP, with what is missing, when they cannot be
 * loaded: the TPM is then unavailable, and nothing else of libclip is.
 */
int tss2_dl_load(struct clip_error **reterr);
