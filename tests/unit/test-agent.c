/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clip-agent(3): a confirmation agent against a real mediator in this
 * process (asked, answered, expired), and against a fake one that lies
 * (a field out of its kind, an oversized message, a question asked twice,
 * a message that is not for an agent) or is answered wrongly; the feed of
 * what the user should see, which the mediator pushes its transfers into,
 * and a session watch that reads a runner's events as a peer's words.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <clip/clip.h>

#include "base/util.h"
#include "helpers.h"
#include "mediator-world.h"
#include "transfer/proto.h"

/* Run the mediator until the agent has something (5 s at most); what it got. */
static int
next(struct test_world *w, struct clip_agent_question **q)
{
	long long deadline = now_ms() + 5000;

	for (;;) {
		struct pollfd p[2] = {
			{ .fd = clip_mediator_get_fd(w->m), .events = POLLIN },
			{ .fd = clip_agent_get_fd(w->agent), .events = POLLIN },
		};
		int r;

		test_world_pump(w);
		r = clip_agent_receive(w->agent, 0, q, NULL);
		if (r != CLIP_AGENT_NONE || now_ms() > deadline)
			return r;
		poll(p, 2, 100);
	}
}

static void
world_setup(struct test_world *w, uint32_t timeout_ms)
{
	struct clip_mediator_opts opts = { .size = sizeof(opts), .confirm_timeout_ms = timeout_ms };

	test_world_setup(w, "low high ask\nhigh low ask\n", opts);
	cr_assert_eq(clip_agent_connect(&w->agent, w->agent_sock, NULL, NULL), 0);
	cr_assert_eq(next(w, NULL), CLIP_AGENT_READY, "the agent is greeted");
}

/* A transfer from low to high, sent and not waited for. */
static struct clip_transfer *
ask(struct test_world *w, const char *content, const char *note)
{
	struct clip_transfer *t = NULL;
	int sock, src;

	cr_assert_eq(clip_transfer_connect(&sock, w->sock[0], NULL), 0);
	src = test_file(w->dir, "source", content);
	cr_assert_eq(clip_transfer_new(&t, sock, src, "high", "doc.txt", note, NULL), 0);
	close(sock);
	close(src);
	return t;
}

/* Run the mediator until @t is answered. */
static void
settle(struct test_world *w, struct clip_transfer *t)
{
	long long deadline = now_ms() + 5000;

	while (clip_transfer_dispatch(t, NULL) == 0 && now_ms() < deadline) {
		struct pollfd p[2] = {
			{ .fd = clip_mediator_get_fd(w->m), .events = POLLIN },
			{ .fd = clip_transfer_get_fd(t), .events = POLLIN },
		};

		test_world_pump(w);
		poll(p, 2, 100);
	}
}

Test(agent, a_question_says_what_the_prompt_shows_and_a_yes_delivers)
{
	struct clip_agent_question *q = NULL;
	const char *level = NULL;
	uint8_t sha256[32], delivered_sha256[32];
	struct clip_error *e = NULL;
	struct clip_transfer *t;
	uint32_t timeout_ms = 0;
	long long before;
	uint64_t size = 0;
	struct test_world w;

	world_setup(&w, 30000);
	before = now_ms();
	/* U+2215 looks like a slash: the decoder lets it through in a note, the display escapes it. */
	t = ask(&w, "hello up",
		"see a\xe2\x88\x95"
		"b");
	cr_assert_eq(next(&w, &q), CLIP_AGENT_QUESTION);
	cr_assert_str_eq(clip_agent_question_get_source(q, &level), "low");
	cr_assert_str_eq(level, "s0");
	cr_assert_str_eq(clip_agent_question_get_target(q, &level), "high");
	cr_assert_str_eq(level, "s2");
	cr_assert_eq(clip_agent_question_get_direction(q), CLIP_AGENT_UP);
	cr_assert_str_eq(clip_agent_question_get_name(q, 0), "doc.txt");
	cr_assert_str_eq(clip_agent_question_get_name(q, 1), "doc.txt");
	cr_assert_str_eq(clip_agent_question_get_note(q, 0), "see a\xe2\x88\x95"
							     "b");
	cr_assert_str_eq(clip_agent_question_get_note(q, 1), "see a\\u{2215}b");
	cr_assert_eq(clip_agent_question_get_flags(q), CLIP_AGENT_NOTE_ESCAPED,
		     "neither encrypted nor an escaped name");
	cr_assert_eq(clip_agent_question_get_digest(q, &size, sha256), 0);
	cr_assert_eq(size, 8);
	cr_assert_geq(clip_agent_question_get_deadline(q, &timeout_ms), (uint64_t)before + 30000);
	cr_assert_leq(clip_agent_question_get_deadline(q, NULL), (uint64_t)now_ms() + 30000);
	cr_assert_eq(timeout_ms, 30000);
	cr_assert_eq(clip_agent_question_get_state(q), CLIP_AGENT_PENDING);

	cr_assert_eq(clip_agent_answer(w.agent, q, 1, NULL), 0);
	cr_assert_eq(clip_agent_question_get_state(q), CLIP_AGENT_ANSWERED);
	cr_assert_eq(clip_agent_answer(w.agent, q, 0, &e), -EALREADY, "answered once");
	cr_assert(strstr(clip_error_get_message(e), "answered already"), "%s",
		  clip_error_get_message(e));
	clip_error_free(e);
	settle(&w, t);
	cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_DELIVERED, "%s",
		     clip_transfer_get_message(t));
	cr_assert_eq(clip_transfer_get_digest(t, NULL, delivered_sha256, NULL), 0);
	cr_assert_eq(memcmp(sha256, delivered_sha256, 32), 0,
		     "the hash asked is the one delivered");
	clip_transfer_unref(t);
	clip_agent_question_unref(q);
	test_world_teardown(&w);
}

