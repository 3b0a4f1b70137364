/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the user should see of a running session, streamed to whoever
 * asks "watch" on its control socket (clipctl watch): the session's feed
 * (clip-feed(3)), which the mediator pushes its transfers into and the
 * session its cages' starts, stops and ends.
 *
 * After "ok\n", each event is one message of 8 fields, each ended by a
 * NUL byte (a field holds any byte but NUL; empty is none):
 *
 *   event SEQ TIME_US TYPE CAGE TARGET NAME TEXT
 *
 * The runner never waits for a watcher: one whose socket is full, or that
 * went away, is dropped (it sees the end of the stream). When the session
 * stops, the last events (the cages stopped) are sent, then the stream
 * ends. The client, clip_session_watch_read(), reads each message as a
 * peer's words: every field bounded and checked.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <clip/feed.h>
#include <clip/session.h>

#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/test-hooks.h"
#include "base/util.h"
#include "session-internal.h"

#define WATCH_FIELD_MAX 1024 /* a document's name at most (doc/transfer-protocol.md) */
#define WATCH_FIELDS 8
#define WATCH_MSG_MAX (WATCH_FIELDS * (WATCH_FIELD_MAX + 1))

int
session_feed_open(struct clip_session *s, struct clip_error **reterr)
{
	int r;

	r = clip_feed_new(&s->feed, reterr);
	if (r < 0)
		return r;
	r = clip_mediator_set_feed(s->mediator, s->feed);
	if (r >= 0)
		r = session_watch(s, clip_feed_get_fd(s->feed), SESSION_EV_FEED, 0);
	if (r < 0)
		return error_set_errno(reterr, r, "session '%s': cannot watch its feed", s->name);
	return 0;
}

void
session_feed_cage(struct clip_session *s, int type, const char *cage, const char *text)
{
	if (s->feed)
		(void)clip_feed_push(s->feed, type, cage, NULL, NULL, text);
}

void
session_feed_denial(struct clip_cage *cage, const char *what, void *userdata)
{
	struct clip_session *s = userdata;
	struct session_cage *c = NULL;
	char more[128];

	for (size_t i = 0; i < s->n_cages && !c; i++)
		if (s->cages[i]->cage == cage)
			c = s->cages[i];
	if (!c)
		return;
	if (!token_bucket_take(&c->denials, SESSION_DENIALS_PER_S, SESSION_DENIALS_BURST, NULL) &&
	    !test_hook_disabled("session-denial-rate")) {
		c->denials_suppressed++;
		return;
	}
	session_feed_cage(s, CLIP_FEED_CAGE_REFUSED, c->name, what);
	if (c->denials_suppressed) {
		snprintf(more, sizeof(more),
			 "%" PRIu64
			 " more Landlock denials of this cage not shown (over %d a second)",
			 c->denials_suppressed, SESSION_DENIALS_PER_S);
		session_feed_cage(s, CLIP_FEED_CAGE_REFUSED, c->name, more);
		c->denials_suppressed = 0;
	}
}

static void
watcher_drop(struct clip_session *s, size_t i)
{
	close(s->watch_fds[i]);
	s->watch_fds[i] = s->watch_fds[--s->n_watch];
}

/* Append @s (NULL: empty), cut to WATCH_FIELD_MAX, and its NUL. */
static size_t
field_put(char *buf, size_t at, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n > WATCH_FIELD_MAX)
		n = WATCH_FIELD_MAX;

	memcpy(buf + at, s ? s : "", n);
	buf[at + n] = '\0';
	return at + n + 1;
}

