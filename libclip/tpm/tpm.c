/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TPM 2.0 through tpm2-tss ESYS: the context's TPM settings, the
 * connection, PCR read and extend, and what clip_tpm_get_info() says.
 * Sealing is in tpm-seal.c, the key provider in key-tpm.c, measurements
 * in tpm-log.c; doc/tpm.md explains the choices.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/crypto.h"
#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "tpm-internal.h"

/* The first version of struct clip_tpm_opts ends after fallback. */
#define TPM_OPTS_SIZE_V1 (offsetof(struct clip_tpm_opts, fallback) + sizeof(uint32_t))

static bool
tcti_valid(const char *s)
{
	size_t n = strnlen(s, sizeof(((struct tpm_config *)NULL)->tcti));

	if (n == 0 || n >= sizeof(((struct tpm_config *)NULL)->tcti))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

bool
tpm_measure_pcr_valid(uint32_t pcr)
{
	/*
	 * PCR 0 is the firmware's; 17 to 22 belong to D-RTM (they reset to
	 * ones, and locality 0 cannot extend them).
	 */
	return (pcr >= 1 && pcr <= 16) || pcr == 23;
}

const char *
tpm_tcti(const struct clip_ctx *ctx)
{
	const char *env;

	if (ctx->tpm.tcti[0])
		return ctx->tpm.tcti;
	env = secure_getenv("CLIP_TPM_TCTI");
	if (env && *env) {
		if (tcti_valid(env))
			return env;
		log_warning(ctx, "ignoring $CLIP_TPM_TCTI: not 1 to 255 printable characters");
	}
	return TPM_DEFAULT_TCTI;
}

uint32_t
tpm_seal_pcrs(const struct clip_ctx *ctx)
{
	return ctx->tpm.seal_pcrs ? ctx->tpm.seal_pcrs : TPM_DEFAULT_SEAL_PCRS;
}

unsigned
tpm_measure_pcr(const struct clip_ctx *ctx)
{
	return ctx->tpm.measure_pcr ? ctx->tpm.measure_pcr : TPM_DEFAULT_MEASURE_PCR;
}

uint32_t
tpm_fallback(const struct clip_ctx *ctx)
{
	return ctx->tpm.fallback;
}

CLIP_EXPORT int
clip_ctx_set_tpm_options(struct clip_ctx *ctx, const struct clip_tpm_opts *opts)
{
	struct clip_tpm_opts o;
	struct tpm_config c = { 0 };
	int r;

	ctx_assert_return(ctx, -EINVAL);
	if (opts) {
		r = struct_copy_in(&o, sizeof(o), opts, TPM_OPTS_SIZE_V1, "struct clip_tpm_opts",
				   NULL);
		ctx_assert_log_return(ctx, r != -EINVAL, -EINVAL);
		/* Members this version does not know, set: it cannot honour them. */
		ctx_assert_log_return(ctx, r != -E2BIG, -E2BIG);
		/* Values a person typed or configured: a sentence, not a client bug. */
		if (o.tcti && !tcti_valid(o.tcti)) {
			log_err(ctx,
				"bad TPM options: a TCTI is 1 to %zu printable ASCII characters",
				sizeof(c.tcti) - 1);
			return -EINVAL;
		}
		ctx_assert_log_return(ctx, !(o.seal_pcrs & ~TPM_PCR_MASK), -EINVAL);
		if (o.measure_pcr && !tpm_measure_pcr_valid(o.measure_pcr)) {
			log_err(ctx,
				"bad TPM options: PCR %u cannot be measured into (1 to 16 or 23; 0 "
				"is the firmware's, 17 to 22 belong to D-RTM)",
				(unsigned)o.measure_pcr);
			return -EINVAL;
		}
		ctx_assert_log_return(ctx,
				      o.fallback == CLIP_TPM_FALLBACK_REFUSE ||
					      o.fallback == CLIP_TPM_FALLBACK_KEY_FILE,
				      -EINVAL);
		if (o.tcti)
			strcpy(c.tcti, o.tcti);
		c.seal_pcrs = o.seal_pcrs;
		c.measure_pcr = o.measure_pcr;
		c.fallback = o.fallback;
	}
	ctx->tpm = c;
	/* A key unsealed from another TPM, or under other PCRs, is not this one. */
	ctx_forget_keys(ctx);
	return 0;
}

CLIP_EXPORT int
clip_ctx_get_tpm_options(const struct clip_ctx *ctx, struct clip_tpm_opts *opts)
{
	struct clip_tpm_opts o;

	ctx_assert_return(ctx, -EINVAL);
	clip_assert_return(opts, -EINVAL);

	o = (struct clip_tpm_opts){
		.size = sizeof(o),
		.tcti = tpm_tcti(ctx),
		.seal_pcrs = tpm_seal_pcrs(ctx),
		.measure_pcr = tpm_measure_pcr(ctx),
		.fallback = tpm_fallback(ctx),
	};
	return struct_copy_out(opts, &o, sizeof(o), TPM_OPTS_SIZE_V1);
}

int
tpm_rc_error(struct clip_error **reterr, int error, TSS2_RC rc, const char *format, ...)
{
	_cleanup_free_ char *text = NULL;
	va_list ap;
	int n;

	va_start(ap, format);
	n = vasprintf(&text, format, ap);
	va_end(ap);
	if (n < 0)
		return error_set(reterr, error, "TPM response 0x%x", (unsigned)rc);
	/* A code of the TPM itself, or of a layer of tpm2-tss (TCTI, ESYS, marshalling). */
	return error_set(reterr, error, "%s: %s 0x%x (%s)", text,
			 rc & TSS2_RC_LAYER_MASK ? "tpm2-tss error" : "TPM response", (unsigned)rc,
			 sym_Tss2_RC_Decode(rc));
}

static pthread_once_t tss2_quiet_once = PTHREAD_ONCE_INIT;

/*
 * tpm2-tss prints its errors on stderr unless $TSS2_LOG says otherwise,
 * and a library must not print: libclip reports them through the
 * context's log. A $TSS2_LOG set by the user is left alone.
 */
static void
tss2_quiet(void)
{
	(void)setenv("TSS2_LOG", "all+NONE", 0);
}

/* "device:PATH": say why the device cannot be used before tpm2-tss fails vaguely. */
static int
tcti_device_check(const char *conf, struct clip_error **reterr)
{
	const char *path;

	if (strncmp(conf, "device:", 7) != 0 || !conf[7])
		return 0;
	path = conf + 7;
	if (faccessat(AT_FDCWD, path, R_OK | W_OK, AT_EACCESS) == 0)
		return 0;
	if (errno == ENOENT || errno == ENOTDIR)
		return error_set(reterr, -ENODEV, "no TPM: %s does not exist", path);
	if (errno == EACCES || errno == EPERM)
		return error_set(reterr, -EACCES,
				 "cannot use the TPM %s: permission denied (root, or a member "
				 "of its group, may)",
				 path);
	return error_set_errno(reterr, -ENODEV, "no TPM at %s", path);
}

int
tpm_open(struct clip_ctx *ctx, struct tpm *t, struct clip_error **reterr)
{
	TSS2_RC rc;
	int r;

	*t = (struct tpm){ .ctx = ctx, .tcti_conf = tpm_tcti(ctx) };
	(void)pthread_once(&tss2_quiet_once, tss2_quiet);
	r = tcti_device_check(t->tcti_conf, reterr);
	if (r >= 0)
		r = tss2_dl_load(reterr);
	if (r < 0)
		return r;
	rc = sym_Tss2_TctiLdr_Initialize(t->tcti_conf, &t->tcti);
	if (rc != TSS2_RC_SUCCESS) {
		t->tcti = NULL;
		return tpm_rc_error(reterr, -ENODEV, rc, "no TPM at '%s'", t->tcti_conf);
	}
	rc = sym_Esys_Initialize(&t->esys, t->tcti, NULL);
	if (rc != TSS2_RC_SUCCESS) {
		t->esys = NULL;
		return tpm_rc_error(reterr, -EIO, rc, "cannot use the TPM at '%s'", t->tcti_conf);
	}
	log_debug(ctx, "connected to the TPM at '%s'", t->tcti_conf);
	return 0;
}

void
tpm_close(struct tpm *t)
{
	if (t->esys)
		sym_Esys_Finalize(&t->esys);
	if (t->tcti)
		sym_Tss2_TctiLdr_Finalize(&t->tcti);
}

int
tpm_state_file_open(struct clip_ctx *ctx, int dirfd, const char *name, int flags, const char *what,
		    struct stat *st, struct clip_error **reterr)
{
	_cleanup_close_ int fd = -1;

	fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	if (fd < 0 && errno == ELOOP)
		return error_set(reterr, -EPERM, "%s %s/%s is a symbolic link", what,
				 ctx->state_dir, name);
	if (fd < 0 || fstat(fd, st) < 0)
		return error_set_errno(reterr, -errno, "cannot open %s %s/%s", what, ctx->state_dir,
				       name);
	if (!S_ISREG(st->st_mode) || st->st_uid != geteuid() || (st->st_mode & 022))
		return error_set(reterr, -EPERM,
				 "%s %s/%s must be a regular file of uid %u that only its owner "
				 "may write",
				 what, ctx->state_dir, name, (unsigned)geteuid());
	return steal_fd(fd);
}

TSS2_RC
tpm_rc_base(TSS2_RC rc)
{
	/* Not from the TPM: a layer of tpm2-tss. */
	if (rc & TSS2_RC_LAYER_MASK)
		return rc;
	/* Format-one codes carry the number of a handle, session or parameter. */
	if (rc & TPM2_RC_FMT1)
		return rc & (TPM2_RC_FMT1 | 0x3f);
	return rc;
}

void
tpm_scope_flush(struct tpm_scope *s)
{
	for (size_t i = 0; i < ELEMENTSOF(s->handles); i++)
		if (s->handles[i] != ESYS_TR_NONE) {
			(void)sym_Esys_FlushContext(s->esys, s->handles[i]);
			s->handles[i] = ESYS_TR_NONE;
		}
}

TPML_PCR_SELECTION
tpm_pcr_selection(uint32_t mask)
{
	TPML_PCR_SELECTION s = {
		.count = 1,
		.pcrSelections[0] = {
			.hash = TPM2_ALG_SHA256,
			.sizeofSelect = 3,
			.pcrSelect = { mask & 0xff, (mask >> 8) & 0xff, (mask >> 16) & 0xff },
		},
	};

	return s;
}

static uint32_t
selection_mask(const TPMS_PCR_SELECTION *s)
{
	uint32_t mask = 0;

	for (unsigned i = 0; i < s->sizeofSelect && i < 3; i++)
		mask |= (uint32_t)s->pcrSelect[i] << (8 * i);
	return mask;
}

int
tpm_pcr_read(struct tpm *t, uint32_t mask, uint8_t values[TPM_PCR_COUNT][TPM_SHA256_SIZE],
	     struct clip_error **reterr)
{
	uint32_t left = mask & TPM_PCR_MASK;

	/* The TPM answers at most 8 PCRs at a time; each round takes at least one. */
	for (unsigned round = 0; left && round < TPM_PCR_COUNT; round++) {
		TPML_PCR_SELECTION in = tpm_pcr_selection(left), *out = NULL;
		TPML_DIGEST *digests = NULL;
		uint32_t got = 0;
		unsigned k = 0;
		TSS2_RC rc;

		rc = sym_Esys_PCR_Read(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &in, NULL,
				       &out, &digests);
		if (rc != TSS2_RC_SUCCESS)
			return tpm_rc_error(reterr, -EIO, rc, "cannot read the PCRs");
		for (unsigned i = 0; i < out->count; i++)
			if (out->pcrSelections[i].hash == TPM2_ALG_SHA256)
				got |= selection_mask(&out->pcrSelections[i]) & left;
		for (unsigned pcr = 0; pcr < TPM_PCR_COUNT; pcr++) {
			if (!(got & (UINT32_C(1) << pcr)))
				continue;
			if (k >= digests->count || digests->digests[k].size != TPM_SHA256_SIZE)
				break;
			memcpy(values[pcr], digests->digests[k++].buffer, TPM_SHA256_SIZE);
		}
		sym_Esys_Free(out);
		sym_Esys_Free(digests);
		if (!got)
			return error_set(reterr, -EOPNOTSUPP,
					 "the TPM has no SHA-256 bank for PCR mask 0x%06x",
					 (unsigned)left);
		if (k != (unsigned)__builtin_popcount(got))
			return error_set(reterr, -EIO, "the TPM answered a malformed PCR read");
		left &= ~got;
	}
	return 0;
}

static int
pcr_extend(struct tpm *t, unsigned pcr, const TPML_DIGEST_VALUES *digests,
	   struct clip_error **reterr)
{
	TSS2_RC rc;

	rc = sym_Esys_PCR_Extend(t->esys, ESYS_TR_PCR0 + pcr, ESYS_TR_PASSWORD, ESYS_TR_NONE,
				 ESYS_TR_NONE, digests);
	if (rc == TSS2_RC_SUCCESS)
		return 0;
	if (tpm_rc_base(rc) == TPM2_RC_LOCALITY)
		return tpm_rc_error(reterr, -EACCES, rc, "PCR %u cannot be extended from here",
				    pcr);
	return tpm_rc_error(reterr, -EIO, rc, "cannot extend PCR %u", pcr);
}

int
tpm_pcr_extend_sha256(struct tpm *t, unsigned pcr, const uint8_t digest[TPM_SHA256_SIZE],
		      struct clip_error **reterr)
{
	TPML_DIGEST_VALUES d = { .count = 1, .digests[0].hashAlg = TPM2_ALG_SHA256 };

	memcpy(d.digests[0].digest.sha256, digest, TPM_SHA256_SIZE);
	return pcr_extend(t, pcr, &d, reterr);
}

/* The banks (hash algorithms) in which @pcr is allocated. */
static int
pcr_banks(struct tpm *t, unsigned pcr, TPMI_ALG_HASH algs[TPM2_NUM_PCR_BANKS], unsigned *ret_n,
	  struct clip_error **reterr)
{
	TPMS_CAPABILITY_DATA *cap = NULL;
	TPMI_YES_NO more;
	unsigned n = 0;
	TSS2_RC rc;

	rc = sym_Esys_GetCapability(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
				    TPM2_CAP_PCRS, 0, 1, &more, &cap);
	if (rc != TSS2_RC_SUCCESS)
		return tpm_rc_error(reterr, -EIO, rc, "cannot list the PCR banks");
	for (unsigned i = 0; i < cap->data.assignedPCR.count && n < TPM2_NUM_PCR_BANKS; i++) {
		const TPMS_PCR_SELECTION *s = &cap->data.assignedPCR.pcrSelections[i];

		if (selection_mask(s) & (UINT32_C(1) << pcr))
			algs[n++] = s->hash;
	}
	sym_Esys_Free(cap);
	*ret_n = n;
	return 0;
}

static const struct {
	TPMI_ALG_HASH alg;
	const char *name;
} hash_names[] = {
	{ TPM2_ALG_SHA1, "SHA1" },         { TPM2_ALG_SHA256, "SHA256" },
	{ TPM2_ALG_SHA384, "SHA384" },     { TPM2_ALG_SHA512, "SHA512" },
	{ TPM2_ALG_SM3_256, "SM3" },       { TPM2_ALG_SHA3_256, "SHA3-256" },
	{ TPM2_ALG_SHA3_384, "SHA3-384" }, { TPM2_ALG_SHA3_512, "SHA3-512" },
};

static const char *
hash_name(TPMI_ALG_HASH alg)
{
	for (size_t i = 0; i < ELEMENTSOF(hash_names); i++)
		if (hash_names[i].alg == alg)
			return hash_names[i].name;
	return NULL;
}

/* @data hashed with @alg into @out (a TPMU_HA); false when OpenSSL lacks it, or is missing. */
static bool
hash_with(TPMI_ALG_HASH alg, const void *data, size_t n, TPMU_HA *out)
{
	const char *name = hash_name(alg);
	unsigned len = 0;
	EVP_MD *md;
	bool ok;

	if (!name || crypto_load(NULL) < 0 || !(md = sym_EVP_MD_fetch(NULL, name, NULL)))
		return false;
	ok = (size_t)sym_EVP_MD_get_size(md) <= sizeof(*out) &&
	     sym_EVP_Digest(data, n, (unsigned char *)out, &len, md, NULL);
	sym_EVP_MD_free(md);
	return ok;
}

int
tpm_pcr_extend_event(struct tpm *t, unsigned pcr, const void *event, size_t n,
		     struct clip_error **reterr)
{
	TPMI_ALG_HASH algs[TPM2_NUM_PCR_BANKS];
	TPML_DIGEST_VALUES d = { 0 };
	bool sha256 = false;
	unsigned n_algs = 0;
	int r;

	r = pcr_banks(t, pcr, algs, &n_algs, reterr);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < n_algs; i++) {
		if (!hash_with(algs[i], event, n, &d.digests[d.count].digest)) {
			/* Replay reads the SHA-256 bank; the others are for outside verifiers. */
			log_warning(t->ctx,
				    "PCR %u: bank 0x%04x left unextended: no such hash here", pcr,
				    (unsigned)algs[i]);
			continue;
		}
		sha256 |= algs[i] == TPM2_ALG_SHA256;
		d.digests[d.count++].hashAlg = algs[i];
	}
	if (!sha256)
		return error_set(reterr, -EOPNOTSUPP, "the TPM has no SHA-256 bank for PCR %u",
				 pcr);
	return pcr_extend(t, pcr, &d, reterr);
}