Test(agent, a_no_denies_and_a_downgrade_is_said)
{
	struct clip_agent_question *q = NULL;
	struct clip_transfer *t = NULL;
	struct test_world w;
	int sock, src;

	world_setup(&w, 30000);
	cr_assert_eq(clip_transfer_connect(&sock, w.sock[1], NULL), 0);
	src = test_file(w.dir, "source", "secret");
	cr_assert_eq(clip_transfer_new(&t, sock, src, "low", "down.txt", NULL, NULL), 0);
	close(sock), close(src);
	cr_assert_eq(next(&w, &q), CLIP_AGENT_QUESTION);
	cr_assert_eq(clip_agent_question_get_direction(q), CLIP_AGENT_DOWN);
	cr_assert_str_eq(clip_agent_question_get_note(q, 1), "");
	cr_assert_eq(clip_agent_answer(w.agent, q, 0, NULL), 0);
	settle(&w, t);
	cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_DENIED_USER);
	clip_transfer_unref(t);
	clip_agent_question_unref(q);
	test_world_teardown(&w);
}

Test(agent, an_expired_question_is_told_and_takes_no_answer)
{
	struct clip_agent_question *q = NULL, *expired = NULL;
	struct clip_transfer *t;
	struct test_world w;

	world_setup(&w, 200);
	t = ask(&w, "late", NULL);
	cr_assert_eq(next(&w, &q), CLIP_AGENT_QUESTION);
	cr_assert_eq(next(&w, &expired), CLIP_AGENT_EXPIRED, "the agent is told");
	cr_assert_eq(expired, q, "the question asked, not a copy");
	cr_assert_eq(clip_agent_question_get_state(q), CLIP_AGENT_TIMED_OUT);
	assert_errno(clip_agent_answer(w.agent, q, 1, NULL), -ETIMEDOUT);
	settle(&w, t);
	cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_DENIED_USER);
	clip_transfer_unref(t);
	clip_agent_question_unref(q);
	clip_agent_question_unref(expired);
	test_world_teardown(&w);
}

Test(agent, the_mediator_ignores_an_answer_to_an_unknown_question)
{
	struct proto_msg forged = { .type = PROTO_ANSWER, .fd = -1 };
	struct clip_agent_question *q = NULL;
	struct clip_transfer *t;
	struct test_world w;

	world_setup(&w, 30000);
	t = ask(&w, "asked", NULL);
	cr_assert_eq(next(&w, &q), CLIP_AGENT_QUESTION);
	/* A yes to a question never asked: ignored, and the agent stays the one asked. */
	forged.answer.id = clip_agent_question_get_id(q) ^ 1;
	forged.answer.allow = 1;
	cr_assert_eq(proto_send(clip_agent_get_fd(w.agent), &forged, NULL), 0);
	test_world_pump(&w);
	cr_assert_eq(clip_transfer_dispatch(t, NULL), 0, "still waiting for the user");
	cr_assert_eq(clip_agent_answer(w.agent, q, 0, NULL), 0);
	settle(&w, t);
	cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_DENIED_USER,
		     "the real question's answer counts");
	clip_transfer_unref(t);
	clip_agent_question_unref(q);
	test_world_teardown(&w);
}

