/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sessions: the cages of several levels, their data, their inboxes and the
 * transfer mediator between them, described once and brought up and down
 * together.
 *
 * A session is a name, a state directory, a set of cages (each: a name, a
 * level, a profile, a data directory, a restart rule) and the transfer
 * policy between them; a file in clip.session(5) or the builder functions
 * below. The library derives every piece of wiring from that description:
 * uid bases that do not collide, each cage's inbox created and owned by the
 * cage's uid and bound noexec,nosuid,nodev at /inbox, one socket directory
 * per cage bound read-only at /run/clip, the data directory at /data
 * (read-write, never executable), the confirmation agent's socket bound into
 * no cage. A description whose wiring would break an isolation rule is
 * refused before anything starts, with a message naming both sides.
 *
 * A started session is driven by the caller's event loop through one
 * pollable fd (clip_session_get_fd()) and clip_session_dispatch(), as the
 * mediator is. See clip-session(3), clip.session(5) and doc/session.md.
 */
#ifndef CLIP_SESSION_H
#define CLIP_SESSION_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct clip_ctx;
struct clip_error;
struct clip_level;
struct clip_cage;
struct clip_cage_profile;
struct clip_cage_spawn_opts;
struct clip_mediator;
struct clip_policy;
struct clip_session;
struct clip_session_status;
struct clip_feed_event;
struct clip_audit;

/* Bounds of a session. */
#define CLIP_SESSION_NAME_MAX 15 /* a session's name and a cage's, each */
#define CLIP_SESSION_CAGES_MAX 32
#define CLIP_SESSION_SIZE_MAX (64 * 1024) /* of a clip.session(5) file */

/* Restart= of a cage: what the session does when the cage ends by itself. */
#define CLIP_SESSION_RESTART_NO 0
#define CLIP_SESSION_RESTART_ON_FAILURE 1 /* its init was killed or failed */
#define CLIP_SESSION_RESTART_ALWAYS 2

/*
 * DataEncryption= of a cage: how its data directory is kept at rest
 * (doc/data-at-rest.md). FSCRYPT, the default: encrypted by the kernel
 * with the key of the cage's level, unlocked while a cage of that level
 * runs; a directory that is not encrypted is refused. NONE: plain files,
 * said explicitly.
 */
#define CLIP_SESSION_DATA_FSCRYPT 0
#define CLIP_SESSION_DATA_NONE 1

/* Flags of clip_session_start(). */
#define CLIP_SESSION_START_EXTERNAL_SOCKETS (1u << 0) /* see clip_session_start() */

/* Events given to the function of clip_session_set_event_fn(). */
#define CLIP_SESSION_EVENT_CAGE_ENDED 1 /* a cage ended by itself */
#define CLIP_SESSION_EVENT_CAGE_RESTARTED 2 /* and was started again */
#define CLIP_SESSION_EVENT_CAGE_FAILED 3 /* a restart failed or was given up */
#define CLIP_SESSION_EVENT_STOPPED 4 /* the session stopped (asked to) */

/* A cage of a session; @size as for the library's other option structs. */
struct clip_session_cage {
	uint32_t size; /* sizeof(struct clip_session_cage) */
	const char *name; /* [a-z0-9][a-z0-9_-]*, at most CLIP_SESSION_NAME_MAX */
	const struct clip_level *level;
	/* What the cage sees (root, binds, network, limits, ...), or NULL for the
	   defaults of clip_cage_profile_new(). The session works on its own
	   copy: the wiring is added to the copy, never to @profile. */
	const struct clip_cage_profile *profile;
	const char *data_dir; /* absolute; created 0700 for the cage when missing */
	int restart; /* CLIP_SESSION_RESTART_* */
	int data_encryption; /* CLIP_SESSION_DATA_*; absent (an older size) is FSCRYPT */
};