static int
count_handles(struct tpm *t, TPM2_HANDLE first, unsigned *ret, struct clip_error **reterr)
{
	TPMS_CAPABILITY_DATA *cap = NULL;
	TPMI_YES_NO more;
	TSS2_RC rc;

	rc = sym_Esys_GetCapability(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
				    TPM2_CAP_HANDLES, first, TPM2_MAX_CAP_HANDLES, &more, &cap);
	if (rc != TSS2_RC_SUCCESS)
		return tpm_rc_error(reterr, -EIO, rc, "cannot list the TPM's handles");
	*ret = 0;
	for (unsigned i = 0; i < cap->data.handles.count; i++)
		*ret += (cap->data.handles.handle[i] >> TPM2_HR_SHIFT) == (first >> TPM2_HR_SHIFT);
	sym_Esys_Free(cap);
	return 0;
}

int
tpm_count_handles(struct tpm *t, unsigned *ret_objects, unsigned *ret_sessions,
		  struct clip_error **reterr)
{
	unsigned loaded, saved;
	int r;

	/* The values: tss2's TPM2_TRANSIENT_FIRST shifts an int into its sign bit. */
	r = count_handles(t, UINT32_C(0x80000000), ret_objects, reterr);
	if (r >= 0)
		r = count_handles(t, UINT32_C(0x02000000), &loaded, reterr);
	if (r >= 0)
		r = count_handles(t, UINT32_C(0x03000000), &saved, reterr);
	if (r < 0)
		return r;
	*ret_sessions = loaded + saved;
	return 0;
}

