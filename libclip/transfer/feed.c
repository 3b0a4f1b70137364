/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The feed of what the user should see (clip-feed(3)): a bounded queue of
 * events in push order, behind an eventfd that is readable while events
 * wait. The mediator pushes its transfers into the feed it is given; a
 * session or any launcher pushes its cages' starts and ends.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <clip/feed.h>

#include "base/error.h"
#include "base/macro.h"
#include "transfer-internal.h"

struct clip_feed_event {
	unsigned n_ref;
	int type;
	uint64_t seq, time_us;
	char *cage, *target, *name, *text;
	struct clip_feed_event *next;
};

struct clip_feed {
	unsigned n_ref;
	int fd; /* eventfd: its counter is the number of events waiting */
	uint64_t seq;
	struct clip_feed_event *head, *tail;
	size_t n;
};

static const char *const type_names[] = {
	[CLIP_FEED_TRANSFER_ASKED] = "transfer-asked",
	[CLIP_FEED_TRANSFER_DELIVERED] = "transfer-delivered",
	[CLIP_FEED_TRANSFER_DENIED] = "transfer-denied",
	[CLIP_FEED_CAGE_STARTED] = "cage-started",
	[CLIP_FEED_CAGE_STOPPED] = "cage-stopped",
	[CLIP_FEED_CAGE_DIED] = "cage-died",
	[CLIP_FEED_EXEC_REFUSED] = "exec-refused",
	[CLIP_FEED_CAGE_REFUSED] = "cage-refused",
};

CLIP_EXPORT const char *
clip_feed_event_type_name(int type)
{
	return type > 0 && (size_t)type < ELEMENTSOF(type_names) ? type_names[type] : NULL;
}

static void
event_free(struct clip_feed_event *e)
{
	free(e->cage);
	free(e->target);
	free(e->name);
	free(e->text);
	free(e);
}

CLIP_EXPORT struct clip_feed_event *
clip_feed_event_ref(struct clip_feed_event *e)
{
	if (e)
		e->n_ref++;
	return e;
}

CLIP_EXPORT struct clip_feed_event *
clip_feed_event_unref(struct clip_feed_event *e)
{
	if (e && --e->n_ref == 0)
		event_free(e);
	return NULL;
}

CLIP_EXPORT int
clip_feed_new(struct clip_feed **ret, struct clip_error **reterr)
{
	struct clip_feed *f;

	clip_assert_reterr(reterr);
	clip_assert_return(ret, api_return(-EINVAL, reterr));

	f = calloc(1, sizeof(*f));
	if (!f)
		return api_return(-ENOMEM, reterr);
	f->n_ref = 1;
	f->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
	if (f->fd < 0) {
		int r = -errno;

		free(f);
		return api_return(error_set_errno(reterr, r, "cannot make the feed's eventfd"),
				  reterr);
	}
	*ret = f;
	return 0;
}

CLIP_EXPORT struct clip_feed *
clip_feed_ref(struct clip_feed *f)
{
	if (f)
		f->n_ref++;
	return f;
}

/* The oldest event out of the queue, and one off the eventfd's counter. */
static struct clip_feed_event *
feed_take(struct clip_feed *f)
{
	struct clip_feed_event *e = f->head;
	uint64_t one;

	if (!e)
		return NULL;
	f->head = e->next;
	if (!f->head)
		f->tail = NULL;
	f->n--;
	e->next = NULL;
	(void)!read(f->fd, &one, sizeof(one));
	return e;
}

CLIP_EXPORT struct clip_feed *
clip_feed_unref(struct clip_feed *f)
{
	if (f && --f->n_ref == 0) {
		while (f->head)
			clip_feed_event_unref(feed_take(f));
		close(f->fd);
		free(f);
	}
	return NULL;
}

CLIP_EXPORT int
clip_feed_get_fd(struct clip_feed *f)
{
	clip_assert_return(f, -EINVAL);
	return f->fd;
}

static int
dup_or_null(char **dst, const char *s)
{
	if (!s)
		return 0;
	*dst = strdup(s);
	return *dst ? 0 : -ENOMEM;
}