/* A fake mediator: a listening socket, and the connection of an agent to it. */
struct fake {
	char *dir;
	char path[512];
	int listen, conn;
	struct clip_agent *agent;
};

static void
fake_setup(struct fake *f)
{
	f->dir = test_tmpdir("tmpfs");
	snprintf(f->path, sizeof(f->path), "%s/fake.sock", f->dir);
	f->listen = test_listen_at(f->path);
	cr_assert_eq(clip_agent_connect(&f->agent, f->path, NULL, NULL), 0);
	f->conn = accept4(f->listen, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(f->conn, 0);
}

static void
fake_teardown(struct fake *f)
{
	clip_agent_unref(f->agent);
	close(f->conn);
	close(f->listen);
	free(f->dir);
}

/* A well-formed prompt, encoded into @buf; its size. */
static size_t
prompt(uint8_t *buf, uint64_t id)
{
	struct proto_msg m = { .type = PROTO_PROMPT, .fd = -1 };
	int n;

	m.prompt.id = id;
	m.prompt.timeout_ms = 10000;
	m.prompt.direction = PROTO_DIRECTION_UP;
	m.prompt.size = 3;
	strcpy(m.prompt.source, "low");
	strcpy(m.prompt.source_level, "s0");
	strcpy(m.prompt.target, "high");
	strcpy(m.prompt.target_level, "s2");
	strcpy(m.prompt.name, "a.txt");
	n = proto_encode(&m, buf);
	cr_assert_gt(n, 0);
	return (size_t)n;
}

/* The agent refuses what came, with a message holding @what, and is then closed. */
static void
assert_refused(struct fake *f, const char *what)
{
	struct clip_agent_question *q = NULL;
	struct clip_error *e = NULL;

	cr_assert_eq(clip_agent_receive(f->agent, 1000, &q, &e), -EBADMSG);
	cr_assert_null(q);
	cr_assert(strstr(clip_error_get_message(e), what), "%s", clip_error_get_message(e));
	clip_error_free(e);
	assert_errno(clip_agent_receive(f->agent, 0, NULL, NULL), -ECONNRESET);
	assert_errno(clip_agent_get_fd(f->agent), -EINVAL);
}

Test(agent, hello_is_ready_and_asks_for_expiry_messages)
{
	struct proto_msg hello = { .type = PROTO_HELLO, .fd = -1 }, features;
	struct fake f;

	fake_setup(&f);
	cr_assert_eq(clip_agent_receive(f.agent, 0, NULL, NULL), CLIP_AGENT_NONE);
	cr_assert_eq(proto_send(f.conn, &hello, NULL), 0);
	cr_assert_eq(clip_agent_receive(f.agent, 1000, NULL, NULL), CLIP_AGENT_READY);
	cr_assert_eq(proto_recv(f.conn, &features, NULL), 0);
	cr_assert_eq(features.type, PROTO_FEATURES);
	cr_assert_eq(features.features.flags, PROTO_FEATURE_EXPIRED);
	fake_teardown(&f);
}

Test(agent, a_mediator_that_lies_about_a_cage_name_is_left)
{
	uint8_t buf[PROTO_MSG_MAX];
	size_t n;
	struct fake f;

	fake_setup(&f);
	n = prompt(buf, 1);
	/* The source's first byte (after the 12-byte header, 54 fixed bytes, 2 of length). */
	cr_assert_eq(buf[12 + 54 + 2], 'l');
	buf[12 + 54 + 2] = 'L';
	cr_assert_eq(proto_send_raw(f.conn, buf, n, -1), 0);
	assert_refused(&f, "source");
	fake_teardown(&f);
}

Test(agent, an_oversized_message_is_refused)
{
	static uint8_t buf[PROTO_MSG_MAX + 100];
	struct fake f;

	fake_setup(&f);
	prompt(buf, 1);
	cr_assert_eq(proto_send_raw(f.conn, buf, sizeof(buf), -1), 0);
	assert_refused(&f, "over the bound");
	fake_teardown(&f);
}

Test(agent, a_question_asked_twice_is_refused)
{
	struct clip_agent_question *q = NULL;
	uint8_t buf[PROTO_MSG_MAX];
	size_t n;
	struct fake f;

	fake_setup(&f);
	n = prompt(buf, 7);
	cr_assert_eq(proto_send_raw(f.conn, buf, n, -1), 0);
	cr_assert_eq(clip_agent_receive(f.agent, 1000, &q, NULL), CLIP_AGENT_QUESTION);
	cr_assert_eq(proto_send_raw(f.conn, buf, n, -1), 0);
	assert_refused(&f, "twice");
	cr_assert_eq(clip_agent_question_get_state(q), CLIP_AGENT_GONE,
		     "what was pending is gone with the connection");
	assert_errno(clip_agent_answer(f.agent, q, 1, NULL), -ECONNRESET);
	clip_agent_question_unref(q);
	fake_teardown(&f);
}

Test(agent, a_message_that_is_not_for_an_agent_is_refused)
{
	struct proto_msg m = { .type = PROTO_ANSWER, .fd = -1 };
	struct fake f;

	fake_setup(&f);
	m.answer.id = 1;
	cr_assert_eq(proto_send(f.conn, &m, NULL), 0);
	assert_refused(&f, "not for an agent");
	fake_teardown(&f);
}

Test(agent, a_message_with_a_descriptor_is_refused)
{
	uint8_t buf[PROTO_MSG_MAX];
	size_t n;
	struct fake f;

	fake_setup(&f);
	n = prompt(buf, 1);
	cr_assert_eq(proto_send_raw(f.conn, buf, n, f.listen), 0);
	cr_assert_eq(clip_agent_receive(f.agent, 1000, NULL, NULL), -EBADMSG);
	assert_errno(clip_agent_receive(f.agent, 0, NULL, NULL), -ECONNRESET);
	fake_teardown(&f);
}

Test(agent, an_expiry_of_an_unknown_question_is_ignored_and_a_withdrawal_said)
{
	struct proto_msg m = { .type = PROTO_EXPIRED, .fd = -1 };
	struct clip_agent_question *q = NULL, *gone = NULL;
	uint8_t buf[PROTO_MSG_MAX];
	size_t n;
	struct fake f;

	fake_setup(&f);
	n = prompt(buf, 5);
	cr_assert_eq(proto_send_raw(f.conn, buf, n, -1), 0);
	cr_assert_eq(clip_agent_receive(f.agent, 1000, &q, NULL), CLIP_AGENT_QUESTION);
	/* Question 6 was never asked (or was answered): nothing to say. */
	m.expired.id = 6;
	cr_assert_eq(proto_send(f.conn, &m, NULL), 0);
	cr_assert_eq(clip_agent_receive(f.agent, 200, &gone, NULL), CLIP_AGENT_NONE);
	cr_assert_null(gone);
	m.expired.id = 5;
	m.expired.reason = PROTO_EXPIRY_WITHDRAWN;
	cr_assert_eq(proto_send(f.conn, &m, NULL), 0);
	cr_assert_eq(clip_agent_receive(f.agent, 1000, &gone, NULL), CLIP_AGENT_WITHDRAWN);
	cr_assert_eq(gone, q);
	cr_assert_eq(clip_agent_question_get_state(q), CLIP_AGENT_GONE);
	assert_errno(clip_agent_answer(f.agent, q, 1, NULL), -ECONNRESET);
	clip_agent_question_unref(q);
	clip_agent_question_unref(gone);
	fake_teardown(&f);
}

Test(agent, an_answer_to_another_agents_question_is_refused)
{
	struct clip_agent_question *q = NULL;
	struct clip_agent *other;
	uint8_t buf[PROTO_MSG_MAX];
	struct clip_error *e = NULL;
	struct proto_msg sent;
	size_t n;
	struct fake f;

	fake_setup(&f);
	cr_assert_eq(clip_agent_connect(&other, f.path, NULL, NULL), 0);
	n = prompt(buf, 9);
	cr_assert_eq(proto_send_raw(f.conn, buf, n, -1), 0);
	cr_assert_eq(clip_agent_receive(f.agent, 1000, &q, NULL), CLIP_AGENT_QUESTION);
	cr_assert_eq(clip_agent_answer(other, q, 1, &e), -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), "not this agent's"), "%s",
		  clip_error_get_message(e));
	clip_error_free(e);
	cr_assert_eq(clip_agent_question_get_state(q), CLIP_AGENT_PENDING);
	cr_assert_eq(clip_agent_answer(f.agent, q, 1, NULL), 0);
	cr_assert_eq(proto_recv(f.conn, &sent, NULL), 0, "only the right agent's answer was sent");
	cr_assert_eq(sent.type, PROTO_ANSWER);
	cr_assert_eq(sent.answer.id, 9);
	cr_assert_eq(sent.answer.allow, 1);
	clip_agent_question_unref(q);
	clip_agent_unref(other);
	fake_teardown(&f);
}

