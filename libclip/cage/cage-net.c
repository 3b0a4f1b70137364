/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A cage's veth pair (Mode=veth), through rtnetlink: made by the launcher
 * once the init exists, its peer in the init's network namespace as eth0;
 * the init configures that end (cage-child.c).
 */
#include <errno.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cage-internal.h"

struct nlbuf {
	char data[512];
	size_t len;
};

static struct rtattr *
nl_put(struct nlbuf *b, unsigned short type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)(b->data + NLMSG_ALIGN(b->len));

	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	if (data)
		memcpy(RTA_DATA(a), data, len);
	b->len = NLMSG_ALIGN(b->len) + RTA_ALIGN(a->rta_len);
	return a;
}

static void
nl_end(struct nlbuf *b, struct rtattr *nest)
{
	nest->rta_len = (unsigned short)(b->data + b->len - (char *)nest);
}

int
cage_veth_create(const char *host_name, pid_t pid)
{
	struct nlbuf b = { .len = NLMSG_LENGTH(sizeof(struct ifinfomsg)) };
	struct nlmsghdr *h = (struct nlmsghdr *)b.data;
	struct rtattr *info, *data, *peer;
	struct ifinfomsg peer_ifi = { .ifi_family = AF_UNSPEC };
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	char reply[1024];
	uint32_t ns_pid = (uint32_t)pid;
	_cleanup_close_ int s = -1;
	struct ifreq ifr = { 0 };
	ssize_t n;

	memset(b.data, 0, sizeof(b.data));
	h->nlmsg_type = RTM_NEWLINK;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
	((struct ifinfomsg *)NLMSG_DATA(h))->ifi_family = AF_UNSPEC;
	nl_put(&b, IFLA_IFNAME, host_name, strlen(host_name) + 1);
	info = nl_put(&b, IFLA_LINKINFO, NULL, 0);
	nl_put(&b, IFLA_INFO_KIND, "veth", 5);
	data = nl_put(&b, IFLA_INFO_DATA, NULL, 0);
	peer = nl_put(&b, VETH_INFO_PEER, &peer_ifi, sizeof(peer_ifi));
	nl_put(&b, IFLA_IFNAME, "eth0", 5);
	nl_put(&b, IFLA_NET_NS_PID, &ns_pid, sizeof(ns_pid));
	nl_end(&b, peer);
	nl_end(&b, data);
	nl_end(&b, info);
	h->nlmsg_len = (uint32_t)b.len;

	s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (s < 0)
		return -errno;
	if (sendto(s, b.data, b.len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	n = recv(s, reply, sizeof(reply), 0);
	if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)))
		return n < 0 ? -errno : -EIO;
	h = (struct nlmsghdr *)reply;
	if (h->nlmsg_type == NLMSG_ERROR && ((struct nlmsgerr *)NLMSG_DATA(h))->error < 0)
		return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
	/* The host's end up; its address and routes are the administrator's. */
	close(s);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", host_name);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return -errno;
	return 0;
}
