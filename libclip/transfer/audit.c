/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit trail; doc/transfer.md explains the choices.
 *
 * Record (one line): "v1 seq=N time=S.NS event=... src=... ... prev=HASH
 * mac=MAC" where every value is %-escaped printable ASCII, HASH is the
 * SHA-256 of the previous record's line (zeros for the first) and MAC is
 * HMAC-SHA256(audit key, the line up to " mac="). The anchor, NAME.head:
 * "v1 count=N last=HASH mac=MAC", replaced atomically after each append,
 * and its signed twin on a second line (audit-sign.c).
 *
 * syslog(3) is used here on purpose: it is the audit trail going to the
 * system's log, not library chatter, which goes to the context's handler.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>

#include <clip/audit.h>

#include "base/crypto.h"
#include "base/ctx-internal.h"
#include "base/error.h"
#include "keys/key.h"
#include "base/log.h"
#include "base/test-hooks.h"
#include "base/util.h"
#include "tpm/tpm.h"
#include "transfer-internal.h"

#define AUDIT_FIELD_MAX 4096
#define AUDIT_LINE_MAX (16 * AUDIT_FIELD_MAX)
#define AUDIT_HEAD_SUFFIX ".head"
#define AUDIT_NAME_MAX 200
/* The first version of struct clip_audit_entry ends after reason. */
#define AUDIT_ENTRY_SIZE_V1 (offsetof(struct clip_audit_entry, reason) + sizeof(const char *))

struct clip_audit {
	unsigned n_ref;
	struct clip_ctx *ctx;
	int dirfd;
	int fd;
	char name[AUDIT_NAME_MAX + 1];
	unsigned flags;
	uint64_t count;
	uint8_t last[32];
	bool tpm_bound; /* the anchor carries the TPM counter's value (doc/tpm.md) */
	uint64_t tpm; /* that value, the counter's once incremented */
	/* Records written and not yet synced (audit_append_deferred()), and where they start. */
	bool dirty;
	off_t batch_size;
	uint64_t batch_count;
	uint8_t batch_last[32];
	uint64_t cuts; /* batches cut off (audit_cuts()) */
	char sig_line[AUDIT_SIG_LINE_MAX]; /* the anchor's signed line, as last written */
};

struct strbuf {
	char *p;
	size_t n, max;
	bool overflow;
};

static void
sb_add(struct strbuf *s, const char *p, size_t n)
{
	if (s->overflow || n >= s->max - s->n) {
		s->overflow = true;
		return;
	}
	memcpy(s->p + s->n, p, n);
	s->n += n;
	s->p[s->n] = '\0';
}

/* " key=value", the value %-escaped so that a record is one line of ASCII. */
static void
sb_field(struct strbuf *s, const char *key, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n;

	sb_add(s, " ", 1);
	sb_add(s, key, strlen(key));
	sb_add(s, "=", 1);
	if (!value || !*value) {
		sb_add(s, "-", 1);
		return;
	}
	n = strnlen(value, AUDIT_FIELD_MAX + 1);
	if (n > AUDIT_FIELD_MAX) {
		s->overflow = true;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)value[i];

		if (c <= 0x20 || c >= 0x7f || c == '%' || c == '=') {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };

			sb_add(s, e, 3);
		} else
			sb_add(s, (const char *)&c, 1);
	}
}

static void
sb_hex(struct strbuf *s, const char *key, const uint8_t *p, size_t n)
{
	char hex[2 * 32 + 1];

	hex_encode(p, n, hex);
	sb_field(s, key, hex);
}

/* The MAC of @text and its hex, for the " mac=" suffix. */
static int
audit_mac(struct clip_ctx *ctx, bool create, const char *text, size_t n, uint8_t mac[32],
	  struct clip_error **reterr)
{
	return ctx_mac(ctx, KEY_PURPOSE_AUDIT, create, text, n, mac, reterr);
}

