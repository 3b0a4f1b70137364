/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit trail's signature: what lets a machine that holds no secret of
 * this one (a fleet's collector) verify its trail.
 *
 * Each machine has an Ed25519 key whose private half is derived from the
 * context's master key (KEY_PURPOSE_AUDIT_SIGN), as the audit MAC key is:
 * it is stored where the key provider stores the master key, sealed to
 * the TPM with the tpm provider. At each append the anchor gets a second
 * line,
 *
 *   s1 count=N last=HASH key=KEYID sig=SIG
 *
 * SIG the Ed25519 signature of the line up to " sig=", KEYID the first 8
 * bytes of the SHA-256 of the raw public key (so that a trail signed by
 * another machine is named as such), HASH the SHA-256 of record N. The
 * same line follows each record on syslog and ends a trail exported by
 * clip_audit_export(): a "trail stream". Checking the hash chain (each
 * record's prev=) from record 1 up to a signed line proves every record up
 * to it; the records' MACs need the machine's secret and are not checked.
 *
 * The public key is exported in PEM (SubjectPublicKeyInfo, as `openssl
 * pkey -pubin` reads it).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <clip/audit.h>

#include "base/crypto.h"
#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/log.h"
#include "base/test-hooks.h"
#include "base/util.h"
#include "keys/key.h"
#include "transfer-internal.h"

#define ED25519_KEY 32
#define ED25519_SIG 64
#define KEYID_BYTES 8
#define PEM_BEGIN "-----BEGIN PUBLIC KEY-----\n"
#define PEM_END "-----END PUBLIC KEY-----\n"
/* The DER of an Ed25519 SubjectPublicKeyInfo before its 32 bytes (RFC 8410). */
static const uint8_t spki_prefix[12] = { 0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
					 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00 };

/* The machine's signing key, from the key provider; NULL with -errno in *@r. */
static EVP_PKEY *
sign_key(struct clip_ctx *ctx, bool create, int *r, struct clip_error **reterr)
{
	const uint8_t *seed;
	EVP_PKEY *pkey;

	*r = ctx_get_key(ctx, KEY_PURPOSE_AUDIT_SIGN, create, &seed, reterr);
	if (*r < 0)
		return NULL;
	*r = crypto_load(reterr);
	if (*r < 0)
		return NULL;
	pkey = sym_EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, ED25519_KEY);
	if (!pkey)
		*r = error_set(reterr, -EIO, "cannot make the audit signing key (Ed25519)");
	return pkey;
}

static int
keyid(const uint8_t pub[ED25519_KEY], char out[2 * KEYID_BYTES + 1])
{
	uint8_t h[32];
	int r = crypto_sha256(pub, ED25519_KEY, h);

	if (r < 0)
		return r;
	hex_encode(h, KEYID_BYTES, out);
	return 0;
}

static int
public_of(EVP_PKEY *pkey, uint8_t pub[ED25519_KEY])
{
	size_t n = ED25519_KEY;

	return sym_EVP_PKEY_get_raw_public_key(pkey, pub, &n) && n == ED25519_KEY ? 0 : -EIO;
}

int
audit_sign_line(struct clip_ctx *ctx, uint64_t count, const uint8_t last[32], char *out, size_t max,
		struct clip_error **reterr)
{
	uint8_t pub[ED25519_KEY], sig[ED25519_SIG];
	char hex[65], id[2 * KEYID_BYTES + 1], sighex[2 * ED25519_SIG + 1];
	size_t siglen = sizeof(sig);
	EVP_MD_CTX *md = NULL;
	EVP_PKEY *pkey;
	int n, r;

	pkey = sign_key(ctx, true, &r, reterr);
	if (!pkey)
		return r;
	r = public_of(pkey, pub);
	if (r == 0)
		r = keyid(pub, id);
	if (r < 0)
		goto out;
	hex_encode(last, 32, hex);
	n = snprintf(out, max, "s1 count=%" PRIu64 " last=%s key=%s", count, hex, id);
	if (n < 0 || (size_t)n >= max) {
		r = -E2BIG;
		goto out;
	}
	md = sym_EVP_MD_CTX_new();
	if (!md || sym_EVP_DigestSignInit(md, NULL, NULL, NULL, pkey) != 1 ||
	    sym_EVP_DigestSign(md, sig, &siglen, (const unsigned char *)out, (size_t)n) != 1 ||
	    siglen != ED25519_SIG) {
		r = error_set(reterr, -EIO, "cannot sign the audit anchor (Ed25519)");
		goto out;
	}
	hex_encode(sig, ED25519_SIG, sighex);
	r = snprintf(out + n, max - (size_t)n, " sig=%s", sighex);
	r = r < 0 || (size_t)r >= max - (size_t)n ? -E2BIG : n + r;
out:
	sym_EVP_MD_CTX_free(md);
	sym_EVP_PKEY_free(pkey);
	return r;
}

CLIP_EXPORT int
clip_audit_get_public_key(struct clip_ctx *ctx, char **ret, struct clip_error **reterr)
{
	uint8_t der[sizeof(spki_prefix) + ED25519_KEY];
	char b64[4 * ((sizeof(der) + 2) / 3) + 1];
	EVP_PKEY *pkey;
	char *pem;
	int r;

	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, ret, api_return(-EINVAL, reterr));

	pkey = sign_key(ctx, false, &r, reterr);
	if (!pkey)
		return api_return(r, reterr);
	memcpy(der, spki_prefix, sizeof(spki_prefix));
	r = public_of(pkey, der + sizeof(spki_prefix));
	sym_EVP_PKEY_free(pkey);
	if (r < 0)
		return api_return(r, reterr);
	sym_EVP_EncodeBlock((unsigned char *)b64, der, (int)sizeof(der));
	if (asprintf(&pem, PEM_BEGIN "%s\n" PEM_END, b64) < 0)
		return api_return(-ENOMEM, reterr);
	*ret = pem;
	return 0;
}

