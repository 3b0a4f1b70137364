/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The mediator's deliveries, read off the loop: a request the policy lets
 * through becomes a job, a worker thread reads (and filters) its document,
 * and the loop's thread takes the result from the workers' pipe and
 * decides, asks or refuses. The bounds below keep one cage, or one
 * connection, from holding every worker.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "base/test-hooks.h"
#include "proto.h"
#include "transfer-internal.h"
#include "base/util.h"
#include "base/test-hooks.h"

/*
 * Questions waiting for the user: in all, and per source cage, so that one
 * cage cannot fill the user's queue and leave another unasked. The share
 * of a cage is PENDING_PER_CAGE, or less when that many cages would pass
 * PENDING_MAX together: there is always room for every cage's question.
 */
#define PENDING_MAX 256
#define PENDING_PER_CAGE 4
/* Before mediator-fair-queue: per connection, which a cage opens at will. */
#define PENDING_PER_CONN 4
/* Documents read at once, in all and per source cage (so that one cage
 * sending big documents leaves room for the others). */
#define WORKERS_MAX 16
#define WORKERS_PER_CAGE 8
/* Deliveries waiting or running: beyond, a request is refused (busy). */
#define JOBS_MAX 256
/* Per connection: beyond, it is not read until one is done (back-pressure). */
#define JOBS_PER_CONN 4

static void
job_free(struct clip_mediator *m, struct job *j)
{
	clip_ctx_unref(j->filter_ctx);
	clip_policy_unref(j->policy);
	deliver_abort(&j->d);
	/* The cage's: its close may wait (a FUSE file's flush), not on the loop. */
	mediator_close_untrusted(m, j->src_fd);
	clip_error_free(j->error);
	secure_wipe(j->key, sizeof(j->key));
	free(j);
}

static void
job_log(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	struct job *j = userdata;

	if (j->n_log == JOB_LOG_MAX)
		return;
	j->log[j->n_log].priority = priority;
	snprintf(j->log[j->n_log].text, sizeof(j->log[j->n_log].text), "%s", message);
	j->n_log++;
}

/* A context of the job's own for its filter's cage; made on the loop's thread. */
static int
job_filter_ctx(struct clip_mediator *m, struct job *j)
{
	return ctx_new_worker(m->ctx, job_log, j, &j->filter_ctx);
}

/* A worker: only its job's fds, buffers and context, nothing of the mediator's. */
static void *
job_run(void *userdata)
{
	struct job *j = userdata;
	ssize_t n;

	j->r = deliver_receive(j->inbox_fd, j->src_fd, j->max_size, j->encrypt ? j->key : NULL,
			       j->aad, &j->d, &j->error);
	secure_wipe(j->key, sizeof(j->key));
	if (j->r == 0 && j->filter && !atomic_load(&j->cancelled))
		j->r = deliver_filter(j->filter_ctx, &j->d, j->filter, &j->error);
	/* Eight bytes, less than PIPE_BUF: written whole, read whole. */
	do
		n = write(j->done_fd, &j, sizeof(j));
	while (n < 0 && errno == EINTR);
	return NULL;
}

static void
job_start(struct clip_mediator *m, struct job *j)
{
	sigset_t all, old;
	int r;

	/* The application's signals are for its own threads, not for ours. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&j->thread, NULL, job_run, j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	j->state = JOB_RUNNING;
	j->source->n_running++;
	m->n_running++;
	if (r == 0) {
		j->thread_started = true;
		return;
	}
	/* Answered as a worker that failed at once: the same way out. */
	j->r = error_set_errno(&j->error, -r, "cannot start a thread to read the document");
	if (write(m->done_write, &j, sizeof(j)) != sizeof(j))
		log_err(m->ctx, "cannot queue a failed delivery: %m");
}

/* Start what may start, oldest first, within the bounds. */
static void
jobs_schedule(struct clip_mediator *m)
{
	for (struct job *j = m->jobs; j && m->n_running < WORKERS_MAX; j = j->next)
		if (j->state == JOB_QUEUED && j->source->n_running < WORKERS_PER_CAGE)
			job_start(m, j);
}