/* Check one record line against what it must follow. */
static int
record_check(struct clip_ctx *ctx, const char *untrusted_line, size_t n, uint64_t seq,
	     const uint8_t prev[32], uint8_t hash[32], struct clip_error **reterr)
{
	char want[96], hex[65];
	uint8_t untrusted_mac[32], mac[32];
	const char *m;
	int k, r;

	k = snprintf(want, sizeof(want), "v1 seq=%" PRIu64 " ", seq);
	if (n < (size_t)k || memcmp(untrusted_line, want, (size_t)k) != 0)
		return error_set(reterr, -EBADMSG,
				 "record %" PRIu64 " is not the record expected there (missing, "
				 "reordered or malformed)",
				 seq);
	/* The record ends with exactly " mac=" and 64 hex digits. */
	if (n < 5 + 64 + 6 + 64 || memcmp(untrusted_line + n - 69, " mac=", 5) != 0 ||
	    hex_decode(untrusted_line + n - 64, 32, untrusted_mac) < 0)
		return error_set(reterr, -EBADMSG, "record %" PRIu64 " has no valid MAC", seq);
	m = untrusted_line + n - 69;
	hex_encode(prev, 32, hex);
	if ((size_t)(m - untrusted_line) < 70 || memcmp(m - 70, " prev=", 6) != 0 ||
	    memcmp(m - 64, hex, 64) != 0)
		return error_set(reterr, -EBADMSG,
				 "record %" PRIu64 " does not follow record %" PRIu64
				 " (a record was deleted, inserted or reordered)",
				 seq, seq - 1);
	r = audit_mac(ctx, false, untrusted_line, (size_t)(m - untrusted_line), mac, reterr);
	if (r < 0)
		return r;
	if (!crypto_equal(mac, untrusted_mac, 32) && !test_hook_disabled("audit-chain"))
		return error_set(reterr, -EBADMSG,
				 "record %" PRIu64 " does not verify: it was edited, or made "
				 "with another key",
				 seq);
	return crypto_sha256(untrusted_line, n, hash);
}

struct anchor {
	bool present;
	uint64_t count;
	uint8_t last[32];
	bool bound; /* " tpm=V": bound to the TPM counter */
	uint64_t tpm;
	bool is_signed; /* a second line: the signed one (audit-sign.c), verified as it was read */
	char sig_line[AUDIT_SIG_LINE_MAX]; /* that line, without its newline */
};

static int
anchor_format(struct clip_ctx *ctx, const struct anchor *a, char *out, size_t max,
	      struct clip_error **reterr)
{
	char hex[65], mhex[65], tpm[32] = "";
	uint8_t mac[32];
	int n, r;

	hex_encode(a->last, 32, hex);
	if (a->bound)
		snprintf(tpm, sizeof(tpm), " tpm=%" PRIu64, a->tpm);
	n = snprintf(out, max, "v1 count=%" PRIu64 " last=%s%s", a->count, hex, tpm);
	r = audit_mac(ctx, true, out, (size_t)n, mac, reterr);
	if (r < 0)
		return r;
	hex_encode(mac, 32, mhex);
	return snprintf(out + n, max - (size_t)n, " mac=%s\n", mhex) + n;
}

static int
anchor_read(struct clip_ctx *ctx, int dirfd, const char *name, struct anchor *a,
	    struct clip_error **reterr)
{
	char path[AUDIT_NAME_MAX + sizeof(AUDIT_HEAD_SUFFIX)], untrusted_text[512], want[256];
	_cleanup_close_ int fd = -1;
	const char *nl;
	struct anchor parsed;
	uint8_t last[32];
	uint64_t count, tpm = 0;
	ssize_t n;
	int k, r;

	snprintf(path, sizeof(path), "%s" AUDIT_HEAD_SUFFIX, name);
	*a = (struct anchor){ 0 };
	/* The anchor is text of a known length: a larger file is not one. */
	fd = open_regular(dirfd, path, sizeof(untrusted_text) - 1, NULL, reterr);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return error_set_errno(reterr, fd, "cannot open the anchor %s", path);
	n = read(fd, untrusted_text, sizeof(untrusted_text) - 1);
	if (n < 0)
		return error_set_errno(reterr, -errno, "cannot read the anchor %s", path);
	untrusted_text[n] = '\0';
	k = sscanf(untrusted_text, "v1 count=%" SCNu64 " last=%64s tpm=%" SCNu64, &count, want,
		   &tpm);
	if (k < 2 || hex_decode(want, 32, last) < 0)
		return error_set(reterr, -EBADMSG, "the anchor %s is malformed", path);
	parsed = (struct anchor){ .count = count, .bound = k == 3, .tpm = k == 3 ? tpm : 0 };
	memcpy(parsed.last, last, 32);
	k = anchor_format(ctx, &parsed, want, sizeof(want), reterr);
	if (k < 0)
		return k;
	/* The MAC'd line; a signed one may follow (audit-sign.c reads it). */
	nl = strchr(untrusted_text, '\n');
	r = nl && (size_t)(nl - untrusted_text) + 1 == (size_t)k &&
	    crypto_equal(want, untrusted_text, (size_t)k);
	/* The signed line, when there is one, is the one this key makes (Ed25519 is deterministic). */
	if (r && nl[1] != '\0') {
		char sig[AUDIT_SIG_LINE_MAX + 1];

		k = audit_sign_line(ctx, parsed.count, parsed.last, sig, sizeof(sig) - 1, reterr);
		if (k < 0)
			return k;
		sig[k] = '\n';
		r = strlen(nl + 1) == (size_t)k + 1 && crypto_equal(sig, nl + 1, (size_t)k + 1);
		parsed.is_signed = r;
		if (r && (size_t)k < sizeof(parsed.sig_line)) {
			memcpy(parsed.sig_line, sig, (size_t)k);
			parsed.sig_line[k] = '\0';
		} else
			r = 0;
	}
	if (!r)
		return error_set(reterr, -EBADMSG,
				 "the anchor %s does not verify: it was edited, or made with "
				 "another key",
				 path);
	*a = parsed;
	a->present = true;
	return 0;
}

