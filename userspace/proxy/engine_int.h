/*
 * engine_int.h - the 6450 proxy engine's insides, shared by its files
 * (engine.c, client.c, route.c, history.c, ryw.c, backend.c, answer.c, pool.c, wait.c,
 * mux.c, stmt.c, ...) and by nothing else: the session, backend connection, worker and
 * engine structures, the limits, the buffer helpers (static inline: they are
 * on every packet's path, and there is no LTO), and the functions the files
 * call across. The engine's API for mysteerd and the tests is proxy.h.
 */
#ifndef MYSTEER_PROXY_ENGINE_INT_H
#define MYSTEER_PROXY_ENGINE_INT_H

#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <pthread.h>
#include <time.h>

#include "classify/classify.h"
#include "common/evloop.h"
#include "common/log.h"
#include "common/retry.h"
#include "common/topology.h"
#include "proxy/proxy.h"
#include "proxy/routines.h"
#include "proxy/proto.h"
#include "proxy/users.h"

#define SERVER_VERSION  "5.5.5-10.11.6-MariaDB-mysteer"
#define CHARSET_UTF8MB4 45
#define READ_CHUNK      65536
#define OUT_HIGH_WATER  (4u << 20) /* stop reading a backend past this */
/* stop reading a client past this much pipelined input while its command
 * runs: TCP holds the rest, as it would in front of a server */
#define IN_HIGH_WATER (4u << 20)
/* take no further command of a client while this much of its output waits
 * to be sent: the answers the proxy makes itself (COM_PING, ERR) would
 * otherwise pile up for a client that pipelines without reading */
#define OUT_CMD_MAX (1u << 20)
/* A client buffer (input, or the command kept for a retry) grown past this
 * for a large packet counts whole toward max_client_buffer_bytes; smaller
 * ones are bounded by max_client_connections. */
#define CLIENT_BUF_FREE (64u << 10)
/* After the ERR that ends a session (a bound hit), what the client still
 * sends is read and dropped this long at most, so that it reads the ERR
 * rather than a connection reset. */
#define SHED_MS 2000
/* A pooled connection keeps the image of the history replayed on it (to
 * serve a session with the same one without a reset) only up to this. */
#define HIST_IMAGE_MAX (64u << 10)
/* a session gets back the connection it parked this recently (pool_take) */
#define AFFINITY_MS    5
#define MAX_RETRIES    2
#define SWEEP_MS       250
#define PROXY_MAX_IDS  TOPO_MAX_IDS
#define PS_KEY_BUCKETS 256
/* the sessions of all workers by connection id (ops.c) */
#define SESS_BUCKETS 1024
/* A worker's oldest waiter ticket for a backend when none of its sessions
 * waits for it (struct worker, oldest). */
#define WAIT_NONE UINT64_MAX
/* The largest packet read before login: a handshake response (user, auth
 * data, schema, plugin, connection attributes) is a few hundred bytes, and
 * clients cap their connection attributes at 64 KB. */
#define PREAUTH_MAX_PACKET (1u << 20)

enum ev_type { EV_LISTEN = 1, EV_CLIENT, EV_BACKEND, EV_WAKE };

struct buf {
	uint8_t *d;
	size_t off, len, cap; /* data is d[off, len) */
};

struct hist {
	uint8_t *p; /* a command payload: command byte + arguments */
	size_t n;
};

/*
 * A statement text of one user, shared by the worker's sessions: the key of
 * the server-side statements its backend connections cache (struct bstmt).
 * refs counts the client statements of the worker's sessions that use it;
 * when it drops to 0 every connection of the worker that caches it closes
 * it (skey_put). ncached counts those connections.
 */
struct skey {
	uint64_t hash;
	uint32_t refs;
	uint32_t ncached;
	struct skey *next; /* in the worker's bucket */
	char user[128];
	size_t len;
	uint8_t sql[]; /* len bytes */
};

/*
 * A server-side statement cached on a backend connection. A connection's
 * cache only holds statements prepared under its present schema and session
 * state: whatever may change how the server parses (a session statement run
 * or replayed there, another schema, a reset) empties it first, so the text
 * (and user) is the whole key within one connection.
 */
struct bstmt {
	struct skey *k;
	uint32_t xid;  /* the server's statement id on that connection */
	uint64_t used; /* the worker's ps_tick at its last PREPARE or EXECUTE there */
	/* the parameter types last bound to it there (the server keeps them for
	 * an EXECUTE that sends none), NULL before its first EXECUTE */
	uint8_t *types;
	size_t ntypes;
	/* parsed under a session state the connection has left, and kept only
	 * for the cursor open on it (stmt_cache_clear_for_state): a FETCH reads it, an
	 * EXECUTE prepares the statement again */
	bool stale;
};

/*
 * A client's prepared statement. The client sees our id; the backend
 * connections hold server-side statements of its key in their caches,
 * shared with the other sessions of the worker, and an EXECUTE uses the one
 * of the connection it got, or prepares one there in the same batch. The
 * statement is tied to no connection, so it keeps none from the pool.
 */
struct pstmt {
	uint32_t id;
	struct skey *key; /* the SQL, and the worker's count of its users */
	enum cls_token tok;
	uint32_t flags;
	enum cls_reason reason; /* the classifier's, for the rules that read c->cur_reason */
	uint16_t nparams;
	uint8_t *types;      /* 2 * nparams bytes from the last EXECUTE that bound them */
	struct buf longdata; /* SEND_LONG_DATA payloads, each led by its 4-byte length */
	bool longdata_over;  /* the session's passed max_packet_size: the next EXECUTE fails */
	/* the connection its last EXECUTE opened a cursor on (COM_STMT_FETCH
	 * goes there), NULL for none; that connection stays with the session */
	struct bconn *cursor_b;
	struct pstmt *next;
};

/* FOUND_ROWS(), ROW_COUNT(), SHOW WARNINGS...: reads what the statement
 * before left on its connection, so it runs (and is prepared) there. */
static inline bool ps_reads_prev_state(const struct pstmt *ps)
{
	return ps->reason == CLS_R_PREV_RESULT || (ps->flags & CLS_F_PREV_STATE);
}

/* C_SHA2: caching_sha2_password asked for the password itself (full
 * authentication); the client's next packet is it, or a request for the
 * RSA public key */
enum cstate { C_HANDSHAKE, C_SWITCH, C_SHA2, C_IDLE, C_BUSY };
/* B_TLS: the SSLRequest is sent ([backend:NAME] tls), the TLS handshake
 * runs; the login's handshake response waits in tls_hold */
