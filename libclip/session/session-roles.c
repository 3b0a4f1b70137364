/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The admin and audit roles of a session: non-root users who ask the
 * runner, and nothing else, for what their role may (doc/session.md,
 * "Roles").
 *
 * Each role is a group (AdminGroup=, AuditGroup=). In root mode the runner
 * listens for each on a socket of its own, admin/control.sock and
 * audit/control.sock in the state directory, the directory 0710 and the
 * socket 0660, both root and the role's group: the modes are the first
 * fence, as for control.sock, twice. The second is the peer's credentials, read from the
 * connection (SO_PEERCRED for the uid and gid, SO_PEERGROUPS for the
 * supplementary groups, both as they were at connect(), so that no pid is
 * looked up again): whichever socket it came through, a peer has a role
 * only when one of its groups is the role's. Root and the runner's own uid
 * keep every request.
 *
 *   admin: status, stop, restart CAGE, start CAGE, stop CAGE, reload,
 *          audit-key
 *   audit: trail, audit-key
 *
 * "trail" is answered "ok\n" with a memfd (SCM_RIGHTS): a sealed copy of
 * the trail as clip_audit_export() writes it, which the audit role
 * verifies with the machine's public key ("audit-key", PEM) and forwards.
 * Neither role reads a data directory, an inbox, the state directory, the
 * audit log's file or the key file: they are the runner's and the cages'
 * (tests/integration/session-roles.sh tries each path).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <clip/audit.h>
#include <clip/session.h>

#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/log.h"
#include "base/test-hooks.h"
#include "base/util.h"
#include "session-internal.h"

#define ROLE_GROUPS_MAX 65536 /* NGROUPS_MAX of the kernel */
#define ROLE_ANSWER_MAX 4096

static const char *const role_keys[SESSION_ROLES] = {
	[CLIP_SESSION_ROLE_ADMIN] = "AdminGroup",
	[CLIP_SESSION_ROLE_AUDIT] = "AuditGroup",
};
static const char *const role_dirs[SESSION_ROLES] = {
	[CLIP_SESSION_ROLE_ADMIN] = SESSION_ADMIN_DIR,
	[CLIP_SESSION_ROLE_AUDIT] = SESSION_AUDIT_DIR,
};
static const char *const role_sockets[SESSION_ROLES] = {
	[CLIP_SESSION_ROLE_ADMIN] = SESSION_ADMIN_SOCKET,
	[CLIP_SESSION_ROLE_AUDIT] = SESSION_AUDIT_SOCKET,
};

int
session_group_parse(const char *value, uint32_t *ret, char *why, size_t size)
{
	struct group gr, *found = NULL;
	char buf[4096];
	unsigned long v = 0;
	bool digits = *value != '\0';
	int r;

	for (const char *p = value; *p; p++)
		digits = digits && *p >= '0' && *p <= '9';
	if (digits) {
		if (strlen(value) > 10 || (value[0] == '0' && value[1]) ||
		    (v = strtoul(value, NULL, 10)) == 0 || v >= UINT32_MAX - 1) {
			snprintf(why, size, "'%.40s' is not a gid from 1 to %u", value,
				 UINT32_MAX - 2);
			return -EINVAL;
		}
		*ret = (uint32_t)v;
		return 0;
	}
	/* A name, resolved once: the runner checks gids, never names. */
	r = strlen(value) <= 32 ? getgrnam_r(value, &gr, buf, sizeof(buf), &found) : ERANGE;
	if (r != 0 || !found) {
		snprintf(why, size, "'%.40s' is not a group of this system (nor a gid)", value);
		return -EINVAL;
	}
	if (found->gr_gid == 0) {
		snprintf(why, size, "'%.40s' is root's group: root has every right already", value);
		return -EINVAL;
	}
	*ret = (uint32_t)found->gr_gid;
	return 0;
}

void
session_roles_format(const struct clip_session *s, FILE *f)
{
	for (int role = 0; role < SESSION_ROLES; role++)
		if (s->role_set[role])
			fprintf(f, "%s=%u\n", role_keys[role], (unsigned)s->role_gid[role]);
}

