/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A session: the object, its builder, and the wiring every cage gets from
 * it (session_cage_profile()). What must agree between the cages, their
 * inboxes, sockets and data is derived here, in one place, instead of by
 * each integrator.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <clip/session.h>

#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/test-hooks.h"
#include "base/util.h"
#include "session-internal.h"

/* [a-z0-9][a-z0-9_-]*, 1 to CLIP_SESSION_NAME_MAX: a cage name of the mediator, a file name. */
bool
session_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > CLIP_SESSION_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      (i > 0 && (c == '_' || c == '-'))))
			return false;
	}
	return true;
}

/* A string of the caller's in a message: at most 128 bytes, '?' for what is not printable. */
#define SHOWN_MAX (128 + sizeof("..."))
static const char *
shown(const char *text, char buf[SHOWN_MAX])
{
	size_t n = 0;

	for (; text[n] && n < SHOWN_MAX - sizeof("..."); n++)
		buf[n] = (unsigned char)text[n] < ' ' || (unsigned char)text[n] >= 0x7f ? '?'
											: text[n];
	strcpy(buf + n, text[n] ? "..." : "");
	return buf;
}

static int
name_check(const char *what, const char *name, struct clip_error **reterr)
{
	char buf[SHOWN_MAX];

	if (session_name_valid(name))
		return 0;
	return error_set(reterr, -EINVAL,
			 "bad %s name '%s': 1 to %d characters of a-z, 0-9, '_' and '-', "
			 "starting with a letter or a digit",
			 what, shown(name, buf), CLIP_SESSION_NAME_MAX);
}

CLIP_EXPORT int
clip_session_new(struct clip_session **ret, struct clip_ctx *ctx, const char *name,
		 struct clip_error **reterr)
{
	struct clip_session *s;
	int r;

	clip_assert_reterr(reterr);
	session_assert_arg(ret, reterr, "%s: ret is NULL", __func__);
	ctx_assert_return_error(ctx, reterr);
	session_assert_arg(name, reterr, "%s: the name is NULL", __func__);
	r = name_check("session", name, reterr);
	if (r < 0)
		return api_return(r, reterr);
	s = calloc(1, sizeof(*s));
	if (!s)
		return api_return(-ENOMEM, reterr);
	s->n_ref = 1;
	s->ctx = clip_ctx_ref(ctx);
	strcpy(s->name, name);
	s->mediator_opts.size = sizeof(s->mediator_opts);
	s->state_fd = s->epoll_fd = s->control_fd = -1;
	*ret = s;
	return 0;
}

CLIP_EXPORT struct clip_session *
clip_session_ref(struct clip_session *s)
{
	if (s)
		s->n_ref++;
	return s;
}

static void
session_cage_free(struct session_cage *c)
{
	if (!c)
		return;
	clip_level_unref(c->level);
	clip_cage_profile_unref(c->profile);
	free(c->profile_path);
	free(c->data_dir);
	free(c);
}

CLIP_EXPORT struct clip_session *
clip_session_unref(struct clip_session *s)
{
	if (!s || --s->n_ref > 0)
		return NULL;
	if (s->started && s->ctx->pid == getpid())
		session_stop_all(s, SESSION_GRACE_MS);
	for (size_t i = 0; i < s->n_cages; i++)
		session_cage_free(s->cages[i]);
	for (size_t i = 0; s->rules && s->rules[i]; i++)
		free(s->rules[i]);
	free(s->rules);
	clip_policy_unref(s->policy);
	session_secret_free(s);
	free(s->state_dir);
	free(s->file_path);
	clip_ctx_unref(s->ctx);
	free(s);
	return NULL;
}

CLIP_EXPORT const char *
clip_session_get_name(const struct clip_session *s)
{
	return s ? s->name : NULL;
}

struct session_cage *
session_find_cage(const struct clip_session *s, const char *name)
{
	for (size_t i = 0; name && i < s->n_cages; i++)
		if (strcmp(s->cages[i]->name, name) == 0)
			return s->cages[i];
	return NULL;
}