/**
 * clip_session_new - an empty session
 *
 * @param ret where the new session is stored; untouched on failure
 * @param ctx a context: its state directory holds the keys, the audit log
 *	  and the registry of the session's cages
 * @param name 1 to CLIP_SESSION_NAME_MAX characters of [a-z0-9_-], starting
 *	  with a letter or a digit
 * @param reterr optional
 * @return 0, or -EINVAL, -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_session_new(struct clip_session **ret, struct clip_ctx *ctx, const char *name,
		     struct clip_error **reterr);

/**
 * clip_session_parse - a session from its file form, see clip.session(5)
 *
 * Strict: an unknown section or key, a key given twice, a bad value or a
 * line that is not "[Section]", "Key=Value", a comment or blank is an
 * error whose message names @filename, the line and the key, and whose
 * offset (clip_error_get_offset()) is the offending byte. The profiles it
 * names (Profile=) are read from @dirfd when relative (a symbolic link as
 * the last component is refused), and parsed with
 * clip_cage_profile_load(); the wiring is checked as by
 * clip_session_check(). Relative Profile= and DataDirectory= paths are
 * kept absolute, joined to @dirfd's path as /proc/self/fd tells it
 * (without /proc, a relative path is refused).
 *
 * @param dirfd the directory relative Profile= and DataDirectory= paths
 *	  resolve against (the session file's own), or AT_FDCWD
 * @param filename used in messages only (NULL: "session")
 * @param data the text, not necessarily NUL-terminated
 * @param size its length, at most CLIP_SESSION_SIZE_MAX
 * @return 0, or -EINVAL (malformed, or a wiring refused), -E2BIG (too long,
 *	   or more than CLIP_SESSION_CAGES_MAX cages), -ENOENT, -EACCES (a
 *	   profile), -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_session_parse(struct clip_session **ret, struct clip_ctx *ctx, int dirfd,
		       const char *filename, const char *data, size_t size,
		       struct clip_error **reterr);

/**
 * clip_session_load - read a session file and parse it
 *
 * @param path the file; its directory is where relative Profile= paths
 *	  resolve
 * @return 0, or -ENOENT, -EACCES, -EMEDIUMTYPE (not a regular file), and
 *	   the errors of clip_session_parse().
 * @since 0.1
 */
int clip_session_load(struct clip_session **ret, struct clip_ctx *ctx, const char *path,
		      struct clip_error **reterr);

/**
 * clip_session_format - the session as text that clip_session_parse() reads
 * back into an equal session
 *
 * Canonical: a fixed order of keys, cages sorted by name, each profile
 * inline as the path it was loaded from (or, for a profile built through
 * the API, refused with -EOPNOTSUPP), the rules in their order.
 *
 * @param ret where a newly allocated string is stored (free() it)
 * @return 0, or -EINVAL, -EOPNOTSUPP, -ENOMEM.
 * @since 0.1
 */
int clip_session_format(const struct clip_session *session, char **ret);

/** @since 0.1 */
struct clip_session *clip_session_ref(struct clip_session *session);

/**
 * clip_session_unref - drop a reference; the last one of a running session
 * stops it (as clip_session_stop() with the default grace)
 * @return NULL.
 * @since 0.1
 */
struct clip_session *clip_session_unref(struct clip_session *session);

/**
 * clip_session_get_name - the session's name
 * @return a string owned by @session, or NULL when @session is NULL.
 * @since 0.1
 */
const char *clip_session_get_name(const struct clip_session *session);

/**
 * clip_session_set_state_dir - where the session's wiring lives: its cages'
 * inboxes and socket directories and the agent's socket
 *
 * Without it: STATE_DIR/sessions/NAME under the context's state directory.
 * Created 0711 (root) or 0700 (rootless) with its parents checked as
 * clip_ctx_set_state_dir() does; it must not be within any cage's data
 * directory nor hold one.
 *
 * @param path absolute and normalised, or NULL for the default
 * @return 0, or -EINVAL, -EBUSY (started), -ENOMEM.
 * @since 0.1
 */
int clip_session_set_state_dir(struct clip_session *session, const char *path,
			       struct clip_error **reterr);

