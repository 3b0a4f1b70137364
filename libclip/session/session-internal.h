/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * session: the cages of several levels, their data, inboxes and the
 * mediator between them, from one description (include/clip/session.h).
 *
 *   session.c        the object, the builder, the wiring derivation and its
 *                    checks (clip_session_check())
 *   session-file.c   clip.session(5): the strict parser and the canonical
 *                    formatter
 *   session-run.c    start, stop, the event loop, restarts, spawn, status
 *   session-control.c the control socket (server in dispatch, client
 *                    clip_session_control()) and the status object
 *   session-watch.c  the feed of what the user should see, streamed to
 *                    "watch" connections (clip_session_watch())
 *   session-roles.c  the admin and audit roles: their groups, their sockets,
 *                    what each may ask, the trail handed to the audit role
 *   session-crypt.c  the levels' data at rest: unlocked with the first cage
 *                    of a level, locked with its last (doc/data-at-rest.md)
 *
 * Calls: base cage keys label level lsm transfer
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include <clip/cage.h>
#include <clip/ctx.h>
#include <clip/level.h>
#include <clip/mediator.h>
#include <clip/session.h>

#include "base/macro.h"
#include "base/util.h"

/* Where the wiring goes, in the session's state directory. */
#define SESSION_INBOX_DIR "inbox" /* inbox/CAGE: the cage's inbox */
#define SESSION_RUN_DIR "run" /* run/CAGE/transfer.sock, bound at /run/clip */
#define SESSION_SOCKET_NAME "transfer.sock"
#define SESSION_AGENT_SOCKET "confirm.sock" /* bound into no cage */
#define SESSION_CONTROL_SOCKET "control.sock"
#define SESSION_KEYS_DIR "keys" /* keys/DEV-ID: a level's key added, where (session-crypt.c) */
/* Where it goes in a cage. */
#define SESSION_CAGE_INBOX "/inbox"
#define SESSION_CAGE_RUN "/run/clip"

/* The unit of a uid base (clip_cage_profile_set_uid_base()), and the last valid one. */
#define SESSION_UID_RANGE 65536u
#define SESSION_UID_BASE_LAST (UINT32_MAX - 2 * SESSION_UID_RANGE + 1)

/* The default grace of a stop, and the restart bound. */
#define SESSION_GRACE_MS 5000u
#define SESSION_RESTART_BURST 5u
#define SESSION_RESTART_WINDOW_S 10

struct session_cage {
	char name[CLIP_SESSION_NAME_MAX + 1];
	char cage_name[2 * CLIP_SESSION_NAME_MAX + 2]; /* "SESSION.CAGE", the registry's */
	struct clip_level *level;
	/* The session's own copy, named cage_name, with the wiring added at
	   start (session_cage_profile()); profile_path is where it was read
	   from (clip_session_parse()), NULL when built through the API. */
	struct clip_cage_profile *profile;
	char *profile_path;
	char *data_dir;
	int restart; /* CLIP_SESSION_RESTART_* */
	uint32_t uid_base; /* the one the cage runs with in root mode */

	/* Runtime (session-run.c). */
	struct clip_cage *cage; /* NULL before the start */
	int listen_fd, inbox_fd;
	unsigned restarts; /* over the session's life */
	time_t restart_window; /* start of the current restart window */
	unsigned restarts_in_window;
	bool failed; /* restarts given up */
	uint32_t run_uid, run_gid; /* what owns its inbox and data: the uid base, or the caller */
	bool inbox_made, data_made; /* by this start: removed again if it fails */
	/* Its Landlock denials fed (session_feed_denial()), and those over the rate. */
	struct token_bucket denials;
	uint64_t denials_suppressed;
	bool reloaded; /* a reload gave it a new profile: its next start makes the cage anew */

	/* The data at rest (session-crypt.c). */
	int data_encryption; /* CLIP_SESSION_DATA_* */
	bool key_held; /* this cage holds its level's key on the data's filesystem */
	int key_fd; /* the data directory's parent, while key_held: the filesystem */
	uint64_t key_dev;
	uint8_t key_id[16]; /* the kernel's identifier of the level's key */
};

/* At most this many "watch" connections at once (session-watch.c). */
#define SESSION_WATCHERS_MAX 8

struct clip_session {
	unsigned n_ref;
	struct clip_ctx *ctx;
	char name[CLIP_SESSION_NAME_MAX + 1];
	char *state_dir; /* NULL: STATE/sessions/NAME, resolved at start */
	struct session_cage *cages[CLIP_SESSION_CAGES_MAX];
	size_t n_cages;
	struct clip_policy *policy;
	char **rules; /* the Rule= lines as written (NULL-terminated), for the formatter */
	struct clip_mediator_opts mediator_opts;
	bool require_lsm; /* RequireLSM=yes: no start without the BPF LSM */