char *
session_state_path_for(struct clip_ctx *ctx, const char *name, const char *state_dir)
{
	const char *base = clip_ctx_get_state_dir(ctx);
	char *path;

	if (state_dir)
		return strdup(state_dir);
	if (!base || asprintf(&path, "%s/sessions/%s", base, name) < 0)
		return NULL;
	return path;
}

char *
session_state_path(const struct clip_session *s)
{
	return session_state_path_for(s->ctx, s->name, s->state_dir);
}

/* An absolute, normalised path (path_fault(): the cage profile's rule for paths). */
static int
path_check(const char *what, const char *path, struct clip_error **reterr)
{
	const char *fault = path_fault(path);
	char buf[SHOWN_MAX];

	if (!fault)
		return 0;
	return error_set(reterr, -EINVAL, "%s '%s' %s", what, shown(path, buf), fault);
}

static int state_check(const struct clip_session *s, const char *state, struct clip_error **reterr);

CLIP_EXPORT int
clip_session_set_state_dir(struct clip_session *s, const char *path, struct clip_error **reterr)
{
	char *copy = NULL;
	int r;

	clip_assert_reterr(reterr);
	session_assert_arg(s, reterr, "%s: the session is NULL", __func__);
	ctx_assert_return_error(s->ctx, reterr);
	if (s->started)
		return api_return(error_set(reterr, -EBUSY, "session '%s' is started", s->name),
				  reterr);
	if (path) {
		r = path_check("state directory", path, reterr);
		if (r >= 0) /* against the cages there: clip_session_check() sees the rest */
			r = state_check(s, path, reterr);
		if (r < 0)
			return api_return(r, reterr);
		copy = strdup(path);
		if (!copy)
			return api_return(-ENOMEM, reterr);
	}
	free(s->state_dir);
	s->state_dir = copy;
	return 0;
}

/* -- the wiring's rules: what add_cage can see, then the whole ---------- */

/* A cage as the checks see it: the session's, or one being added. */
struct wiring_cage {
	const char *name;
	const struct clip_level *level;
	const struct clip_cage_profile *profile; /* NULL: the defaults */
	const char *data_dir;
};

static struct wiring_cage
wiring_of(const struct session_cage *c)
{
	return (struct wiring_cage){ c->name, c->level, c->profile, c->data_dir };
}

/* What the profile says itself must agree with the session: its data directory, its level. */
static int
profile_agrees(const struct wiring_cage *w, struct clip_error **reterr)
{
	const char *data = clip_cage_profile_get_data_dir(w->profile);
	const struct clip_level *level = clip_cage_profile_get_level(w->profile);
	_cleanup_free_ char *a = NULL, *b = NULL;

	if (!w->profile)
		return 0;
	if (data && strcmp(data, w->data_dir) != 0)
		return error_set(
			reterr, -EINVAL,
			"cage '%s': its profile's data directory '%s' is not the session's "
			"'%s' (leave DataDirectory= out of a session's profile)",
			w->name, data, w->data_dir);
	if (!level || clip_level_equal(level, w->level) == 1)
		return 0;
	if (clip_level_format(level, &a) < 0 || clip_level_format(w->level, &b) < 0)
		return -ENOMEM;
	if (strcmp(a, "s0") == 0) /* the default: the session sets the level */
		return 0;
	return error_set(reterr, -EINVAL,
			 "cage '%s': its profile's level %s is not the session's level %s", w->name,
			 a, b);
}

