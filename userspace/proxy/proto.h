/*
 * proto.h - the MySQL client/server protocol codec of the 6450 proxy.
 *
 * Pure functions over byte buffers, no I/O and no allocation, so that the
 * engine can call them on its own buffers and the fuzzer can call them on
 * anything: packet framing (sequence ids, 16 MB split packets), length-encoded
 * integers and strings, the v10 handshake in both directions, OK/ERR/EOF,
 * mysql_native_password, and the tracking of where a response ends so that
 * results can be streamed without being buffered whole.
 *
 * Every decoder takes (buf, len) and returns -1 on malformed input; none reads
 * outside [buf, buf + len).
 */
#ifndef MYSTEER_PROXY_PROTO_H
#define MYSTEER_PROXY_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Capability flags (named after the protocol's CLIENT_* without clashing with
 * mysql.h, which tests include next to this header). */
#define CAP_LONG_PASSWORD      (1u << 0)
#define CAP_FOUND_ROWS         (1u << 1)
#define CAP_LONG_FLAG          (1u << 2)
#define CAP_CONNECT_WITH_DB    (1u << 3)
#define CAP_NO_SCHEMA          (1u << 4)
#define CAP_COMPRESS           (1u << 5)
#define CAP_LOCAL_FILES        (1u << 7)
#define CAP_IGNORE_SPACE       (1u << 8)
#define CAP_PROTOCOL_41        (1u << 9)
#define CAP_INTERACTIVE        (1u << 10)
#define CAP_SSL                (1u << 11)
#define CAP_TRANSACTIONS       (1u << 13)
#define CAP_SECURE_CONNECTION  (1u << 15)
#define CAP_MULTI_STATEMENTS   (1u << 16)
#define CAP_MULTI_RESULTS      (1u << 17)
#define CAP_PS_MULTI_RESULTS   (1u << 18)
#define CAP_PLUGIN_AUTH        (1u << 19)
#define CAP_CONNECT_ATTRS      (1u << 20)
#define CAP_PLUGIN_AUTH_LENENC (1u << 21)
#define CAP_SESSION_TRACK      (1u << 23)
#define CAP_DEPRECATE_EOF      (1u << 24)

/* What the proxy offers clients, and asks of backends: the intersection with
 * the client's flags is what a session uses on both sides. CAP_LONG_PASSWORD
 * (CLIENT_MYSQL) is left out, as MariaDB servers do: without it, the last 4
 * of the handshake's reserved bytes carry MariaDB's extended capabilities. */
#define PROXY_CAPS                                                                                 \
	(CAP_FOUND_ROWS | CAP_LONG_FLAG | CAP_CONNECT_WITH_DB | CAP_NO_SCHEMA | CAP_IGNORE_SPACE | \
	 CAP_PROTOCOL_41 | CAP_INTERACTIVE | CAP_TRANSACTIONS | CAP_SECURE_CONNECTION |            \
	 CAP_MULTI_STATEMENTS | CAP_MULTI_RESULTS | CAP_PS_MULTI_RESULTS | CAP_PLUGIN_AUTH |       \
	 CAP_CONNECT_ATTRS | CAP_PLUGIN_AUTH_LENENC | CAP_SESSION_TRACK | CAP_DEPRECATE_EOF)

/* MariaDB's extended capabilities (bits 32-63 of the 64-bit set, here as
 * their own word), exchanged when CLIENT_MYSQL is not set. The proxy passes
 * on only what it forwards untouched: with EXTENDED_METADATA a column
 * definition carries the data type's extended name and format (json, uuid,
 * a geometry's type), which the proxy never reads. */
#define MARIADB_CAP_EXTENDED_METADATA (1u << 3)
#define PROXY_EXT_CAPS                MARIADB_CAP_EXTENDED_METADATA

/* Server status flags */
#define SST_IN_TRANS              0x0001
#define SST_AUTOCOMMIT            0x0002
#define SST_MORE_RESULTS          0x0008
#define SST_CURSOR_EXISTS         0x0040
#define SST_LAST_ROW_SENT         0x0080
#define SST_IN_TRANS_READONLY     0x2000
#define SST_SESSION_STATE_CHANGED 0x4000

