/*
 * config.c - loads and validates the INI config (see config.h).
 *
 * libinih does the lexing; this file owns the meaning of every key. inih
 * (Debian's build) does not pass line numbers to the handler, so the reader
 * callback counts lines itself and also notices section headers: inih calls
 * the handler only for KEY = VALUE lines, and an empty `[backend:x]` or an
 * unknown empty section must still be seen and checked.
 *
 * The first error wins and is returned as one line "FILE:LINE: reason";
 * parsing stops mattering after it, but inih is left to finish the file.
 */
#include "config/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <limits.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <pwd.h>
#include <openssl/x509.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"

enum sect {
	SEC_NONE = 0,
	SEC_MYSTEERD,
	SEC_PROBE,
	SEC_STEER,
	SEC_PROXY,
	SEC_CLUSTER,
	SEC_ROUTE,
	SEC_BACKEND,
	SEC_USER,
};

struct seen_key {
	char where[TOPO_NAME_MAX + 16]; /* "probe", "backend:db1", ... */
	char key[48];
};

struct pctx {
	struct config *c;
	FILE *f;
	int line;    /* number of the line being read */
	bool at_bol; /* the next reader chunk starts a new line */
	bool failed;
	char *err;
	size_t errlen;

	enum sect sec;
	char where[TOPO_NAME_MAX + 16];
	size_t cur; /* index of the current route/backend/user */
	int sec_line;

	unsigned flags; /* CONFIG_LOAD_* */
	struct seen_key *seen;
	size_t nseen;
	int password_line;         /* first line holding a password, 0: none */
	int probe_line;            /* the first [probe] header, 0: none */
	bool probe_password_given; /* [probe] password or password_file */
	int cluster_line;          /* the first [cluster] header, 0: none */
	bool route_given;
	bool router_syntax; /* the current route is a MySQL Router [routing:NAME] */
	int *user_lines;    /* section line of each user, for late checks */
	int tls_line;       /* the line of the last tls_* key, 0: none */
	int rsa_line;       /* the line of the last rsa_* key, 0: none */
};

static void fail(struct pctx *p, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(struct pctx *p, int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->failed)
		return;
	p->failed = true;
	n = snprintf(p->err, p->errlen, "%s:%d: ", p->c->path, line);
	if (n < 0 || (size_t)n >= p->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

static bool copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n >= size)
		return false;
	memcpy(dst, src, n + 1);
	return true;
}

bool config_valid_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= TOPO_NAME_MAX)
		return false;
	for (const char *s = name; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
			return false;
	return true;
}

/* Decimal integer in [min, max]; nothing else on the value. */
bool config_parse_int(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!*s || isspace((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static int parse_bool(const char *s)
{
	static const char *const yes[] = {"on", "yes", "true", "1"};
	static const char *const no[] = {"off", "no", "false", "0"};

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i]))
			return 1;
		if (!strcasecmp(s, no[i]))
			return 0;
	}
	return -1;
}

/* Index of s in names[], or -1. */
static int parse_enum(const char *s, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -1;
}

static bool parse_ip(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, s, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		return true;
	}
	return false;
}

bool config_parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *sl)
{
	char host[64];
	const char *colon;
	long long port;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (!rb || rb[1] != ':' || (size_t)(rb - s - 1) >= sizeof(host))
			return false;
		memcpy(host, s + 1, (size_t)(rb - s - 1));
		host[rb - s - 1] = '\0';
		colon = rb + 1;
		if (!strchr(host, ':'))
			return false;
	} else {
		colon = strchr(s, ':');
		if (!colon || (size_t)(colon - s) >= sizeof(host))
			return false;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
		if (strchr(host, ':'))
			return false;
	}
	if (!config_parse_int(colon + 1, 1, 65535, &port) || !parse_ip(host, ss))
		return false;
	if (ss->ss_family == AF_INET) {
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
		*sl = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
		*sl = sizeof(struct sockaddr_in6);
	}
	return true;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* A list of IP addresses ("a, b"): [steer] vip, [proxy] bind. */
static bool parse_addrs(struct pctx *p, const char *key, const char *value,
                        struct sockaddr_storage *out, size_t max, size_t *n)
{
	char buf[1024];
	char *save = NULL, *tok;

	*n = 0;
	if (!copy_str(buf, sizeof(buf), value)) {
		fail(p, p->line, "%s: value too long", key);
		return false;
	}
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *a = trim(tok);

		if (!*a)
			continue;
		if (*n == max) {
			fail(p, p->line, "%s: more than %zu addresses", key, max);
			return false;
		}
		if (!parse_ip(a, &out[*n])) {
			fail(p, p->line, "%s: bad address \"%s\" (want IPv4 or IPv6 addresses)",
			     key, a);
			return false;
		}
		for (size_t i = 0; i < *n; i++)
			if (!memcmp(&out[i], &out[*n], sizeof(out[i]))) {
				fail(p, p->line, "%s: address \"%s\" given twice", key, a);
				return false;
			}
		(*n)++;
	}
	return true;
}

bool config_parse_password_hash(const char *s, uint8_t out[20])
{
	if (s[0] != '*' || strlen(s) != 41)
		return false;
	for (size_t i = 0; i < 20; i++) {
		unsigned int v;
		char two[3] = {s[1 + 2 * i], s[2 + 2 * i], 0};

		if (!isxdigit((unsigned char)two[0]) || !isxdigit((unsigned char)two[1]))
			return false;
		if (sscanf(two, "%2x", &v) != 1)
			return false;
		out[i] = (uint8_t)v;
	}
	return true;
}

void config_hash_password(const char *password, uint8_t out[20])
{
	uint8_t stage1[SHA_DIGEST_LENGTH];

	SHA1((const unsigned char *)password, strlen(password), stage1);
	SHA1(stage1, sizeof(stage1), out);
	explicit_bzero(stage1, sizeof(stage1));
}

/* ---- keys of the fixed sections ---- */

enum ktype {
	K_STR,
	K_INT,
	K_U32,
	K_U64,
	K_BOOL,
	K_LOGLEVEL,
	K_LOGFMT,
	K_WPOL,
	K_RPOL,
	K_RYW,
	K_AUTHPLUGIN,
	K_VIP,
	K_BIND,
	K_IP,
	K_LISTEN,
	K_SECRET,
	K_SECRET_FILE,
	K_USER,
	K_PEM /* a PEM file: its path, relative to the config file's directory */
};

struct keydef {
	enum sect sec;
	const char *key;
	enum ktype type;
	size_t off, size;
	long long min, max;
};

#define F(field) offsetof(struct config, field), sizeof(((struct config *)0)->field)
#define BIG      INT_MAX