/* Two cages on one data directory, or one within the other's. */
static int
data_dirs_apart(const struct wiring_cage *a, const struct wiring_cage *b,
		struct clip_error **reterr)
{
	if (test_hook_disabled("session-wiring-check"))
		return 0;
	if (strcmp(a->data_dir, b->data_dir) == 0)
		return error_set(reterr, -EINVAL,
				 "cage '%s' and cage '%s' have the same data directory '%s'",
				 a->name, b->name, a->data_dir);
	if (path_is_beneath(b->data_dir, a->data_dir)) {
		const struct wiring_cage *t = a;

		a = b;
		b = t;
	} else if (!path_is_beneath(a->data_dir, b->data_dir))
		return 0;
	return error_set(reterr, -EINVAL,
			 "the data directory '%s' of cage '%s' is within the data directory '%s' "
			 "of cage '%s'",
			 a->data_dir, a->name, b->data_dir, b->name);
}

/* Whether @source reaches @dir: the same, beneath it, or holding it. */
static bool
path_reaches(const char *source, const char *dir)
{
	return path_is_beneath(source, dir) || path_is_beneath(dir, source);
}

/*
 * No bind of @w's profile may reach the data directory of @owner (another
 * cage, or @w itself: a second bind would make /data executable or move
 * it where the profile says).
 */
static int
binds_apart(const struct wiring_cage *w, const struct wiring_cage *owner,
	    struct clip_error **reterr)
{
	const char *source;

	if (test_hook_disabled("session-bind-check"))
		return 0;
	for (size_t i = 0;
	     w->profile && clip_cage_profile_get_bind(w->profile, i, &source, NULL, NULL) == 0; i++)
		if (path_reaches(source, owner->data_dir))
			return error_set(
				reterr, -EINVAL,
				"cage '%s': its bind source '%s' reaches the data directory "
				"'%s' of cage '%s'",
				w->name, source, owner->data_dir, owner->name);
	return 0;
}

/* The rules between @w, about to be added, and the cages already there. */
static int
wiring_check_new(const struct clip_session *s, const struct wiring_cage *w,
		 struct clip_error **reterr)
{
	int r = profile_agrees(w, reterr);

	if (r >= 0)
		r = binds_apart(w, w, reterr);
	for (size_t i = 0; r >= 0 && i < s->n_cages; i++) {
		struct wiring_cage o = wiring_of(s->cages[i]);

		r = data_dirs_apart(w, &o, reterr);
		if (r >= 0)
			r = binds_apart(w, &o, reterr);
		if (r >= 0)
			r = binds_apart(&o, w, reterr);
		if (r >= 0 && w->profile && clip_cage_profile_has_uid_base(w->profile) &&
		    clip_cage_profile_has_uid_base(o.profile) &&
		    clip_cage_profile_get_uid_base(w->profile) ==
			    clip_cage_profile_get_uid_base(o.profile))
			r = error_set(reterr, -EINVAL,
				      "cage '%s' and cage '%s' have the same uid base %u", w->name,
				      o.name, clip_cage_profile_get_uid_base(o.profile));
	}
	return r;
}

CLIP_EXPORT int
clip_session_add_cage(struct clip_session *s, const struct clip_session_cage *cage,
		      struct clip_error **reterr)
{
	struct clip_session_cage in = { 0 };
	struct session_cage *c;
	int r;

