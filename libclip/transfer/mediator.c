/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The mediator; doc/transfer.md explains it. One epoll fd holds the cage
 * sockets, their connections, the agent socket and connection, a timerfd
 * per question to the user, and the pipe on which worker threads say that
 * a document has been read.
 *
 * Threads: everything runs on the thread that calls
 * clip_mediator_dispatch(), except the copy of a document (and its filter),
 * which a worker thread per delivery does. A worker touches only its job:
 * the fds and buffers in it, never the context, the audit log, the log or
 * a reference count. Its inputs are written before pthread_create() and
 * its results read after pthread_join(); the pipe only says which job.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <clip/audit.h>
#include <clip/feed.h>
#include <clip/label.h>
#include <clip/mediator.h>

#include "base/macro.h"
#include "base/error.h"
#include "base/log.h"
#include "base/test-hooks.h"
#include "base/utf8.h"
#include "proto.h"
#include "transfer-internal.h"
#include "base/util.h"
#include "base/test-hooks.h"

#define CONNS_MAX 1024
/*
 * Per cage: what clipd's front of a cage keeps open at most (its
 * FRONT_CONNS_MAX), so that a cage, or a front taken over, that hands up
 * connections without end cannot take the others' share of CONNS_MAX.
 */
#define CONNS_PER_CAGE_MAX 128
#define DEFAULT_TIMEOUT_MS 60000
#define DEFAULT_MAX_SIZE (UINT64_C(4) << 30)
#define DEFAULT_RATE_PER_S 20
#define DEFAULT_RATE_BURST 100
/* Reports of a cage recorded and shown: a burst, then one a second; the rest counted. */
#define REPORT_PER_S 1
#define REPORT_BURST 10
/* The first version of struct clip_mediator_opts ends after label_flags. */
#define MEDIATOR_OPTS_SIZE_V1 (offsetof(struct clip_mediator_opts, label_flags) + sizeof(unsigned))
/* Before the budgets the struct was 32 bytes (rate_burst, then padding): they come after. */
_Static_assert(offsetof(struct clip_mediator_opts, pending_max_per_target) == 32,
	       "the pending budgets are past the end of the struct before them");
/* The first version of struct clip_mediator_cage ends after uid. */
#define MEDIATOR_CAGE_SIZE_V1 (offsetof(struct clip_mediator_cage, uid) + sizeof(uint32_t))

int
mediator_watch(struct clip_mediator *m, struct source *s)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = s };

	return epoll_ctl(m->epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0 ? -errno : 0;
}

