/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The mediator's side of the confirmation agent (doc/confirm-protocol.md):
 * its socket, the one agent connected, the questions put to it (each with
 * a timer) and its answers. A question nobody answers is a denial, and an
 * agent that asked for it (PROTO_FEATURES) is told when a question
 * expires, so that it needs no timer of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <clip/feed.h>
#include <clip/mediator.h>

#include "base/error.h"
#include "base/log.h"
#include "proto.h"
#include "transfer-internal.h"
#include "base/util.h"

void
mediator_pending_free(struct clip_mediator *m, struct pending *p)
{
	mediator_unwatch_close(m, &p->src);
	deliver_abort(&p->d);
	p->source->pending_out -= p->charged;
	p->target->pending_in -= p->charged;
	if (p->conn)
		p->conn->n_pending--;
	p->source->n_pending--;
	clip_policy_unref(p->policy);
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

CLIP_EXPORT int
clip_mediator_add_agent_socket(struct clip_mediator *m, int socket_fd, struct clip_error **reterr)
{
	int r;

	clip_assert_reterr(reterr);
	clip_assert_return(m, api_return(-EINVAL, reterr));
	ctx_assert_return_error(m->ctx, reterr);
	ctx_assert_log_return(m->ctx, socket_fd >= 0, api_return(-EBADF, reterr));
	ctx_assert_log_return(m->ctx, m->agent_listen.fd < 0, api_return(-EINVAL, reterr));

	if (mediator_is_listening_seqpacket(socket_fd) <= 0)
		return api_return(error_set(reterr, -EBADF,
					    "the agent socket is not a listening "
					    "SOCK_SEQPACKET socket"),
				  reterr);
	m->agent_listen.fd = fcntl(socket_fd, F_DUPFD_CLOEXEC, 3);
	if (m->agent_listen.fd < 0)
		return api_return(-errno, reterr);
	r = fcntl(m->agent_listen.fd, F_SETFL, O_NONBLOCK) < 0
		    ? -errno
		    : mediator_watch(m, &m->agent_listen);
	if (r < 0) {
		close(m->agent_listen.fd);
		m->agent_listen.fd = -1;
	}
	return api_return(r, reterr);
}

int
mediator_ask(struct clip_mediator *m, struct pending *p, const char *note)
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
	r = mediator_watch(m, &p->src);
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
	r = proto_send(m->agent.fd, &msg, NULL);
	if (r >= 0)
		mediator_feed(m, CLIP_FEED_TRANSFER_ASKED, p->source->name, p->target->name,
			      p->name, NULL);
	return r;
}

static void
answer(struct clip_mediator *m, struct pending *p, enum proto_status status, const char *by,
       const char *reason)
{
	struct outcome o = { 0 };
	struct conn *c = p->conn;

	/* Detached first: mediator_finish() may close the connection (a requester that does not read). */
	pending_unlink(m, p);
	if (c)
		c->n_pending--;
	p->conn = NULL;
	mediator_outcome_set(&o, status, 0, status == PROTO_STATUS_DELIVERED ? "allow" : "deny", by,
			     reason);
	mediator_finish(m, c, p->client_id, p->source, p->target, p->target->name, p->name, &p->d,
			&o);
	mediator_pending_free(m, p);
}

/* Tell the agent that @p takes no answer any more, when it asked to know. */
static void
expire(struct clip_mediator *m, const struct pending *p, enum proto_expiry reason)
{
	struct proto_msg msg = { .type = PROTO_EXPIRED, .fd = -1 };
	int r;

	if (m->agent.fd < 0 || !(m->agent_features & PROTO_FEATURE_EXPIRED))
		return;
	msg.expired.id = p->id;
	msg.expired.reason = (uint8_t)reason;
	/* An agent that does not read: it learns the question is gone when it answers. */
	r = proto_send(m->agent.fd, &msg, NULL);
	if (r < 0)
		log_debug(m->ctx, "cannot tell the confirmation agent a question expired: %s",
			  strerror(-r));
}

void
mediator_agent_withdraw_all(struct clip_mediator *m)
{
	/* A forked child has the agent's socket, not its questions to withdraw. */
	if (getpid() != m->pid)
		return;
	for (struct pending *p = m->pending; p; p = p->next)
		expire(m, p, PROTO_EXPIRY_WITHDRAWN);
	/*
	 * And each requester is answered, and the refusal audited, instead of
	 * finding its connection closed: a stopping session or clipd says no.
	 * The document, unnamed in the target's inbox, goes with the answer.
	 */
	while (m->pending)
		answer(m, m->pending, PROTO_STATUS_DENIED_USER, "mediator",
		       "the mediator stopped before the user answered");
}

static void
agent_gone(struct clip_mediator *m)
{
	m->agent_features = 0;
	mediator_unwatch_close(m, &m->agent);
	while (m->pending)
		answer(m, m->pending, PROTO_STATUS_DENIED_USER, "mediator",
		       "the confirmation agent went away");
}

void
mediator_agent_listen(struct clip_mediator *m)
{
	struct ucred cred;
	int fd;

	fd = mediator_accept_peer(m->agent_listen.fd, &cred);
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
	if (mediator_watch(m, &m->agent) < 0 ||
	    proto_send(fd, &(struct proto_msg){ .type = PROTO_HELLO, .fd = -1 }, NULL) < 0)
		mediator_unwatch_close(m, &m->agent);
	else
		log_info(m->ctx, "confirmation agent connected (pid %d)", (int)cred.pid);
}

void
mediator_agent_handle(struct clip_mediator *m)
{
	_cleanup_(clip_error_freep) struct clip_error *error = NULL;
	struct proto_msg msg;
	int r;

	r = proto_recv(m->agent.fd, &msg, &error);
	if (r == -EAGAIN)
		return;
	if (r == 0 && msg.type == PROTO_FEATURES) {
		/* Bits of a later version are ignored: it gets what this one has. */
		m->agent_features = msg.features.flags & PROTO_FEATURE_EXPIRED;
		log_debug(m->ctx, "confirmation agent features 0x%" PRIx32 ", taken 0x%" PRIx32,
			  msg.features.flags, m->agent_features);
		return;
	}
	if (r == 0 && msg.type != PROTO_ANSWER)
		r = error_set(&error, -EBADMSG, "an agent may only send answers and features");
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

void
mediator_handle_timer(struct clip_mediator *m, struct pending *p)
{
	char reason[96];

	snprintf(reason, sizeof(reason), "no answer within %u ms", m->opts.confirm_timeout_ms);
	expire(m, p, PROTO_EXPIRY_TIMEOUT);
	answer(m, p, PROTO_STATUS_DENIED_USER, "timeout", reason);
}
