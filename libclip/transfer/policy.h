/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transfer policy (clip.policy(5)): first match wins, default deny, a
 * downgrade is never `allow`. Parsed by clip_policy_parse() (policy.c).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <clip/level.h>

#include "proto.h"

#define POLICY_TEXT_MAX (1024 * 1024)
#define POLICY_LINE_MAX 4096
#define POLICY_RULES_MAX 4096
/* The largest document any rule may let through: 1 TiB. */
#define POLICY_SIZE_MAX (UINT64_C(1) << 40)

enum policy_action {
	POLICY_DENY,
	POLICY_ALLOW,
	POLICY_ASK,
};

enum endpoint_kind {
	ENDPOINT_ANY,
	ENDPOINT_NAME,
	ENDPOINT_LEVEL,
};

struct policy_endpoint {
	enum endpoint_kind kind;
	char name[PROTO_CAGE_MAX + 1];
	struct clip_level *level;
};

struct policy_rule {
	unsigned line;
	struct policy_endpoint source, target;
	enum policy_action action;
	uint64_t max_size; /* 0: no max-size option */
	int direction; /* enum proto_direction, or -1 for any */
	char *filter;
	bool encrypt;
};

struct clip_policy {
	unsigned n_ref;
	char *origin;
	struct policy_rule *rules;
	size_t n_rules;
};

/* The direction of a transfer from @source to @target. */
enum proto_direction policy_direction(const struct clip_level *source,
				      const struct clip_level *target);

/*
 * The first rule matching a transfer, or NULL: the default, deny. A rule
 * naming @any never matches an incomparable pair.
 */
const struct policy_rule *policy_match(const struct clip_policy *policy, const char *source,
				       const struct clip_level *source_level, const char *target,
				       const struct clip_level *target_level);

/*
 * Check that no allow rule lets any of the @n cages (names and levels)
 * send to another whose level does not dominate its own. -EINVAL with a
 * message naming the rule's file and line.
 */
int policy_check_cages(const struct clip_policy *policy, const char *const *names,
		       const struct clip_level *const *levels, size_t n,
		       struct clip_error **reterr);

const char *policy_action_name(enum policy_action action);
