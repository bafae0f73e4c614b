/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A second host for the VM tier: the network namespace "ucmapeer" at the far
 * end of two veth pairs, each end with its own soft RDMA device.
 *
 *   here (init netns)                      ucmapeer
 *   vethn0 10.77.0.1/24  rxe "rxen"   <->  vethn1 10.77.0.2/24  rxe "rxep"
 *   vethm0 10.78.0.1/24  siw "siwn"   <->  vethm1 10.78.0.2/24  siw "siwp"
 *
 * rxe keeps one UDP socket per namespace and siw makes its TCP sockets in
 * the caller's, so traffic between the two sides crosses the veth link, and
 * addresses resolve through real ARP. An rdma_cm id belongs to the namespace
 * of the thread that created it; peer_enter() and peer_leave() move the
 * calling thread (only it) in and out, so one process drives both sides.
 */
#ifndef UCMA_PEER_H
#define UCMA_PEER_H

#include <net/if.h>
#include <net/if_arp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "verbs_qp.h"

#define PEER_NS "ucmapeer"
#define PEER_RXE_IP "10.77.0.2"
#define PEER_SIW_IP "10.78.0.2"
#define HERE_RXE_IP "10.77.0.1"
#define HERE_SIW_IP "10.78.0.1"

static inline int peer_sh(const char *cmdline)
{
	return system(cmdline);
}

/* Removes what peer_up() made; quiet about what is not there. */
static inline void peer_down(void)
{
	peer_sh("rdma link delete rxen 2>/dev/null; rdma link delete siwn 2>/dev/null;"
		"ip netns exec " PEER_NS " rdma link delete rxep 2>/dev/null;"
		"ip netns exec " PEER_NS " rdma link delete siwp 2>/dev/null;"
		"ip link delete vethn0 2>/dev/null; ip link delete vethm0 2>/dev/null;"
		"ip netns delete " PEER_NS " 2>/dev/null; true");
}

/* Builds the peer (see above); 0, or non-zero if a step failed. */
static inline int peer_up(void)
{
	peer_down();
	return peer_sh(
		"set -e; ip netns add " PEER_NS "; ip -n " PEER_NS " link set lo up;"
		"ip link add vethn0 type veth peer name vethn1 netns " PEER_NS ";"
		"ip link add vethm0 type veth peer name vethm1 netns " PEER_NS ";"
		"ip addr add " HERE_RXE_IP "/24 dev vethn0; ip link set vethn0 up;"
		"ip addr add " HERE_SIW_IP "/24 dev vethm0; ip link set vethm0 up;"
		"ip -n " PEER_NS " addr add " PEER_RXE_IP "/24 dev vethn1;"
		"ip -n " PEER_NS " addr add " PEER_SIW_IP "/24 dev vethm1;"
		"ip -n " PEER_NS " link set vethn1 up; ip -n " PEER_NS " link set vethm1 up;"
		"rdma link add rxen type rxe netdev vethn0;"
		"rdma link add siwn type siw netdev vethm0;"
		"ip netns exec " PEER_NS " rdma link add rxep type rxe netdev vethn1;"
		"ip netns exec " PEER_NS " rdma link add siwp type siw netdev vethm1;"
		"for d in rxen rxep siwn siwp; do i=0;"
		" until rdma link show $d/1 | grep -q ACTIVE; do"
		"  i=$((i + 1)); [ $i -lt 50 ] || exit 1; sleep 0.1; done; done");
}

static int peer_ns_fd = -1, here_ns_fd = -1;

/* Moves the calling thread into the peer's namespace: 0, or -1. */
static inline int peer_enter(void)
{
	if (here_ns_fd < 0)
		here_ns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (peer_ns_fd < 0)
		peer_ns_fd = open("/run/netns/" PEER_NS, O_RDONLY | O_CLOEXEC);
	if (here_ns_fd < 0 || peer_ns_fd < 0)
		return -1;
	return setns(peer_ns_fd, CLONE_NEWNET);
}

/* Moves the calling thread back (after peer_enter()). */
static inline int peer_leave(void)
{
	return setns(here_ns_fd, CLONE_NEWNET);
}

/* The peer's MAC address on @ifname, as "xx:xx:...", into @mac[18]. */
static inline int peer_mac(const char *ifname, char *mac)
{
	char cmdline[160];
	FILE *f;
	int ok;

	snprintf(cmdline, sizeof(cmdline),
		 "ip netns exec " PEER_NS " cat /sys/class/net/%s/address", ifname);
	f = popen(cmdline, "r");
	if (!f)
		return -1;
	ok = fscanf(f, "%17s", mac) == 1;
	return pclose(f) == 0 && ok ? 0 : -1;
}

/*
 * Fast paths for a MAC change (no process spawned, as racing needs):
 * peer_socket() is a socket of the peer's namespace, set_hwaddr() gives
 * @ifname of that socket's namespace the MAC @mac, and neigh_replace()
 * makes the neighbour entry of @ip on @ifname here @mac (REACHABLE), as
 * "ip neigh replace" does: rdma_cm's netevent notifier sees the update.
 */
static inline int peer_socket(void)
{
	int s;

	if (peer_enter())
		return -1;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (peer_leave()) {
		close(s);
		return -1;
	}
	return s;
}

static inline int set_hwaddr(int sock, const char *ifname, const unsigned char mac[6])
{
	struct ifreq ifr = { 0 };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
	memcpy(ifr.ifr_hwaddr.sa_data, mac, 6);
	return ioctl(sock, SIOCSIFHWADDR, &ifr);
}

static inline void nl_attr(struct nlmsghdr *n, unsigned short type, const void *data, int len)
{
	struct rtattr *rta = (struct rtattr *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

static inline int neigh_replace(const char *ifname, const char *ip, const unsigned char mac[6])
{
	struct {
		struct nlmsghdr n;
		struct ndmsg nd;
		char attrs[64];
	} req = { 0 };
	struct {
		struct nlmsghdr n;
		struct nlmsgerr e;
	} ack;
	struct in_addr dst;
	int fd, ret = -1;

	if (inet_pton(AF_INET, ip, &dst) != 1)
		return -1;
	req.n.nlmsg_len = NLMSG_LENGTH(sizeof(req.nd));
	req.n.nlmsg_type = RTM_NEWNEIGH;
	req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE | NLM_F_ACK;
	req.nd.ndm_family = AF_INET;
	req.nd.ndm_state = NUD_REACHABLE;
	req.nd.ndm_ifindex = if_nametoindex(ifname);
	nl_attr(&req.n, NDA_DST, &dst, sizeof(dst));
	nl_attr(&req.n, NDA_LLADDR, mac, 6);
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -1;
	if (send(fd, &req, req.n.nlmsg_len, 0) == (ssize_t)req.n.nlmsg_len &&
	    recv(fd, &ack, sizeof(ack), 0) >= (ssize_t)sizeof(ack) &&
	    ack.n.nlmsg_type == NLMSG_ERROR) {
		ret = ack.e.error ? -1 : 0;
		if (ack.e.error)
			errno = -ack.e.error;
	}
	close(fd);
	return ret;
}

#endif