CLIP_EXPORT int
clip_session_set_role_group(struct clip_session *s, int role, uint32_t gid,
			    struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	session_assert_arg(s, reterr, "%s: the session is NULL", __func__);
	ctx_assert_return_error(s->ctx, reterr);
	session_assert_arg(role == CLIP_SESSION_ROLE_ADMIN || role == CLIP_SESSION_ROLE_AUDIT,
			   reterr, "%s: role %d is not CLIP_SESSION_ROLE_ADMIN nor _AUDIT",
			   __func__, role);
	session_assert_arg(gid != 0 && gid < UINT32_MAX - 1, reterr,
			   "%s: gid %u is root's or not a gid", __func__, (unsigned)gid);
	session_assert_arg(s->role_set[!role] == false || s->role_gid[!role] != gid, reterr,
			   "%s: gid %u is the other role's group already: two roles, two groups",
			   __func__, (unsigned)gid);
	if (s->started)
		return api_return(error_set(reterr, -EBUSY, "session '%s' is started", s->name),
				  reterr);
	s->role_gid[role] = gid;
	s->role_set[role] = true;
	return 0;
}

/* -- the server -------------------------------------------------------- */

/* A parent of the state directory that others may not cross hides the roles' sockets: said. */
static void
warn_unreachable(struct clip_session *s, const char *state)
{
	_cleanup_free_ char *path = strdup(state);
	struct stat st;

	for (char *p = path ? strrchr(path, '/') : NULL; p && p > path; p = strrchr(path, '/')) {
		*p = '\0';
		if (stat(path, &st) == 0 && !(st.st_mode & S_IXOTH)) {
			log_warning(s->ctx,
				    "session '%s': %s is mode %04o: the roles' users cannot reach "
				    "their sockets in %s (set StateDirectory= under directories "
				    "others may cross)",
				    s->name, path, (unsigned)(st.st_mode & 07777), state);
			return;
		}
	}
}

/* STATE/admin or STATE/audit: made or taken back, root's, 0710, the role's group. */
static int
role_dir(struct clip_session *s, const char *state, int role, struct clip_error **reterr)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (mkdirat(s->state_fd, role_dirs[role], 0700) < 0 && errno != EEXIST)
		return error_set_errno(reterr, -errno, "cannot create %s/%s", state,
				       role_dirs[role]);
	fd = openat(s->state_fd, role_dirs[role], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return error_set_errno(reterr, -errno, "cannot open %s/%s (not a directory?)",
				       state, role_dirs[role]);
	if (fstat(fd, &st) < 0)
		return error_set_errno(reterr, -errno, "cannot stat %s/%s", state, role_dirs[role]);
	if (st.st_uid != 0)
		return error_set(reterr, -EPERM, "%s/%s is owned by uid %u, not by root", state,
				 role_dirs[role], (unsigned)st.st_uid);
	/* Made 0700 root:root, then given to the group: never wider than meant. */
	if (fchown(fd, 0, (gid_t)s->role_gid[role]) < 0 || fchmod(fd, 0710) < 0)
		return error_set_errno(reterr, -errno, "cannot give %s/%s to gid %u", state,
				       role_dirs[role], (unsigned)s->role_gid[role]);
	return steal_fd(fd);
}

int
session_roles_listen(struct clip_session *s, int fds[SESSION_ROLES], struct clip_error **reterr)
{
	_cleanup_free_ char *state = session_state_path(s);
	int r;

	for (int role = 0; role < SESSION_ROLES; role++)
		fds[role] = -1;
	if (!state)
		return -ENOMEM;
	for (int role = 0; role < SESSION_ROLES; role++) {
		if (!s->role_set[role])
			continue;
		if (s->mode != CLIP_CAGE_MODE_ROOT) {
			/* Rootless, the state directory is the caller's alone: nobody else reaches it. */
			log_notice(s->ctx,
				   "session '%s': %s= is for a root runner: no role socket in "
				   "rootless mode",
				   s->name, role_keys[role]);
			continue;
		}
		{
			_cleanup_close_ int dir = role_dir(s, state, role, reterr);
			_cleanup_free_ char *path = NULL;

			if (dir < 0)
				return dir;
			if (asprintf(&path, "%s/%s", state, role_dirs[role]) < 0)
				return -ENOMEM;
			fds[role] = session_listen_at(dir, path, "control.sock", 0660, reterr);
		}
		if (fds[role] < 0)
			return fds[role];
		if (fchownat(s->state_fd, role_sockets[role], 0, (gid_t)s->role_gid[role],
			     AT_SYMLINK_NOFOLLOW) < 0)
			return error_set_errno(reterr, -errno, "cannot give %s/%s to gid %u", state,
					       role_sockets[role], (unsigned)s->role_gid[role]);
		r = session_watch(s, fds[role], SESSION_EV_CONTROL, 1u + (unsigned)role);
		if (r < 0)
			return error_set_errno(reterr, r, "cannot watch %s/%s", state,
					       role_sockets[role]);
	}
	if (fds[0] >= 0 || fds[1] >= 0)
		warn_unreachable(s, state);
	return 0;
}

