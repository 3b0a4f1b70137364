/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The confirmation agent's side of the mediator (doc/confirm-protocol.md),
 * for a desktop that asks the user: connect to the mediator's agent
 * socket, receive its questions (decoded strictly, every field checked),
 * answer each by yes or no, and learn when one expired or was withdrawn.
 * Driven by any event loop through one pollable fd, or blocking with a
 * timeout. See clip-agent(3); clip-confirm(1) is written on it.
 */
#ifndef CLIP_AGENT_H
#define CLIP_AGENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct clip_error;
struct clip_agent;
struct clip_agent_question;

/* Where the mediator listens for its agent when nothing else is said. */
#define CLIP_AGENT_SOCKET "/run/clip/confirm.sock"

/* What clip_agent_receive() returns. */
#define CLIP_AGENT_NONE 0 /* nothing within the timeout */
#define CLIP_AGENT_READY 1 /* the mediator greeted us: it asks this agent now */
#define CLIP_AGENT_QUESTION 2 /* a new question, to show and answer */
#define CLIP_AGENT_EXPIRED 3 /* a question's time ran out: denied; withdraw it */
#define CLIP_AGENT_WITHDRAWN 4 /* the mediator stops: nothing is delivered; withdraw it */

/* clip_agent_question_get_direction(). */
#define CLIP_AGENT_UP 0
#define CLIP_AGENT_DOWN 1 /* a downgrade: flag it */
#define CLIP_AGENT_SAME 2
#define CLIP_AGENT_INCOMPARABLE 3 /* neither level dominates the other: flag it */

/* clip_agent_question_get_flags(). */
#define CLIP_AGENT_ENCRYPTED (1u << 0) /* delivered in an AES-256-GCM envelope */
#define CLIP_AGENT_NAME_ESCAPED (1u << 1) /* the name held what had to be escaped */
#define CLIP_AGENT_NOTE_ESCAPED (1u << 2) /* the note held what had to be escaped */

/* clip_agent_question_get_state(). */
#define CLIP_AGENT_PENDING 0 /* to answer */
#define CLIP_AGENT_ANSWERED 1
#define CLIP_AGENT_TIMED_OUT 2 /* CLIP_AGENT_EXPIRED came for it */
#define CLIP_AGENT_GONE 3 /* withdrawn, or the connection ended */

/*
 * Options of clip_agent_connect(); NULL means the defaults. @size as for
 * the library's other option structs: a larger struct (a newer header) is
 * accepted when what this library does not know of it is zero.
 */
struct clip_agent_opts {
	uint32_t size; /* sizeof(struct clip_agent_opts) */
	uint32_t flags; /* none yet: 0 */
};

/**
 * clip_agent_connect - connect to the mediator's agent socket
 *
 * The mediator asks the last agent that connected; it greets it, and
 * clip_agent_receive() then returns CLIP_AGENT_READY.
 *
 * @param ret where the agent is stored; untouched on failure
 * @param path the socket, or NULL for $CLIP_AGENT_SOCKET, then
 *	  CLIP_AGENT_SOCKET
 * @param opts optional
 * @param reterr optional
 * @return 0, or -EINVAL, -ENAMETOOLONG, -ENOENT, -ECONNREFUSED, -EACCES,
 *	   -ENOMEM.
 * @since 0.1
 */
int clip_agent_connect(struct clip_agent **ret, const char *path,
		       const struct clip_agent_opts *opts, struct clip_error **reterr);

/** @since 0.1 */
struct clip_agent *clip_agent_ref(struct clip_agent *agent);
/**
 * clip_agent_unref - drop a reference; the last one closes the connection,
 * and the mediator denies every question still pending
 * @since 0.1
 */
struct clip_agent *clip_agent_unref(struct clip_agent *agent);

/**
 * clip_agent_get_fd - the fd to poll: readable when clip_agent_receive()
 * has something
 *
 * @return an fd owned by the agent, or -EINVAL.
 * @since 0.1
 */
int clip_agent_get_fd(struct clip_agent *agent);

/**
 * clip_agent_receive - the next thing the mediator says
 *
 * Questions the mediator says nothing of any more are ignored (an expiry
 * that crossed our answer). A message that breaks the protocol (a bad
 * field, a name that is no cage's, an oversized message, a descriptor, a
 * question id given twice, an unknown type) closes the connection: the
 * mediator denies what was pending, and every later call is -ECONNRESET.
 *
 * @param timeout_ms 0: do not wait (after poll() on clip_agent_get_fd()),
 *	  -1: wait as long as it takes
 * @param ret where the question is stored for CLIP_AGENT_QUESTION,
 *	  CLIP_AGENT_EXPIRED and CLIP_AGENT_WITHDRAWN (a new reference: unref
 *	  it), NULL otherwise; optional
 * @return CLIP_AGENT_NONE, CLIP_AGENT_READY, CLIP_AGENT_QUESTION,
 *	   CLIP_AGENT_EXPIRED, CLIP_AGENT_WITHDRAWN, or -EINVAL, -ECONNRESET
 *	   (the mediator went away, or we closed: every question is gone),
 *	   -EBADMSG (the mediator broke the protocol), -ENOMEM.
 * @since 0.1
 */
