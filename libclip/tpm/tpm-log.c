/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Measurements: an event log in the state directory and a PCR that each
 * event extends, so that the log can be replayed against the TPM.
 *
 * Log (STATE_DIR/tpm-events.log), text, one event a line:
 *
 *   libclip-tpm-events v1
 *   PCR SHA256(DATA) WHAT
 *
 * PCR in decimal, the digest in lowercase hex, WHAT 1 to 255 printable
 * ASCII characters. The PCR is extended with H(EVENT), where
 *
 *   EVENT = "libclip tpm event v1" NUL || u32le len(WHAT) || WHAT || SHA256(DATA)
 *
 * so that the name of an event is as bound as the digest of what it
 * measured. Appending and extending happen under an exclusive lock of the
 * log, in that order; a failed extend takes the record back.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/crypto.h"
#include "base/log.h"
#include "tpm-internal.h"
#include "base/util.h"

#define LOG_NAME "tpm-events.log"
#define LOG_OLD_NAME "tpm-events.log.old"
#define LOG_HEADER "libclip-tpm-events v1\n"
#define LOG_HEADER_SIZE (sizeof(LOG_HEADER) - 1)
#define LOG_MAX (16 * 1024 * 1024)
#define EVENT_DOMAIN "libclip tpm event v1"
#define WHAT_MAX 255
/* "23 " + 64 hex + " " + WHAT + "\n" */
#define RECORD_MAX (3 + 2 * TPM_SHA256_SIZE + 1 + WHAT_MAX + 1)