enum bstate { B_CONNECTING, B_HANDSHAKE, B_TLS, B_AUTH, B_READY };

struct worker;
struct bconn;

/* A backend that refuses a warm login (a user it does not know, a password
 * it does not take, max_connections) would otherwise be asked again every
 * sweep by every worker: the next try waits SWEEP_MS, doubling up to
 * WARM_RETRY_MAX_MS, until a login succeeds. */
#define WARM_RETRY_MAX_MS 10000

struct client {
	enum ev_type type;  /* first: epoll data points here */
	uint64_t cmd_t0_us; /* when the statement in flight was classified (metrics) */
	/* the session is over (a bound was hit): its ERR is sent, what it
	 * still sends is dropped until it closes or deadline_ms (SHED_MS) */
	bool shedding, shut_wr;
	/* not logged in yet: in the worker's list of those, oldest first */
	bool preauth;
	struct client *pre_prev, *pre_next;
	/* a ghost: no socket, only the login of a user with a plain password,
	 * for warm pool connections (pool_min_idle); warming[id] counts the
	 * connections logging in; warm_retry[id] spaces out the logins to a
	 * backend that refused the last one */
	bool ghost;
	int *warming;
	struct retry *warm_retry;
	struct worker *w;
	int fd;
	enum cstate st;
	struct client *prev, *next;
	uint64_t deadline_ms;
	struct buf in, out;
	/* TLS (tls.c): the client's connection once it sent an SSLRequest;
	 * until its handshake is done (tls_accepting) nothing else is read
	 * or written; tls_want: the epoll events a read or write of it waits
	 * for besides the usual ones (a read that must write, or back) */
	struct ssl_st *tls;
	bool tls_accepting;
	uint32_t tls_want;
	/* client_idle_timeout_s counts from active_ms: its last bytes, or the
	 * end of its last command; client_packet_timeout_ms from pkt_since_ms:
	 * when the packet it is sending started to come (0: none) */
	uint64_t active_ms, pkt_since_ms;
	size_t buf_charged; /* its part of e->client_buf (client_buf_sync) */
	uint8_t scramble[SCRAMBLE_LEN], stage1[SHA1_LEN];
	bool empty_pw; /* the user's password is empty: backend logins send no reply */
	/* logging in with caching_sha2_password (else mysql_native_password);
	 * the RSA public key was sent; the sequence id of the proxy's next
	 * packet in C_SHA2 */
	bool sha2, rsa_sent;
	uint8_t auth_seq;
	/* a COM_CHANGE_USER authenticating: who the session was, taken back
	 * when the new user is refused (client.c, cmd_change_user); else NULL */
	struct chu_prev *chu_prev;
	char user[128], host[INET6_ADDRSTRLEN];
	char db0[256]; /* the schema named at connect: backends log in with it */
	char db[256];  /* the current schema, for the classifier */
	/* the schema before the USE or COM_INIT_DB in flight, which gets it
	 * back if the server refuses the change (db_change_end) */
	char db_before[256];
	bool db_pending;
	uint32_t caps;
	uint32_t ext_caps; /* MariaDB extended capabilities, of PROXY_EXT_CAPS */
	uint8_t charset;
	/* session */
	struct hist *hist;
	size_t nhist, hist_cap;
	/* the command in flight, the last entry, repeats entry hist_dup: that
	 * one goes when the command succeeds (hist_commit) */
	size_t hist_dup;
	bool has_hist_dup;
	/* bytes of the history's commands and of its prepared statements'
	 * texts: together within max_session_bytes */
	size_t hist_bytes, ps_bytes;
	bool in_trans, ro_trans, autocommit_off, pin_writer;
	/* what pinned it first (a static string), for the ERR when its writer
	 * is demoted (route_demoted) */
	const char *pin_why;
	uint64_t ryw_until_ms;
	/* what LAST_INSERT_ID() returns for the session, read from the writer
	 * connection an insert ran on before that went back to the pool
	 * (mux.c); lid_gen counts its changes (0: none yet, so lid is 0) */
	uint64_t lid;
	uint32_t lid_gen;
	struct bconn *wconn, *rconn, *last, *cur;
	/* the command in flight, kept whole until its answer starts, for a retry */
	struct buf cmd;
	enum resp_kind cur_kind;
	bool cur_write, fwd_started;
	bool cur_classified;    /* the command in flight is a statement: */
	enum cls_token cur_tok; /* its class */
	uint32_t cur_flags;     /* and CLS_F_* flags */
	enum cls_reason cur_reason;
	int retries;
	uint32_t exclude_id;
	bool has_exclude;
	/* of the command in flight; R_TARGET: the backend target_id (the KILL
	 * QUERY the proxy sends for a KILL, ops.c) */
	enum { R_WRITER, R_READER, R_LAST, R_TRX, R_TARGET } route;
	uint32_t target_id;
	/* the command in flight is that KILL QUERY: the thread gone there
	 * (ERR 1094) is a KILL done for the client (ops_kill_answer_gone) */
	bool kill_soft;
	/* the id of its handshake (CONNECTION_ID() through 6450), and its
	 * entry in the engine's registry of sessions (ops.c): reg_user and
	 * reg_next under e->sess_mu; running: the backend id (high 32 bits)
	 * and server thread id its statement runs on now, 0 for none;
	 * kill_conn: a KILL CONNECTION of another worker ends it */
	uint32_t conn_id;
	bool registered;
	char reg_user[128];
	struct client *reg_next;
	_Atomic uint64_t running;
	/* kill_query: a KILL QUERY came while no statement of it ran on a
	 * backend: one waiting for a connection ends (wait_kill) */
	_Atomic bool kill_conn, kill_query;
	/* LOAD DATA LOCAL INFILE: the server asked for the file (0xFB), whose
	 * packets the client sends now until an empty one (infile_pump):
	 * infile_left bytes of the packet in progress are still to come;
	 * infile_cont: that packet was 16 MB - 1 long, so an empty one after
	 * it continues it rather than ending the file */
	bool infile, infile_cont;
	uint32_t infile_left;
	bool cur_hist;          /* the command in flight is the last history entry */
	bool in_process;        /* client_process() is running: no nesting */
	struct bconn *trx_conn; /* the reader of a READ ONLY transaction */
	/* the reader the session's reads go to while it stays usable: one
	 * replica per session, chosen by weight (pick_reader) */
	uint32_t sticky_reader;
	uint32_t sticky_gen; /* the id's generation it was counted in (be_readers) */
	bool has_sticky_reader;
	/* the previous statement's connection went back to the pool clean: it
	 * is that pooled connection while its takes count is still this one
	 * (pool_reclaim_last: FOUND_ROWS() after a plain read) */
	bool has_parked_last;
	uint64_t parked_takes;
	struct pstmt *stmts, *cur_ps;
	char last_gtid[64]; /* of the session's last write, from the writer's OK */
	/* the last write ran on a writer connection without session tracking
	 * (a server without CLIENT_SESSION_TRACK), or failed (it may still
	 * have written): no last_gtid came, so read_your_writes = gtid falls
	 * back to the window */
	bool gtid_blind;
	uint32_t next_stmt_id;
	uint32_t nstmts;    /* statements in stmts: capped by ps_per_session */
	size_t ld_bytes;    /* long data held for all its statements */
	struct buf scratch; /* the rewritten EXECUTE */
	uint32_t events;    /* epoll interest now */
	bool closing;
	bool dead; /* freed at the end of the event batch */
	struct client *next_dead;
	/* waiting for a connection of a backend at its cap (the worker's queue,
	 * in ticket order over all workers) */
	bool waiting;
	bool must_wait; /* set by pool_conn_get: route_cmd queues the command */
	uint32_t want_id, wait_id;
	char want_name[TOPO_NAME_MAX], wait_name[TOPO_NAME_MAX];
	uint64_t wait_start, wait_deadline;
	uint64_t wait_ticket; /* its place over all workers (e->wait_tickets) */
	struct client *wait_prev, *wait_next;
	/* waiting for a writer while there is none (switchover.c): its command
	 * stays in c->cmd until one is published or sw_deadline passes */
	bool sw_waiting;
	bool sw_must_wait; /* set by get_writer: route_cmd queues the command */
	uint64_t sw_start, sw_deadline;
	struct client *sw_prev, *sw_next;
	/* the transaction open holds nothing but its BEGIN (sw_begin, the
	 * command packet): nothing ran in it yet, so it can start again on
	 * another writer; sw_replay_begin: it must, before the session's next
	 * command there (its connection to the old writer is gone) */
	bool sw_only_begin, sw_replay_begin;
	struct buf sw_begin;
	/* transaction replay (replay.c): the statements of the open
	 * transaction on the writer, each one a u32 length, the command
	 * packet and the u64 checksum of the answer the client had; rp_on: a
	 * transaction is being recorded; rp_bad: why it cannot be replayed
	 * (RP_OK: it can); rp_pending: its writer connection is gone, the
	 * transaction is replayed before the next command there */
	struct buf rp_log;
	uint32_t rp_n;
	bool rp_on, rp_pending;
	uint8_t rp_bad;
	uint8_t rp_tries;
};

