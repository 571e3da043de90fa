/*
 * test_tls.c - the proxy's TLS contexts (proxy/tls.c): both sides built on
 * one base (TLS 1.2 at least, no renegotiation, partial and moving writes),
 * the server side preferring its own ciphers, and the errors that name the
 * file at fault. The handshakes themselves: proxy_tls.sh and
 * proxy_backend_tls.sh.
 */
#include <check.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "proxy/tls.h"

static void check_base(SSL_CTX *ctx)
{
	long mode = SSL_CTX_get_mode(ctx);

	ck_assert_int_eq(SSL_CTX_get_min_proto_version(ctx), TLS1_2_VERSION);
	ck_assert(SSL_CTX_get_options(ctx) & SSL_OP_NO_RENEGOTIATION);
	ck_assert(mode & SSL_MODE_ENABLE_PARTIAL_WRITE);
	ck_assert(mode & SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	ck_assert(mode & SSL_MODE_RELEASE_BUFFERS);
}

START_TEST(client_ctx)
{
	char err[256];
	SSL_CTX *ctx = tls_client_ctx_new(NULL, err, sizeof(err));

	ck_assert_ptr_nonnull(ctx);
	ck_assert_str_eq(err, "");
	check_base(ctx);
	ck_assert(!(SSL_CTX_get_options(ctx) & SSL_OP_CIPHER_SERVER_PREFERENCE));
	ck_assert_int_eq(SSL_CTX_get_verify_mode(ctx), SSL_VERIFY_NONE);
	tls_ctx_free(ctx);

	ctx = tls_client_ctx_new("/nonexistent/ca.pem", err, sizeof(err));
	ck_assert_ptr_null(ctx);
	ck_assert_msg(!strncmp(err, "proxy: backend tls_ca /nonexistent/ca.pem: ", 43), "%s", err);
}
END_TEST

START_TEST(server_ctx)
{
	char err[256];
	struct config *cfg = calloc(1, sizeof(*cfg));

	ck_assert_ptr_nonnull(cfg);
	/* no tls_cert: no TLS, and no error */
	ck_assert_ptr_null(tls_ctx_new(cfg, err, sizeof(err)));
	ck_assert_str_eq(err, "");
	/* a certificate that is not there is named */
	strcpy(cfg->tls_cert, "/nonexistent/cert.pem");
	strcpy(cfg->tls_key, "/nonexistent/key.pem");
	ck_assert_ptr_null(tls_ctx_new(cfg, err, sizeof(err)));
	ck_assert_msg(!strncmp(err, "proxy: tls_cert /nonexistent/cert.pem: ", 39), "%s", err);
	free(cfg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tls");
	TCase *tc = tcase_create("tls");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, client_ctx);
	tcase_add_test(tc, server_ctx);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
