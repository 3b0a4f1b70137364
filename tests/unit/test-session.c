/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sessions, without starting one: every refused wiring with its message
 * (both sides named), the uid bases, the file form's refusals (message and
 * offset), its round trips and its relative paths, and the example of
 * examples/sessions/.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <clip/clip.h>
#include <clip/session.h>

#include "helpers.h"
#include "session/session-internal.h"

static struct clip_session *
session_new(const char *name)
{
	struct clip_ctx *ctx = test_ctx("/nonexistent/clip-state");
	struct clip_session *s = NULL;

	cr_assert_eq(clip_session_new(&s, ctx, name, NULL), 0);
	clip_ctx_unref(ctx);
	return s;
}

static struct clip_cage_profile *
profile_new(const char *name)
{
	struct clip_cage_profile *p = NULL;

	cr_assert_eq(clip_cage_profile_new(&p, name, NULL), 0);
	return p;
}

/* Add a cage: 0 or the error, whose message is in *@ret_message (free()) when asked. */
static int
cage_add(struct clip_session *s, const char *name, const char *level,
	 const struct clip_cage_profile *profile, const char *data, char **ret_message)
{
	struct clip_level *l = test_level(level);
	struct clip_session_cage c = {
		.size = sizeof(c),
		.name = name,
		.level = l,
		.profile = profile,
		.data_dir = data,
	};
	struct clip_error *e = NULL;
	int r = clip_session_add_cage(s, &c, &e);

	if (ret_message)
		*ret_message = e ? strdup(clip_error_get_message(e)) : NULL;
	clip_error_free(e);
	clip_level_unref(l);
	return r;
}

static void
cage_ok(struct clip_session *s, const char *name, const char *level,
	const struct clip_cage_profile *profile, const char *data)
{
	char *m = NULL;

	cr_assert_eq(cage_add(s, name, level, profile, data, &m), 0, "cage %s: %s", name,
		     m ? m : "");
}

/* @message has every one of the NULL-terminated strings. */
static void
message_has(const char *message, ...)
{
	va_list ap;
	const char *want;

	cr_assert_not_null(message);
	va_start(ap, message);
	while ((want = va_arg(ap, const char *)))
		cr_assert(strstr(message, want), "'%s' lacks '%s'", message, want);
	va_end(ap);
}

static void
cage_refused(struct clip_session *s, const char *name, const char *level,
	     const struct clip_cage_profile *profile, const char *data, const char *a,
	     const char *b, const char *what)
{
	char *m = NULL;

	assert_errno(cage_add(s, name, level, profile, data, &m), -EINVAL);
	message_has(m, a, b, what, NULL);
	cr_assert_null(session_find_cage(s, name), "cage %s added anyway", name);
	free(m);
}

static void
check_refused(struct clip_session *s, const char *a, const char *b, const char *what)
{
	struct clip_error *e = NULL;

	assert_errno(clip_session_check(s, &e), -EINVAL);
	message_has(clip_error_get_message(e), a, b, what, NULL);
	clip_error_free(e);
}

static void
check_ok(struct clip_session *s)
{
	struct clip_error *e = NULL;

	cr_assert_eq(clip_session_check(s, &e), 0, "%s", e ? clip_error_get_message(e) : "");
}

Test(session, two_cages_on_one_data_directory_refused)
{
	struct clip_session *s = session_new("t");

	cage_ok(s, "low", "s0", NULL, "/srv/data/low");
	cage_refused(s, "high", "s2", NULL, "/srv/data/low", "'low'", "'high'",
		     "the same data directory '/srv/data/low'");
	cage_refused(s, "high", "s2", NULL, "/srv/data/low/high", "cage 'low'", "cage 'high'",
		     "'/srv/data/low/high' of cage 'high' is within the data directory "
		     "'/srv/data/low'");
	cage_refused(s, "high", "s2", NULL, "/srv/data", "cage 'low'", "cage 'high'",
		     "'/srv/data/low' of cage 'low' is within the data directory '/srv/data'");
	/* A name that only starts like the other is no nesting. */
	cage_ok(s, "high", "s2", NULL, "/srv/data/low2");
	check_ok(s);
	clip_session_unref(s);
}

static void
state_dir_refused(struct clip_session *s, const char *path, const char *a, const char *b,
		  const char *what)
{
	struct clip_error *e = NULL;

	assert_errno(clip_session_set_state_dir(s, path, &e), -EINVAL);
	message_has(clip_error_get_message(e), a, b, what, NULL);
	clip_error_free(e);
}

