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
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <clip/audit.h>
#include <clip/label.h>
#include <clip/mediator.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/log.h"
#include "proto.h"
#include "transfer-internal.h"
#include "base/util.h"

#define CAGES_MAX 256
#define CONNS_MAX 1024
#define PENDING_MAX 256
#define PENDING_PER_CONN 4
#define DEFAULT_TIMEOUT_MS 60000
#define DEFAULT_MAX_SIZE (UINT64_C(4) << 30)
/* Documents read at once, in all and per source cage (so that one cage
 * sending big documents leaves room for the others). */
#define WORKERS_MAX 4
#define WORKERS_PER_CAGE 2
/* Deliveries waiting or running: beyond, a request is refused (busy). */
#define JOBS_MAX 256
/* Per connection: beyond, it is not read until one is done (back-pressure). */
#define JOBS_PER_CONN 4
#define DEFAULT_RATE_PER_S 20
#define DEFAULT_RATE_BURST 100
/* A cage over its rate is audited at most once per window. */
#define RATE_AUDIT_WINDOW_NS (UINT64_C(10) * 1000000000)
/* What a filter's cage logs in a worker, replayed on the loop's thread. */
#define JOB_LOG_MAX 8

enum source_kind {
	SOURCE_CAGE_LISTEN,
	SOURCE_CONN,
	SOURCE_AGENT_LISTEN,
	SOURCE_AGENT,
	SOURCE_TIMER,
	SOURCE_DONE,
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
	/* The token bucket of its requests (doc/transfer.md, "Rate"). */
	uint32_t rate_per_s, rate_burst;
	double tokens;
	uint64_t refilled_ns;
	uint64_t limit_audited_ns; /* the last record of a refusal; 0: none */
	uint64_t limit_suppressed; /* refusals since, not recorded */
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
	JOB_RUNNING, /* counted in n_running until handle_done() */
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
	enum proto_direction direction;
	struct delivery d;
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
	struct conn *conns;
	size_t n_conns;
	struct pending *pending;
	size_t n_pending;
	struct job *jobs; /* in arrival order */
	size_t n_jobs, n_running;
	struct source done; /* the read end of the workers' pipe */
	int done_write;
	pid_t pid; /* the creator: a forked child has no worker to join */
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

static int
watch(struct clip_mediator *m, struct source *s)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = s };

	return epoll_ctl(m->epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0 ? -errno : 0;
}