void
session_roles_close(struct clip_session *s, int fds[SESSION_ROLES])
{
	for (int role = 0; role < SESSION_ROLES; role++) {
		if (fds[role] >= 0) {
			close(fds[role]);
			fds[role] = -1;
			if (s->state_fd >= 0)
				(void)unlinkat(s->state_fd, role_sockets[role], 0);
		}
		/* Its directory, also when a start failed after making it (removed if empty). */
		if (s->role_set[role] && s->state_fd >= 0)
			(void)unlinkat(s->state_fd, role_dirs[role], AT_REMOVEDIR);
	}
}

/* Whether @gid is the primary or a supplementary group of the peer of @fd. */
static bool
peer_in_group(int fd, gid_t primary, gid_t gid)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(small);
	bool found = primary == gid;

	if (found)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		if (errno != ERANGE || len > ROLE_GROUPS_MAX * sizeof(gid_t))
			return false;
		groups = malloc(len);
		if (!groups || getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
			free(groups);
			return false;
		}
	}
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		found = found || groups[i] == gid;
	if (groups != small)
		free(groups);
	return found;
}

unsigned
session_peer_roles(const struct clip_session *s, int fd, uid_t *ret_uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	unsigned roles = 0;

	*ret_uid = (uid_t)-1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return 0;
	*ret_uid = cred.uid;
	if (cred.uid == 0 || cred.uid == geteuid() || test_hook_disabled("session-control-peer"))
		return SESSION_PEER_ALL;
	for (int role = 0; role < SESSION_ROLES; role++)
		if (s->role_set[role] && s->mode == CLIP_CAGE_MODE_ROOT &&
		    (peer_in_group(fd, cred.gid, (gid_t)s->role_gid[role]) ||
		     test_hook_disabled("session-role-groups")))
			roles |= role == CLIP_SESSION_ROLE_ADMIN ? SESSION_PEER_ADMIN
								 : SESSION_PEER_AUDIT;
	return roles;
}

unsigned
session_request_needs(const char *req, const char **ret_role)
{
	if (strcmp(req, "trail") == 0) {
		*ret_role = "the audit role";
		return SESSION_PEER_AUDIT;
	}
	if (strcmp(req, "audit-key") == 0) {
		*ret_role = "the admin or the audit role";
		return SESSION_PEER_ADMIN | SESSION_PEER_AUDIT;
	}
	if (strcmp(req, "watch") == 0) {
		/* The transfers' document names are the users' data. */
		*ret_role = "root or the runner's uid";
		return 0;
	}
	/* The rest, unknown requests included (answered as such). */
	*ret_role = "the admin role";
	if (test_hook_disabled("session-role-requests"))
		return SESSION_PEER_ADMIN | SESSION_PEER_AUDIT;
	return SESSION_PEER_ADMIN;
}