int clip_agent_receive(struct clip_agent *agent, int timeout_ms, struct clip_agent_question **ret,
		       struct clip_error **reterr);

/**
 * clip_agent_answer - answer a pending question
 *
 * @param allow nonzero: deliver; 0: refuse
 * @return 0, or -EINVAL (a question of another agent), -EALREADY
 *	   (answered already), -ETIMEDOUT (it expired), -ECONNRESET (it was
 *	   withdrawn, or the connection is gone).
 * @since 0.1
 */
int clip_agent_answer(struct clip_agent *agent, struct clip_agent_question *question, int allow,
		      struct clip_error **reterr);

/** @since 0.1 */
struct clip_agent_question *clip_agent_question_ref(struct clip_agent_question *question);
/** @since 0.1 */
struct clip_agent_question *clip_agent_question_unref(struct clip_agent_question *question);

/**
 * clip_agent_question_get_id - the mediator's id of the question, unique
 * among the pending ones
 * @since 0.1
 */
uint64_t clip_agent_question_get_id(const struct clip_agent_question *question);

/**
 * clip_agent_question_get_state - CLIP_AGENT_PENDING, _ANSWERED,
 * _TIMED_OUT or _GONE; -EINVAL
 * @since 0.1
 */
int clip_agent_question_get_state(const struct clip_agent_question *question);

/**
 * clip_agent_question_get_source - the cage that sends the document
 *
 * The cage names were checked (clip.cage(5): [a-z0-9_-]) and the levels
 * (printable ASCII, no space): they are shown as they are.
 *
 * @param level optional: where its level is stored (owned by the question)
 * @return the name, owned by the question; NULL for a NULL question.
 * @since 0.1
 */
const char *clip_agent_question_get_source(const struct clip_agent_question *question,
					   const char **level);
/** clip_agent_question_get_target - the cage it would go to; as _get_source() @since 0.1 */
const char *clip_agent_question_get_target(const struct clip_agent_question *question,
					   const char **level);

/** clip_agent_question_get_direction - CLIP_AGENT_UP, _DOWN, _SAME, _INCOMPARABLE; -EINVAL @since 0.1 */
int clip_agent_question_get_direction(const struct clip_agent_question *question);

/** clip_agent_question_get_flags - CLIP_AGENT_ENCRYPTED, _NAME_ESCAPED, _NOTE_ESCAPED @since 0.1 */
unsigned clip_agent_question_get_flags(const struct clip_agent_question *question);

/**
 * clip_agent_question_get_digest - what the mediator read, and delivers
 * on a yes
 *
 * @param size optional: the document's size in bytes
 * @param sha256 optional: 32 bytes, its SHA-256
 * @return 0, or -EINVAL.
 * @since 0.1
 */
int clip_agent_question_get_digest(const struct clip_agent_question *question, uint64_t *size,
				   uint8_t *sha256);

/**
 * clip_agent_question_get_name - the name hint, as the sending cage wrote it
 *
 * Untrusted: at most 1024 bytes, no NUL, not even UTF-8. Show the escaped
 * form unless you escape it yourself.
 *
 * @param escaped nonzero: escaped for display: \xNN for a byte that is not
 *	  UTF-8 and for the backslash, \u{XXXX} for a control, bidirectional,
 *	  invisible or look-alike (of '/' and '.') character, every run of
 *	  spaces one space; one line
 * @return a string owned by the question; NULL for a NULL question.
 * @since 0.1
 */
const char *clip_agent_question_get_name(const struct clip_agent_question *question, int escaped);
/** clip_agent_question_get_note - the requester's note (may be empty); as _get_name() @since 0.1 */
const char *clip_agent_question_get_note(const struct clip_agent_question *question, int escaped);

/**
 * clip_agent_question_get_deadline - when the mediator denies the question
 * unless answered: CLOCK_MONOTONIC, in milliseconds (the mediator's
 * timeout counted from when the question was received)
 *
 * @param timeout_ms optional: the timeout the mediator gave
 * @return the deadline, or 0 for a NULL question.
 * @since 0.1
 */
uint64_t clip_agent_question_get_deadline(const struct clip_agent_question *question,
					  uint32_t *timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