void
mediator_unwatch_close(struct clip_mediator *m, struct source *s)
{
	if (s->fd < 0)
		return;
	(void)epoll_ctl(m->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	s->fd = -1;
}

void
mediator_conn_close(struct clip_mediator *m, struct conn *c)
{
	for (struct pending *p = m->pending; p; p = p->next)
		if (p->conn == c)
			p->conn = NULL;
	for (struct job *j = m->jobs; j; j = j->next)
		if (j->conn == c)
			j->conn = NULL;
	for (struct finished *f = m->finished; f; f = f->next)
		if (f->conn == c)
			f->conn = NULL;
	for (struct conn **pp = &m->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			m->n_conns--;
			c->cage->n_conns--;
			break;
		}
	/* Its queue may hold documents: closed off the loop, as they are. */
	(void)epoll_ctl(m->epfd, EPOLL_CTL_DEL, c->src.fd, NULL);
	mediator_close_untrusted(m, c->src.fd);
	free(c);
}

static struct clip_mediator *
mediator_free(struct clip_mediator *m)
{
	/* What was decided is recorded, delivered and answered, as it would have been. */
	if (m->pid == getpid())
		mediator_flush(m);
	mediator_jobs_stop(m);
	for (size_t i = 0; i < m->n_cages; i++)
		mediator_rate_flush(m, m->cages[i]);
	mediator_agent_withdraw_all(m);
	while (m->pending) {
		struct pending *p = m->pending;

		m->pending = p->next;
		mediator_pending_free(m, p);
	}
	/* The questions withdrawn above are answered too. */
	if (m->pid == getpid())
		mediator_flush(m);
	while (m->conns)
		mediator_conn_close(m, m->conns);
	mediator_closer_stop(m);
	clip_feed_unref(m->feed);
	for (size_t i = 0; i < m->n_cages; i++) {
		struct cage *c = m->cages[i];

		mediator_unwatch_close(m, &c->src);
		if (c->inbox_fd >= 0)
			close(c->inbox_fd);
		clip_level_unref(c->level);
		free(c->level_text);
		free(c);
	}
	mediator_unwatch_close(m, &m->agent);
	mediator_unwatch_close(m, &m->agent_listen);
	mediator_unwatch_close(m, &m->done);
	mediator_unwatch_close(m, &m->flush);
	if (m->done_write >= 0)
		close(m->done_write);
	if (m->epfd >= 0)
		close(m->epfd);
	clip_audit_unref(m->audit);
	clip_policy_unref(m->policy);
	clip_ctx_unref(m->ctx);
	free(m);
	return NULL;
}

DEFINE_UNREF_CLEANUP(struct clip_mediator, mediator_free)

static int
mediator_new(struct clip_mediator **ret, struct clip_ctx *ctx, struct clip_policy *policy,
	     struct clip_audit *audit, const struct clip_mediator_opts *opts,
	     struct clip_error **reterr)
{
	_cleanup_(mediator_freep) struct clip_mediator *m = NULL;
	int r;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->n_ref = 1;
	m->agent_listen = (struct source){ SOURCE_AGENT_LISTEN, -1 };
	m->agent = (struct source){ SOURCE_AGENT, -1 };
	m->done = (struct source){ SOURCE_DONE, -1 };
	m->flush = (struct source){ SOURCE_FLUSH, -1 };
	m->finished_tail = &m->finished;
	m->done_write = -1;
	m->pid = getpid();
	m->ctx = clip_ctx_ref(ctx);
	m->policy = clip_policy_ref(policy);
	m->audit = clip_audit_ref(audit);
	m->opts = *opts;
	if (!m->opts.rate_per_s)
		m->opts.rate_per_s = DEFAULT_RATE_PER_S;
	if (!m->opts.rate_burst)
		m->opts.rate_burst = DEFAULT_RATE_BURST;
	if (!m->opts.confirm_timeout_ms)
		m->opts.confirm_timeout_ms = DEFAULT_TIMEOUT_MS;
	if (!m->opts.max_size)
		m->opts.max_size = DEFAULT_MAX_SIZE;
	/* One document of the largest size may always wait, two for one target. */
	if (!m->opts.pending_max_per_source)
		m->opts.pending_max_per_source = m->opts.max_size;
	if (!m->opts.pending_max_per_target)
		m->opts.pending_max_per_target =
			m->opts.max_size > UINT64_MAX / 2 ? UINT64_MAX : 2 * m->opts.max_size;
	m->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (m->epfd < 0)
		return error_set_errno(reterr, -errno, "cannot create an epoll fd");
	{
		int p[2];

		/* Only the read end is non-blocking: a worker's write never fails for room
		 * (a pipe holds thousands of addresses, at most JOBS_MAX are written). */
		if (pipe2(p, O_CLOEXEC) < 0)
			return error_set_errno(reterr, -errno, "cannot create a pipe");
		m->done.fd = p[0];
		m->done_write = p[1];
	}
	r = fcntl(m->done.fd, F_SETFL, O_NONBLOCK) < 0 ? -errno : mediator_watch(m, &m->done);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot watch the workers' pipe");
	m->flush.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	r = m->flush.fd < 0 ? -errno : mediator_watch(m, &m->flush);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot watch the group commit's timer");
	*ret = steal_ptr(m);
	return 0;
}

CLIP_EXPORT int
clip_mediator_new(struct clip_mediator **ret, struct clip_ctx *ctx, struct clip_policy *policy,
		  struct clip_audit *audit, const struct clip_mediator_opts *opts,
		  struct clip_error **reterr)
{
	struct clip_mediator_opts o = { .size = sizeof(o) };
	int r;

	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, ret && policy && audit, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, !opts || opts->size >= MEDIATOR_OPTS_SIZE_V1,
			      api_return(-EINVAL, reterr));

	if (opts) {
		r = struct_copy_in(&o, sizeof(o), opts, MEDIATOR_OPTS_SIZE_V1,
				   "struct clip_mediator_opts", reterr);
		if (r < 0)
			return api_return(r, reterr);
		/* A caller built against the first version does not have the rates:
		 * what follows its label_flags is its padding, not a rate. */
		if (opts->size < offsetof(struct clip_mediator_opts, rate_burst) + sizeof(uint32_t))
			o.rate_per_s = o.rate_burst = 0;
		/* The budgets come after the end of the struct before them (32 bytes): zero for its callers. */
	}
	ctx_assert_log_return(ctx, (o.label_flags & ~CLIP_LABEL_ROOTLESS) == 0,
			      api_return(-EINVAL, reterr));

	return api_return(mediator_new(ret, ctx, policy, audit, &o, reterr), reterr);
}

CLIP_EXPORT struct clip_mediator *
clip_mediator_ref(struct clip_mediator *m)
{
	if (m)
		m->n_ref++;
	return m;
}

CLIP_EXPORT struct clip_mediator *
clip_mediator_unref(struct clip_mediator *m)
{
	if (m && --m->n_ref == 0)
		mediator_free(m);
	return NULL;
}

static int
check_policy(struct clip_mediator *m, struct clip_error **reterr)
{
	const char *names[CAGES_MAX];
	const struct clip_level *levels[CAGES_MAX];

	for (size_t i = 0; i < m->n_cages; i++) {
		names[i] = m->cages[i]->name;
		levels[i] = m->cages[i]->level;
	}
	return policy_check_cages(m->policy, names, levels, m->n_cages, reterr);
}

CLIP_EXPORT int
clip_mediator_set_policy(struct clip_mediator *m, struct clip_policy *policy,
			 struct clip_error **reterr)
{
	struct clip_policy *old;
	int r;