Test(agent, opts_with_unknown_flags_or_too_short_are_refused)
{
	struct clip_agent_opts o = { .size = sizeof(o), .flags = 1 };
	struct clip_agent *a = NULL;
	struct fake f;

	fake_setup(&f);
	assert_errno(clip_agent_connect(&a, f.path, &o, NULL), -EINVAL);
	o.size = 2;
	o.flags = 0;
	assert_errno(clip_agent_connect(&a, f.path, &o, NULL), -EINVAL);
	cr_assert_null(a);
	o.size = sizeof(o);
	cr_assert_eq(clip_agent_connect(&a, f.path, &o, NULL), 0);
	clip_agent_unref(a);
	fake_teardown(&f);
}

/* -- the feed (clip-feed(3)) ------------------------------------------ */

static void
assert_str_or_null(const char *got, const char *want)
{
	if (want)
		cr_assert_str_eq(got, want);
	else
		cr_assert_null(got, "got '%s'", got);
}

/* The next event of @f: its type, cage, target and name checked. */
static struct clip_feed_event *
assert_event(struct clip_feed *f, int type, const char *cage, const char *target, const char *name)
{
	struct clip_feed_event *e = NULL;

	cr_assert_eq(clip_feed_next(f, &e), 1, "an event %s waits",
		     clip_feed_event_type_name(type));
	cr_assert_eq(clip_feed_event_get_type(e), type, "%s, not %s",
		     clip_feed_event_type_name(clip_feed_event_get_type(e)),
		     clip_feed_event_type_name(type));
	assert_str_or_null(clip_feed_event_get_cage(e), cage);
	assert_str_or_null(clip_feed_event_get_target(e), target);
	assert_str_or_null(clip_feed_event_get_name(e), name);
	return e;
}

