/*
 * sockdiag.c - see sockdiag.h.
 */
#define _GNU_SOURCE
#include "maps/sockdiag.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int sockdiag_open(void)
{
	struct timeval tv = {.tv_sec = 1};
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (nl < 0)
		return -1;
	/* The kernel answers at once; a bound keeps a lost answer from
	 * blocking the controller. */
	(void)setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return nl;
}

int sockdiag_destroy(int nl, int family, const uint8_t *laddr, uint16_t lport, const uint8_t *raddr,
                     uint16_t rport)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	union {
		struct nlmsghdr nlh;
		char buf[512];
	} ans;
	size_t alen = family == AF_INET ? 4 : 16;
	ssize_t n;

	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DESTROY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	req.r.sdiag_family = (uint8_t)family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	req.r.id.idiag_sport = lport;
	req.r.id.idiag_dport = rport;
	memcpy(req.r.id.idiag_src, laddr, alen);
	memcpy(req.r.id.idiag_dst, raddr, alen);
	req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (send(nl, &req, sizeof(req), 0) != (ssize_t)sizeof(req))
		return -errno;
	n = recv(nl, &ans, sizeof(ans), 0);
	if (n < 0)
		return -errno;
	if ((size_t)n < sizeof(struct nlmsghdr) + sizeof(struct nlmsgerr) ||
	    ans.nlh.nlmsg_type != NLMSG_ERROR)
		return -EPROTO;
	return ((struct nlmsgerr *)NLMSG_DATA(&ans.nlh))->error;
}

int sockdiag_probe(void)
{
	static const uint8_t lo[4] = {127, 0, 0, 1};
	int nl = sockdiag_open(), rc;

	if (nl < 0)
		return -errno;
	/* A socket nobody has: ENOENT says the request is understood. */
	rc = sockdiag_destroy(nl, AF_INET, lo, htons(1), lo, htons(1));
	close(nl);
	return rc == -ENOENT || rc == 0 ? 0 : rc;
}