static int
anchor_write(struct clip_audit *audit, struct clip_error **reterr)
{
	char path[AUDIT_NAME_MAX + sizeof(AUDIT_HEAD_SUFFIX)], text[256 + AUDIT_SIG_LINE_MAX];
	int n, r, k;

	struct anchor a = { .count = audit->count,
			    .bound = audit->tpm_bound,
			    .tpm = audit->tpm + 1 };
	uint64_t now;

	memcpy(a.last, audit->last, 32);
	snprintf(path, sizeof(path), "%s" AUDIT_HEAD_SUFFIX, audit->name);
	n = anchor_format(audit->ctx, &a, text, sizeof(text), reterr);
	if (n < 0)
		return n;
	/* Signed in the same write: each record is covered once its append returns. */
	k = audit_sign_line(audit->ctx, a.count, a.last, text + n, sizeof(text) - (size_t)n - 1,
			    reterr);
	if (k < 0)
		return k;
	memcpy(audit->sig_line, text + n, (size_t)k);
	audit->sig_line[k] = '\0';
	text[n + k] = '\n';
	n += k + 1;
	r = write_file_atomic(audit->dirfd, path, text, (size_t)n, 0600, true);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot update the anchor %s", path);
	if (!audit->tpm_bound)
		return 0;
	/*
	 * The anchor first, then the counter: a crash between the two leaves
	 * the anchor one ahead, which the next writer repairs; the other way
	 * round it would leave a log that looks rolled back.
	 */
	r = tpm_counter_increment(audit->ctx, TPM_AUDIT_NV_INDEX, &now, reterr);
	if (r < 0)
		return r;
	if (now != a.tpm)
		return error_set(reterr, -EBADMSG,
				 "the TPM counter 0x%08x is %" PRIu64 ", %" PRIu64
				 " expected: something else increments it",
				 TPM_AUDIT_NV_INDEX, now, a.tpm);
	audit->tpm = now;
	return 0;
}

/*
 * Whether the log is bound to the TPM counter: with the tpm key provider
 * (doc/tpm.md, "The audit counter"). Test hook "audit-nv-counter".
 */
static bool
audit_uses_tpm(struct clip_ctx *ctx)
{
	const char *provider = clip_ctx_get_key_provider(ctx);

	return provider && strcmp(provider, "tpm") == 0 && !test_hook_disabled("audit-nv-counter");
}

/*
 * The anchor @a of the log @name against the TPM counter, whose value goes
 * to *@ret_counter: 0 when they agree, 1 when the counter is one behind (a
 * crash between the anchor's update and the counter's increment), -ENOENT
 * or -ENODATA (no message) when the TPM has no counter, or one never
 * incremented, and the anchor is not bound; -EBADMSG on a rollback.
 */
static int
counter_check(struct clip_ctx *ctx, const char *name, const struct anchor *a, uint64_t *ret_counter,
	      struct clip_error **reterr)
{
	uint64_t c = 0;
	int r;

	r = tpm_counter_read(ctx, TPM_AUDIT_NV_INDEX, &c, reterr);
	if ((r == -ENOENT || r == -ENODATA) && a->bound)
		return error_set(reterr, -EBADMSG,
				 "the anchor of %s is bound to the TPM counter 0x%08x (at %" PRIu64
				 "), which the TPM does not have: the TPM was cleared or the "
				 "counter removed (doc/tpm.md, starting a new log)",
				 name, TPM_AUDIT_NV_INDEX, a->tpm);
	if (r < 0)
		return r;
	*ret_counter = c;
	if (!a->bound)
		return error_set(
			reterr, -EBADMSG,
			"the anchor of %s is not bound to the TPM counter 0x%08x, which is "
			"at %" PRIu64 ": the log was rolled back to before its binding, "
			"deleted or replaced (doc/tpm.md, starting a new log)",
			name, TPM_AUDIT_NV_INDEX, c);
	if (a->tpm == c)
		return 0;
	if (a->tpm == c + 1)
		return 1;
	if (a->tpm < c)
		return error_set(reterr, -EBADMSG,
				 "the log %s and its anchor were rolled back: the anchor says TPM "
				 "count %" PRIu64 ", the TPM counter 0x%08x is at %" PRIu64,
				 name, a->tpm, TPM_AUDIT_NV_INDEX, c);
	return error_set(reterr, -EBADMSG,
			 "the anchor of %s is ahead of the TPM counter 0x%08x (%" PRIu64
			 " for %" PRIu64 "): it was made with another TPM or counter",
			 name, TPM_AUDIT_NV_INDEX, a->tpm, c);
}