enum mysql_cmd {
	COM_SLEEP = 0x00,
	COM_QUIT = 0x01,
	COM_INIT_DB = 0x02,
	COM_QUERY = 0x03,
	COM_FIELD_LIST = 0x04,
	COM_STATISTICS = 0x09,
	COM_PING = 0x0e,
	COM_CHANGE_USER = 0x11,
	COM_STMT_PREPARE = 0x16,
	COM_STMT_EXECUTE = 0x17,
	COM_STMT_SEND_LONG_DATA = 0x18,
	COM_STMT_CLOSE = 0x19,
	COM_STMT_RESET = 0x1a,
	COM_SET_OPTION = 0x1b,
	COM_STMT_FETCH = 0x1c,
	COM_RESET_CONNECTION = 0x1f,
};

#define PKT_HDR       4
#define PKT_MAX_FRAG  0xffffffu /* a fragment this long continues in the next */
#define SCRAMBLE_LEN  20
#define SHA1_LEN      20
#define NATIVE_PLUGIN "mysql_native_password"
#define SHA2_PLUGIN   "caching_sha2_password"

/* ---- framing ---- */

struct pkt_frag {
	uint32_t len; /* payload bytes of this fragment */
	uint8_t seq;
};

/* Reads a fragment header. Returns 1 when buf holds the header, 0 when more
 * bytes are needed. */
int pkt_frag_hdr(const uint8_t *buf, size_t len, struct pkt_frag *f);
void pkt_put_hdr(uint8_t *dst, uint32_t len, uint8_t seq);

/*
 * Finds a whole logical packet (all its fragments) at buf. Returns 1 and sets
 * *total (bytes of buf it spans, headers included), *payload (payload bytes
 * without headers) and *seq (the last fragment's sequence id); 0 when more
 * bytes are needed; -1 when the payload would exceed max or the sequence ids
 * are not consecutive.
 */
int pkt_whole(const uint8_t *buf, size_t len, size_t max, size_t *total, size_t *payload,
              uint8_t *seq);

/* Copies the payload of the whole packet at src (as found by pkt_whole) to
 * dst, dropping the fragment headers; dst may equal src (moves down). */
void pkt_join(uint8_t *dst, const uint8_t *src, size_t payload);

/* ---- basic types ---- */

/* A cursor over a payload. Reads past the end set err and return zeros. */
struct rd {
	const uint8_t *p, *end;
	bool err;
};

static inline void rd_init(struct rd *r, const uint8_t *p, size_t len)
{
	r->p = p;
	r->end = p + len;
	r->err = false;
}

static inline size_t rd_left(const struct rd *r)
{
	return (size_t)(r->end - r->p);
}

uint64_t rd_int(struct rd *r, unsigned nbytes);
/* Length-encoded integer; *is_null set for 0xfb (NULL in a text row). */
uint64_t rd_lenenc(struct rd *r, bool *is_null);
const uint8_t *rd_bytes(struct rd *r, size_t n);
/* NUL-terminated string: returns it and its length, without the NUL. */
const char *rd_cstr(struct rd *r, size_t *n);
const uint8_t *rd_lenenc_str(struct rd *r, size_t *n);

/* Writers into a bounded buffer; on overflow they set err and stop writing. */
struct wr {
	uint8_t *p, *start, *end;
	bool err;
};

static inline void wr_init(struct wr *w, uint8_t *buf, size_t cap)
{
	w->p = w->start = buf;
	w->end = buf + cap;
	w->err = false;
}

static inline size_t wr_len(const struct wr *w)
{
	return (size_t)(w->p - w->start);
}

void wr_int(struct wr *w, uint64_t v, unsigned nbytes);
void wr_lenenc(struct wr *w, uint64_t v);
void wr_bytes(struct wr *w, const void *b, size_t n);
void wr_cstr(struct wr *w, const char *s); /* with its NUL */
void wr_lenenc_str(struct wr *w, const void *b, size_t n);
size_t lenenc_size(uint64_t v);

/* ---- handshake ---- */

struct handshake {
	char server_version[64];
	uint32_t conn_id;
	uint8_t scramble[SCRAMBLE_LEN];
	size_t scramble_len;
	uint32_t caps;
	uint32_t ext_caps; /* MariaDB's, when caps lack CAP_LONG_PASSWORD */
	uint8_t charset;
	uint16_t status;
	char plugin[64];
};