static const struct keydef keydefs[] = {
    {SEC_MYSTEERD, "admin_socket", K_STR, F(admin_socket), 0, 0},
    {SEC_MYSTEERD, "admin_group", K_STR, F(admin_group), 0, 0},
    {SEC_MYSTEERD, "state_file", K_STR, F(state_file), 0, 0},
    {SEC_MYSTEERD, "pid_file", K_STR, F(pid_file), 0, 0},
    {SEC_MYSTEERD, "bpffs_dir", K_STR, F(bpffs_dir), 0, 0},
    {SEC_MYSTEERD, "log_level", K_LOGLEVEL, F(log_level), 0, 0},
    {SEC_MYSTEERD, "log_format", K_LOGFMT, F(log_format), 0, 0},
    {SEC_MYSTEERD, "keep_on_exit", K_BOOL, F(keep_on_exit), 0, 0},
    {SEC_MYSTEERD, "user", K_USER, F(user), 0, 0},
    {SEC_MYSTEERD, "metrics_listen", K_LISTEN, F(metrics_listen), 0, 0},

    {SEC_PROBE, "interval_ms", K_INT, F(interval_ms), 1, 3600000},
    {SEC_PROBE, "timeout_ms", K_INT, F(timeout_ms), 1, 3600000},
    {SEC_PROBE, "fall", K_INT, F(fall), 1, 1000},
    {SEC_PROBE, "rise", K_INT, F(rise), 1, 1000},
    {SEC_PROBE, "user", K_STR, F(probe_user), 0, 0},
    {SEC_PROBE, "password", K_SECRET, F(probe_password), 0, 0},
    {SEC_PROBE, "password_file", K_SECRET_FILE, F(probe_password), 0, 0},
    {SEC_PROBE, "max_replication_lag_s", K_INT, F(max_replication_lag_s), 0, 86400 * 365},
    {SEC_PROBE, "writer_policy", K_WPOL, F(writer_policy), 0, 0},
    {SEC_PROBE, "failback", K_BOOL, F(failback), 0, 0},
    {SEC_PROBE, "trust_routine_characteristics", K_BOOL, F(trust_routine_characteristics), 0, 0},

    {SEC_STEER, "vip", K_VIP, 0, 0, 0, 0},
    {SEC_STEER, "cgroup", K_STR, F(cgroup), 0, 0},
    {SEC_STEER, "lookup", K_BOOL, F(lookup), 0, 0},
    {SEC_STEER, "local_handoff", K_BOOL, F(local_handoff), 0, 0},
    {SEC_STEER, "reader_policy", K_RPOL, F(reader_policy), 0, 0},
    {SEC_STEER, "close_on_demote", K_BOOL, F(close_on_demote), 0, 0},
    {SEC_STEER, "relay_address", K_IP, F(relay_address), 0, 0},
    {SEC_STEER, "connect_timeout_ms", K_INT, F(connect_timeout_ms), 1, 3600000},

    {SEC_PROXY, "bind", K_BIND, 0, 0, 0, 0},
    {SEC_PROXY, "workers", K_INT, F(workers), 0, 1024},
    {SEC_PROXY, "max_client_connections", K_INT, F(max_client_connections), 1, 10000000},
    {SEC_PROXY, "handshake_timeout_ms", K_INT, F(handshake_timeout_ms), 1, 3600000},
    {SEC_PROXY, "max_packet_size", K_U32, F(max_packet_size), 1024, 1073741824},
    {SEC_PROXY, "client_packet_timeout_ms", K_INT, F(client_packet_timeout_ms), 1, 3600000},
    {SEC_PROXY, "client_idle_timeout_s", K_INT, F(client_idle_timeout_s), 1, 31536000},
    {SEC_PROXY, "max_client_buffer_bytes", K_U64, F(max_client_buffer_bytes), 1048576,
     1099511627776LL},
    {SEC_PROXY, "max_session_history", K_INT, F(max_session_history), 1, 1000000},
    {SEC_PROXY, "max_session_bytes", K_U64, F(max_session_bytes), 1024, 1099511627776LL},
    {SEC_PROXY, "read_your_writes", K_RYW, F(read_your_writes), 0, 0},
    {SEC_PROXY, "read_your_writes_ms", K_INT, F(read_your_writes_ms), 0, 3600000},
    {SEC_PROXY, "pool_max_per_backend", K_INT, F(pool_max_per_backend), 1, 1000000},
    {SEC_PROXY, "pool_min_idle", K_INT, F(pool_min_idle), 0, 1000000},
    {SEC_PROXY, "pool_idle_timeout_ms", K_INT, F(pool_idle_timeout_ms), 0, BIG},
    {SEC_PROXY, "pool_wait_timeout_ms", K_INT, F(pool_wait_timeout_ms), 1, 3600000},
    {SEC_PROXY, "switchover_buffer_ms", K_INT, F(switchover_buffer_ms), 0, 3600000},
    {SEC_PROXY, "transaction_replay", K_BOOL, F(transaction_replay), 0, 0},
    {SEC_PROXY, "transaction_replay_max_size", K_U64, F(transaction_replay_max_size), 0,
     1099511627776LL},
    {SEC_PROXY, "max_prepared_per_connection", K_INT, F(max_prepared_per_connection), 1, 1000000},
    {SEC_PROXY, "max_prepared_per_session", K_INT, F(max_prepared_per_session), 1, 1000000},
    {SEC_PROXY, "tls_cert", K_PEM, F(tls_cert), 0, 0},
    {SEC_PROXY, "tls_key", K_PEM, F(tls_key), 0, 0},
    {SEC_PROXY, "tls_ca", K_PEM, F(tls_ca), 0, 0},
    {SEC_PROXY, "require_secure_transport", K_BOOL, F(require_secure_transport), 0, 0},
    {SEC_PROXY, "local_infile", K_BOOL, F(local_infile), 0, 0},
    {SEC_PROXY, "default_auth_plugin", K_AUTHPLUGIN, F(default_auth_plugin), 0, 0},
    {SEC_PROXY, "rsa_private_key", K_PEM, F(rsa_private_key), 0, 0},
    {SEC_PROXY, "rsa_public_key", K_PEM, F(rsa_public_key), 0, 0},
    {SEC_PROXY, "kill_any_user", K_STR, F(kill_any_user), 0, 0},

    {SEC_CLUSTER, "etcd", K_STR, F(cluster_etcd), 0, 0},
    {SEC_CLUSTER, "name", K_STR, F(cluster_name), 0, 0},
    {SEC_CLUSTER, "host_id", K_STR, F(cluster_host_id), 0, 0},
    {SEC_CLUSTER, "lease_ms", K_INT, F(cluster_lease_ms), 1000, 600000},
    {SEC_CLUSTER, "fence_after_ms", K_INT, F(cluster_fence_after_ms), 100, 600000},
    {SEC_CLUSTER, "follower_interval_ms", K_INT, F(cluster_follower_interval_ms), 10, 600000},
    {SEC_CLUSTER, "user", K_STR, F(cluster_user), 0, 0},
    {SEC_CLUSTER, "password", K_STR, F(cluster_password), 0, 0},
};

static const char *const log_level_names[] = {"error", "warn", "info", "debug"};
static const char *const log_format_names[] = {"text", "json"};
static const char *const wpol_names[] = {"read_only", "priority"};
static const char *const rpol_names[] = {"random", "least_conn"};
static const char *const ryw_names[] = {"off", "window", "gtid"};
static const char *const auth_plugin_names[] = {"mysql_native_password", "caching_sha2_password"};
static const char *const route_role_names[] = {"writer", "reader", "split"};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static bool set_enum(struct pctx *p, const char *key, const char *value, const char *const *names,
                     size_t n, void *dst)
{
	int v = parse_enum(value, names, n);

	if (v < 0) {
		char list[128] = "";

		for (size_t i = 0; i < n; i++) {
			strncat(list, i ? " | " : "", sizeof(list) - strlen(list) - 1);
			strncat(list, names[i], sizeof(list) - strlen(list) - 1);
		}
		fail(p, p->line, "%s: unknown value \"%s\" (want %s)", key, value, list);
		return false;
	}
	*(int *)dst = v;
	return true;
}

