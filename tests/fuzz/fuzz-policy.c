/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clip_policy_parse() on arbitrary bytes. A refusal must name a line and a
 * column. An accepted policy is checked against a fixed set of cages; when
 * the mediator would accept it, no transfer between them may be allowed
 * unless the target's level dominates the source's (no downgrade is ever
 * `allow`), and no rule naming @any may match incomparable levels.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <clip/level.h>
#include <clip/mediator.h>

#include "fuzz.h"
#include "transfer/transfer-internal.h"

static const char *const names[] = { "low", "mid", "high", "left", "right", "twin" };
static const char *const levels[] = { "s0", "s1", "s2:c0,c1", "s1:c0", "s1:c1", "s1" };
#define N (sizeof(names) / sizeof(names[0]))

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct clip_level *lv[N] = { 0 };
	struct clip_policy *policy = NULL;
	struct clip_error *error = NULL;
	int r;

	r = clip_policy_parse(&policy, (const char *)data, size, "fuzz.policy", &error);
	if (r < 0) {
		if ((r != -EINVAL && r != -E2BIG && r != -ENOMEM) || !error)
			abort();
		if (r == -EINVAL && strncmp(clip_error_get_message(error), "fuzz.policy:", 12) != 0)
			abort();
		clip_error_free(error);
		return 0;
	}
	for (size_t i = 0; i < N; i++)
		if (clip_level_parse(&lv[i], levels[i], NULL) < 0)
			abort();
	r = policy_check_cages(policy, names, (const struct clip_level *const *)lv, N, NULL);
	for (size_t i = 0; i < N; i++)
		for (size_t j = 0; j < N; j++) {
			const struct policy_rule *rule =
				policy_match(policy, names[i], lv[i], names[j], lv[j]);

			if (!rule)
				continue;
			if (r == 0 && rule->action == POLICY_ALLOW &&
			    clip_level_dominates(lv[j], lv[i]) != 1)
				abort();
			if (clip_level_compare(lv[i], lv[j]) == CLIP_LEVEL_INCOMPARABLE &&
			    (rule->source.kind == ENDPOINT_ANY ||
			     rule->target.kind == ENDPOINT_ANY))
				abort();
		}
	for (size_t i = 0; i < N; i++)
		clip_level_unref(lv[i]);
	clip_policy_unref(policy);
	return 0;
}