	/* Runtime (session-run.c). */
	bool started;
	int mode; /* CLIP_CAGE_MODE_ROOT or _ROOTLESS, fixed at start */
	int state_fd; /* the state directory, open */
	int epoll_fd;
	int control_fd; /* listening */
	struct clip_audit *audit;
	struct clip_mediator *mediator;
	int run_fd; /* the state directory's run/ */
	bool state_made, inbox_made; /* by this start: removed again if it fails */
	struct session_control *control; /* session-control.c */
	void (*event_fn)(struct clip_session *, int, const char *, int, void *);
	void *event_userdata;
	struct clip_feed *feed; /* what the user should see, for the watchers (session-watch.c) */
	int watch_fds[SESSION_WATCHERS_MAX]; /* the control connections that asked "watch" */
	size_t n_watch;
	uint32_t role_gid[2]; /* CLIP_SESSION_ROLE_*: the group of each role (session-roles.c) */
	bool role_set[2];
	char *file_path; /* clip_session_load()'s, read again by "reload" (session-roles.c) */
	void *secret; /* clip_session_set_secret(), wiped when freed */
	size_t secret_size;
};

/* An argument refused with a message (clip_assert_return() with a reason). */
#define session_assert_arg(expr, reterr, ...) \
	clip_assert_return(expr, api_return(error_set(reterr, -EINVAL, __VA_ARGS__), reterr))

DEFINE_UNREF_CLEANUP(struct clip_session, clip_session_unref)
DEFINE_UNREF_CLEANUP(struct clip_cage_profile, clip_cage_profile_unref)
DEFINE_UNREF_CLEANUP(struct clip_policy, clip_policy_unref)

/* session.c */
/* [a-z0-9][a-z0-9_-]*, 1 to CLIP_SESSION_NAME_MAX: a session's or a cage's name. */
bool session_name_valid(const char *name);
struct session_cage *session_find_cage(const struct clip_session *s, const char *name);
/* The state directory of session @name: @state_dir if given, else the context's
 * STATE/sessions/NAME; NULL on ENOMEM or when the context has no state directory. */
char *session_state_path_for(struct clip_ctx *ctx, const char *name, const char *state_dir);
/* The state directory's path, resolved (s->state_dir or the default); NULL on ENOMEM. */
char *session_state_path(const struct clip_session *s);
/* The cage's profile with the session's wiring added, ready to start. */
int session_cage_profile(struct clip_session *s, struct session_cage *c,
			 struct clip_cage_profile **ret, struct clip_error **reterr);

/* session-run.c */
void session_stop_all(struct clip_session *s, unsigned grace_ms);
/*
 * A listening SOCK_SEQPACKET socket (non-blocking) at @dirfd/@name with
 * @mode; a socket left there by a runner that died is replaced, anything
 * else is refused. @dirpath names @dirfd in messages.
 */
int session_listen_at(int dirfd, const char *dirpath, const char *name, mode_t mode,
		      struct clip_error **reterr);
/* What an fd on s->epoll_fd is: SESSION_EV_* << 32 | an index. */
#define SESSION_EV_MEDIATOR 1u
#define SESSION_EV_CAGE 2u
#define SESSION_EV_CONTROL 3u /* the listening control socket */
#define SESSION_EV_CONTROL_CONN 4u
#define SESSION_EV_CONTROL_TIMER 5u
#define SESSION_EV_FEED 6u /* the session's feed: events for the watchers */
#define SESSION_EV_DENIALS 7u /* a cage's Landlock denials (clip_cage_get_denial_fd()) */
int session_watch(struct clip_session *s, int fd, unsigned kind, unsigned index);
void session_emit(struct clip_session *s, int event, const char *cage, int status);

/* session-control.c */
int session_control_listen(struct clip_session *s, struct clip_error **reterr);
/* Handle one event of the control socket (@tag from the epoll fd): 1 or -errno. */
int session_control_dispatch(struct clip_session *s, uint64_t tag, struct clip_error **reterr);
/* Close the control socket and its connections (the socket file stays). */
void session_control_close(struct clip_session *s);

/* session-crypt.c */
/*
 * Before @c starts: its level's key added (once for all its cages), its
 * data directory checked to be encrypted with it, or given the policy
 * when new and empty; refused with a message naming the directory.
 */
int session_crypt_unlock(struct clip_session *s, struct session_cage *c,
			 struct clip_error **reterr);
/* After @c stopped: its level's key removed when no other cage holds it. Idempotent. */
void session_crypt_lock(struct clip_session *s, struct session_cage *c);
/*
 * The keys recorded in the state directory @state_fd (locked by the
 * caller) that no runner removed, a killed one's: removed. The number
 * removed, or -errno when one could not be (the others are, and the log
 * says which).
 */
int session_crypt_lock_leftovers(struct clip_ctx *ctx, const char *session, int state_fd);
void session_secret_free(struct clip_session *s);

/* session-watch.c */
/* The feed, given to the mediator and watched: at start, before the cages run. */
int session_feed_open(struct clip_session *s, struct clip_error **reterr);
/* Push an event of a cage into the feed, when there is one. */
void session_feed_cage(struct clip_session *s, int type, const char *cage, const char *text);
/* clip_cage_denial_fn of the session's cages: each denial to the feed, at a bounded rate:
 * SESSION_DENIALS_BURST at once, then SESSION_DENIALS_PER_S; the rest counted. */