/*
 * Each whole line of the log at @fd from offset @from to @to (the end of
 * the file when -1), its '\n' made a '\0', to @fn with its length, until
 * @fn fails. *@ret_end: the offset after the last whole line. 0 at the
 * end (*@ret_torn when a rest without its newline is left there), -E2BIG
 * for a line of over AUDIT_LINE_MAX bytes, or -errno.
 */
static int
lines_each(int fd, off_t from, off_t to, int (*fn)(char *line, size_t len, void *userdata),
	   void *userdata, off_t *ret_end, bool *ret_torn)
{
	_cleanup_free_ char *untrusted_buf = malloc(AUDIT_LINE_MAX + 1);
	off_t pos = from;
	int r;

	*ret_end = from;
	*ret_torn = false;
	if (!untrusted_buf)
		return -ENOMEM;
	/* Read from the first unconsumed byte each time: no copy of a partial line. */
	for (;;) {
		size_t want = AUDIT_LINE_MAX + 1, have, off = 0;
		char *line, *nl;
		ssize_t k;

		if (to >= 0 && to - pos < (off_t)want)
			want = (size_t)(to - pos);
		k = want ? pread(fd, untrusted_buf, want, pos) : 0;
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		have = (size_t)k;
		while ((line = untrusted_buf + off), (nl = memchr(line, '\n', have - off))) {
			size_t len = (size_t)(nl - line);

			*nl = '\0';
			r = fn(line, len, userdata);
			if (r < 0)
				return r;
			off += len + 1;
			pos += (off_t)len + 1;
			*ret_end = pos;
		}
		if (k == 0)
			return 0;
		/* Short of the buffer: the end (of the file, or @to). A rest without newline is torn. */
		if (have < AUDIT_LINE_MAX + 1) {
			if (off < have) {
				*ret_torn = true;
				return 0;
			}
			continue;
		}
		if (off == 0)
			return -E2BIG;
	}
}

struct walk {
	struct clip_ctx *ctx;
	clip_audit_record_fn fn;
	void *userdata;
	struct clip_error **reterr;
	bool failed; /* a record did not verify, or fn failed: the error is said */
	uint64_t count;
	uint8_t last[32];
	off_t good_end; /* the end of the last good record */
	bool torn; /* a last line without its newline */
	uint64_t anchor_count;
	uint8_t at_anchor[32]; /* the hash of record anchor_count */
};

static int
walk_record(char *line, size_t len, void *userdata)
{
	struct walk *w = userdata;
	uint8_t hash[32];
	int r;

	r = record_check(w->ctx, line, len, w->count + 1, w->last, hash, w->reterr);
	if (r >= 0) {
		w->count++;
		memcpy(w->last, hash, 32);
		if (w->count == w->anchor_count)
			memcpy(w->at_anchor, hash, 32);
		r = w->fn ? w->fn(line, w->userdata) : 0;
	}
	w->failed = r < 0;
	return r;
}

/* Verify every record of the log at @fd from its start. */
static int
log_walk(struct clip_ctx *ctx, int fd, clip_audit_record_fn fn, void *userdata, struct walk *w,
	 struct clip_error **reterr)
{
	int r;

	w->ctx = ctx;
	w->fn = fn;
	w->userdata = userdata;
	w->reterr = reterr;
	r = lines_each(fd, 0, -1, walk_record, w, &w->good_end, &w->torn);
	if (r >= 0 || w->failed)
		return r;
	if (r == -E2BIG)
		return error_set(reterr, -EBADMSG, "record %" PRIu64 " is over %d bytes",
				 w->count + 1, AUDIT_LINE_MAX);
	return error_set_errno(reterr, r, "cannot read the audit log");
}

