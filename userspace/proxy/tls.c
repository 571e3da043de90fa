/*
 * tls.c - TLS for the 6450 proxy's clients (tls.h). OpenSSL does the work on
 * the client's non-blocking socket; the engine calls again when epoll says
 * the socket is ready in the direction asked for, so a slow or silent TLS
 * client holds only its own session.
 *
 * Read-ahead stays off: OpenSSL takes from the socket only the record it
 * decrypts, and the engine always offers room for a whole record (16 KB),
 * so no decrypted byte waits inside OpenSSL unseen by epoll.
 */
#include "proxy/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#include "common/log.h"

/* The first error of OpenSSL's queue as text (the queue is emptied). */
static void last_error(char *buf, size_t len)
{
	unsigned long e = ERR_get_error();

	if (e)
		ERR_error_string_n(e, buf, len);
	else
		snprintf(buf, len, "%s", errno ? strerror(errno) : "unknown error");
	ERR_clear_error();
}

/*
 * A context of method with what both sides share: TLS 1.2 at least, no
 * renegotiation (a peer cannot make the proxy redo handshakes), and writes
 * as the event loop makes them: the output buffer may move (realloc)
 * between a write that wanted to wait and its retry, and a partial write is
 * taken as one. NULL with err set ("WHAT: reason") when OpenSSL fails.
 */
static SSL_CTX *ctx_base(const SSL_METHOD *method, const char *what, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(method);
	char why[256];

	if (!ctx) {
		last_error(why, sizeof(why));
		snprintf(err, errlen, "%s: %s", what, why);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
	                          SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
	return ctx;
}

struct ssl_ctx_st *tls_ctx_new(const struct config *cfg, char *err, size_t errlen)
{
	SSL_CTX *ctx;
	char why[256];

	err[0] = '\0';
	if (!cfg->tls_cert[0])
		return NULL;
	ctx = ctx_base(TLS_server_method(), "proxy: TLS", err, errlen);
	if (!ctx)
		return NULL;
	SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
	if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert) != 1) {
		last_error(why, sizeof(why));
		snprintf(err, errlen, "proxy: tls_cert %s: %s", cfg->tls_cert, why);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		last_error(why, sizeof(why));
		snprintf(err, errlen, "proxy: tls_key %s: %s", cfg->tls_key, why);
		goto fail;
	}
	if (cfg->tls_ca[0]) {
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->tls_ca);

		if (SSL_CTX_load_verify_locations(ctx, cfg->tls_ca, NULL) != 1 || !names) {
			last_error(why, sizeof(why));
			snprintf(err, errlen, "proxy: tls_ca %s: %s", cfg->tls_ca, why);
			sk_X509_NAME_pop_free(names, X509_NAME_free);
			goto fail;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
		/* a client certificate is not required, but one sent must be
		 * signed by the CA */
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	}
	ERR_clear_error();
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

void tls_ctx_free(struct ssl_ctx_st *ctx)
{
	SSL_CTX_free(ctx);
}

struct ssl_st *tls_new(struct ssl_ctx_st *ctx, int fd)
{
	SSL *s = SSL_new(ctx);

	if (!s)
		return NULL;
	if (SSL_set_fd(s, fd) != 1) {
		SSL_free(s);
		return NULL;
	}
	SSL_set_accept_state(s);
	return s;
}

/* What a failed call of OpenSSL means for the caller (r: its return). */
static int io_result(SSL *s, int r, const char *what)
{
	int e = SSL_get_error(s, r);
	char why[256];

	switch (e) {
	case SSL_ERROR_WANT_READ:
		return TLS_WANT_READ;
	case SSL_ERROR_WANT_WRITE:
		return TLS_WANT_WRITE;
	case SSL_ERROR_ZERO_RETURN:
		ERR_clear_error();
		return 0;
	default:
		last_error(why, sizeof(why));
		log_debug("proxy: TLS %s: %s", what, why);
		return TLS_FAIL;
	}
}

int tls_accept(struct ssl_st *s)
{
	int r;

	ERR_clear_error();
	r = SSL_accept(s);
	if (r == 1)
		return 0;
	r = io_result(s, r, "handshake");
	return r == 0 ? TLS_FAIL : r;
}

