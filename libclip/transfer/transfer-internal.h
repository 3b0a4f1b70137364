/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * transfer: moving a document from one cage to another through the core,
 * and only through it: the wire protocol (proto.h), the client, the
 * mediator and its policy, delivery into an inbox (content filters,
 * envelopes) and the tamper-evident audit log.
 *
 * Calls: base cage keys label level tpm
 */
#pragma once

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <clip/ctx.h>
#include <clip/level.h>
#include <clip/mediator.h>

#include "base/crypto.h"
#include "base/ctx-internal.h"
#include "base/util.h"
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
 * deliver.c receives and commits, deliver-filter.c runs a rule's content
 * filter, deliver-envelope.c seals and opens envelopes.
 */

/* A delivered name: at most this many bytes (a suffix on collision fits). */
#define DELIVER_NAME_MAX 200
/* The most of a document (or of an envelope) read at once. */
#define DELIVER_CHUNK (1024 * 1024)
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
 * than @max_size bytes, never a file whose size, mtime or ctime changes
 * while read) into an unnamed file in @inbox_fd, hashing what is
 * delivered in one pass (doc/transfer.md), its holes kept (hashed as
 * zeros, not written). With @key, what is written is the envelope
 * of the content under that key, @aad bound to it, holes included. -EMEDIUMTYPE (not a
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

/*
 * deliver_commit() without its last step, the inbox's fsync: the caller
 * syncs the inbox once for a batch of documents (mediator.c), and answers
 * none before that.
 */
int deliver_link(struct clip_ctx *ctx, struct delivery *d, int inbox_fd, const char *untrusted_name,
		 const struct clip_level *level, unsigned label_flags,
		 char ret_name[DELIVER_NAME_MAX + 1], struct clip_error **reterr);

/*
 * The audit log's group commit (audit.c): a record written, not synced
 * (synced at once when the log is bound to the TPM's counter), and the
 * sync of every record written since the last one, with the anchor. When
 * the sync fails, the unsynced records are cut off and the chain goes on
 * from the last durable one.
 *
 * Whoever commits (the mediator's flush, a role's request, an export) may
 * cut the records of another: audit_cuts() counts the cuts, so that a
 * writer that noted it with its record knows, at its own commit, whether
 * its record may have been cut since (mediator_flush()).
 */
struct clip_audit_entry;
int audit_append_deferred(struct clip_audit *audit, const struct clip_audit_entry *e,
			  struct clip_error **reterr);
int audit_commit(struct clip_audit *audit, struct clip_error **reterr);
uint64_t audit_cuts(const struct clip_audit *audit);

/*
 * What @fd is when it is not a regular file, for a message: "a directory",
 * "a TCP socket", "an epoll instance", "a pidfd"... (@mode: its st_mode),
 * or NULL for a regular file. Waits on nothing (mediator-fd.c).
 */
const char *transfer_fd_kind(int fd, unsigned mode);

/* Drop what was received: nothing is left behind. */
void deliver_abort(struct delivery *d);

/*
 * A safe file name from a cage's hint: valid UTF-8 with no '/', control,
 * bidirectional or invisible formatting character (each replaced by '_'),
 * no leading dot, at most DELIVER_NAME_MAX - 8 bytes cut on a character
 * boundary; "document" when nothing is left.
 */
void deliver_sanitize_name(const char *untrusted_name, char out[DELIVER_NAME_MAX + 1]);

/* Write @n bytes into the target inbox: 0, or -ENOSPC, -EDQUOT (it is full), -errno. */
int deliver_write_out(int fd, const void *p, size_t n, struct clip_error **reterr);

/*
 * Start an envelope in @out_fd: its header (magic, random nonce) written,
 * @c set to encrypt under @key with the header and @aad authenticated.
 * What the caller encrypts with @c next is the envelope's body.
 */
int envelope_begin(EVP_CIPHER_CTX *c, const uint8_t *key, const char *aad, int out_fd,
		   struct clip_error **reterr);

/* Finish the envelope @c writes into @out_fd: the tag. 0, -EIO, or deliver_write_out()'s errors. */
int envelope_end(EVP_CIPHER_CTX *c, int out_fd, struct clip_error **reterr);

/* The per-target envelope key (HMAC of the envelope key and @target). */
int envelope_key(struct clip_ctx *ctx, const char *target, uint8_t out[CLIP_KEY_SIZE],
		 struct clip_error **reterr);

/*
 * Open an envelope (@n bytes at @in) into @out (at least @n bytes).
 * Returns the plaintext size, or -EBADMSG when it does not verify.
 */
int envelope_open(const uint8_t key[CLIP_KEY_SIZE], const char *aad, const uint8_t *in, size_t n,
		  uint8_t *out);

/*
 * The mediator (doc/transfer.md): its core, cages, connections and
 * dispatch (mediator.c), the deliveries its worker threads read
 * (mediator-job.c), the rate of requests (mediator-rate.c), the
 * confirmation agent it asks (mediator-agent.c), and the descriptors a
 * cage hands it, checked and closed off the loop (mediator-fd.c).
 */

#define CAGES_MAX 256
/* What a filter's cage logs in a worker, replayed on the loop's thread. */
#define JOB_LOG_MAX 8

enum source_kind {
	SOURCE_CAGE_LISTEN,
	SOURCE_CONN,
	SOURCE_AGENT_LISTEN,
	SOURCE_AGENT,
	SOURCE_TIMER,
	SOURCE_DONE,
	SOURCE_FLUSH,
};

/* What epoll hands back: the first member of each watched object. */
struct source {
	enum source_kind kind;
	int fd;
};

struct cage {
	struct source src; /* the listening socket */
	char name[PROTO_CAGE_MAX + 1];
	struct clip_level *level;
	char *level_text;
	int inbox_fd;
	bool check_uid;
	uid_t uid;
	unsigned n_running; /* its documents being read */
	unsigned n_pending; /* its questions waiting for the user */
	unsigned n_conns; /* its connections (at most CONNS_PER_CAGE_MAX) */
	/* The token bucket of its requests (doc/transfer.md, "Rate"). */
	uint32_t rate_per_s, rate_burst;
	struct token_bucket rate;
	uint64_t limit_audited_ns; /* the last record of a refusal; 0: none */
	uint64_t limit_suppressed; /* refusals since, not recorded */
	/* The bucket of its reports (PROTO_REPORT), and those over it not shown yet. */
	struct token_bucket reports;
	uint64_t reports_suppressed;
	/* Bytes of its documents waiting for the user, as source and as target. */
	uint64_t pending_out, pending_in;
	bool inbox_dirty; /* a document linked in, the inbox not yet synced (mediator_flush()) */
};

struct conn {
	struct source src;
	struct cage *cage;
	struct ucred cred;
	unsigned n_pending;
	unsigned n_jobs; /* its deliveries waiting or running */
	bool paused; /* not watched: n_jobs reached JOBS_PER_CONN */
	struct conn *next;
};

enum job_state {
	JOB_QUEUED,
	JOB_RUNNING, /* counted in n_running until mediator_handle_done() */
};

/*
 * One delivery whose document is read off the loop. The worker reads the
 * fields above "results" and writes the results; the loop's thread does
 * not touch either while the worker runs (except `cancelled`).
 */
struct job {
	/* The worker's inputs. */
	int src_fd; /* the document; closed by the loop's thread, after join */
	int inbox_fd; /* the target cage's, owned by the cage */
	int done_fd; /* where the worker writes its job's address */
	uint64_t max_size;
	bool encrypt;
	uint8_t key[CLIP_KEY_SIZE];
	char aad[PROTO_CAGE_MAX + 1];
	const char *filter; /* in the policy, which outlives the job */
	/* The filter's cage needs a context, and the loop's is not thread-safe:
	 * a private one (same state directory), whose log lines are kept here. */
	struct clip_ctx *filter_ctx;
	struct {
		int priority;
		char text[256];
	} log[JOB_LOG_MAX];
	unsigned n_log;
	atomic_bool cancelled;
	/* The worker's results. */
	int r;
	struct delivery d;
	struct clip_error *error;
	/* The loop's. */
	enum job_state state;
	pthread_t thread;
	bool thread_started;
	uint64_t client_id;
	struct conn *conn; /* NULL once the requester left */
	struct cage *source, *target;
	const struct policy_rule *rule;
	struct clip_policy *policy; /* a reference: @rule is in it, whatever replaces it */
	enum proto_direction direction;
	char by[300];
	char name[PROTO_NAME_MAX + 1];
	char note[PROTO_NOTE_MAX + 1];
	struct job *next;
};

struct pending {
	struct source src; /* the timer */
	uint64_t id; /* the question's id, random */
	uint64_t client_id;
	struct conn *conn; /* NULL once the requester left */
	struct cage *source, *target;
	const struct policy_rule *rule;
	struct clip_policy *policy; /* a reference: @rule is in it, whatever replaces it */
	enum proto_direction direction;
	struct delivery d;
	uint64_t charged; /* counted in source->pending_out and target->pending_in */
	char name[PROTO_NAME_MAX + 1];
	struct pending *next;
};

struct clip_mediator {
	unsigned n_ref;
	struct clip_ctx *ctx;
	struct clip_policy *policy;
	struct clip_audit *audit;
	struct clip_mediator_opts opts;
	int epfd;
	struct cage *cages[CAGES_MAX];
	size_t n_cages;
	struct source agent_listen;
	struct source agent;
	uint32_t agent_features; /* PROTO_FEATURE_* the agent asked for */
	struct conn *conns;
	size_t n_conns;
	struct pending *pending;
	size_t n_pending;
	struct job *jobs; /* in arrival order */
	size_t n_jobs, n_running;
	struct source done; /* the read end of the workers' pipe */
	int done_write;
	pid_t pid; /* the creator: a forked child has no worker to join */
	struct closer *closer; /* the closing threads (mediator-fd.c); NULL until needed */
	struct clip_feed *feed; /* what the user should see (feed.c), or NULL */
	/*
	 * Group commit (mediator.c, "Group commit"): outcomes decided and
	 * recorded, not yet synced, linked nor answered, in order; and an
	 * timerfd, armed while any is waiting, that flushes them.
	 */
	struct finished *finished, **finished_tail;
	size_t n_finished;
	struct source flush;
	bool flush_armed;
};

/* The outcome of one request, as answered and audited. */
struct outcome {
	enum proto_status status;
	int error;
	const char *decision;
	char by[300];
	char reason[PROTO_TEXT_MAX + 1];
	char delivered[DELIVER_NAME_MAX + 1];
};

/* A transfer decided and recorded, waiting for the group commit (mediator_flush()). */
struct finished {
	struct finished *next;
	struct conn *conn; /* NULL once closed (mediator_conn_close()) */
	uint64_t client_id;
	struct cage *source, *target;
	char *target_name, *name;
	struct delivery d;
	bool has_d, deliver;
	struct outcome o;
	uint64_t audit_cuts; /* audit_cuts() once its record was written */
};

/* Watch @s on the mediator's epoll fd: 0 or -errno. */
int mediator_watch(struct clip_mediator *m, struct source *s);
/* Stop watching @s and close its fd, if any. */
void mediator_unwatch_close(struct clip_mediator *m, struct source *s);
/* Forget @c: its questions and jobs go on, answered to no one. */
void mediator_conn_close(struct clip_mediator *m, struct conn *c);
/* 1 when @fd is a listening SOCK_SEQPACKET socket, 0 when not, or -errno. */
int mediator_is_listening_seqpacket(int fd);
/* Accept a peer on @listen_fd with its credentials: the fd or -errno. */
int mediator_accept_peer(int listen_fd, struct ucred *cred);
/* The cage named @name, or NULL. */
struct cage *mediator_find_cage(struct clip_mediator *m, const char *name);

/*
 * Append one record to the audit log, synced with the next flush of the
 * finished transfers (mediator_flush()), before any answer: 0, or -errno
 * (logged), and the transfer is refused.
 */
int mediator_audit_record(struct clip_mediator *m, const char *event, const struct cage *source,
			  const struct cage *target, const char *target_name, const char *name,
			  const struct delivery *d, const char *decision, const char *by,
			  const char *reason);
/* Sync, link and answer every finished transfer (mediator.c, "Group commit"). */
void mediator_flush(struct clip_mediator *m);
void mediator_outcome_set(struct outcome *o, enum proto_status status, int error,
			  const char *decision, const char *by, const char *reason);
/* A failure @r, said with @error's message or strerror(), after @what. */
void mediator_outcome_error(struct outcome *o, int r, struct clip_error *error, const char *what);
/* Record the decision, then (only then) link the document in, and answer. */
void mediator_finish(struct clip_mediator *m, struct conn *c, uint64_t client_id,
		     struct cage *source, struct cage *target, const char *target_name,
		     const char *name, struct delivery *d, struct outcome *o);

/* Queue the delivery of @msg's document; takes the fd. */
void mediator_job_submit(struct clip_mediator *m, struct conn *c, struct proto_msg *msg,
			 struct cage *target, const struct policy_rule *rule,
			 enum proto_direction dir, const char *by, const uint8_t *key);
/* A worker is done: the rest happens here, on the loop's thread. */
void mediator_handle_done(struct clip_mediator *m);
/* Teardown: stop the workers, drop what they read (unnamed: it vanishes). */
void mediator_jobs_stop(struct clip_mediator *m);

/*
 * Whether the cage of @c may send one more message now; when not, @reason
 * (@size bytes) says why, and the refusal is audited at most once per window.
 */
bool mediator_rate_check(struct clip_mediator *m, struct conn *c, const struct proto_request *q,
			 char *reason, size_t size);
/* Record the refusals not recorded yet (at most one record per window). */
void mediator_rate_flush(struct clip_mediator *m, struct cage *c);

/* Put @p to the agent, with a timer of the confirmation timeout: 0 or -errno. */
int mediator_ask(struct clip_mediator *m, struct pending *p, const char *note);
/* Drop a question: its timer, its document, its count on the connection. */
void mediator_pending_free(struct clip_mediator *m, struct pending *p);
void mediator_agent_listen(struct clip_mediator *m);
void mediator_agent_handle(struct clip_mediator *m);
/* No answer in time: a denial, and the agent told so. */
void mediator_handle_timer(struct clip_mediator *m, struct pending *p);
/* Teardown: tell the agent that every pending question is withdrawn, answer each requester no. */
void mediator_agent_withdraw_all(struct clip_mediator *m);

/*
 * Whether @fd, a document from a cage, is a regular file, without waiting
 * on it: 0, or -EMEDIUMTYPE (-EBADF) with @why (@size bytes) naming what
 * it is ("the document is an epoll instance: only regular files...").
 */
int mediator_doc_check(int fd, char *why, size_t size);
/*
 * Close @fd, which a cage handed us (a document, a connection), off the
 * loop: a closing thread defuses it (a socket resets instead of lingering)
 * and closes it.
 */
void mediator_close_untrusted(struct clip_mediator *m, int fd);
/* Teardown: close what is queued, join the closing threads. */
void mediator_closer_stop(struct clip_mediator *m);

/*
 * Connect a SOCK_SEQPACKET socket (close-on-exec) to @path, or when NULL
 * to $@env, then @fallback: the client's and the agent's (agent.c) way to
 * the mediator. 0 or -errno with a message naming the path.
 */
int transfer_connect_to(int *ret, const char *path, const char *env, const char *fallback,
			int flags, struct clip_error **reterr);

/* Push a CLIP_FEED_* event into the mediator's feed, when it has one (feed.c). */
void mediator_feed(struct clip_mediator *m, int type, const char *cage, const char *target,
		   const char *name, const char *text);

/* audit-sign.c: the anchor's signature. */
#define AUDIT_SIG_LINE_MAX 256
/* A line of a trail stream: a record of at most 16 fields of 4096 bytes, and a syslog prefix. */
#define AUDIT_LINE_MAX_PUBLIC (17 * 4096)
/* "s1 count=N last=HASH key=KEYID sig=SIG" into @out: its length, or -errno. */
int audit_sign_line(struct clip_ctx *ctx, uint64_t count, const uint8_t last[32], char *out,
		    size_t max, struct clip_error **reterr);