	clip_assert_reterr(reterr);
	clip_assert_return(m, api_return(-EINVAL, reterr));
	ctx_assert_return_error(m->ctx, reterr);
	ctx_assert_log_return(m->ctx, policy, api_return(-EINVAL, reterr));

	/* Checked against the cages as the first was; refused, the old one stays. */
	old = m->policy;
	m->policy = policy;
	r = check_policy(m, reterr);
	if (r < 0) {
		m->policy = old;
		return api_return(r, reterr);
	}
	/* Jobs and questions in flight keep the rule that decided them, and its policy. */
	clip_policy_ref(policy);
	clip_policy_unref(old);
	return 0;
}

int
mediator_is_listening_seqpacket(int fd)
{
	int type = 0, listening = 0;
	socklen_t len = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
		return -errno;
	len = sizeof(listening);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0)
		return -errno;
	return type == SOCK_SEQPACKET && listening;
}

static int
add_cage(struct clip_mediator *m, const struct clip_mediator_cage *def, struct clip_error **reterr)
{
	_cleanup_free_ struct cage *c = NULL;
	struct stat st;
	int r;

	if (!proto_cage_name_valid(def->name, strlen(def->name)))
		return error_set(reterr, -EINVAL, "'%.64s' is not a valid cage name", def->name);
	for (size_t i = 0; i < m->n_cages; i++)
		if (strcmp(m->cages[i]->name, def->name) == 0)
			return error_set(reterr, -EEXIST, "a cage named '%s' exists", def->name);
	if (m->n_cages == CAGES_MAX)
		return error_set(reterr, -EINVAL, "more than %d cages", CAGES_MAX);
	if (fstat(def->inbox_fd, &st) < 0 || !S_ISDIR(st.st_mode))
		return error_set(reterr, -EBADF, "the inbox of cage '%s' is not a directory",
				 def->name);
	r = def->socket_fd < 0 ? 1 : mediator_is_listening_seqpacket(def->socket_fd);
	if (r <= 0)
		return error_set(reterr, -EBADF,
				 "the socket of cage '%s' is not a listening SOCK_SEQPACKET socket",
				 def->name);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	strcpy(c->name, def->name);
	c->check_uid = def->check_uid;
	c->uid = def->uid;
	c->rate_per_s = def->rate_per_s ? def->rate_per_s : m->opts.rate_per_s;
	c->rate_burst = def->rate_burst ? def->rate_burst : m->opts.rate_burst;
	token_bucket_init(&c->rate, c->rate_burst);
	token_bucket_init(&c->reports, REPORT_BURST);
	c->inbox_fd = c->src.fd = -1;
	c->src.kind = SOURCE_CAGE_LISTEN;
	if (clip_level_format(def->level, &c->level_text) < 0)
		return -ENOMEM;
	c->level = clip_level_ref((struct clip_level *)def->level);
	m->cages[m->n_cages++] = c;
	r = check_policy(m, reterr);
	if (r >= 0) {
		c->inbox_fd = fcntl(def->inbox_fd, F_DUPFD_CLOEXEC, 3);
		if (def->socket_fd >= 0)
			c->src.fd = fcntl(def->socket_fd, F_DUPFD_CLOEXEC, 3);
		r = c->inbox_fd < 0 || (def->socket_fd >= 0 && c->src.fd < 0) ? -errno : 0;
	}
	if (r >= 0 && c->src.fd >= 0 && fcntl(c->src.fd, F_SETFL, O_NONBLOCK) < 0)
		r = -errno;
	if (r >= 0 && c->src.fd >= 0)
		r = mediator_watch(m, &c->src);
	if (r < 0) {
		m->n_cages--;
		if (c->inbox_fd >= 0)
			close(c->inbox_fd);
		if (c->src.fd >= 0)
			close(c->src.fd);
		clip_level_unref(c->level);
		free(c->level_text);
		return error_set_errno(reterr, r, "cannot add cage '%s'", def->name);
	}
	log_info(m->ctx, "serving cage '%s' (%s)", c->name, c->level_text);
	c = NULL;
	return 0;
}

CLIP_EXPORT int
clip_mediator_add_cage(struct clip_mediator *m, const struct clip_mediator_cage *cage,
		       struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	clip_assert_return(m, api_return(-EINVAL, reterr));
	ctx_assert_return_error(m->ctx, reterr);
	ctx_assert_log_return(
		m->ctx, cage && cage->size >= MEDIATOR_CAGE_SIZE_V1 && cage->name && cage->level,
		api_return(-EINVAL, reterr));
	ctx_assert_log_return(m->ctx, cage->inbox_fd >= 0, api_return(-EBADF, reterr));

	{
		/* A caller built against the first version does not have the rate. */
		struct clip_mediator_cage def;
		int r = struct_copy_in(&def, sizeof(def), cage, MEDIATOR_CAGE_SIZE_V1,
				       "struct clip_mediator_cage", reterr);

		if (r < 0)
			return api_return(r, reterr);
		if (cage->size < offsetof(struct clip_mediator_cage, rate_burst) + sizeof(uint32_t))
			def.rate_per_s = def.rate_burst = 0;
		return api_return(add_cage(m, &def, reterr), reterr);
	}
}