/* Writes the payload of a v10 handshake (without packet header); returns its
 * length or -1 when cap is too small. */
int hs_build(uint8_t *dst, size_t cap, const struct handshake *h);
int hs_parse(const uint8_t *p, size_t len, struct handshake *h);

struct hs_response {
	uint32_t caps;
	uint32_t ext_caps; /* MariaDB's, when caps lack CAP_LONG_PASSWORD */
	uint32_t max_packet;
	uint8_t charset;
	bool ssl_request; /* the short form: the client wants TLS */
	char user[128];
	uint8_t auth[256];
	size_t auth_len;
	char db[256];
	bool has_db;
	char plugin[64];
	const uint8_t *attrs; /* connect attributes (lenenc pairs), into the input */
	size_t attrs_len;
};

int hsr_parse(const uint8_t *p, size_t len, struct hs_response *r);
/* Builds a handshake response payload for a backend; returns its length or -1. */
int hsr_build(uint8_t *dst, size_t cap, const struct hs_response *r);

/* COM_CHANGE_USER: the new user, its reply to the session's scramble, the
 * schema (empty: none), the character set when sent, the client's plugin
 * ("" when not sent). */
struct change_user {
	char user[128];
	uint8_t auth[256];
	size_t auth_len;
	char db[256];
	uint16_t charset;
	bool has_charset;
	char plugin[64];
};
/* The whole payload (0x11 first) of a session with caps; -1 when malformed. */
int chu_parse(const uint8_t *p, size_t len, uint32_t caps, struct change_user *o);

/* AuthSwitchRequest: 0xfe, plugin name NUL, data. */
int auth_switch_build(uint8_t *dst, size_t cap, const char *plugin, const uint8_t *data, size_t n);
int auth_switch_parse(const uint8_t *p, size_t len, char *plugin, size_t plugin_cap, uint8_t *data,
                      size_t *n);

/* ---- OK / ERR / EOF ---- */

struct ok_pkt {
	uint64_t affected, insert_id;
	uint16_t status, warnings;
	const uint8_t *info; /* human-readable info, into the input */
	size_t info_len;
	const uint8_t *state; /* session state changes (SESSION_TRACK), into the input */
	size_t state_len;
};

int ok_parse(const uint8_t *p, size_t len, uint32_t caps, struct ok_pkt *ok);
/* header: 0x00 for OK, 0xfe for the OK that ends a result under DEPRECATE_EOF. */
int ok_build(uint8_t *dst, size_t cap, uint8_t header, uint64_t affected, uint64_t insert_id,
             uint16_t status, uint16_t warnings);
int err_build(uint8_t *dst, size_t cap, uint16_t code, const char *sqlstate, const char *msg);
struct err_pkt {
	uint16_t code;
	char sqlstate[6];
	char msg[256];
};
int err_parse(const uint8_t *p, size_t len, struct err_pkt *e);
int eof_build(uint8_t *dst, size_t cap, uint16_t warnings, uint16_t status);

/*
 * Finds the GTID of a session-track "last_gtid" system variable in the state
 * information of an OK packet. Returns 1 and copies it (NUL-terminated) to
 * gtid, 0 when absent, -1 when malformed.
 */
int ok_find_last_gtid(const struct ok_pkt *ok, char *gtid, size_t cap);

/* Session-state information entry types (the OK packet's state field). */
#define TRACK_SYSVARS      0 /* SESSION_TRACK_SYSTEM_VARIABLES */
#define TRACK_STATE_CHANGE 2 /* SESSION_TRACK_STATE_CHANGE */

/*
 * Whether the OK packet's state information has a state-change entry
 * (session_track_state_change: the statement changed user variables,
 * temporary tables, session variables, ...). 1 or 0, -1 when malformed.
 */
int ok_state_changed(const struct ok_pkt *ok);

/* What ok_drop_state removes: system variable entries naming sysvar (NULL:
 * none), and the state-change entry when state_change is set. */
struct ok_state_drop {
	const char *sysvar;
	bool state_change;
};