/* Four characters packed in a property value, made printable. */
static void
property_chars(uint32_t v, char out[5])
{
	for (int i = 0; i < 4; i++) {
		char c = (char)(v >> (24 - 8 * i));

		out[i] = c >= 0x20 && c <= 0x7e ? c : ' ';
	}
	out[4] = '\0';
}

static void
trim(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && s[n - 1] == ' ')
		s[--n] = '\0';
}

static int
tpm_info(struct tpm *t, char **ret, struct clip_error **reterr)
{
	TPMS_CAPABILITY_DATA *cap = NULL;
	uint32_t manufacturer = 0, vendor[4] = { 0 }, fw1 = 0, fw2 = 0, revision = 0;
	char maker[5], vendor_text[17] = "", banks[128] = "";
	TPMI_YES_NO more;
	TSS2_RC rc;

	rc = sym_Esys_GetCapability(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
				    TPM2_CAP_TPM_PROPERTIES, TPM2_PT_FIXED, TPM2_MAX_TPM_PROPERTIES,
				    &more, &cap);
	if (rc != TSS2_RC_SUCCESS)
		return tpm_rc_error(reterr, -EIO, rc, "cannot read the TPM's properties");
	for (unsigned i = 0; i < cap->data.tpmProperties.count; i++) {
		uint32_t p = cap->data.tpmProperties.tpmProperty[i].property;
		uint32_t v = cap->data.tpmProperties.tpmProperty[i].value;

		if (p == TPM2_PT_MANUFACTURER)
			manufacturer = v;
		else if (p >= TPM2_PT_VENDOR_STRING_1 && p <= TPM2_PT_VENDOR_STRING_4)
			vendor[p - TPM2_PT_VENDOR_STRING_1] = v;
		else if (p == TPM2_PT_FIRMWARE_VERSION_1)
			fw1 = v;
		else if (p == TPM2_PT_FIRMWARE_VERSION_2)
			fw2 = v;
		else if (p == TPM2_PT_REVISION)
			revision = v;
	}
	sym_Esys_Free(cap);

	property_chars(manufacturer, maker);
	trim(maker);
	for (int i = 0; i < 4; i++)
		property_chars(vendor[i], vendor_text + 4 * i);
	trim(vendor_text);

	rc = sym_Esys_GetCapability(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
				    TPM2_CAP_PCRS, 0, 1, &more, &cap);
	if (rc != TSS2_RC_SUCCESS)
		return tpm_rc_error(reterr, -EIO, rc, "cannot list the PCR banks");
	for (unsigned i = 0; i < cap->data.assignedPCR.count; i++) {
		const TPMS_PCR_SELECTION *s = &cap->data.assignedPCR.pcrSelections[i];
		const char *name = hash_name(s->hash);
		size_t len = strlen(banks);

		if (!selection_mask(s))
			continue;
		if (name)
			snprintf(banks + len, sizeof(banks) - len, " %s", name);
		else
			snprintf(banks + len, sizeof(banks) - len, " 0x%04x", (unsigned)s->hash);
	}
	sym_Esys_Free(cap);

	/* Vendors number their firmware as they like: both words, in hex, as tpm2-tools does. */
	if (asprintf(ret,
		     "%s \"%s\", firmware 0x%08x.0x%08x, TPM 2.0 revision %u.%02u, PCR banks:%s",
		     maker, vendor_text, (unsigned)fw1, (unsigned)fw2, (unsigned)(revision / 100),
		     (unsigned)(revision % 100), banks[0] ? banks : " none") < 0)
		return -ENOMEM;
	return 0;
}

CLIP_EXPORT int
clip_tpm_get_info(struct clip_ctx *ctx, char **ret, struct clip_error **reterr)
{
	_cleanup_(tpm_close) struct tpm t = { 0 };
	int r;

	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, ret, api_return(-EINVAL, reterr));

	r = tpm_open(ctx, &t, reterr);
	if (r >= 0)
		r = tpm_info(&t, ret, reterr);
	return api_return(r, reterr);
}

CLIP_EXPORT int
clip_tpm_pcr_read(struct clip_ctx *ctx, unsigned pcr, uint8_t ret_digest[32],
		  struct clip_error **reterr)
{
	_cleanup_(tpm_close) struct tpm t = { 0 };
	uint8_t values[TPM_PCR_COUNT][TPM_SHA256_SIZE];
	int r;

	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, pcr < TPM_PCR_COUNT, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, ret_digest, api_return(-EINVAL, reterr));

	r = tpm_open(ctx, &t, reterr);
	if (r >= 0)
		r = tpm_pcr_read(&t, UINT32_C(1) << pcr, values, reterr);
	if (r >= 0)
		memcpy(ret_digest, values[pcr], TPM_SHA256_SIZE);
	return api_return(r, reterr);
}
