/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A feed of what the user should see: a transfer put to the user,
 * delivered or denied (the mediator pushes them), a cage started, stopped
 * or died (the session, or any launcher), an exec refused under W^X (when
 * a cage reports it), an access Landlock refused a cage. For a confidentiality bar or a notification daemon:
 * one pollable fd, events read in order, bounded. See clip-feed(3).
 */
#ifndef CLIP_FEED_H
#define CLIP_FEED_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct clip_error;
struct clip_feed;
struct clip_feed_event;
struct clip_mediator;

/* Event types. */
#define CLIP_FEED_TRANSFER_ASKED 1 /* the user is asked: cage -> target, name */
#define CLIP_FEED_TRANSFER_DELIVERED 2 /* cage -> target, name as delivered */
#define CLIP_FEED_TRANSFER_DENIED 3 /* cage -> target, name; text: why */
#define CLIP_FEED_CAGE_STARTED 4 /* cage */
#define CLIP_FEED_CAGE_STOPPED 5 /* cage, stopped when asked */
#define CLIP_FEED_CAGE_DIED 6 /* cage, ended by itself; text: how */
#define CLIP_FEED_EXEC_REFUSED 7 /* cage; name: the file; text: why */
#define CLIP_FEED_CAGE_REFUSED 8 /* cage; text: what Landlock refused it */

/* Events kept for a reader that does not keep up; the oldest go first. */
#define CLIP_FEED_EVENTS_MAX 1024

/**
 * clip_feed_new - an empty feed
 * @return 0, or -EINVAL, -ENOMEM, -EMFILE.
 * @since 0.1
 */
int clip_feed_new(struct clip_feed **ret, struct clip_error **reterr);

/** @since 0.1 */
struct clip_feed *clip_feed_ref(struct clip_feed *feed);
/** @since 0.1 */
struct clip_feed *clip_feed_unref(struct clip_feed *feed);

/**
 * clip_feed_get_fd - the fd to poll: readable while events wait
 * @return an fd owned by the feed, or -EINVAL.
 * @since 0.1
 */
int clip_feed_get_fd(struct clip_feed *feed);

/**
 * clip_feed_push - add an event
 *
 * @param type a CLIP_FEED_* type
 * @param cage the cage it is about (the source of a transfer), or NULL
 * @param target the target cage of a transfer, or NULL
 * @param name a document's or a file's name, or NULL
 * @param text why or how, one line, or NULL
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_feed_push(struct clip_feed *feed, int type, const char *cage, const char *target,
		   const char *name, const char *text);

/**
 * clip_feed_next - take the oldest event
 *
 * @param ret where the event is stored (unref it)
 * @return 1 with an event, 0 when none waits, or -EINVAL.
 * @since 0.1
 */
int clip_feed_next(struct clip_feed *feed, struct clip_feed_event **ret);

/**
 * clip_mediator_set_feed - the feed the mediator pushes its transfers into
 * (CLIP_FEED_TRANSFER_*), or NULL for none
 * @return 0, or -EINVAL.
 * @since 0.1
 */
int clip_mediator_set_feed(struct clip_mediator *mediator, struct clip_feed *feed);

/**
 * clip_feed_event_new - an event as another feed numbered and dated it,
 * for a program that relays events (clip_session_watch_read() makes
 * them so)
 * @return 0, or -EINVAL (an unknown type), -ENOMEM.
 * @since 0.1
 */
int clip_feed_event_new(struct clip_feed_event **ret, int type, uint64_t seq, uint64_t time_us,
			const char *cage, const char *target, const char *name, const char *text);

/** @since 0.1 */
struct clip_feed_event *clip_feed_event_ref(struct clip_feed_event *event);
/** @since 0.1 */
struct clip_feed_event *clip_feed_event_unref(struct clip_feed_event *event);
/** clip_feed_event_get_type - a CLIP_FEED_* type, or -EINVAL @since 0.1 */
int clip_feed_event_get_type(const struct clip_feed_event *event);
/**
 * clip_feed_event_get_seq - the event's number in its feed, from 1: a gap
 * says how many were dropped (over CLIP_FEED_EVENTS_MAX); 0 for NULL
 * @since 0.1
 */
uint64_t clip_feed_event_get_seq(const struct clip_feed_event *event);
/** clip_feed_event_get_time - when it was pushed: CLOCK_REALTIME, microseconds @since 0.1 */
uint64_t clip_feed_event_get_time(const struct clip_feed_event *event);
/**
 * clip_feed_event_get_cage, _get_target, _get_name, _get_text - as pushed
 * (a name or text may come from a cage: escape it before printing it);
 * NULL when none
 * @since 0.1
 */
const char *clip_feed_event_get_cage(const struct clip_feed_event *event);
/** @since 0.1 */
const char *clip_feed_event_get_target(const struct clip_feed_event *event);
/** @since 0.1 */
const char *clip_feed_event_get_name(const struct clip_feed_event *event);
/** @since 0.1 */
const char *clip_feed_event_get_text(const struct clip_feed_event *event);
/** clip_feed_event_type_name - "transfer-asked", "cage-died"...; NULL for an unknown type @since 0.1 */
const char *clip_feed_event_type_name(int type);

#ifdef __cplusplus
}
#endif

#endif