Test(session, state_directory_within_a_data_directory_refused)
{
	struct clip_session *s = session_new("t");
	char *m = NULL;

	cage_ok(s, "low", "s0", NULL, "/srv/low");
	cage_ok(s, "high", "s2", NULL, "/srv/high");
	/* The inbox of high would be in low's data: low could write into it. */
	state_dir_refused(s, "/srv/low/state",
			  "the inbox '/srv/low/state/inbox/high' of cage 'high'",
			  "data directory '/srv/low' of cage 'low'", "is within");
	state_dir_refused(s, "/srv/low", "inbox '/srv/low/inbox/high'", "cage 'low'", "within");
	/* Holding one: the data directory would hold the inboxes' neighbours. */
	state_dir_refused(s, "/srv", "the data directory '/srv/low' of cage 'low'",
			  "the state directory '/srv' of session 't'", "is within");
	cr_assert_eq(clip_session_set_state_dir(s, "/run/clip-sessions/t", NULL), 0);
	check_ok(s);

	/* A cage added after the state directory: refused at its turn. */
	assert_errno(cage_add(s, "side", "s1", NULL, "/run/clip-sessions", &m), -EINVAL);
	message_has(m, "the inbox '/run/clip-sessions/t/inbox/low' of cage 'low'",
		    "the data directory '/run/clip-sessions' of cage 'side'", NULL);
	cr_assert_null(session_find_cage(s, "side"));
	free(m);
	assert_errno(cage_add(s, "side", "s1", NULL, "/run/clip-sessions/t/x/y", &m), -EINVAL);
	message_has(m, "the data directory '/run/clip-sessions/t/x/y' of cage 'side'",
		    "the state directory '/run/clip-sessions/t' of session 't'", NULL);
	free(m);
	check_ok(s);
	clip_session_unref(s);
}

Test(session, the_default_state_directory_is_checked_too)
{
	struct clip_session *s = session_new("t");

	/* test_ctx()'s state directory: sessions/t beneath it. */
	cage_ok(s, "low", "s0", NULL, "/nonexistent/clip-state/sessions/t/low");
	check_refused(s,
		      "the data directory '/nonexistent/clip-state/sessions/t/low' of cage 'low'",
		      "the state directory '/nonexistent/clip-state/sessions/t' of session 't'",
		      "is within");
	clip_session_unref(s);
}

Test(session, bind_reaching_another_cages_data_refused)
{
	struct clip_session *s = session_new("t");
	struct clip_cage_profile *beneath = profile_new("x"), *above = profile_new("y"),
				 *own = profile_new("z"), *fine = profile_new("f");

	cr_assert_eq(clip_cage_profile_add_bind(beneath, "/srv/low/docs", "/docs", 0, NULL), 0);
	cr_assert_eq(clip_cage_profile_add_bind(above, "/srv", "/mnt", 0, NULL), 0);
	cr_assert_eq(clip_cage_profile_add_bind(own, "/srv/high", "/opt/high", 0, NULL), 0);
	cr_assert_eq(clip_cage_profile_add_bind(fine, "/usr/share/doc", NULL, 0, NULL), 0);
	cage_ok(s, "low", "s0", NULL, "/srv/low");
	cage_refused(s, "high", "s2", beneath, "/srv/high", "cage 'high'",
		     "data directory '/srv/low' of cage 'low'", "bind source '/srv/low/docs'");
	cage_refused(s, "high", "s2", above, "/var/high", "cage 'high'", "cage 'low'",
		     "bind source '/srv' reaches");
	/* Its own: a second bind would make /data executable somewhere else. */
	cage_refused(s, "high", "s2", own, "/srv/high", "cage 'high'",
		     "data directory '/srv/high' of cage 'high'", "bind source '/srv/high'");
	/* The other way: a cage added after the one whose bind reaches its data. */
	cage_ok(s, "high", "s2", fine, "/srv/high");
	cage_refused(s, "side", "s1", NULL, "/usr/share/doc/side", "cage 'high'", "cage 'side'",
		     "bind source '/usr/share/doc' reaches the data directory");
	check_ok(s);
	clip_session_unref(s);
	clip_cage_profile_unref(beneath);
	clip_cage_profile_unref(above);
	clip_cage_profile_unref(own);
	clip_cage_profile_unref(fine);
}