static int
check_name(const char *name)
{
	return name && *name && !strchr(name, '/') && strlen(name) <= AUDIT_NAME_MAX &&
	       strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

static int
open_dir(struct clip_ctx *ctx, int dirfd, bool create, struct clip_error **reterr)
{
	int r;

	if (dirfd == AT_FDCWD)
		r = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else if (dirfd >= 0)
		r = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (dirfd >= 0 || dirfd == AT_FDCWD)
		return r < 0 ? error_set_errno(reterr, -errno, "cannot open the log's directory")
			     : r;
	r = ctx_open_state_dir(ctx, create, reterr);
	if (r == -ENOENT)
		return error_set(reterr, -ENOENT, "no state directory %s", ctx->state_dir);
	return r;
}

static int
audit_verify(struct clip_ctx *ctx, int dirfd, const char *name, clip_audit_record_fn fn,
	     void *userdata, uint64_t *ret_count, unsigned *ret_warnings,
	     struct clip_error **reterr)
{
	unsigned warnings = 0;
	_cleanup_close_ int dfd = -1, fd = -1;
	struct anchor a;
	struct walk w;
	int r;

	dfd = open_dir(ctx, dirfd, false, reterr);
	if (dfd < 0)
		return dfd;
	/* A FIFO or a device in its place would block the walk or never end. */
	fd = open_regular(dfd, name, 0, NULL, reterr);
	if (fd < 0 && fd != -ENOENT)
		return error_set_errno(reterr, fd, "cannot open the audit log %s", name);
	r = anchor_read(ctx, dfd, name, &a, reterr);
	if (r < 0)
		return r;
	if (fd < 0 && a.count > 0)
		return error_set(reterr, -EBADMSG,
				 "the audit log %s was deleted: its anchor says %" PRIu64
				 " records",
				 name, a.count);
	if (fd < 0)
		return error_set(reterr, -ENOENT, "no audit log %s", name);
	w = (struct walk){ .anchor_count = a.count };
	r = log_walk(ctx, fd, fn, userdata, &w, reterr);
	if (r < 0)
		return r;
	if (!a.present && w.count > 0)
		return error_set(reterr, -EBADMSG,
				 "the anchor %s" AUDIT_HEAD_SUFFIX
				 " is missing: a truncation cannot be ruled out",
				 name);
	if (w.count < a.count)
		return error_set(reterr, -EBADMSG,
				 "the log was truncated: %" PRIu64
				 " records, the anchor says %" PRIu64,
				 w.count, a.count);
	if (a.count > 0 && memcmp(w.at_anchor, a.last, 32) != 0)
		return error_set(reterr, -EBADMSG,
				 "record %" PRIu64
				 " does not match the anchor: the log was rewritten",
				 a.count);
	if (w.count > a.count) {
		log_warning(ctx,
			    "audit log %s: %" PRIu64 " verified records after the anchor, "
			    "which says %" PRIu64 " (a crash between the append and the anchor "
			    "update, or a stale anchor put back): their removal would not be seen",
			    name, w.count - a.count, a.count);
		warnings |= CLIP_AUDIT_WARN_UNANCHORED;
	}
	if (w.torn) {
		log_warning(ctx,
			    "audit log %s: a torn last record after record %" PRIu64
			    " (a crash while appending), not counted",
			    name, w.count);
		warnings |= CLIP_AUDIT_WARN_TORN;
	}
	if (audit_uses_tpm(ctx)) {
		uint64_t c;

		r = counter_check(ctx, name, &a, &c, reterr);
		if (r == -ENOENT || r == -ENODATA) {
			log_warning(ctx,
				    "audit log %s: not bound to the TPM counter 0x%08x yet (its "
				    "writer binds it when it next opens it): a rollback of the log "
				    "with its anchor would not be seen",
				    name, TPM_AUDIT_NV_INDEX);
			warnings |= CLIP_AUDIT_WARN_NOT_COUNTED;
		} else if (r == 1) {
			log_warning(ctx,
				    "audit log %s: the TPM counter is one behind the anchor (a "
				    "crash between the anchor's update and the counter's "
				    "increment)",
				    name);
			warnings |= CLIP_AUDIT_WARN_COUNTER_LAGS;
		} else if (r < 0)
			return r;
	} else if (a.bound) {
		log_warning(ctx,
			    "audit log %s: bound to the TPM counter 0x%08x, which was not read: "
			    "a rollback of the log with its anchor is seen only with the tpm "
			    "key provider",
			    name, TPM_AUDIT_NV_INDEX);
		warnings |= CLIP_AUDIT_WARN_NOT_COUNTED;
	}
	if (ret_count)
		*ret_count = w.count;
	if (ret_warnings)
		*ret_warnings = warnings;
	return 0;
}

CLIP_EXPORT int
clip_audit_check(struct clip_ctx *ctx, int dirfd, const char *name, clip_audit_record_fn fn,
		 void *userdata, uint64_t *ret_count, unsigned *ret_warnings,
		 struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, dirfd >= -1 || dirfd == AT_FDCWD, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, !name || check_name(name), api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, ret_warnings, api_return(-EINVAL, reterr));

	return api_return(audit_verify(ctx, dirfd, name ? name : CLIP_AUDIT_LOG_NAME, fn, userdata,
				       ret_count, ret_warnings, reterr),
			  reterr);
}

