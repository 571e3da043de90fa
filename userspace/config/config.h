/*
 * config.h - the mysteer INI configuration (every key in docs/CONFIG.md).
 *
 * Parsed with libinih and validated whole before anything starts: every
 * problem is one line "FILE:LINE: what is wrong". The struct below holds every
 * key of the contract; a key not listed there is an error.
 */
#ifndef MYSTEER_CONFIG_H
#define MYSTEER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/topology.h"

#define CONFIG_MAX_VIPS 16
/* [proxy] bind: the addresses the 6450 proxy listens on */
#define CONFIG_MAX_BINDS 16
/* [route:] sections: what the eBPF maps hold (MS_MAX_ROUTES). */
#define CONFIG_MAX_ROUTES 8

#define CONFIG_DEFAULT_PRIORITY 100
#define CONFIG_DEFAULT_WEIGHT   1
/* Limits of priority and weight, shared by the config and mysteerctl. */
#define CONFIG_PRIORITY_MAX 1000000
#define CONFIG_WEIGHT_MAX   1000000

enum log_level_cfg { CFG_LOG_ERROR = 0, CFG_LOG_WARN, CFG_LOG_INFO, CFG_LOG_DEBUG };
enum log_format_cfg { CFG_LOG_TEXT = 0, CFG_LOG_JSON }; /* as enum log_format */
enum writer_policy { WRITER_POLICY_READ_ONLY = 0, WRITER_POLICY_PRIORITY };
enum reader_policy { READER_POLICY_RANDOM = 0, READER_POLICY_LEAST_CONN };
enum ryw_mode { RYW_OFF = 0, RYW_WINDOW, RYW_GTID };
enum auth_plugin { AUTH_NATIVE = 0, AUTH_CACHING_SHA2 };

/* [backend:NAME] tls: how the 6450 proxy and the probe talk to it */
enum backend_tls {
	BACKEND_TLS_OFF = 0, /* plain text */
	BACKEND_TLS_ON,      /* TLS, the server's certificate not checked */
	BACKEND_TLS_VERIFY   /* TLS, certificate signed by tls_ca, for host */
};

struct config_backend {
	char name[TOPO_NAME_MAX];
	char host[TOPO_HOST_MAX];
	uint16_t port;
	int priority; /* default 100 */
	int weight;   /* default 1 */
	int line;     /* where it was defined, for messages */
	enum backend_tls tls;
	char tls_ca[4096]; /* PEM file, absolute path (tls = verify needs it) */
	bool proxy_protocol; /* the relay and 6450 send a PROXY v2 header first */
};

struct config_route {
	char name[TOPO_NAME_MAX];
	uint16_t port;
	enum route_role role;
	int line;
};

struct config_user {
	char name[TOPO_NAME_MAX];
	char password[128];      /* "" when only the hash is given */
	bool has_password;       /* password or password_file */
	uint8_t hash_stage2[20]; /* SHA1(SHA1(password)), from password or password_hash */
	bool has_hash;
};

struct config {
	char path[4096]; /* the file it came from */

	/* [mysteerd] */
	char admin_socket[108];
	char admin_group[64];
	char state_file[4096];
	char pid_file[4096]; /* empty: none */
	char user[64];       /* empty: stay root (daemon/privdrop.h) */
	char bpffs_dir[4096];
	enum log_level_cfg log_level;
	enum log_format_cfg log_format;
	bool keep_on_exit;
	char metrics_listen[64]; /* HOST:PORT of /metrics, /live, /ready; "" off */

	/* [probe] */
	int interval_ms, timeout_ms, fall, rise;
	char probe_user[128], probe_password[128];
	int max_replication_lag_s;
	enum writer_policy writer_policy;
	bool failback; /* a demoted server may become the writer again by itself */
	bool trust_routine_characteristics;

	/* [steer] */
	struct sockaddr_storage vips[CONFIG_MAX_VIPS];
	size_t nvips;
	char cgroup[4096]; /* "auto", a path, or "" (off) */
	bool lookup, local_handoff;
	enum reader_policy reader_policy;
	bool close_on_demote;
	char relay_address[64];
	int connect_timeout_ms; /* R: the relay's connect to a backend */