bool
tpm_event_name_valid(const char *what)
{
	size_t n = strnlen(what, WHAT_MAX + 1);

	if (n == 0 || n > WHAT_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (what[i] < 0x20 || what[i] > 0x7e)
			return false;
	return true;
}

/* The bytes the PCR is extended with the hash of. */
static size_t
event_bytes(const char *what, size_t len, const uint8_t digest[TPM_SHA256_SIZE],
	    uint8_t out[sizeof(EVENT_DOMAIN) + 4 + WHAT_MAX + TPM_SHA256_SIZE])
{
	struct buf b = {
		.data = out,
		.max = sizeof(EVENT_DOMAIN) + 4 + WHAT_MAX + TPM_SHA256_SIZE,
	};

	buf_put(&b, EVENT_DOMAIN, sizeof(EVENT_DOMAIN));
	buf_put_u32(&b, (uint32_t)len);
	buf_put(&b, what, len);
	buf_put(&b, digest, TPM_SHA256_SIZE);
	return b.size;
}

/* values[pcr] = H(values[pcr] || H(EVENT)), as TPM2_PCR_Extend does. */
static int
replay_extend(uint8_t value[TPM_SHA256_SIZE], const char *what, size_t len,
	      const uint8_t digest[TPM_SHA256_SIZE])
{
	uint8_t event[sizeof(EVENT_DOMAIN) + 4 + WHAT_MAX + TPM_SHA256_SIZE];
	uint8_t both[2 * TPM_SHA256_SIZE];
	size_t n = event_bytes(what, len, digest, event);
	int r;

	memcpy(both, value, TPM_SHA256_SIZE);
	r = crypto_sha256(event, n, both + TPM_SHA256_SIZE);
	return r < 0 ? r : crypto_sha256(both, sizeof(both), value);
}

/* "PCR DIGEST WHAT" without its newline; @what gets a NUL-terminated copy. */
static int
parse_record(const char *untrusted, size_t len, unsigned *ret_pcr, uint8_t digest[TPM_SHA256_SIZE],
	     char what[WHAT_MAX + 1], struct clip_error **reterr, unsigned line)
{
	const char *p = untrusted, *end = untrusted + len;
	unsigned pcr = 0;
	size_t n;

	for (n = 0; p < end && *p >= '0' && *p <= '9' && n < 3; p++, n++)
		pcr = pcr * 10 + (unsigned)(*p - '0');
	if (n == 0 || n > 2 || (n == 2 && untrusted[0] == '0') || !tpm_measure_pcr_valid(pcr))
		return error_set(reterr, -EBADMSG, "event log line %u: bad PCR", line);
	if (end - p < 1 + 2 * TPM_SHA256_SIZE + 2 || *p != ' ' || p[1 + 2 * TPM_SHA256_SIZE] != ' ')
		return error_set(reterr, -EBADMSG, "event log line %u: truncated record", line);
	if (hex_decode(p + 1, TPM_SHA256_SIZE, digest) < 0)
		return error_set(reterr, -EBADMSG,
				 "event log line %u: the digest is not 64 lowercase hex digits",
				 line);
	p += 2 + 2 * TPM_SHA256_SIZE;
	n = (size_t)(end - p);
	if (n > WHAT_MAX)
		return error_set(reterr, -EBADMSG, "event log line %u: name too long", line);
	memcpy(what, p, n);
	what[n] = '\0';
	if (!tpm_event_name_valid(what) || strlen(what) != n)
		return error_set(reterr, -EBADMSG,
				 "event log line %u: the name is not printable ASCII", line);
	*ret_pcr = pcr;
	return 0;
}

int
tpm_log_replay_buffer(const char *untrusted, size_t size,
		      uint8_t values[TPM_PCR_COUNT][TPM_SHA256_SIZE], uint32_t *ret_used,
		      clip_tpm_event_fn fn, void *userdata, struct clip_error **reterr)
{
	const char *p, *end = untrusted + size;
	uint32_t used = 0;
	int count = 0;

	memset(values, 0, TPM_PCR_COUNT * TPM_SHA256_SIZE);
	*ret_used = 0;
	/* Created, not yet written: no event. */
	if (size == 0)
		return 0;
	if (size > LOG_MAX)
		return error_set(reterr, -EBADMSG, "event log too large (%zu bytes)", size);
	if (size < LOG_HEADER_SIZE || memcmp(untrusted, LOG_HEADER, LOG_HEADER_SIZE) != 0)
		return error_set(reterr, -EBADMSG, "not an event log of libclip (first line)");
	p = untrusted + LOG_HEADER_SIZE;
	for (unsigned line = 2; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		uint8_t digest[TPM_SHA256_SIZE];
		char what[WHAT_MAX + 1];
		unsigned pcr = 0;
		int r;

		if (!nl)
			return error_set(reterr, -EBADMSG,
					 "event log line %u: partial record (no newline)", line);
		r = parse_record(p, (size_t)(nl - p), &pcr, digest, what, reterr, line);
		if (r < 0)
			return r;
		r = replay_extend(values[pcr], what, strlen(what), digest);
		if (r < 0)
			return error_set(reterr, r, "cannot compute SHA-256");
		used |= UINT32_C(1) << pcr;
		if (fn)
			fn(pcr, what, digest, userdata);
		count++;
		p = nl + 1;
	}
	*ret_used = used;
	return count;
}

/*
 * Open the log and lock it (exclusively to write): the file locked is the
 * one the name points to once the lock is held, since a measurement may
 * have moved the old log aside meanwhile. -ENOENT (no message) when there
 * is no log and @write is false.
 */
static int
log_open(struct clip_ctx *ctx, int dirfd, bool write, struct clip_error **reterr)
{
	int flags = write ? O_RDWR | O_APPEND | O_CREAT : O_RDONLY;

	for (int attempt = 0; attempt < 8; attempt++) {
		_cleanup_close_ int fd = -1;
		struct stat st, now;

		fd = tpm_state_file_open(ctx, dirfd, LOG_NAME, flags, "event log", &st, reterr);
		if (fd == -ENOENT && write)
			return error_set(reterr, -ENOENT, "cannot create event log %s/%s",
					 ctx->state_dir, LOG_NAME);
		if (fd < 0)
			return fd;
		while (flock(fd, write ? LOCK_EX : LOCK_SH) < 0)
			if (errno != EINTR)
				return error_set_errno(reterr, -errno, "cannot lock the event log");
		if (fstatat(dirfd, LOG_NAME, &now, AT_SYMLINK_NOFOLLOW) < 0 ||
		    now.st_dev != st.st_dev || now.st_ino != st.st_ino)
			continue;
		return steal_fd(fd);
	}
	return error_set(reterr, -EIO, "the event log %s/%s keeps being replaced", ctx->state_dir,
			 LOG_NAME);
}

static bool
all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* The whole log, bounded; an empty buffer when there is none. */
static int
log_read(struct clip_ctx *ctx, int fd, char **ret, size_t *ret_size, struct clip_error **reterr)
{
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0)
		return error_set_errno(reterr, -errno, "cannot stat the event log");
	if (st.st_size > LOG_MAX)
		return error_set(reterr, -EBADMSG, "event log too large (%lld bytes)",
				 (long long)st.st_size);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	r = read_full(fd, buf, (size_t)st.st_size);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot read event log %s/%s", ctx->state_dir,
				       LOG_NAME);
	*ret = steal_ptr(buf);
	*ret_size = (size_t)st.st_size;
	return 0;
}