static int
feed_event_new(struct clip_feed_event **ret, int type, uint64_t seq, uint64_t time_us,
	       const char *cage, const char *target, const char *name, const char *text)
{
	struct clip_feed_event *e;

	if (!clip_feed_event_type_name(type))
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->n_ref = 1;
	e->type = type;
	e->seq = seq;
	e->time_us = time_us;
	if (dup_or_null(&e->cage, cage) < 0 || dup_or_null(&e->target, target) < 0 ||
	    dup_or_null(&e->name, name) < 0 || dup_or_null(&e->text, text) < 0) {
		event_free(e);
		return -ENOMEM;
	}
	*ret = e;
	return 0;
}

CLIP_EXPORT int
clip_feed_event_new(struct clip_feed_event **ret, int type, uint64_t seq, uint64_t time_us,
		    const char *cage, const char *target, const char *name, const char *text)
{
	clip_assert_return(ret, -EINVAL);
	return feed_event_new(ret, type, seq, time_us, cage, target, name, text);
}

CLIP_EXPORT int
clip_feed_push(struct clip_feed *f, int type, const char *cage, const char *target,
	       const char *name, const char *text)
{
	const uint64_t one = 1;
	struct clip_feed_event *e;
	struct timespec ts;
	int r;

	clip_assert_return(f, -EINVAL);
	clip_assert_return(clip_feed_event_type_name(type), -EINVAL);

	clock_gettime(CLOCK_REALTIME, &ts);
	r = feed_event_new(&e, type, 0, (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000,
			   cage, target, name, text);
	if (r < 0)
		return r;
	/* A reader that does not keep up loses the oldest: the numbers say how many. */
	if (f->n >= CLIP_FEED_EVENTS_MAX)
		clip_feed_event_unref(feed_take(f));
	e->seq = ++f->seq;
	if (f->tail)
		f->tail->next = e;
	else
		f->head = e;
	f->tail = e;
	f->n++;
	(void)!write(f->fd, &one, sizeof(one));
	return 0;
}

CLIP_EXPORT int
clip_feed_next(struct clip_feed *f, struct clip_feed_event **ret)
{
	clip_assert_return(f && ret, -EINVAL);

	*ret = feed_take(f);
	return *ret ? 1 : 0;
}

CLIP_EXPORT int
clip_mediator_set_feed(struct clip_mediator *m, struct clip_feed *feed)
{
	clip_assert_return(m, -EINVAL);

	clip_feed_unref(m->feed);
	m->feed = clip_feed_ref(feed);
	return 0;
}

void
mediator_feed(struct clip_mediator *m, int type, const char *cage, const char *target,
	      const char *name, const char *text)
{
	if (m->feed)
		(void)clip_feed_push(m->feed, type, cage, target, name, text);
}

CLIP_EXPORT int
clip_feed_event_get_type(const struct clip_feed_event *e)
{
	clip_assert_return(e, -EINVAL);
	return e->type;
}

CLIP_EXPORT uint64_t
clip_feed_event_get_seq(const struct clip_feed_event *e)
{
	clip_assert_return(e, 0);
	return e->seq;
}

CLIP_EXPORT uint64_t
clip_feed_event_get_time(const struct clip_feed_event *e)
{
	clip_assert_return(e, 0);
	return e->time_us;
}

CLIP_EXPORT const char *
clip_feed_event_get_cage(const struct clip_feed_event *e)
{
	clip_assert_return(e, NULL);
	return e->cage;
}

CLIP_EXPORT const char *
clip_feed_event_get_target(const struct clip_feed_event *e)
{
	clip_assert_return(e, NULL);
	return e->target;
}

CLIP_EXPORT const char *
clip_feed_event_get_name(const struct clip_feed_event *e)
{
	clip_assert_return(e, NULL);
	return e->name;
}

CLIP_EXPORT const char *
clip_feed_event_get_text(const struct clip_feed_event *e)
{
	clip_assert_return(e, NULL);
	return e->text;
}