ssize_t tls_read(struct ssl_st *s, void *buf, size_t n)
{
	size_t got = 0;
	int r;

	ERR_clear_error();
	r = SSL_read_ex(s, buf, n, &got);
	if (r == 1)
		return (ssize_t)got;
	return io_result(s, 0, "read");
}

ssize_t tls_write(struct ssl_st *s, const void *buf, size_t n)
{
	size_t put = 0;
	int r;

	ERR_clear_error();
	r = SSL_write_ex(s, buf, n, &put);
	if (r == 1)
		return (ssize_t)put;
	r = io_result(s, 0, "write");
	return r == 0 ? TLS_FAIL : r;
}

ssize_t tls_as_socket_io(ssize_t n, uint32_t own, uint32_t *want)
{
	*want = 0;
	if (n >= 0)
		return n;
	if (n == TLS_WANT_READ || n == TLS_WANT_WRITE) {
		uint32_t w = n == TLS_WANT_READ ? EPOLLIN : EPOLLOUT;

		if (w != own)
			*want = w;
		errno = EAGAIN;
	} else {
		errno = ECONNRESET;
	}
	return -1;
}

struct ssl_ctx_st *tls_client_ctx_new(const char *ca, char *err, size_t errlen)
{
	SSL_CTX *ctx;
	char why[256];

	err[0] = '\0';
	ctx = ctx_base(TLS_client_method(), "proxy: backend TLS", err, errlen);
	if (!ctx)
		return NULL;
	if (ca && ca[0]) {
		if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
			last_error(why, sizeof(why));
			snprintf(err, errlen, "proxy: backend tls_ca %s: %s", ca, why);
			SSL_CTX_free(ctx);
			return NULL;
		}
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	}
	ERR_clear_error();
	return ctx;
}

struct ssl_st *tls_client_new(struct ssl_ctx_st *ctx, int fd, const char *verify_host)
{
	SSL *s = SSL_new(ctx);
	struct in6_addr a6;
	struct in_addr a4;

	if (!s)
		return NULL;
	if (SSL_set_fd(s, fd) != 1)
		goto fail;
	if (verify_host && verify_host[0]) {
		bool numeric = inet_pton(AF_INET, verify_host, &a4) == 1 ||
		               inet_pton(AF_INET6, verify_host, &a6) == 1;

		if (numeric) {
			if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), verify_host) != 1)
				goto fail;
		} else if (SSL_set1_host(s, verify_host) != 1 ||
		           SSL_set_tlsext_host_name(s, verify_host) != 1) {
			goto fail;
		}
	}
	SSL_set_connect_state(s);
	return s;
fail:
	ERR_clear_error();
	SSL_free(s);
	return NULL;
}

int tls_connect(struct ssl_st *s, char *why, size_t whylen)
{
	int r, e;
	long vr;

	ERR_clear_error();
	r = SSL_connect(s);
	if (r == 1)
		return 0;
	e = SSL_get_error(s, r);
	if (e == SSL_ERROR_WANT_READ)
		return TLS_WANT_READ;
	if (e == SSL_ERROR_WANT_WRITE)
		return TLS_WANT_WRITE;
	vr = SSL_get_verify_result(s);
	if (vr != X509_V_OK) {
		snprintf(why, whylen, "TLS handshake: the server's certificate: %s",
		         X509_verify_cert_error_string(vr));
		ERR_clear_error();
	} else {
		char err[256];

		if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && !ERR_peek_error()))
			snprintf(err, sizeof(err), "closed by the server");
		else
			last_error(err, sizeof(err));
		snprintf(why, whylen, "TLS handshake: %s", err);
	}
	ERR_clear_error();
	return TLS_FAIL;
}

const char *tls_version(const struct ssl_st *s)
{
	return SSL_get_version(s);
}

const char *tls_cipher(const struct ssl_st *s)
{
	return SSL_get_cipher_name(s);
}

void tls_free(struct ssl_st *s)
{
	if (!s)
		return;
	if (SSL_is_init_finished(s))
		SSL_shutdown(s); /* non-blocking: close_notify if the socket takes it */
	ERR_clear_error();
	SSL_free(s);
}
