/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transfer policy; clip.policy(5) is the reference. A small, total
 * parser: every refusal names the file, line and column.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clip/mediator.h>

#include "base/macro.h"
#include "base/error.h"
#include "transfer-internal.h"

struct parser {
	const char *origin;
	const char *text; /* the whole file */
	size_t line_start;
	unsigned line;
	struct clip_error **reterr;
};

static int _printf_(3, 4)
	parse_error(const struct parser *p, const char *at, const char *format, ...)
{
	_cleanup_free_ char *what = NULL;
	size_t off = (size_t)(at - p->text);
	va_list ap;
	int n;

	va_start(ap, format);
	n = vasprintf(&what, format, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	return error_setf(p->reterr, -EINVAL, (int)off, "%s:%u:%zu: %s", p->origin, p->line,
			  off - p->line_start + 1, what);
}

static void
rule_clear(struct policy_rule *rule)
{
	clip_level_unref(rule->source.level);
	clip_level_unref(rule->target.level);
	free(rule->filter);
	memset(rule, 0, sizeof(*rule));
}

static bool
looks_like_level(const char *s)
{
	return s[0] == 's' && s[1] >= '0' && s[1] <= '9';
}

static int
parse_endpoint(const struct parser *p, const char *tok, struct policy_endpoint *ep)
{
	int r;

	if (strcmp(tok, "@any") == 0) {
		ep->kind = ENDPOINT_ANY;
		return 0;
	}
	if (looks_like_level(tok)) {
		r = clip_level_parse(&ep->level, tok, NULL);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return parse_error(p, tok, "'%s' is not a valid level", tok);
		ep->kind = ENDPOINT_LEVEL;
		return 0;
	}
	if (!proto_cage_name_valid(tok, strlen(tok)))
		return parse_error(p, tok,
				   "'%s' is neither @any, a level nor a cage name ([a-z0-9_-], "
				   "at most %d characters)",
				   tok, PROTO_CAGE_MAX);
	ep->kind = ENDPOINT_NAME;
	strcpy(ep->name, tok);
	return 0;
}

static int
parse_size(const struct parser *p, const char *tok, const char *value, uint64_t *ret)
{
	uint64_t v = 0, unit = 1;
	const char *s = value;

	if (*s < '0' || *s > '9')
		return parse_error(p, value, "max-size needs a number of bytes");
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > POLICY_SIZE_MAX)
			break;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (*s && !strchr("KMGT", *s))
		return parse_error(p, s, "unknown size suffix (K, M, G or T)");
	if (*s) {
		unit = UINT64_C(1) << (10 * (1 + (strchr("KMGT", *s) - "KMGT")));
		if (s[1])
			return parse_error(p, s + 1, "trailing characters after the size");
	}
	if (v == 0 || v > POLICY_SIZE_MAX / unit)
		return parse_error(p, value, "max-size must be between 1 and 1T");
	*ret = v * unit;
	return 0;
}

static int
parse_option(const struct parser *p, char *tok, struct policy_rule *rule)
{
	char *value = strchr(tok, '=');

	if (value)
		*value++ = '\0';
	if (strcmp(tok, "encrypt") == 0) {
		if (value)
			return parse_error(p, value, "encrypt takes no value");
		if (rule->encrypt)
			return parse_error(p, tok, "duplicate option encrypt");
		rule->encrypt = true;
		return 0;
	}
	if (!value)
		return parse_error(p, tok,
				   "unknown option '%s' (max-size=, direction=, filter=, "
				   "encrypt)",
				   tok);
	if (strcmp(tok, "max-size") == 0) {
		if (rule->max_size)
			return parse_error(p, tok, "duplicate option max-size");
		return parse_size(p, tok, value, &rule->max_size);
	}
	if (strcmp(tok, "direction") == 0) {
		if (rule->direction >= 0)
			return parse_error(p, tok, "duplicate option direction");
		for (int d = 0; d < PROTO_DIRECTION_INCOMPARABLE; d++)
			if (strcmp(value, proto_direction_name((unsigned)d)) == 0)
				rule->direction = d;
		if (rule->direction < 0)
			return parse_error(p, value, "direction is up, down or same");
		return 0;
	}
	if (strcmp(tok, "filter") == 0) {
		if (rule->filter)
			return parse_error(p, tok, "duplicate option filter");
		if (value[0] != '/')
			return parse_error(p, value, "filter needs an absolute path");
		rule->filter = strdup(value);
		return rule->filter ? 0 : -ENOMEM;
	}
	return parse_error(p, tok, "unknown option '%s' (max-size=, direction=, filter=, encrypt)",
			   tok);
}