#define SESSION_DENIALS_PER_S 1
#define SESSION_DENIALS_BURST 10
void session_feed_denial(struct clip_cage *cage, const char *what, void *userdata);
/* Send what the feed holds to every watcher; a watcher that cannot take it is dropped. */
void session_feed_flush(struct clip_session *s);
/* Teardown: flush, then close the watchers and drop the feed. */
void session_feed_close(struct clip_session *s);
/* A control connection asked "watch": it becomes a watcher (takes @fd), or is refused. */
void session_watch_add(struct clip_session *s, int fd);
/* session-control.c, for the watch client and the roles' */
#define CONTROL_CLIENT_TIMEOUT_MS 120000 /* for the runner to answer (a stop waits for the cages) */
/* The arguments every client of the control socket takes: @ctx (of this process), @session
 * a session's name, @state_dir NULL or absolute. 0, or -EINVAL (-ECHILD) with a message that
 * names @func (the exported function) and the argument. */
int session_client_check(struct clip_ctx *ctx, const char *session, const char *state_dir,
			 const char *func, struct clip_error **reterr);
int session_control_connect(struct clip_ctx *ctx, const char *session, const char *state_dir,
			    struct clip_error **reterr);
/* @request sent on a new connection to @session's control socket, and its answer waited for
 * @timeout_ms: the connection (the answer to read), or -errno with a message. */
int session_control_request(struct clip_ctx *ctx, const char *session, const char *state_dir,
			    const char *request, int timeout_ms, struct clip_error **reterr);
int session_answer_error_parse(const char *session, char *untrusted_text,
			       struct clip_error **reterr);

/* session-roles.c */
#define SESSION_ROLES 2 /* CLIP_SESSION_ROLE_ADMIN, CLIP_SESSION_ROLE_AUDIT */
/* Each role's socket in a directory of its own: 0710 and 0660, root and the role's group. */
#define SESSION_ADMIN_DIR "admin"
#define SESSION_AUDIT_DIR "audit"
#define SESSION_ADMIN_SOCKET SESSION_ADMIN_DIR "/control.sock"
#define SESSION_AUDIT_SOCKET SESSION_AUDIT_DIR "/control.sock"
/* What a control peer is: root or the runner's uid (everything), and each role it has. */
#define SESSION_PEER_ALL (1u << 0)
#define SESSION_PEER_ADMIN (1u << 1)
#define SESSION_PEER_AUDIT (1u << 2)
/* AdminGroup=/AuditGroup=: a gid, or a group's name resolved now; -EINVAL with @why. */
int session_group_parse(const char *value, uint32_t *ret, char *why, size_t size);
void session_roles_format(const struct clip_session *s, FILE *f);
/* The roles' sockets (root mode, groups set): @fds[role] or -1 each. */
int session_roles_listen(struct clip_session *s, int fds[SESSION_ROLES],
			 struct clip_error **reterr);
void session_roles_close(struct clip_session *s, int fds[SESSION_ROLES]);
/* The SESSION_PEER_* of the peer of @fd (SO_PEERCRED, SO_PEERGROUPS); 0: none. */
unsigned session_peer_roles(const struct clip_session *s, int fd, uid_t *ret_uid);
/* The SESSION_PEER_* a request needs besides ALL, and the role's name for messages. */
unsigned session_request_needs(const char *req, const char **ret_role);
/* Answer "trail" or "audit-key" (reads, not audited) on @fd: whether @req was one. */
bool session_roles_read(struct clip_session *s, int fd, const char *req);
/*
 * Do "start CAGE", "stop CAGE", "reload" or "restart CAGE" of a reloaded
 * cage, without answering: the caller audits, then answers (doc/session.md).
 * 1 when @req was one and done, -errno with @reterr set when it was one and
 * failed, 0 when it was none.
 */
int session_roles_change(struct clip_session *s, const char *req, struct clip_error **reterr);
/* clip_session_load() keeps the file's path for "reload" (none when out of memory). */
void session_remember_file(struct clip_session *s, const char *path);
/* session-control.c: an answer on a control connection, "ok\n" or "error ERRNO MESSAGE\n". */
void session_answer_text(int fd, const char *text);
void session_answer_error(int fd, int r, const char *message);

/*
 * Record a request that changes the session in the audit trail, with who
 * asked it and @result: 0, or -EIO when the record could not be written.
 */
int session_roles_audit(struct clip_session *s, uid_t uid, unsigned roles, const char *req,
			int result);

/*
 * session-run.c: the cage @cage_name (SESSION.CAGE) left registered by a
 * runner that died, stopped: 1, 0 when none is registered, or -errno.
 */
int session_stop_leftover(struct clip_ctx *ctx, const char *session, const char *cage_name,
			  unsigned grace_ms);

/* session-run.c, for the requests of session-roles.c */
int session_cage_start(struct clip_session *s, struct session_cage *c, struct clip_error **reterr);
void session_cage_stop(struct clip_session *s, struct session_cage *c, unsigned grace_ms);