/* "ok\n" and a sealed memfd holding the trail stream. */
static void
answer_trail(struct clip_session *s, int fd)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	_cleanup_close_ int mfd = -1;
	char control[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (char *)"ok\n", .iov_len = 3 };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = control,
			      .msg_controllen = sizeof(control) };
	struct cmsghdr *cm;
	int r;

	mfd = memfd_create("clip-trail", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0) {
		session_answer_error(fd, -errno, "cannot create a memfd for the trail");
		return;
	}
	r = clip_audit_export(s->audit, mfd, &e);
	if (r < 0) {
		session_answer_error(fd, r, clip_error_get_message(e));
		return;
	}
	/* A copy the reader cannot change under a verifier, nor grow. */
	if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
	    lseek(mfd, 0, SEEK_SET) < 0) {
		session_answer_error(fd, -errno, "cannot seal the trail's copy");
		return;
	}
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm)
		return;
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &mfd, sizeof(int));
	(void)sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void
session_remember_file(struct clip_session *s, const char *path)
{
	free(s->file_path);
	s->file_path = realpath(path, NULL);
}

/* A reload may change the rules and the profiles, nothing else: 0, or -EINVAL naming what. */
static int
reload_same_shape(struct clip_session *s, struct clip_session *n, struct clip_error **reterr)
{
	_cleanup_free_ char *a = session_state_path(s), *b = session_state_path(n);

	if (!a || !b)
		return -ENOMEM;
	if (strcmp(a, b) != 0 || n->n_cages != s->n_cages ||
	    n->mediator_opts.confirm_timeout_ms != s->mediator_opts.confirm_timeout_ms ||
	    memcmp(n->role_set, s->role_set, sizeof(s->role_set)) != 0 ||
	    memcmp(n->role_gid, s->role_gid, sizeof(s->role_gid)) != 0)
		return error_set(
			reterr, -EINVAL,
			"a reload changes the rules and the profiles only: its state "
			"directory, cages or groups differ (stop the session and start it)");
	for (size_t i = 0; i < s->n_cages; i++) {
		struct session_cage *c = s->cages[i], *nc = session_find_cage(n, c->name);
		_cleanup_(clip_cage_profile_unrefp) struct clip_cage_profile *p = NULL;
		int r;

		if (!nc || !clip_level_equal(nc->level, c->level) ||
		    strcmp(nc->data_dir, c->data_dir) != 0 || nc->restart != c->restart)
			return error_set(reterr, -EINVAL,
					 "a reload changes the rules and the profiles only: cage "
					 "'%s' is gone, or its level, data directory or restart "
					 "rule differ",
					 c->name);
		/* Its new profile with the wiring: the uid that owns its inbox and data stays. */
		r = session_cage_profile(n, nc, &p, reterr);
		if (r < 0)
			return r;
		if (s->mode == CLIP_CAGE_MODE_ROOT &&
		    clip_cage_profile_get_uid_base(p) != c->run_uid)
			return error_set(reterr, -EINVAL,
					 "a reload may not move cage '%s' to another uid base (%u, "
					 "not %u): its inbox and data are that uid's",
					 c->name, (unsigned)clip_cage_profile_get_uid_base(p),
					 (unsigned)c->run_uid);
	}
	return 0;
}

/* Whether two profiles say the same: 1, 0, or -errno. */
static int
profile_same(const struct clip_cage_profile *a, const struct clip_cage_profile *b)
{
	_cleanup_free_ char *ta = NULL, *tb = NULL;
	int r = clip_cage_profile_format(a, &ta);

	if (r >= 0)
		r = clip_cage_profile_format(b, &tb);
	return r < 0 ? r : strcmp(ta, tb) == 0;
}

/*
 * "reload": the session's file read again and checked whole (its profiles,
 * its wiring, its rules against the cages) before anything changes; a
 * refused one changes nothing. The new rules decide the next request; a
 * new profile is the cage's at its next start (or restart).
 */