/* A downgrade is never allowed: what can be decided from the rule alone. */
static int
check_rule(const struct parser *p, const char *line, const struct policy_rule *rule)
{
	if (rule->action == POLICY_DENY && (rule->max_size || rule->filter || rule->encrypt))
		return parse_error(p, line, "a deny rule takes no max-size, filter or encrypt");
	if (rule->filter && rule->encrypt)
		return parse_error(p, line,
				   "filter and encrypt cannot be combined (the filter "
				   "would see only the envelope)");
	if (rule->action != POLICY_ALLOW)
		return 0;
	if (rule->direction == PROTO_DIRECTION_DOWN)
		return parse_error(p, line, "a downgrade can never be allowed: use ask or deny");
	if (rule->direction == PROTO_DIRECTION_UP || rule->direction == PROTO_DIRECTION_SAME)
		return 0;
	if (rule->source.kind == ENDPOINT_ANY || rule->target.kind == ENDPOINT_ANY)
		return parse_error(p, line,
				   "an allow rule with @any needs direction=up or "
				   "direction=same: @any can match a downgrade");
	if (rule->source.kind == ENDPOINT_LEVEL && rule->target.kind == ENDPOINT_LEVEL &&
	    clip_level_dominates(rule->target.level, rule->source.level) != 1)
		return parse_error(p, line,
				   "a downgrade can never be allowed: the target level "
				   "does not dominate the source level (use ask or deny)");
	return 0;
}

static int
parse_action(const struct parser *p, const char *tok, enum policy_action *ret)
{
	static const char *const names[] = { "deny", "allow", "ask" };

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (strcmp(tok, names[i]) == 0) {
			*ret = (enum policy_action)i;
			return 0;
		}
	return parse_error(p, tok, "unknown action '%s' (allow, deny or ask)", tok);
}

/* @line is a NUL-terminated copy inside p->text's twin buffer. */
static int
parse_rule(const struct parser *p, char *line, struct policy_rule *rule)
{
	char *tok[3], *save = NULL, *t;
	int r;

	rule->direction = -1;
	rule->line = p->line;
	for (int i = 0; i < 3; i++) {
		tok[i] = strtok_r(i == 0 ? line : NULL, " \t", &save);
		if (!tok[i] || tok[i][0] == '#')
			return parse_error(p, line + strlen(line),
					   "a rule is SOURCE TARGET ACTION [option=value...]");
	}
	r = parse_endpoint(p, tok[0], &rule->source);
	if (r < 0)
		return r;
	r = parse_endpoint(p, tok[1], &rule->target);
	if (r < 0)
		return r;
	r = parse_action(p, tok[2], &rule->action);
	if (r < 0)
		return r;
	while ((t = strtok_r(NULL, " \t", &save)) && t[0] != '#') {
		r = parse_option(p, t, rule);
		if (r < 0)
			return r;
	}
	return check_rule(p, line, rule);
}

static int
policy_parse(struct clip_policy *policy, const char *untrusted_text, size_t size,
	     struct clip_error **reterr)
{
	_cleanup_free_ char *copy = NULL;
	struct parser p = { .origin = policy->origin, .reterr = reterr, .line = 1 };
	int r;