Test(feed, a_transfer_asked_delivered_and_one_denied_are_fed_in_order)
{
	struct clip_agent_question *q = NULL;
	struct clip_feed_event *e;
	struct clip_transfer *t;
	struct pollfd p = { .events = POLLIN };
	struct clip_feed *f = NULL;
	struct test_world w;

	world_setup(&w, 30000);
	cr_assert_eq(clip_feed_new(&f, NULL), 0);
	cr_assert_eq(clip_mediator_set_feed(w.m, f), 0);
	p.fd = clip_feed_get_fd(f);
	cr_assert_eq(poll(&p, 1, 0), 0, "nothing to read yet");

	t = ask(&w, "one", NULL);
	cr_assert_eq(next(&w, &q), CLIP_AGENT_QUESTION);
	cr_assert_eq(poll(&p, 1, 0), 1, "the feed's fd is readable");
	clip_feed_event_unref(assert_event(f, CLIP_FEED_TRANSFER_ASKED, "low", "high", "doc.txt"));
	cr_assert_eq(poll(&p, 1, 0), 0, "read: nothing more");
	cr_assert_eq(clip_agent_answer(w.agent, q, 1, NULL), 0);
	settle(&w, t);
	clip_transfer_unref(t);
	clip_agent_question_unref(q);

	t = ask(&w, "two", NULL);
	cr_assert_eq(next(&w, &q), CLIP_AGENT_QUESTION);
	cr_assert_eq(clip_agent_answer(w.agent, q, 0, NULL), 0);
	settle(&w, t);
	cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_DENIED_USER);
	clip_transfer_unref(t);
	clip_agent_question_unref(q);

	e = assert_event(f, CLIP_FEED_TRANSFER_DELIVERED, "low", "high", "doc.txt");
	cr_assert_eq(clip_feed_event_get_seq(e), 2);
	cr_assert_null(clip_feed_event_get_text(e));
	clip_feed_event_unref(e);
	clip_feed_event_unref(assert_event(f, CLIP_FEED_TRANSFER_ASKED, "low", "high", "doc.txt"));
	e = assert_event(f, CLIP_FEED_TRANSFER_DENIED, "low", "high", "doc.txt");
	cr_assert_not_null(clip_feed_event_get_text(e), "a denial says why");
	cr_assert_gt(clip_feed_event_get_time(e), 0);
	clip_feed_event_unref(e);
	cr_assert_eq(clip_feed_next(f, &e), 0, "nothing more");
	cr_assert_null(e);
	test_world_teardown(&w);
	/* The mediator held a reference: the feed outlives it. */
	cr_assert_eq(clip_feed_push(f, CLIP_FEED_CAGE_STOPPED, "low", NULL, NULL, NULL), 0);
	clip_feed_event_unref(assert_event(f, CLIP_FEED_CAGE_STOPPED, "low", NULL, NULL));
	clip_feed_unref(f);
}