/*
 * The secret in the file that a password_file key names (relative paths are
 * taken from the config file's directory) into dst: the whole file, one
 * trailing newline (LF or CRLF) stripped. Read at every load, so a reload
 * takes a changed file. Nothing of it is left in memory but dst.
 */
static bool read_secret_file(struct pctx *p, const char *key, const char *value, char *dst,
                             size_t size)
{
	char path[4096], buf[512];
	const char *slash = strrchr(p->c->path, '/');
	struct stat st = {0};
	ssize_t n;
	size_t len = 0;
	bool ok = false;
	int fd;

	if (!*value) {
		fail(p, p->line, "%s: no file named", key);
		return false;
	}
	if (value[0] == '/' || !slash)
		n = snprintf(path, sizeof(path), "%s", value);
	else
		n = snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - p->c->path), p->c->path,
		             value);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		fail(p, p->line, "%s: path too long", key);
		return false;
	}
	if (p->flags & CONFIG_LOAD_NO_SECRETS)
		return true;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		fail(p, p->line, "%s: cannot read %s: %s", key, path, strerror(errno));
		return false;
	}
	if ((n = fstat(fd, &st)) < 0 || !S_ISREG(st.st_mode)) {
		fail(p, p->line, "%s: cannot read %s: %s", key, path,
		     n < 0 ? strerror(errno) : "not a regular file");
		close(fd);
		return false;
	}
	while (len < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fail(p, p->line, "%s: cannot read %s: %s", key, path, strerror(errno));
			goto out;
		}
		len += (size_t)n;
	}
	if (len && buf[len - 1] == '\n')
		len--;
	if (len && buf[len - 1] == '\r')
		len--;
	if (len >= size) {
		fail(p, p->line, "%s: %s: too long (at most %zu characters)", key, path, size - 1);
		goto out;
	}
	if (memchr(buf, '\n', len) || memchr(buf, '\0', len)) {
		fail(p, p->line, "%s: %s: more than one line (want the password alone)", key, path);
		goto out;
	}
	memcpy(dst, buf, len);
	dst[len] = '\0';
	ok = true;
	if (st.st_mode & (S_IRGRP | S_IROTH))
		log_warn("%s:%d: %s %s is readable by %s (chmod 600 it)", p->c->path, p->line, key,
		         path, (st.st_mode & S_IROTH) ? "others" : "its group");
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return ok;
}

/* The path a key names, relative paths taken from the config file's
 * directory, into path; false (and the error said) when it does not fit. */
static bool key_path(struct pctx *p, const char *key, const char *value, char *path, size_t size)
{
	const char *slash = strrchr(p->c->path, '/');
	int n;

	if (!*value) {
		fail(p, p->line, "%s: no file named", key);
		return false;
	}
	if (value[0] == '/' || !slash)
		n = snprintf(path, size, "%s", value);
	else
		n = snprintf(path, size, "%.*s/%s", (int)(slash - p->c->path), p->c->path, value);
	if (n < 0 || (size_t)n >= size) {
		fail(p, p->line, "%s: path too long", key);
		return false;
	}
	return true;
}

/*
 * tls_cert, tls_key, tls_ca: the PEM file is read at every load (so a
 * reload takes a renewed certificate) and must hold what the key names: a
 * certificate (tls_cert, tls_ca) or a private key (tls_key). Whether the key
 * belongs to the certificate is check_all's. rsa_private_key and
 * rsa_public_key: an RSA private key, an RSA public key (check_all: the
 * same pair).
 */
static bool set_pem(struct pctx *p, const char *key, const char *value, char *dst, size_t size)
{
	bool is_key = !strcmp(key, "tls_key") || !strcmp(key, "rsa_private_key"), ok;
	bool is_pub = !strcmp(key, "rsa_public_key"), is_rsa = !strncmp(key, "rsa_", 4);
	char path[4096];
	FILE *f;

	if (!key_path(p, key, value, path, sizeof(path)) || !copy_str(dst, size, path)) {
		if (!p->failed)
			fail(p, p->line, "%s: path too long", key);
		return false;
	}
	if (is_rsa)
		p->rsa_line = p->line;
	else
		p->tls_line = p->line;
	if (p->flags & CONFIG_LOAD_NO_SECRETS)
		return true;
	f = fopen(dst, "re");
	if (!f) {
		fail(p, p->line, "%s: cannot read %s: %s", key, dst, strerror(errno));
		return false;
	}
	if (is_key || is_pub) {
		EVP_PKEY *k = is_key ? PEM_read_PrivateKey(f, NULL, NULL, NULL)
		                     : PEM_read_PUBKEY(f, NULL, NULL, NULL);
		ok = k != NULL && (!is_rsa || EVP_PKEY_get_base_id(k) == EVP_PKEY_RSA);
		EVP_PKEY_free(k);
	} else {
		X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
		ok = x != NULL;
		X509_free(x);
	}
	fclose(f);
	ERR_clear_error();
	if (!ok)
		fail(p, p->line, "%s: %s: not a PEM %s", key, dst,
		     is_rsa ? (is_key ? "RSA private key" : "RSA public key")
		            : (is_key ? "private key" : "certificate"));
	return ok;
}

static bool set_fixed(struct pctx *p, const struct keydef *k, const char *value)
{
	void *dst = (char *)p->c + k->off;
	long long v;
	int b;

	switch (k->type) {
	case K_USER:
		if (*value && !(p->flags & CONFIG_LOAD_NO_SECRETS) && !getpwnam(value)) {
			fail(p, p->line, "%s: no user \"%s\" on this host", k->key, value);
			return false;
		}
		if (!copy_str(dst, k->size, value)) {
			fail(p, p->line, "%s: value too long (at most %zu characters)", k->key,
			     k->size - 1);
			return false;
		}
		return true;
	case K_PEM:
		return set_pem(p, k->key, value, dst, k->size);
	case K_SECRET_FILE:
	case K_SECRET:
		if (p->probe_password_given) {
			fail(p, p->line, "%s: give password or password_file, not both", k->key);
			return false;
		}
		p->probe_password_given = true;
		if (k->type == K_SECRET_FILE)
			return read_secret_file(p, k->key, value, dst, k->size);
		if (*value && !p->password_line)
			p->password_line = p->line;
		/* fall through */
	case K_STR:
		if (!copy_str(dst, k->size, value)) {
			fail(p, p->line, "%s: value too long (at most %zu characters)", k->key,
			     k->size - 1);
			return false;
		}
		return true;
	case K_IP: {
		struct sockaddr_storage ss;

		if (!parse_ip(value, &ss) || !copy_str(dst, k->size, value)) {
			fail(p, p->line, "%s: bad address \"%s\"", k->key, value);
			return false;
		}
		return true;
	}
	case K_LISTEN: {
		struct sockaddr_storage ss;
		socklen_t sl;

		if ((*value && !config_parse_listen(value, &ss, &sl)) ||
		    !copy_str(dst, k->size, value)) {
			fail(p, p->line,
			     "%s: bad address \"%s\" (want HOST:PORT, [IPv6]:PORT or empty)",
			     k->key, value);
			return false;
		}
		return true;
	}
	case K_INT:
	case K_U32:
	case K_U64:
		if (!config_parse_int(value, k->min, k->max, &v)) {
			fail(p, p->line, "%s: bad number \"%s\" (want %lld..%lld)", k->key, value,
			     k->min, k->max);
			return false;
		}
		if (k->type == K_INT)
			*(int *)dst = (int)v;
		else if (k->type == K_U32)
			*(uint32_t *)dst = (uint32_t)v;
		else
			*(uint64_t *)dst = (uint64_t)v;
		return true;
	case K_BOOL:
		b = parse_bool(value);
		if (b < 0) {
			fail(p, p->line, "%s: bad value \"%s\" (want on | off)", k->key, value);
			return false;
		}
		*(bool *)dst = b;
		return true;
	case K_LOGLEVEL:
		return set_enum(p, k->key, value, log_level_names, NELEM(log_level_names), dst);
	case K_LOGFMT:
		return set_enum(p, k->key, value, log_format_names, NELEM(log_format_names), dst);
	case K_WPOL:
		return set_enum(p, k->key, value, wpol_names, NELEM(wpol_names), dst);
	case K_RPOL:
		return set_enum(p, k->key, value, rpol_names, NELEM(rpol_names), dst);
	case K_RYW:
		return set_enum(p, k->key, value, ryw_names, NELEM(ryw_names), dst);
	case K_AUTHPLUGIN:
		return set_enum(p, k->key, value, auth_plugin_names, NELEM(auth_plugin_names), dst);
	case K_VIP:
		return parse_addrs(p, k->key, value, p->c->vips, CONFIG_MAX_VIPS, &p->c->nvips);
	case K_BIND:
		if (!parse_addrs(p, k->key, value, p->c->binds, CONFIG_MAX_BINDS, &p->c->nbinds))
			return false;
		if (!p->c->nbinds) {
			fail(p, p->line, "%s: no address (want a list such as 127.0.0.1, ::1)",
			     k->key);
			return false;
		}
		return true;
	}
	return false;
}