/* Teardown: stop the workers, drop what they read (unnamed: it vanishes). */
void
mediator_jobs_stop(struct clip_mediator *m)
{
	/* A forked child inherited the jobs but not the threads. */
	bool ours = getpid() == m->pid;
	int empty = -1;

	for (struct job *j = m->jobs; j && ours; j = j->next) {
		if (!j->thread_started)
			continue;
		atomic_store(&j->cancelled, true);
		/*
		 * The worker reads the document by its fd number: an empty file put
		 * at that number ends its copy at the next chunk (as a document that
		 * shrank) instead of reading gigabytes to throw away. The number
		 * stays the job's until job_free(), so nothing else is hit.
		 */
		if (empty < 0)
			empty = memfd_create("clip-cancelled", MFD_CLOEXEC);
		if (empty >= 0)
			(void)dup3(empty, j->src_fd, O_CLOEXEC);
	}
	for (struct job *j = m->jobs; j && ours; j = j->next)
		if (j->thread_started)
			pthread_join(j->thread, NULL);
	while (m->jobs) {
		struct job *j = m->jobs;

		m->jobs = j->next;
		job_free(m, j);
	}
	m->n_jobs = m->n_running = 0;
	if (empty >= 0)
		close(empty);
}

static void
conn_pause(struct clip_mediator *m, struct conn *c)
{
	(void)epoll_ctl(m->epfd, EPOLL_CTL_DEL, c->src.fd, NULL);
	c->paused = true;
}

/* Queue the delivery of @msg's document; takes the fd. */
void
mediator_job_submit(struct clip_mediator *m, struct conn *c, struct proto_msg *msg,
		    struct cage *target, const struct policy_rule *rule, enum proto_direction dir,
		    const char *by, const uint8_t *key)
{
	const struct proto_request *q = &msg->request;
	struct outcome o = { 0 };
	struct job *j, **tail;

	if (m->n_jobs >= JOBS_MAX) {
		mediator_outcome_set(
			&o, PROTO_STATUS_FAILED, -EBUSY, "failed", "mediator",
			"the mediator is busy (too many transfers in progress): try again");
		mediator_finish(m, c, q->id, c->cage, target, q->target, q->name, NULL, &o);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		mediator_outcome_error(&o, -ENOMEM, NULL, "cannot take the document");
		mediator_finish(m, c, q->id, c->cage, target, q->target, q->name, NULL, &o);
		return;
	}
	j->src_fd = msg->fd;
	msg->fd = -1;
	j->inbox_fd = target->inbox_fd;
	j->done_fd = m->done_write;
	j->max_size = rule->max_size && rule->max_size < m->opts.max_size ? rule->max_size
									  : m->opts.max_size;
	j->encrypt = rule->encrypt && !test_hook_disabled("envelope-down");
	if (key)
		memcpy(j->key, key, sizeof(j->key));
	snprintf(j->aad, sizeof(j->aad), "%s", target->name);
	j->filter = rule->filter;
	if (j->filter && job_filter_ctx(m, j) < 0) {
		mediator_outcome_error(&o, -ENOMEM, NULL, "cannot run the filter");
		mediator_finish(m, c, q->id, c->cage, target, q->target, q->name, NULL, &o);
		job_free(m, j);
		return;
	}
	atomic_init(&j->cancelled, false);
	j->d = (struct delivery)DELIVERY_INIT;
	j->state = JOB_QUEUED;
	j->client_id = q->id;
	j->conn = c;
	j->source = c->cage;
	j->target = target;
	j->rule = rule;
	j->policy = clip_policy_ref(m->policy);
	j->direction = dir;
	snprintf(j->by, sizeof(j->by), "%s", by);
	snprintf(j->name, sizeof(j->name), "%s", q->name);
	snprintf(j->note, sizeof(j->note), "%s", q->note);
	for (tail = &m->jobs; *tail; tail = &(*tail)->next)
		;
	*tail = j;
	m->n_jobs++;
	if (++c->n_jobs >= JOBS_PER_CONN)
		conn_pause(m, c);
	jobs_schedule(m);
}