CLIP_EXPORT int
clip_mediator_get_fd(struct clip_mediator *m)
{
	clip_assert_return(m, -EINVAL);
	ctx_assert_return(m->ctx, -ECHILD);
	return m->epfd;
}

static void
reply(struct clip_mediator *m, struct conn *c, uint64_t client_id, const struct outcome *o,
      const struct delivery *d)
{
	struct proto_msg msg = { .type = PROTO_REPLY, .fd = -1 };

	if (!c)
		return;
	msg.reply.id = client_id;
	msg.reply.status = (uint8_t)o->status;
	msg.reply.error = (uint32_t)(o->error < 0 ? -o->error : 0);
	if (d) {
		msg.reply.size = d->size;
		memcpy(msg.reply.sha256, d->sha256, 32);
		msg.reply.encrypted = d->encrypted;
	}
	snprintf(msg.reply.name, sizeof(msg.reply.name), "%s", o->delivered);
	snprintf(msg.reply.message, sizeof(msg.reply.message), "%s", o->reason);
	if (proto_send(c->src.fd, &msg, NULL) < 0) {
		/* A requester that does not read its answers is dropped. */
		log_notice(m->ctx, "cage '%s': cannot answer request %" PRIu64 ", closing",
			   c->cage->name, client_id);
		mediator_conn_close(m, c);
	}
}

/*
 * Group commit. A transfer's outcome is recorded (written, not synced) and
 * queued as finished; a timerfd then reads ready, so that the outcomes of
 * the transfers that finish together wait for one flush: one fdatasync of
 * the audit log (and one anchor), the documents linked, one fsync per
 * inbox, then the answers. So every record is durable before any document
 * of its batch is linked (the record first, then the document, as before),
 * and every document and record before any answer. With no document being
 * read the timer expires at once (after whatever epoll had ready); while
 * workers read documents it waits BATCH_WAIT_NS for them to join the batch
 * (each sync costs a disk round trip and, for the anchor, a new inode).
 * BATCH_MAX bounds a batch under a flood.
 */
#define BATCH_MAX 64
#define BATCH_WAIT_NS 1000000

static void
flush_soon(struct clip_mediator *m)
{
	bool wait = m->n_running > 0;
	struct itimerspec t = { .it_value.tv_nsec = wait ? BATCH_WAIT_NS : 1 };

	/* Armed already: sooner only when nothing is left to wait for. */
	if (m->flush_armed && wait)
		return;
	if (timerfd_settime(m->flush.fd, 0, &t, NULL) < 0)
		log_debug(m->ctx, "cannot arm the group commit's timer: %m");
	m->flush_armed = true;
}

int
mediator_audit_record(struct clip_mediator *m, const char *event, const struct cage *source,
		      const struct cage *target, const char *target_name, const char *name,
		      const struct delivery *d, const char *decision, const char *by,
		      const char *reason)
{
	_cleanup_(clip_error_freep) struct clip_error *error = NULL;
	struct clip_audit_entry e = {
		.size = sizeof(e),
		.event = event,
		.source = source->name,
		.source_level = source->level_text,
		.target = target ? target->name : target_name,
		.target_level = target ? target->level_text : NULL,
		.name = name,
		.length = d ? d->size : 0,
		.sha256 = d && d->fd >= 0 ? d->sha256 : NULL,
		.decision = decision,
		.decided_by = by,
		.reason = reason,
	};
	int r;

	/* Synced by the next flush, which an answer asks for (mediator_finish()). */
	r = audit_append_deferred(m->audit, &e, &error);
	if (r < 0)
		log_err(m->ctx, "cannot audit a transfer, refusing it: %s",
			clip_error_get_message(error));
	return r;
}

void
mediator_outcome_set(struct outcome *o, enum proto_status status, int error, const char *decision,
		     const char *by, const char *reason)
{
	o->status = status;
	o->error = error;
	o->decision = decision;
	snprintf(o->by, sizeof(o->by), "%s", by);
	snprintf(o->reason, sizeof(o->reason), "%s", reason);
}

void
mediator_outcome_error(struct outcome *o, int r, struct clip_error *error, const char *what)
{
	char text[PROTO_TEXT_MAX + 1];

	snprintf(text, sizeof(text), "%s: %s", what,
		 error ? clip_error_get_message(error) : strerror(-r));
	mediator_outcome_set(o, PROTO_STATUS_FAILED, r, "failed", "mediator", text);
}

/* After a flush: the outcome seen, fed and answered. */
static void
finished_answer(struct clip_mediator *m, struct finished *f)
{
	struct outcome *o = &f->o;

	if (o->status == PROTO_STATUS_DELIVERED) {
		log_info(m->ctx, "delivered '%s' from '%s' to '%s'", o->delivered, f->source->name,
			 f->target->name);
		mediator_feed(m, CLIP_FEED_TRANSFER_DELIVERED, f->source->name, f->target->name,
			      o->delivered, NULL);
	} else
		mediator_feed(m, CLIP_FEED_TRANSFER_DENIED, f->source->name, f->target_name,
			      f->name, o->reason);
	reply(m, f->conn, f->client_id, o, f->has_d ? &f->d : NULL);
}