/* ---- named sections ---- */

static void *grow(void *arr, size_t n, size_t elem)
{
	/* Arrays grow one element at a time: configs are small. */
	void *a = realloc(arr, (n + 1) * elem);

	if (a)
		memset((char *)a + n * elem, 0, elem);
	return a;
}

static bool begin_named(struct pctx *p, enum sect sec, const char *name)
{
	struct config *c = p->c;

	if (!config_valid_name(name)) {
		fail(p, p->line, "bad name \"%s\" (want 1-%d of A-Z a-z 0-9 _ - .)", name,
		     TOPO_NAME_MAX - 1);
		return false;
	}
	switch (sec) {
	case SEC_ROUTE:
		p->route_given = true;
		for (size_t i = 0; i < c->nroutes; i++)
			if (!strcmp(c->routes[i].name, name)) {
				fail(p, p->line, "duplicate route name \"%s\" (first at line %d)",
				     name, c->routes[i].line);
				return false;
			}
		if (c->nroutes == CONFIG_MAX_ROUTES) {
			fail(p, p->line, "route \"%s\": more than %d routes", name,
			     CONFIG_MAX_ROUTES);
			return false;
		}
		if (!(c->routes = grow(c->routes, c->nroutes, sizeof(*c->routes))))
			goto oom;
		p->cur = c->nroutes++;
		strcpy(c->routes[p->cur].name, name);
		c->routes[p->cur].line = p->line;
		c->routes[p->cur].role = ROUTE_WRITER;
		return true;
	case SEC_BACKEND:
		for (size_t i = 0; i < c->nbackends; i++)
			if (!strcmp(c->backends[i].name, name)) {
				fail(p, p->line, "duplicate backend name \"%s\" (first at line %d)",
				     name, c->backends[i].line);
				return false;
			}
		if (!(c->backends = grow(c->backends, c->nbackends, sizeof(*c->backends))))
			goto oom;
		p->cur = c->nbackends++;
		strcpy(c->backends[p->cur].name, name);
		c->backends[p->cur].line = p->line;
		c->backends[p->cur].port = 3306;
		c->backends[p->cur].priority = CONFIG_DEFAULT_PRIORITY;
		c->backends[p->cur].weight = CONFIG_DEFAULT_WEIGHT;
		return true;
	case SEC_USER:
		for (size_t i = 0; i < c->nusers; i++)
			if (!strcmp(c->users[i].name, name)) {
				fail(p, p->line, "duplicate user \"%s\" (first at line %d)", name,
				     p->user_lines[i]);
				return false;
			}
		if (!(c->users = grow(c->users, c->nusers, sizeof(*c->users))))
			goto oom;
		if (!(p->user_lines = realloc(p->user_lines, (c->nusers + 1) * sizeof(int))))
			goto oom;
		p->cur = c->nusers++;
		strcpy(c->users[p->cur].name, name);
		p->user_lines[p->cur] = p->line;
		return true;
	default:
		return false;
	}
oom:
	fail(p, p->line, "out of memory");
	return false;
}

static void begin_section(struct pctx *p, const char *name)
{
	static const struct {
		const char *name;
		enum sect sec;
	} fixed[] = {{"mysteerd", SEC_MYSTEERD},
	             {"probe", SEC_PROBE},
	             {"steer", SEC_STEER},
	             {"proxy", SEC_PROXY},
	             {"cluster", SEC_CLUSTER}};
	static const struct {
		const char *prefix;
		enum sect sec;
	} named[] = {{"route:", SEC_ROUTE},
	             {"routing:", SEC_ROUTE}, /* MySQL Router's, see set_router_key */
	             {"backend:", SEC_BACKEND},
	             {"user:", SEC_USER}};

	p->sec = SEC_NONE;
	p->sec_line = p->line;
	snprintf(p->where, sizeof(p->where), "%s", name);
	for (size_t i = 0; i < NELEM(fixed); i++)
		if (!strcmp(name, fixed[i].name)) {
			p->sec = fixed[i].sec;
			if (p->sec == SEC_PROBE && !p->probe_line)
				p->probe_line = p->line;
			if (p->sec == SEC_CLUSTER && !p->cluster_line)
				p->cluster_line = p->line;
			return;
		}
	for (size_t i = 0; i < NELEM(named); i++) {
		size_t n = strlen(named[i].prefix);

		if (strncmp(name, named[i].prefix, n))
			continue;
		p->router_syntax = !strcmp(named[i].prefix, "routing:");
		if (begin_named(p, named[i].sec, name + n))
			p->sec = named[i].sec;
		return;
	}
	fail(p, p->line,
	     "unknown section [%s] (want mysteerd, probe, steer, proxy, cluster, route:NAME "
	     "(or routing:NAME), backend:NAME, user:NAME)",
	     name);
}

static bool check_port(struct pctx *p, const char *value, uint16_t *port)
{
	long long v;

	if (!config_parse_int(value, LLONG_MIN, LLONG_MAX, &v)) {
		fail(p, p->line, "port: bad number \"%s\"", value);
		return false;
	}
	if (v < 1 || v > 65535) {
		fail(p, p->line, "port: %lld out of range (1..65535)", v);
		return false;
	}
	*port = (uint16_t)v;
	return true;
}

/* A route role in MySQL Router's words (PRIMARY, SECONDARY; read-write,
 * read-only of its older `mode`) or mysteer's. */