static int
session_reload(struct clip_session *s, struct clip_error **reterr)
{
	_cleanup_(clip_session_unrefp) struct clip_session *n = NULL;
	_cleanup_(clip_policy_unrefp) struct clip_policy *policy = NULL;
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	unsigned changed = 0;
	int r;

	if (!s->file_path)
		return error_set(reterr, -EOPNOTSUPP,
				 "session '%s' was not loaded from a file: nothing to reload",
				 s->name);
	r = clip_session_load(&n, s->ctx, s->file_path, &e);
	if (r >= 0)
		r = reload_same_shape(s, n, &e);
	if (r >= 0 && n->policy)
		policy = clip_policy_ref(n->policy);
	else if (r >= 0)
		r = clip_policy_parse(&policy, "", 0, "(no policy)", &e);
	if (r >= 0 && s->mediator)
		r = clip_mediator_set_policy(s->mediator, policy, &e);
	if (r < 0)
		return error_set(reterr, r, "reload refused, nothing changed: %s",
				 e ? clip_error_get_message(e) : strerror(-r));
	/* From here nothing fails: the rules are in, the profiles follow. */
	clip_policy_unref(s->policy);
	s->policy = n->policy ? clip_policy_ref(n->policy) : NULL;
	for (size_t i = 0; s->rules && s->rules[i]; i++)
		free(s->rules[i]);
	free(s->rules);
	s->rules = steal_ptr(n->rules);
	for (size_t i = 0; i < s->n_cages; i++) {
		struct session_cage *c = s->cages[i], *nc = session_find_cage(n, c->name);
		struct clip_cage_profile *p = c->profile;
		char *path = c->profile_path;

		if (profile_same(p, nc->profile) == 1)
			continue;
		c->profile = nc->profile;
		c->profile_path = nc->profile_path;
		nc->profile = p;
		nc->profile_path = path;
		c->reloaded = true;
		changed++;
	}
	log_notice(s->ctx, "session '%s': reloaded from %s: its rules, and %u new profiles",
		   s->name, s->file_path, changed);
	return 0;
}

bool
session_roles_read(struct clip_session *s, int fd, const char *req)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	_cleanup_free_ char *pem = NULL, *text = NULL;
	int r;

	if (strcmp(req, "trail") == 0) {
		answer_trail(s, fd);
		return true;
	}
	if (strcmp(req, "audit-key") != 0)
		return false;
	r = clip_audit_get_public_key(s->ctx, &pem, &e);
	if (r < 0)
		session_answer_error(fd, r, clip_error_get_message(e));
	else if (asprintf(&text, "ok\n%s", pem) < 0)
		session_answer_error(fd, -ENOMEM, "out of memory");
	else
		session_answer_text(fd, text);
	return true;
}

int
session_roles_change(struct clip_session *s, const char *req, struct clip_error **reterr)
{
	struct session_cage *c;
	bool start;
	int r;

	if (strcmp(req, "reload") == 0) {
		r = session_reload(s, reterr);
		return r < 0 ? r : 1;
	}
	/* A cage with a new profile is made anew at its restart. */
	if (strncmp(req, "restart ", 8) == 0) {
		c = session_find_cage(s, req + 8);
		if (!c || !c->reloaded)
			return 0;
		session_cage_stop(s, c, 0);
		r = session_cage_start(s, c, reterr);
		if (r < 0)
			return r;
		c->restarts++;
		return 1;
	}
	start = strncmp(req, "start ", 6) == 0;
	if (!start && strncmp(req, "stop ", 5) != 0)
		return 0;
	c = session_find_cage(s, req + (start ? 6 : 5));
	if (!c)
		return error_set(reterr, -EINVAL, "no such cage");
	if (start) {
		r = session_cage_start(s, c, reterr);
		if (r < 0)
			return r;
	} else
		session_cage_stop(s, c, 0);
	log_notice(s->ctx, "session '%s': cage '%s' %s on request", s->name, c->name,
		   start ? "started" : "stopped");
	return 1;
}

int
session_roles_audit(struct clip_session *s, uid_t uid, unsigned roles, const char *req, int result)
{
	char who[32], request[CLIP_SESSION_NAME_MAX + 16];
	struct clip_audit_entry entry = {
		.size = sizeof(entry),
		.event = "control",
		.source = who,
		.decision = result < 0 ? "failed" : "done",
		.decided_by = roles & SESSION_PEER_ALL     ? "root"
			      : roles & SESSION_PEER_ADMIN ? "admin role"
							   : "audit role",
		.reason = request,
	};

	if (!s->audit || test_hook_disabled("session-control-audit"))
		return 0;
	snprintf(who, sizeof(who), "uid %u", (unsigned)uid);
	snprintf(request, sizeof(request), "%s", req);
	if (clip_audit_append(s->audit, &entry, NULL) < 0) {
		log_err(s->ctx, "session '%s': cannot record the request '%s' of uid %u", s->name,
			request, (unsigned)uid);
		return -EIO;
	}
	return 0;
}

