/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * transfer: moving a document from one cage to another through the core,
 * and only through it: the wire protocol (proto.h), the client, the
 * mediator and its policy, delivery into an inbox (content filters,
 * envelopes) and the tamper-evident audit log.
 *
 * Calls: base keys
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <clip/ctx.h>
#include <clip/level.h>

#include "base/ctx-internal.h"
#include "proto.h"

/*
 * The transfer policy (clip.policy(5)): first match wins, default deny, a
 * downgrade is never `allow`. Parsed by clip_policy_parse() (policy.c).
 */

#define POLICY_TEXT_MAX (1024 * 1024)
#define POLICY_LINE_MAX 4096
#define POLICY_RULES_MAX 4096
/* The largest document any rule may let through: 1 TiB. */
#define POLICY_SIZE_MAX (UINT64_C(1) << 40)

enum policy_action {
	POLICY_DENY,
	POLICY_ALLOW,
	POLICY_ASK,
};

enum endpoint_kind {
	ENDPOINT_ANY,
	ENDPOINT_NAME,
	ENDPOINT_LEVEL,
};

struct policy_endpoint {
	enum endpoint_kind kind;
	char name[PROTO_CAGE_MAX + 1];
	struct clip_level *level;
};

struct policy_rule {
	unsigned line;
	struct policy_endpoint source, target;
	enum policy_action action;
	uint64_t max_size; /* 0: no max-size option */
	int direction; /* enum proto_direction, or -1 for any */
	char *filter;
	bool encrypt;
};

struct clip_policy {
	unsigned n_ref;
	char *origin;
	struct policy_rule *rules;
	size_t n_rules;
};

/* The direction of a transfer from @source to @target. */
enum proto_direction policy_direction(const struct clip_level *source,
				      const struct clip_level *target);

/*
 * The first rule matching a transfer, or NULL: the default, deny. A rule
 * naming @any never matches an incomparable pair.
 */
const struct policy_rule *policy_match(const struct clip_policy *policy, const char *source,
				       const struct clip_level *source_level, const char *target,
				       const struct clip_level *target_level);

/*
 * Check that no allow rule lets any of the @n cages (names and levels)
 * send to another whose level does not dominate its own. -EINVAL with a
 * message naming the rule's file and line.
 */
int policy_check_cages(const struct clip_policy *policy, const char *const *names,
		       const struct clip_level *const *levels, size_t n,
		       struct clip_error **reterr);

const char *policy_action_name(enum policy_action action);

/*
 * Delivery into a target inbox: the content is read from the passed fd
 * only, hashed (and encrypted when asked) in the same pass, written to an
 * unnamed file in the inbox, and linked under a sanitised unique name only
 * once complete, labelled and on disk. Nothing partial is ever visible.
 */

/* A delivered name: at most this many bytes (a suffix on collision fits). */
#define DELIVER_NAME_MAX 200
/* The AES-256-GCM envelope (doc/transfer.md). */
#define ENVELOPE_MAGIC "CLIPENV1"
#define ENVELOPE_MAGIC_SIZE 8
#define ENVELOPE_NONCE_SIZE 12
#define ENVELOPE_TAG_SIZE 16

struct delivery {
	int fd; /* the unnamed file in the inbox; -1 when none */
	uint64_t size; /* bytes read from the source */
	uint8_t sha256[32]; /* of what was read (the plaintext) */
	bool encrypted;
};

#define DELIVERY_INIT \
	{ \
		.fd = -1 \
	}

/*
 * Read the regular file @untrusted_src (never anything else, never more
 * than @max_size bytes, never a file that changes while read) into an
 * unnamed file in @inbox_fd, hashing what is delivered (doc/transfer.md:
 * copy_file_range() and a hashing thread, or one pass in user space). With @key, what is written is the envelope
 * of the content under that key, @aad bound to it. -EMEDIUMTYPE (not a
 * regular file), -EBADF (not readable), -EFBIG (over @max_size), -EBUSY
 * (changed while read), -ENOSPC, -EDQUOT, -EIO...
 */
int deliver_receive(int inbox_fd, int untrusted_src, uint64_t max_size,
		    const uint8_t key[CLIP_KEY_SIZE], const char *aad, struct delivery *d,
		    struct clip_error **reterr);

/* The bounds of a content filter's cage. */
struct filter_limits {
	unsigned timeout_ms; /* wall time, then the whole cage is killed */
	uint64_t memory_max; /* bytes */
	uint64_t tasks_max;
};

#define FILTER_LIMITS_DEFAULT \
	{ \
		.timeout_ms = 30000, .memory_max = 256ull << 20, .tasks_max = 32 \
	}

/*
 * Run @program (absolute path) on the received content (not encrypted) in
 * a cage of its own (doc/transfer.md "Content filters"): its stdin a new
 * read-only descriptor of the content, its stdout and stderr a pipe whose
 * first line is quoted as the reason, nothing else open; no network,
 * a read-only root, no capability, the default seccomp filter, W^X, the
 * limits of FILTER_LIMITS_DEFAULT. 0 when it exits 0; -EPERM when it
 * rejects the content (another exit status, killed, over time); -EIO
 * when it cannot run, or its cage cannot start or cannot be bounded
 * (never run unconfined).
 */
int deliver_filter(struct clip_ctx *ctx, struct delivery *d, const char *program,
		   struct clip_error **reterr);

/* deliver_filter() with other limits (tests). */
int deliver_filter_with(struct clip_ctx *ctx, struct delivery *d, const char *program,
			const struct filter_limits *limits, struct clip_error **reterr);

/*
 * Label the file with @level, make it the group's of the inbox, and link it
 * under a sanitised unique name derived from @untrusted_name, stored in
 * @ret_name. Closes d->fd.
 */
int deliver_commit(struct clip_ctx *ctx, struct delivery *d, int inbox_fd,
		   const char *untrusted_name, const struct clip_level *level, unsigned label_flags,
		   char ret_name[DELIVER_NAME_MAX + 1], struct clip_error **reterr);

/* Drop what was received: nothing is left behind. */
void deliver_abort(struct delivery *d);

/*
 * A safe file name from a cage's hint: valid UTF-8 with no '/', control,
 * bidirectional or invisible formatting character (each replaced by '_'),
 * no leading dot, at most DELIVER_NAME_MAX - 8 bytes cut on a character
 * boundary; "document" when nothing is left.
 */
void deliver_sanitize_name(const char *untrusted_name, char out[DELIVER_NAME_MAX + 1]);

/* The per-target envelope key (HMAC of the envelope key and @target). */
int envelope_key(struct clip_ctx *ctx, const char *target, uint8_t out[CLIP_KEY_SIZE],
		 struct clip_error **reterr);

/*
 * Open an envelope (@n bytes at @in) into @out (at least @n bytes).
 * Returns the plaintext size, or -EBADMSG when it does not verify.
 */
int envelope_open(const uint8_t key[CLIP_KEY_SIZE], const char *aad, const uint8_t *in, size_t n,
		  uint8_t *out);