	if (size > POLICY_TEXT_MAX)
		return error_set(reterr, -E2BIG, "%s: policy is over %d bytes", policy->origin,
				 POLICY_TEXT_MAX);
	/* A mutable twin: tokens are cut in place, offsets stay those of the file. */
	copy = malloc(size + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, untrusted_text, size);
	copy[size] = '\0';
	p.text = copy;
	for (size_t i = 0; i <= size; p.line++) {
		size_t end = i;
		struct policy_rule rule = { 0 };
		const char *s;

		p.line_start = i;
		while (end < size && copy[end] != '\n')
			end++;
		if (end - i > POLICY_LINE_MAX)
			return parse_error(&p, copy + i, "line is over %d bytes", POLICY_LINE_MAX);
		for (size_t k = i; k < end; k++) {
			unsigned char c = (unsigned char)copy[k];

			if ((c < 0x20 && c != '\t') || c >= 0x7f)
				return parse_error(&p, copy + k,
						   "byte 0x%02x: only printable ASCII and tabs", c);
		}
		copy[end] = '\0';
		for (s = copy + i; *s == ' ' || *s == '\t'; s++)
			;
		if (*s && *s != '#') {
			if (policy->n_rules == POLICY_RULES_MAX)
				return parse_error(&p, s, "more than %d rules", POLICY_RULES_MAX);
			r = parse_rule(&p, copy + i, &rule);
			if (r < 0) {
				rule_clear(&rule);
				return r;
			}
			policy->rules[policy->n_rules++] = rule;
		}
		i = end + 1;
	}
	return 0;
}

static struct clip_policy *
policy_free(struct clip_policy *policy)
{
	for (size_t i = 0; i < policy->n_rules; i++)
		rule_clear(&policy->rules[i]);
	free(policy->rules);
	free(policy->origin);
	free(policy);
	return NULL;
}

static int
policy_new(struct clip_policy **ret, const char *text, size_t size, const char *origin,
	   struct clip_error **reterr)
{
	struct clip_policy *policy;
	size_t lines = 1;
	int r;

	for (size_t i = 0; i < size && i <= POLICY_TEXT_MAX; i++)
		lines += text[i] == '\n';
	policy = calloc(1, sizeof(*policy));
	if (!policy)
		return -ENOMEM;
	policy->n_ref = 1;
	policy->origin = strndup(origin ? origin : "policy", 256);
	policy->rules =
		calloc(lines < POLICY_RULES_MAX ? lines : POLICY_RULES_MAX, sizeof(*policy->rules));
	if (!policy->origin || !policy->rules) {
		policy_free(policy);
		return -ENOMEM;
	}
	r = policy_parse(policy, text, size, reterr);
	if (r < 0) {
		policy_free(policy);
		return r;
	}
	*ret = policy;
	return 0;
}

CLIP_EXPORT int
clip_policy_parse(struct clip_policy **ret, const char *text, size_t size, const char *origin,
		  struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	clip_assert_return(ret, api_return(-EINVAL, reterr));
	clip_assert_return(text || size == 0, api_return(-EINVAL, reterr));

	return api_return(policy_new(ret, text ? text : "", size, origin, reterr), reterr);
}

CLIP_EXPORT struct clip_policy *
clip_policy_ref(struct clip_policy *policy)
{
	if (policy)
		policy->n_ref++;
	return policy;
}

CLIP_EXPORT struct clip_policy *
clip_policy_unref(struct clip_policy *policy)
{
	if (policy && --policy->n_ref == 0)
		policy_free(policy);
	return NULL;
}

enum proto_direction
policy_direction(const struct clip_level *source, const struct clip_level *target)
{
	switch (clip_level_compare(target, source)) {
	case CLIP_LEVEL_EQUAL:
		return PROTO_DIRECTION_SAME;
	case CLIP_LEVEL_DOMINATES:
		return PROTO_DIRECTION_UP;
	case CLIP_LEVEL_DOMINATED:
		return PROTO_DIRECTION_DOWN;
	default:
		return PROTO_DIRECTION_INCOMPARABLE;
	}
}

static bool
endpoint_match(const struct policy_endpoint *ep, const char *name, const struct clip_level *level)
{
	switch (ep->kind) {
	case ENDPOINT_ANY:
		return true;
	case ENDPOINT_NAME:
		return strcmp(ep->name, name) == 0;
	case ENDPOINT_LEVEL:
		return clip_level_equal(ep->level, level) == 1;
	}
	return false;
}

static bool
rule_match(const struct policy_rule *rule, const char *source, const struct clip_level *sl,
	   const char *target, const struct clip_level *tl)
{
	enum proto_direction d = policy_direction(sl, tl);

	if (!endpoint_match(&rule->source, source, sl) ||
	    !endpoint_match(&rule->target, target, tl))
		return false;
	if (rule->direction >= 0 && rule->direction != (int)d)
		return false;
	/* Incomparable levels: only a rule that names both sides. */
	if (d == PROTO_DIRECTION_INCOMPARABLE &&
	    (rule->source.kind == ENDPOINT_ANY || rule->target.kind == ENDPOINT_ANY))
		return false;
	return true;
}

