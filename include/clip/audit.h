/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tamper-evident audit trail of transfers.
 *
 * Each record is one line of text, chained to the previous record by its
 * SHA-256 and MAC'd with a key derived from the context's master key. A
 * separate, MAC'd head file (the anchor) holds the record count and the
 * last hash, so that a truncated tail is detected too. See clip-audit(3)
 * and doc/transfer.md.
 */
#ifndef CLIP_AUDIT_H
#define CLIP_AUDIT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct clip_ctx;
struct clip_error;
struct clip_audit;

/* The default name of the log in the state directory; the anchor adds ".head". */
#define CLIP_AUDIT_LOG_NAME "audit.log"

/* Also send each record to syslog (LOG_AUTHPRIV). */
#define CLIP_AUDIT_SYSLOG (1u << 0)

/*
 * What one record says. Unset strings are recorded as "-". A larger struct
 * (a newer header) is accepted when what this library does not know of it
 * is zero: a field it cannot record is refused, never dropped.
 */
struct clip_audit_entry {
	uint32_t size; /* sizeof(struct clip_audit_entry) */
	const char *event; /* "request", "decision" */
	const char *source; /* source cage */
	const char *source_level; /* its level */
	const char *target;
	const char *target_level;
	const char *name; /* the document's name */
	uint64_t length; /* its size in bytes */
	const uint8_t *sha256; /* 32 bytes, or NULL */
	const char *decision; /* "allow", "deny", "ask", "delivered", "failed"... */
	const char *decided_by; /* "policy FILE:LINE", "user", "timeout"... */
	const char *reason;
};

/**
 * clip_audit_open - open a log for appending
 *
 * Creates the log and its anchor when missing. A record torn by a crash
 * after the last anchored one is cut; records written after the anchor
 * (a crash between the two writes) are verified and anchored.
 *
 * @param ret where the log is stored; untouched on failure
 * @param ctx a context (its key signs the records)
 * @param dirfd the directory of the log, or -1 for the state directory
 * @param name the log's name in @dirfd (no '/'), or NULL for CLIP_AUDIT_LOG_NAME
 * @param flags 0 or CLIP_AUDIT_SYSLOG
 * @param reterr optional
 * @return 0, or -EINVAL, -EBADMSG (the log does not verify: it is not
 *	   appended to), -EBUSY (another process appends to it), -ENOKEY,
 *	   -EPERM, -EACCES, -ENOENT, -ENOSPC, -EDQUOT, -EROFS, -EIO, -ENOMEM,
 *	   -ECHILD.
 * @since 0.1
 */
int clip_audit_open(struct clip_audit **ret, struct clip_ctx *ctx, int dirfd, const char *name,
		    unsigned flags, struct clip_error **reterr);

/** @since 0.1 */
struct clip_audit *clip_audit_ref(struct clip_audit *audit);
/** @since 0.1 */
struct clip_audit *clip_audit_unref(struct clip_audit *audit);

/**
 * clip_audit_append - append one record, on disk before returning
 *
 * @param audit an open log
 * @param entry what to record
 * @param reterr optional
 * @return 0, or -EINVAL (@entry->size smaller than this struct, its first
 *	   version), -E2BIG (a field over 4096 bytes; @entry->size larger than
 *	   this library knows and a byte beyond what it knows not zero, or
 *	   larger than 4096), -ENOSPC, -EDQUOT, -EIO, -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_audit_append(struct clip_audit *audit, const struct clip_audit_entry *entry,
		      struct clip_error **reterr);

/* Called with each verified record, a line of printable ASCII (no newline). */
typedef int (*clip_audit_record_fn)(const char *record, void *userdata);

