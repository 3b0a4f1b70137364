/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The client side of mediated transfer: from inside a cage, ask the core
 * to move a document (an open fd) to another cage. The cage never names
 * itself: the mediator knows it by the socket. See clip-transfer(3).
 */
#ifndef CLIP_TRANSFER_H
#define CLIP_TRANSFER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct clip_ctx;
struct clip_error;
struct clip_transfer;

/* Where a cage finds the mediator when nothing else is said. */
#define CLIP_TRANSFER_SOCKET "/run/clip/transfer.sock"

/* Outcomes, clip_transfer_get_status(). */
#define CLIP_TRANSFER_DELIVERED 0
#define CLIP_TRANSFER_DENIED_POLICY 1
#define CLIP_TRANSFER_DENIED_USER 2
#define CLIP_TRANSFER_FAILED 3

/**
 * clip_transfer_connect - connect to the mediator
 *
 * @param ret where the connected socket is stored (SOCK_SEQPACKET,
 *	  close-on-exec); untouched on failure
 * @param path the socket's path, or NULL for $CLIP_TRANSFER_SOCKET, then
 *	  CLIP_TRANSFER_SOCKET
 * @param reterr optional
 * @return 0, or -EINVAL, -ENAMETOOLONG, -ENOENT, -ECONNREFUSED, -EACCES,
 *	   -ENOMEM.
 * @since 0.1
 */
int clip_transfer_connect(int *ret, const char *path, struct clip_error **reterr);

/**
 * clip_transfer_new - send a transfer request, without waiting
 *
 * At most one transfer is in flight on a socket at a time.
 *
 * @param ret where the transfer is stored; untouched on failure
 * @param sock a socket from clip_transfer_connect() (duplicated)
 * @param fd the document, a regular file open for reading; the mediator
 *	  reads it through this fd only and never writes it
 * @param target the name of the target cage
 * @param name the name the document should have there (a hint: the
 *	  mediator sanitises it), at most 1024 bytes
 * @param note optional text shown to the user, at most 1024 bytes of
 *	  UTF-8 without control characters
 * @param reterr optional
 * @return 0, or -EINVAL (bad arguments, a field over its bound or with a
 *	   character it may not hold), -EBADF, -ECONNRESET, -EAGAIN, -ENOMEM.
 * @since 0.1
 */
int clip_transfer_new(struct clip_transfer **ret, int sock, int fd, const char *target,
		      const char *name, const char *note, struct clip_error **reterr);

/* What a cage reports, clip_transfer_report(). */
#define CLIP_TRANSFER_REPORT_EXEC_REFUSED 1 /* a file refused as code (W^X) */

/**
 * clip_transfer_report - tell the core something the user should see
 *
 * One way: it connects, sends and closes; nothing answers, and the call
 * never blocks (a mediator whose backlog or buffer is full gets no
 * report: -EAGAIN). The mediator names
 * the cage by the socket the report came on (a cage cannot speak for
 * another), records it in the audit trail and pushes it to its feed as
 * CLIP_FEED_EXEC_REFUSED, at a bounded rate per cage: what is over the
 * rate is counted, and the count shown, not each report. An interpreter
 * that refuses a file (clip-python, clip-perl) reports it so.
 *
 * @param path the mediator's socket, or NULL for $CLIP_TRANSFER_SOCKET,
 *	  then CLIP_TRANSFER_SOCKET (as clip_transfer_connect())
 * @param kind CLIP_TRANSFER_REPORT_EXEC_REFUSED
 * @param subject the file, at most 1024 bytes (any but NUL: shown escaped)
 * @param error the refusal's errno (EACCES, EPERM...), or 0
 * @param text why, at most 512 bytes of UTF-8 without control characters,
 *	  or NULL
 * @param reterr optional
 * @return 0 once sent, or -EINVAL (an unknown kind, a bad errno or text),
 *	   -E2BIG (the subject), -ENOENT, -ECONNREFUSED (no mediator there),
 *	   -ECONNRESET, -EAGAIN (the mediator is full: not sent).
 * @since 0.1
 */
int clip_transfer_report(const char *path, int kind, const char *subject, int error,
			 const char *text, struct clip_error **reterr);

/** @since 0.1 */
struct clip_transfer *clip_transfer_ref(struct clip_transfer *transfer);
/** @since 0.1 */
struct clip_transfer *clip_transfer_unref(struct clip_transfer *transfer);

/**
 * clip_transfer_get_fd - the fd to poll (readable when the answer is there)
 *
 * @return an fd owned by the transfer, or -EINVAL.
 * @since 0.1
 */
int clip_transfer_get_fd(struct clip_transfer *transfer);

/**
 * clip_transfer_dispatch - read the answer if it is there, without blocking
 *
 * @return 1 when the answer arrived (see clip_transfer_get_status()), 0
 *	   when it has not yet, or -EINVAL, -ECONNRESET (the mediator went
 *	   away), -EBADMSG (a malformed answer).
 * @since 0.1
 */