/* The record, with the header first when the log is new. */
static int
record_format(size_t size, unsigned pcr, const uint8_t digest[TPM_SHA256_SIZE], const char *what,
	      char out[LOG_HEADER_SIZE + RECORD_MAX + 1], struct clip_error **reterr)
{
	char hex[2 * TPM_SHA256_SIZE + 1];

	if (size + RECORD_MAX > LOG_MAX)
		return error_set(reterr, -ENOSPC, "the event log is full (%d bytes)", LOG_MAX);
	hex_encode(digest, TPM_SHA256_SIZE, hex);
	return snprintf(out, LOG_HEADER_SIZE + RECORD_MAX + 1, "%s%u %s %s\n",
			size == 0 ? LOG_HEADER : "", pcr, hex, what);
}

/*
 * Append the record and extend the PCR, under the log's lock; 1: start
 * again (the log was moved aside). The log is replayed first: a damaged
 * log is refused, and a PCR at its reset value under a log that has events
 * for it means the TPM was reset (a reboot): a new log starts.
 */
static int
measure_locked(struct clip_ctx *ctx, struct tpm *t, int dirfd, int fd, const char *what,
	       const uint8_t digest[TPM_SHA256_SIZE], struct clip_error **reterr)
{
	uint8_t tpm[TPM_PCR_COUNT][TPM_SHA256_SIZE], replayed[TPM_PCR_COUNT][TPM_SHA256_SIZE];
	uint8_t event[sizeof(EVENT_DOMAIN) + 4 + WHAT_MAX + TPM_SHA256_SIZE];
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	char record[LOG_HEADER_SIZE + RECORD_MAX + 1];
	_cleanup_free_ char *untrusted = NULL;
	unsigned pcr = tpm_measure_pcr(ctx);
	uint32_t used = 0, bit = UINT32_C(1) << pcr;
	size_t size = 0;
	int r, n;

	r = log_read(ctx, fd, &untrusted, &size, reterr);
	if (r < 0)
		return r;
	r = tpm_log_replay_buffer(untrusted, size, replayed, &used, NULL, NULL, &e);
	if (r < 0)
		return error_set(reterr, r, "%s: move %s/%s aside to measure again",
				 clip_error_get_message(e), ctx->state_dir, LOG_NAME);
	r = tpm_pcr_read(t, bit, tpm, reterr);
	if (r < 0)
		return r;
	if ((used & bit) && all_zero(tpm[pcr], TPM_SHA256_SIZE)) {
		if (renameat(dirfd, LOG_NAME, dirfd, LOG_OLD_NAME) < 0)
			return error_set_errno(reterr, -errno, "cannot move the event log aside");
		log_notice(ctx, "PCR %u is at its reset value: moved %s/%s to %s and started anew",
			   pcr, ctx->state_dir, LOG_NAME, LOG_OLD_NAME);
		return 1;
	}
	if (memcmp(tpm[pcr], replayed[pcr], TPM_SHA256_SIZE) != 0)
		log_warning(ctx,
			    "PCR %u does not match the event log %s/%s already (extended outside "
			    "it, or the log was edited); measuring anyway",
			    pcr, ctx->state_dir, LOG_NAME);
	n = record_format(size, pcr, digest, what, record, reterr);
	if (n < 0)
		return n;
	r = write_full(fd, record, (size_t)n);
	if (r >= 0)
		r = tpm_pcr_extend_event(t, pcr, event,
					 event_bytes(what, strlen(what), digest, event), reterr);
	if (r < 0) {
		/* Neither half without the other. */
		if (ftruncate(fd, (off_t)size) < 0)
			log_err(ctx, "cannot take back the record of '%s' from the event log",
				what);
		return error_set_errno(reterr, r, "cannot append to the event log");
	}
	if (fdatasync(fd) < 0)
		return error_set_errno(reterr, -errno,
				       "PCR %u is extended but the event log is not on disk", pcr);
	log_debug(ctx, "measured '%s' into PCR %u", what, pcr);
	return 0;
}

int
tpm_measure(struct clip_ctx *ctx, const char *what, const void *data, size_t size,
	    struct clip_error **reterr)
{
	_cleanup_close_ int dirfd = -1;
	uint8_t digest[TPM_SHA256_SIZE];
	int r;

