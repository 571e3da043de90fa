/*
 * proxyproto.c - the PROXY protocol v2 header (proxyproto.h).
 */
#include "common/proxyproto.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static const uint8_t sig[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
                                0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};

/* An address as IPv6 (a mapped one for IPv4), its port in network order. */
static void as_v6(const struct sockaddr_storage *ss, struct in6_addr *a, uint16_t *port)
{
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		*a = s6->sin6_addr;
		*port = s6->sin6_port;
		return;
	}
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

	memset(a, 0, sizeof(*a));
	a->s6_addr[10] = a->s6_addr[11] = 0xff;
	memcpy(&a->s6_addr[12], &s4->sin_addr, 4);
	*port = s4->sin_port;
}

int pp2_build(uint8_t *buf, const struct sockaddr_storage *src, const struct sockaddr_storage *dst)
{
	struct in6_addr a[2];
	uint16_t port[2];
	uint8_t *p = buf + 16;

	for (int i = 0; i < 2; i++) {
		const struct sockaddr_storage *ss = i ? dst : src;

		if (ss->ss_family != AF_INET && ss->ss_family != AF_INET6)
			return -1;
		as_v6(ss, &a[i], &port[i]);
	}
	memcpy(buf, sig, sizeof(sig));
	buf[12] = 0x21; /* version 2, PROXY */
	if (IN6_IS_ADDR_V4MAPPED(&a[0]) && IN6_IS_ADDR_V4MAPPED(&a[1])) {
		buf[13] = 0x11; /* TCP over IPv4 */
		buf[14] = 0;
		buf[15] = 12;
		memcpy(p, &a[0].s6_addr[12], 4);
		memcpy(p + 4, &a[1].s6_addr[12], 4);
		p += 8;
	} else {
		buf[13] = 0x21; /* TCP over IPv6 */
		buf[14] = 0;
		buf[15] = 36;
		memcpy(p, &a[0], 16);
		memcpy(p + 16, &a[1], 16);
		p += 32;
	}
	memcpy(p, &port[0], 2);
	memcpy(p + 2, &port[1], 2);
	return (int)(p + 4 - buf);
}

int pp2_build_fd(uint8_t *buf, int fd)
{
	struct sockaddr_storage src, dst;
	socklen_t sl = sizeof(src), dl = sizeof(dst);

	if (getpeername(fd, (struct sockaddr *)&src, &sl) < 0 ||
	    getsockname(fd, (struct sockaddr *)&dst, &dl) < 0)
		return -1;
	return pp2_build(buf, &src, &dst);
}