Test(feed, a_reader_that_does_not_keep_up_loses_the_oldest_and_sees_the_gap)
{
	struct clip_feed_event *e = NULL;
	struct clip_feed *f = NULL;
	uint64_t count = 0;

	cr_assert_eq(clip_feed_new(&f, NULL), 0);
	for (int i = 0; i < CLIP_FEED_EVENTS_MAX + 10; i++)
		cr_assert_eq(clip_feed_push(f, CLIP_FEED_CAGE_DIED, "low", NULL, NULL, "killed"),
			     0);
	cr_assert_eq(clip_feed_next(f, &e), 1);
	cr_assert_eq(clip_feed_event_get_seq(e), 11, "the first 10 were dropped");
	clip_feed_event_unref(e);
	/* The eventfd counts what waits, no more. */
	cr_assert_eq(read(clip_feed_get_fd(f), &count, sizeof(count)), (ssize_t)sizeof(count));
	cr_assert_eq(count, 1, "a semaphore: one at a time");
	assert_errno(clip_feed_push(f, 0, NULL, NULL, NULL, NULL), -EINVAL);
	assert_errno(clip_feed_push(f, 99, NULL, NULL, NULL, NULL), -EINVAL);
	cr_assert_null(clip_feed_event_type_name(99));
	cr_assert_str_eq(clip_feed_event_type_name(CLIP_FEED_CAGE_DIED), "cage-died");
	clip_feed_unref(f);
}

/* Dispatch the mediator until it has read what its cages sent. */
static void
settle_reports(struct test_world *w)
{
	struct pollfd p = { .fd = clip_mediator_get_fd(w->m), .events = POLLIN };

	while (poll(&p, 1, 50) > 0)
		test_world_pump(w);
}

struct report_count {
	unsigned records, reports;
	char last[600];
};

static int
count_reports(const char *record, void *userdata)
{
	struct report_count *c = userdata;

	c->records++;
	if (strstr(record, "event=exec-refused")) {
		c->reports++;
		snprintf(c->last, sizeof(c->last), "%s", record);
	}
	return 0;
}

Test(feed, a_cages_report_is_fed_and_audited_under_the_name_of_its_socket)
{
	struct clip_feed_event *e = NULL;
	struct report_count c = { 0 };
	struct clip_feed *f = NULL;
	struct test_world w;

	world_setup(&w, 30000);
	cr_assert_eq(clip_feed_new(&f, NULL), 0);
	cr_assert_eq(clip_mediator_set_feed(w.m, f), 0);
	/* The subject names another cage: the event is low's, whose socket it came on. */
	cr_assert_eq(clip_transfer_report(w.sock[0], CLIP_TRANSFER_REPORT_EXEC_REFUSED,
					  "/data/high.py", EACCES, "mounted noexec", NULL),
		     0);
	settle_reports(&w);
	e = assert_event(f, CLIP_FEED_EXEC_REFUSED, "low", NULL, "/data/high.py");
	cr_assert_str_eq(clip_feed_event_get_text(e), "mounted noexec");
	clip_feed_event_unref(e);
	cr_assert_eq(clip_audit_verify(w.ctx, w.dfd, "audit.log", count_reports, &c, NULL, NULL),
		     0);
	cr_assert_eq(c.reports, 1);
	cr_assert(strstr(c.last, " src=low ") && strstr(c.last, " name=/data/high.py "),
		  "recorded as low's: %s", c.last);
	test_world_teardown(&w);
	clip_feed_unref(f);
}

