/*
 * scripted_server.h - a MySQL server played by a test, one connection over
 * one socket (a socketpair, an accepted TCP connection), without a real
 * server: it sends a v10 handshake, hands the test every request (the login,
 * an auth switch reply, each command) and writes whatever the test answers:
 * OK, ERR, EOF, text result sets, COM_STMT_PREPARE answers, auth switches,
 * any packet, any bytes. Sequence ids follow the request answered. Writes
 * can be made to trickle (a few bytes per ss_io), so that a reader sees
 * packets split anywhere.
 *
 * Non-blocking and single-threaded: the test calls ss_io() to move bytes and
 * ss_next() to take requests, from its own loop. It checks nothing the
 * client sends (any password logs in unless the test answers ERR): what is
 * right is the test's to decide.
 *
 * By default it presents itself as MySQL 8 (CLIENT_LONG_PASSWORD,
 * session tracking, DEPRECATE_EOF); ss_opts chooses MariaDB's form or older
 * capabilities.
 */
#ifndef MYSTEER_TESTS_SCRIPTED_SERVER_H
#define MYSTEER_TESTS_SCRIPTED_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/proto.h"

/* What a MySQL 8.0 server offers. */
#define SS_CAPS_MYSQL8                                                                             \
	(CAP_LONG_PASSWORD | CAP_FOUND_ROWS | CAP_LONG_FLAG | CAP_CONNECT_WITH_DB |                \
	 CAP_NO_SCHEMA | CAP_IGNORE_SPACE | CAP_PROTOCOL_41 | CAP_INTERACTIVE | CAP_TRANSACTIONS | \
	 CAP_SECURE_CONNECTION | CAP_MULTI_STATEMENTS | CAP_MULTI_RESULTS | CAP_PS_MULTI_RESULTS | \
	 CAP_PLUGIN_AUTH | CAP_CONNECT_ATTRS | CAP_PLUGIN_AUTH_LENENC | CAP_SESSION_TRACK |        \
	 CAP_DEPRECATE_EOF)
/* What a MariaDB 10.11 server offers (no CLIENT_MYSQL: extended caps follow). */
#define SS_CAPS_MARIADB (SS_CAPS_MYSQL8 & ~CAP_LONG_PASSWORD)

struct ss_opts {
	uint32_t caps;           /* offered; 0: SS_CAPS_MYSQL8 */
	uint32_t ext_caps;       /* MariaDB's extended ones, when caps lack CAP_LONG_PASSWORD */
	const char *version;     /* NULL: "8.0.36" */
	const char *plugin;      /* NULL: mysql_native_password */
	uint32_t conn_id;        /* 0: 1 */
	uint16_t status;         /* in the handshake; 0: SST_AUTOCOMMIT */
	const uint8_t *scramble; /* SCRAMBLE_LEN bytes; NULL: a fixed one */
};

enum ss_phase {
	SS_LOGIN,   /* the handshake went out: the next request is the login */
	SS_AUTH,    /* an auth switch went out: the next request is its reply */
	SS_COMMAND, /* logged in (the test answered OK): requests are commands */
	SS_CLOSED,  /* ss_close() or the peer closed */
};

struct ss_req {
	enum ss_phase phase; /* what the request is */
	const uint8_t *p;    /* its payload (joined), valid until the next ss_ call */
	size_t n;
	uint8_t seq;   /* its (last fragment's) sequence id */
	bool login_ok; /* SS_LOGIN: the handshake response parsed into login */
	struct hs_response login;
};

struct ss_server;

/* A server on fd (non-blocking; the server owns it): the handshake is queued.
 * NULL when out of memory (fd is closed). */
struct ss_server *ss_new(int fd, const struct ss_opts *o);
void ss_free(struct ss_server *s);
int ss_fd(const struct ss_server *s);
enum ss_phase ss_phase(const struct ss_server *s);
/* The capabilities in use: offered ones the login asked for (before the
 * login: the offered ones). */
uint32_t ss_caps(const struct ss_server *s);
/* Bytes queued and not yet written. */
size_t ss_pending(const struct ss_server *s);

/* Writes what is queued (at most the trickle size) and reads what came.
 * 1: bytes moved, 0: nothing to do now, -1: the peer is gone or the server
 * is closed. */
int ss_io(struct ss_server *s);
/* The next whole request into *r: 1, 0 when none is whole yet, -1 when the
 * bytes are not packets (bad sequence ids, over 16 MB). */
int ss_next(struct ss_server *s, struct ss_req *r);

/* ---- answers to the last request taken ---- */

struct ss_ok {
	uint64_t affected, insert_id;
	uint16_t status; /* 0 here means SST_AUTOCOMMIT */
	uint16_t warnings;
	const char *info;     /* NULL: none */
	const uint8_t *state; /* session state information (ss_state_*), NULL: none */
	size_t state_len;
};

/* OK (NULL: a plain one). After a login it also means "logged in". */
void ss_ok(struct ss_server *s, const struct ss_ok *ok);
void ss_err(struct ss_server *s, uint16_t code, const char *sqlstate, const char *msg);
void ss_eof(struct ss_server *s, uint16_t warnings, uint16_t status);
/* A text result set: ncols column definitions (names[i], NULL: "c<i>"), the
 * end of the columns, nrows rows of cells[row * ncols + col] (NULL: SQL
 * NULL), then the end (EOF, or an OK with 0xfe under DEPRECATE_EOF) with
 * status (0: SST_AUTOCOMMIT; add SST_MORE_RESULTS for another to follow). */
void ss_result(struct ss_server *s, unsigned ncols, const char *const *names, unsigned nrows,
               const char *const *cells, uint16_t status);
/* The answer to COM_STMT_PREPARE: the statement id, then nparams and ncols
 * definitions, each list ended by EOF unless DEPRECATE_EOF. */
void ss_prepare_ok(struct ss_server *s, uint32_t stmt_id, uint16_t ncols, uint16_t nparams,
                   uint16_t warnings);
/* An auth switch to plugin with data (the reply is the next SS_AUTH request). */
void ss_auth_switch(struct ss_server *s, const char *plugin, const uint8_t *data, size_t n);
/* Any payload as the next packet (split at 16 MB). During a login, one led
 * by 0x00 counts as the OK: a client takes it for one. */
void ss_packet(struct ss_server *s, const void *p, size_t n);
/* Bytes as they are, no header, no sequence id counted. */
void ss_raw(struct ss_server *s, const void *p, size_t n);
/* From now on ss_io writes at most chunk bytes per call (0: all it can). */
void ss_trickle(struct ss_server *s, size_t chunk);
/* Closes the connection now (what is queued is dropped). */
void ss_close(struct ss_server *s);

/* ---- session state information, for ss_ok.state ---- */

/* A system variable entry (session_track_system_variables). Returns the
 * bytes written, 0 when cap is too small. */
size_t ss_state_sysvar(uint8_t *dst, size_t cap, const char *name, const char *value);
/* A state-change entry (session_track_state_change = ON). */
size_t ss_state_changed(uint8_t *dst, size_t cap);

#endif