/**
 * clip_session_set_secret - the user secret mixed into the keys of the
 * levels' data directories
 *
 * The key of a level whose cages have CLIP_SESSION_DATA_FSCRYPT is derived
 * from the context's master key (clip_ctx_set_key_provider()) and, once
 * this is set, from @secret through scrypt: neither the disk nor the TPM
 * alone opens the data. A start with another secret (or none, when the
 * directory was made with one) is refused with -EACCES naming the
 * directory. The session keeps a copy, wiped when replaced or freed; the
 * caller wipes its own. A secret reaches a runner through a descriptor
 * (clipctl session up --secret-fd), never its arguments or environment.
 *
 * @param secret 1 to 4096 bytes, or NULL (and @size 0) for none
 * @return 0, or -EINVAL, -EBUSY (started), -ENOMEM.
 * @since 0.1
 */
int clip_session_set_secret(struct clip_session *session, const void *secret, size_t size,
			    struct clip_error **reterr);

/**
 * clip_session_add_cage - add a cage
 *
 * @param cage its size member set to sizeof(struct clip_session_cage)
 * @return 0, or -EINVAL (a bad value, a name already taken, a wiring refused:
 *	   the message names both sides), -E2BIG (more than
 *	   CLIP_SESSION_CAGES_MAX), -EBUSY (started), -ENOMEM.
 * @since 0.1
 */
int clip_session_add_cage(struct clip_session *session, const struct clip_session_cage *cage,
			  struct clip_error **reterr);

/**
 * clip_session_set_policy - the transfer policy between the cages
 * (clip.policy(5)); without one, every transfer is denied
 *
 * @param policy a reference is taken
 * @return 0, or -EINVAL, -EBUSY (started).
 * @since 0.1
 */
int clip_session_set_policy(struct clip_session *session, struct clip_policy *policy,
			    struct clip_error **reterr);

/**
 * clip_session_check - check the whole wiring: what clip_session_add_cage()
 * cannot see alone (a cage or a level the policy names but no cage has, the
 * state directory within a data directory, a profile bind that reaches
 * another cage's data, inbox or socket, uid bases that collide)
 *
 * clip_session_parse() and clip_session_start() call it.
 *
 * @return 0, or -EINVAL (the message names both sides), -ENOMEM.
 * @since 0.1
 */
int clip_session_check(struct clip_session *session, struct clip_error **reterr);

/**
 * clip_session_start - start the session: its wiring, the mediator, then
 * every cage
 *
 * Creates the state directory, each cage's data directory and inbox (owned
 * by the cage's uid in root mode, by the caller's in rootless mode), the
 * cages' sockets and the agent's socket; opens the audit log; starts each
 * cage registered as "SESSION.CAGE" (clip_cage_attach() and
 * clip_session_attach_cage() find it). Cages of this session left running
 * by a runner that died are stopped first. On failure everything this call
 * made is undone.
 *
 * With CLIP_SESSION_START_EXTERNAL_SOCKETS the mediator does not accept on
 * the cages' sockets itself: the caller does (clip_session_get_socket_fd())
 * and hands each connection to clip_mediator_add_connection() of
 * clip_session_get_mediator(), e.g. through a privilege-separated front.
 *
 * @param flags 0 or CLIP_SESSION_START_EXTERNAL_SOCKETS
 * @return 0, or -EINVAL, -EBUSY (already started), -EEXIST (a cage or the
 *	   state directory is in use by another runner, or a file that is
 *	   not a socket where a socket goes), -ELOOP, -ENOTDIR, -EPERM (a
 *	   symbolic link, a file, or a directory of another uid where a
 *	   directory of the wiring goes: the message names it, its owner and
 *	   the uid wanted; a data directory that is not encrypted and not
 *	   empty), -EACCES (a data directory encrypted with another key than
 *	   its level's, or with another policy), -EOPNOTSUPP (a data
 *	   directory on a filesystem without encryption; see DataEncryption=
 *	   in clip.session(5)), the errors of clip_session_check(),
 *	   clip_audit_open() and clip_cage_start(): the message names the
 *	   cage.
 * @since 0.1
 */
int clip_session_start(struct clip_session *session, unsigned flags, struct clip_error **reterr);

/**
 * clip_session_stop - stop the session, in order: the mediator stops
 * accepting and answers what is pending with a refusal, the cages are
 * stopped (SIGTERM, then SIGKILL after @grace_ms), then the sockets are
 * removed. Nothing is left: processes, mounts, cgroups, sockets, inbox
 * temporaries. The data directories and inboxes stay.
 *
 * @param grace_ms for each cage, as clip_cage_stop(); 0 for 5000
 * @return 0, or -EINVAL, -ECHILD (not started).
 * @since 0.1
 */