CLIP_EXPORT int
clip_audit_verify(struct clip_ctx *ctx, int dirfd, const char *name, clip_audit_record_fn fn,
		  void *userdata, uint64_t *ret_count, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, dirfd >= -1 || dirfd == AT_FDCWD, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, !name || check_name(name), api_return(-EINVAL, reterr));

	return api_return(audit_verify(ctx, dirfd, name ? name : CLIP_AUDIT_LOG_NAME, fn, userdata,
				       ret_count, NULL, reterr),
			  reterr);
}

static struct clip_audit *
audit_free(struct clip_audit *audit)
{
	if (audit->fd >= 0)
		close(audit->fd);
	if (audit->dirfd >= 0)
		close(audit->dirfd);
	clip_ctx_unref(audit->ctx);
	free(audit);
	return NULL;
}

DEFINE_UNREF_CLEANUP(struct clip_audit, audit_free)

/* Cut a torn tail, anchor records a crash left unanchored. */
static int
audit_recover(struct clip_audit *audit, struct clip_error **reterr)
{
	struct anchor a;
	struct walk w;
	bool bind = false;
	int r;

	r = anchor_read(audit->ctx, audit->dirfd, audit->name, &a, reterr);
	if (r < 0)
		return r;
	w = (struct walk){ .anchor_count = a.count };
	r = log_walk(audit->ctx, audit->fd, NULL, NULL, &w, reterr);
	if (r < 0)
		return r;
	if (!a.present && w.count > 0)
		return error_set(reterr, -EBADMSG,
				 "the anchor of %s is missing: a truncation cannot be ruled out",
				 audit->name);
	if (w.count < a.count)
		return error_set(reterr, -EBADMSG,
				 "the log %s was truncated: %" PRIu64
				 " records, the anchor says %" PRIu64,
				 audit->name, w.count, a.count);
	if (a.count > 0 && memcmp(w.at_anchor, a.last, 32) != 0)
		return error_set(reterr, -EBADMSG,
				 "record %" PRIu64 " of %s does not match the anchor", a.count,
				 audit->name);
	/* Before any repair: a rolled-back log is left as it was found. */
	if (audit_uses_tpm(audit->ctx)) {
		uint64_t c = 0;

		r = counter_check(audit->ctx, audit->name, &a, &c, reterr);
		/* The first writer with the tpm key provider binds the log. */
		if (r == -ENOENT)
			r = tpm_counter_define(audit->ctx, TPM_AUDIT_NV_INDEX, &c, reterr);
		/* Never incremented (a crash after defining it), or one behind the anchor. */
		else if (r == -ENODATA || r == 1)
			r = tpm_counter_increment(audit->ctx, TPM_AUDIT_NV_INDEX, &c, reterr);
		if (r < 0)
			return r;
		bind = !a.bound;
		audit->tpm_bound = true;
		audit->tpm = c;
	}
	if (w.torn) {
		log_warning(audit->ctx, "audit log %s: cutting a record torn by a crash",
			    audit->name);
		if (ftruncate(audit->fd, w.good_end) < 0 || fsync(audit->fd) < 0)
			return error_set_errno(reterr, -errno, "cannot repair %s", audit->name);
	}
	audit->count = w.count;
	memcpy(audit->last, w.last, 32);
	/* An anchor made before signing is signed now. */
	if (!a.present || w.count != a.count || bind || !a.is_signed)
		return anchor_write(audit, reterr);
	/* For clip_audit_export(): the signed line as verified above, not read again. */
	memcpy(audit->sig_line, a.sig_line, sizeof(audit->sig_line));
	return 0;
}

static int
audit_open(struct clip_audit **ret, struct clip_ctx *ctx, int dirfd, const char *name,
	   unsigned flags, struct clip_error **reterr)
{
	_cleanup_(audit_freep) struct clip_audit *audit = NULL;
	const uint8_t *key;
	int r;

	audit = calloc(1, sizeof(*audit));
	if (!audit)
		return -ENOMEM;
	audit->n_ref = 1;
	audit->fd = audit->dirfd = -1;
	audit->ctx = clip_ctx_ref(ctx);
	audit->flags = flags;
	strcpy(audit->name, name);
	/* The key first: a log nobody can sign is not worth creating. */
	r = ctx_get_key(ctx, KEY_PURPOSE_AUDIT, true, &key, reterr);
	if (r < 0)
		return r;
	audit->dirfd = open_dir(ctx, dirfd, true, reterr);
	if (audit->dirfd < 0)
		return audit->dirfd;
	audit->fd = openat(audit->dirfd, name,
			   O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (audit->fd < 0)
		return error_set_errno(reterr, -errno, "cannot open the audit log %s", name);
	/* One writer: a second one would fork the chain. */
	if (flock(audit->fd, LOCK_EX | LOCK_NB) < 0)
		return error_set_errno(reterr, errno == EWOULDBLOCK ? -EBUSY : -errno,
				       "the audit log %s is in use", name);
	r = audit_recover(audit, reterr);
	if (r < 0)
		return r;
	*ret = steal_ptr(audit);
	return 0;
}

CLIP_EXPORT int
clip_audit_open(struct clip_audit **ret, struct clip_ctx *ctx, int dirfd, const char *name,
		unsigned flags, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, ret, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, dirfd >= -1 || dirfd == AT_FDCWD, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, !name || check_name(name), api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, (flags & ~CLIP_AUDIT_SYSLOG) == 0, api_return(-EINVAL, reterr));

	return api_return(
		audit_open(ret, ctx, dirfd, name ? name : CLIP_AUDIT_LOG_NAME, flags, reterr),
		reterr);
}

