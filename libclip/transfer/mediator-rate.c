/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The rate of requests: a token bucket per cage (doc/transfer.md, "Rate"),
 * and a bound on the records a flood of refusals makes.
 */
#include <inttypes.h>
#include <stdio.h>

#include <clip/mediator.h>

#include "base/log.h"
#include "proto.h"
#include "transfer-internal.h"
#include "base/util.h"
#include "base/test-hooks.h"

/* A cage over its rate is audited at most once per window. */
#define RATE_AUDIT_WINDOW_NS (UINT64_C(10) * 1000000000)

/* Take a token from @c's bucket: false when it is empty. */
static bool
rate_take(struct cage *c, uint32_t *ret_wait_ms)
{
	return c->rate_per_s == CLIP_MEDIATOR_RATE_UNLIMITED ||
	       token_bucket_take(&c->rate, c->rate_per_s, c->rate_burst, ret_wait_ms);
}

/* Record the refusals not recorded yet (at most one record per window). */
void
mediator_rate_flush(struct clip_mediator *m, struct cage *c)
{
	char reason[128];

	if (!c->limit_suppressed)
		return;
	snprintf(reason, sizeof(reason), "%" PRIu64 " more requests refused over the rate limit",
		 c->limit_suppressed);
	(void)mediator_audit_record(m, "limited", c, NULL, NULL, NULL, NULL, "deny", "mediator",
				    reason);
	c->limit_suppressed = 0;
}

/*
 * Whether the cage of @c may send one more message now. When it may not,
 * @reason says why, and the refusal is recorded unless one was in this
 * window (then it is counted, and the count recorded later): a flood of
 * requests must not become a flood of records.
 */
bool
mediator_rate_check(struct clip_mediator *m, struct conn *c, const struct proto_request *q,
		    char *reason, size_t size)
{
	struct cage *cage = c->cage;
	uint64_t now = now_ns();
	uint32_t wait_ms = 0;
	bool window_over =
		!cage->limit_audited_ns || now - cage->limit_audited_ns >= RATE_AUDIT_WINDOW_NS;
	char text[PROTO_TEXT_MAX + 1];

	if (rate_take(cage, &wait_ms) || test_hook_disabled("mediator-rate")) {
		if (window_over && cage->limit_suppressed) {
			mediator_rate_flush(m, cage);
			cage->limit_audited_ns = now;
		}
		return true;
	}
	snprintf(reason, size,
		 "over the rate limit of cage '%s' (%" PRIu32 " requests per second, %" PRIu32
		 " at once): try again in %" PRIu32 " ms",
		 cage->name, cage->rate_per_s, cage->rate_burst, wait_ms);
	if (!window_over) {
		cage->limit_suppressed++;
		return false;
	}
	if (cage->limit_suppressed)
		snprintf(text, sizeof(text),
			 "%.440s; %" PRIu64 " more refused since the last record", reason,
			 cage->limit_suppressed);
	else
		snprintf(text, sizeof(text), "%s", reason);
	(void)mediator_audit_record(m, "limited", cage, q ? mediator_find_cage(m, q->target) : NULL,
				    q ? q->target : NULL, q ? q->name : NULL, NULL, "deny",
				    "mediator", text);
	log_notice(m->ctx, "cage '%s' is over its rate limit", cage->name);
	cage->limit_audited_ns = now;
	cage->limit_suppressed = 0;
	return false;
}