int clip_transfer_dispatch(struct clip_transfer *transfer, struct clip_error **reterr);

/**
 * clip_transfer_wait - wait for the answer
 *
 * @param timeout_ms how long, or -1 for as long as it takes (the user may
 *	  be asked)
 * @return 0, or -EAGAIN (no answer within @timeout_ms: wait again, or
 *	   give up by unreferencing the transfer), and the errors of
 *	   clip_transfer_dispatch().
 * @since 0.1
 */
int clip_transfer_wait(struct clip_transfer *transfer, int timeout_ms, struct clip_error **reterr);

/**
 * clip_transfer_send - clip_transfer_new() then clip_transfer_wait(-1)
 *
 * @return 0 when the mediator answered (whatever it decided: see
 *	   clip_transfer_get_status()), or the errors of both.
 * @since 0.1
 */
int clip_transfer_send(struct clip_transfer **ret, int sock, int fd, const char *target,
		       const char *name, const char *note, struct clip_error **reterr);

/**
 * clip_transfer_get_status - the outcome
 *
 * @return CLIP_TRANSFER_DELIVERED, CLIP_TRANSFER_DENIED_POLICY,
 *	   CLIP_TRANSFER_DENIED_USER, CLIP_TRANSFER_FAILED, or -EAGAIN when
 *	   no answer arrived yet, -EINVAL.
 * @since 0.1
 */
int clip_transfer_get_status(const struct clip_transfer *transfer);

/**
 * clip_transfer_get_error - why a transfer failed
 *
 * @return the negative errno the mediator gave for CLIP_TRANSFER_FAILED
 *	   (-EFBIG, -EMEDIUMTYPE, -ENOSPC...) or a denial by a size limit,
 *	   0 otherwise, -EINVAL.
 * @since 0.1
 */
int clip_transfer_get_error(const struct clip_transfer *transfer);

/**
 * clip_transfer_get_message - the mediator's reason, one line of text
 *
 * @return a string owned by the transfer ("" before the answer), or NULL
 *	   when @transfer is NULL.
 * @since 0.1
 */
const char *clip_transfer_get_message(const struct clip_transfer *transfer);

/**
 * clip_transfer_get_name - the name the document got in the target inbox
 *
 * @return a string owned by the transfer ("" unless delivered), or NULL.
 * @since 0.1
 */
const char *clip_transfer_get_name(const struct clip_transfer *transfer);

/**
 * clip_transfer_get_digest - what the mediator read
 *
 * @param transfer an answered transfer
 * @param size optional: the document's size in bytes
 * @param sha256 optional: 32 bytes, its SHA-256
 * @param encrypted optional: 1 when it was delivered in an envelope
 * @return 0, or -EAGAIN (no answer yet), -EINVAL.
 * @since 0.1
 */
int clip_transfer_get_digest(const struct clip_transfer *transfer, uint64_t *size, uint8_t *sha256,
			     int *encrypted);

/**
 * clip_transfer_open_envelope - open an envelope the mediator delivered
 * (a rule with encrypt) to @target, with the key of @ctx
 *
 * Not for cages: the key is the core's (the context's state directory or
 * TPM), and whoever holds it decides where plain text may go. The
 * envelope is read from @in_fd's offset to its end (a file, a pipe); a
 * regular file no further than the size it has when the call starts,
 * and not at all when it is sparse (cipher text has no holes). The plain
 * text is decrypted into an unnamed memory file (memfd) and written to
 * @out_fd only once the whole envelope has been authenticated: a refused
 * envelope writes nothing to @out_fd. Opening therefore needs as much
 * memory (or swap) as the document, and a document over 256 MiB is
 * refused (before reading a regular file, when reached from a pipe). When
 * @out_fd is an unnamed regular file (O_TMPFILE, memfd: no other process
 * can open it by a name), the plain text goes straight into it, and a
 * refusal cuts it back to its length at the call.
 *
 * @param ctx the context whose key sealed the envelope (the mediator's)
 * @param target the name of the cage the envelope was delivered to (it is
 *	  bound to the envelope): 1 to 64 of [a-z0-9_-]
 * @param in_fd the envelope, open for reading
 * @param out_fd where the plain text goes, open for writing
 * @param reterr optional
 * @return 0, or -EINVAL (bad arguments), -EBADF (@in_fd not readable,
 *	   @out_fd not writable), -EBADMSG (empty, not an envelope, cut
 *	   short, altered, for another cage or under another key, sparse, or
 *	   growing while read: nothing written), -EFBIG (more than AES-GCM
 *	   can hold, 64 GiB; over 256 MiB held in memory), -ENOKEY
 *	   (the context has no key), -ENOMEM, -EIO, -ENOSPC, -EDQUOT
 *	   (writing @out_fd: part of the plain text may have been written),
 *	   -ECHILD, and the errors of reading the context's key.
 * @since 0.1
 */
int clip_transfer_open_envelope(struct clip_ctx *ctx, const char *target, int in_fd, int out_fd,
				struct clip_error **reterr);

#ifdef __cplusplus
}
#endif

#endif