struct bconn {
	enum ev_type type;
	struct worker *w;
	int fd;
	enum bstate st;
	struct client *c;
	uint32_t backend_id;
	uint32_t thread_id; /* the server's id of this connection (its handshake) */
	char name[TOPO_NAME_MAX];
	struct metric_series *m_stmts, *m_errors, *m_seconds, *m_added; /* proxy_metrics_answered */
	/* The statement in flight left for the backend: sent_pending from its
	 * queueing (send_cmd) until out is written whole on a ready connection
	 * (bconn_flush), when sent_us (mono_us) is taken: the backend's part of
	 * its time starts there (proxy_metrics_answered). */
	bool sent_pending;
	uint64_t sent_us;
	bool writer;
	struct buf in, out;
	struct buf lout; /* login packets: go before out, which waits for B_READY */
	/* TLS to the backend (tls != off): from the SSLRequest on, every byte
	 * goes through it; tls_want: the epoll events a read or write of it
	 * waits for besides the usual ones (TLS may write to read, or back) */
	struct ssl_st *tls;
	uint32_t tls_want;
	struct buf tls_hold; /* the handshake response, sent once TLS is up */
	/* the login: the server's scramble (caching_sha2_password's full
	 * authentication uses it again), whether the login is in
	 * caching_sha2_password and whether its RSA public key was asked for */
	uint8_t nonce[SCRAMBLE_LEN];
	bool sha2, rsa_asked;
	bool mysql; /* the server is MySQL (its handshake's version has no "MariaDB") */
	/* its client reads MariaDB's extended metadata, which the server (MySQL)
	 * does not send: column definitions get an empty one (coldef_fix) */
	bool add_ext_meta;
	/* it began with a PROXY header ([backend:NAME] proxy_protocol) naming
	 * pp_host, its client's address: only sessions from there take it */
	bool pp;
	char pp_host[INET6_ADDRSTRLEN];
	size_t hist_applied;
	/* server-side statements (struct bstmt): at most ps_per_conn, the least
	 * recently used closed first; shared by the sessions that take the
	 * connection while it is clean (a dirty one is reset, which empties it,
	 * before another session gets it) */
	struct bstmt *bst;
	uint32_t nbst, bst_cap;
	struct skey *prep_key;   /* the last internal command is a PREPARE of this */
	char schema[256];        /* while clean: its schema (login or pool_take's COM_INIT_DB) */
	bool tracking_gtid;      /* last_gtid added to session_track_system_variables */
	bool tracking_state;     /* session_track_state_change = ON (the proxy's) */
	bool state_changed;      /* the client's command in flight reported a state change */
	bool answer_ok;          /* its answer had an OK (a result set alone: no GTID) */
	bool state_tracked;      /* and was sent with tracking_state on */
	bool gtid_wait, gtid_ok; /* a MASTER_GTID_WAIT holds the client's command back */
	bool trans_open;         /* its last answer said: in a transaction or autocommit off */
	bool keep;            /* holds session state the history cannot rebuild (mux_keeps_state) */
	const char *keep_why; /* what that state is (a static string) */
	/* since its login or last reset, ran more than clean reads and
	 * mux_leaves_no_state() statements: reset when parked */
	bool dirty;
	char waited_gtid[64]; /* this replica is known to have applied it */
	/* LAST_INSERT_ID() here may differ from the session's c->lid: an insert
	 * ran (lid_held), a SELECT LAST_INSERT_ID() to learn it is in flight
	 * (lid_fetch, its answer in lid_seen); lid_gen: the c->lid_gen this
	 * connection has, 0 for a fresh or reset one (LAST_INSERT_ID() = 0) */
	bool lid_held, lid_fetch, lid_seen_ok;
	uint64_t lid_seen;
	/* the insert id of the last OK that changed LAST_INSERT_ID() here
	 * (lid_ok_set): the session's value if b is lost before it is read */
	bool lid_ok_set;
	uint64_t lid_ok;
	uint32_t lid_gen;
	/* LAST_INSERT_ID() here may be non-zero (since the last reset); parked
	 * without a reset, it is another session's (lid_foreign), which
	 * mux_lid_prologue replaces before the next session's first command */
	bool lid_touched, lid_foreign;
	/* only session history was replayed here, besides clean reads: no reset
	 * needed to give it to a session with the same history (pool_park); in
	 * the pool, that history (hist_img, from hist_image(); NULL: none) */
	bool hist_dirty;
	bool has_cursor; /* an EXECUTE opened a cursor here (until its reset) */
	uint8_t *hist_img;
	size_t hist_img_len;
	uint64_t hist_fp;
	/* in the worker's pool (c == NULL): whose it may become */
	bool pooled, resetting;
	const struct client *last_owner; /* compared, never followed: pool_take */
	uint64_t parked_ms;              /* now_ms() when last_owner parked it */
	uint64_t takes;                  /* times taken from the pool */
	struct bconn *pool_next;
	struct bconn *warm_next; /* in the worker's list of warm logins */
	uint64_t idle_since;
	char pool_user[128];
	uint32_t pool_caps, pool_ext_caps;
	uint8_t pool_charset;
	bool pool_has_db;
	int internal;  /* replayed commands whose answers are discarded */
	bool awaiting; /* the client's command is sent, its answer not finished */
	struct resp_tracker rt;
	uint32_t frag_left; /* payload bytes of the current fragment to pass on */
	bool frag_drop;
	uint32_t caps;
	uint32_t events;
	/* transaction replay (replay.c): the checksum of the answer coming;
	 * rp_frag: the rest of the split row in progress counts in it;
	 * rp_check: the replayed statements' answers are compared, after
	 * rp_skip internal answers of other commands, rp_idx the next one
	 * (at rp_off in the session's log) */
	uint64_t rp_sum;
	bool rp_frag, rp_check;
	int rp_skip;
	uint32_t rp_idx;
	size_t rp_off;
	bool dead;
	struct bconn *next_dead;
};

