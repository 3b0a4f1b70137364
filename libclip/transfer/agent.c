/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The confirmation agent's side of the protocol (clip-agent(3),
 * doc/confirm-protocol.md): what every desktop would otherwise re-code.
 * The mediator is trusted to ask, not to be well formed: every message is
 * decoded strictly (proto.c), and one that breaks the protocol (a field
 * out of its kind, a question id given twice, more questions than the
 * mediator may hold, a type that is not for an agent) ends the connection,
 * so that nothing half-understood is ever shown to the user.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <clip/agent.h>

#include "base/error.h"
#include "base/utf8.h"
#include "base/util.h"
#include "proto.h"
#include "transfer-internal.h"

/* The mediator holds at most 256 questions (doc/confirm-protocol.md). */
#define AGENT_QUESTIONS_MAX 256

struct clip_agent_question {
	unsigned n_ref;
	const struct clip_agent *agent; /* whose question: compared, never followed */
	int state; /* CLIP_AGENT_PENDING... */
	unsigned flags;
	uint64_t deadline_ms;
	char *name_escaped, *note_escaped;
	struct clip_agent_question *next; /* in the agent's pending list */
	struct proto_prompt p;
};

struct clip_agent {
	unsigned n_ref;
	int sock; /* -1 once closed */
	struct clip_agent_question *pending; /* each holds a reference */
	size_t n_pending;
};

static struct clip_agent_question *
question_free(struct clip_agent_question *q)
{
	free(q->name_escaped);
	free(q->note_escaped);
	free(q);
	return NULL;
}

CLIP_EXPORT struct clip_agent_question *
clip_agent_question_ref(struct clip_agent_question *q)
{
	if (q)
		q->n_ref++;
	return q;
}

CLIP_EXPORT struct clip_agent_question *
clip_agent_question_unref(struct clip_agent_question *q)
{
	if (q && --q->n_ref == 0)
		question_free(q);
	return NULL;
}

/* Take @q out of the pending list, in state @state; the list's reference is returned. */
static struct clip_agent_question *
agent_take(struct clip_agent *a, struct clip_agent_question *q, int state)
{
	for (struct clip_agent_question **pp = &a->pending; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			q->next = NULL;
			a->n_pending--;
			break;
		}
	q->state = state;
	return q;
}

/* The connection ends: every pending question is gone (the mediator denies them). */
static void
agent_close(struct clip_agent *a)
{
	while (a->pending)
		clip_agent_question_unref(agent_take(a, a->pending, CLIP_AGENT_GONE));
	if (a->sock >= 0)
		close(a->sock);
	a->sock = -1;
}

static int
agent_connect(struct clip_agent **ret, const char *path, struct clip_error **reterr)
{
	struct clip_agent *a;
	int r, sock;

	r = transfer_connect_to(&sock, path, "CLIP_AGENT_SOCKET", CLIP_AGENT_SOCKET, 0, reterr);
	if (r < 0)
		return r;
	a = calloc(1, sizeof(*a));
	if (!a) {
		close(sock);
		return -ENOMEM;
	}
	a->n_ref = 1;
	a->sock = sock;
	*ret = a;
	return 0;
}

CLIP_EXPORT int
clip_agent_connect(struct clip_agent **ret, const char *path, const struct clip_agent_opts *opts,
		   struct clip_error **reterr)
{
	struct clip_agent_opts o = { .size = sizeof(o) };
	int r;

	clip_assert_reterr(reterr);
	clip_assert_return(ret, api_return(-EINVAL, reterr));

	if (opts) {
		r = struct_copy_in(&o, sizeof(o), opts, sizeof(o), "struct clip_agent_opts",
				   reterr);
		if (r < 0)
			return api_return(r, reterr);
		if (o.flags)
			return api_return(error_set(reterr, -EINVAL,
						    "unknown flags 0x%" PRIx32
						    " in struct clip_agent_opts",
						    o.flags),
					  reterr);
	}
	return api_return(agent_connect(ret, path, reterr), reterr);
}

CLIP_EXPORT struct clip_agent *
clip_agent_ref(struct clip_agent *a)
{
	if (a)
		a->n_ref++;
	return a;
}

CLIP_EXPORT struct clip_agent *
clip_agent_unref(struct clip_agent *a)
{
	if (a && --a->n_ref == 0) {
		agent_close(a);
		free(a);
	}
	return NULL;
}

CLIP_EXPORT int
clip_agent_get_fd(struct clip_agent *a)
{
	clip_assert_return(a, -EINVAL);
	return a->sock >= 0 ? a->sock : -EINVAL;
}

