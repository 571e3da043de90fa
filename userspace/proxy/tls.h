/*
 * tls.h - TLS for the 6450 proxy's clients: the server context made from
 * [proxy] tls_cert, tls_key, tls_ca, and non-blocking accept, read and write
 * on a client's socket for the worker's epoll loop. A call that cannot go on
 * says which readiness it waits for (TLS_WANT_READ, TLS_WANT_WRITE).
 */
#ifndef MYSTEER_PROXY_TLS_H
#define MYSTEER_PROXY_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"

struct ssl_st;
struct ssl_ctx_st;

enum {
	TLS_FAIL = -1,       /* the connection is broken (or the handshake failed) */
	TLS_WANT_READ = -2,  /* wait for the socket to be readable, call again */
	TLS_WANT_WRITE = -3, /* wait for the socket to be writable, call again */
};

/* The server context of cfg's tls_cert, tls_key and tls_ca; NULL with err
 * empty when no certificate is configured, NULL with err said on failure. */
struct ssl_ctx_st *tls_ctx_new(const struct config *cfg, char *err, size_t errlen);
void tls_ctx_free(struct ssl_ctx_st *ctx);

/* A server-side TLS connection on fd (the context's reference is taken). */
struct ssl_st *tls_new(struct ssl_ctx_st *ctx, int fd);
/* 0 when the handshake is done, else TLS_WANT_* or TLS_FAIL. */
int tls_accept(struct ssl_st *s);
/* Bytes read (> 0), 0 at the peer's close, or TLS_WANT_* / TLS_FAIL. */
ssize_t tls_read(struct ssl_st *s, void *buf, size_t n);
/* Bytes written (> 0), or TLS_WANT_* / TLS_FAIL. */
ssize_t tls_write(struct ssl_st *s, const void *buf, size_t n);
/* A tls_read/tls_write result as send(2) and recv(2) give one: n itself,
 * or -1 with errno EAGAIN (TLS_WANT_*) or ECONNRESET (TLS_FAIL). *want gets
 * the readiness to wait for when it is not the call's own direction `own`
 * (EPOLLIN for a read, EPOLLOUT for a write: TLS may have to write to read,
 * or read to write), else 0. */
ssize_t tls_as_socket_io(ssize_t n, uint32_t own, uint32_t *want);
/* The negotiated protocol and cipher, for the log. */
const char *tls_version(const struct ssl_st *s);
const char *tls_cipher(const struct ssl_st *s);
/*
 * The proxy as a TLS client of a backend ([backend:NAME] tls). ca: a PEM
 * file whose certificates sign the server's (tls = verify), or NULL: the
 * server's certificate is not checked (tls = on).
 */
struct ssl_ctx_st *tls_client_ctx_new(const char *ca, char *err, size_t errlen);
/* A client-side TLS connection on fd; verify_host (a name or a numeric
 * address, the backend's host) is what the certificate must name when the
 * context checks certificates, NULL otherwise. */
struct ssl_st *tls_client_new(struct ssl_ctx_st *ctx, int fd, const char *verify_host);
/* 0 when the handshake is done, else TLS_WANT_* or TLS_FAIL with why said. */
int tls_connect(struct ssl_st *s, char *why, size_t whylen);
/* Sends close_notify when it can without waiting, and frees. */
void tls_free(struct ssl_st *s);

#endif