/* The 32 bytes of a PEM Ed25519 public key, the whole of @text: 0 or -EINVAL. */
static int
public_key_parse(const char *untrusted_text, uint8_t pub[ED25519_KEY])
{
	uint8_t der[64];
	const char *b, *e;
	int n;

	b = strstr(untrusted_text, PEM_BEGIN);
	if (!b)
		return -EINVAL;
	b += strlen(PEM_BEGIN);
	e = strstr(b, "\n" PEM_END);
	/* 44 bytes of DER are 60 characters of base64, on one line. */
	if (!e || e - b != 60)
		return -EINVAL;
	n = sym_EVP_DecodeBlock(der, (const unsigned char *)b, 60);
	if (n != 45 || memcmp(der, spki_prefix, sizeof(spki_prefix)) != 0)
		return -EINVAL;
	memcpy(pub, der + sizeof(spki_prefix), ED25519_KEY);
	return 0;
}

struct stream {
	uint8_t pub[ED25519_KEY];
	char id[2 * KEYID_BYTES + 1];
	uint64_t count, signed_count;
	bool any_signed; /* a signed line was seen (it may sign 0 records) */
	uint8_t last[32];
	clip_audit_record_fn fn;
	void *userdata;
};

/* A record of a stream: the next one of the chain (its MAC not checked). */
static int
stream_record(struct stream *st, const char *untrusted_line, size_t n, struct clip_error **reterr)
{
	char want[96], hex[65];
	const char *m;
	int k, r;

	k = snprintf(want, sizeof(want), "v1 seq=%" PRIu64 " ", st->count + 1);
	if (n < (size_t)k || memcmp(untrusted_line, want, (size_t)k) != 0)
		return error_set(reterr, -EBADMSG,
				 "record %" PRIu64 " is not the record expected there (missing, "
				 "reordered or malformed)",
				 st->count + 1);
	hex_encode(st->last, 32, hex);
	m = n >= 69 ? untrusted_line + n - 69 : NULL;
	if (!m || memcmp(m, " mac=", 5) != 0 || (size_t)(m - untrusted_line) < 70 ||
	    memcmp(m - 70, " prev=", 6) != 0 || memcmp(m - 64, hex, 64) != 0)
		return error_set(reterr, -EBADMSG,
				 "record %" PRIu64 " does not follow record %" PRIu64
				 " (a record was edited, deleted, inserted or reordered)",
				 st->count + 1, st->count);
	r = crypto_sha256(untrusted_line, n, st->last);
	if (r < 0)
		return r;
	st->count++;
	if (st->fn) {
		char *copy = strndup(untrusted_line, n);

		if (!copy)
			return -ENOMEM;
		r = st->fn(copy, st->userdata);
		free(copy);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A signed line of a stream: it must verify, and sign the chain as it stands. */
static int
stream_signature(struct stream *st, const char *untrusted_line, size_t n,
		 struct clip_error **reterr)
{
	char text[256], lasthex[65], id[2 * KEYID_BYTES + 1], sighex[2 * ED25519_SIG + 1];
	uint8_t last[32], sig[ED25519_SIG];
	EVP_PKEY *pkey = NULL;
	EVP_MD_CTX *md = NULL;
	uint64_t count;
	const char *s;
	int ok;

	if (n >= sizeof(text) || !(s = strstr(untrusted_line, " sig=")) ||
	    (size_t)(s - untrusted_line) + 5 + 2 * ED25519_SIG != n)
		return error_set(reterr, -EBADMSG, "a malformed signature after record %" PRIu64,
				 st->count);
	memcpy(text, untrusted_line, n);
	text[n] = '\0';
	if (sscanf(text, "s1 count=%" SCNu64 " last=%64s key=%16s sig=%128s", &count, lasthex, id,
		   sighex) != 4 ||
	    hex_decode(lasthex, 32, last) < 0 || hex_decode(sighex, ED25519_SIG, sig) < 0)
		return error_set(reterr, -EBADMSG, "a malformed signature after record %" PRIu64,
				 st->count);
	if (strcmp(id, st->id) != 0 && !test_hook_disabled("audit-signature"))
		return error_set(reterr, -EBADMSG,
				 "the signature of record %" PRIu64
				 " is by key %s, not by the key given (%s): another machine's "
				 "trail, or a forged one",
				 count, id, st->id);
	pkey = sym_EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, st->pub, ED25519_KEY);
	md = sym_EVP_MD_CTX_new();
	ok = pkey && md && sym_EVP_DigestVerifyInit(md, NULL, NULL, NULL, pkey) == 1 &&
	     sym_EVP_DigestVerify(md, sig, ED25519_SIG, (const unsigned char *)untrusted_line,
				  (size_t)(s - untrusted_line)) == 1;
	sym_EVP_MD_CTX_free(md);
	sym_EVP_PKEY_free(pkey);
	if (!ok && !test_hook_disabled("audit-signature"))
		return error_set(reterr, -EBADMSG,
				 "the signature of record %" PRIu64
				 " does not verify with the key given: it was edited, or made "
				 "with another key",
				 count);
	if (count > st->count)
		return error_set(reterr, -EBADMSG,
				 "the trail was truncated: a signature covers %" PRIu64
				 " records, %" PRIu64 " are there",
				 count, st->count);
	/* An older signature repeated (an export after a syslog copy): it says nothing new. */
	if (count < st->count)
		return 0;
	if (!crypto_equal(last, st->last, 32))
		return error_set(reterr, -EBADMSG,
				 "record %" PRIu64
				 " is not the one signed: the trail was edited or rewritten",
				 count);
	st->signed_count = count;
	st->any_signed = true;
	return 0;
}

/* One line of a stream: a record, a signature, or another program's (ignored). */
static int
stream_line(struct stream *st, const char *untrusted_line, size_t n, struct clip_error **reterr)
{
	const char *p = untrusted_line, *marker;

	/* Behind a syslog prefix ("... clip-audit: "), as a collector writes it. */
	marker = memmem(untrusted_line, n, "clip-audit: ", 12);
	if (marker) {
		p = marker + 12;
		n -= (size_t)(p - untrusted_line);
	}
	if (n >= 3 && memcmp(p, "v1 ", 3) == 0)
		return stream_record(st, p, n, reterr);
	if (n >= 3 && memcmp(p, "s1 ", 3) == 0)
		return stream_signature(st, p, n, reterr);
	return 0;
}

static int
audit_verify_public(int fd, const char *untrusted_key, clip_audit_record_fn fn, void *userdata,
		    uint64_t *ret_count, struct clip_error **reterr)
{
	_cleanup_free_ char *untrusted_buf = malloc(AUDIT_LINE_MAX_PUBLIC + 1);
	struct stream st = { .fn = fn, .userdata = userdata };
	size_t have = 0;
	int r;

	if (!untrusted_buf)
		return -ENOMEM;
	r = crypto_load(reterr);
	if (r < 0)
		return r;
	if (public_key_parse(untrusted_key, st.pub) < 0)
		return error_set(reterr, -EINVAL,
				 "the public key is not an Ed25519 key in PEM (as 'clipctl audit "
				 "export-key' writes it)");
	r = keyid(st.pub, st.id);
	if (r < 0)
		return r;
	for (;;) {
		ssize_t k = read(fd, untrusted_buf + have, AUDIT_LINE_MAX_PUBLIC - have);
		char *line = untrusted_buf, *nl;

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return error_set_errno(reterr, -errno, "cannot read the trail");
		have += (size_t)k;
		while ((nl = memchr(line, '\n', have - (size_t)(line - untrusted_buf)))) {
			r = stream_line(&st, line, (size_t)(nl - line), reterr);
			if (r < 0)
				return r;
			line = nl + 1;
		}
		have -= (size_t)(line - untrusted_buf);
		memmove(untrusted_buf, line, have);
		if (k == 0)
			break;
		if (have == AUDIT_LINE_MAX_PUBLIC)
			return error_set(reterr, -EBADMSG,
					 "a line after record %" PRIu64 " is over %d bytes",
					 st.count, AUDIT_LINE_MAX_PUBLIC);
	}
	/* A last line without its newline: a copy cut while it was written. */
	if (have > 0) {
		r = stream_line(&st, untrusted_buf, have, reterr);
		if (r < 0)
			return r;
	}
	if (st.signed_count < st.count && !test_hook_disabled("audit-signature"))
		return error_set(reterr, -EBADMSG,
				 "records %" PRIu64 " to %" PRIu64
				 " are not signed: the trail was cut before their signature, or "
				 "records were added",
				 st.signed_count + 1, st.count);
	if (!st.any_signed && !test_hook_disabled("audit-signature"))
		return error_set(reterr, -EBADMSG, "no record and no signature in the trail");
	if (ret_count)
		*ret_count = st.count;
	return 0;
}

CLIP_EXPORT int
clip_audit_verify_public(int fd, const char *public_key, clip_audit_record_fn fn, void *userdata,
			 uint64_t *ret_count, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	clip_assert_return(fd >= 0, api_return(-EINVAL, reterr));
	clip_assert_return(public_key, api_return(-EINVAL, reterr));

	return api_return(audit_verify_public(fd, public_key, fn, userdata, ret_count, reterr),
			  reterr);
}