/*
 * @s escaped for display on one line (utf8_put_escaped(), spaces
 * collapsed); *changed when that is not @s as it came.
 */
static char *
escape(const char *s, bool *changed)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (!f)
		return NULL;
	utf8_put_escaped(f, s, true, SIZE_MAX);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	*changed = strcmp(text, s) != 0;
	return text;
}

/* A prompt: a new pending question, or -EBADMSG when the mediator lies. */
static int
agent_on_prompt(struct clip_agent *a, const struct proto_prompt *p,
		struct clip_agent_question **ret, struct clip_error **reterr)
{
	struct clip_agent_question *q;
	bool changed = false;

	for (q = a->pending; q; q = q->next)
		if (q->p.id == p->id)
			return error_set(reterr, -EBADMSG,
					 "the mediator asked question %016" PRIx64
					 " twice while it was pending",
					 p->id);
	if (a->n_pending >= AGENT_QUESTIONS_MAX)
		return error_set(reterr, -EBADMSG,
				 "the mediator asked more than the %d questions it may hold",
				 AGENT_QUESTIONS_MAX);
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->n_ref = 1;
	q->agent = a;
	q->p = *p;
	q->deadline_ms = (uint64_t)now_ms() + p->timeout_ms;
	q->name_escaped = escape(p->name, &changed);
	if (changed)
		q->flags |= CLIP_AGENT_NAME_ESCAPED;
	q->note_escaped = escape(p->note, &changed);
	if (changed)
		q->flags |= CLIP_AGENT_NOTE_ESCAPED;
	if (p->encrypt)
		q->flags |= CLIP_AGENT_ENCRYPTED;
	if (!q->name_escaped || !q->note_escaped) {
		question_free(q);
		return -ENOMEM;
	}
	q->next = a->pending;
	a->pending = q;
	a->n_pending++;
	*ret = clip_agent_question_ref(q);
	return CLIP_AGENT_QUESTION;
}

/* One message: an event (> 0), 0 for one that says nothing to the caller, or -errno. */
static int
agent_on_message(struct clip_agent *a, const struct proto_msg *msg,
		 struct clip_agent_question **ret, struct clip_error **reterr)
{
	struct proto_msg f = { .type = PROTO_FEATURES, .fd = -1 };
	struct clip_agent_question *q;

	switch (msg->type) {
	case PROTO_HELLO:
		/* We want to know when a question expires: no timer of our own. */
		f.features.flags = PROTO_FEATURE_EXPIRED;
		return proto_send(a->sock, &f, reterr) < 0 ? -ECONNRESET : CLIP_AGENT_READY;
	case PROTO_PROMPT:
		return agent_on_prompt(a, &msg->prompt, ret, reterr);
	case PROTO_EXPIRED:
		for (q = a->pending; q && q->p.id != msg->expired.id; q = q->next)
			;
		/* Answered already: the answer crossed the expiry, and is ignored. */
		if (!q)
			return 0;
		if (msg->expired.reason == PROTO_EXPIRY_TIMEOUT) {
			*ret = agent_take(a, q, CLIP_AGENT_TIMED_OUT);
			return CLIP_AGENT_EXPIRED;
		}
		*ret = agent_take(a, q, CLIP_AGENT_GONE);
		return CLIP_AGENT_WITHDRAWN;
	default:
		return error_set(
			reterr, -EBADMSG,
			"the mediator sent a message of type %u, which is not for an agent",
			(unsigned)msg->type);
	}
}

static int
agent_receive(struct clip_agent *a, int timeout_ms, struct clip_agent_question **ret,
	      struct clip_error **reterr)
{
	long long deadline = timeout_ms < 0 ? LLONG_MAX : now_ms() + timeout_ms;

	for (;;) {
		struct proto_msg msg;
		int r;

		if (a->sock < 0)
			return error_set(reterr, -ECONNRESET,
					 "the connection to the mediator is closed");
		r = proto_recv(a->sock, &msg, reterr);
		if (r == -EAGAIN) {
			if (timeout_ms == 0)
				return CLIP_AGENT_NONE;
			r = wait_readable(a->sock, deadline);
			if (r == -ETIMEDOUT)
				return CLIP_AGENT_NONE;
			if (r < 0)
				return error_set_errno(reterr, r, "cannot wait for the mediator");
			continue;
		}
		if (r == -ECONNRESET) {
			agent_close(a);
			return error_set(reterr, -ECONNRESET, "the mediator went away");
		}
		if (r == 0) {
			r = agent_on_message(a, &msg, ret, reterr);
			proto_msg_done(&msg);
		}
		if (r < 0) {
			/* A mediator that breaks the protocol is asked nothing more. */
			if (r != -ENOMEM)
				agent_close(a);
			return r;
		}
		if (r > 0)
			return r;
	}
}