	clip_assert_reterr(reterr);
	session_assert_arg(s, reterr, "%s: the session is NULL", __func__);
	ctx_assert_return_error(s->ctx, reterr);
	session_assert_arg(cage, reterr, "%s: the cage is NULL", __func__);
	r = struct_copy_in(&in, sizeof(in), cage, offsetof(struct clip_session_cage, restart),
			   "struct clip_session_cage", reterr);
	if (r < 0)
		return api_return(r, reterr);
	session_assert_arg(in.name, reterr, "%s: the cage's name is NULL", __func__);
	session_assert_arg(in.level, reterr, "%s: cage '%s' has no level", __func__, in.name);
	session_assert_arg(in.data_dir, reterr, "%s: cage '%s' has no data directory", __func__,
			   in.name);
	if (s->started)
		return api_return(error_set(reterr, -EBUSY, "session '%s' is started", s->name),
				  reterr);
	r = name_check("cage", in.name, reterr);
	if (r < 0)
		return api_return(r, reterr);
	if (session_find_cage(s, in.name))
		return api_return(error_set(reterr, -EINVAL,
					    "session '%s' has two cages named '%s'", s->name,
					    in.name),
				  reterr);
	if (s->n_cages == CLIP_SESSION_CAGES_MAX)
		return api_return(error_set(reterr, -E2BIG,
					    "session '%s': more than %d cages (at '%s')", s->name,
					    CLIP_SESSION_CAGES_MAX, in.name),
				  reterr);
	if (in.restart < CLIP_SESSION_RESTART_NO || in.restart > CLIP_SESSION_RESTART_ALWAYS)
		return api_return(error_set(reterr, -EINVAL, "cage '%s': bad restart rule %d",
					    in.name, in.restart),
				  reterr);
	if (in.data_encryption != CLIP_SESSION_DATA_FSCRYPT &&
	    in.data_encryption != CLIP_SESSION_DATA_NONE)
		return api_return(error_set(reterr, -EINVAL, "cage '%s': bad data encryption %d",
					    in.name, in.data_encryption),
				  reterr);
	r = path_check("data directory", in.data_dir, reterr);
	if (r >= 0) {
		struct wiring_cage w = { in.name, in.level, in.profile, in.data_dir };

		r = wiring_check_new(s, &w, reterr);
	}
	if (r < 0)
		return api_return(r, reterr);

	c = calloc(1, sizeof(*c));
	if (!c)
		return api_return(-ENOMEM, reterr);
	c->listen_fd = c->inbox_fd = -1;
	strcpy(c->name, in.name);
	snprintf(c->cage_name, sizeof(c->cage_name), "%s.%s", s->name, in.name);
	c->restart = in.restart;
	c->data_encryption = in.data_encryption;
	c->level = clip_level_ref((struct clip_level *)in.level);
	c->data_dir = strdup(in.data_dir);
	if (!c->data_dir) {
		session_cage_free(c);
		return api_return(-ENOMEM, reterr);
	}
	if (in.profile)
		r = clip_cage_profile_dup(&c->profile, in.profile, c->cage_name, reterr);
	else
		r = clip_cage_profile_new(&c->profile, c->cage_name, reterr);
	if (r < 0) {
		session_cage_free(c);
		return api_return(r, reterr);
	}
	s->cages[s->n_cages++] = c;
	/* Against a state directory set before it. */
	r = s->state_dir ? state_check(s, s->state_dir, reterr) : 0;
	if (r < 0) {
		session_cage_free(s->cages[--s->n_cages]);
		return api_return(r, reterr);
	}
	return 0;
}

CLIP_EXPORT int
clip_session_set_policy(struct clip_session *s, struct clip_policy *policy,
			struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	session_assert_arg(s, reterr, "%s: the session is NULL", __func__);
	ctx_assert_return_error(s->ctx, reterr);
	session_assert_arg(policy, reterr, "%s: the policy is NULL", __func__);
	if (s->started)
		return api_return(error_set(reterr, -EBUSY, "session '%s' is started", s->name),
				  reterr);
	clip_policy_unref(s->policy);
	s->policy = clip_policy_ref(policy);
	/* Rules the formatter could write are those of a session file only. */
	for (size_t i = 0; s->rules && s->rules[i]; i++)
		free(s->rules[i]);
	free(s->rules);
	s->rules = NULL;
	return 0;
}

/*
 * The cage's profile with its wiring: its level, its data directory at
 * /data, its inbox at /inbox (read-write, so noexec, nosuid, nodev: the
 * cage's own bind rule), its socket's directory, alone, read-only at
 * /run/clip, and the uid base the session chose. The agent's socket and
 * the state directory itself are bound nowhere.
 */
int
session_cage_profile(struct clip_session *s, struct session_cage *c, struct clip_cage_profile **ret,
		     struct clip_error **reterr)
{
	_cleanup_(clip_cage_profile_unrefp) struct clip_cage_profile *p = NULL;
	_cleanup_free_ char *state = session_state_path(s), *inbox = NULL, *run = NULL;
	int r;