Test(feed, a_flood_of_reports_is_shown_boundedly_with_its_count)
{
	struct clip_feed_event *e = NULL;
	struct clip_feed *f = NULL;
	struct test_world w;
	unsigned shown = 0;

	world_setup(&w, 30000);
	cr_assert_eq(clip_feed_new(&f, NULL), 0);
	cr_assert_eq(clip_mediator_set_feed(w.m, f), 0);
	for (int i = 0; i < 50; i++) {
		cr_assert_eq(clip_transfer_report(w.sock[0], CLIP_TRANSFER_REPORT_EXEC_REFUSED,
						  "/data/x.py", EACCES, NULL, NULL),
			     0);
		settle_reports(&w);
	}
	while (clip_feed_next(f, &e) == 1) {
		cr_assert_eq(clip_feed_event_get_type(e), CLIP_FEED_EXEC_REFUSED);
		shown++;
		clip_feed_event_unref(e);
	}
	cr_assert_lt(shown, 15, "a burst of 10, then one a second: %u shown of 50", shown);
	cr_assert_geq(shown, 10);
	/* A second later, the next report comes with the count of those not shown. */
	usleep(1100 * 1000);
	cr_assert_eq(clip_transfer_report(w.sock[0], CLIP_TRANSFER_REPORT_EXEC_REFUSED,
					  "/data/x.py", EACCES, NULL, NULL),
		     0);
	settle_reports(&w);
	clip_feed_event_unref(assert_event(f, CLIP_FEED_EXEC_REFUSED, "low", NULL, "/data/x.py"));
	e = assert_event(f, CLIP_FEED_EXEC_REFUSED, "low", NULL, NULL);
	cr_assert(strstr(clip_feed_event_get_text(e), "more reports of this cage not shown"), "%s",
		  clip_feed_event_get_text(e));
	clip_feed_event_unref(e);
	test_world_teardown(&w);
	clip_feed_unref(f);
}

Test(feed, a_report_that_is_not_one_is_refused)
{
	char big[1100];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_errno(clip_transfer_report("/nonexistent", 0, "/x", EACCES, NULL, NULL), -EINVAL);
	assert_errno(clip_transfer_report("/nonexistent", 2, "/x", EACCES, NULL, NULL), -EINVAL);
	assert_errno(clip_transfer_report("/nonexistent", CLIP_TRANSFER_REPORT_EXEC_REFUSED, "/x",
					  -1, NULL, NULL),
		     -EINVAL);
	assert_errno(clip_transfer_report("/nonexistent", CLIP_TRANSFER_REPORT_EXEC_REFUSED, big,
					  EACCES, NULL, NULL),
		     -E2BIG);
	assert_errno(clip_transfer_report("/nonexistent", CLIP_TRANSFER_REPORT_EXEC_REFUSED, "/x",
					  EACCES, "two\nlines", NULL),
		     -EINVAL);
	assert_errno(clip_transfer_report("/nonexistent", CLIP_TRANSFER_REPORT_EXEC_REFUSED, "/x",
					  EACCES, NULL, NULL),
		     -ENOENT);
}

/*
 * One way, never blocking: a mediator that does not accept (its loop busy)
 * and whose listen backlog is full gets no report, and its cage is told so
 * at once (-EAGAIN) instead of waiting. Once the mediator has read what
 * was queued, a report goes again.
 */
Test(feed, a_report_to_a_mediator_whose_backlog_is_full_is_refused_at_once, .timeout = 60)
{
	struct report_count c = { 0 };
	struct clip_error *e = NULL;
	struct test_world w;
	int r = 0, sent = 0;

	world_setup(&w, 30000);
	/* The mediator is not dispatched: nothing accepts. Its backlog is 64 (test_listen_at()). */
	while (sent < 1000) {
		r = clip_transfer_report(w.sock[0], CLIP_TRANSFER_REPORT_EXEC_REFUSED, "/x", EACCES,
					 NULL, &e);
		if (r < 0)
			break;
		sent++;
	}
	assert_errno(r, -EAGAIN);
	cr_assert(strstr(clip_error_get_message(e), w.sock[0]), "names the socket: %s",
		  clip_error_get_message(e));
	clip_error_free(e);
	cr_assert_geq(sent, 64, "refused after %d reports, before the backlog was full", sent);
	cr_assert_leq(sent, 66, "%d reports queued in a backlog of 64", sent);
	/* The mediator reads what was queued; a report goes again. */
	settle_reports(&w);
	cr_assert_eq(clip_transfer_report(w.sock[0], CLIP_TRANSFER_REPORT_EXEC_REFUSED, "/y",
					  EACCES, NULL, NULL),
		     0);
	settle_reports(&w);
	cr_assert_eq(clip_audit_verify(w.ctx, w.dfd, "audit.log", count_reports, &c, NULL, NULL),
		     0);
	cr_assert_geq(c.reports, 1, "the queued reports were read");
	test_world_teardown(&w);
}

