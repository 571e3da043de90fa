/*
 * proxyproto.h - the PROXY protocol version 2 header (HAProxy's
 * proxy-protocol.txt, section 2.2) that the relay and the 6450 proxy send
 * first on a new connection to a backend with [backend:NAME] proxy_protocol
 * = on, so that the server (MariaDB's proxy_protocol_networks) sees the
 * client's address instead of the router's.
 */
#ifndef MYSTEER_PROXYPROTO_H
#define MYSTEER_PROXYPROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The longest header: 16 bytes, then two IPv6 addresses and ports. */
#define PP2_MAX 52

/* Writes the header "a TCP connection from src to dst" into buf (PP2_MAX
 * bytes): both IPv4, or both IPv6 (an IPv4 one is then written as an
 * IPv4-mapped IPv6 address; two mapped ones as IPv4). Returns its length,
 * or -1 when an address is not AF_INET or AF_INET6. */
int pp2_build(uint8_t *buf, const struct sockaddr_storage *src, const struct sockaddr_storage *dst);
/* The same with the addresses of a connected socket: its peer (the client)
 * and its own (where the client connected to). */
int pp2_build_fd(uint8_t *buf, int fd);

#endif