	if (!state || asprintf(&inbox, "%s/" SESSION_INBOX_DIR "/%s", state, c->name) < 0 ||
	    asprintf(&run, "%s/" SESSION_RUN_DIR "/%s", state, c->name) < 0)
		return -ENOMEM;
	r = clip_cage_profile_dup(&p, c->profile, NULL, reterr);
	if (r >= 0)
		r = clip_cage_profile_set_level(p, c->level, reterr);
	if (r >= 0)
		r = clip_cage_profile_set_data_dir(p, c->data_dir, reterr);
	if (r >= 0)
		r = clip_cage_profile_add_bind(p, inbox, SESSION_CAGE_INBOX, CLIP_CAGE_BIND_RW,
					       reterr);
	if (r >= 0)
		r = clip_cage_profile_add_bind(p, run, SESSION_CAGE_RUN, 0, reterr);
	if (r >= 0 && c->uid_base)
		r = clip_cage_profile_set_uid_base(p, c->uid_base, reterr);
	if (r < 0)
		return r;
	*ret = steal_ptr(p);
	return 0;
}

/*
 * What a bind source reaching the state directory reaches: a cage's inbox
 * or socket directory, or the state directory (the agent's socket, the
 * control socket, or all of it).
 */
static char *
state_part(const struct clip_session *s, const char *state, const char *source)
{
	char *what = NULL;

	for (size_t i = 0; i < s->n_cages; i++) {
		_cleanup_free_ char *inbox = NULL, *run = NULL;

		if (asprintf(&inbox, "%s/" SESSION_INBOX_DIR "/%s", state, s->cages[i]->name) < 0 ||
		    asprintf(&run, "%s/" SESSION_RUN_DIR "/%s", state, s->cages[i]->name) < 0)
			return NULL;
		if (path_is_beneath(source, inbox) &&
		    asprintf(&what, "the inbox '%s' of cage '%s'", inbox, s->cages[i]->name) >= 0)
			return what;
		if (path_is_beneath(source, run) &&
		    asprintf(&what, "the socket directory '%s' of cage '%s'", run,
			     s->cages[i]->name) >= 0)
			return what;
	}
	if (asprintf(&what,
		     "the state directory '%s' of session '%s' (inboxes, sockets, the agent's "
		     "socket)",
		     state, s->name) < 0)
		return NULL;
	return what;
}

/* The state directory against the cages' data directories and binds. */
static int
state_check(const struct clip_session *s, const char *state, struct clip_error **reterr)
{
	for (size_t i = 0; i < s->n_cages; i++) {
		const struct session_cage *c = s->cages[i];
		/* Whose inbox is shown: another cage's, when there is one. */
		const struct session_cage *o = s->cages[i == 0 && s->n_cages > 1 ? 1 : 0];
		bool wiring = !test_hook_disabled("session-wiring-check");
		const char *source;

		if (wiring && path_is_beneath(state, c->data_dir))
			return error_set(reterr, -EINVAL,
					 "the inbox '%s/" SESSION_INBOX_DIR "/%s' of cage '%s' is "
					 "within the data directory '%s' of cage '%s' (state "
					 "directory '%s')",
					 state, o->name, o->name, c->data_dir, c->name, state);
		if (wiring && path_is_beneath(c->data_dir, state))
			return error_set(reterr, -EINVAL,
					 "the data directory '%s' of cage '%s' is within the state "
					 "directory '%s' of session '%s'",
					 c->data_dir, c->name, state, s->name);
		for (size_t k = 0;
		     !test_hook_disabled("session-bind-check") &&
		     clip_cage_profile_get_bind(c->profile, k, &source, NULL, NULL) == 0;
		     k++) {
			_cleanup_free_ char *what = NULL;

			if (!path_reaches(source, state))
				continue;
			what = state_part(s, state, source);
			if (!what)
				return -ENOMEM;
			return error_set(reterr, -EINVAL,
					 "cage '%s': its bind source '%s' reaches %s", c->name,
					 source, what);
		}
	}
	return 0;
}