/* What the proxy does on a backend's connections, from its [backend:]
 * section: TLS (ctx: its client context when tls != off). */
struct be_conf {
	char name[TOPO_NAME_MAX];
	enum backend_tls tls;
	struct ssl_ctx_st *ctx;
	bool pp; /* proxy_protocol */
};

struct proxy_engine {
	struct worker *workers;
	int nworkers;
	/* the users now (users.h), replaced by reload under users_mu;
	 * users_gen counts the replacements (engine_worker_users) */
	struct user_table *users;
	pthread_mutex_t users_mu;
	_Atomic uint64_t users_gen;
	int max_clients, handshake_timeout_ms;
	uint32_t max_packet;
	/* the bounds of a client that reload may change ([proxy] keys) */
	_Atomic int client_packet_ms, client_idle_s, max_hist;
	_Atomic uint64_t max_client_buf, max_session_bytes;
	/* what the clients' buffers past CLIENT_BUF_FREE hold now, within
	 * max_client_buf (client.c) */
	_Atomic uint64_t client_buf;
	uint32_t ps_per_conn, ps_per_session; /* prepared statement caps (testenv.h) */
	_Atomic int ryw_mode, ryw_ms;
	_Atomic int pool_max, pool_idle_ms, pool_min_idle;
	_Atomic int nclients;
	_Atomic int nbconns;
	/* per backend id (ids above PROXY_MAX_IDS are not counted) */
	_Atomic uint64_t be_active[PROXY_MAX_IDS], be_opened[PROXY_MAX_IDS],
	    be_failed[PROXY_MAX_IDS];
	/* pool figures: idle now, warm connections still logging in, new
	 * connections, sessions served from the pool. be_active counts every
	 * open connection; what serves a client is be_active - idle - warming. */
	_Atomic int be_idle[PROXY_MAX_IDS], be_warming[PROXY_MAX_IDS];
	_Atomic uint64_t be_connects[PROXY_MAX_IDS], be_reused[PROXY_MAX_IDS];
	/* parked with a COM_RESET_CONNECTION, or without one (clean) */
	_Atomic uint64_t be_resets[PROXY_MAX_IDS], be_clean[PROXY_MAX_IDS];
	/* sessions waiting now for a connection (the backend at its cap, which
	 * be_active counts against), sessions that had to wait, waits that
	 * ran out */
	_Atomic int be_waiting[PROXY_MAX_IDS];
	_Atomic int waiting_total; /* be_waiting summed: 0 keeps wait_yield off */
	_Atomic uint64_t be_waits[PROXY_MAX_IDS], be_wait_timeouts[PROXY_MAX_IDS];
	/* server-side prepared statements the backend connections hold now
	 * (their caches, stmt.c), and those prepared since start */
	_Atomic int be_prepared[PROXY_MAX_IDS];
	_Atomic uint64_t be_prepares[PROXY_MAX_IDS];
	uint32_t wait_ms; /* [proxy] pool_wait_timeout_ms */
	/* the next wait's ticket: waits are served in ticket order per backend
	 * over all workers (wait.c) */
	_Atomic uint64_t wait_tickets;
	_Atomic uint32_t next_conn_id;
	/* the logged-in sessions of all workers by conn_id (ops.c) */
	pthread_mutex_t sess_mu;
	struct client *sess[SESS_BUCKETS];
	char kill_any[1024]; /* [proxy] kill_any_user, under sess_mu */
	_Atomic bool trust_routines;
	/* [proxy] local_infile: CLIENT_LOCAL_FILES offered to clients (and
	 * asked of backends for those that take it) */
	_Atomic bool local_infile;
	/* reader_policy = least_conn: a session's reader is the one with the
	 * fewest sessions reading there per unit of weight (be_readers) */
	_Atomic bool least_conn;
	/* sessions whose reader it is (low 32 bits) and the id's generation
	 * (high 32), bumped when the id goes to a new backend: a session counted
	 * on the old one then neither counts on the new one nor uncounts from
	 * it. One word, so a release and a reset cannot interleave. */
	_Atomic uint64_t be_readers[PROXY_MAX_IDS];
	struct proxy_routines *routines;
	/* the TLS context of [proxy] tls_cert (NULL: no TLS offered), replaced
	 * by reload under tls_mu; a session holds its own reference */
	struct ssl_ctx_st *tls_ctx;
	pthread_mutex_t tls_mu;
	_Atomic bool require_tls; /* require_secure_transport */
	/* caching_sha2_password: default_auth_plugin is it; the RSA pair of
	 * rsa_private_key and rsa_public_key (the PEM text as clients get it),
	 * NULL when none, replaced by reload under tls_mu */
	_Atomic bool sha2_default;
	struct evp_pkey_st *rsa_key;
	uint8_t *rsa_pem;
	size_t rsa_pem_len;
	/* switchover_buffer_ms; the writer that refused a statement as
	 * read-only or could not be reached, while the topology still names
	 * it (switchover.c: sw_fence) */
	_Atomic int sw_ms;
	_Atomic uint64_t sw_fence_word, sw_fence_ms;
	_Atomic int sw_waiting_now;
	bool sw_subscribed;
	/* transaction_replay, transaction_replay_max_size (replay.c) */
	_Atomic bool rp_enabled;
	_Atomic uint64_t rp_max;
	/* [backend:NAME] tls of the config now, by name (a backend added at
	 * run time has none: plain), replaced by reload under tls_mu */
	struct be_conf *be_conf;
	size_t nbe_conf;
	uint64_t sw_demoted_fp; /* the demoted backends last seen (sw_topology's) */
#ifdef MYSTEER_ENGINE_TEST
	/* engine_test.h: backend connections come from here */
	int (*test_connect)(void *arg, const struct topo_backend *be);
	void *test_connect_arg;
#endif
};