static bool router_role(struct pctx *p, struct config_route *r, const char *key, const char *v)
{
	static const struct {
		const char *word;
		enum route_role role;
	} words[] = {{"PRIMARY", ROUTE_WRITER},   {"read-write", ROUTE_WRITER},
	             {"SECONDARY", ROUTE_READER}, {"read-only", ROUTE_READER},
	             {"writer", ROUTE_WRITER},    {"reader", ROUTE_READER},
	             {"split", ROUTE_SPLIT}};
	size_t n = strcspn(v, "&");

	for (size_t i = 0; i < NELEM(words); i++)
		if (strlen(words[i].word) == n && !strncasecmp(v, words[i].word, n)) {
			r->role = words[i].role;
			return true;
		}
	fail(p, p->line,
	     "%s: role \"%.*s\" not supported (want PRIMARY or SECONDARY; mysteer routes "
	     "by role, PRIMARY_AND_SECONDARY has no equivalent)",
	     key, (int)n, v);
	return false;
}

/*
 * MySQL Router's [routing:NAME] keys, so that its sections carry over as they
 * are: what mysteer does the same way is taken; what mysteer decides
 * elsewhere (servers from [backend:] sections and their probed roles, one
 * reader_policy, the addresses of [steer] and [proxy]) is accepted with a
 * warning that says where; anything else is an error naming what is taken.
 */
static bool set_router_key(struct pctx *p, struct config_route *r, const char *key,
                           const char *value)
{
	static const char *const strategies[] = {"first-available", "next-available", "round-robin",
	                                         "round-robin-with-fallback"};
	const char *q;

	if (!strcmp(key, "bind_port"))
		return check_port(p, value, &r->port);
	if (!strcmp(key, "role") || !strcmp(key, "mode"))
		return router_role(p, r, key, value);
	if (!strcmp(key, "destinations")) {
		q = strstr(value, "role=");
		if (!strncmp(value, "metadata-cache://", 17) && q)
			return router_role(p, r, "destinations", q + 5);
		log_warn("%s:%d: destinations: the list is not used: mysteer routes to the "
		         "[backend:] sections by the role their probes find",
		         p->c->path, p->line);
		return true;
	}
	if (!strcmp(key, "bind_address")) {
		log_warn("%s:%d: bind_address is not used: 6446/6447 are steered at [steer] vip, "
		         "6450 listens on [proxy] bind",
		         p->c->path, p->line);
		return true;
	}
	if (!strcmp(key, "routing_strategy")) {
		if (parse_enum(value, strategies, NELEM(strategies)) < 0) {
			fail(p, p->line, "routing_strategy: unknown value \"%s\"", value);
			return false;
		}
		log_warn("%s:%d: routing_strategy is not used: [steer] reader_policy chooses "
		         "readers for every route",
		         p->c->path, p->line);
		return true;
	}
	if (!strcmp(key, "protocol")) {
		if (strcasecmp(value, "classic") == 0)
			return true;
		fail(p, p->line, "protocol: \"%s\" not supported (only classic)", value);
		return false;
	}
	fail(p, p->line,
	     "unknown key \"%s\" in [%s] (of MySQL Router's keys mysteer takes bind_port, "
	     "bind_address, destinations, role, mode, routing_strategy, protocol)",
	     key, p->where);
	return false;
}

static bool set_route(struct pctx *p, const char *key, const char *value)
{
	struct config_route *r = &p->c->routes[p->cur];
	int role;

	if (p->router_syntax)
		return set_router_key(p, r, key, value);
	if (!strcmp(key, "port"))
		return check_port(p, value, &r->port);
	if (!strcmp(key, "role")) {
		role = parse_enum(value, route_role_names, NELEM(route_role_names));
		if (role < 0) {
			fail(p, p->line,
			     "role: unknown route role \"%s\" (want writer | reader | "
			     "split)",
			     value);
			return false;
		}
		r->role = (enum route_role)role;
		return true;
	}
	fail(p, p->line, "unknown key \"%s\" in [%s] (want port, role)", key, p->where);
	return false;
}

static bool set_backend(struct pctx *p, const char *key, const char *value)
{
	struct config_backend *b = &p->c->backends[p->cur];
	long long v;

	if (!strcmp(key, "host")) {
		if (!*value || !copy_str(b->host, sizeof(b->host), value)) {
			fail(p, p->line, "host: bad host \"%s\"", value);
			return false;
		}
		return true;
	}
	if (!strcmp(key, "port"))
		return check_port(p, value, &b->port);
	if (!strcmp(key, "priority") || !strcmp(key, "weight")) {
		bool prio = key[0] == 'p';
		long long max = prio ? CONFIG_PRIORITY_MAX : CONFIG_WEIGHT_MAX;

		if (!config_parse_int(value, 0, max, &v)) {
			fail(p, p->line, "%s: bad number \"%s\" (want 0..%lld)", key, value, max);
			return false;
		}
		*(prio ? &b->priority : &b->weight) = (int)v;
		return true;
	}
	if (!strcmp(key, "tls")) {
		if (!strcmp(value, "verify")) {
			b->tls = BACKEND_TLS_VERIFY;
			return true;
		}
		int on = parse_bool(value);
		if (on < 0) {
			fail(p, p->line, "tls: bad value \"%s\" (want off, on, verify)", value);
			return false;
		}
		b->tls = on ? BACKEND_TLS_ON : BACKEND_TLS_OFF;
		return true;
	}
	if (!strcmp(key, "proxy_protocol")) {
		int on = parse_bool(value);

		if (on < 0) {
			fail(p, p->line, "proxy_protocol: bad value \"%s\" (want on, off)", value);
			return false;
		}
		b->proxy_protocol = on;
		return true;
	}
	if (!strcmp(key, "tls_ca")) {
		int keep = p->tls_line; /* that one points at [proxy]'s keys */
		bool ok = set_pem(p, key, value, b->tls_ca, sizeof(b->tls_ca));

		p->tls_line = keep;
		return ok;
	}
	fail(p, p->line,
	     "unknown key \"%s\" in [%s] (want host, port, priority, weight, tls, tls_ca, "
	     "proxy_protocol)",
	     key, p->where);
	return false;
}

static bool set_user(struct pctx *p, const char *key, const char *value)
{
	struct config_user *u = &p->c->users[p->cur];

	if (!strcmp(key, "password_file")) {
		if (u->has_password) {
			fail(p, p->line, "password_file: give password or password_file, not both");
			return false;
		}
		u->has_password = true;
		return read_secret_file(p, key, value, u->password, sizeof(u->password));
	}
	if (!strcmp(key, "password")) {
		if (u->has_password) {
			fail(p, p->line, "password: give password or password_file, not both");
			return false;
		}
		if (!copy_str(u->password, sizeof(u->password), value)) {
			fail(p, p->line, "password: too long (at most %zu characters)",
			     sizeof(u->password) - 1);
			return false;
		}
		if (!p->password_line)
			p->password_line = p->line;
		u->has_password = true;
		return true;
	}
	if (!strcmp(key, "password_hash")) {
		if (!config_parse_password_hash(value, u->hash_stage2)) {
			fail(p, p->line,
			     "password_hash: bad hash (want * and 40 hex digits, as in "
			     "mysql.user)");
			return false;
		}
		u->has_hash = true;
		return true;
	}
	fail(p, p->line, "unknown key \"%s\" in [%s] (want password, password_file, password_hash)",
	     key, p->where);
	return false;
}

