/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one wire format between cages, the mediator and the confirmation
 * agent (doc/transfer-protocol.md, doc/confirm-protocol.md): versioned,
 * length-prefixed messages on SOCK_SEQPACKET UNIX sockets, a document as
 * exactly one fd (SCM_RIGHTS). Every length and count has a hard bound;
 * the decoder is strict (no trailing byte, no unknown type, no NUL inside
 * a string) and says what it rejects.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <clip/ctx.h>

#define PROTO_MAGIC 0x46584c43u /* "CLXF", little endian */
#define PROTO_VERSION 1
#define PROTO_HEADER_SIZE 12
/* The largest message, header included. */
#define PROTO_MSG_MAX 8192

/* Bounds of the fields (bytes, without a terminating NUL). */
#define PROTO_CAGE_MAX 64
#define PROTO_LEVEL_MAX 512
#define PROTO_NAME_MAX 1024
#define PROTO_NOTE_MAX 1024
#define PROTO_TEXT_MAX 512

enum proto_type {
	PROTO_REQUEST = 1, /* client -> mediator, one fd */
	PROTO_REPLY = 2, /* mediator -> client */
	PROTO_PROMPT = 3, /* mediator -> agent */
	PROTO_ANSWER = 4, /* agent -> mediator */
	PROTO_HELLO = 5, /* mediator -> agent: you are the one asked now */
	PROTO_EXPIRED = 6, /* mediator -> agent: a question takes no answer any more */
	PROTO_FEATURES = 7, /* agent -> mediator: the messages it understands */
	PROTO_REPORT = 8, /* client -> mediator: something the user should see; no answer */
	_PROTO_TYPE_MAX,
};

/* Why a question expired (PROTO_EXPIRED). */
enum proto_expiry {
	PROTO_EXPIRY_TIMEOUT = 0, /* no answer within the timeout: denied */
	PROTO_EXPIRY_WITHDRAWN = 1, /* the mediator stops: nothing is delivered */
	_PROTO_EXPIRY_MAX,
};

/*
 * What an agent asks for (PROTO_FEATURES): a message type the mediator
 * sends only to an agent that said it understands it, so that an agent
 * written before it never receives a type it does not know.
 */
#define PROTO_FEATURE_EXPIRED (UINT32_C(1) << 0)

/* What a cage reports (PROTO_REPORT): the values of CLIP_TRANSFER_REPORT_*. */
enum proto_report_kind {
	PROTO_REPORT_EXEC_REFUSED = 1, /* a file refused as code under W^X */
	_PROTO_REPORT_MAX,
};

/* Outcomes of a transfer, as the client sees them. */
enum proto_status {
	PROTO_STATUS_DELIVERED = 0,
	PROTO_STATUS_DENIED_POLICY = 1,
	PROTO_STATUS_DENIED_USER = 2,
	PROTO_STATUS_FAILED = 3,
	_PROTO_STATUS_MAX,
};

enum proto_direction {
	PROTO_DIRECTION_UP = 0,
	PROTO_DIRECTION_DOWN = 1,
	PROTO_DIRECTION_SAME = 2,
	PROTO_DIRECTION_INCOMPARABLE = 3,
	_PROTO_DIRECTION_MAX,
};

/* A decoded string: points into the message buffer, NUL-terminated copy. */
struct proto_request {
	uint64_t id;
	char target[PROTO_CAGE_MAX + 1];
	char name[PROTO_NAME_MAX + 1];
	char note[PROTO_NOTE_MAX + 1];
};

struct proto_reply {
	uint64_t id;
	uint8_t status;
	uint32_t error; /* a positive errno when FAILED, else 0 */
	uint64_t size;
	uint8_t sha256[32];
	uint8_t encrypted;
	char name[PROTO_NAME_MAX + 1]; /* the name in the target inbox */
	char message[PROTO_TEXT_MAX + 1];
};