Test(session, bind_reaching_the_state_directory_refused)
{
	static const struct {
		const char *source, *what;
	} cases[] = {
		{ "/run/s/inbox/low", "the inbox '/run/s/inbox/low' of cage 'low'" },
		{ "/run/s/inbox/high/x", "the inbox '/run/s/inbox/high' of cage 'high'" },
		{ "/run/s/run/low", "the socket directory '/run/s/run/low' of cage 'low'" },
		{ "/run/s/confirm.sock", "the state directory '/run/s' of session 't'" },
		{ "/run", "the state directory '/run/s' of session 't' (inboxes, sockets, the "
			  "agent's socket)" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct clip_session *s = session_new("t");
		struct clip_cage_profile *p = profile_new("p");

		cr_assert_eq(clip_cage_profile_add_bind(p, cases[i].source, "/mnt", 0, NULL), 0);
		/* The state directory first: the cage is refused. */
		cr_assert_eq(clip_session_set_state_dir(s, "/run/s", NULL), 0);
		cage_ok(s, "low", "s0", NULL, "/srv/low");
		cage_refused(s, "high", "s2", p, "/srv/high", "cage 'high'", cases[i].source,
			     cases[i].what);
		clip_session_unref(s);
		/* The cages first: the state directory is refused. */
		s = session_new("t");
		cage_ok(s, "low", "s0", NULL, "/srv/low");
		cage_ok(s, "high", "s2", p, "/srv/high");
		state_dir_refused(s, "/run/s", "cage 'high'", cases[i].source, cases[i].what);
		clip_session_unref(s);
		clip_cage_profile_unref(p);
	}
}

Test(session, profile_data_directory_and_level_must_agree)
{
	struct clip_session *s = session_new("t");
	struct clip_cage_profile *data = profile_new("d"), *level = profile_new("l"),
				 *same = profile_new("s");
	struct clip_level *s1 = test_level("s1"), *s2 = test_level("s2");

	cr_assert_eq(clip_cage_profile_set_data_dir(data, "/srv/elsewhere", NULL), 0);
	cage_refused(s, "low", "s0", data, "/srv/low", "cage 'low'",
		     "its profile's data directory '/srv/elsewhere'", "the session's '/srv/low'");
	cr_assert_eq(clip_cage_profile_set_data_dir(data, "/srv/low", NULL), 0);
	cage_ok(s, "low", "s0", data, "/srv/low");

	cr_assert_eq(clip_cage_profile_set_level(level, s1, NULL), 0);
	cage_refused(s, "high", "s2", level, "/srv/high", "cage 'high'", "its profile's level s1",
		     "the session's level s2");
	cr_assert_eq(clip_cage_profile_set_level(same, s2, NULL), 0);
	cage_ok(s, "high", "s2", same, "/srv/high");
	/* The default, s0, is no level of the profile's own: the session's holds. */
	cage_ok(s, "side", "s1:c5", NULL, "/srv/side");
	check_ok(s);
	clip_session_unref(s);
	clip_cage_profile_unref(data);
	clip_cage_profile_unref(level);
	clip_cage_profile_unref(same);
	clip_level_unref(s1);
	clip_level_unref(s2);
}

Test(session, uid_bases_explicit_collide_refused_derived_moved)
{
	struct clip_session *s = session_new("t");
	struct clip_cage_profile *a = profile_new("a"), *b = profile_new("b"),
				 *probe = profile_new("t.low");
	uint32_t derived = clip_cage_profile_get_uid_base(probe);

	cr_assert_eq(clip_cage_profile_set_uid_base(a, 0x7b10u * 65536, NULL), 0);
	cr_assert_eq(clip_cage_profile_set_uid_base(b, 0x7b10u * 65536, NULL), 0);
	cage_ok(s, "high", "s2", a, "/srv/high");
	cage_refused(s, "side", "s1", b, "/srv/side", "cage 'side'", "cage 'high'",
		     "the same uid base 2064646144");

	/* A derived base taken by an explicit one moves to the next free slot. */
	cr_assert_eq(clip_cage_profile_set_uid_base(b, derived, NULL), 0);
	cage_ok(s, "side", "s1", b, "/srv/side");
	cage_ok(s, "low", "s0", NULL, "/srv/low");
	check_ok(s);
	cr_assert_eq(session_find_cage(s, "side")->uid_base, derived);
	cr_assert_eq(session_find_cage(s, "high")->uid_base, 0x7b10u * 65536);
	cr_assert_eq(session_find_cage(s, "low")->uid_base, derived + 65536,
		     "low's base %u, derived %u", session_find_cage(s, "low")->uid_base, derived);
	clip_session_unref(s);
	clip_cage_profile_unref(a);
	clip_cage_profile_unref(b);
	clip_cage_profile_unref(probe);
}

Test(session, policy_naming_no_cage_or_level_refused)
{
	static const struct {
		const char *policy, *a, *b;
	} cases[] = {
		{ "low high ask\nlow mid ask\n", "test.policy:2:", "names cage 'mid'" },
		{ "s5 high ask\n", "test.policy:1:", "names level s5" },
		{ "low s1:c5 ask\n", "test.policy:1:", "names level s1:c5" },
		{ "high low allow\n", "test.policy:1:", "cage 'high' sending to cage 'low'" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct clip_session *s = session_new("t");
		struct clip_policy *p = test_policy(cases[i].policy);

		cage_ok(s, "low", "s0", NULL, "/srv/low");
		cage_ok(s, "high", "s2", NULL, "/srv/high");
		cr_assert_eq(clip_session_set_policy(s, p, NULL), 0);
		check_refused(s, cases[i].a, cases[i].b, "");
		clip_session_unref(s);
		clip_policy_unref(p);
	}
}

Test(session, policy_check_cages_is_direct)
{
	struct clip_policy *p = test_policy("low high ask\ns2 s0 ask encrypt\n@any @any deny\n");
	struct clip_level *l0 = test_level("s0"), *l2 = test_level("s2");
	const char *names[] = { "low", "high" };
	const struct clip_level *levels[] = { l0, l2 };
	struct clip_error *e = NULL;

	cr_assert_eq(clip_policy_check_cages(p, names, levels, 2, NULL), 0);
	assert_errno(clip_policy_check_cages(p, names, levels, 1, &e), -EINVAL);
	message_has(clip_error_get_message(e), "test.policy:1:", "cage 'high'", NULL);
	clip_error_free(e);
	clip_policy_unref(p);
	clip_level_unref(l0);
	clip_level_unref(l2);
}

/* -- the file form ---------------------------------------------------- */

static int
parse(const char *text, int dirfd, struct clip_session **ret, char **ret_message, int *ret_offset)
{
	struct clip_ctx *ctx = test_ctx("/nonexistent/clip-state");
	struct clip_session *s = NULL;
	struct clip_error *e = NULL;
	int r;

	r = clip_session_parse(&s, ctx, dirfd, "t.session", text, strlen(text), &e);
	clip_ctx_unref(ctx);
	if (ret_message)
		*ret_message = e ? strdup(clip_error_get_message(e)) : NULL;
	if (ret_offset)
		*ret_offset = clip_error_get_offset(e);
	clip_error_free(e);
	if (ret)
		*ret = s;
	else
		clip_session_unref(s);
	return r;
}

#define HEAD "[Session]\nName=t\n"
#define LOW "[Cage]\nName=low\nLevel=s0\nDataDirectory=/srv/low\n"
#define HIGH "[Cage]\nName=high\nLevel=s2\nDataDirectory=/srv/high\n"

Test(session, parser_refusals_with_line_and_offset)
{
	static const struct {
		const char *text;
		int error;
		const char *where, *why;
		const char *at; /* the text at the offset, or NULL for the end */
	} cases[] = {
		{ HEAD "[Bogus]\n", -EINVAL, "t.session:3:", "unknown section [Bogus]", "[Bogus]" },
		{ HEAD "[Session]\n", -EINVAL, "t.session:3:", "[Session] given twice",
		  "[Session]\n" },
		{ "[Session]\nName=t\nName=u\n", -EINVAL,
		  "t.session:3: [Session] Name:", "given twice", "Name=u" },
		{ HEAD "Color=red\n", -EINVAL, "t.session:3:", "[Session] has no key 'Color'",
		  "Color" },
		{ "Name=t\n", -EINVAL, "t.session:1:", "a key before any section", "Name=t" },
		{ HEAD "what\n", -EINVAL, "t.session:3:", "expected '[Section]'", "what" },
		{ "[Session]\nName=Bad!\n" LOW, -EINVAL,
		  "t.session:2: [Session] Name:", "'Bad!' is not a name", "Bad!" },
		{ HEAD "StateDirectory=run/x\n" LOW, -EINVAL,
		  "t.session:3: [Session] StateDirectory:", "is not absolute", "run/x" },
		{ HEAD LOW "Restart=sometimes\n", -EINVAL, "t.session:7: [Cage] Restart:",
		  "'sometimes' is not no, on-failure or always", "sometimes" },
		{ HEAD LOW "DataEncryption=aes\n", -EINVAL,
		  "t.session:7: [Cage] DataEncryption:", "'aes' is not fscrypt or none", "aes" },
		{ HEAD LOW "DataEncryption=none\nDataEncryption=fscrypt\n", -EINVAL,
		  "t.session:8: [Cage] DataEncryption:", "given twice", "DataEncryption=fscrypt" },
		{ HEAD "[Cage]\nName=low\nLevel=s0:c2000\nDataDirectory=/srv/low\n", -EINVAL,
		  "t.session:5: [Cage] Level:", "category above 1023", "2000" },
		{ HEAD "[Cage]\nName=low\nLevel=s0\n", -EINVAL,
		  "t.session:3:", "[Cage] has no DataDirectory=", "[Cage]\nName=low" },
		{ HEAD "[Cage]\nLevel=s0\nDataDirectory=/srv/low\n", -EINVAL,
		  "t.session:3:", "[Cage] has no Name=", "[Cage]\nLevel" },
		{ HEAD LOW "DataDirectory=/srv/x\n", -EINVAL,
		  "t.session:7: [Cage] DataDirectory:", "given twice", "DataDirectory=/srv/x" },
		{ HEAD LOW "[Cage]\nName=low\nLevel=s2\nDataDirectory=/srv/x\n", -EINVAL,
		  "t.session:7:", "'low' is also the cage of line 3",
		  "[Cage]\nName=low\nLevel=s2" },
		{ HEAD LOW HIGH "[Transfer]\nRule=low high permit\n", -EINVAL,
		  "t.session:12: [Transfer] Rule:", "unknown action 'permit'", "permit" },
		{ HEAD LOW HIGH "[Transfer]\nRule=low high ask\nRule=low side ask\n", -EINVAL,
		  "t.session:13:", "names cage 'side'", NULL },
		{ HEAD LOW HIGH "[Transfer]\nRule=#low high ask\n", -EINVAL,
		  "t.session:12: [Transfer] Rule:", "not a comment", "#low" },
		{ HEAD LOW HIGH "[Transfer]\nConfirmTimeoutSec=0\n", -EINVAL,
		  "t.session:12: [Transfer] ConfirmTimeoutSec:", "from 1 to 3600", "0\n" },
		{ HEAD LOW "[Cage]\nName=high\nLevel=s2\nDataDirectory=/srv/low/high\n", -EINVAL,
		  "t.session:7: [Cage]", "cage 'high'", "[Cage]\nName=high" },
		{ HEAD "[Cage]\nName=low\nLevel=s0\nDataDirectory=/srv/../etc\n", -EINVAL,
		  "t.session:6: [Cage] DataDirectory:", "'..' component", "/srv/../etc" },
		{ HEAD "Name=\x01\n", -EINVAL, "t.session:3:", "control character 0x01", "\x01" },
		{ HEAD "# caf\xc3\xa9\n", -EINVAL, "t.session:3:", "byte 0xc3", "\xc3" },
		{ HEAD, -EINVAL, "t.session:", "no [Cage]", NULL },
		{ LOW, -EINVAL, "t.session:", "no [Session] with Name=", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct clip_session *s = NULL;
		char *m = NULL;
		int offset = -2;

		assert_errno(parse(cases[i].text, AT_FDCWD, &s, &m, &offset), cases[i].error);
		cr_assert_null(s);
		message_has(m, cases[i].where, cases[i].why, NULL);
		if (cases[i].at) {
			cr_assert_geq(offset, 0, "case %zu (%s): no offset", i, m);
			cr_assert(strncmp(cases[i].text + offset, cases[i].at,
					  strlen(cases[i].at)) == 0,
				  "case %zu (%s): offset %d at '%.12s', not '%s'", i, m, offset,
				  cases[i].text + offset, cases[i].at);
		}
		free(m);
	}
}

Test(session, parser_bounds)
{
	char *big = malloc(CLIP_SESSION_SIZE_MAX + 2), *m = NULL, *many, line[5000];
	size_t n = 0;
	int offset;

	memset(big, '#', CLIP_SESSION_SIZE_MAX + 1);
	big[CLIP_SESSION_SIZE_MAX + 1] = '\0';
	assert_errno(parse(big, AT_FDCWD, NULL, &m, NULL), -E2BIG);
	message_has(m, "t.session: longer than 65536 bytes", NULL);
	free(m);
	free(big);

	memset(line, 'x', sizeof(line) - 1);
	memcpy(line, "# ", 2);
	line[sizeof(line) - 1] = '\0';
	assert_errno(parse(line, AT_FDCWD, NULL, &m, &offset), -EINVAL);
	message_has(m, "t.session:1: line longer than 4096 bytes", NULL);
	cr_assert_eq(offset, 4096);
	free(m);

	many = malloc(64 * 1024);
	n = (size_t)sprintf(many, HEAD);
	for (int i = 0; i <= CLIP_SESSION_CAGES_MAX; i++)
		n += (size_t)sprintf(many + n,
				     "[Cage]\nName=c%d\nLevel=s0\nDataDirectory=/srv/c%d\n", i, i);
	assert_errno(parse(many, AT_FDCWD, NULL, &m, NULL), -E2BIG);
	message_has(m, "more than 32 [Cage]", NULL);
	free(m);
	free(many);
}

static char *
format(const struct clip_session *s)
{
	char *text = NULL;

	cr_assert_eq(clip_session_format(s, &text), 0);
	return text;
}

Test(session, format_is_canonical_and_parses_back)
{
	const char *text = "# the order of the file does not show\n"
			   "[Transfer]\n"
			   "Rule = high low ask encrypt\n"
			   "Rule=low high ask\n"
			   "ConfirmTimeoutSec=30\n"
			   "[Cage]\n"
			   "DataEncryption=none\n"
			   "Restart=always\n"
			   "DataDirectory=/srv/low\n"
			   "Level=s0\n"
			   "Name=low\n" HIGH "DataEncryption=fscrypt\n"
			   "[Session]\n"
			   "StateDirectory=/run/s\n"
			   "Name=t\n";
	const char *want = "[Session]\n"
			   "Name=t\n"
			   "StateDirectory=/run/s\n"
			   "\n[Cage]\nName=high\nLevel=s2\nDataDirectory=/srv/high\n"
			   "\n[Cage]\nName=low\nLevel=s0\nDataDirectory=/srv/low\nRestart=always\n"
			   "DataEncryption=none\n"
			   "\n[Transfer]\nConfirmTimeoutSec=30\n"
			   "Rule=high low ask encrypt\nRule=low high ask\n";
	struct clip_session *s = NULL, *again = NULL;
	char *a, *b, *m = NULL;

	cr_assert_eq(parse(text, AT_FDCWD, &s, &m, NULL), 0, "%s", m ? m : "");
	a = format(s);
	cr_assert_str_eq(a, want);
	cr_assert_eq(s->mediator_opts.confirm_timeout_ms, 30000);
	cr_assert_eq(session_find_cage(s, "low")->restart, CLIP_SESSION_RESTART_ALWAYS);
	/* Plain said explicitly; encrypted, the default, written by leaving the key out. */
	cr_assert_eq(session_find_cage(s, "low")->data_encryption, CLIP_SESSION_DATA_NONE);
	cr_assert_eq(session_find_cage(s, "high")->data_encryption, CLIP_SESSION_DATA_FSCRYPT);
	cr_assert_eq(parse(a, AT_FDCWD, &again, &m, NULL), 0, "%s", m ? m : "");
	b = format(again);
	cr_assert_str_eq(a, b);
	free(a);
	free(b);
	clip_session_unref(s);
	clip_session_unref(again);
}

Test(session, role_groups_are_gids_names_resolved_at_parse)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ HEAD "AdminGroup=0\n" LOW, "'0' is not a gid" },
		{ HEAD "AdminGroup=root\n" LOW, "root's group" },
		{ HEAD "AuditGroup=no-such-group-here\n" LOW, "is not a group of this system" },
		{ HEAD "AdminGroup=4294967295\n" LOW, "is not a gid" },
		{ HEAD "AdminGroup=4242\nAuditGroup=4242\n" LOW, "two roles, two groups" },
		{ HEAD "AdminGroup=4242\nAdminGroup=4243\n" LOW, "given twice" },
	};
	struct clip_session *s = NULL;
	struct group *g;
	char text[512], want[64], *a, *m = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_errno(parse(bad[i].text, AT_FDCWD, &s, &m, NULL), -EINVAL);
		cr_assert_null(s);
		message_has(m, "t.session", bad[i].why, NULL);
		free(m);
		m = NULL;
	}
	/* Numeric, and written back so. */
	cr_assert_eq(parse(HEAD "AuditGroup=4343\nAdminGroup=4242\n" LOW, AT_FDCWD, &s, &m, NULL),
		     0, "%s", m ? m : "");
	a = format(s);
	cr_assert(strstr(a, "[Session]\nName=t\nAdminGroup=4242\nAuditGroup=4343\n"), "%s", a);
	free(a);
	clip_session_unref(s);
	/* A name: resolved once, at parse; the session keeps the gid. */
	setgrent();
	while ((g = getgrent()) && g->gr_gid == 0)
		;
	cr_assert_not_null(g, "no group but root's on this system");
	snprintf(text, sizeof(text), HEAD "AdminGroup=%s\n" LOW, g->gr_name);
	snprintf(want, sizeof(want), "AdminGroup=%u\n", (unsigned)g->gr_gid);
	endgrent();
	cr_assert_eq(parse(text, AT_FDCWD, &s, &m, NULL), 0, "%s", m ? m : "");
	a = format(s);
	cr_assert(strstr(a, want), "%s", a);
	free(a);
	/* The API's checks. */
	assert_errno(clip_session_set_role_group(s, 2, 4242, NULL), -EINVAL);
	assert_errno(clip_session_set_role_group(s, CLIP_SESSION_ROLE_AUDIT, 0, NULL), -EINVAL);
	assert_errno(clip_session_set_role_group(s, CLIP_SESSION_ROLE_AUDIT, g->gr_gid, NULL),
		     -EINVAL);
	cr_assert_eq(clip_session_set_role_group(s, CLIP_SESSION_ROLE_AUDIT, 4343, NULL), 0);
	clip_session_unref(s);
}

