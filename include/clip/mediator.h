/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transfer mediator: the core-side service through which, and only
 * through which, a document moves from one cage to another, under a
 * policy, with the user's decision on a trusted path and an audit trail.
 *
 * Embeddable: it is driven by any event loop through one pollable fd and
 * a dispatch call (as libinput is). See clip-mediator(3), clip.policy(5)
 * and doc/transfer.md.
 */
#ifndef CLIP_MEDIATOR_H
#define CLIP_MEDIATOR_H

#include <stddef.h>
#include <stdint.h>

/* clip_policy_parse() was declared here before 0.1 had policy.h. */
#include <clip/policy.h>

#ifdef __cplusplus
extern "C" {
#endif

struct clip_ctx;
struct clip_error;
struct clip_level;
struct clip_audit;
struct clip_policy;
struct clip_mediator;

/* A request rate without bound (rate_per_s of the structs below). */
#define CLIP_MEDIATOR_RATE_UNLIMITED UINT32_MAX

/*
 * Options of clip_mediator_new(); all zero means the defaults. @size tells
 * which members the caller knows: rate_per_s and rate_burst are read only
 * when it covers both (since 0.1, added after the first four), the
 * pending budgets only when it covers both of them (added after the
 * rates; the 4 bytes of padding after rate_burst are never read). A
 * larger struct (a newer header) is accepted when what this library does
 * not know of it is zero.
 */
struct clip_mediator_opts {
	uint32_t size; /* sizeof(struct clip_mediator_opts) */
	uint32_t confirm_timeout_ms; /* no answer within it is a denial; 0: 60000 */
	uint64_t max_size; /* bound of any document; 0: 4 GiB */
	unsigned label_flags; /* for clip_label_set(): 0 or CLIP_LABEL_ROOTLESS */
	uint32_t rate_per_s; /* requests a cage may send per second, sustained (a
				token bucket per cage); 0: 20,
				CLIP_MEDIATOR_RATE_UNLIMITED: no bound */
	uint32_t rate_burst; /* how many it may send at once; 0: 100 */
	/* Documents waiting for the user's answer (`ask`) sit in the target's
	   inbox, unnamed: their sizes (logical, holes included) are bounded
	   per target inbox and per source cage; a request over either is
	   refused (EDQUOT), naming the budget. */
	uint64_t pending_max_per_target; /* 0: twice max_size (8 GiB) */
	uint64_t pending_max_per_source; /* 0: max_size (4 GiB) */
};

/* One cage as the mediator sees it; @size as for struct clip_mediator_opts. */
struct clip_mediator_cage {
	uint32_t size; /* sizeof(struct clip_mediator_cage) */
	const char *name; /* [a-z0-9][a-z0-9_-]*, at most 64 bytes */
	const struct clip_level *level; /* its level */
	int inbox_fd; /* its inbox directory (duplicated) */
	int socket_fd; /* a listening SOCK_SEQPACKET socket (duplicated),
					   or -1: clip_mediator_add_connection() only */
	int check_uid; /* non-zero: peers must run as @uid */
	uint32_t uid;
	/* Read only when @size covers both; 0: the mediator's (opts). */
	uint32_t rate_per_s; /* or CLIP_MEDIATOR_RATE_UNLIMITED */
	uint32_t rate_burst;
};

/**
 * clip_mediator_new - create a mediator
 *
 * @param ret where the mediator is stored; untouched on failure
 * @param ctx a context (its keys label deliveries and seal envelopes)
 * @param policy the policy (a reference is taken)
 * @param audit the audit log every request and decision goes to (a
 *	  reference is taken)
 * @param opts optional
 * @param reterr optional
 * @return 0, or -EINVAL (an argument is NULL, an unknown label flag, or
 *	   @opts->size is smaller than the first version of the struct, which
 *	   ends after label_flags), -E2BIG (@opts->size is larger than this
 *	   library knows and a byte beyond what it knows is not zero, or
 *	   larger than 4096), -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_mediator_new(struct clip_mediator **ret, struct clip_ctx *ctx, struct clip_policy *policy,
		      struct clip_audit *audit, const struct clip_mediator_opts *opts,
		      struct clip_error **reterr);

/** @since 0.1 */
struct clip_mediator *clip_mediator_ref(struct clip_mediator *mediator);
/**
 * clip_mediator_unref - drop a reference; the last one stops the
 * deliveries in flight (their worker threads are joined, nothing is left
 * in any inbox), answers the questions still waiting for the user with a
 * refusal (audited, the agent told they are withdrawn) and closes every
 * connection.
 * @since 0.1
 */
struct clip_mediator *clip_mediator_unref(struct clip_mediator *mediator);

/**
 * clip_mediator_add_cage - serve one more cage
 *
 * Whatever arrives on @cage->socket_fd comes from this cage: the message
 * never names its source. The policy is checked against the levels of
 * every cage: an allow rule that would let one cage send to another whose
 * level does not dominate its own is refused here.
 *
 * @return 0, or -EINVAL (bad cage, or such a rule: the message names its
 *	   line; @cage->size smaller than the first version of the struct,
 *	   which ends after uid), -E2BIG (@cage->size larger than this library
 *	   knows and a byte beyond what it knows not zero, or larger than
 *	   4096), -EEXIST (a cage of that name exists), -EBADF, -ENOMEM.
 * @since 0.1
 */
int clip_mediator_add_cage(struct clip_mediator *mediator, const struct clip_mediator_cage *cage,
			   struct clip_error **reterr);

/**
 * clip_mediator_add_connection - serve a connection made elsewhere
 *
 * For a cage manager that hands each cage one end of a socketpair (no
 * socket on any file system), or a privilege-separated front end that
 * accepts for one cage: everything arriving on @fd comes from @cage.
 *
 * @param mediator a mediator
 * @param cage the name of a cage added before
 * @param fd a connected SOCK_SEQPACKET socket (duplicated)
 * @param reterr optional
 * @return 0, or -EINVAL (no such cage), -EBADF, -EPERM (the peer's uid is
 *	   not the cage's), -ENOMEM.
 * @since 0.1
 */
int clip_mediator_add_connection(struct clip_mediator *mediator, const char *cage, int fd,
				 struct clip_error **reterr);

/**
 * clip_mediator_add_agent_socket - where confirmation agents connect
 *
 * A listening SOCK_SEQPACKET socket that no cage can reach
 * (doc/confirm-protocol.md). An agent must run as the mediator's uid or
 * as root; the last one connected is asked. Without one, `ask` is a
 * denial.
 *
 * @return 0, or -EINVAL, -EBADF, -ENOMEM.
 * @since 0.1
 */
int clip_mediator_add_agent_socket(struct clip_mediator *mediator, int socket_fd,
				   struct clip_error **reterr);

/**
 * clip_mediator_get_fd - the fd to poll for input
 *
 * @return an fd that polls readable when clip_mediator_dispatch() has
 *	   work; owned by the mediator.
 * @since 0.1
 */
int clip_mediator_get_fd(struct clip_mediator *mediator);

/**
 * clip_mediator_dispatch - handle what is ready, without blocking
 *
 * Handles one event; call it again while it returns 1. Errors of one
 * transfer are answered to its requester and audited, never returned
 * here; a transfer that cannot be audited is refused. Documents are read
 * by worker threads (at most 4 at once), whose end is an event of
 * clip_mediator_get_fd(); everything else runs in the caller's thread.
 *
 * @return 1 when an event was handled, 0 when none was ready, or -EINVAL,
 *	   -ECHILD, -ENOMEM.
 * @since 0.1
 */
int clip_mediator_dispatch(struct clip_mediator *mediator, struct clip_error **reterr);

/**
 * clip_mediator_set_policy - replace the policy of a running mediator
 *
 * The new policy is checked against the mediator's cages as
 * clip_mediator_add_cage() checks the first (clip_policy_check_cages());
 * refused, the old one stays. Requests decided before keep their rule
 * (a delivery under way, a question to the user); the next request is
 * decided by the new policy.
 *
 * @param policy a reference is taken
 * @return 0, or -EINVAL (the message names the rule), -ECHILD.
 * @since 0.1
 */
int clip_mediator_set_policy(struct clip_mediator *mediator, struct clip_policy *policy,
			     struct clip_error **reterr);

/**
 * clip_mediator_get_pending - how many questions wait for the user's answer
 * (`ask` rules), for a status display
 *
 * @return the number, or -EINVAL, -ECHILD.
 * @since 0.1
 */
int clip_mediator_get_pending(struct clip_mediator *mediator);

/**
 * clip_mediator_get_agent_connected - whether a confirmation agent is
 * connected (the one `ask` rules put their questions to)
 *
 * @return 1 or 0, or -EINVAL, -ECHILD.
 * @since 0.1
 */
int clip_mediator_get_agent_connected(struct clip_mediator *mediator);

#ifdef __cplusplus
}
#endif

#endif
