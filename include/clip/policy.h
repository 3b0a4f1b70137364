/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transfer policy (clip.policy(5)): which cage may send what to which,
 * first match, default deny, and never an allow rule that can match a
 * downgrade. A mediator decides with it (clip/mediator.h).
 *
 * See clip-mediator(3) and clip.policy(5).
 */
#ifndef CLIP_POLICY_H
#define CLIP_POLICY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct clip_error;
struct clip_level;
struct clip_policy;

/**
 * clip_policy_parse - parse a transfer policy (clip.policy(5))
 *
 * @param ret where the policy is stored; untouched on failure
 * @param text the policy, @size bytes, not NUL-terminated
 * @param size at most 1 MiB
 * @param origin the file name used in messages, or NULL
 * @param reterr optional; the message says "FILE:LINE:COLUMN: what" and
 *	  the error's offset is that of the offending byte
 * @return 0, or -EINVAL (a syntax error, or an allow rule that can match
 *	   a downgrade), -E2BIG (over 1 MiB), -ENOMEM.
 * @since 0.1
 */
int clip_policy_parse(struct clip_policy **ret, const char *text, size_t size, const char *origin,
		      struct clip_error **reterr);

/**
 * clip_policy_check_cages - check a policy against the cages it will judge
 *
 * Every cage name and every level a rule names must be one of the cages'
 * (a rule that can never match is a typo or a cage removed), and no allow
 * rule may match a transfer between two of them whose target level does
 * not dominate the source's.
 *
 * @param names the cages' names, @n of them
 * @param levels their levels, in the same order
 * @param reterr optional; the message names the rule (FILE:LINE) and the
 *	  cage or level at fault
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_policy_check_cages(const struct clip_policy *policy, const char *const *names,
			    const struct clip_level *const *levels, size_t n,
			    struct clip_error **reterr);

/** @since 0.1 */
struct clip_policy *clip_policy_ref(struct clip_policy *policy);
/** @since 0.1 */
struct clip_policy *clip_policy_unref(struct clip_policy *policy);

#ifdef __cplusplus
}
#endif

#endif