static void
unwatch_close(struct clip_mediator *m, struct source *s)
{
	if (s->fd < 0)
		return;
	(void)epoll_ctl(m->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	s->fd = -1;
}

static void
pending_free(struct clip_mediator *m, struct pending *p)
{
	unwatch_close(m, &p->src);
	deliver_abort(&p->d);
	if (p->conn)
		p->conn->n_pending--;
	free(p);
}

static void
pending_unlink(struct clip_mediator *m, struct pending *p)
{
	for (struct pending **pp = &m->pending; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			m->n_pending--;
			return;
		}
}

static void
conn_close(struct clip_mediator *m, struct conn *c)
{
	for (struct pending *p = m->pending; p; p = p->next)
		if (p->conn == c)
			p->conn = NULL;
	for (struct job *j = m->jobs; j; j = j->next)
		if (j->conn == c)
			j->conn = NULL;
	for (struct conn **pp = &m->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			m->n_conns--;
			break;
		}
	unwatch_close(m, &c->src);
	free(c);
}

static void jobs_stop(struct clip_mediator *m);
static void rate_flush(struct clip_mediator *m, struct cage *c);

static struct clip_mediator *
mediator_free(struct clip_mediator *m)
{
	jobs_stop(m);
	for (size_t i = 0; i < m->n_cages; i++)
		rate_flush(m, m->cages[i]);
	while (m->pending) {
		struct pending *p = m->pending;

		m->pending = p->next;
		pending_free(m, p);
	}
	while (m->conns)
		conn_close(m, m->conns);
	for (size_t i = 0; i < m->n_cages; i++) {
		struct cage *c = m->cages[i];

		unwatch_close(m, &c->src);
		if (c->inbox_fd >= 0)
			close(c->inbox_fd);
		clip_level_unref(c->level);
		free(c->level_text);
		free(c);
	}
	unwatch_close(m, &m->agent);
	unwatch_close(m, &m->agent_listen);
	unwatch_close(m, &m->done);
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
	m->done_write = -1;
	m->pid = getpid();
	m->ctx = clip_ctx_ref(ctx);
	m->policy = clip_policy_ref(policy);
	m->audit = clip_audit_ref(audit);
	if (opts)
		memcpy(&m->opts, opts, opts->size < sizeof(m->opts) ? opts->size : sizeof(m->opts));
	if (!opts ||
	    opts->size < offsetof(struct clip_mediator_opts, rate_burst) + sizeof(uint32_t))
		m->opts.rate_per_s = m->opts.rate_burst = 0;
	if (!m->opts.rate_per_s)
		m->opts.rate_per_s = DEFAULT_RATE_PER_S;
	if (!m->opts.rate_burst)
		m->opts.rate_burst = DEFAULT_RATE_BURST;
	if (!m->opts.confirm_timeout_ms)
		m->opts.confirm_timeout_ms = DEFAULT_TIMEOUT_MS;
	if (!m->opts.max_size)
		m->opts.max_size = DEFAULT_MAX_SIZE;
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
	r = fcntl(m->done.fd, F_SETFL, O_NONBLOCK) < 0 ? -errno : watch(m, &m->done);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot watch the workers' pipe");
	*ret = steal_ptr(m);
	return 0;
}

CLIP_EXPORT int
clip_mediator_new(struct clip_mediator **ret, struct clip_ctx *ctx, struct clip_policy *policy,
		  struct clip_audit *audit, const struct clip_mediator_opts *opts,
		  struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);
	ctx_assert_log_return(ctx, ret && policy && audit, api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, !opts || opts->size >= sizeof(uint32_t),
			      api_return(-EINVAL, reterr));
	ctx_assert_log_return(ctx, !opts || (opts->label_flags & ~CLIP_LABEL_ROOTLESS) == 0,
			      api_return(-EINVAL, reterr));

	return api_return(mediator_new(ret, ctx, policy, audit, opts, reterr), reterr);
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

static int
is_listening_seqpacket(int fd)
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
	r = def->socket_fd < 0 ? 1 : is_listening_seqpacket(def->socket_fd);
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
	c->tokens = c->rate_burst;
	c->refilled_ns = now_ns();
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
		r = watch(m, &c->src);
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
		m->ctx,
		cage && cage->size >= offsetof(struct clip_mediator_cage, rate_per_s) &&
			cage->name && cage->level,
		api_return(-EINVAL, reterr));
	ctx_assert_log_return(m->ctx, cage->inbox_fd >= 0, api_return(-EBADF, reterr));

	{
		/* A caller built against the first version does not have the rate. */
		struct clip_mediator_cage def = { 0 };

		memcpy(&def, cage, cage->size < sizeof(def) ? cage->size : sizeof(def));
		if (cage->size < offsetof(struct clip_mediator_cage, rate_burst) + sizeof(uint32_t))
			def.rate_per_s = def.rate_burst = 0;
		return api_return(add_cage(m, &def, reterr), reterr);
	}
}

CLIP_EXPORT int
clip_mediator_add_agent_socket(struct clip_mediator *m, int socket_fd, struct clip_error **reterr)
{
	int r;

	clip_assert_reterr(reterr);
	clip_assert_return(m, api_return(-EINVAL, reterr));
	ctx_assert_return_error(m->ctx, reterr);
	ctx_assert_log_return(m->ctx, socket_fd >= 0, api_return(-EBADF, reterr));
	ctx_assert_log_return(m->ctx, m->agent_listen.fd < 0, api_return(-EINVAL, reterr));

	if (is_listening_seqpacket(socket_fd) <= 0)
		return api_return(error_set(reterr, -EBADF,
					    "the agent socket is not a listening "
					    "SOCK_SEQPACKET socket"),
				  reterr);
	m->agent_listen.fd = fcntl(socket_fd, F_DUPFD_CLOEXEC, 3);
	if (m->agent_listen.fd < 0)
		return api_return(-errno, reterr);
	r = fcntl(m->agent_listen.fd, F_SETFL, O_NONBLOCK) < 0 ? -errno
							       : watch(m, &m->agent_listen);
	if (r < 0) {
		close(m->agent_listen.fd);
		m->agent_listen.fd = -1;
	}
	return api_return(r, reterr);
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
		conn_close(m, c);
	}
}