Test(session, require_lsm_is_kept_and_a_start_without_the_lsm_refused)
{
	struct clip_session *s = NULL, *plain = NULL;
	struct clip_error *e = NULL;
	char *text, *m = NULL;

	/*
	 * A state directory that cannot be made: should the check be gone (a
	 * test-hooks build), the start fails there, having made nothing.
	 */
	cr_assert_eq(parse(HEAD "StateDirectory=/dev/null/state\nRequireLSM=yes\n" LOW, AT_FDCWD,
			   &s, &m, NULL),
		     0, "%s", m ? m : "");
	cr_assert(s->require_lsm);
	text = format(s);
	cr_assert(strstr(text, "Name=t\nStateDirectory=/dev/null/state\nRequireLSM=yes\n"), "%s",
		  text);
	free(text);
	cr_assert_eq(parse(HEAD "RequireLSM=no\n" LOW, AT_FDCWD, &plain, &m, NULL), 0);
	cr_assert(!plain->require_lsm);
	text = format(plain);
	cr_assert_null(strstr(text, "RequireLSM"), "%s", text);
	free(text);
	clip_session_unref(plain);
	cr_assert_eq(parse(HEAD "RequireLSM=maybe\n" LOW, AT_FDCWD, NULL, &m, NULL), -EINVAL);
	cr_assert(strstr(m, "'maybe' is not yes or no"), "%s", m);
	free(m);
	/* Not loaded (nothing pinned on this host): refused before anything is made. */
	if (clip_lsm_status(s->ctx) == 1)
		cr_skip_test("the BPF LSM is loaded on this host");
	cr_assert_eq(clip_session_start(s, 0, &e), -EOPNOTSUPP);
	cr_assert_str_eq(clip_error_get_message(e),
			 "session 't' requires the BPF LSM (RequireLSM=yes), which is not loaded "
			 "(clipctl lsm load)");
	clip_error_free(e);
	clip_session_unref(s);
}