/* -- the client ------------------------------------------------------- */

/* Send @request, read the answer (and a passed fd): its length, or -errno with a message. */
static int
roles_ask(struct clip_ctx *ctx, const char *session, const char *state_dir, const char *request,
	  char *untrusted_answer, size_t size, int *ret_fd, struct clip_error **reterr)
{
	_cleanup_close_ int fd = -1;
	char control[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = untrusted_answer, .iov_len = size - 1 };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = control,
			      .msg_controllen = sizeof(control) };
	struct cmsghdr *cm;
	ssize_t n;
	int passed = -1;

	fd = session_control_request(ctx, session, state_dir, request, CONTROL_CLIENT_TIMEOUT_MS,
				     reterr);
	if (fd < 0)
		return fd;
	n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return error_set_errno(reterr, -errno, "session '%s': cannot receive", session);
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)) && passed < 0)
			memcpy(&passed, CMSG_DATA(cm), sizeof(int));
	if (ret_fd)
		*ret_fd = passed;
	else if (passed >= 0)
		close(passed);
	if (n == 0 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    memchr(untrusted_answer, '\0', (size_t)n))
		return error_set(reterr, -EPROTO, "session '%s': a malformed answer", session);
	untrusted_answer[n] = '\0';
	if (strncmp(untrusted_answer, "error ", 6) == 0)
		return session_answer_error_parse(session, untrusted_answer + 6, reterr);
	if (strncmp(untrusted_answer, "ok\n", 3) != 0)
		return error_set(reterr, -EPROTO, "session '%s': a malformed answer", session);
	return (int)n;
}

CLIP_EXPORT int
clip_session_get_trail(struct clip_ctx *ctx, const char *session, const char *state_dir,
		       int *ret_fd, struct clip_error **reterr)
{
	char untrusted_answer[1024];
	struct stat st;
	int fd = -1, r;

	clip_assert_reterr(reterr);
	r = session_client_check(ctx, session, state_dir, __func__, reterr);
	if (r < 0)
		return r;
	session_assert_arg(ret_fd, reterr, "%s: ret_fd is NULL", __func__);
	r = roles_ask(ctx, session, state_dir, "trail", untrusted_answer, sizeof(untrusted_answer),
		      &fd, reterr);
	/* The answer is "ok\n" and a regular file (the sealed copy), nothing else. */
	if (r >= 0 && (r != 3 || fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)))
		r = error_set(reterr, -EPROTO, "session '%s': a malformed answer", session);
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return api_return(r, reterr);
	}
	*ret_fd = fd;
	return 0;
}

CLIP_EXPORT int
clip_session_get_audit_key(struct clip_ctx *ctx, const char *session, const char *state_dir,
			   char **ret, struct clip_error **reterr)
{
	_cleanup_free_ char *untrusted_answer = malloc(ROLE_ANSWER_MAX);
	char *pem;
	int r;

	clip_assert_reterr(reterr);
	r = session_client_check(ctx, session, state_dir, __func__, reterr);
	if (r < 0)
		return r;
	session_assert_arg(ret, reterr, "%s: ret is NULL", __func__);
	if (!untrusted_answer)
		return api_return(-ENOMEM, reterr);
	r = roles_ask(ctx, session, state_dir, "audit-key", untrusted_answer, ROLE_ANSWER_MAX, NULL,
		      reterr);
	if (r < 0)
		return api_return(r, reterr);
	/* Printable text: what clip_audit_verify_public() checks further. */
	for (const char *p = untrusted_answer + 3; *p; p++)
		if (((unsigned char)*p < ' ' && *p != '\n') || (unsigned char)*p >= 0x7f)
			return api_return(error_set(reterr, -EPROTO,
						    "session '%s': a malformed key", session),
					  reterr);
	pem = strdup(untrusted_answer + 3);
	if (!pem)
		return api_return(-ENOMEM, reterr);
	*ret = pem;
	return 0;
}