/* One listening socket of a worker: an address of [proxy] bind. */
struct listener {
	enum ev_type type; /* EV_LISTEN: first, the epoll tag */
	int fd;
};

struct worker {
	struct proxy_engine *e;
	pthread_t th;
	bool started;
	int ep, wakefd;
	struct listener ls[CONFIG_MAX_BINDS];
	int nls;
	enum ev_type wtype;
	struct client *clients;
	/* clients not logged in yet, oldest first: past pre_max the oldest
	 * makes room for a new connection (client.c, client_accept) */
	struct client *pre_head, *pre_tail;
	int npre, pre_max;
	bool accept_paused; /* out of file descriptors: until the next sweep */
	struct client *dead_clients;
	struct bconn *dead_bconns;
	volatile bool stop;
	unsigned rnd;
	struct rnd_pool scrambles;
	struct skey *keys[PS_KEY_BUCKETS]; /* prepared statement texts in use */
	uint64_t ps_tick;                  /* LRU clock of the cached statements */
	struct bconn *pool;                /* idle backend connections, reset, of any user */
	uint64_t last_sweep;
	struct client *ghosts; /* one per user with a plain password */
	struct bconn *warming; /* warm connections still logging in */
	size_t nghosts;
	struct user_table *users; /* its reference to the users (engine_worker_users) */
	uint64_t users_gen;
	struct rt_snap *rt; /* this worker's reference to the routine table */
	uint64_t rt_gen;
	/* sessions waiting for a connection, in ticket order (first come,
	 * first served, over all workers per backend) */
	struct client *wait_head, *wait_tail;
	/* per backend id, the ticket of the first of them waiting for it, or
	 * WAIT_NONE: written by this worker only, read by the others (an older
	 * one elsewhere takes the slot first, wait_older_elsewhere) */
	_Atomic uint64_t oldest[PROXY_MAX_IDS];
	int wait_n[PROXY_MAX_IDS]; /* of them, per backend id */
	int nwaiting;              /* of them, in all */
	bool kick;                 /* a slot or a pooled connection came free: serve them */
	_Atomic bool kills;        /* a session of it has kill_conn set (ops.c) */
	/* sessions waiting for a writer (switchover.c), in arrival order;
	 * sw_n is read by the topology subscriber, sw_kick set by it */
	struct client *sw_head, *sw_tail;
	_Atomic int sw_n;
	_Atomic bool sw_kick;
	_Atomic bool sw_cut; /* a writer was replaced: cut off what ran there */
};

/* ---- buffers ---- */

static inline int buf_reserve(struct buf *b, size_t more)
{
	size_t need, cap;
	uint8_t *d;

	if (b->cap - b->len >= more)
		return 0;
	if (b->off > 0) {
		memmove(b->d, b->d + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->cap - b->len >= more)
			return 0;
	}
	need = b->len + more;
	cap = b->cap ? b->cap : 4096;
	while (cap < need)
		cap *= 2;
	d = realloc(b->d, cap);
	if (!d)
		return -1;
	b->d = d;
	b->cap = cap;
	return 0;
}

static inline size_t buf_used(const struct buf *b)
{
	return b->len - b->off;
}

/* The capacity b would have after buf_reserve(b, more). */
static inline size_t buf_cap_for(const struct buf *b, size_t more)
{
	size_t need = buf_used(b) + more, cap;

	if (b->cap - b->len >= more || b->cap >= need)
		return b->cap;
	cap = b->cap ? b->cap : 4096;
	while (cap < need)
		cap *= 2;
	return cap;
}

static inline void buf_consume(struct buf *b, size_t n)
{
	b->off += n;
	if (b->off == b->len)
		b->off = b->len = 0;
}

/* Idle connections keep no large buffers (32 KB per idle client). */
static inline void buf_trim(struct buf *b)
{
	if (buf_used(b) == 0 && b->cap > 16384) {
		free(b->d);
		memset(b, 0, sizeof(*b));
	}
}

static inline void buf_free(struct buf *b)
{
	free(b->d);
	memset(b, 0, sizeof(*b));
}

static inline int buf_append(struct buf *b, const void *p, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return -1;
	memcpy(b->d + b->len, p, n);
	b->len += n;
	return 0;
}

/* Appends payload as packets starting at seq, split at 16 MB; returns the
 * next sequence id, or -1. */
static inline int buf_put_packet(struct buf *b, uint8_t seq, const uint8_t *p, size_t n)
{
	for (;;) {
		uint32_t f = n >= PKT_MAX_FRAG ? PKT_MAX_FRAG : (uint32_t)n;
		if (buf_reserve(b, PKT_HDR + f) < 0)
			return -1;
		pkt_put_hdr(b->d + b->len, f, seq++);
		memcpy(b->d + b->len + PKT_HDR, p, f);
		b->len += PKT_HDR + f;
		p += f;
		n -= f;
		if (f < PKT_MAX_FRAG)
			return seq;
	}
}

/* ---- small helpers ---- */

/* The event loop's monotonic clock (evloop.h), under the name the engine's
 * files use. */
#ifdef MYSTEER_ENGINE_TEST
extern uint64_t engine_test_skew_ms; /* proxy_engine_test_advance() */
#endif