/**
 * clip_audit_verify - verify a whole log against its anchor
 *
 * Detects an edited, reordered, inserted or deleted record and a
 * truncated log. @fn, when given, sees each record once it verified;
 * a negative return from it stops the walk and is returned.
 *
 * @param ctx a context with the key that signed the log
 * @param dirfd, name as for clip_audit_open()
 * @param fn optional
 * @param userdata passed to @fn
 * @param ret_count optional: the number of records
 * @param reterr optional; the message names the first bad record
 * @return 0, or -EBADMSG (the log does not verify), -ENOENT (no log),
 *	   -ENOKEY, -EINVAL, -EPERM, -EACCES, -EIO, -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_audit_verify(struct clip_ctx *ctx, int dirfd, const char *name, clip_audit_record_fn fn,
		      void *userdata, uint64_t *ret_count, struct clip_error **reterr);

/* What clip_audit_check() found that leaves the log valid but proves less. */
/* Records after the anchor: a crash between an append and the anchor's update, or a stale anchor. */
#define CLIP_AUDIT_WARN_UNANCHORED (1u << 0)
/* A torn last record (a crash while appending), not counted. */
#define CLIP_AUDIT_WARN_TORN (1u << 1)
/*
 * The TPM counter was not compared: the log is bound to it and the key
 * provider is not "tpm", or it is and the log is not bound yet.
 */
#define CLIP_AUDIT_WARN_NOT_COUNTED (1u << 2)
/* The TPM counter one behind the anchor: a crash between their updates. */
#define CLIP_AUDIT_WARN_COUNTER_LAGS (1u << 3)

/**
 * clip_audit_check - verify a whole log, and say what limits the proof
 *
 * As clip_audit_verify(), which logs what it finds doubtful at
 * LOG_WARNING only; this also returns it, so that a caller can show it
 * and tell "valid" from "valid, but". The log is not modified (the next
 * clip_audit_open() repairs a torn tail and anchors the records after the
 * anchor).
 *
 * @param ctx, dirfd, name, fn, userdata, ret_count as for clip_audit_verify()
 * @param ret_warnings the CLIP_AUDIT_WARN_* found, 0 when none; required
 * @param reterr optional
 * @return as clip_audit_verify()
 * @since 0.1
 */
int clip_audit_check(struct clip_ctx *ctx, int dirfd, const char *name, clip_audit_record_fn fn,
		     void *userdata, uint64_t *ret_count, unsigned *ret_warnings,
		     struct clip_error **reterr);

/**
 * clip_audit_get_public_key - the public half of this machine's audit
 * signing key, for a collector that verifies its trail
 *
 * The key is Ed25519, its private half derived from the context's master
 * key (where the key provider keeps it: sealed to the TPM with the tpm
 * provider). Each anchor carries its signature (doc/transfer.md).
 *
 * @param ret where a newly allocated PEM text is stored (free() it)
 * @return 0, or -ENOKEY (no master key yet), -EINVAL, -EIO, -ENOMEM,
 *	   -EOPNOTSUPP (no libcrypto), -ECHILD.
 * @since 0.1
 */
int clip_audit_get_public_key(struct clip_ctx *ctx, char **ret, struct clip_error **reterr);

/**
 * clip_audit_export - write the trail as a stream a collector verifies
 * with clip_audit_verify_public(): every record, then the anchor's signed
 * line
 *
 * @param audit an open log
 * @param fd where to write it
 * @return 0, or -EINVAL, -EIO, -ENOSPC, -EPIPE, -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_audit_export(struct clip_audit *audit, int fd, struct clip_error **reterr);

/**
 * clip_audit_verify_public - verify a trail stream with a public key only
 *
 * A stream is records and signed lines ("s1 ..."), one a line, each
 * possibly behind a syslog prefix ending in "clip-audit: "; other lines
 * are ignored. It must start at record 1; each record must follow the one
 * before it (its hash chain), each signed line must verify with
 * @public_key and sign the chain as it stands, and the last record must
 * be signed. The records' MACs are not checked: they need the machine's
 * secret. A copy cut after a signed line is a valid shorter trail: compare
 * the count with the one seen last.
 *
 * @param fd the stream, read to its end
 * @param public_key the PEM text of clip_audit_get_public_key()
 * @param fn, userdata as for clip_audit_verify()
 * @param ret_count optional: the number of records
 * @param reterr optional; the message names the first bad record
 * @return 0, or -EBADMSG (the trail does not verify), -EINVAL (not an
 *	   Ed25519 key in PEM), -EIO, -ENOMEM, -EOPNOTSUPP (no libcrypto).
 * @since 0.1
 */
int clip_audit_verify_public(int fd, const char *public_key, clip_audit_record_fn fn,
			     void *userdata, uint64_t *ret_count, struct clip_error **reterr);

#ifdef __cplusplus
}
#endif

#endif
