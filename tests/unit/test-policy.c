/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The transfer policy: its refusals, first match, default deny, and its check against the cages. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <clip/clip.h>

#include "helpers.h"
#include "transfer/transfer-internal.h"

static void
policy_refused(const char *text, const char *where, const char *why)
{
	struct clip_policy *p = NULL;
	struct clip_error *e = NULL;

	assert_errno(clip_policy_parse(&p, text, strlen(text), "test.policy", &e), -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), where), "'%s' lacks '%s'",
		  clip_error_get_message(e), where);
	cr_assert(strstr(clip_error_get_message(e), why), "'%s' lacks '%s'",
		  clip_error_get_message(e), why);
	clip_error_free(e);
}

Test(policy, downgrades_are_never_allow)
{
	policy_refused("s2 s1 allow\n", "test.policy:1:1:", "downgrade can never be allowed");
	policy_refused("# c\ns1:c0 s1:c1 allow\n", "test.policy:2:1:", "does not dominate");
	policy_refused("low high allow direction=down", "test.policy:1:1:", "downgrade");
	policy_refused("@any high allow\n", ":1:1:", "needs direction=up");
	policy_refused("low high ask\nlow high permit\n", "test.policy:2:10:", "unknown action");
	policy_refused("low high ask max-size=1X\n", "test.policy:1:24:", "unknown size suffix");
	policy_refused("low high ask\r\n", "test.policy:1:13:", "byte 0x0d");
	policy_refused("high low ask filter=/bin/true encrypt\n", ":1:1:", "cannot be combined");
}

Test(policy, first_match_wins_default_deny_incomparable_needs_names)
{
	struct clip_policy *p = test_policy("low high ask\n"
					    "@any @any allow direction=up max-size=1K\n"
					    "left right ask encrypt\n"
					    "s2 s0 ask encrypt\n");
	struct clip_level *s0 = test_level("s0"), *s1 = test_level("s1"), *s2 = test_level("s2"),
			  *l = test_level("s1:c0"), *r = test_level("s1:c1");
	const struct policy_rule *rule;

	rule = policy_match(p, "low", s0, "high", s2);
	cr_assert(rule && rule->action == POLICY_ASK && rule->line == 1);
	rule = policy_match(p, "low", s0, "mid", s1);
	cr_assert(rule && rule->action == POLICY_ALLOW && rule->max_size == 1024);
	cr_assert_null(policy_match(p, "mid", s1, "low", s0), "down: default deny");
	cr_assert_null(policy_match(p, "right", r, "left", l), "incomparable via @any: deny");
	rule = policy_match(p, "left", l, "right", r);
	cr_assert(rule && rule->line == 3 && rule->encrypt);
	rule = policy_match(p, "high", s2, "low", s0);
	cr_assert(rule && rule->line == 4 && rule->action == POLICY_ASK);
	cr_assert_eq(policy_direction(s0, s2), PROTO_DIRECTION_UP);
	cr_assert_eq(policy_direction(l, r), PROTO_DIRECTION_INCOMPARABLE);
	clip_policy_unref(p);
	clip_level_unref(s0), clip_level_unref(s1), clip_level_unref(s2);
	clip_level_unref(l), clip_level_unref(r);
}

Test(policy, name_rules_are_checked_against_the_cages)
{
	struct clip_policy *p = test_policy("# names\nhigh low allow\n");
	struct clip_level *levels[] = { test_level("s0"), test_level("s2") };
	const char *names[] = { "low", "high" };
	struct clip_error *e = NULL;

	assert_errno(policy_check_cages(p, names, (const struct clip_level *const *)levels, 2, &e),
		     -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), "test.policy:2:"));
	cr_assert(strstr(clip_error_get_message(e), "cage 'high' sending to cage 'low'"));
	clip_error_free(e);
	clip_policy_unref(p);
	p = test_policy("low high allow\n");
	cr_assert_eq(
		policy_check_cages(p, names, (const struct clip_level *const *)levels, 2, NULL), 0);
	clip_policy_unref(p);
	clip_level_unref(levels[0]), clip_level_unref(levels[1]);
}