Test(session, format_refuses_what_it_cannot_write)
{
	struct clip_session *s = session_new("t");
	struct clip_cage_profile *p = profile_new("p");
	struct clip_policy *policy = test_policy("low high ask\n");
	char *text = NULL;

	/* A default profile needs no Profile=. */
	cage_ok(s, "low", "s0", NULL, "/srv/low");
	text = format(s);
	cr_assert_str_eq(text, "[Session]\nName=t\n\n[Cage]\nName=low\nLevel=s0\n"
			       "DataDirectory=/srv/low\n");
	free(text);
	cr_assert_eq(clip_cage_profile_set_wx(p, 1, NULL), 0);
	cage_ok(s, "high", "s2", p, "/srv/high");
	assert_errno(clip_session_format(s, &text), -EOPNOTSUPP);
	clip_session_unref(s);

	s = session_new("t");
	cage_ok(s, "low", "s0", NULL, "/srv/low");
	cage_ok(s, "high", "s2", NULL, "/srv/high");
	cr_assert_eq(clip_session_set_policy(s, policy, NULL), 0);
	assert_errno(clip_session_format(s, &text), -EOPNOTSUPP);
	clip_session_unref(s);
	clip_cage_profile_unref(p);
	clip_policy_unref(policy);
}

#define PROFILE "[Cage]\nName=anything\n[Security]\nWriteXorExecute=yes\n"