static void
finished_failed(struct clip_mediator *m, struct finished *f, int r, struct clip_error *error,
		const char *what)
{
	mediator_outcome_error(&f->o, r, error, what);
	f->o.delivered[0] = '\0';
	(void)mediator_audit_record(m, "failed", f->source, f->target, f->target_name, f->name,
				    f->has_d ? &f->d : NULL, "failed", "mediator", f->o.reason);
}

void
mediator_flush(struct clip_mediator *m)
{
	_cleanup_(clip_error_freep) struct clip_error *error = NULL;
	uint64_t count;
	int r;

	if (!m->audit)
		return;
	if (m->flush.fd >= 0) {
		const struct itimerspec off = { 0 };

		if (read(m->flush.fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
			log_debug(m->ctx, "cannot read the group commit's timer: %m");
		(void)timerfd_settime(m->flush.fd, 0, &off, NULL);
		m->flush_armed = false;
	}
	/* 1. Every record of the batch on disk, or none of its documents linked. */
	r = audit_commit(m->audit, &error);
	if (r < 0)
		log_err(m->ctx, "cannot audit a transfer, refusing it: %s",
			clip_error_get_message(error));
	/*
	 * 2. The documents linked in, their inboxes synced below. A decision
	 * that another's commit may have cut since it was written (a role's
	 * request, an export, the answer to a flood: audit_cuts()) is not on
	 * disk as far as anyone knows: its delivery fails, as when the sync
	 * above fails. When that sync succeeded, the decision may be on disk
	 * all the same (synced by another before the cut), so a record says
	 * the transfer failed. A refusal stays a refusal: nothing moved.
	 */
	for (struct finished *f = m->finished; f; f = f->next) {
		if (!f->deliver)
			continue;
		if (r < 0) {
			f->deliver = false;
			mediator_outcome_set(&f->o, PROTO_STATUS_FAILED, -EIO, "failed", "mediator",
					     "the audit log cannot be written");
			continue;
		}
		if (f->audit_cuts != audit_cuts(m->audit)) {
			f->deliver = false;
			finished_failed(m, f, -EIO, NULL, "the audit log cannot be written");
			continue;
		}
		clip_error_free(error);
		error = NULL;
		if (deliver_link(m->ctx, &f->d, f->target->inbox_fd, f->name, f->target->level,
				 m->opts.label_flags, f->o.delivered, &error) < 0) {
			f->deliver = false;
			finished_failed(m, f, -EIO, error, "delivery failed");
		} else
			f->target->inbox_dirty = true;
	}
	/* 3. One fsync per inbox. */
	for (size_t i = 0; i < m->n_cages; i++) {
		struct cage *t = m->cages[i];

		if (!t->inbox_dirty)
			continue;
		t->inbox_dirty = false;
		if (fsync(t->inbox_fd) == 0)
			continue;
		r = -errno;
		for (struct finished *f = m->finished; f; f = f->next)
			if (f->deliver && f->target == t) {
				(void)unlinkat(t->inbox_fd, f->o.delivered, 0);
				f->deliver = false;
				finished_failed(m, f, r, NULL,
						"delivery failed: cannot sync the "
						"target inbox");
			}
	}
	/* The records of the failures: best effort, as before. */
	clip_error_free(error);
	error = NULL;
	if (audit_commit(m->audit, &error) < 0)
		log_err(m->ctx, "cannot audit a failed delivery: %s",
			clip_error_get_message(error));
	/* 4. The answers, in order. */
	while (m->finished) {
		struct finished *f = m->finished;

		finished_answer(m, f);
		/* reply() may have closed f->conn, which only clears the pointers. */
		m->finished = f->next;
		deliver_abort(&f->d);
		free(f->target_name);
		free(f->name);
		free(f);
	}
	m->finished_tail = &m->finished;
	m->n_finished = 0;
}

/*
 * Record the decision; the document is linked in, and the answer sent, by
 * the next flush (above), once the record is on disk.
 */
void
mediator_finish(struct clip_mediator *m, struct conn *c, uint64_t client_id, struct cage *source,
		struct cage *target, const char *target_name, const char *name, struct delivery *d,
		struct outcome *o)
{
	bool deliver = o->status == PROTO_STATUS_DELIVERED;
	struct finished *f;
	int r;

	r = mediator_audit_record(m, "decision", source, target, target_name, name, d,
				  deliver ? "allow" : o->decision, o->by, o->reason);
	if (r < 0) {
		deliver = false;
		mediator_outcome_set(o, PROTO_STATUS_FAILED, -EIO, "failed", "mediator",
				     "the audit log cannot be written");
	}
	f = calloc(1, sizeof(*f));
	if (f) {
		f->target_name = strdup(target_name ? target_name : "");
		f->name = strdup(name ? name : "");
	}
	if (!f || !f->target_name || !f->name) {
		if (f) {
			free(f->target_name);
			free(f->name);
			free(f);
		}
		/* Answered now, undelivered, once the records before are durable. */
		(void)audit_commit(m->audit, NULL);
		if (d)
			deliver_abort(d);
		mediator_outcome_set(o, PROTO_STATUS_FAILED, -ENOMEM, "failed", "mediator",
				     "out of memory");
		reply(m, c, client_id, o, NULL);
		return;
	}
	f->conn = c;
	f->client_id = client_id;
	f->source = source;
	f->target = target;
	f->deliver = deliver;
	f->o = *o;
	f->audit_cuts = audit_cuts(m->audit);
	f->d = (struct delivery)DELIVERY_INIT;
	if (d) {
		/* The delivery moves into the queue: its file is closed with it. */
		f->d = *d;
		f->has_d = true;
		d->fd = -1;
	}
	*m->finished_tail = f;
	m->finished_tail = &f->next;
	if (++m->n_finished >= BATCH_MAX)
		mediator_flush(m);
	else
		flush_soon(m);
}

struct cage *
mediator_find_cage(struct clip_mediator *m, const char *name)
{
	for (size_t i = 0; i < m->n_cages; i++)
		if (strcmp(m->cages[i]->name, name) == 0)
			return m->cages[i];
	return NULL;
}

/*
 * A name that would read as something else (an invisible character, a
 * look-alike of '/' or '.') is refused, not mended: the sender learns which
 * character, the user is never shown it, and no inbox gets it.
 */
static bool
name_refused(const char *name, char *reason, size_t size)
{
	const char *why;
	uint32_t c;
	size_t at;

	if (test_hook_disabled("name-invisible"))
		return false;
	why = utf8_name_check(name, strlen(name), &c, &at);
	if (!why)
		return false;
	snprintf(reason, size,
		 "the name holds U+%04" PRIX32 " (%s) at byte %zu: a name may not hold control, "
		 "bidirectional, invisible or look-alike characters",
		 c, why, at);
	return true;
}

/* A cage's fd is closed off the loop (mediator-fd.c). */
static void
drop_fd(int fd, void *userdata)
{
	mediator_close_untrusted(userdata, fd);
}

static void
msg_drop(struct clip_mediator *m, struct proto_msg *msg)
{
	mediator_close_untrusted(m, msg->fd);
	msg->fd = -1;
}

static void
handle_request(struct clip_mediator *m, struct conn *c, struct proto_msg *msg)
{
	_cleanup_(clip_error_freep) struct clip_error *error = NULL;
	const struct proto_request *q = &msg->request;
	struct cage *source = c->cage, *target = mediator_find_cage(m, q->target);
	struct outcome o = { 0 };
	const struct policy_rule *rule = NULL;
	enum proto_direction dir = PROTO_DIRECTION_INCOMPARABLE;
	uint8_t key[CLIP_KEY_SIZE];
	char by[300], reason[PROTO_TEXT_MAX + 1];
	int r;

	if (mediator_audit_record(m, "request", source, target, q->target, q->name, NULL, "-", "-",
				  q->note) < 0) {
		mediator_outcome_set(&o, PROTO_STATUS_FAILED, -EIO, "failed", "mediator",
				     "the audit log cannot be written");
		reply(m, c, q->id, &o, NULL);
		return;
	}
	/* Not a regular file: refused here, before a worker or the policy sees it. */
	r = mediator_doc_check(msg->fd, o.reason, sizeof(o.reason));
	if (r < 0) {
		char why[PROTO_TEXT_MAX + 1];

		snprintf(why, sizeof(why), "%s", o.reason);
		log_notice(m->ctx, "cage '%s' (pid %d): %s", source->name, (int)c->cred.pid, why);
		mediator_outcome_set(&o, PROTO_STATUS_FAILED, r, "failed", "mediator", why);
		mediator_finish(m, c, q->id, source, target, q->target, q->name, NULL, &o);
		return;
	}
	if (target) {
		dir = policy_direction(source->level, target->level);
		rule = policy_match(m->policy, source->name, source->level, target->name,
				    target->level);
	}
	if (target && test_hook_disabled("mediator-policy")) {
		/* A test-hooks build showing the policy's tests fail without it: allow all. */
		static const struct policy_rule allow_all = { .action = POLICY_ALLOW };

		rule = &allow_all;
	}
	if (rule)
		snprintf(by, sizeof(by), "policy %s:%u", m->policy->origin, rule->line);
	else
		snprintf(by, sizeof(by), "policy default");
	if (name_refused(q->name, reason, sizeof(reason)))
		mediator_outcome_set(&o, PROTO_STATUS_DENIED_POLICY, 0, "deny", "mediator", reason);
	else if (!target)
		mediator_outcome_set(&o, PROTO_STATUS_DENIED_POLICY, 0, "deny", "mediator",
				     "no such cage");
	else if (!rule || rule->action == POLICY_DENY)
		mediator_outcome_set(&o, PROTO_STATUS_DENIED_POLICY, 0, "deny", by,
				     dir == PROTO_DIRECTION_INCOMPARABLE ? "incomparable levels"
				     : rule                              ? "a deny rule"
									 : "no rule allows it");
	else if (rule->action == POLICY_ALLOW &&
		 clip_level_dominates(target->level, source->level) != 1)
		/* Unreachable: the parser and add_cage refuse such a rule. Kept as a fuse. */
		mediator_outcome_set(&o, PROTO_STATUS_DENIED_POLICY, 0, "deny", by, "a downgrade");
	if (o.decision) {
		mediator_finish(m, c, q->id, source, target, q->target, q->name, NULL, &o);
		return;
	}

	/* The context is not the workers': the key is made here. */
	if (rule->encrypt) {
		r = envelope_key(m->ctx, target->name, key, &error);
		if (r < 0) {
			mediator_outcome_error(&o, r, error, "cannot seal an envelope");
			mediator_finish(m, c, q->id, source, target, q->target, q->name, NULL, &o);
			return;
		}
	}
	mediator_job_submit(m, c, msg, target, rule, dir, by, rule->encrypt ? key : NULL);
	secure_wipe(key, sizeof(key));
}

/*
 * Something the cage's user should see (PROTO_REPORT): recorded and pushed
 * to the feed under the cage's name, which the socket gives, never the
 * report. A cage that reports faster than REPORT_PER_S has the rest
 * counted, and the count shown with its next report.
 */
static void
handle_report(struct clip_mediator *m, struct conn *c, const struct proto_report *t)
{
	struct cage *cage = c->cage;
	char why[PROTO_TEXT_MAX + 64];

	if (!token_bucket_take(&cage->reports, REPORT_PER_S, REPORT_BURST, NULL) &&
	    !test_hook_disabled("mediator-report-rate")) {
		cage->reports_suppressed++;
		return;
	}
	/* The cage's words; its errno's name when it gave none. */
	snprintf(why, sizeof(why), "%s",
		 t->text[0] ? t->text
		 : t->error ? strerrorname_np((int)t->error) ?: "an unknown errno"
			    : "refused");
	log_notice(m->ctx, "cage '%s' (pid %d) reports a file refused as code", cage->name,
		   (int)c->cred.pid);
	(void)mediator_audit_record(m, "exec-refused", cage, NULL, NULL, t->subject, NULL, "deny",
				    "cage", why);
	mediator_feed(m, CLIP_FEED_EXEC_REFUSED, cage->name, NULL, t->subject, why);
	if (cage->reports_suppressed) {
		snprintf(why, sizeof(why),
			 "%" PRIu64 " more reports of this cage not shown (over %d a second)",
			 cage->reports_suppressed, REPORT_PER_S);
		(void)mediator_audit_record(m, "exec-refused", cage, NULL, NULL, NULL, NULL, "deny",
					    "cage", why);
		mediator_feed(m, CLIP_FEED_EXEC_REFUSED, cage->name, NULL, NULL, why);
		cage->reports_suppressed = 0;
	}
	/* No answer asks for its sync: the record asks itself. */
	flush_soon(m);
}

static void
handle_conn(struct clip_mediator *m, struct conn *c)
{
	_cleanup_(clip_error_freep) struct clip_error *error = NULL;
	struct proto_msg msg;
	char reason[PROTO_TEXT_MAX + 1];
	int r;

	r = proto_recv_with(c->src.fd, &msg, drop_fd, m, &error);
	if (r == -EAGAIN)
		return;
	if (r == -ECONNRESET) {
		mediator_conn_close(m, c);
		return;
	}
	/* Any message costs a token, a broken one too: each would be a record. */
	if (!mediator_rate_check(m, c, r == 0 && msg.type == PROTO_REQUEST ? &msg.request : NULL,
				 reason, sizeof(reason))) {
		if (r == 0 && msg.type == PROTO_REQUEST) {
			struct outcome o = { 0 };

			mediator_outcome_set(&o, PROTO_STATUS_FAILED, -EAGAIN, "deny", "mediator",
					     reason);
			/* Its record (one a window), if any, on disk before the answer. */
			(void)audit_commit(m->audit, NULL);
			reply(m, c, msg.request.id, &o, NULL);
		} else
			mediator_conn_close(m, c);
		if (r == 0)
			msg_drop(m, &msg);
		return;
	}
	if (r == 0 && msg.type == PROTO_REPORT) {
		handle_report(m, c, &msg.report);
		return;
	}
	if (r == 0 && msg.type != PROTO_REQUEST) {
		msg_drop(m, &msg);
		r = error_set(&error, -EBADMSG, "a cage may only send requests and reports");
	}
	if (r < 0) {
		/* Hostile or broken: audited, then the connection is closed. */
		log_warning(m->ctx, "cage '%s' (pid %d): %s", c->cage->name, (int)c->cred.pid,
			    clip_error_get_message(error));
		(void)mediator_audit_record(m, "rejected", c->cage, NULL, NULL, NULL, NULL, "deny",
					    "mediator", clip_error_get_message(error));
		/* No answer asks for its sync: the record asks itself. */
		flush_soon(m);
		mediator_conn_close(m, c);
		return;
	}
	handle_request(m, c, &msg);
	msg_drop(m, &msg);
}

int
mediator_accept_peer(int listen_fd, struct ucred *cred)
{
	socklen_t len = sizeof(*cred);
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) < 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* Serve @fd as a connection of @cage; takes the fd, closes it on failure. */
static int
conn_add(struct clip_mediator *m, struct cage *cage, int fd, const struct ucred *cred)
{
	struct conn *c;
	int r;

	if (cage->n_conns >= CONNS_PER_CAGE_MAX && !test_hook_disabled("front-conn-cap")) {
		log_warning(m->ctx,
			    "cage '%s': refusing a peer (pid %d): it holds %u connections, "
			    "the most one cage may",
			    cage->name, (int)cred->pid, cage->n_conns);
		mediator_close_untrusted(m, fd);
		return -EMFILE;
	}
	if ((cage->check_uid && cred->uid != cage->uid &&
	     !test_hook_disabled("mediator-peer-uid")) ||
	    m->n_conns >= CONNS_MAX) {
		log_warning(m->ctx, "cage '%s': refusing a peer (pid %d, uid %u)", cage->name,
			    (int)cred->pid, (unsigned)cred->uid);
		mediator_close_untrusted(m, fd);
		return -EPERM;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->src = (struct source){ SOURCE_CONN, fd };
	c->cage = cage;
	c->cred = *cred;
	r = mediator_watch(m, &c->src);
	if (r < 0) {
		close(fd);
		free(c);
		return r;
	}
	c->next = m->conns;
	m->conns = c;
	m->n_conns++;
	cage->n_conns++;
	return 0;
}

static void
handle_cage_listen(struct clip_mediator *m, struct cage *cage)
{
	struct ucred cred;
	int fd;

	fd = mediator_accept_peer(cage->src.fd, &cred);
	if (fd >= 0)
		(void)conn_add(m, cage, fd, &cred);
}

static int
add_connection(struct clip_mediator *m, const char *name, int fd, struct clip_error **reterr)
{
	struct cage *cage = mediator_find_cage(m, name);
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int type = 0, r;

	if (!cage)
		return error_set(reterr, -EINVAL, "no cage named '%.64s'", name);
	len = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET)
		return error_set(reterr, -EBADF, "not a SOCK_SEQPACKET socket");
	len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return error_set_errno(reterr, -errno, "cannot read the peer's credentials");
	fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
		return error_set_errno(reterr, -errno, "cannot take the connection");
	r = conn_add(m, cage, fd, &cred);
	if (r == -EMFILE)
		return error_set(reterr, r, "cage '%s' holds %u connections, the most one cage may",
				 name, cage->n_conns);
	if (r < 0)
		return error_set_errno(reterr, r, "cage '%s' refuses this connection", name);
	return 0;
}

CLIP_EXPORT int
clip_mediator_add_connection(struct clip_mediator *m, const char *cage, int fd,
			     struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	clip_assert_return(m, api_return(-EINVAL, reterr));
	ctx_assert_return_error(m->ctx, reterr);
	ctx_assert_log_return(m->ctx, cage, api_return(-EINVAL, reterr));
	ctx_assert_log_return(m->ctx, fd >= 0, api_return(-EBADF, reterr));

	return api_return(add_connection(m, cage, fd, reterr), reterr);
}

static int
mediator_dispatch(struct clip_mediator *m, struct clip_error **reterr)
{
	struct epoll_event ev;
	struct source *s;
	int n;

	/*
	 * One event per call: handling one may free the object of another
	 * (a timer whose question the agent just answered). Level-triggered,
	 * the rest come back on the next call.
	 */
	n = epoll_wait(m->epfd, &ev, 1, 0);
	if (n < 0 && errno == EINTR)
		return 0;
	if (n < 0)
		return error_set_errno(reterr, -errno, "epoll_wait failed");
	if (n == 0)
		return 0;
	s = ev.data.ptr;
	switch (s->kind) {
	case SOURCE_CAGE_LISTEN:
		handle_cage_listen(m, (struct cage *)s);
		break;
	case SOURCE_CONN:
		handle_conn(m, (struct conn *)s);
		break;
	case SOURCE_AGENT_LISTEN:
		mediator_agent_listen(m);
		break;
	case SOURCE_AGENT:
		mediator_agent_handle(m);
		break;
	case SOURCE_TIMER:
		mediator_handle_timer(m, (struct pending *)s);
		break;
	case SOURCE_DONE:
		mediator_handle_done(m);
		break;
	case SOURCE_FLUSH:
		mediator_flush(m);
		break;
	}
	return 1;
}

CLIP_EXPORT int
clip_mediator_dispatch(struct clip_mediator *m, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	clip_assert_return(m, api_return(-EINVAL, reterr));
	ctx_assert_return_error(m->ctx, reterr);

	return api_return(mediator_dispatch(m, reterr), reterr);
}

CLIP_EXPORT int
clip_mediator_get_pending(struct clip_mediator *m)
{
	clip_assert_return(m, -EINVAL);
	ctx_assert_return(m->ctx, -ECHILD);
	return m->n_pending > INT_MAX ? INT_MAX : (int)m->n_pending;
}

CLIP_EXPORT int
clip_mediator_get_agent_connected(struct clip_mediator *m)
{
	clip_assert_return(m, -EINVAL);
	ctx_assert_return(m->ctx, -ECHILD);
	return m->agent.fd >= 0;
}