	if (!tpm_event_name_valid(what))
		return error_set(reterr, -EINVAL,
				 "an event name is 1 to 255 printable ASCII characters");
	r = crypto_sha256(data, size, digest);
	if (r < 0)
		return error_set(reterr, r, "cannot compute SHA-256");
	dirfd = ctx_open_state_dir(ctx, true, reterr);
	if (dirfd < 0)
		return dirfd;
	for (int attempt = 0; attempt < 4; attempt++) {
		_cleanup_close_ int fd = log_open(ctx, dirfd, true, reterr);
		_cleanup_(tpm_close) struct tpm t = { 0 };

		if (fd < 0)
			return fd;
		/*
		 * The TPM only once the lock is held: a TPM that serves one
		 * connection at a time (swtpm, /dev/tpm0) must not be held by
		 * a process that waits for the lock.
		 */
		r = tpm_open(ctx, &t, reterr);
		if (r >= 0)
			r = measure_locked(ctx, &t, dirfd, fd, what, digest, reterr);
		if (r <= 0)
			return r;
	}
	return error_set(reterr, -EIO, "the event log keeps being moved");
}

CLIP_EXPORT int
clip_tpm_measure(struct clip_ctx *ctx, const char *what, const void *data, size_t size,
		 struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	/* A name that is not printable ASCII is input, refused by tpm_measure() with a message. */
	ctx_assert_log_return(ctx, what, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, data || size == 0, api_return(-EINVAL, reterr));

	return api_return(tpm_measure(ctx, what, data ? data : "", size, reterr), reterr);
}

static int
compare_pcrs(struct clip_ctx *ctx, struct tpm *t, uint32_t check, uint32_t used,
	     uint8_t replayed[TPM_PCR_COUNT][TPM_SHA256_SIZE], struct clip_error **reterr)
{
	uint8_t tpm[TPM_PCR_COUNT][TPM_SHA256_SIZE];
	char want[2 * TPM_SHA256_SIZE + 1], have[2 * TPM_SHA256_SIZE + 1];
	int r;

	r = tpm_pcr_read(t, check, tpm, reterr);
	if (r < 0)
		return r;
	for (unsigned pcr = 0; pcr < TPM_PCR_COUNT; pcr++) {
		if (!(check & (UINT32_C(1) << pcr)) ||
		    memcmp(tpm[pcr], replayed[pcr], TPM_SHA256_SIZE) == 0)
			continue;
		hex_encode(replayed[pcr], TPM_SHA256_SIZE, want);
		hex_encode(tpm[pcr], TPM_SHA256_SIZE, have);
		return error_set(reterr, -EBADMSG,
				 "PCR %u does not match the event log: the log replays to %s, "
				 "the TPM holds %s%s",
				 pcr, want, have,
				 (used & (UINT32_C(1) << pcr)) &&
						 all_zero(tpm[pcr], TPM_SHA256_SIZE)
					 ? " (its reset value: the log predates a TPM reset)"
					 : "");
	}
	log_debug(ctx, "the event log matches the TPM");
	return 0;
}

static int
replay(struct clip_ctx *ctx, clip_tpm_event_fn fn, void *userdata, struct clip_error **reterr)
{
	uint8_t values[TPM_PCR_COUNT][TPM_SHA256_SIZE];
	_cleanup_close_ int dirfd = -1, fd = -1;
	_cleanup_(tpm_close) struct tpm t = { 0 };
	_cleanup_free_ char *untrusted = NULL;
	size_t size = 0;
	uint32_t used = 0;
	int r, n = 0;

	dirfd = ctx_open_state_dir(ctx, false, reterr);
	if (dirfd < 0 && dirfd != -ENOENT)
		return dirfd;
	/* No state directory or no log: no event, so the PCR must be at its reset value. */
	fd = dirfd < 0 ? -ENOENT : log_open(ctx, dirfd, false, reterr);
	if (fd < 0 && fd != -ENOENT)
		return fd;
	/* After the lock, as in tpm_measure(). */
	r = tpm_open(ctx, &t, reterr);
	if (r < 0)
		return r;
	memset(values, 0, sizeof(values));
	if (fd >= 0) {
		r = log_read(ctx, fd, &untrusted, &size, reterr);
		if (r < 0)
			return r;
		n = tpm_log_replay_buffer(untrusted, size, values, &used, fn, userdata, reterr);
		if (n < 0)
			return n;
	}
	/* Still under the lock: no measurement between the log and the PCRs. */
	r = compare_pcrs(ctx, &t, used | (UINT32_C(1) << tpm_measure_pcr(ctx)), used, values,
			 reterr);
	return r < 0 ? r : n;
}

CLIP_EXPORT int
clip_tpm_replay(struct clip_ctx *ctx, clip_tpm_event_fn fn, void *userdata,
		struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);

	return api_return(replay(ctx, fn, userdata, reterr), reterr);
}