static inline uint64_t now_ms(void)
{
#ifdef MYSTEER_ENGINE_TEST
	return mono_ms() + engine_test_skew_ms;
#else
	return mono_ms();
#endif
}

static inline int ep_add(struct worker *w, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = {.events = events, .data.ptr = ptr};

	return epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev);
}

static inline void ep_mod(struct worker *w, int fd, uint32_t *cur, uint32_t events, void *ptr)
{
	struct epoll_event ev = {.events = events, .data.ptr = ptr};

	if (*cur == events)
		return;
	*cur = events;
	if (epoll_ctl(w->ep, EPOLL_CTL_MOD, fd, &ev) < 0)
		log_debug("proxy: epoll_ctl mod: %s", strerror(errno));
}

static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = (v >> 16) & 0xff;
	p[3] = (v >> 24) & 0xff;
}

/* A read with any of these may change its connection's state (or, for
 * SQL_CALC_FOUND_ROWS, leaves the FOUND_ROWS() answer that may be asked next). */
#define STATEFUL_FLAGS                                                                             \
	(CLS_F_MULTI | CLS_F_TEMP_TABLE | CLS_F_USER_VAR_WRITE | CLS_F_NAMED_LOCK |                \
	 CLS_F_ROUTINE | CLS_F_SET_TRANSACTION | CLS_F_UNREPLAYABLE | CLS_F_AUTOCOMMIT_OFF |       \
	 CLS_F_AUTOCOMMIT_ON | CLS_F_USE | CLS_F_CALC_FOUND_ROWS)

/* The kind of the next answer a backend connection will send. */
static inline enum resp_kind bconn_next_kind(const struct bconn *b)
{
	if (b->internal == 0)
		return b->c->cur_kind;
	return b->internal == 1 && b->prep_key ? RESP_PREPARE : RESP_GENERIC;
}

/* b's answers start anew (of kind) and c's command in flight is on b:
 * awaiting says whether b's next answer is the client's own (send_cmd) or
 * internal answers come first that hold the command back (gtid_prologue,
 * rp_prologue) */
static inline void bconn_expect(struct client *c, struct bconn *b, enum resp_kind kind,
                                bool awaiting)
{
	resp_init(&b->rt, kind, b->caps);
	b->awaiting = awaiting;
	b->frag_left = 0;
	c->cur = b;
	c->fwd_started = false;
	c->st = C_BUSY;
}

/* stmt.c: prepared statements and the connections' statement caches */
struct pstmt *stmt_find(struct client *c, uint32_t id);
void stmt_forget_conn(struct client *c, const struct bconn *b);
struct bstmt *stmt_cache_find(struct bconn *b, const struct skey *k);
void stmt_cache_clear(struct bconn *b, bool send_close);
void stmt_cache_clear_for_state(const struct client *c, struct bconn *b);
int stmt_cache_add(struct bconn *b, struct skey *k, uint32_t xid);
void stmt_cache_make_room(struct bconn *b);
void stmt_drop_longdata(struct client *c, struct pstmt *ps);
void stmt_free(struct client *c, struct pstmt *ps);
struct pstmt *stmt_new(struct client *c, const uint8_t *sql, size_t len);
int stmt_build_execute(struct client *c, struct bstmt *e, uint32_t xid, const uint8_t **out,
                       size_t *outlen);
int stmt_queue_prereqs(struct client *c, struct bconn *b, uint32_t *xid, struct bstmt **ep);

/* pool.c: the per-backend cap, the pool, warm connections */
bool pool_slot_take(struct proxy_engine *e, uint32_t id);
void pool_wake_others(struct worker *w);
void pool_slot_release(struct worker *w, uint32_t id);
void pool_warm_unlink(struct bconn *b);
bool pool_park(struct client *c, struct bconn *b);
void pool_event(struct bconn *b, uint32_t events);
bool pool_reclaim_last(struct client *c);
void pool_sweep(struct worker *w, uint64_t now);
void pool_warm_park(struct bconn *b);
void pool_warm_failed(struct bconn *b);
struct bconn *pool_conn_get(struct client *c, const struct topo_backend *be, bool writer);
void pool_warm(struct worker *w);
int pool_ghosts_init(struct worker *w);
int pool_ghosts_renew(struct worker *w);
void pool_ghosts_free(struct worker *w);
/* engine.c: one batch of the worker's events and what follows it */
void engine_worker_once(struct worker *w, int timeout_ms);
/* engine.c: the users now; a reload's new table is taken up here (and the
 * ghosts made again for it) */
const struct user_table *engine_worker_users(struct worker *w);

/* wait.c: sessions waiting for a connection at the cap */
void wait_dequeue(struct client *c);
void wait_enqueue(struct client *c);
void wait_run(struct worker *w);
void wait_expire(struct worker *w, uint64_t now);
void wait_kill(struct client *c);
void wait_yield(struct worker *w);
bool wait_older_elsewhere(struct worker *w, uint32_t id, uint64_t ticket);

/* switchover.c: statements that need the writer wait while there is none */
/* The topology's usable writer, unless it is fenced (sw_fence): NULL. */
const struct topo_backend *sw_writer(struct proxy_engine *e, const struct topology *t);
/* Whether the command in flight may wait for a writer now. */
bool sw_may_wait(const struct client *c);
void sw_enqueue(struct client *c);
void sw_dequeue(struct client *c);
void sw_run(struct worker *w);
void sw_expire(struct worker *w, uint64_t now);
/* The writer b refused the client's command in flight with this ERR (p, n
 * bytes, not passed on yet) as read-only, nothing of it ran, and the
 * session may move: then sw_retake(b) closes b and the command waits for
 * the next writer (or goes to it now). */
bool sw_refused(const struct bconn *b, const uint8_t *p, size_t n);
void sw_retake(struct bconn *b);
/* b, a writer connection, failed before the client's command was sent:
 * when the session may move, b goes and the command waits for the next
 * writer (true); false: the caller fails it as before. */
bool sw_unreached(struct bconn *b);
/* An answer of the writer ended: whether the session's transaction still
 * holds only its BEGIN (opened_by_begin: this answer opened it). */
void sw_answered(struct client *c, struct bconn *b, bool ok, bool opened);
void sw_topology(const struct topology *t, void *arg);
/* The statement in flight of c runs on a writer another server replaced:
 * cut off with ERR 1158 (its outcome unknown); true when it was. */
bool sw_cut_demoted(struct client *c, const struct topology *t);
/* Why the session cannot leave its writer connection b, or NULL (route.c). */
const char *route_writer_held_for(const struct client *c, const struct bconn *b);