static bool note_key(struct pctx *p, const char *key)
{
	for (size_t i = 0; i < p->nseen; i++)
		if (!strcmp(p->seen[i].key, key) && !strcmp(p->seen[i].where, p->where)) {
			fail(p, p->line, "duplicate key \"%s\" in [%s]", key, p->where);
			return false;
		}
	if (strlen(key) >= sizeof(p->seen[0].key))
		return true; /* too long to be a known key: reported as unknown */
	if (!(p->seen = grow(p->seen, p->nseen, sizeof(*p->seen)))) {
		fail(p, p->line, "out of memory");
		return false;
	}
	snprintf(p->seen[p->nseen].where, sizeof(p->seen[0].where), "%s", p->where);
	snprintf(p->seen[p->nseen].key, sizeof(p->seen[0].key), "%s", key);
	p->nseen++;
	return true;
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	struct pctx *p = user;

	(void)section; /* the reader tracked it, with its line */
	if (p->failed)
		return 1;
	if (p->sec == SEC_NONE && !p->where[0]) {
		fail(p, p->line, "key \"%s\" outside any section", key);
		return 1;
	}
	if (p->sec == SEC_NONE) /* an unknown section, already reported */
		return 1;
	if (!note_key(p, key))
		return 1;
	switch (p->sec) {
	case SEC_ROUTE:
		set_route(p, key, value);
		return 1;
	case SEC_BACKEND:
		set_backend(p, key, value);
		return 1;
	case SEC_USER:
		set_user(p, key, value);
		return 1;
	default:
		break;
	}
	for (size_t i = 0; i < NELEM(keydefs); i++)
		if (keydefs[i].sec == p->sec && !strcmp(keydefs[i].key, key)) {
			set_fixed(p, &keydefs[i], value);
			return 1;
		}
	fail(p, p->line, "unknown key \"%s\" in [%s]", key, p->where);
	return 1;
}

/* A line starting a section: note it with its line number (see top). */
static void scan_section(struct pctx *p, const char *chunk)
{
	const char *s = chunk, *e;
	char name[TOPO_NAME_MAX + 32];

	if (p->line == 1 && !strncmp(s, "\xEF\xBB\xBF", 3))
		s += 3; /* inih skips a UTF-8 BOM too */
	while (isspace((unsigned char)*s))
		s++;
	if (*s != '[')
		return;
	e = strchr(s, ']');
	if (!e) {
		fail(p, p->line, "section header without ']'");
		return;
	}
	if ((size_t)(e - s - 1) >= sizeof(name)) {
		fail(p, p->line, "section name too long");
		return;
	}
	memcpy(name, s + 1, (size_t)(e - s - 1));
	name[e - s - 1] = '\0';
	begin_section(p, trim(name));
}

static char *reader(char *buf, int num, void *stream)
{
	struct pctx *p = stream;
	size_t n;

	if (!fgets(buf, num, p->f))
		return NULL;
	n = strlen(buf);
	if (p->at_bol) {
		p->line++;
		scan_section(p, buf);
	}
	p->at_bol = n > 0 && buf[n - 1] == '\n';
	return buf;
}

static void set_defaults(struct config *c)
{
	strcpy(c->admin_socket, "/run/mysteer/admin.sock");
	strcpy(c->state_file, "/var/lib/mysteer/state");
	strcpy(c->bpffs_dir, "/sys/fs/bpf/mysteer");
	c->log_level = CFG_LOG_INFO;
	c->keep_on_exit = false;
	strcpy(c->metrics_listen, "127.0.0.1:9470");

	c->interval_ms = 200;
	c->timeout_ms = 500;
	c->fall = 2;
	c->rise = 2;
	strcpy(c->probe_user, "mysteer");
	/* no probe password: the config must give one (check_all) */
	c->max_replication_lag_s = 10;
	c->writer_policy = WRITER_POLICY_READ_ONLY;
	c->trust_routine_characteristics = false;
	c->local_infile = true;

	parse_ip("127.0.0.1", &c->vips[0]);
	parse_ip("::1", &c->vips[1]);
	c->nvips = 2;
	strcpy(c->cgroup, "auto");
	c->lookup = true;
	c->local_handoff = true;
	c->reader_policy = READER_POLICY_RANDOM;
	c->close_on_demote = true;
	strcpy(c->relay_address, "127.0.0.1");
	c->connect_timeout_ms = 3000;

	parse_ip("127.0.0.1", &c->binds[0]);
	parse_ip("::1", &c->binds[1]);
	c->nbinds = 2;
	c->workers = 0;
	c->max_client_connections = 10000;
	c->handshake_timeout_ms = 5000;
	c->max_packet_size = 16777216;       /* MariaDB's max_allowed_packet default */
	c->client_packet_timeout_ms = 30000; /* net_read_timeout's */
	c->client_idle_timeout_s = 28800;    /* wait_timeout's */
	c->max_client_buffer_bytes = 536870912;
	c->max_session_history = 256;
	c->max_session_bytes = 4194304;
	c->read_your_writes = RYW_GTID;
	c->read_your_writes_ms = 1000;
	c->pool_max_per_backend = 200;
	c->pool_min_idle = 4;
	c->pool_idle_timeout_ms = 60000;
	c->pool_wait_timeout_ms = 10000;
	c->switchover_buffer_ms = 3000;
	c->transaction_replay = true;
	c->transaction_replay_max_size = 1048576;
	c->max_prepared_per_connection = 256;
	c->max_prepared_per_session = 1024;

	strcpy(c->cluster_name, "mysteer");
	c->cluster_lease_ms = 2000;
	c->cluster_fence_after_ms = 0;
	c->cluster_follower_interval_ms = 1000;
}

static bool default_routes(struct config *c)
{
	static const struct config_route defs[] = {
	    {"rw", 6446, ROUTE_WRITER, 0},
	    {"ro", 6447, ROUTE_READER, 0},
	    {"split", 6450, ROUTE_SPLIT, 0},
	};

	c->routes = calloc(NELEM(defs), sizeof(*c->routes));
	if (!c->routes)
		return false;
	memcpy(c->routes, defs, sizeof(defs));
	c->nroutes = NELEM(defs);
	return true;
}

/* Two hosts name one address: same text, or the same IP written differently. */
static bool same_host(const char *a, const char *b)
{
	struct sockaddr_storage x, y;

	if (!strcasecmp(a, b))
		return true;
	if (!parse_ip(a, &x) || !parse_ip(b, &y) || x.ss_family != y.ss_family)
		return false;
	if (x.ss_family == AF_INET)
		return ((struct sockaddr_in *)&x)->sin_addr.s_addr ==
		       ((struct sockaddr_in *)&y)->sin_addr.s_addr;
	return !memcmp(&((struct sockaddr_in6 *)&x)->sin6_addr,
	               &((struct sockaddr_in6 *)&y)->sin6_addr, sizeof(struct in6_addr));
}

/* [proxy] tls_*: a certificate and its key come together and match;
 * require_secure_transport needs them. */
static void check_tls(struct pctx *p)
{
	struct config *c = p->c;
	int line = p->tls_line ? p->tls_line : (p->line ? p->line : 1);
	X509 *x = NULL;
	EVP_PKEY *k = NULL;
	FILE *f;

	if (!c->tls_cert[0] != !c->tls_key[0]) {
		fail(p, line, "%s: set tls_cert and tls_key together",
		     c->tls_cert[0] ? "tls_key" : "tls_cert");
		return;
	}
	if (!c->tls_cert[0] && c->tls_ca[0]) {
		fail(p, line, "tls_ca: needs tls_cert and tls_key");
		return;
	}
	if (c->require_secure_transport && !c->tls_cert[0]) {
		fail(p, p->line ? p->line : 1,
		     "require_secure_transport = on needs tls_cert and tls_key");
		return;
	}
	if (!c->tls_cert[0] || (p->flags & CONFIG_LOAD_NO_SECRETS))
		return;
	if ((f = fopen(c->tls_cert, "re"))) {
		x = PEM_read_X509(f, NULL, NULL, NULL);
		fclose(f);
	}
	if ((f = fopen(c->tls_key, "re"))) {
		k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
		fclose(f);
	}
	if (!x || !k || X509_check_private_key(x, k) != 1)
		fail(p, line, "tls_key: %s is not the key of the certificate in %s", c->tls_key,
		     c->tls_cert);
	X509_free(x);
	EVP_PKEY_free(k);
	ERR_clear_error();
}