CLIP_EXPORT int
clip_agent_receive(struct clip_agent *a, int timeout_ms, struct clip_agent_question **ret,
		   struct clip_error **reterr)
{
	struct clip_agent_question *q = NULL;
	int r;

	clip_assert_reterr(reterr);
	clip_assert_return(a && timeout_ms >= -1, api_return(-EINVAL, reterr));

	r = agent_receive(a, timeout_ms, &q, reterr);
	if (ret)
		*ret = q;
	else
		clip_agent_question_unref(q);
	return api_return(r, reterr);
}

static int
agent_answer(struct clip_agent *a, struct clip_agent_question *q, bool allow,
	     struct clip_error **reterr)
{
	struct proto_msg m = { .type = PROTO_ANSWER, .fd = -1 };
	int r;

	if (q->agent != a)
		return error_set(reterr, -EINVAL, "question %016" PRIx64 " is not this agent's",
				 q->p.id);
	switch (q->state) {
	case CLIP_AGENT_ANSWERED:
		return error_set(reterr, -EALREADY, "question %016" PRIx64 " is answered already",
				 q->p.id);
	case CLIP_AGENT_TIMED_OUT:
		return error_set(reterr, -ETIMEDOUT,
				 "question %016" PRIx64 " expired: it was denied", q->p.id);
	case CLIP_AGENT_GONE:
		return error_set(reterr, -ECONNRESET,
				 "question %016" PRIx64 " was withdrawn: nothing is delivered",
				 q->p.id);
	}
	m.answer.id = q->p.id;
	m.answer.allow = allow;
	r = proto_send(a->sock, &m, NULL);
	if (r < 0) {
		agent_close(a);
		return error_set_errno(reterr, -ECONNRESET, "cannot send the answer");
	}
	clip_agent_question_unref(agent_take(a, q, CLIP_AGENT_ANSWERED));
	return 0;
}

CLIP_EXPORT int
clip_agent_answer(struct clip_agent *a, struct clip_agent_question *q, int allow,
		  struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	clip_assert_return(a && q, api_return(-EINVAL, reterr));

	return api_return(agent_answer(a, q, allow != 0, reterr), reterr);
}

CLIP_EXPORT uint64_t
clip_agent_question_get_id(const struct clip_agent_question *q)
{
	clip_assert_return(q, 0);
	return q->p.id;
}

CLIP_EXPORT int
clip_agent_question_get_state(const struct clip_agent_question *q)
{
	clip_assert_return(q, -EINVAL);
	return q->state;
}

CLIP_EXPORT const char *
clip_agent_question_get_source(const struct clip_agent_question *q, const char **level)
{
	clip_assert_return(q, NULL);
	if (level)
		*level = q->p.source_level;
	return q->p.source;
}

CLIP_EXPORT const char *
clip_agent_question_get_target(const struct clip_agent_question *q, const char **level)
{
	clip_assert_return(q, NULL);
	if (level)
		*level = q->p.target_level;
	return q->p.target;
}

CLIP_EXPORT int
clip_agent_question_get_direction(const struct clip_agent_question *q)
{
	clip_assert_return(q, -EINVAL);
	return q->p.direction;
}

CLIP_EXPORT unsigned
clip_agent_question_get_flags(const struct clip_agent_question *q)
{
	clip_assert_return(q, 0);
	return q->flags;
}

CLIP_EXPORT int
clip_agent_question_get_digest(const struct clip_agent_question *q, uint64_t *size, uint8_t *sha256)
{
	clip_assert_return(q, -EINVAL);
	if (size)
		*size = q->p.size;
	if (sha256)
		memcpy(sha256, q->p.sha256, sizeof(q->p.sha256));
	return 0;
}

CLIP_EXPORT const char *
clip_agent_question_get_name(const struct clip_agent_question *q, int escaped)
{
	clip_assert_return(q, NULL);
	return escaped ? q->name_escaped : q->p.name;
}

CLIP_EXPORT const char *
clip_agent_question_get_note(const struct clip_agent_question *q, int escaped)
{
	clip_assert_return(q, NULL);
	return escaped ? q->note_escaped : q->p.note;
}

CLIP_EXPORT uint64_t
clip_agent_question_get_deadline(const struct clip_agent_question *q, uint32_t *timeout_ms)
{
	clip_assert_return(q, 0);
	if (timeout_ms)
		*timeout_ms = q->p.timeout_ms;
	return q->deadline_ms;
}