static void
format_bytes(uint64_t n, char *buf, size_t size)
{
	if (n >= (UINT64_C(1) << 30) && n % (UINT64_C(1) << 30) == 0)
		snprintf(buf, size, "%" PRIu64 " GiB", n >> 30);
	else if (n >= (UINT64_C(1) << 20) && n % (UINT64_C(1) << 20) == 0)
		snprintf(buf, size, "%" PRIu64 " MiB", n >> 20);
	else
		snprintf(buf, size, "%" PRIu64 " bytes", n);
}

/*
 * Whether @j's document may wait for the user in its target's inbox: the
 * bytes waiting from its source cage, and those waiting for its target,
 * stay within their budgets (doc/transfer.md, "Documents waiting for the
 * user"). When not, @reason says which budget.
 */
static bool
pending_budget_check(struct clip_mediator *m, const struct job *j, char *reason, size_t size)
{
	const uint64_t n = j->d.size, src_max = m->opts.pending_max_per_source,
		       dst_max = m->opts.pending_max_per_target;
	char held[32], max[32];

	if (test_hook_disabled("pending-budget"))
		return true;
	if (n > src_max || j->source->pending_out > src_max - n) {
		format_bytes(j->source->pending_out, held, sizeof(held));
		format_bytes(src_max, max, sizeof(max));
		snprintf(reason, size,
			 "cage '%s' has %s waiting for the user, and %" PRIu64
			 " bytes more would be over its budget of %s (pending bytes per source "
			 "cage): try again once the user has answered",
			 j->source->name, held, n, max);
		return false;
	}
	if (n > dst_max || j->target->pending_in > dst_max - n) {
		format_bytes(j->target->pending_in, held, sizeof(held));
		format_bytes(dst_max, max, sizeof(max));
		snprintf(reason, size,
			 "the inbox of cage '%s' has %s waiting for the user, and %" PRIu64
			 " bytes more would be over its budget of %s (pending bytes per target "
			 "inbox): try again once the user has answered",
			 j->target->name, held, n, max);
		return false;
	}
	return true;
}

/* The questions @cage may have waiting for the user. */
static unsigned
pending_share(const struct clip_mediator *m)
{
	size_t share = m->n_cages ? PENDING_MAX / m->n_cages : PENDING_MAX;

	return share < 1 ? 1 : share < PENDING_PER_CAGE ? (unsigned)share : PENDING_PER_CAGE;
}

/* Whether one more question of @cage (on @c) may wait for the user; @reason says why not. */
static bool
pending_room(const struct clip_mediator *m, const struct cage *cage, const struct conn *c,
	     char *reason, size_t size)
{
	if (test_hook_disabled("mediator-fair-queue")) {
		snprintf(reason, size, "too many questions waiting for the user");
		return !(c && c->n_pending >= PENDING_PER_CONN) && m->n_pending < PENDING_MAX;
	}
	if (cage->n_pending >= pending_share(m)) {
		snprintf(reason, size,
			 "cage '%s' has %u questions waiting for the user, its limit: try "
			 "again once one is answered",
			 cage->name, cage->n_pending);
		return false;
	}
	/* A fuse: the shares add up to at most PENDING_MAX. */
	snprintf(reason, size, "too many questions waiting for the user (%d)", PENDING_MAX);
	return m->n_pending < PENDING_MAX;
}