/* [proxy] rsa_*: both or neither, one pair. */
static void check_rsa(struct pctx *p)
{
	struct config *c = p->c;
	int line = p->rsa_line ? p->rsa_line : (p->line ? p->line : 1);
	EVP_PKEY *priv = NULL, *pub = NULL;
	FILE *f;

	if (!c->rsa_private_key[0] != !c->rsa_public_key[0]) {
		fail(p, line, "%s: set rsa_private_key and rsa_public_key together",
		     c->rsa_private_key[0] ? "rsa_public_key" : "rsa_private_key");
		return;
	}
	if (!c->rsa_private_key[0] || (p->flags & CONFIG_LOAD_NO_SECRETS))
		return;
	if ((f = fopen(c->rsa_private_key, "re"))) {
		priv = PEM_read_PrivateKey(f, NULL, NULL, NULL);
		fclose(f);
	}
	if ((f = fopen(c->rsa_public_key, "re"))) {
		pub = PEM_read_PUBKEY(f, NULL, NULL, NULL);
		fclose(f);
	}
	if (!priv || !pub || EVP_PKEY_eq(priv, pub) != 1)
		fail(p, line, "rsa_public_key: %s is not the public key of %s", c->rsa_public_key,
		     c->rsa_private_key);
	EVP_PKEY_free(priv);
	EVP_PKEY_free(pub);
	ERR_clear_error();
}

/* Whole-file checks, after the last line. */
static void check_cluster(struct pctx *p);

static void check_all(struct pctx *p)
{
	struct config *c = p->c;

	check_tls(p);
	check_rsa(p);

	for (size_t i = 0; i < c->nbackends; i++) {
		const struct config_backend *b = &c->backends[i];

		if (!b->host[0])
			fail(p, b->line, "backend \"%s\": no host", b->name);
		if (b->tls == BACKEND_TLS_VERIFY && !b->tls_ca[0])
			fail(p, b->line, "backend \"%s\": tls = verify needs tls_ca", b->name);
		if (b->tls != BACKEND_TLS_VERIFY && b->tls_ca[0])
			fail(p, b->line, "backend \"%s\": tls_ca is for tls = verify", b->name);
	}
	for (size_t i = 0; i < c->nroutes; i++) {
		if (!c->routes[i].port)
			fail(p, c->routes[i].line, "route \"%s\": no port", c->routes[i].name);
		for (size_t j = 0; j < i; j++)
			if (c->routes[i].port == c->routes[j].port)
				fail(p, c->routes[i].line,
				     "route \"%s\": port %u already used by route \"%s\" (line %d)",
				     c->routes[i].name, c->routes[i].port, c->routes[j].name,
				     c->routes[j].line);
	}
	for (size_t i = 0; i < c->nusers; i++) {
		struct config_user *u = &c->users[i];

		if (u->has_password && u->has_hash)
			fail(p, p->user_lines[i],
			     "user \"%s\": give password (or password_file) or password_hash, not "
			     "both",
			     u->name);
		else if (!u->has_password && !u->has_hash)
			fail(p, p->user_lines[i],
			     "user \"%s\": no password, password_file or password_hash", u->name);
		else if (u->has_password) {
			config_hash_password(u->password, u->hash_stage2);
			u->has_hash = true;
		}
	}
	if (!c->nbackends)
		fail(p, p->line ? p->line : 1, "no backend (add a [backend:NAME] section)");
	check_cluster(p);
	/* No credential is built in: the monitoring account's is given. */
	if (!p->probe_password_given && !(p->flags & CONFIG_LOAD_NO_SECRETS))
		fail(p, p->probe_line ? p->probe_line : 1,
		     "[probe] password: not set (give password or password_file of the "
		     "monitoring user)");
}

/* [cluster]: endpoints given, a name and a host id that fit in a key. */
static void check_cluster(struct pctx *p)
{
	struct config *c = p->c;

	c->cluster = p->cluster_line > 0;
	if (!c->cluster)
		return;
	if (!c->cluster_etcd[0]) {
		fail(p, p->cluster_line,
		     "[cluster] etcd: not set (give the etcd endpoints, "
		     "http://HOST:PORT, ...)");
		return;
	}
	if (strstr(c->cluster_etcd, "https://")) {
		fail(p, p->cluster_line, "[cluster] etcd: https endpoints are not supported yet");
		return;
	}
	if (!config_valid_name(c->cluster_name)) {
		fail(p, p->cluster_line, "[cluster] name: \"%s\" (want 1-63 of A-Z a-z 0-9 _ - .)",
		     c->cluster_name);
		return;
	}
	if (!c->cluster_host_id[0]) {
		char host[256] = "";

		if (gethostname(host, sizeof(host) - 1) < 0 || !host[0]) {
			fail(p, p->cluster_line, "[cluster] host_id: not set and no host name");
			return;
		}
		snprintf(c->cluster_host_id, sizeof(c->cluster_host_id), "%.63s", host);
	}
	if (!config_valid_name(c->cluster_host_id)) {
		fail(p, p->cluster_line,
		     "[cluster] host_id: \"%s\" (want 1-63 of A-Z a-z 0-9 _ - .)",
		     c->cluster_host_id);
		return;
	}
	if (!c->cluster_fence_after_ms)
		c->cluster_fence_after_ms = c->cluster_lease_ms;
}

static void warn_all(struct pctx *p, int fd)
{
	struct config *c = p->c;
	struct stat st;

	for (size_t i = 0; i < c->nbackends; i++)
		for (size_t j = 0; j < i; j++)
			if (c->backends[i].port == c->backends[j].port &&
			    same_host(c->backends[i].host, c->backends[j].host)) {
				log_warn(
				    "%s:%d: backends \"%s\" and \"%s\" are at one address %s:%u",
				    c->path, c->backends[i].line, c->backends[j].name,
				    c->backends[i].name, c->backends[i].host, c->backends[i].port);
				break;
			}
	if (p->password_line && fstat(fd, &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH)))
		log_warn("%s:%d: file holds a password and is readable by %s (chmod 600 it)",
		         c->path, p->password_line,
		         (st.st_mode & S_IROTH) ? "others" : "its group");
}

struct config *config_load(const char *path, char *err, size_t errlen)
{
	return config_load_flags(path, 0, err, errlen);
}

struct config *config_load_flags(const char *path, unsigned flags, char *err, size_t errlen)
{
	struct pctx p = {.err = err, .errlen = errlen, .at_bol = true, .flags = flags};
	struct config *c;
	int rc;

	if (errlen)
		err[0] = '\0';
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	p.c = c;
	snprintf(c->path, sizeof(c->path), "%s", path);
	set_defaults(c);