int clip_session_stop(struct clip_session *session, unsigned grace_ms, struct clip_error **reterr);

/**
 * clip_session_get_fd - a pollable fd for event loops (POLLIN when
 * clip_session_dispatch() has work): the mediator's, the cages' ends and
 * the restarts, in one
 * @return the fd, owned by @session, or -EINVAL, -ECHILD (not started).
 * @since 0.1
 */
int clip_session_get_fd(struct clip_session *session);

/**
 * clip_session_dispatch - handle one event of a started session
 *
 * A cage that ended by itself is reaped and reported
 * (CLIP_SESSION_EVENT_CAGE_ENDED, and a LOG_WARNING line), and started again
 * when its restart rule says so, at most 5 times in 10 s.
 *
 * @return 1 when an event was handled, 0 when none was ready, or -EINVAL,
 *	   -ECHILD, -ENOMEM.
 * @since 0.1
 */
int clip_session_dispatch(struct clip_session *session, struct clip_error **reterr);

/**
 * clip_session_set_event_fn - be told of the session's events
 *
 * @param fn called from clip_session_dispatch() and clip_session_stop():
 *	  @event a CLIP_SESSION_EVENT_*, @cage its cage or NULL, @status the
 *	  init's exit status or 128 + the signal, -1 when none
 * @return 0, or -EINVAL.
 * @since 0.1
 */
int clip_session_set_event_fn(struct clip_session *session,
			      void (*fn)(struct clip_session *session, int event, const char *cage,
					 int status, void *userdata),
			      void *userdata);

/**
 * clip_session_restart_cage - stop one cage and start it again, leaving the
 * others, the mediator and transfers in flight alone
 *
 * @return 0, or -EINVAL (no such cage), -ECHILD (session not started), and
 *	   the errors of clip_cage_start().
 * @since 0.1
 */
int clip_session_restart_cage(struct clip_session *session, const char *cage, unsigned grace_ms,
			      struct clip_error **reterr);

/**
 * clip_session_spawn - run a process in a cage of a started session, as
 * clip_cage_spawn()
 * @return 0, or -EINVAL (no such cage), -ECHILD (not running), and the
 *	   errors of clip_cage_spawn().
 * @since 0.1
 */
int clip_session_spawn(struct clip_session *session, const char *cage,
		       const struct clip_cage_spawn_opts *opts, int *ret_pidfd,
		       struct clip_error **reterr);

/**
 * clip_session_get_cage - a cage of a started session
 * @return the cage (a reference owned by @session), or NULL.
 * @since 0.1
 */
struct clip_cage *clip_session_get_cage(struct clip_session *session, const char *cage);

/**
 * clip_session_get_mediator - the session's mediator
 * @return the mediator (owned by @session), or NULL when not started.
 * @since 0.1
 */
struct clip_mediator *clip_session_get_mediator(struct clip_session *session);

/**
 * clip_session_get_socket_fd - the listening socket of a cage, for
 * CLIP_SESSION_START_EXTERNAL_SOCKETS
 * @return the fd (owned by @session), or -EINVAL (no such cage), -ECHILD
 *	   (not started).
 * @since 0.1
 */
int clip_session_get_socket_fd(struct clip_session *session, const char *cage);

/**
 * clip_session_get_cage_uid - the host uid a cage's root runs as, for a
 * caller that checks the peers of clip_session_get_socket_fd() itself
 * @return 0, or -EINVAL (no such cage), -ECHILD (not started), -ENODATA
 *	   (rootless: the cage runs as the caller).
 * @since 0.1
 */
int clip_session_get_cage_uid(struct clip_session *session, const char *cage, uint32_t *ret_uid);

/**
 * clip_session_get_audit - the session's audit log, for a caller that
 * records its own refusals (a front's) in the same trail
 * @return the log (owned by @session), or NULL when not started.
 * @since 0.1
 */
struct clip_audit *clip_session_get_audit(struct clip_session *session);