const struct policy_rule *
policy_match(const struct clip_policy *policy, const char *source,
	     const struct clip_level *source_level, const char *target,
	     const struct clip_level *target_level)
{
	for (size_t i = 0; i < policy->n_rules; i++)
		if (rule_match(&policy->rules[i], source, source_level, target, target_level))
			return &policy->rules[i];
	return NULL;
}

int
policy_check_cages(const struct clip_policy *policy, const char *const *names,
		   const struct clip_level *const *levels, size_t n, struct clip_error **reterr)
{
	for (size_t k = 0; k < policy->n_rules; k++) {
		const struct policy_rule *rule = &policy->rules[k];

		if (rule->action != POLICY_ALLOW)
			continue;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < n; j++) {
				if (!rule_match(rule, names[i], levels[i], names[j], levels[j]))
					continue;
				if (clip_level_dominates(levels[j], levels[i]) == 1)
					continue;
				return error_set(
					reterr, -EINVAL,
					"%s:%u: a downgrade can never be allowed, and this "
					"allow rule matches cage '%s' sending to cage '%s' "
					"whose level does not dominate its own (use ask or "
					"deny)",
					policy->origin, rule->line, names[i], names[j]);
			}
	}
	return 0;
}

/* An endpoint naming a cage or a level none of the @n cages has: -EINVAL, or 0. */
static int
endpoint_check(const struct clip_policy *policy, const struct policy_rule *rule,
	       const struct policy_endpoint *ep, const char *const *names,
	       const struct clip_level *const *levels, size_t n, struct clip_error **reterr)
{
	_cleanup_free_ char *text = NULL;

	for (size_t i = 0; i < n; i++)
		if ((ep->kind == ENDPOINT_NAME && strcmp(ep->name, names[i]) == 0) ||
		    (ep->kind == ENDPOINT_LEVEL && clip_level_equal(ep->level, levels[i]) == 1))
			return 0;
	if (ep->kind == ENDPOINT_NAME)
		return error_set(reterr, -EINVAL,
				 "%s:%u: the rule names cage '%s', and no cage is named so",
				 policy->origin, rule->line, ep->name);
	if (clip_level_format(ep->level, &text) < 0)
		return -ENOMEM;
	return error_set(reterr, -EINVAL, "%s:%u: the rule names level %s, and no cage has it",
			 policy->origin, rule->line, text);
}

CLIP_EXPORT int
clip_policy_check_cages(const struct clip_policy *policy, const char *const *names,
			const struct clip_level *const *levels, size_t n,
			struct clip_error **reterr)
{
	int r = 0;

	clip_assert_reterr(reterr);
	clip_assert_return(
		policy,
		api_return(error_set(reterr, -EINVAL, "%s: the policy is NULL", __func__), reterr));
	clip_assert_return(
		n == 0 || (names && levels),
		api_return(error_set(reterr, -EINVAL, "%s: %zu cages and no names or levels",
				     __func__, n),
			   reterr));
	for (size_t i = 0; i < n; i++)
		clip_assert_return(
			names[i] && levels[i],
			api_return(error_set(reterr, -EINVAL,
					     "%s: cage %zu has no name or no level", __func__, i),
				   reterr));

	for (size_t k = 0; k < policy->n_rules && r >= 0; k++) {
		const struct policy_rule *rule = &policy->rules[k];

		if (rule->source.kind != ENDPOINT_ANY)
			r = endpoint_check(policy, rule, &rule->source, names, levels, n, reterr);
		if (r >= 0 && rule->target.kind != ENDPOINT_ANY)
			r = endpoint_check(policy, rule, &rule->target, names, levels, n, reterr);
	}
	if (r >= 0)
		r = policy_check_cages(policy, names, levels, n, reterr);
	return api_return(r, reterr);
}

const char *
policy_action_name(enum policy_action action)
{
	static const char *const names[] = { "deny", "allow", "ask" };

	return (unsigned)action < ELEMENTSOF(names) ? names[action] : "?";
}