	p.f = fopen(path, "re");
	if (!p.f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		free(c);
		return NULL;
	}
	/* Debian's libinih makes these runtime switches. Continuation lines
	 * would turn an indented "port = 1" into part of the key above it. */
	ini_allow_multiline = false;
	ini_allow_inline_comments = true;
	ini_use_stack = false;
	ini_allow_realloc = true;
	ini_initial_alloc = 256;
	ini_max_line = 16384;

	rc = ini_parse_stream(reader, &p, handler, &p);
	if (rc > 0)
		fail(&p, rc, "syntax error (want KEY = VALUE, [SECTION] or a ; comment)");
	else if (rc < 0)
		fail(&p, p.line, "read error");
	if (!p.failed && !p.route_given && !default_routes(c))
		fail(&p, p.line, "out of memory");
	if (!p.failed)
		check_all(&p);
	if (!p.failed)
		warn_all(&p, fileno(p.f));
	fclose(p.f);
	free(p.seen);
	free(p.user_lines);
	if (p.failed) {
		config_free(c);
		return NULL;
	}
	return c;
}

void config_free(struct config *c)
{
	if (!c)
		return;
	free(c->routes);
	free(c->backends);
	if (c->users)
		explicit_bzero(c->users, c->nusers * sizeof(*c->users));
	free(c->users);
	explicit_bzero(c->probe_password, sizeof(c->probe_password));
	free(c);
}

/* ---- keys a reload does not apply ---- */

enum rk_kind { RK_STR, RK_INT, RK_BOOL, RK_U32, RK_BINDS, RK_SECTION };

static const struct {
	const char *section, *key, *why;
	enum rk_kind kind;
	size_t off;
} restart_keys[] = {
#define RK(sec, key, kind, field, why)                                                             \
	{                                                                                          \
		sec, key, why, kind, offsetof(struct config, field)                                \
	}
    RK("mysteerd", "admin_socket", RK_STR, admin_socket, "the admin socket is made at start"),
    RK("mysteerd", "admin_group", RK_STR, admin_group, "the admin socket is made at start"),
    RK("mysteerd", "state_file", RK_STR, state_file, "the state is loaded at start"),
    RK("mysteerd", "pid_file", RK_STR, pid_file, "the pid file is written at start"),
    RK("mysteerd", "bpffs_dir", RK_STR, bpffs_dir, "the maps and links are pinned at start"),
    RK("mysteerd", "user", RK_STR, user, "privileges are dropped once, at start"),
    RK("mysteerd", "metrics_listen", RK_STR, metrics_listen,
       "the metrics endpoint is bound at start"),
    RK("steer", "cgroup", RK_STR, cgroup, "the connect programs are attached at start"),
    RK("steer", "lookup", RK_BOOL, lookup, "sk_lookup is attached at start"),
    RK("steer", "local_handoff", RK_BOOL, local_handoff,
       "the capabilities kept at start depend on it"),
    RK("steer", "relay_address", RK_STR, relay_address,
       "the relay and error listeners are bound at start"),
    RK("proxy", "bind", RK_BINDS, binds, "6450's listeners are bound at start"),
    RK("proxy", "workers", RK_INT, workers, "the proxy's threads are started at start"),
    RK("proxy", "max_client_connections", RK_INT, max_client_connections,
       "the proxy's limits are set at start"),
    RK("proxy", "handshake_timeout_ms", RK_INT, handshake_timeout_ms,
       "the proxy's limits are set at start"),
    RK("proxy", "max_packet_size", RK_U32, max_packet_size, "the proxy's limits are set at start"),
    RK("proxy", "pool_wait_timeout_ms", RK_INT, pool_wait_timeout_ms,
       "the proxy's limits are set at start"),
    RK("proxy", "max_prepared_per_connection", RK_INT, max_prepared_per_connection,
       "the proxy's limits are set at start"),
    RK("proxy", "max_prepared_per_session", RK_INT, max_prepared_per_session,
       "the proxy's limits are set at start"),
    RK("cluster", "(section)", RK_SECTION, cluster, "the fleet is joined at start"),
    RK("cluster", "etcd", RK_STR, cluster_etcd, "the fleet is joined at start"),
    RK("cluster", "name", RK_STR, cluster_name, "the fleet is joined at start"),
    RK("cluster", "host_id", RK_STR, cluster_host_id, "the fleet is joined at start"),
    RK("cluster", "lease_ms", RK_INT, cluster_lease_ms, "the fleet is joined at start"),
    RK("cluster", "fence_after_ms", RK_INT, cluster_fence_after_ms, "the fleet is joined at start"),
    RK("cluster", "user", RK_STR, cluster_user, "the fleet is joined at start"),
    RK("cluster", "password", RK_STR, cluster_password, "the fleet is joined at start"),
    RK("cluster", "follower_interval_ms", RK_INT, cluster_follower_interval_ms,
       "the fleet is joined at start"),
#undef RK
};

static bool same_sockaddr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
		return x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
	}
	return true;
}

static bool rk_same(const struct config *a, const struct config *b, size_t i)
{
	const char *x = (const char *)a + restart_keys[i].off;
	const char *y = (const char *)b + restart_keys[i].off;

	switch (restart_keys[i].kind) {
	case RK_STR:
		return strcmp(x, y) == 0;
	case RK_INT:
		return *(const int *)(const void *)x == *(const int *)(const void *)y;
	case RK_BOOL:
	case RK_SECTION:
		return *(const bool *)(const void *)x == *(const bool *)(const void *)y;
	case RK_U32:
		return *(const uint32_t *)(const void *)x == *(const uint32_t *)(const void *)y;
	case RK_BINDS:
		if (a->nbinds != b->nbinds)
			return false;
		for (size_t j = 0; j < a->nbinds; j++)
			if (!same_sockaddr(&a->binds[j], &b->binds[j]))
				return false;
		return true;
	}
	return true;
}

size_t config_restart_keys(const struct config *old, const struct config *nc,
                           struct config_restart_key out[CONFIG_RESTART_KEYS_MAX])
{
	size_t n = 0;
	bool sections = old->cluster != nc->cluster;

	for (size_t i = 0; i < sizeof(restart_keys) / sizeof(restart_keys[0]); i++) {
		/* [cluster] added or removed: that one line, not each key. */
		if (sections && !strcmp(restart_keys[i].section, "cluster") &&
		    restart_keys[i].kind != RK_SECTION)
			continue;
		if (!sections && restart_keys[i].kind == RK_SECTION)
			continue;
		if (rk_same(old, nc, i) || n >= CONFIG_RESTART_KEYS_MAX)
			continue;
		out[n].section = restart_keys[i].section;
		out[n].key = restart_keys[i].key;
		out[n].why = restart_keys[i].why;
		n++;
	}
	return n;
}

const struct config_backend *config_find_backend(const struct config *c, const char *name)
{
	for (size_t i = 0; i < c->nbackends; i++)
		if (!strcmp(c->backends[i].name, name))
			return &c->backends[i];
	return NULL;
}

const struct config_user *config_find_user(const struct config *c, const char *name)
{
	for (size_t i = 0; i < c->nusers; i++)
		if (!strcmp(c->users[i].name, name))
			return &c->users[i];
	return NULL;
}

const struct config_route *config_find_route(const struct config *c, const char *name)
{
	for (size_t i = 0; i < c->nroutes; i++)
		if (!strcmp(c->routes[i].name, name))
			return &c->routes[i];
	return NULL;
}