/**
 * clip_session_get_status - what the session is doing, for a status
 * display: each cage's state, level and number of processes, the
 * mediator's pending questions and whether an agent is connected
 *
 * @param ret a new status (clip_session_status_free())
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_session_get_status(struct clip_session *session, struct clip_session_status **ret,
			    struct clip_error **reterr);

/**
 * clip_session_attach_cage - a cage of a session started by another process
 * of this host (a session runner), as clip_cage_attach() of "SESSION.CAGE"
 * @return the errors of clip_cage_attach().
 * @since 0.1
 */
int clip_session_attach_cage(struct clip_cage **ret, struct clip_ctx *ctx, const char *session,
			     const char *cage, struct clip_error **reterr);

/**
 * clip_session_control - ask the runner of a started session, over its
 * control socket (STATE/control.sock, the runner's uid or root only; the
 * roles' sockets, see clip_session_set_role_group())
 *
 * clip_session_start() serves the control socket; clip_session_dispatch()
 * answers it. @request is one of "status" (*@ret_status is set), "stop"
 * (the runner stops the session and reports CLIP_SESSION_EVENT_STOPPED),
 * "restart CAGE", "start CAGE" or "stop CAGE" (one cage, the others left
 * running) or "reload" (the runner reads its file again, clip_session_load()'s,
 * and checks it whole before anything changes; only the rules and the
 * profiles may differ: the rules decide the next request, a new profile is
 * the cage's at its next start or restart). Each is the admin role's too; a request of a role is recorded
 * in the audit trail with the uid that asked it.
 *
 * @param state_dir the session's state directory, or NULL for the default
 *	  of clip_session_set_state_dir()
 * @param ret_status where the status of "status" is stored, or NULL
 * @return 0, or -EINVAL, -ESRCH (no runner answers), -EPERM (refused to
 *	   this uid: the message names the role the request needs), -EPROTO
 *	   (a malformed answer), the errors the runner met (the message is
 *	   its).
 * @since 0.1
 */
int clip_session_control(struct clip_ctx *ctx, const char *session, const char *state_dir,
			 const char *request, struct clip_session_status **ret_status,
			 struct clip_error **reterr);

/**
 * clip_session_down - take a session down, whatever became of its runner
 *
 * Asks the runner to stop the session ("stop", clip_session_control()).
 * When no runner answers (it was killed), takes down what it left: the
 * session's cages still registered (SESSION.CAGE) are stopped, and the
 * levels' keys it had added to their filesystems (recorded in the state
 * directory's keys/) are removed, which locks their data
 * (doc/data-at-rest.md), under the state directory's lock so that no
 * runner starts meanwhile. What it does is logged, at warning.
 *
 * @param state_dir the session's state directory, or NULL for the default
 *	  of clip_session_set_state_dir()
 * @return 0 (the runner stopped the session), 1 (no runner: what it left
 *	   is taken down), or -EINVAL, -ESRCH (no runner, and nothing left),
 *	   -EBUSY (a runner holds the state directory but does not answer),
 *	   -EPERM, the errors of clip_session_control(), of clip_cage_stop(3)
 *	   and of the key's removal.
 * @since 0.1
 */
int clip_session_down(struct clip_ctx *ctx, const char *session, const char *state_dir,
		      struct clip_error **reterr);

/* Roles of clip_session_set_role_group(). */
#define CLIP_SESSION_ROLE_ADMIN 0 /* status, start, stop and restart cages, reload, stop */
#define CLIP_SESSION_ROLE_AUDIT 1 /* the signed trail and its public key */

/**
 * clip_session_set_role_group - let the members of a group ask the runner
 * what one role may, over a socket of their own (STATE/admin/control.sock,
 * STATE/audit/control.sock: 0660 in a directory 0710, both root and the
 * group), root mode only
 *
 * A peer has a role when its gid or one of its supplementary groups
 * (SO_PEERGROUPS, as they were when it connected) is the role's group.
 * Neither role reads a level's data, an inbox, the state directory or the
 * key: the runner keeps them to itself and its cages' uids. See
 * clip.session(5), AdminGroup= and AuditGroup=.
 *
 * @param role CLIP_SESSION_ROLE_ADMIN or CLIP_SESSION_ROLE_AUDIT
 * @param gid not 0 (root's group has root's rights already)
 * @return 0, or -EINVAL, -EBUSY (started).
 * @since 0.1
 */