/* The document is in (or not): what handle_request() did next when it read it itself. */
static void
job_finish(struct clip_mediator *m, struct job *j)
{
	struct conn *c = j->conn;
	struct outcome o = { 0 };
	char reason[PROTO_TEXT_MAX + 1];
	struct pending *p;
	int r;

	if (j->r == -EFBIG || j->r == -EPERM) {
		mediator_outcome_set(&o, PROTO_STATUS_DENIED_POLICY, j->r, "deny", j->by,
				     j->error ? clip_error_get_message(j->error) : strerror(-j->r));
		mediator_finish(m, c, j->client_id, j->source, j->target, j->target->name, j->name,
				&j->d, &o);
		return;
	}
	if (j->r < 0) {
		mediator_outcome_error(&o, j->r, j->error, "cannot take the document");
		mediator_finish(m, c, j->client_id, j->source, j->target, j->target->name, j->name,
				&j->d, &o);
		return;
	}
	if (j->rule->action == POLICY_ALLOW) {
		mediator_outcome_set(&o, PROTO_STATUS_DELIVERED, 0, "allow", j->by,
				     "allowed by policy");
		mediator_finish(m, c, j->client_id, j->source, j->target, j->target->name, j->name,
				&j->d, &o);
		return;
	}

	/* ask */
	if (m->agent.fd < 0 || !pending_room(m, j->source, c, reason, sizeof(reason))) {
		mediator_outcome_set(&o, PROTO_STATUS_DENIED_USER, 0, "deny", "mediator",
				     m->agent.fd < 0 ? "no confirmation agent is running" : reason);
		mediator_finish(m, c, j->client_id, j->source, j->target, j->target->name, j->name,
				&j->d, &o);
		return;
	}
	if (!pending_budget_check(m, j, reason, sizeof(reason))) {
		mediator_outcome_set(&o, PROTO_STATUS_FAILED, -EDQUOT, "deny", "mediator", reason);
		mediator_finish(m, c, j->client_id, j->source, j->target, j->target->name, j->name,
				&j->d, &o);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		mediator_outcome_error(&o, -ENOMEM, NULL, "cannot ask");
		mediator_finish(m, c, j->client_id, j->source, j->target, j->target->name, j->name,
				&j->d, &o);
		return;
	}
	p->src.fd = -1;
	p->client_id = j->client_id;
	p->conn = c;
	p->source = j->source;
	p->target = j->target;
	p->rule = j->rule;
	p->policy = clip_policy_ref(j->policy);
	p->direction = j->direction;
	p->d = j->d;
	j->d = (struct delivery)DELIVERY_INIT;
	snprintf(p->name, sizeof(p->name), "%s", j->name);
	if (c)
		c->n_pending++;
	p->source->n_pending++; /* until mediator_pending_free() */
	r = mediator_ask(m, p, j->note);
	if (r < 0) {
		if (c)
			c->n_pending--;
		p->conn = NULL;
		mediator_outcome_set(&o, PROTO_STATUS_DENIED_USER, 0, "deny", "mediator",
				     "the confirmation agent cannot be reached");
		mediator_finish(m, c, p->client_id, p->source, p->target, p->target->name, p->name,
				&p->d, &o);
		mediator_pending_free(m, p);
		return;
	}
	p->next = m->pending;
	m->pending = p;
	m->n_pending++;
	p->charged = p->d.size;
	p->source->pending_out += p->charged;
	p->target->pending_in += p->charged;
}

/* A worker is done: the rest happens here, on the loop's thread. */
void
mediator_handle_done(struct clip_mediator *m)
{
	struct job *j;
	struct conn *c;

	if (read(m->done.fd, &j, sizeof(j)) != sizeof(j))
		return;
	if (j->thread_started)
		pthread_join(j->thread, NULL);
	for (struct job **pp = &m->jobs; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	m->n_jobs--;
	m->n_running--;
	j->source->n_running--;
	for (unsigned i = 0; i < j->n_log; i++)
		clip_log(m->ctx, j->log[i].priority, "filter of a transfer from '%s': %s",
			 j->source->name, j->log[i].text);
	c = j->conn;
	if (c && c->n_jobs-- == JOBS_PER_CONN && c->paused) {
		c->paused = false;
		if (mediator_watch(m, &c->src) < 0) {
			mediator_conn_close(m, c);
			j->conn = NULL;
		}
	}
	jobs_schedule(m);
	job_finish(m, j);
	job_free(m, j);
}