Test(session, relative_paths_resolve_against_the_file)
{
	char *dir = test_tmpdir("tmpfs"), path[600], want[600], *m = NULL, *a, *b;
	struct clip_session *s = NULL, *loaded = NULL;
	struct clip_ctx *ctx = test_ctx("/nonexistent/clip-state");
	struct clip_error *e = NULL;
	const char *text = HEAD "[Cage]\nName=low\nLevel=s0\nProfile=p/low.cage\n"
				"DataDirectory=data/low\n";
	int dirfd, fd;

	snprintf(path, sizeof(path), "%s/p", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	close(test_file(path, "low.cage", PROFILE));
	close(test_file(dir, "t.session", text));
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dirfd, 0);

	cr_assert_eq(parse(text, dirfd, &s, &m, NULL), 0, "%s", m ? m : "");
	snprintf(want, sizeof(want), "%s/p/low.cage", dir);
	cr_assert_str_eq(session_find_cage(s, "low")->profile_path, want);
	snprintf(want, sizeof(want), "%s/data/low", dir);
	cr_assert_str_eq(session_find_cage(s, "low")->data_dir, want);
	cr_assert_str_eq(clip_cage_profile_get_name(session_find_cage(s, "low")->profile), "t.low");

	/* Loaded from its path, from elsewhere: the same session. */
	cr_assert_eq(chdir("/"), 0);
	snprintf(path, sizeof(path), "%s/t.session", dir);
	cr_assert_eq(clip_session_load(&loaded, ctx, path, &e), 0, "%s",
		     e ? clip_error_get_message(e) : "");
	a = format(s);
	b = format(loaded);
	cr_assert_str_eq(a, b);
	cr_assert(strstr(a, "Profile=/"), "%s", a);

	/* A file with a path the parser cannot know: a relative path is refused. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_errno(parse(HEAD "[Cage]\nName=low\nLevel=s0\nDataDirectory=../low\n", fd, NULL, &m,
			   NULL),
		     -EINVAL);
	message_has(m, "t.session:6: [Cage] DataDirectory:", "'..' component", NULL);
	free(m);
	free(a);
	free(b);
	close(fd);
	close(dirfd);
	clip_session_unref(s);
	clip_session_unref(loaded);
	clip_ctx_unref(ctx);
	free(dir);
}

Test(session, profile_refusals)
{
	char *dir = test_tmpdir("tmpfs"), path[600], target[600], *m = NULL;
	int dirfd, offset;
	const char *link = HEAD "[Cage]\nName=low\nLevel=s0\nProfile=link.cage\n"
				"DataDirectory=/srv/low\n";

	close(test_file(dir, "low.cage", PROFILE));
	close(test_file(dir, "bad.cage", "[Cage]\nName=x\nRoot=relative\n"));
	close(test_file(dir, "s1.cage", "[Cage]\nName=x\nLevel=s1\n"));
	snprintf(path, sizeof(path), "%s/link.cage", dir);
	snprintf(target, sizeof(target), "%s/low.cage", dir);
	cr_assert_eq(symlink(target, path), 0);
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	/* A symbolic link is not followed: the file is the one named. */
	assert_errno(parse(link, dirfd, NULL, &m, &offset), -EINVAL);
	message_has(m, "t.session:6: [Cage] Profile:", "link.cage is a symbolic link", NULL);
	cr_assert_eq(strncmp(link + offset, "link.cage", 9), 0);
	free(m);

	assert_errno(parse(HEAD "[Cage]\nName=low\nLevel=s0\nProfile=none.cage\n"
				"DataDirectory=/srv/low\n",
			   dirfd, NULL, &m, NULL),
		     -ENOENT);
	message_has(m, "t.session:6: [Cage] Profile:", "'none.cage': no such file", NULL);
	free(m);

	/* The profile's own error, in the session's form. */
	assert_errno(parse(HEAD "[Cage]\nName=low\nLevel=s0\nProfile=bad.cage\n"
				"DataDirectory=/srv/low\n",
			   dirfd, NULL, &m, NULL),
		     -EINVAL);
	message_has(m, "t.session:6: [Cage] Profile:", "bad.cage:3: [Cage] Root:", NULL);
	free(m);

	assert_errno(parse(HEAD "[Cage]\nName=low\nLevel=s2\nProfile=s1.cage\n"
				"DataDirectory=/srv/low\n",
			   dirfd, NULL, &m, NULL),
		     -EINVAL);
	message_has(m, "t.session:3: [Cage]", "cage 'low': its profile's level s1",
		    "the session's level s2", NULL);
	free(m);
	close(dirfd);
	free(dir);
}