static int
audit_record(struct clip_mediator *m, const char *event, const struct cage *source,
	     const struct cage *target, const char *target_name, const char *name,
	     const struct delivery *d, const char *decision, const char *by, const char *reason)
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

	r = clip_audit_append(m->audit, &e, &error);
	if (r < 0)
		log_err(m->ctx, "cannot audit a transfer, refusing it: %s",
			clip_error_get_message(error));
	return r;
}

static void
outcome_set(struct outcome *o, enum proto_status status, int error, const char *decision,
	    const char *by, const char *reason)
{
	o->status = status;
	o->error = error;
	o->decision = decision;
	snprintf(o->by, sizeof(o->by), "%s", by);
	snprintf(o->reason, sizeof(o->reason), "%s", reason);
}

static void
outcome_error(struct outcome *o, int r, struct clip_error *error, const char *what)
{
	char text[PROTO_TEXT_MAX + 1];

	snprintf(text, sizeof(text), "%s: %s", what,
		 error ? clip_error_get_message(error) : strerror(-r));
	outcome_set(o, PROTO_STATUS_FAILED, r, "failed", "mediator", text);
}

/* Record the decision, then (only then) link the document in. */
static void
finish(struct clip_mediator *m, struct conn *c, uint64_t client_id, struct cage *source,
       struct cage *target, const char *target_name, const char *name, struct delivery *d,
       struct outcome *o)
{
	_cleanup_(clip_error_freep) struct clip_error *error = NULL;
	bool deliver = o->status == PROTO_STATUS_DELIVERED;
	int r;

	r = audit_record(m, "decision", source, target, target_name, name, d,
			 deliver ? "allow" : o->decision, o->by, o->reason);
	if (r < 0) {
		deliver = false;
		outcome_set(o, PROTO_STATUS_FAILED, -EIO, "failed", "mediator",
			    "the audit log cannot be written");
	}
	if (deliver) {
		r = deliver_commit(m->ctx, d, target->inbox_fd, name, target->level,
				   m->opts.label_flags, o->delivered, &error);
		if (r < 0) {
			outcome_error(o, r, error, "delivery failed");
			o->delivered[0] = '\0';
			(void)audit_record(m, "failed", source, target, target_name, name, d,
					   "failed", "mediator", o->reason);
		} else
			log_info(m->ctx, "delivered '%s' from '%s' to '%s'", o->delivered,
				 source->name, target->name);
	}
	if (d)
		deliver_abort(d);
	reply(m, c, client_id, o, d);
}

static struct cage *
find_cage(struct clip_mediator *m, const char *name)
{
	for (size_t i = 0; i < m->n_cages; i++)
		if (strcmp(m->cages[i]->name, name) == 0)
			return m->cages[i];
	return NULL;
}

static int
ask(struct clip_mediator *m, struct pending *p, const char *note)
{
	struct proto_msg msg = { .type = PROTO_PROMPT, .fd = -1 };
	struct itimerspec its = { 0 };
	int r;

	if (getrandom(&p->id, sizeof(p->id), 0) != sizeof(p->id))
		return -EIO;
	p->src = (struct source){ SOURCE_TIMER,
				  timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK) };
	if (p->src.fd < 0)
		return -errno;
	its.it_value.tv_sec = m->opts.confirm_timeout_ms / 1000;
	its.it_value.tv_nsec = (long)(m->opts.confirm_timeout_ms % 1000) * 1000000;
	if (timerfd_settime(p->src.fd, 0, &its, NULL) < 0)
		return -errno;
	r = watch(m, &p->src);
	if (r < 0)
		return r;
	msg.prompt.id = p->id;
	msg.prompt.timeout_ms = m->opts.confirm_timeout_ms;
	msg.prompt.direction = (uint8_t)p->direction;
	msg.prompt.encrypt = p->d.encrypted;
	msg.prompt.size = p->d.size;
	memcpy(msg.prompt.sha256, p->d.sha256, 32);
	snprintf(msg.prompt.source, sizeof(msg.prompt.source), "%s", p->source->name);
	snprintf(msg.prompt.source_level, sizeof(msg.prompt.source_level), "%s",
		 p->source->level_text);
	snprintf(msg.prompt.target, sizeof(msg.prompt.target), "%s", p->target->name);
	snprintf(msg.prompt.target_level, sizeof(msg.prompt.target_level), "%s",
		 p->target->level_text);
	snprintf(msg.prompt.name, sizeof(msg.prompt.name), "%s", p->name);
	snprintf(msg.prompt.note, sizeof(msg.prompt.note), "%s", note);
	return proto_send(m->agent.fd, &msg, NULL);
}

