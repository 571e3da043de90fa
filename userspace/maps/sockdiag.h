/*
 * sockdiag.h - destroying one TCP socket of this network namespace with a
 * sock_diag SOCK_DESTROY request (what `ss -K` does): close-on-demote on
 * kernels without the bpf_sock_destroy() kfunc. Needs CAP_NET_ADMIN and a
 * kernel built with CONFIG_INET_DIAG_DESTROY.
 */
#ifndef MYSTEER_SOCKDIAG_H
#define MYSTEER_SOCKDIAG_H

#include <stdint.h>

/* A NETLINK_SOCK_DIAG socket, or -1 with errno. */
int sockdiag_open(void);

/* Destroys the TCP socket of family (AF_INET or AF_INET6) bound to
 * laddr:lport and connected to raddr:rport (addresses 4 or 16 bytes, ports
 * in network order). 0, or -errno (-ENOENT: no such socket, -EOPNOTSUPP: the
 * kernel has no SOCK_DESTROY). */
int sockdiag_destroy(int nl, int family, const uint8_t *laddr, uint16_t lport, const uint8_t *raddr,
                     uint16_t rport);

/* Whether the kernel takes SOCK_DESTROY requests: 0, or -errno why not. */
int sockdiag_probe(void);

#endif