void
session_feed_flush(struct clip_session *s)
{
	struct clip_feed_event *e = NULL;
	char num[2][32];

	while (s->feed && clip_feed_next(s->feed, &e) > 0) {
		_cleanup_free_ char *msg = malloc(WATCH_MSG_MAX);
		size_t n = 0;

		snprintf(num[0], sizeof(num[0]), "%llu",
			 (unsigned long long)clip_feed_event_get_seq(e));
		snprintf(num[1], sizeof(num[1]), "%llu",
			 (unsigned long long)clip_feed_event_get_time(e));
		if (msg) {
			n = field_put(msg, n, "event");
			n = field_put(msg, n, num[0]);
			n = field_put(msg, n, num[1]);
			n = field_put(msg, n,
				      clip_feed_event_type_name(clip_feed_event_get_type(e)));
			n = field_put(msg, n, clip_feed_event_get_cage(e));
			n = field_put(msg, n, clip_feed_event_get_target(e));
			n = field_put(msg, n, clip_feed_event_get_name(e));
			n = field_put(msg, n, clip_feed_event_get_text(e));
			for (size_t i = 0; i < s->n_watch;)
				if (send(s->watch_fds[i], msg, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
					watcher_drop(s, i);
				else
					i++;
		}
		e = clip_feed_event_unref(e);
	}
}

void
session_feed_close(struct clip_session *s)
{
	session_feed_flush(s);
	while (s->n_watch > 0)
		watcher_drop(s, 0);
	s->feed = clip_feed_unref(s->feed);
}

void
session_watch_add(struct clip_session *s, int fd)
{
	static const char busy[] = "error 16 too many watchers at once, try again\n";

	if (s->n_watch >= SESSION_WATCHERS_MAX) {
		(void)send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		return;
	}
	if (send(fd, "ok\n", 3, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		close(fd);
		return;
	}
	s->watch_fds[s->n_watch++] = fd;
}

/* -- the client ------------------------------------------------------- */

CLIP_EXPORT int
clip_session_watch(struct clip_ctx *ctx, const char *session, const char *state_dir, int *ret_fd,
		   struct clip_error **reterr)
{
	_cleanup_close_ int fd = -1;
	char untrusted_answer[1024];
	ssize_t n;
	int r;

	clip_assert_reterr(reterr);
	r = session_client_check(ctx, session, state_dir, __func__, reterr);
	if (r < 0)
		return r;
	session_assert_arg(ret_fd, reterr, "%s: ret_fd is NULL", __func__);
	fd = session_control_request(ctx, session, state_dir, "watch", 5000, reterr);
	if (fd < 0)
		return api_return(fd, reterr);
	n = recv(fd, untrusted_answer, sizeof(untrusted_answer) - 1, MSG_TRUNC | MSG_DONTWAIT);
	if (n < 0 && errno != ECONNRESET)
		return api_return(
			error_set_errno(reterr, -errno, "session '%s': cannot receive", session),
			reterr);
	if (n > 6 && (size_t)n < sizeof(untrusted_answer) &&
	    strncmp(untrusted_answer, "error ", 6) == 0 && !memchr(untrusted_answer, '\0', n)) {
		untrusted_answer[n] = '\0';
		return api_return(session_answer_error_parse(session, untrusted_answer + 6, reterr),
				  reterr);
	}
	if (n != 3 || memcmp(untrusted_answer, "ok\n", 3) != 0)
		return api_return(error_set(reterr, -EPROTO, "session '%s': %s", session,
					    n <= 0 ? "the runner closed without an answer"
						   : "a malformed answer"),
				  reterr);
	*ret_fd = steal_fd(fd);
	return 0;
}

/* A decimal number, the whole of @text, at most 20 digits: 0 or -EPROTO. */
static int
untrusted_u64(const char *text, uint64_t *ret)
{
	uint64_t v = 0;

	if (!*text || strlen(text) > 19)
		return -EPROTO;
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EPROTO;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*ret = v;
	return 0;
}

static int
type_of(const char *name)
{
	for (int t = 1; clip_feed_event_type_name(t); t++)
		if (strcmp(clip_feed_event_type_name(t), name) == 0)
			return t;
	return -EPROTO;
}

/* The message's fields, split at their NULs; every one checked. */
static int
event_parse(char *untrusted_msg, size_t n, struct clip_feed_event **ret)
{
	const char *f[WATCH_FIELDS];
	uint64_t seq, time_us;
	size_t k = 0;
	int type;

	for (size_t at = 0; at < n; k++) {
		char *end = memchr(untrusted_msg + at, '\0', n - at);

		if (!end || k == WATCH_FIELDS ||
		    (size_t)(end - untrusted_msg) - at > WATCH_FIELD_MAX)
			return -EPROTO;
		f[k] = untrusted_msg + at;
		at = (size_t)(end - untrusted_msg) + 1;
	}
	if (k != WATCH_FIELDS || strcmp(f[0], "event") != 0 || untrusted_u64(f[1], &seq) < 0 ||
	    untrusted_u64(f[2], &time_us) < 0)
		return -EPROTO;
	type = type_of(f[3]);
	if (type < 0)
		return type;
	/* The cages are names of cages; the name and text are shown escaped. */
	for (int i = 4; i <= 5; i++)
		if (*f[i] && !session_name_valid(f[i]))
			return -EPROTO;
	return clip_feed_event_new(ret, type, seq, time_us, *f[4] ? f[4] : NULL,
				   *f[5] ? f[5] : NULL, *f[6] ? f[6] : NULL, *f[7] ? f[7] : NULL);
}

CLIP_EXPORT int
clip_session_watch_read(int fd, struct clip_feed_event **ret, struct clip_error **reterr)
{
	_cleanup_free_ char *untrusted_msg = NULL;
	ssize_t n;
	int r;

	clip_assert_reterr(reterr);
	clip_assert_return(fd >= 0 && ret, api_return(-EINVAL, reterr));

	*ret = NULL;
	untrusted_msg = malloc(WATCH_MSG_MAX + 1);
	if (!untrusted_msg)
		return api_return(-ENOMEM, reterr);
	n = recv(fd, untrusted_msg, WATCH_MSG_MAX + 1, MSG_TRUNC | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n < 0 && errno != ECONNRESET)
		return api_return(error_set_errno(reterr, -errno, "cannot receive an event"),
				  reterr);
	if (n <= 0)
		return api_return(error_set(reterr, -ECONNRESET,
					    "the session stopped, or dropped this watcher"),
				  reterr);
	if (n > WATCH_MSG_MAX)
		return api_return(
			error_set(reterr, -EPROTO, "an event over %d bytes", WATCH_MSG_MAX),
			reterr);
	r = event_parse(untrusted_msg, (size_t)n, ret);
	if (r == -EPROTO)
		r = error_set(reterr, r, "a malformed event");
	return api_return(r < 0 ? r : 1, reterr);
}