struct proto_prompt {
	uint64_t id;
	uint32_t timeout_ms;
	uint8_t direction;
	uint8_t encrypt;
	uint64_t size;
	uint8_t sha256[32];
	char source[PROTO_CAGE_MAX + 1];
	char source_level[PROTO_LEVEL_MAX + 1];
	char target[PROTO_CAGE_MAX + 1];
	char target_level[PROTO_LEVEL_MAX + 1];
	char name[PROTO_NAME_MAX + 1];
	char note[PROTO_NOTE_MAX + 1];
};

struct proto_answer {
	uint64_t id;
	uint8_t allow;
};

struct proto_expired {
	uint64_t id; /* the prompt's */
	uint8_t reason; /* enum proto_expiry */
};

struct proto_features {
	uint32_t flags; /* PROTO_FEATURE_*; bits unknown to the mediator are ignored */
};

struct proto_report {
	uint8_t kind; /* enum proto_report_kind */
	uint32_t error; /* a positive errno, or 0 */
	char subject[PROTO_NAME_MAX + 1]; /* the file: any bytes but NUL */
	char text[PROTO_TEXT_MAX + 1]; /* why: UTF-8, no control character */
};

struct proto_msg {
	enum proto_type type;
	int fd; /* the passed fd for a request, -1 otherwise; owned */
	union {
		struct proto_request request;
		struct proto_reply reply;
		struct proto_prompt prompt;
		struct proto_answer answer;
		struct proto_expired expired;
		struct proto_features features;
		struct proto_report report;
	};
};

/*
 * Encode @msg into @buf (PROTO_MSG_MAX bytes). Returns the size, or
 * -E2BIG when a field is over its bound, -EINVAL for a bad value.
 */
int proto_encode(const struct proto_msg *msg, uint8_t *buf);

/*
 * Decode one message of @n bytes that came with @n_fds fds. Strict: a
 * wrong magic, version, type, length, fd count, a string over its bound
 * or holding a NUL, an unknown value or a trailing byte is -EBADMSG with
 * a message naming it. msg->fd is left at -1 (the caller owns the fds).
 */
int proto_decode(const uint8_t *untrusted_buf, size_t n, unsigned n_fds, struct proto_msg *msg,
		 struct clip_error **reterr);

/*
 * Receive and decode one message from a SOCK_SEQPACKET socket:
 * MSG_CMSG_CLOEXEC, truncated data or control data refused, more than one
 * fd refused (all of them closed). 0 and msg->fd set (or -1), -ECONNRESET
 * at end of stream, -EAGAIN when nothing is there, -EBADMSG, -errno.
 */
int proto_recv(int sock, struct proto_msg *msg, struct clip_error **reterr);

/*
 * proto_recv(), where each fd it refuses is given to @drop_fd instead of
 * closed: a close can wait (a lingering socket), and the mediator's loop
 * must not (doc/transfer.md, "Descriptors from a cage").
 */
int proto_recv_with(int sock, struct proto_msg *msg, void (*drop_fd)(int fd, void *userdata),
		    void *userdata, struct clip_error **reterr);

/* Send @n bytes as one message, with @fd when >= 0 (SCM_RIGHTS). 0 or -errno. */
int proto_send_raw(int sock, const void *buf, size_t n, int fd);

/* Encode and send @msg, with msg->fd when >= 0. 0 or -errno. */
int proto_send(int sock, const struct proto_msg *msg, struct clip_error **reterr);

/* Release what a message owns (its fd). */
void proto_msg_done(struct proto_msg *msg);

/*
 * Make the close of @fd, which a peer sent, not wait: a socket resets
 * instead of lingering; a UNIX socket is shut down and what is queued in
 * it taken out, each descriptor defused and closed (3 levels deep, 256
 * messages each). Uses getsockopt, setsockopt (SO_LINGER), shutdown,
 * recvmsg and close only.
 */
void proto_fd_defuse(int fd);

/* A cage name: 1 to PROTO_CAGE_MAX of [a-z0-9_-], not starting with '-', '_'
 * or "s<digit>" (which reads as a level). */
bool proto_cage_name_valid(const char *s, size_t n);

/* "no answer in time", "withdrawn by the mediator". */
const char *proto_expiry_name(unsigned reason);
/* "up", "down", "same", "incomparable". */
const char *proto_direction_name(unsigned direction);
const char *proto_status_name(unsigned status);