/*
 * Removes the session-state entries `what` names from the OK packet payload p
 * (0x00 or, under DEPRECATE_EOF, 0xfe header), fixing the state length and
 * clearing SERVER_SESSION_STATE_CHANGED when no state is left. Writes the
 * result to dst, which may be p: it is never longer and every byte only moves
 * down. Returns the new payload length when an entry went, 0 when there is
 * none, -1 when p is not a well-formed OK; on 0 and -1 dst is untouched and p
 * is to be forwarded as it is.
 */
int ok_drop_state(uint8_t *dst, const uint8_t *p, size_t len, uint32_t caps,
                  const struct ok_state_drop *what);
/* ok_drop_state of the system variable entries naming `name` only. */
int ok_drop_sysvar(uint8_t *dst, const uint8_t *p, size_t len, uint32_t caps, const char *name);

/*
 * Rewrites an OK packet payload (0x00 or 0xfe header) of a connection with
 * CLIENT_SESSION_TRACK into what the server sends a client without it: no
 * session state, SERVER_SESSION_STATE_CHANGED cleared, the info string kept
 * only when it is not empty. (The protocol documentation has the info run to
 * the end of the packet for such a client; MariaDB and MySQL send it with
 * its length prefix all the same, and libmysqlclient reads it so.) The
 * proxy logs in to backends with session tracking whatever the client
 * asked, for its own last_gtid and state-change tracking. dst may be p
 * (never longer). Returns the new length, -1 when p is not a well-formed OK
 * (then dst is untouched).
 */
int ok_untrack(uint8_t *dst, const uint8_t *p, size_t len);

/* ---- responses ---- */

enum resp_kind {
	RESP_GENERIC = 0, /* COM_QUERY, COM_STMT_EXECUTE, COM_STMT_FETCH, ... */
	RESP_PREPARE,     /* COM_STMT_PREPARE */
	RESP_FIELD_LIST,  /* COM_FIELD_LIST: column defs up to EOF */
	RESP_ONE_PACKET,  /* COM_STATISTICS: one packet, whatever it holds */
	RESP_ROWS,        /* COM_STMT_FETCH: rows up to EOF */
};

enum resp_state {
	RS_FIRST = 0,
	RS_PREP_PARAMS,
	RS_PREP_PARAMS_EOF,
	RS_PREP_COLS,
	RS_PREP_COLS_EOF,
	RS_COLS,
	RS_COLS_EOF,
	RS_ROWS,
	RS_FIELDS,
	RS_INFILE, /* the server asked for a LOCAL INFILE: its OK or ERR comes after the file */
	RS_DONE,
	RS_ERROR, /* malformed: the connection is unusable */
};

struct resp_tracker {
	enum resp_kind kind;
	enum resp_state state;
	uint32_t caps; /* the negotiated capabilities of the connection */
	uint64_t left; /* column or parameter definitions still to come */
	uint64_t prep_cols;
	uint16_t status;   /* of the last OK/EOF */
	uint16_t warnings; /* the most any OK/EOF of the answer reported */
	bool saw_err;
	bool in_frag; /* inside a split packet: continuation fragments ignored */
	bool ok_now;  /* the fragment fed last was a whole OK packet (last_ok) */
	struct ok_pkt last_ok;
	uint32_t stmt_id; /* RESP_PREPARE: the backend's statement id */
	uint16_t prep_params, prep_ncols;
};

void resp_init(struct resp_tracker *t, enum resp_kind kind, uint32_t caps);
/*
 * Feeds one fragment (its header said frag_len bytes; p holds its first n of
 * them, n = min(frag_len, what is buffered), and n must be frag_len whenever
 * the first byte is 0x00, 0xfe or 0xff and frag_len < PKT_MAX_FRAG, because
 * then the packet is small and may be an OK/EOF/ERR to parse). Returns the new
 * state.
 */
enum resp_state resp_feed(struct resp_tracker *t, const uint8_t *p, size_t n, uint32_t frag_len);

/* Whether resp_feed needs the whole fragment to decide. */
bool resp_needs_whole(const struct resp_tracker *t, const uint8_t *p, size_t n, uint32_t frag_len);

/* ---- mysql_native_password ---- */

void sha1(const void *a, size_t alen, const void *b, size_t blen, uint8_t out[SHA1_LEN]);
/* scramble for a handshake: 20 printable bytes, never NUL. */
int scramble_fill(uint8_t s[SCRAMBLE_LEN]);

