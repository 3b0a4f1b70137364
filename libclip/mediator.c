/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The mediator; doc/transfer.md explains it. One epoll fd holds the cage
 * sockets, their connections, the agent socket and connection, and a
 * timerfd per question to the user.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

#include <clip/audit.h>
#include <clip/label.h>
#include <clip/mediator.h>

#include "cleanup.h"
#include "deliver.h"
#include "error.h"
#include "log.h"
#include "policy.h"
#include "proto.h"
#include "util.h"

#define CAGES_MAX 256
#define CONNS_MAX 1024
#define PENDING_MAX 256
#define PENDING_PER_CONN 4
#define DEFAULT_TIMEOUT_MS 60000
#define DEFAULT_MAX_SIZE (UINT64_C(4) << 30)

enum source_kind {
	SOURCE_CAGE_LISTEN,
	SOURCE_CONN,
	SOURCE_AGENT_LISTEN,
	SOURCE_AGENT,
	SOURCE_TIMER,
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
};

struct conn {
	struct source src;
	struct cage *cage;
	struct ucred cred;
	unsigned n_pending;
	struct conn *next;
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
	for (struct conn **pp = &m->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			m->n_conns--;
			break;
		}
	unwatch_close(m, &c->src);
	free(c);
}

static struct clip_mediator *
mediator_free(struct clip_mediator *m)
{
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

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->n_ref = 1;
	m->agent_listen = (struct source){ SOURCE_AGENT_LISTEN, -1 };
	m->agent = (struct source){ SOURCE_AGENT, -1 };
	m->ctx = clip_ctx_ref(ctx);
	m->policy = clip_policy_ref(policy);
	m->audit = clip_audit_ref(audit);
	if (opts)
		memcpy(&m->opts, opts, opts->size < sizeof(m->opts) ? opts->size : sizeof(m->opts));
	if (!m->opts.confirm_timeout_ms)
		m->opts.confirm_timeout_ms = DEFAULT_TIMEOUT_MS;
	if (!m->opts.max_size)
		m->opts.max_size = DEFAULT_MAX_SIZE;
	m->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (m->epfd < 0)
		return error_set_errno(reterr, -errno, "cannot create an epoll fd");
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
	ctx_assert_log_return(m->ctx,
			      cage && cage->size >= sizeof(*cage) && cage->name && cage->level,
			      api_return(-EINVAL, reterr));
	ctx_assert_log_return(m->ctx, cage->inbox_fd >= 0, api_return(-EBADF, reterr));

	return api_return(add_cage(m, cage, reterr), reterr);
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

static void
handle_request(struct clip_mediator *m, struct conn *c, struct proto_msg *msg)
{
	_cleanup_(clip_error_freep) struct clip_error *error = NULL;
	const struct proto_request *q = &msg->request;
	struct cage *source = c->cage, *target = find_cage(m, q->target);
	struct delivery d = DELIVERY_INIT;
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

	if (rule->encrypt) {
		r = envelope_key(m->ctx, target->name, key, &error);
		if (r < 0) {
			outcome_error(&o, r, error, "cannot seal an envelope");
			finish(m, c, q->id, source, target, q->target, q->name, NULL, &o);
			return;
		}
	}
	r = deliver_receive(target->inbox_fd, msg->fd,
			    rule->max_size && rule->max_size < m->opts.max_size ? rule->max_size
										: m->opts.max_size,
			    rule->encrypt ? key : NULL, target->name, &d, &error);
	secure_wipe(key, sizeof(key));
	proto_msg_done(msg); /* the source is never kept, never written */
	if (r == 0 && rule->filter)
		r = deliver_filter(&d, rule->filter, &error);
	if (r == -EFBIG || r == -EPERM) {
		outcome_set(&o, PROTO_STATUS_DENIED_POLICY, r, "deny", by,
			    error ? clip_error_get_message(error) : strerror(-r));
		finish(m, c, q->id, source, target, q->target, q->name, &d, &o);
		return;
	}
	if (r < 0) {
		outcome_error(&o, r, error, "cannot take the document");
		finish(m, c, q->id, source, target, q->target, q->name, &d, &o);
		return;
	}
	if (rule->action == POLICY_ALLOW) {
		outcome_set(&o, PROTO_STATUS_DELIVERED, 0, "allow", by, "allowed by policy");
		finish(m, c, q->id, source, target, q->target, q->name, &d, &o);
		return;
	}

	/* ask */
	if (m->agent.fd < 0 || c->n_pending >= PENDING_PER_CONN || m->n_pending >= PENDING_MAX) {
		outcome_set(&o, PROTO_STATUS_DENIED_USER, 0, "deny", "mediator",
			    m->agent.fd < 0 ? "no confirmation agent is running"
					    : "too many questions waiting for the user");
		finish(m, c, q->id, source, target, q->target, q->name, &d, &o);
		return;
	}
	{
		struct pending *p = calloc(1, sizeof(*p));

		if (!p) {
			outcome_error(&o, -ENOMEM, NULL, "cannot ask");
			finish(m, c, q->id, source, target, q->target, q->name, &d, &o);
			return;
		}
		p->src.fd = -1;
		p->client_id = q->id;
		p->conn = c;
		p->source = source;
		p->target = target;
		p->rule = rule;
		p->direction = dir;
		p->d = d;
		snprintf(p->name, sizeof(p->name), "%s", q->name);
		c->n_pending++;
		r = ask(m, p, q->note);
		if (r < 0) {
			c->n_pending--;
			p->conn = NULL;
			outcome_set(&o, PROTO_STATUS_DENIED_USER, 0, "deny", "mediator",
				    "the confirmation agent cannot be reached");
			finish(m, c, q->id, source, target, q->target, q->name, &p->d, &o);
			pending_free(m, p);
			return;
		}
		p->next = m->pending;
		m->pending = p;
		m->n_pending++;
	}
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
	int r;

	r = proto_recv(c->src.fd, &msg, &error);
	if (r == -EAGAIN)
		return;
	if (r == -ECONNRESET) {
		conn_close(m, c);
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