CLIP_EXPORT struct clip_audit *
clip_audit_ref(struct clip_audit *audit)
{
	if (audit)
		audit->n_ref++;
	return audit;
}

CLIP_EXPORT struct clip_audit *
clip_audit_unref(struct clip_audit *audit)
{
	if (audit && --audit->n_ref == 0)
		audit_free(audit);
	return NULL;
}

static int
record_format(struct clip_audit *audit, const struct clip_audit_entry *e, struct strbuf *s,
	      struct clip_error **reterr)
{
	char num[64];
	struct timespec ts;
	uint8_t mac[32];
	int r;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(num, sizeof(num), "v1 seq=%" PRIu64 " time=%lld.%09ld", audit->count + 1,
		 (long long)ts.tv_sec, ts.tv_nsec);
	sb_add(s, num, strlen(num));
	sb_field(s, "event", e->event);
	sb_field(s, "src", e->source);
	sb_field(s, "srclevel", e->source_level);
	sb_field(s, "dst", e->target);
	sb_field(s, "dstlevel", e->target_level);
	sb_field(s, "name", e->name);
	snprintf(num, sizeof(num), "%" PRIu64, e->length);
	sb_field(s, "size", num);
	if (e->sha256)
		sb_hex(s, "sha256", e->sha256, 32);
	else
		sb_field(s, "sha256", NULL);
	sb_field(s, "decision", e->decision);
	sb_field(s, "by", e->decided_by);
	sb_field(s, "reason", e->reason);
	sb_hex(s, "prev", audit->last, 32);
	if (s->overflow)
		return error_set(reterr, -E2BIG, "an audit record field is over %d bytes",
				 AUDIT_FIELD_MAX);
	r = audit_mac(audit->ctx, true, s->p, s->n, mac, reterr);
	if (r < 0)
		return r;
	sb_hex(s, "mac", mac, 32);
	sb_add(s, "\n", 1);
	return s->overflow ? -E2BIG : 0;
}

/* Write a record after the others, not synced: audit_commit() makes it durable. */
static int
audit_write(struct clip_audit *audit, const struct clip_audit_entry *e, struct clip_error **reterr)
{
	_cleanup_free_ char *line = malloc(AUDIT_LINE_MAX + 1);
	struct strbuf s = { .p = line, .max = AUDIT_LINE_MAX + 1 };
	struct stat st;
	int r;

	if (!line)
		return -ENOMEM;
	r = record_format(audit, e, &s, reterr);
	if (r < 0)
		return r;
	if (fstat(audit->fd, &st) < 0)
		return error_set_errno(reterr, -errno, "cannot stat the audit log");
	if (!audit->dirty) {
		audit->batch_size = st.st_size;
		audit->batch_count = audit->count;
		memcpy(audit->batch_last, audit->last, 32);
	}
	r = write_full(audit->fd, line, s.n);
	if (r < 0) {
		/* Nothing half-written stays behind; the chain goes on from the last record. */
		if (ftruncate(audit->fd, st.st_size) < 0)
			log_err(audit->ctx, "cannot cut a half-written audit record");
		return error_set_errno(reterr, r, "cannot append to the audit log %s", audit->name);
	}
	audit->dirty = true;
	audit->count++;
	return crypto_sha256(line, s.n - 1, audit->last);
}

static int
syslog_record(char *line, size_t len, void *userdata)
{
	syslog(LOG_AUTHPRIV | LOG_NOTICE, "clip-audit: %s", line);
	return 0;
}

/*
 * The records of the log from @from to @to, to syslog: once they are on
 * disk, so that a collector never holds a record the trail lost to a
 * failed sync (the chain goes on from the last durable one, and the next
 * record would take its number).
 */
static void
audit_syslog_records(struct clip_audit *audit, off_t from, off_t to)
{
	bool torn;
	off_t end;
	int r;

	r = lines_each(audit->fd, from, to, syslog_record, NULL, &end, &torn);
	if (r == -E2BIG || torn)
		log_err(audit->ctx, "an audit record without its end: the rest of the batch is "
				    "not sent to syslog");
	else if (r < 0)
		log_err(audit->ctx, "cannot read back audit records for syslog: %s", strerror(-r));
	else if (end < to)
		log_err(audit->ctx, "cannot read back audit records for syslog: end of file");
}