/* --- deliveries off the loop --- */

static void
job_free(struct job *j)
{
	clip_ctx_unref(j->filter_ctx);
	deliver_abort(&j->d);
	if (j->src_fd >= 0)
		close(j->src_fd);
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
	struct clip_ctx *ctx = NULL;
	int r;

	r = clip_ctx_new(&ctx);
	if (r < 0)
		return r;
	r = clip_ctx_set_state_dir(ctx, clip_ctx_get_state_dir(m->ctx));
	if (r < 0) {
		clip_ctx_unref(ctx);
		return r;
	}
	ctx->key_provider = m->ctx->key_provider;
	ctx->tpm = m->ctx->tpm;
	clip_ctx_set_log_priority(ctx, clip_ctx_get_log_priority(m->ctx));
	clip_ctx_set_log_fn(ctx, job_log, j);
	j->filter_ctx = ctx;
	return 0;
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
static void
jobs_stop(struct clip_mediator *m)
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
		job_free(j);
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
static void
job_submit(struct clip_mediator *m, struct conn *c, struct proto_msg *msg, struct cage *target,
	   const struct policy_rule *rule, enum proto_direction dir, const char *by,
	   const uint8_t *key)
{
	const struct proto_request *q = &msg->request;
	struct outcome o = { 0 };
	struct job *j, **tail;

	if (m->n_jobs >= JOBS_MAX) {
		outcome_set(&o, PROTO_STATUS_FAILED, -EBUSY, "failed", "mediator",
			    "the mediator is busy (too many transfers in progress): try again");
		finish(m, c, q->id, c->cage, target, q->target, q->name, NULL, &o);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		outcome_error(&o, -ENOMEM, NULL, "cannot take the document");
		finish(m, c, q->id, c->cage, target, q->target, q->name, NULL, &o);
		return;
	}
	j->src_fd = msg->fd;
	msg->fd = -1;
	j->inbox_fd = target->inbox_fd;
	j->done_fd = m->done_write;
	j->max_size = rule->max_size && rule->max_size < m->opts.max_size ? rule->max_size
									  : m->opts.max_size;
	j->encrypt = rule->encrypt;
	if (key)
		memcpy(j->key, key, sizeof(j->key));
	snprintf(j->aad, sizeof(j->aad), "%s", target->name);
	j->filter = rule->filter;
	if (j->filter && job_filter_ctx(m, j) < 0) {
		outcome_error(&o, -ENOMEM, NULL, "cannot run the filter");
		finish(m, c, q->id, c->cage, target, q->target, q->name, NULL, &o);
		job_free(j);
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

/* The document is in (or not): what handle_request() did next when it read it itself. */
static void
job_finish(struct clip_mediator *m, struct job *j)
{
	struct conn *c = j->conn;
	struct outcome o = { 0 };
	struct pending *p;
	int r;

	if (j->r == -EFBIG || j->r == -EPERM) {
		outcome_set(&o, PROTO_STATUS_DENIED_POLICY, j->r, "deny", j->by,
			    j->error ? clip_error_get_message(j->error) : strerror(-j->r));
		finish(m, c, j->client_id, j->source, j->target, j->target->name, j->name, &j->d,
		       &o);
		return;
	}
	if (j->r < 0) {
		outcome_error(&o, j->r, j->error, "cannot take the document");
		finish(m, c, j->client_id, j->source, j->target, j->target->name, j->name, &j->d,
		       &o);
		return;
	}
	if (j->rule->action == POLICY_ALLOW) {
		outcome_set(&o, PROTO_STATUS_DELIVERED, 0, "allow", j->by, "allowed by policy");
		finish(m, c, j->client_id, j->source, j->target, j->target->name, j->name, &j->d,
		       &o);
		return;
	}

	/* ask */
	if (m->agent.fd < 0 || (c && c->n_pending >= PENDING_PER_CONN) ||
	    m->n_pending >= PENDING_MAX) {
		outcome_set(&o, PROTO_STATUS_DENIED_USER, 0, "deny", "mediator",
			    m->agent.fd < 0 ? "no confirmation agent is running"
					    : "too many questions waiting for the user");
		finish(m, c, j->client_id, j->source, j->target, j->target->name, j->name, &j->d,
		       &o);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		outcome_error(&o, -ENOMEM, NULL, "cannot ask");
		finish(m, c, j->client_id, j->source, j->target, j->target->name, j->name, &j->d,
		       &o);
		return;
	}
	p->src.fd = -1;
	p->client_id = j->client_id;
	p->conn = c;
	p->source = j->source;
	p->target = j->target;
	p->rule = j->rule;
	p->direction = j->direction;
	p->d = j->d;
	j->d = (struct delivery)DELIVERY_INIT;
	snprintf(p->name, sizeof(p->name), "%s", j->name);
	if (c)
		c->n_pending++;
	r = ask(m, p, j->note);
	if (r < 0) {
		if (c)
			c->n_pending--;
		p->conn = NULL;
		outcome_set(&o, PROTO_STATUS_DENIED_USER, 0, "deny", "mediator",
			    "the confirmation agent cannot be reached");
		finish(m, c, p->client_id, p->source, p->target, p->target->name, p->name, &p->d,
		       &o);
		pending_free(m, p);
		return;
	}
	p->next = m->pending;
	m->pending = p;
	m->n_pending++;
}

/* A worker is done: the rest happens here, on the loop's thread. */
static void
handle_done(struct clip_mediator *m)
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
		if (watch(m, &c->src) < 0) {
			conn_close(m, c);
			j->conn = NULL;
		}
	}
	jobs_schedule(m);
	job_finish(m, j);
	job_free(j);
}

/* --- the rate of requests --- */

/* Take a token from @c's bucket: false when it is empty. */
static bool
rate_take(struct cage *c, uint64_t now, uint32_t *ret_wait_ms)
{
	if (c->rate_per_s == CLIP_MEDIATOR_RATE_UNLIMITED)
		return true;
	c->tokens += (double)(now - c->refilled_ns) * c->rate_per_s / 1e9;
	if (c->tokens > c->rate_burst)
		c->tokens = c->rate_burst;
	c->refilled_ns = now;
	if (c->tokens >= 1) {
		c->tokens -= 1;
		return true;
	}
	*ret_wait_ms = (uint32_t)((1 - c->tokens) * 1000 / c->rate_per_s) + 1;
	return false;
}

/* Record the refusals not recorded yet (at most one record per window). */
static void
rate_flush(struct clip_mediator *m, struct cage *c)
{
	char reason[128];

	if (!c->limit_suppressed)
		return;
	snprintf(reason, sizeof(reason), "%" PRIu64 " more requests refused over the rate limit",
		 c->limit_suppressed);
	(void)audit_record(m, "limited", c, NULL, NULL, NULL, NULL, "deny", "mediator", reason);
	c->limit_suppressed = 0;
}

/*
 * Whether the cage of @c may send one more message now. When it may not,
 * @reason says why, and the refusal is recorded unless one was in this
 * window (then it is counted, and the count recorded later): a flood of
 * requests must not become a flood of records.
 */
static bool
rate_check(struct clip_mediator *m, struct conn *c, const struct proto_request *q, char *reason,
	   size_t size)
{
	struct cage *cage = c->cage;
	uint64_t now = now_ns();
	uint32_t wait_ms = 0;
	bool window_over =
		!cage->limit_audited_ns || now - cage->limit_audited_ns >= RATE_AUDIT_WINDOW_NS;
	char text[PROTO_TEXT_MAX + 1];

	if (rate_take(cage, now, &wait_ms)) {
		if (window_over && cage->limit_suppressed) {
			rate_flush(m, cage);
			cage->limit_audited_ns = now;
		}
		return true;
	}
	snprintf(reason, size,
		 "over the rate limit of cage '%s' (%" PRIu32 " requests per second, %" PRIu32
		 " at once): try again in %" PRIu32 " ms",
		 cage->name, cage->rate_per_s, cage->rate_burst, wait_ms);
	if (!window_over) {
		cage->limit_suppressed++;
		return false;
	}
	if (cage->limit_suppressed)
		snprintf(text, sizeof(text),
			 "%.440s; %" PRIu64 " more refused since the last record", reason,
			 cage->limit_suppressed);
	else
		snprintf(text, sizeof(text), "%s", reason);
	(void)audit_record(m, "limited", cage, q ? find_cage(m, q->target) : NULL,
			   q ? q->target : NULL, q ? q->name : NULL, NULL, "deny", "mediator",
			   text);
	log_notice(m->ctx, "cage '%s' is over its rate limit", cage->name);
	cage->limit_audited_ns = now;
	cage->limit_suppressed = 0;
	return false;
}

static void
handle_request(struct clip_mediator *m, struct conn *c, struct proto_msg *msg)
{
	_cleanup_(clip_error_freep) struct clip_error *error = NULL;
	const struct proto_request *q = &msg->request;
	struct cage *source = c->cage, *target = find_cage(m, q->target);
	struct outcome o = { 0 };
	const struct policy_rule *rule = NULL;
	enum proto_direction dir = PROTO_DIRECTION_INCOMPARABLE;
	uint8_t key[CLIP_KEY_SIZE];
	char by[300];
	int r;

	if (audit_record(m, "request", source, target, q->target, q->name, NULL, "-", "-",
			 q->note) < 0) {
		outcome_set(&o, PROTO_STATUS_FAILED, -EIO, "failed", "mediator",
			    "the audit log cannot be written");
		reply(m, c, q->id, &o, NULL);
		return;
	}
	if (target) {
		dir = policy_direction(source->level, target->level);
		rule = policy_match(m->policy, source->name, source->level, target->name,
				    target->level);
	}
	if (rule)
		snprintf(by, sizeof(by), "policy %s:%u", m->policy->origin, rule->line);
	else
		snprintf(by, sizeof(by), "policy default");
	if (!target)
		outcome_set(&o, PROTO_STATUS_DENIED_POLICY, 0, "deny", "mediator", "no such cage");
	else if (!rule || rule->action == POLICY_DENY)
		outcome_set(&o, PROTO_STATUS_DENIED_POLICY, 0, "deny", by,
			    dir == PROTO_DIRECTION_INCOMPARABLE ? "incomparable levels"
			    : rule                              ? "a deny rule"
								: "no rule allows it");
	else if (rule->action == POLICY_ALLOW &&
		 clip_level_dominates(target->level, source->level) != 1)
		/* Unreachable: the parser and add_cage refuse such a rule. Kept as a fuse. */
		outcome_set(&o, PROTO_STATUS_DENIED_POLICY, 0, "deny", by, "a downgrade");
	if (o.decision) {
		finish(m, c, q->id, source, target, q->target, q->name, NULL, &o);
		return;
	}

	/* The context is not the workers': the key is made here. */
	if (rule->encrypt) {
		r = envelope_key(m->ctx, target->name, key, &error);
		if (r < 0) {
			outcome_error(&o, r, error, "cannot seal an envelope");
			finish(m, c, q->id, source, target, q->target, q->name, NULL, &o);
			return;
		}
	}
	job_submit(m, c, msg, target, rule, dir, by, rule->encrypt ? key : NULL);
	secure_wipe(key, sizeof(key));
}

static void
answer(struct clip_mediator *m, struct pending *p, enum proto_status status, const char *by,
       const char *reason)
{
	struct outcome o = { 0 };
	struct conn *c = p->conn;

	/* Detached first: finish() may close the connection (a requester that does not read). */
	pending_unlink(m, p);
	if (c)
		c->n_pending--;
	p->conn = NULL;
	outcome_set(&o, status, 0, status == PROTO_STATUS_DELIVERED ? "allow" : "deny", by, reason);
	finish(m, c, p->client_id, p->source, p->target, p->target->name, p->name, &p->d, &o);
	pending_free(m, p);
}

static void
handle_conn(struct clip_mediator *m, struct conn *c)
{
	_cleanup_(clip_error_freep) struct clip_error *error = NULL;
	struct proto_msg msg;
	char reason[PROTO_TEXT_MAX + 1];
	int r;

	r = proto_recv(c->src.fd, &msg, &error);
	if (r == -EAGAIN)
		return;
	if (r == -ECONNRESET) {
		conn_close(m, c);
		return;
	}
	/* Any message costs a token, a broken one too: each would be a record. */
	if (!rate_check(m, c, r == 0 && msg.type == PROTO_REQUEST ? &msg.request : NULL, reason,
			sizeof(reason))) {
		if (r == 0 && msg.type == PROTO_REQUEST) {
			struct outcome o = { 0 };

			outcome_set(&o, PROTO_STATUS_FAILED, -EAGAIN, "deny", "mediator", reason);
			reply(m, c, msg.request.id, &o, NULL);
		} else
			conn_close(m, c);
		if (r == 0)
			proto_msg_done(&msg);
		return;
	}
	if (r == 0 && msg.type != PROTO_REQUEST) {
		proto_msg_done(&msg);
		r = error_set(&error, -EBADMSG, "a cage may only send requests");
	}
	if (r < 0) {
		/* Hostile or broken: audited, then the connection is closed. */
		log_warning(m->ctx, "cage '%s' (pid %d): %s", c->cage->name, (int)c->cred.pid,
			    clip_error_get_message(error));
		(void)audit_record(m, "rejected", c->cage, NULL, NULL, NULL, NULL, "deny",
				   "mediator", clip_error_get_message(error));
		conn_close(m, c);
		return;
	}
	handle_request(m, c, &msg);
	proto_msg_done(&msg);
}

static int
accept_peer(int listen_fd, struct ucred *cred)
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

	if ((cage->check_uid && cred->uid != cage->uid) || m->n_conns >= CONNS_MAX) {
		log_warning(m->ctx, "cage '%s': refusing a peer (pid %d, uid %u)", cage->name,
			    (int)cred->pid, (unsigned)cred->uid);
		close(fd);
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
	r = watch(m, &c->src);
	if (r < 0) {
		close(fd);
		free(c);
		return r;
	}
	c->next = m->conns;
	m->conns = c;
	m->n_conns++;
	return 0;
}

static void
handle_cage_listen(struct clip_mediator *m, struct cage *cage)
{
	struct ucred cred;
	int fd;

	fd = accept_peer(cage->src.fd, &cred);
	if (fd >= 0)
		(void)conn_add(m, cage, fd, &cred);
}

static int
add_connection(struct clip_mediator *m, const char *name, int fd, struct clip_error **reterr)
{
	struct cage *cage = find_cage(m, name);
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

static void
agent_gone(struct clip_mediator *m)
{
	unwatch_close(m, &m->agent);
	while (m->pending)
		answer(m, m->pending, PROTO_STATUS_DENIED_USER, "mediator",
		       "the confirmation agent went away");
}

static void
handle_agent_listen(struct clip_mediator *m)
{
	struct ucred cred;
	int fd;

	fd = accept_peer(m->agent_listen.fd, &cred);
	if (fd < 0)
		return;
	if (cred.uid != 0 && cred.uid != geteuid()) {
		log_warning(m->ctx, "refusing a confirmation agent of uid %u", (unsigned)cred.uid);
		close(fd);
		return;
	}
	/* The newest agent is the one asked; questions to the old one are denied. */
	if (m->agent.fd >= 0)
		agent_gone(m);
	m->agent.fd = fd;
	if (watch(m, &m->agent) < 0 ||
	    proto_send(fd, &(struct proto_msg){ .type = PROTO_HELLO, .fd = -1 }, NULL) < 0)
		unwatch_close(m, &m->agent);
	else
		log_info(m->ctx, "confirmation agent connected (pid %d)", (int)cred.pid);
}

static void
handle_agent(struct clip_mediator *m)
{
	_cleanup_(clip_error_freep) struct clip_error *error = NULL;
	struct proto_msg msg;
	int r;

	r = proto_recv(m->agent.fd, &msg, &error);
	if (r == -EAGAIN)
		return;
	if (r == 0 && msg.type != PROTO_ANSWER)
		r = error_set(&error, -EBADMSG, "an agent may only send answers");
	if (r < 0) {
		if (r != -ECONNRESET)
			log_warning(m->ctx, "confirmation agent: %s",
				    clip_error_get_message(error));
		proto_msg_done(&msg);
		agent_gone(m);
		return;
	}
	for (struct pending *p = m->pending; p; p = p->next)
		if (p->id == msg.answer.id) {
			if (msg.answer.allow)
				answer(m, p, PROTO_STATUS_DELIVERED, "user",
				       "confirmed by the user");
			else
				answer(m, p, PROTO_STATUS_DENIED_USER, "user",
				       "refused by the user");
			return;
		}
	log_notice(m->ctx, "confirmation agent answered an unknown question");
}

static void
handle_timer(struct clip_mediator *m, struct pending *p)
{
	char reason[96];

	snprintf(reason, sizeof(reason), "no answer within %u ms", m->opts.confirm_timeout_ms);
	answer(m, p, PROTO_STATUS_DENIED_USER, "timeout", reason);
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
		handle_agent_listen(m);
		break;
	case SOURCE_AGENT:
		handle_agent(m);
		break;
	case SOURCE_TIMER:
		handle_timer(m, (struct pending *)s);
		break;
	case SOURCE_DONE:
		handle_done(m);
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