Test(feed, a_hand_made_report_of_an_unknown_kind_closes_the_connection_and_is_audited)
{
	struct proto_msg m = { .type = PROTO_REPORT, .fd = -1 };
	struct clip_feed_event *e = NULL;
	struct report_count c = { 0 };
	struct clip_feed *f = NULL;
	struct test_world w;
	uint8_t buf[PROTO_MSG_MAX];
	char b;
	int sock, n;

	world_setup(&w, 30000);
	cr_assert_eq(clip_feed_new(&f, NULL), 0);
	cr_assert_eq(clip_mediator_set_feed(w.m, f), 0);
	cr_assert_eq(clip_transfer_connect(&sock, w.sock[0], NULL), 0);
	m.report.kind = 7; /* no such kind */
	snprintf(m.report.subject, sizeof(m.report.subject), "/x");
	n = proto_encode(&m, buf);
	cr_assert_gt(n, 0);
	cr_assert_eq(send(sock, buf, (size_t)n, 0), n);
	settle_reports(&w);
	cr_assert_eq(recv(sock, &b, 1, MSG_DONTWAIT), 0, "the mediator hung up");
	close(sock);
	cr_assert_eq(clip_feed_next(f, &e), 0, "nothing is shown");
	cr_assert_eq(clip_audit_verify(w.ctx, w.dfd, "audit.log", count_reports, &c, NULL, NULL),
		     0);
	cr_assert_eq(c.reports, 0);
	cr_assert_eq(c.records, 1, "one record: the rejected message");
	test_world_teardown(&w);
	clip_feed_unref(f);
}

/* A runner's stream, as clip_session_watch_read() reads it: 8 fields, each NUL-ended. */
static void
send_event(int fd, const char *const fields[], size_t n)
{
	char buf[512];
	size_t at = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(fields[i]) + 1;

		memcpy(buf + at, fields[i], k);
		at += k;
	}
	cr_assert_eq(send(fd, buf, at, 0), (ssize_t)at);
}

Test(feed, a_watch_reads_a_runners_events_as_a_peers_words)
{
	static const char *const good[] = {
		"event", "7",    "1700000000000000", "transfer-denied", "low",
		"high",  "a\nb", "no answer in time"
	};
	static const char *const bad_cage[] = {
		"event", "8", "1", "cage-died", "../x", "", "", ""
	};
	static const char *const bad_type[] = { "event", "8", "1", "cage-exploded",
						"low",   "",  "",  "" };
	static const char *const bad_seq[] = { "event", "-8", "1", "cage-died", "low", "", "", "" };
	static const char *const short_msg[] = { "event", "8", "1", "cage-died", "low" };
	struct clip_feed_event *e = NULL;
	struct clip_error *err = NULL;
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(clip_session_watch_read(sv[0], &e, NULL), 0, "nothing yet");
	send_event(sv[1], good, 8);
	cr_assert_eq(clip_session_watch_read(sv[0], &e, NULL), 1);
	cr_assert_eq(clip_feed_event_get_type(e), CLIP_FEED_TRANSFER_DENIED);
	cr_assert_eq(clip_feed_event_get_seq(e), 7);
	cr_assert_eq(clip_feed_event_get_time(e), UINT64_C(1700000000000000));
	cr_assert_str_eq(clip_feed_event_get_cage(e), "low");
	cr_assert_str_eq(clip_feed_event_get_target(e), "high");
	cr_assert_str_eq(clip_feed_event_get_name(e), "a\nb", "as sent: the printer escapes");
	cr_assert_str_eq(clip_feed_event_get_text(e), "no answer in time");
	e = clip_feed_event_unref(e);
	send_event(sv[1], bad_cage, 8);
	send_event(sv[1], bad_type, 8);
	send_event(sv[1], bad_seq, 8);
	send_event(sv[1], short_msg, 5);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(clip_session_watch_read(sv[0], &e, &err), -EPROTO, "message %d", i);
		cr_assert(strstr(clip_error_get_message(err), "malformed"), "%s",
			  clip_error_get_message(err));
		clip_error_free(err);
		err = NULL;
		cr_assert_null(e);
	}
	close(sv[1]);
	assert_errno(clip_session_watch_read(sv[0], &e, NULL), -ECONNRESET);
	close(sv[0]);
}
