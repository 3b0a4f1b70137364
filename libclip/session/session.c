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
#include "base/util.h"
#include "session-internal.h"

#define session_assert_arg(expr, reterr, ...) \
	clip_assert_return(expr, api_return(error_set(reterr, -EINVAL, __VA_ARGS__), reterr))

/* [a-z0-9][a-z0-9_-]*, 1 to CLIP_SESSION_NAME_MAX: a cage name of the mediator, a file name. */
static bool
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

static int
name_check(const char *what, const char *name, struct clip_error **reterr)
{
	char shown[CLIP_SESSION_NAME_MAX * 4 + 8];
	size_t n = 0;

	if (session_name_valid(name))
		return 0;
	for (; name[n] && n < CLIP_SESSION_NAME_MAX + 1; n++)
		shown[n] = (unsigned char)name[n] < ' ' || (unsigned char)name[n] >= 0x7f ? '?'
											  : name[n];
	strcpy(shown + n, name[n] ? "..." : "");
	return error_set(reterr, -EINVAL,
			 "bad %s name '%s': 1 to %d characters of a-z, 0-9, '_' and '-', "
			 "starting with a letter or a digit",
			 what, shown, CLIP_SESSION_NAME_MAX);
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
	free(s->state_dir);
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
session_state_path(const struct clip_session *s)
{
	const char *base;
	char *path;

	if (s->state_dir)
		return strdup(s->state_dir);
	base = clip_ctx_get_state_dir(s->ctx);
	if (!base || asprintf(&path, "%s/sessions/%s", base, s->name) < 0)
		return NULL;
	return path;
}

/*
 * An absolute, normalised path: what the cage profile takes for a bind
 * source, checked by its setter (the one set of rules for paths).
 */
static int
path_check(const char *what, const char *path, struct clip_error **reterr)
{
	_cleanup_(clip_cage_profile_unrefp) struct clip_cage_profile *probe = NULL;
	struct clip_error *e = NULL;
	int r;

	r = clip_cage_profile_new(&probe, "probe", reterr);
	if (r < 0)
		return r;
	r = clip_cage_profile_set_root(probe, path, &e);
	if (r == -EINVAL) {
		const char *m = clip_error_get_message(e);
		const char *fault = m ? strstr(m, "' ") : NULL;

		r = error_set(reterr, -EINVAL, "%s '%s'%s", what, path,
			      fault ? fault + 1 : " is not an absolute, normalised path");
	} else if (r < 0)
		r = error_set(reterr, r, "%s: %s", what, strerror(-r));
	clip_error_free(e);
	return r;
}

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
	r = path_check("data directory", in.data_dir, reterr);
	if (r < 0)
		return api_return(r, reterr);

	c = calloc(1, sizeof(*c));
	if (!c)
		return api_return(-ENOMEM, reterr);
	c->listen_fd = c->inbox_fd = -1;
	strcpy(c->name, in.name);
	snprintf(c->cage_name, sizeof(c->cage_name), "%s.%s", s->name, in.name);
	c->restart = in.restart;
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