Test(session, the_example_parses)
{
	struct clip_ctx *ctx = test_ctx("/nonexistent/clip-state");
	struct clip_session *s = NULL;
	struct clip_error *e = NULL;
	struct session_cage *c;
	char *text;

	cr_assert_eq(clip_session_load(&s, ctx, EXAMPLES_DIR "/sessions/demo.session", &e), 0, "%s",
		     e ? clip_error_get_message(e) : "");
	cr_assert_str_eq(clip_session_get_name(s), "demo");
	cr_assert_eq(s->n_cages, 3);
	cr_assert_not_null(s->policy);
	c = session_find_cage(s, "side");
	cr_assert_not_null(c);
	cr_assert(strstr(c->data_dir, "/examples/sessions/data/side"), "%s", c->data_dir);
	cr_assert(c->data_dir[0] == '/');
	cr_assert(strstr(c->profile_path, "/examples/sessions/side.cage"), "%s", c->profile_path);
	text = format(s);
	cr_assert(strstr(text, "Level=s1:c5\n"), "%s", text);
	cr_assert(strstr(text, "Rule=low high ask\nRule=high low ask encrypt\n"
			       "Rule=@any @any deny\n"),
		  "%s", text);
	free(text);
	clip_session_unref(s);
	clip_ctx_unref(ctx);
}

