/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Landlock's denials (ABI 7), read from the kernel's audit and passed to
 * the library's log as "cage NAME was refused X" (doc/cage.md, "Landlock").
 *
 * The kernel writes a denial as an AUDIT_LANDLOCK_ACCESS record naming
 * the domain that refused and what ("domain=1be7510bb
 * blockers=net.connect_tcp daddr=127.0.0.1 dest=47777"), and, with the
 * first denial of each domain, an AUDIT_LANDLOCK_DOMAIN record naming the
 * process that made it ("domain=1be7510bb status=allocated
 * mode=enforcing pid=8881 ..."). A cage's domains are those made by its
 * init, its first process and the processes spawned into it, whose host
 * pids the launcher knows, or any launcher of a registered cage
 * (NAME.spawned in the registry: clipctl cage exec). A domain that a
 * process of the cage makes for itself (a nested sandbox) is not known
 * as the cage's. The records come from the audit netlink
 * socket's read-only multicast group, which only the host's root may join,
 * and only while the kernel's audit is on.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/netlink.h>

#include "cage-internal.h"
#include "base/log.h"
#include "base/util.h"

/* Newer than the headers of Debian 12: linux/audit.h of Linux 6.15. */
#define CAGE_AUDIT_LANDLOCK_ACCESS 1423
#define CAGE_AUDIT_LANDLOCK_DOMAIN 1424

/* What one drain keeps of the denials it reads, before their domains are known. */
#define PENDING_MAX 64
#define SHOWN_MAX 200

int
cage_audit_enabled(void)
{
	struct {
		struct nlmsghdr h;
		struct audit_status s;
	} m = { .h = { .nlmsg_len = NLMSG_LENGTH(0),
		       .nlmsg_type = AUDIT_GET,
		       .nlmsg_flags = NLM_F_REQUEST } };
	_cleanup_close_ int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);

	if (fd < 0 || send(fd, &m.h, m.h.nlmsg_len, 0) < 0 ||
	    recv(fd, &m, sizeof(m), 0) < (ssize_t)NLMSG_LENGTH(2 * sizeof(uint32_t)) ||
	    m.h.nlmsg_type != AUDIT_GET)
		return -1;
	return m.s.enabled != 0;
}

int
cage_audit_open(struct cage_audit *a, const char **why)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = AUDIT_NLGRP_READLOG };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);

	*why = NULL;
	if (fd < 0)
		*why = "this kernel has no audit";
	else if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		*why = "only the host's root reads the kernel's audit records";
	if (*why) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* Only the multicast from now on; what came before this start is not the cage's. */
	a->fd = fd;
	a->n_pids = a->n_domains = 0;
	cage_audit_drain(a, NULL);
	return 0;
}

int
cage_audit_check(struct cage_audit *a, const char **why)
{
	int on = cage_audit_enabled();

	*why = on < 0 ? "the kernel's audit does not answer"
	       : !on  ? "the kernel's audit is off (auditctl -e 1)"
		      : NULL;
	if (!*why)
		return 0;
	cage_audit_close(a);
	return -1;
}

void
cage_audit_add_pid(struct cage_audit *a, pid_t pid)
{
	if (a->fd < 0 || pid <= 0)
		return;
	/* The most recent ones: a long-lived cage may spawn more. */
	a->pids[a->n_pids++ % CAGE_AUDIT_PIDS_MAX] = (uint64_t)pid;
}

/* Whether @x is among the last entries of the ring @v, of which @n were ever written. */
static bool
ring_has(const uint64_t *v, size_t n, size_t max, uint64_t x)
{
	for (size_t i = 0; i < n && i < max; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* The value of " KEY=" (or at the start) in @text, or NULL. */
static const char *
field(const char *text, const char *key)
{
	size_t k = strlen(key);

	for (const char *p = text; (p = strstr(p, key)); p += k)
		if ((p == text || p[-1] == ' ') && p[k] == '=')
			return p + k + 1;
	return NULL;
}

struct pending {
	uint64_t domain;
	char what[SHOWN_MAX + 1];
};

size_t
cage_audit_drain(struct cage_audit *a, struct clip_cage *c)
{
	_cleanup_free_ struct pending *pending = NULL;
	struct clip_ctx *ctx = c ? c->ctx : NULL;
	const char *name = c ? c->profile->name : NULL;
	size_t n_pending = 0, dropped = 0, n = 0;
	bool lost = false;
	char buf[8192];

	if (a->fd < 0)
		return 0;
	if (ctx)
		pending = calloc(PENDING_MAX, sizeof(*pending));
	for (;;) {
		ssize_t k = recv(a->fd, buf, sizeof(buf), MSG_DONTWAIT);
		int left; /* int: NLMSG_NEXT() goes below 0 past an unaligned last record */

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == ENOBUFS) {
			lost = true;
			continue;
		}
		if (k <= 0)
			break;
		if (!ctx)
			continue;
		left = (int)k;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left);
		     h = NLMSG_NEXT(h, left)) {
			char text[1024];
			size_t len = h->nlmsg_len - NLMSG_HDRLEN;
			const char *d, *p;
			uint64_t domain;

			if (h->nlmsg_type != CAGE_AUDIT_LANDLOCK_ACCESS &&
			    h->nlmsg_type != CAGE_AUDIT_LANDLOCK_DOMAIN)
				continue;
			if (len >= sizeof(text))
				len = sizeof(text) - 1;
			memcpy(text, NLMSG_DATA(h), len);
			text[len] = '\0';
			d = field(text, "domain");
			if (!d || sscanf(d, "%" SCNx64, &domain) != 1)
				continue;
			if (h->nlmsg_type == CAGE_AUDIT_LANDLOCK_DOMAIN) {
				p = field(text, "pid");
				if (p && strstr(text, " status=allocated") &&
				    (ring_has(a->pids, a->n_pids, CAGE_AUDIT_PIDS_MAX,
					      (uint64_t)atoi(p)) ||
				     cage_registry_spawned(c, (pid_t)atoi(p))) &&
				    !ring_has(a->domains, a->n_domains, CAGE_AUDIT_DOMAINS_MAX,
					      domain))
					a->domains[a->n_domains++ % CAGE_AUDIT_DOMAINS_MAX] =
						domain;
				continue;
			}
			p = field(text, "blockers");
			if (!p || !pending)
				continue;
			if (n_pending == PENDING_MAX) {
				dropped++;
				continue;
			}
			pending[n_pending].domain = domain;
			/* What the kernel wrote, printable ASCII only: it quotes or hex-encodes names. */
			for (size_t i = 0; p[i] && i < SHOWN_MAX; i++)
				pending[n_pending].what[i] =
					p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '?';
			n_pending++;
		}
	}
	/* A domain's first denial comes with the record that names its maker: known by now. */
	for (size_t i = 0; i < n_pending; i++) {
		if (!ring_has(a->domains, a->n_domains, CAGE_AUDIT_DOMAINS_MAX, pending[i].domain))
			continue;
		log_notice(ctx, "cage %s was refused %s", name, pending[i].what);
		if (c->denial_fn)
			c->denial_fn(c, pending[i].what, c->denial_userdata);
		n++;
	}
	if (ctx && (lost || dropped))
		log_notice(ctx, "cage %s: some of its Landlock denials were not read (%s)", name,
			   lost ? "the audit socket overflowed" : "too many at once");
	return n;
}

void
cage_audit_close(struct cage_audit *a)
{
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
}