int clip_session_set_role_group(struct clip_session *session, int role, uint32_t gid,
				struct clip_error **reterr);

/**
 * clip_session_get_trail - the audit trail of a running session, as the
 * audit role reads it: a trail stream (clip_audit_export()) that
 * clip_audit_verify_public() checks with the machine's public key
 *
 * @param ret_fd where a read-only, sealed copy is stored (close it)
 * @return 0, or -EINVAL, -ESRCH, -EPERM (the message names the role
 *	   needed), -EPROTO, -ENOMEM, the errors the runner met.
 * @since 0.1
 */
int clip_session_get_trail(struct clip_ctx *ctx, const char *session, const char *state_dir,
			   int *ret_fd, struct clip_error **reterr);

/**
 * clip_session_get_audit_key - the public key that signs a running
 * session's trail (clip_audit_get_public_key() of its runner), in PEM
 *
 * @param ret where a newly allocated string is stored (free() it)
 * @return as clip_session_get_trail().
 * @since 0.1
 */
int clip_session_get_audit_key(struct clip_ctx *ctx, const char *session, const char *state_dir,
			       char **ret, struct clip_error **reterr);

/* A status: clip_session_get_status() and clip_session_control(). */

/** @since 0.1 */
void clip_session_status_free(struct clip_session_status *status);
/** @since 0.1 */
size_t clip_session_status_get_n_cages(const struct clip_session_status *status);
/**
 * clip_session_status_get_cage - the Nth cage (by name order)
 * @param ret_state CLIP_CAGE_RUNNING or CLIP_CAGE_STOPPED, or NULL
 * @param ret_level its level as clip_level_format() writes it, or NULL
 * @param ret_pids its number of processes (init included), or NULL
 * @param ret_missing its CLIP_CAGE_MISSING_* flags, or NULL
 * @param ret_restarts how often the session restarted it (by its Restart=
 *	  rule, or asked to), or NULL
 * @return the cage's name (owned by @status), or NULL past the end.
 * @since 0.1
 */
const char *clip_session_status_get_cage(const struct clip_session_status *status, size_t i,
					 int *ret_state, const char **ret_level, unsigned *ret_pids,
					 unsigned *ret_missing, unsigned *ret_restarts);
/**
 * clip_session_status_get_mediator - questions waiting for the user's answer,
 * and whether a confirmation agent is connected (1) or not (0)
 * @return 0, or -EINVAL.
 * @since 0.1
 */
int clip_session_status_get_mediator(const struct clip_session_status *status,
				     unsigned *ret_pending, int *ret_agent);

/**
 * clip_session_watch - follow what the user should see of a running
 * session: its transfers asked, delivered and denied, its cages started,
 * stopped and died (clip-feed(3)), over its control socket
 *
 * @param state_dir the session's state directory, or NULL for the default
 * @param ret_fd where the connection is stored (close it to stop): poll it,
 *	  then clip_session_watch_read()
 * @return 0, or -EINVAL, -ESRCH (no runner answers), -EPERM (refused to
 *	   this uid), -EBUSY (too many watchers), -EPROTO, -ENOMEM.
 * @since 0.1
 */
int clip_session_watch(struct clip_ctx *ctx, const char *session, const char *state_dir,
		       int *ret_fd, struct clip_error **reterr);

/**
 * clip_session_watch_read - the next event of a watch, without waiting
 *
 * The name and text of an event may come from a cage: escape them before
 * they reach a terminal. A gap in clip_feed_event_get_seq() says how many
 * the runner dropped (a reader that did not keep up).
 *
 * @param ret where the event is stored (clip_feed_event_unref())
 * @return 1 with an event, 0 when none waits, or -EINVAL, -ECONNRESET (the
 *	   session stopped, or dropped this watcher: its socket was full),
 *	   -EPROTO (a malformed event), -ENOMEM.
 * @since 0.1
 */
int clip_session_watch_read(int fd, struct clip_feed_event **ret, struct clip_error **reterr);

#ifdef __cplusplus
}
#endif

#endif