Test(session, data_encryption_and_secret_refusals)
{
	struct clip_session *s = session_new("t");
	struct clip_level *l = test_level("s0");
	struct clip_session_cage c = {
		.size = sizeof(c),
		.name = "low",
		.level = l,
		.data_dir = "/srv/low",
		.data_encryption = 2,
	};
	struct clip_error *e = NULL;

	assert_errno(clip_session_add_cage(s, &c, &e), -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), "cage 'low': bad data encryption 2"), "%s",
		  clip_error_get_message(e));
	e = clip_error_free(e);
	/* A caller of an older size, without the field: encrypted, the default. */
	c.data_encryption = CLIP_SESSION_DATA_NONE;
	c.size = offsetof(struct clip_session_cage, data_encryption);
	cr_assert_eq(clip_session_add_cage(s, &c, NULL), 0);
	cr_assert_eq(session_find_cage(s, "low")->data_encryption, CLIP_SESSION_DATA_FSCRYPT);
	/* A secret is 1 to 4096 bytes, or none. */
	assert_errno(clip_session_set_secret(s, "x", 0, NULL), -EINVAL);
	assert_errno(clip_session_set_secret(s, NULL, 3, NULL), -EINVAL);
	{
		char big[4097];

		memset(big, 'x', sizeof(big));
		assert_errno(clip_session_set_secret(s, big, sizeof(big), &e), -EINVAL);
		cr_assert(strstr(clip_error_get_message(e), "1 to 4096 bytes"), "%s",
			  clip_error_get_message(e));
		e = clip_error_free(e);
		cr_assert_eq(clip_session_set_secret(s, big, 4096, NULL), 0);
	}
	cr_assert_eq(s->secret_size, 4096);
	cr_assert_eq(clip_session_set_secret(s, NULL, 0, NULL), 0);
	cr_assert_null(s->secret);
	clip_level_unref(l);
	clip_session_unref(s);
}