int
audit_commit(struct clip_audit *audit, struct clip_error **reterr)
{
	int r;

	if (!audit->dirty)
		return 0;
	audit->dirty = false;
	if (fdatasync(audit->fd) < 0) {
		r = -errno;
		/* None of the batch is known to be on disk: none of it stays. */
		if (ftruncate(audit->fd, audit->batch_size) < 0)
			log_err(audit->ctx, "cannot cut audit records that were not synced");
		audit->count = audit->batch_count;
		memcpy(audit->last, audit->batch_last, 32);
		audit->cuts++;
		return error_set_errno(reterr, r, "cannot append to the audit log %s", audit->name);
	}
	/* The batch's records, then the signature that covers them: a collector verifies them. */
	if (audit->flags & CLIP_AUDIT_SYSLOG) {
		struct stat st;

		if (fstat(audit->fd, &st) == 0)
			audit_syslog_records(audit, audit->batch_size, st.st_size);
		else
			log_err(audit->ctx,
				"cannot stat the audit log: records not sent to syslog");
	}
	r = anchor_write(audit, reterr);
	if (r == 0 && (audit->flags & CLIP_AUDIT_SYSLOG))
		syslog(LOG_AUTHPRIV | LOG_NOTICE, "clip-audit: %s", audit->sig_line);
	return r;
}

uint64_t
audit_cuts(const struct clip_audit *audit)
{
	return audit->cuts;
}

int
audit_append_deferred(struct clip_audit *audit, const struct clip_audit_entry *e,
		      struct clip_error **reterr)
{
	int r = audit_write(audit, e, reterr);

	/* A TPM-bound log keeps one counter increment per record (doc/tpm.md). */
	if (r == 0 && audit->tpm_bound)
		r = audit_commit(audit, reterr);
	return r;
}

static int
audit_append(struct clip_audit *audit, const struct clip_audit_entry *e, struct clip_error **reterr)
{
	int r = audit_write(audit, e, reterr);

	return r < 0 ? r : audit_commit(audit, reterr);
}

CLIP_EXPORT int
clip_audit_append(struct clip_audit *audit, const struct clip_audit_entry *entry,
		  struct clip_error **reterr)
{
	struct clip_audit_entry e;
	int r;

	clip_assert_reterr(reterr);
	clip_assert_return(audit, api_return(-EINVAL, reterr));
	ctx_assert_return_error(audit->ctx, reterr);
	ctx_assert_log_return(audit->ctx, entry, api_return(-EINVAL, reterr));
	ctx_assert_log_return(audit->ctx, entry->size >= AUDIT_ENTRY_SIZE_V1,
			      api_return(-EINVAL, reterr));

	/* A newer caller's entry says more than this version can record: refused, not cut. */
	r = struct_copy_in(&e, sizeof(e), entry, AUDIT_ENTRY_SIZE_V1, "struct clip_audit_entry",
			   reterr);
	if (r < 0)
		return api_return(r, reterr);
	return api_return(audit_append(audit, &e, reterr), reterr);
}

CLIP_EXPORT int
clip_audit_export(struct clip_audit *audit, int fd, struct clip_error **reterr)
{
	_cleanup_free_ char *buf = NULL;
	off_t pos = 0;
	int r;

	clip_assert_reterr(reterr);
	clip_assert_return(audit, api_return(-EINVAL, reterr));
	ctx_assert_return_error(audit->ctx, reterr);
	ctx_assert_log_return(audit->ctx, fd >= 0, api_return(-EINVAL, reterr));

	/* A batch written and not synced yet: synced and signed first, so that the
	   signature exported covers every record exported. */
	r = audit_commit(audit, reterr);
	if (r < 0)
		return api_return(r, reterr);
	buf = malloc(64 * 1024);
	if (!buf)
		return api_return(-ENOMEM, reterr);
	/* Every record (each commit leaves them anchored), then the signature of the last. */
	for (;;) {
		ssize_t k = pread(audit->fd, buf, 64 * 1024, pos);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return api_return(error_set_errno(reterr, -errno,
							  "cannot read the audit log %s",
							  audit->name),
					  reterr);
		if (k == 0)
			break;
		r = write_full(fd, buf, (size_t)k);
		if (r < 0)
			return api_return(error_set_errno(reterr, r, "cannot write the trail"),
					  reterr);
		pos += k;
	}
	r = write_full(fd, audit->sig_line, strlen(audit->sig_line));
	if (r == 0)
		r = write_full(fd, "\n", 1);
	if (r < 0)
		return api_return(error_set_errno(reterr, r, "cannot write the trail"), reterr);
	return 0;
}