static int
cmp_cage_name(const void *a, const void *b)
{
	return strcmp((*(struct session_cage *const *)a)->name,
		      (*(struct session_cage *const *)b)->name);
}

/*
 * Each cage's uid base, in c->uid_base: an explicit one (UidBase=) as it
 * is, two that collide refused; a derived one (from SESSION.CAGE) moved to
 * the next free slot when taken, in the order of the names, so that the
 * result depends on the description only.
 */
static int
uid_bases_assign(struct clip_session *s, struct clip_error **reterr)
{
	struct session_cage *sorted[CLIP_SESSION_CAGES_MAX];
	bool derived[CLIP_SESSION_CAGES_MAX];

	memcpy(sorted, s->cages, s->n_cages * sizeof(sorted[0]));
	qsort(sorted, s->n_cages, sizeof(sorted[0]), cmp_cage_name);
	for (size_t i = 0; i < s->n_cages; i++) {
		derived[i] = !clip_cage_profile_has_uid_base(sorted[i]->profile);
		sorted[i]->uid_base =
			derived[i] ? 0 : clip_cage_profile_get_uid_base(sorted[i]->profile);
		for (size_t j = 0; j < i; j++)
			if (!derived[i] && !derived[j] &&
			    sorted[j]->uid_base == sorted[i]->uid_base)
				return error_set(
					reterr, -EINVAL,
					"cage '%s' and cage '%s' have the same uid base %u",
					sorted[j]->name, sorted[i]->name, sorted[i]->uid_base);
	}
	for (size_t i = 0; i < s->n_cages; i++) {
		uint32_t base = clip_cage_profile_get_uid_base(sorted[i]->profile);
		bool taken = true;

		if (!derived[i])
			continue;
		/* At most n_cages slots are taken: this ends. */
		while (taken) {
			taken = false;
			for (size_t j = 0; j < s->n_cages; j++)
				if (sorted[j]->uid_base == base)
					taken = true;
			if (taken)
				base = base >= SESSION_UID_BASE_LAST ? SESSION_UID_RANGE
								     : base + SESSION_UID_RANGE;
		}
		sorted[i]->uid_base = base;
	}
	return 0;
}

static int
session_check(struct clip_session *s, struct clip_error **reterr)
{
	const char *names[CLIP_SESSION_CAGES_MAX];
	const struct clip_level *levels[CLIP_SESSION_CAGES_MAX];
	_cleanup_free_ char *state = session_state_path(s);
	int r = 0;

	if (!state)
		return -ENOMEM;
	for (size_t i = 0; r >= 0 && i < s->n_cages; i++) {
		struct wiring_cage a = wiring_of(s->cages[i]);

		r = profile_agrees(&a, reterr);
		if (r >= 0)
			r = binds_apart(&a, &a, reterr);
		for (size_t j = i + 1; r >= 0 && j < s->n_cages; j++) {
			struct wiring_cage b = wiring_of(s->cages[j]);

			r = data_dirs_apart(&a, &b, reterr);
			if (r >= 0)
				r = binds_apart(&a, &b, reterr);
			if (r >= 0)
				r = binds_apart(&b, &a, reterr);
		}
		names[i] = s->cages[i]->name;
		levels[i] = s->cages[i]->level;
	}
	if (r >= 0)
		r = state_check(s, state, reterr);
	if (r >= 0)
		r = uid_bases_assign(s, reterr);
	if (r >= 0 && s->policy)
		r = clip_policy_check_cages(s->policy, names, levels, s->n_cages, reterr);
	return r;
}

CLIP_EXPORT int
clip_session_check(struct clip_session *s, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	session_assert_arg(s, reterr, "%s: the session is NULL", __func__);
	ctx_assert_return_error(s->ctx, reterr);

	return api_return(session_check(s, reterr), reterr);
}