/* mux.c: when a session gives a connection back */
bool mux_keeps_state(const struct client *c, const struct bconn *b);
bool mux_leaves_no_state(const struct client *c, const struct bconn *b);
bool mux_state_pins(const struct client *c, const struct bconn *b);
void mux_next(struct client *c);
void mux_answered(struct client *c, struct bconn *b, bool clean);
void mux_lid_note(const struct client *c, struct bconn *b);
void mux_lid_row(struct bconn *b, const uint8_t *p, size_t n);
bool mux_lid_fetched(struct client *c, struct bconn *b);
int mux_lid_prologue(const struct client *c, struct bconn *b);
void mux_release(struct client *c, struct bconn *b);

/* backend.c: a backend connection's life */
void bconn_free(struct bconn *b);
void bconn_update(struct bconn *b);
int bconn_flush(struct bconn *b);
void bconn_fail(struct bconn *b, const char *why);
/* the same for a login the server refused: the command gets the server's error */
void bconn_fail_login(struct bconn *b, const struct err_pkt *e);
int bconn_read(struct bconn *b);
void bconn_pump(struct bconn *b);
void bconn_event(struct bconn *b, uint32_t events);
struct bconn *bconn_open(struct client *c, const struct topo_backend *be, bool writer, bool *full);

/* answer.c: answers from the backends */
void answer_tracking_replaced(struct bconn *b, const uint8_t *p, size_t n);
void answer_stream(struct bconn *b);

/* ryw.c: read-your-writes, all of it (the callers make one call each) */
/* A reload's read_your_writes and read_your_writes_ms. */
void ryw_apply(struct proxy_engine *e, const struct config *cfg);
/* The session forgets its last write (COM_RESET_CONNECTION, COM_CHANGE_USER). */
void ryw_session_reset(struct client *c);
/* b was reset (COM_RESET_CONNECTION): no last_gtid tracking, no GTID waited. */
void ryw_conn_reset(struct bconn *b);
/* Whether the proxy's tracking SET on the writer connection b adds last_gtid. */
bool ryw_track_wanted(const struct client *c, const struct bconn *b);
/* read_your_writes = gtid, before anything of the session runs on the replica
 * connection b: queues a wait there for the session's last GTID. Returns 1
 * when it did (the command is held back until ryw_internal_done), 0 to go
 * on, -1 on error. */
int ryw_prologue(struct client *c, struct bconn *b);
/* Each packet of an answer (payload, take bytes; the response tracker's
 * state before and after it): the writer's last GTID, the wait's outcome. */
void ryw_answer_packet(struct client *c, struct bconn *b, enum resp_state before,
                       enum resp_state st, const uint8_t *payload, size_t take);
/* An internal answer on b ended: true when it was the wait, which went on
 * with the command (on b, or on the writer) and b may be gone. */
bool ryw_internal_done(struct client *c, struct bconn *b);
/* The answer to the command in flight ended (ok: without an ERR): a write
 * starts the window and says whether its GTID is known. */
void ryw_write_done(struct client *c, const struct bconn *b, bool ok);
/* Whether a read of c stays on the writer: in the window after a write. */
bool ryw_keeps_writer(const struct client *c);

/* history.c: the session history */
void hist_clear(struct client *c);
void hist_pop(struct client *c);
/* The command in flight, the history's last entry, succeeded: an earlier
 * identical entry goes. */
void hist_commit(struct client *c);
/* Whether n more bytes of the session's (a prepared statement's text) fit
 * in max_session_bytes with its history. */
bool hist_bytes_fit(const struct client *c, size_t n);
uint64_t hist_fingerprint(const struct client *c, size_t upto);
uint8_t *hist_image(const struct client *c, size_t upto, size_t *len);
bool hist_image_matches(const struct client *c, const struct bconn *b, uint64_t fp);
/* 0: recorded; 1: past max_session_history, not recorded: the session is
 * pinned to the writer instead; -1: out of memory. */
int hist_add(struct client *c, const uint8_t *p, size_t n);

/* route.c: routing */
/* A USE or COM_INIT_DB is about to change c->db: the schema before is kept
 * until the server answers (db_change_end: ok keeps the new one). */
static inline void db_change_begin(struct client *c)
{
	memcpy(c->db_before, c->db, sizeof(c->db));
	c->db_pending = true;
}
static inline void db_change_end(struct client *c, bool ok)
{
	if (c->db_pending && !ok)
		memcpy(c->db, c->db_before, sizeof(c->db));
	c->db_pending = false;
}
int route_send_cmd(struct client *c, struct bconn *b);
int route_queue_internal(struct bconn *b, const char *sql);
void route_cmd(struct client *c);
void route_classify(struct client *c, const uint8_t *sql, size_t len, struct cls_result *res);
void route_decide(struct client *c, enum cls_token tok, uint32_t flags, enum cls_reason reason,
                  bool is_ps);
void route_decide_query(struct client *c, const uint8_t *sql, size_t len);
/* The session's writer connection is to a server that is no longer the
 * writer in t while the session holds state there it cannot take along (a
 * transaction, a temporary table, a lock...): the session gets an ERR 1927
 * that says so (in_cmd: as the answer to the command in flight, which never
 * runs) and ends, and that connection is closed, so that nothing more of it
 * runs on the old writer. True when it did. */
bool route_demoted(struct client *c, const struct topology *t, bool in_cmd);
/* The session stays on the writer from now on, for this reason (a static
 * string: the first one is kept). */
void route_pin_writer(struct client *c, const char *why);
/* The session ends: its reader counts one session less (be_readers). */
void route_reader_release(struct client *c);
/* A be_readers word: the sessions reading from the id now, and the id's
 * generation. */
static inline int readers_count(uint64_t word)
{
	return (int)(uint32_t)word;
}
static inline uint32_t readers_gen(uint64_t word)
{
	return (uint32_t)(word >> 32);
}

/* client.c: client sessions */
void client_close(struct client *c);
void client_shed(struct client *c, uint16_t code, const char *state, const char *msg);
void client_buf_sync(struct client *c);
void client_timeouts(struct client *c, uint64_t now);
int client_flush(struct client *c);
void client_cmd_done(struct client *c);
/* The figures (common/metrics.h): a statement classified, and one answered
 * by b (counted on b's backend, with the time since it was classified). */
struct metric_series;
void proxy_metrics_classified(struct client *c, enum cls_token tok);
void proxy_metrics_answered(struct client *c, struct bconn *b);
/* a statement began to wait for a writer, a wait ran out, a statement the
 * writer refused as read-only (or never got) was taken back to wait */