/* Kernel randomness read a page at a time, so a login costs no getrandom(2)
 * of its own (one read serves about 200 scrambles). One thread owns each. */
struct rnd_pool {
	uint8_t buf[4096];
	size_t left; /* unused bytes at the end of buf */
};
/* scramble_fill() drawing from the pool; bytes handed out are wiped. */
int scramble_fill_pooled(struct rnd_pool *rp, uint8_t s[SCRAMBLE_LEN]);
/* stage2 = SHA1(SHA1(password)) */
void native_stage2(const char *password, size_t len, uint8_t stage2[SHA1_LEN]);
/*
 * Verifies a client's reply to scramble against stage2. On success returns 0
 * and fills stage1 = SHA1(password), with which the proxy logs in to backends.
 */
int native_verify(const uint8_t *scramble, const uint8_t *reply, size_t reply_len,
                  const uint8_t stage2[SHA1_LEN], uint8_t stage1[SHA1_LEN]);
/* The reply to a backend's scramble, from stage1 (and its SHA1, stage2). */
void native_reply(const uint8_t *scramble, const uint8_t stage1[SHA1_LEN], uint8_t reply[SHA1_LEN]);

/* A column definition (p, n bytes) of a server without MariaDB's extended
 * metadata, in the form a client that negotiated
 * MARIADB_CAP_EXTENDED_METADATA reads: an empty extended-metadata string
 * after org_name. Written to dst (cap bytes); the new length, or -1 when p
 * is not a column definition or dst too small. */
int coldef_add_ext_meta(const uint8_t *p, size_t n, uint8_t *dst, size_t cap);

/* ---- caching_sha2_password ---- */

#define SHA256_LEN 32
/* The AuthMoreData packet (0x01, then data) and the status bytes it carries
 * in caching_sha2_password: the client asks for the RSA public key
 * (SHA2_PUBKEY_REQUEST, its own packet), the server says the scramble
 * matched its cache (SHA2_FAST_OK, then an OK) or that the password itself
 * must come (SHA2_FULL_AUTH). */
#define MORE_DATA           0x01
#define SHA2_PUBKEY_REQUEST 0x02
#define SHA2_FAST_OK        0x03
#define SHA2_FULL_AUTH      0x04

void sha256(const void *a, size_t alen, const void *b, size_t blen, uint8_t out[SHA256_LEN]);
/* What a server caches of a password: SHA256(SHA256(password)). */
void sha2_digest2(const char *password, size_t len, uint8_t d2[SHA256_LEN]);
/* A client's fast-auth reply to scramble (SCRAMBLE_LEN bytes):
 * SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) || scramble). */
void sha2_reply(const char *password, size_t len, const uint8_t *scramble,
                uint8_t reply[SHA256_LEN]);
/* Fast authentication: 0 when reply (n bytes) answers scramble for the
 * cached d2, -1 when it does not (the same work either way). */
int sha2_verify(const uint8_t *scramble, const uint8_t *reply, size_t n,
                const uint8_t d2[SHA256_LEN]);
/* p XOR scramble repeated: how the password is put before RSA encryption
 * (and taken back after decryption). */
void sha2_xor(uint8_t *p, size_t n, const uint8_t *scramble);
/* AuthMoreData: 0x01 then data; its length or -1. */
int more_data_build(uint8_t *dst, size_t cap, const uint8_t *data, size_t n);

struct evp_pkey_st;
/* RSA_PKCS1_OAEP decryption of in (n bytes) with the private key into out
 * (cap bytes); the length, or -1 (not a ciphertext of that key). */
int sha2_rsa_decrypt(struct evp_pkey_st *key, const uint8_t *in, size_t n, uint8_t *out,
                     size_t cap);
/* A client's side of the RSA exchange: (password NUL) XOR scramble,
 * RSA_PKCS1_OAEP-encrypted with the server's public key (pem, pem_len
 * bytes, as its AuthMoreData carries it) into out (cap bytes); the length,
 * or -1 (not a public key, or the password too long for it). */
int sha2_rsa_encrypt(const uint8_t *pem, size_t pem_len, const char *password, size_t len,
                     const uint8_t *scramble, uint8_t *out, size_t cap);

#endif