	/* [proxy] */
	struct sockaddr_storage binds[CONFIG_MAX_BINDS]; /* port 0: the split route's */
	size_t nbinds;
	int workers; /* 0: one per core */
	int max_client_connections, handshake_timeout_ms;
	uint32_t max_packet_size;
	/* R: a packet must arrive whole within this once it started; a
	 * logged-in client that sends nothing this long is closed */
	int client_packet_timeout_ms, client_idle_timeout_s;
	/* R: all clients' buffers of large packets together */
	uint64_t max_client_buffer_bytes;
	/* R: a session's history (entries), and what the proxy keeps for it
	 * (history and prepared statement texts, bytes) */
	int max_session_history;
	uint64_t max_session_bytes;
	enum ryw_mode read_your_writes;
	int read_your_writes_ms, pool_max_per_backend, pool_min_idle, pool_idle_timeout_ms;
	/* how long a statement waits for a connection at pool_max_per_backend */
	int pool_wait_timeout_ms;
	/* R: how long a statement that needs the writer waits for one while
	 * there is none (a switchover); 0: it fails at once */
	int switchover_buffer_ms;
	/* R: a transaction whose writer connection is lost is replayed on the
	 * next writer (proxy/replay.c), up to this many bytes of statements */
	bool transaction_replay;
	uint64_t transaction_replay_max_size;
	/* prepared statements: server-side per backend connection (a pooled
	 * connection must not eat the server's max_prepared_stmt_count, 16382 by
	 * default), and per client session (the proxy's memory) */
	int max_prepared_per_connection, max_prepared_per_session;
	/* R: PEM files (absolute paths; "" none): with a certificate, 6450
	 * offers TLS; tls_ca checks client certificates that are sent */
	char tls_cert[4096], tls_key[4096], tls_ca[4096];
	bool require_secure_transport; /* R: a plain-text login gets ERR 3159 */
	bool local_infile; /* R: LOAD DATA LOCAL INFILE through 6450 (CLIENT_LOCAL_FILES) */
	/* R: what the handshake announces (and the plugin users log in with,
	 * but those with only a password_hash: mysql_native_password) */
	enum auth_plugin default_auth_plugin;
	/* R: PEM files ("" none), set together: caching_sha2_password's RSA
	 * exchange for clients without TLS */
	char rsa_private_key[4096], rsa_public_key[4096];
	/* R: users (comma-separated) whose KILL through 6450 may end or
	 * interrupt the sessions of other users; "" none */
	char kill_any_user[1024];

	/* [cluster] (docs/CLUSTER.md): absent, the daemon decides alone */
	bool cluster;            /* the section is present */
	char cluster_etcd[1024]; /* endpoints, "http://HOST:PORT, ..." */
	char cluster_name[64];   /* keys under /mysteer/<name>/ */
	char cluster_host_id[64];
	int cluster_lease_ms;
	int cluster_fence_after_ms;       /* 0: lease_ms */
	int cluster_follower_interval_ms; /* probe interval of a host that does not lead */
	char cluster_user[128];           /* etcd auth, "" none */
	char cluster_password[256];

	struct config_route *routes;
	size_t nroutes;
	struct config_backend *backends;
	size_t nbackends;
	struct config_user *users;
	size_t nusers;
};

/* Loads and validates path into a freshly allocated config. On error returns
 * NULL with one line "FILE:LINE: reason" in err. Warnings (two backends at one
 * address, a password in a file others can read) go to the log. Not
 * reentrant: libinih's options are process globals, so load from one thread
 * at a time (startup, reload). */
struct config *config_load(const char *path, char *err, size_t errlen);
/* config_load with CONFIG_LOAD_* flags. */
#define CONFIG_LOAD_NO_SECRETS 1u /* password_file not read, no password needed (mysteerctl) */
struct config *config_load_flags(const char *path, unsigned flags, char *err, size_t errlen);
void config_free(struct config *c);

/* A key a reload does not apply to the running daemon, and why. */
struct config_restart_key {
	const char *section; /* "mysteerd", "steer", "proxy", "cluster" */
	const char *key;
	const char *why; /* "6450's listeners are bound at start", ... */
};
#define CONFIG_RESTART_KEYS_MAX 48 /* more than there are such keys */
/* The keys that need a restart and differ between old (running) and nc
 * (reloaded), in config file order, into out; returns how many. */
size_t config_restart_keys(const struct config *old, const struct config *nc,
                           struct config_restart_key out[CONFIG_RESTART_KEYS_MAX]);

const struct config_backend *config_find_backend(const struct config *c, const char *name);
const struct config_user *config_find_user(const struct config *c, const char *name);
const struct config_route *config_find_route(const struct config *c, const char *name);

/* Helpers shared with mysteerctl and the state overlay, so that a name or a
 * number is accepted by the CLI exactly when the config would accept it. */
/* 1-63 of A-Z a-z 0-9 _ - . */
bool config_valid_name(const char *name);
/* A whole decimal integer in [min, max]. */
bool config_parse_int(const char *s, long long min, long long max, long long *out);
/* "*" + 40 hex digits (mysql.user's form) into SHA1(SHA1(password)). */
bool config_parse_password_hash(const char *s, uint8_t out[20]);
/* "HOST:PORT" or "[IPv6]:PORT" with a numeric host (metrics_listen). */
bool config_parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *sl);
/* SHA1(SHA1(password)): what mysql_native_password checks against. */
void config_hash_password(const char *password, uint8_t out[20]);

#endif