enum sw_metric { SW_METRIC_WAIT, SW_METRIC_TIMEOUT, SW_METRIC_RETAKE };
void proxy_metrics_switchover(enum sw_metric what);
/* replay.c: a transaction replayed, or why it was not (RP_OK: replayed) */
enum rp_outcome {
	RP_OK,
	RP_MISMATCH,
	RP_TOO_LARGE,
	RP_COMMIT_IN_FLIGHT,
	RP_NOT_REPLAYABLE,
	RP_NO_WRITER,
	RP_OUTCOME_COUNT
};
void proxy_metrics_replay(enum rp_outcome what);
/* The checksum of what a client saw, fed packet by packet (rp_sum_*). */
#define RP_SUM0 14695981039346656037ull
uint64_t rp_sum_bytes(uint64_t h, const uint8_t *p, size_t n);
/* Folds one packet of an answer (payload p[0..n) of a fragment of
 * frag_len bytes, the response tracker's state before and after it) into
 * the checksum: what is compared is described in replay.c. */
uint64_t rp_sum_packet(uint64_t h, enum resp_state before, enum resp_state after,
                       const struct resp_tracker *rt, const uint8_t *p, size_t n);
/* b's answer packet, hashed when the session records or replays */
void rp_feed(struct bconn *b, enum resp_state before, enum resp_state after, const uint8_t *p,
             size_t n, uint32_t frag_len);
void rp_feed_frag(struct bconn *b, const uint8_t *p, size_t n);
/* The client's command on writer connection b ended (on_answer_done). */
void rp_answered(struct client *c, struct bconn *b, bool opened);
/* The session's log goes (a transaction ended, the session closes). */
void rp_reset(struct client *c);
/* Why the transaction of c on its writer connection b cannot be replayed
 * now (in_flight: c's command was sent there); RP_OK when it can. */
enum rp_outcome rp_why_not(const struct client *c, const struct bconn *b, bool in_flight);
/* The writer connection b of a session in a transaction failed: the
 * transaction is replayed on the next writer, or the session gets an ERR
 * naming why not. False when replay is off (the caller does as before). */
bool rp_lost(struct bconn *b);
/* route_demoted: b's server is no longer the writer. True when the
 * transaction will be replayed on the next one (b is closed); else *why
 * says why not (NULL: replay is off or the session is not in one). */
bool rp_demoted(struct client *c, struct bconn *b, const char **why);
/* route_send_cmd: the transaction is replayed on b before the client's command,
 * which is sent once every answer matched (rp_internal_end). 1: queued, 0:
 * nothing to replay, -1: error. */
int rp_prologue(struct client *c, struct bconn *b);
/* An internal answer on b ended (before b->internal drops). False when
 * the replay failed and the session is gone: the caller stops. */
bool rp_internal_end(struct client *c, struct bconn *b);
/* After the last internal answer: the replay is over, the client's command
 * goes. True when it took over (the caller stops). */
bool rp_replayed(struct client *c, struct bconn *b);
/* route_cmd: no writer came for a replay (msg: why): the session ends. */
void rp_no_writer(struct client *c, const char *msg);
const char *rp_outcome_name(enum rp_outcome o);
/* a client connection accepted, or refused (and why) */
enum client_metric {
	CLIENT_ACCEPTED,
	CLIENT_REFUSED_FULL,     /* max_client_connections, nothing to evict */
	CLIENT_REFUSED_EVICTED,  /* not logged in, made room for a new one */
	CLIENT_REFUSED_INSECURE, /* plain text with require_secure_transport */
	CLIENT_REFUSED_DENIED,   /* wrong user or password */
	CLIENT_REFUSED_NO_MEMORY,
	CLIENT_METRIC_COUNT
};
void proxy_metrics_client(enum client_metric what);
/* read-your-writes acted on a read; a read retried on another reader */
enum ryw_metric {
	RYW_METRIC_GTID_WAIT,
	RYW_METRIC_GTID_TIMEOUT,
	RYW_METRIC_WINDOW,
	RYW_METRIC_COUNT
};
void proxy_metrics_ryw(enum ryw_metric what);
void proxy_metrics_reader_retry(void);
void client_cmd_fail(struct client *c, uint16_t code, const char *msg);
/* the same with the SQLSTATE of an error a server gave */
void client_cmd_fail_state(struct client *c, uint16_t code, const char *sqlstate, const char *msg);
void client_process(struct client *c);
/* After route_cmd from outside the client's own event (a wait ended, a
 * writer came): an ERR or a refusal left it idle, so answer it and go on
 * with what it sent next. */
void client_resume(struct client *c);
/* The identity kept during a COM_CHANGE_USER goes (wiped). */
void client_chu_free(struct client *c);
void client_event(struct client *c, uint32_t events);
void client_accept(struct worker *w, struct listener *l);
/* A session on fd, accepted from ss: NULL when refused (fd closed). */
struct client *client_adopt(struct worker *w, int fd, const struct sockaddr_storage *ss);
void client_accept_resume(struct worker *w);

/* engine.c: a TLS connection for a client's socket, of the context now;
 * NULL when TLS is not configured (or out of memory) */
struct ssl_st *engine_tls_new(struct proxy_engine *e, int fd);
bool engine_tls_on(struct proxy_engine *e);
/* engine.c: the RSA private key of rsa_private_key (a reference the caller
 * frees with EVP_PKEY_free), NULL when none is configured; its PEM public
 * key as an AuthMoreData payload in *pkt (malloc'd), length, or -1. */
struct evp_pkey_st *engine_rsa_key(struct proxy_engine *e);
int engine_rsa_pem_packet(struct proxy_engine *e, uint8_t **pkt);

/* ops.c: the registry of sessions, CONNECTION_ID() and KILL */
void ops_sess_register(struct client *c);
void ops_sess_unregister(struct client *c);
void ops_sess_set_user(struct client *c);
void ops_sess_running(struct client *c, const struct bconn *b);
void ops_sess_kills(struct worker *w);
int ops_statement(struct client *c);
bool ops_kill_answer_gone(struct client *c, const uint8_t *p, size_t n);
/* The TLS connection a new connection to be (on fd) starts once the server's
 * handshake came; NULL when be has tls = off, or with *failed set when it
 * cannot be made. */
struct ssl_st *engine_backend_tls(struct proxy_engine *e, const struct topo_backend *be, int fd,
                                  bool *failed);
/* Whether connections to be start with a PROXY header (proxy_protocol). */
bool engine_backend_pp(struct proxy_engine *e, const struct topo_backend *be);

#endif
