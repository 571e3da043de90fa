/*
 * test_config.c - the config parser (every error of the contract, with its
 * line), the defaults, and the state overlay (edits, apply, load/save round
 * trips, corrupt files).
 */
#include <check.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "common/log.h"
#include "config/config.h"
#include "config/state.h"

static char tmpdir[] = "/tmp/test_config.XXXXXX";
static char errbuf[1024];

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	log_set_level(LOG_LVL_ERROR);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
	strcpy(tmpdir, "/tmp/test_config.XXXXXX");
}

/* Writes text to tmpdir/name with mode and returns the path (static). */
static const char *write_conf(const char *name, const char *text, mode_t mode)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, mode), 0);
	return path;
}

static struct config *load_text(const char *text)
{
	return config_load(write_conf("t.conf", text, 0600), errbuf, sizeof(errbuf));
}

/* The monitoring user's password, which every config must give. */
#define PW "[probe]\npassword = pw\n"

/* ---- defaults and the shipped config ---- */

START_TEST(test_shipped_config)
{
	struct config *c = config_load("etc/mysteer.conf", errbuf, sizeof(errbuf));

	ck_assert_msg(c, "%s", errbuf);
	ck_assert_str_eq(c->admin_socket, "/run/mysteer/admin.sock");
	ck_assert_str_eq(c->admin_group, "");
	ck_assert_str_eq(c->user, ""); /* stays root */
	ck_assert_str_eq(c->state_file, "/var/lib/mysteer/state");
	ck_assert_str_eq(c->bpffs_dir, "/sys/fs/bpf/mysteer");
	ck_assert_int_eq(c->log_level, CFG_LOG_INFO);
	ck_assert_int_eq(c->log_format, CFG_LOG_TEXT);
	ck_assert(!c->keep_on_exit);
	ck_assert_int_eq(c->interval_ms, 200);
	ck_assert_int_eq(c->timeout_ms, 500);
	ck_assert_int_eq(c->fall, 2);
	ck_assert_int_eq(c->rise, 2);
	ck_assert_str_eq(c->probe_user, "mysteer");
	ck_assert_str_eq(c->probe_password, "mysteer");
	ck_assert_int_eq(c->max_replication_lag_s, 10);
	ck_assert_int_eq(c->writer_policy, WRITER_POLICY_READ_ONLY);
	ck_assert(!c->failback);
	ck_assert_uint_eq(c->nvips, 2);
	ck_assert_int_eq(c->vips[0].ss_family, AF_INET);
	ck_assert_int_eq(c->vips[1].ss_family, AF_INET6);
	ck_assert_str_eq(c->cgroup, "auto");
	ck_assert(c->lookup && c->local_handoff && c->close_on_demote);
	ck_assert_str_eq(c->relay_address, "127.0.0.1");
	ck_assert_uint_eq(c->nbinds, 2);
	ck_assert_int_eq(c->binds[0].ss_family, AF_INET);
	ck_assert_uint_eq(((struct sockaddr_in *)&c->binds[0])->sin_addr.s_addr,
	                  htonl(INADDR_LOOPBACK));
	ck_assert_int_eq(c->binds[1].ss_family, AF_INET6);
	ck_assert(IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&c->binds[1])->sin6_addr));
	ck_assert_int_eq(c->read_your_writes, RYW_GTID);
	ck_assert_uint_eq(c->max_packet_size, 16777216u);
	ck_assert_int_eq(c->client_packet_timeout_ms, 30000);
	ck_assert_int_eq(c->client_idle_timeout_s, 28800);
	ck_assert_uint_eq(c->max_client_buffer_bytes, 536870912u);
	ck_assert_int_eq(c->max_session_history, 256);
	ck_assert_uint_eq(c->max_session_bytes, 4194304u);
	ck_assert_int_eq(c->pool_max_per_backend, 200);
	ck_assert_int_eq(c->switchover_buffer_ms, 3000);
	ck_assert(c->transaction_replay);
	ck_assert_uint_eq(c->transaction_replay_max_size, 1048576u);

	ck_assert_uint_eq(c->nroutes, 3);
	ck_assert_str_eq(c->routes[0].name, "rw");
	ck_assert_int_eq(c->routes[1].port, 6447);
	ck_assert_int_eq(c->routes[1].role, ROUTE_READER);
	ck_assert_int_eq(c->routes[2].role, ROUTE_SPLIT);

	ck_assert_uint_eq(c->nbackends, 3);
	ck_assert_str_eq(c->backends[0].name, "db1");
	ck_assert_int_eq(c->backends[0].port, 3306);
	ck_assert_int_eq(c->backends[1].priority, 200);
	ck_assert_int_eq(c->backends[2].weight, 1);
	ck_assert_int_eq(c->backends[2].port, 3308);

	ck_assert_uint_eq(c->nusers, 1);
	const struct config_user *u = config_find_user(c, "app");
	ck_assert_ptr_nonnull(u);
	ck_assert(u->has_password && u->has_hash);
	uint8_t want[20];
	ck_assert(config_parse_password_hash("*5BCB3E6AC345B435C7C2E6B7949A04CE6F6563D3", want));
	ck_assert_mem_eq(u->hash_stage2, want, 20);
	ck_assert_ptr_null(config_find_user(c, "nobody"));
	ck_assert_ptr_nonnull(config_find_backend(c, "db2"));
	ck_assert_ptr_null(config_find_backend(c, "db9"));
	config_free(c);
}
END_TEST

START_TEST(test_full_config)
{
	struct config *c = config_load("tests/unit/configs/full.conf", errbuf, sizeof(errbuf));
	char a[64];

	ck_assert_msg(c, "%s", errbuf);
	ck_assert_str_eq(c->admin_group, "wheel");
	ck_assert_int_eq(c->log_level, CFG_LOG_DEBUG);
	ck_assert(c->keep_on_exit);
	ck_assert_int_eq(c->fall, 3);
	ck_assert_int_eq(c->rise, 4);
	ck_assert_str_eq(c->probe_password, "secret"); /* inline comment stripped */
	ck_assert_int_eq(c->writer_policy, WRITER_POLICY_PRIORITY);
	ck_assert(c->failback);
	ck_assert(c->trust_routine_characteristics);
	ck_assert_uint_eq(c->nvips, 3);
	ck_assert_int_eq(c->vips[1].ss_family, AF_INET6);
	inet_ntop(AF_INET, &((struct sockaddr_in *)&c->vips[2])->sin_addr, a, sizeof(a));
	ck_assert_str_eq(a, "192.168.1.1");
	ck_assert_str_eq(c->cgroup, "");
	ck_assert(!c->lookup && !c->local_handoff && !c->close_on_demote);
	ck_assert_int_eq(c->reader_policy, READER_POLICY_LEAST_CONN);
	ck_assert_str_eq(c->relay_address, "::1");
	ck_assert_int_eq(c->workers, 3);
	ck_assert_uint_eq(c->nbinds, 2);
	ck_assert_uint_eq(((struct sockaddr_in *)&c->binds[0])->sin_addr.s_addr, INADDR_ANY);
	ck_assert(IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)&c->binds[1])->sin6_addr));
	ck_assert_uint_eq(c->max_packet_size, 16777216u);
	ck_assert_int_eq(c->client_packet_timeout_ms, 1500);
	ck_assert_int_eq(c->client_idle_timeout_s, 600);
	ck_assert_uint_eq(c->max_client_buffer_bytes, 8589934592ull); /* past 32 bits */
	ck_assert_int_eq(c->max_session_history, 32);
	ck_assert_uint_eq(c->max_session_bytes, 65536u);
	ck_assert(!c->transaction_replay);
	ck_assert_uint_eq(c->transaction_replay_max_size, 4096u);
	ck_assert_int_eq(c->read_your_writes, RYW_WINDOW);
	ck_assert_int_eq(c->pool_min_idle, 0);

	/* Route sections given: no default routes are added. */
	ck_assert_uint_eq(c->nroutes, 2);
	ck_assert_ptr_null(config_find_route(c, "rw"));
	ck_assert_int_eq(config_find_route(c, "s")->role, ROUTE_SPLIT);

	/* Indented keys are keys, not continuation lines. */
	const struct config_backend *b = config_find_backend(c, "a");
	ck_assert_str_eq(b->host, "::1");
	ck_assert_int_eq(b->port, 4000);
	ck_assert_int_eq(b->priority, 5);
	ck_assert_int_eq(b->weight, 0);
	b = config_find_backend(c, "b");
	ck_assert_int_eq(b->port, 3306);
	ck_assert_int_eq(b->priority, 100);
	ck_assert_int_eq(b->line, 62);

	const struct config_user *u = config_find_user(c, "h");
	uint8_t want[20];
	config_hash_password("123456", want);
	ck_assert(u->has_hash && !u->has_password);
	ck_assert_mem_eq(u->hash_stage2, want, 20);
	config_free(c);
}
END_TEST

START_TEST(test_minimal_defaults)
{
	struct config *c = config_load("tests/unit/configs/minimal.conf", errbuf, sizeof(errbuf));

	ck_assert_msg(c, "%s", errbuf);
	ck_assert_uint_eq(c->nroutes, 3);
	ck_assert_int_eq(config_find_route(c, "split")->port, 6450);
	/* 6450 listens on loopback unless told otherwise */
	ck_assert_uint_eq(c->nbinds, 2);
	ck_assert_int_eq(c->binds[0].ss_family, AF_INET);
	ck_assert_uint_eq(((struct sockaddr_in *)&c->binds[0])->sin_addr.s_addr,
	                  htonl(INADDR_LOOPBACK));
	ck_assert(IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&c->binds[1])->sin6_addr));
	ck_assert_int_eq(c->backends[0].port, 3306);
	ck_assert_uint_eq(c->nusers, 0);
	config_free(c);
}
END_TEST

START_TEST(test_long_line)
{
	char text[8192];
	char host[TOPO_HOST_MAX];
	struct config *c;

	memset(host, 'h', sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	host[200] = '\0'; /* longer than libinih's default line */
	snprintf(text, sizeof(text), "; %0*d\n[backend:a]\nhost = %s\nport = 1\n" PW, 3000, 0,
	         host);
	c = load_text(text);
	ck_assert_msg(c, "%s", errbuf);
	ck_assert_str_eq(c->backends[0].host, host);
	ck_assert_int_eq(c->backends[0].line, 2);
	config_free(c);
}
END_TEST

START_TEST(test_bom)
{
	struct config *c = load_text("\xEF\xBB\xBF[backend:a]\nhost = h\n" PW);

	ck_assert_msg(c, "%s", errbuf);
	ck_assert_str_eq(c->backends[0].name, "a");
	config_free(c);
}
END_TEST

/* ---- errors: one line FILE:LINE: reason ---- */

struct bad {
	const char *text;
	int line;
	const char *want; /* substring of the message */
};

#define BE "[backend:a]\nhost = 127.0.0.1\n"

static const struct bad bad_configs[] = {
    {"[nope]\n" BE, 1, "unknown section [nope]"},
    {BE "[mysteerd]\nfoo = 1\n", 4, "unknown key \"foo\" in [mysteerd]"},
    {BE "[probe]\ninterval_ms = 10x\n", 4, "interval_ms: bad number \"10x\""},
    {BE "[probe]\nfall = 0\n", 4, "fall: bad number"},
    {BE "[probe]\ntimeout_ms = 99999999999999999999\n", 4, "timeout_ms: bad number"},
    {BE "port = 70000\n", 3, "port: 70000 out of range"},
    {BE "port = 0\n", 3, "out of range"},
    {BE "port = -1\n", 3, "out of range"},
    {BE "port = abc\n", 3, "port: bad number"},
    {BE "priority = -5\n", 3, "priority: bad number"},
    {BE "weight = many\n", 3, "weight: bad number"},
    {BE "[backend:a]\nhost = x\n", 3, "duplicate backend name \"a\" (first at line 1)"},
    {"[route:x]\nport = 7000\n[route:y]\nport = 7000\n" BE, 3,
     "port 7000 already used by route \"x\""},
    {"[route:x]\nport = 7000\nrole = boss\n" BE, 3, "unknown route role \"boss\""},
    {"[route:x]\nrole = writer\n" BE, 1, "route \"x\": no port"},
    {"[probe]\ninterval_ms = 100\n", 2, "no backend"},
    {"", 1, "no backend"},
    {BE "[probe]\nwriter_policy = newest\n", 4, "writer_policy: unknown value \"newest\""},
    {BE "[steer]\nreader_policy = rr\n", 4, "reader_policy: unknown value"},
    {BE "[proxy]\nread_your_writes = maybe\n", 4, "read_your_writes: unknown value"},
    {BE "[mysteerd]\nlog_level = loud\n", 4, "log_level: unknown value"},
    {BE "[mysteerd]\nlog_format = xml\n", 4, "log_format: unknown value \"xml\""},
    {BE "[mysteerd]\nkeep_on_exit = perhaps\n", 4, "keep_on_exit: bad value"},
    {BE "[steer]\nvip = 127.0.0.1, 300.1.1.1\n", 4, "vip: bad address \"300.1.1.1\""},
    {BE "[steer]\nvip = example.com\n", 4, "vip: bad address"},
    {BE "[steer]\nrelay_address = here\n", 4, "relay_address: bad address"},
    {BE "[proxy]\nbind =\n", 4, "bind: no address"},
    {BE "[mysteerd]\nuser = no-such-user-here\n", 4,
     "user: no user \"no-such-user-here\" on this host"},
    {BE "[proxy]\nbind = ,\n", 4, "bind: no address"},
    {BE "[proxy]\nbind = 127.0.0.1, localhost\n", 4, "bind: bad address \"localhost\""},
    {BE "[proxy]\nbind = ::1, 0:0::1\n", 4, "bind: address \"0:0::1\" given twice"},
    {BE "[proxy]\nbind = 1.1.1.1,1.1.1.2,1.1.1.3,1.1.1.4,1.1.1.5,1.1.1.6,1.1.1.7,1.1.1.8,"
        "1.1.1.9,1.1.1.10,1.1.1.11,1.1.1.12,1.1.1.13,1.1.1.14,1.1.1.15,1.1.1.16,1.1.1.17\n",
     4, "bind: more than 16 addresses"},
    {BE "[user:u]\npassword_hash = 6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9\n", 4,
     "password_hash: bad hash"},
    {BE "[user:u]\npassword_hash = *6BB4837EB74329105EE4568DDA7DC67ED2CA2AD\n", 4,
     "password_hash: bad hash"},
    {BE "[user:u]\npassword_hash = *6BB4837EB74329105EE4568DDA7DC67ED2CA2ADZ\n", 4,
     "password_hash: bad hash"},
    {BE "[user:u]\n", 3, "user \"u\": no password, password_file or password_hash"},
    {BE "[user:u]\npassword = x\npassword_hash = *6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9\n", 3,
     "not both"},
    {BE "[user:u]\nhost = x\n", 4, "unknown key \"host\" in [user:u]"},
    {"[backend:a]\n", 1, "backend \"a\": no host"},
    {"[backend:bad name]\nhost = x\n", 1, "bad name \"bad name\""},
    {"host = x\n" BE, 1, "outside any section"},
    {BE "this line has no equals\n", 3, "syntax error"},
    {BE "[probe\n", 3, "without ']'"},
    {BE "[probe]\nfall = 2\nfall = 3\n", 5, "duplicate key \"fall\" in [probe]"},
    {BE "[proxy]\nmax_packet_size = 2000000000\n", 4, "max_packet_size: bad number"},
    {BE "[proxy]\nclient_idle_timeout_s = 0\n", 4, "client_idle_timeout_s: bad number"},
    {BE "[proxy]\nmax_client_buffer_bytes = 1000\n", 4,
     "max_client_buffer_bytes: bad number \"1000\" (want 1048576..1099511627776)"},
    {BE "[proxy]\nmax_session_history = -1\n", 4, "max_session_history: bad number"},
    {BE "[proxy]\nswitchover_buffer_ms = -1\n", 4, "switchover_buffer_ms: bad number"},
    {BE "[mysteerd]\nadmin_socket = /" /* 108+ characters */
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
     4, "admin_socket: value too long"},
    {BE "[route:r]\nport = 1\nrole = reader\n[route:r]\nport = 2\n", 6,
     "duplicate route name \"r\""},
    {"[routing:x]\nbind_port = 7000\nrole = PRIMARY_AND_SECONDARY\n" BE, 3,
     "role: role \"PRIMARY_AND_SECONDARY\" not supported"},
    {"[routing:x]\nbind_port = 7000\ndestinations = metadata-cache://c/?role=ANY\n" BE, 3,
     "destinations: role \"ANY\" not supported"},
    {"[routing:x]\nbind_port = 7000\nmax_connections = 10\n" BE, 3,
     "unknown key \"max_connections\" in [routing:x] (of MySQL Router's keys mysteer takes"},
    {"[routing:x]\nbind_port = 7000\nprotocol = x\n" BE, 3, "protocol: \"x\" not supported"},
    {"[routing:x]\nbind_port = 7000\nrouting_strategy = fastest\n" BE, 3,
     "routing_strategy: unknown value \"fastest\""},
    {"[routing:x]\nport = 7000\n" BE, 2, "unknown key \"port\" in [routing:x]"},
    {BE "[cluster]\nname = x\n", 3, "[cluster] etcd: not set"},
    {BE "[cluster]\netcd = https://e:2379\n", 3, "https endpoints are not supported"},
    {BE "[cluster]\netcd = http://e:2379\nname = a/b\n", 3, "[cluster] name: \"a/b\""},
    {BE "[cluster]\netcd = http://e:2379\nhost_id = h h\n", 3, "[cluster] host_id: \"h h\""},
    {BE "[cluster]\netcd = http://e:2379\nlease_ms = 10\n", 5, "lease_ms: bad number"},
    {BE "[cluster]\nfoo = 1\n", 4, "unknown key \"foo\" in [cluster]"},
    /* the ninth route: the eBPF maps hold 8 */
    {"[route:a]\nport=1\n[route:b]\nport=2\n[route:c]\nport=3\n[route:d]\nport=4\n"
     "[route:e]\nport=5\n[route:f]\nport=6\n[route:g]\nport=7\n[route:h]\nport=8\n"
     "[route:i]\nport=9\n" BE,
     17, "route \"i\": more than 8 routes"},
};

/* [cluster]: absent by default; host_id the host name, fence_after_ms the
 * lease unless given. */
START_TEST(test_cluster_keys)
{
	char host[256] = "";
	struct config *c = load_text(PW BE);

	ck_assert_msg(c, "%s", errbuf);
	ck_assert(!c->cluster);
	config_free(c);
	c = load_text(PW BE "[cluster]\netcd = http://10.0.0.1:2379, http://10.0.0.2:2379\n");
	ck_assert_msg(c, "%s", errbuf);
	ck_assert(c->cluster);
	ck_assert_str_eq(c->cluster_name, "mysteer");
	ck_assert_int_eq(gethostname(host, sizeof(host) - 1), 0);
	host[63] = '\0';
	ck_assert_str_eq(c->cluster_host_id, host);
	ck_assert_int_eq(c->cluster_lease_ms, 2000);
	ck_assert_int_eq(c->cluster_fence_after_ms, 2000);
	config_free(c);
	c = load_text(PW BE "[cluster]\netcd = http://e:2379\nname = prod\nhost_id = app-7\n"
	                    "lease_ms = 5000\nfence_after_ms = 3000\n");
	ck_assert_msg(c, "%s", errbuf);
	ck_assert_str_eq(c->cluster_name, "prod");
	ck_assert_str_eq(c->cluster_host_id, "app-7");
	ck_assert_int_eq(c->cluster_lease_ms, 5000);
	ck_assert_int_eq(c->cluster_fence_after_ms, 3000);
	config_free(c);
}
END_TEST

/* What a reload cannot apply: each restart-only key changed is named once,
 * the live ones (interval_ms, pool_max_per_backend) never. */
START_TEST(test_restart_keys)
{
	struct config_restart_key rk[CONFIG_RESTART_KEYS_MAX];
	struct config *a = load_text(PW BE "[proxy]\nbind = 127.0.0.1\nworkers = 2\n");
	ck_assert_msg(a, "%s", errbuf);
	struct config *b = load_text(PW BE "[proxy]\nbind = 127.0.0.1\nworkers = 2\n");
	ck_assert_msg(b, "%s", errbuf);
	ck_assert_uint_eq(config_restart_keys(a, b, rk), 0);
	config_free(b);
	b = load_text("[probe]\npassword = pw\ninterval_ms = 777\n" BE "[steer]\nlookup = off\n"
	              "[proxy]\nbind = 127.0.0.2\nworkers = 3\npool_max_per_backend = 9\n"
	              "[cluster]\netcd = http://e:2379\nname = other\n");
	ck_assert_msg(b, "%s", errbuf);
	size_t n = config_restart_keys(a, b, rk);
	char got[512] = "";
	for (size_t i = 0; i < n; i++) {
		strcat(got, rk[i].section);
		strcat(got, ".");
		strcat(got, rk[i].key);
		strcat(got, " ");
		ck_assert_ptr_nonnull(rk[i].why);
	}
	/* [cluster] appeared: one entry for the section, not one per key. */
	ck_assert_str_eq(got, "steer.lookup proxy.bind proxy.workers cluster.(section) ");
	config_free(a);
	a = load_text(PW BE "[cluster]\netcd = http://e:2379\nname = prod\n");
	ck_assert_msg(a, "%s", errbuf);
	n = config_restart_keys(a, b, rk);
	got[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		strcat(got, rk[i].key);
		strcat(got, " ");
	}
	ck_assert_str_eq(got, "lookup bind workers name ");
	config_free(a);
	config_free(b);
}
END_TEST

START_TEST(test_bad_config)
{
	const struct bad *b = &bad_configs[_i];
	char want[512];
	struct config *c = load_text(b->text);

	ck_assert_msg(!c, "config %d accepted", _i);
	snprintf(want, sizeof(want), "%s/t.conf:%d: ", tmpdir, b->line);
	ck_assert_msg(!strncmp(errbuf, want, strlen(want)), "case %d: got \"%s\", want prefix %s",
	              _i, errbuf, want);
	ck_assert_msg(strstr(errbuf, b->want), "case %d: got \"%s\", want \"%s\"", _i, errbuf,
	              b->want);
	ck_assert_msg(!strchr(errbuf, '\n'), "case %d: more than one line", _i);
}
END_TEST

START_TEST(test_missing_file)
{
	ck_assert_ptr_null(config_load("/nonexistent/x.conf", errbuf, sizeof(errbuf)));
	ck_assert_ptr_nonnull(strstr(errbuf, "/nonexistent/x.conf: cannot open"));
}
END_TEST

/* Warnings go to the log (stderr): capture it through a pipe. */
static void capture_warnings(const char *path, char *out, size_t outlen)
{
	int fds[2], saved = dup(STDERR_FILENO);
	struct config *c;
	ssize_t n;

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_ge(saved, 0);
	dup2(fds[1], STDERR_FILENO);
	log_set_level(LOG_LVL_WARN);
	c = config_load(path, errbuf, sizeof(errbuf));
	dup2(saved, STDERR_FILENO);
	close(fds[1]);
	close(saved);
	ck_assert_msg(c, "%s", errbuf);
	config_free(c);
	n = read(fds[0], out, outlen - 1);
	close(fds[0]);
	out[n > 0 ? n : 0] = '\0';
}

START_TEST(test_warn_shared_address)
{
	char out[4096];

	capture_warnings("tests/unit/configs/dup-address.conf", out, sizeof(out));
	ck_assert_msg(strstr(out, "dup-address.conf:4: backends \"a\" and \"b\" are at one "
	                          "address 127.0.0.1:3306"),
	              "%s", out);
}
END_TEST

/* MySQL Router's routing sections carry over as routes. */
START_TEST(test_router_sections)
{
	static const char text[] =
	    PW "[routing:primary]\nbind_address = 0.0.0.0\nbind_port = 6446\n"
	       "destinations = metadata-cache://mycluster/?role=PRIMARY\n"
	       "routing_strategy = first-available\nprotocol = classic\n"
	       "[routing:secondary]\nbind_port = 6447\n"
	       "destinations = metadata-cache://mycluster/?role=SECONDARY&"
	       "disconnect_on_promoted_to_primary=yes\n"
	       "routing_strategy = round-robin-with-fallback\n"
	       "[routing:legacy]\nbind_port = 7001\nmode = read-only\n"
	       "destinations = 10.0.0.1:3306,10.0.0.2:3306\n"
	       "[route:split]\nport = 6450\nrole = split\n" BE;
	char out[4096];
	struct config *c = load_text(text);

	ck_assert_msg(c, "%s", errbuf);
	ck_assert_int_eq(c->nroutes, 4);
	ck_assert_str_eq(c->routes[0].name, "primary");
	ck_assert_int_eq(c->routes[0].port, 6446);
	ck_assert_int_eq(c->routes[0].role, ROUTE_WRITER);
	ck_assert_int_eq(c->routes[1].port, 6447);
	ck_assert_int_eq(c->routes[1].role, ROUTE_READER);
	ck_assert_int_eq(c->routes[2].role, ROUTE_READER);
	ck_assert_int_eq(c->routes[3].role, ROUTE_SPLIT);
	config_free(c);
	capture_warnings(write_conf("t.conf", text, 0600), out, sizeof(out));
	ck_assert_msg(strstr(out, "t.conf:4: bind_address is not used"), "%s", out);
	ck_assert_msg(strstr(out, "t.conf:16: destinations: the list is not used"), "%s", out);
	ck_assert_msg(strstr(out, "routing_strategy is not used: [steer] reader_policy"), "%s",
	              out);
}
END_TEST

START_TEST(test_warn_readable_password)
{
	char out[4096];
	const char *p = write_conf("pw.conf", BE "[probe]\npassword = s3cret\n", 0644);

	capture_warnings(p, out, sizeof(out));
	ck_assert_msg(strstr(out, "pw.conf:4: file holds a password and is readable by others"),
	              "%s", out);
	ck_assert_msg(!strstr(out, "s3cret"), "password logged: %s", out);

	p = write_conf("pw.conf", BE "[probe]\npassword = s3cret\n", 0600);
	capture_warnings(p, out, sizeof(out));
	ck_assert_str_eq(out, "");

	/* No password in the file: nothing secret to protect. */
	write_conf("secret", "s3cret\n", 0600);
	p = write_conf("pw.conf", BE "[probe]\npassword_file = secret\n", 0644);
	capture_warnings(p, out, sizeof(out));
	ck_assert_str_eq(out, "");
}
END_TEST

/* ---- [proxy] TLS ---- */

/* A self-signed certificate and its key (EC P-256), and another key. */
static const char tls_cert_pem[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBbTCCAROgAwIBAgIUDwuOr8J8XNBVjIMQqKcjKj0znCwwCgYIKoZIzj0EAwIw\n"
    "DDEKMAgGA1UEAwwBdDAeFw0yNjEyMDIwODQyMzJaFw0zNjExMjkwODQyMzJaMAwx\n"
    "CjAIBgNVBAMMAXQwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQnpPmQ6bOM1Zek\n"
    "vqqEWQfrt4eO7uohnZWwRTvFeskJ1sRQxFOxgucAfPCnuywD8HccfDLk3MyQl6WE\n"
    "vxD8eGLeo1MwUTAdBgNVHQ4EFgQU5vNnW+HHHdfsslt4lvmxuh8eR/0wHwYDVR0j\n"
    "BBgwFoAU5vNnW+HHHdfsslt4lvmxuh8eR/0wDwYDVR0TAQH/BAUwAwEB/zAKBggq\n"
    "hkjOPQQDAgNIADBFAiAy0YP0Db+ngne0ODwiuppYEFs2PY9tBKFlz0zBMRcYIgIh\n"
    "AO/ATWy68eofxrSMdUojDuicXZ3Vzqw8gSi/xg4Pn5AO\n"
    "-----END CERTIFICATE-----\n";
static const char tls_key_pem[] =
    "-----BEGIN EC PRIVATE KEY-----\n"
    "MHcCAQEEIPnbjFYjbD3nX7g9C2Y05JdPvx+jBNO6MN4NQLu5/EdUoAoGCCqGSM49\n"
    "AwEHoUQDQgAEJ6T5kOmzjNWXpL6qhFkH67eHju7qIZ2VsEU7xXrJCdbEUMRTsYLn\n"
    "AHzwp7ssA/B3HHwy5NzMkJelhL8Q/Hhi3g==\n"
    "-----END EC PRIVATE KEY-----\n";
static const char tls_other_key_pem[] =
    "-----BEGIN EC PRIVATE KEY-----\n"
    "MHcCAQEEIL2jyz/3JrKPEGYRheTjioGeZVQpciUAZ6JbNH3G2hnUoAoGCCqGSM49\n"
    "AwEHoUQDQgAEJfdxrHsuoCL2t0f+ynHvDy/TWamdffrk9ITbnwe1fz7xCTm/Ou2Y\n"
    "cFgix34hdfBoPWGi4osuuIqOP1bF8pHhmw==\n"
    "-----END EC PRIVATE KEY-----\n";

START_TEST(test_tls_keys)
{
	static const struct {
		const char *text;
		const char *err;
	} bad[] = {
	    {"[proxy]\ntls_cert = c.pem\n", "set tls_cert and tls_key together"},
	    {"[proxy]\ntls_cert = c.pem\ntls_key = k2.pem\n", "is not the key of the certificate"},
	    {"[proxy]\ntls_cert = k.pem\ntls_key = k.pem\n", "tls_cert: "},
	    {"[proxy]\ntls_cert = c.pem\ntls_key = c.pem\n", "not a PEM private key"},
	    {"[proxy]\ntls_cert = c.pem\ntls_key = k.pem\ntls_ca = junk.pem\n",
	     "not a PEM certificate"},
	    {"[proxy]\ntls_cert = none.pem\ntls_key = k.pem\n", "cannot read"},
	    {"[proxy]\nrequire_secure_transport = on\n", "needs tls_cert and tls_key"},
	    {"[proxy]\ntls_ca = c.pem\n", "tls_ca: needs tls_cert"},
	};
	char text[512], want[300];
	struct config *c;

	write_conf("c.pem", tls_cert_pem, 0644);
	write_conf("k.pem", tls_key_pem, 0600);
	write_conf("k2.pem", tls_other_key_pem, 0600);
	write_conf("junk.pem", "not a certificate\n", 0644);

	c = load_text(BE PW);
	ck_assert_msg(c, "%s", errbuf);
	ck_assert_str_eq(c->tls_cert, "");
	ck_assert(!c->require_secure_transport);
	config_free(c);

	c = load_text(BE PW "[proxy]\ntls_cert = c.pem\ntls_key = k.pem\ntls_ca = c.pem\n"
	                    "require_secure_transport = on\n");
	ck_assert_msg(c, "%s", errbuf);
	snprintf(want, sizeof(want), "%s/c.pem", tmpdir);
	ck_assert_str_eq(c->tls_cert, want); /* relative to the config's directory */
	ck_assert_str_eq(c->tls_ca, want);
	ck_assert(c->require_secure_transport);
	config_free(c);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), BE PW "%s", bad[i].text);
		c = load_text(text);
		ck_assert_msg(!c, "case %zu loaded", i);
		ck_assert_msg(strstr(errbuf, bad[i].err), "case %zu: %s", i, errbuf);
		ck_assert_msg(!strchr(errbuf, '\n'), "case %zu: more than one line", i);
	}
}
END_TEST

/* ---- [proxy] caching_sha2_password ---- */

/* An RSA key pair made now: NAME.priv.pem and NAME.pub.pem in tmpdir. */
static void rsa_pair(const char *name)
{
	char path[600];
	EVP_PKEY *k = EVP_RSA_gen(1024);
	FILE *f;

	ck_assert_ptr_nonnull(k);
	snprintf(path, sizeof(path), "%s/%s.priv.pem", tmpdir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
	fclose(f);
	snprintf(path, sizeof(path), "%s/%s.pub.pem", tmpdir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(PEM_write_PUBKEY(f, k), 1);
	fclose(f);
	EVP_PKEY_free(k);
}

START_TEST(test_auth_keys)
{
	static const struct {
		const char *text;
		const char *err;
	} bad[] = {
	    {"[proxy]\nrsa_private_key = a.priv.pem\n", "set rsa_private_key and rsa_public_key"},
	    {"[proxy]\nrsa_public_key = a.pub.pem\n", "set rsa_private_key and rsa_public_key"},
	    {"[proxy]\nrsa_private_key = a.priv.pem\nrsa_public_key = b.pub.pem\n",
	     "is not the public key of"},
	    {"[proxy]\nrsa_private_key = a.pub.pem\nrsa_public_key = a.pub.pem\n",
	     "not a PEM RSA private key"},
	    {"[proxy]\nrsa_private_key = a.priv.pem\nrsa_public_key = a.priv.pem\n",
	     "not a PEM RSA public key"},
	    /* an EC key is no RSA key */
	    {"[proxy]\nrsa_private_key = k.pem\nrsa_public_key = a.pub.pem\n",
	     "not a PEM RSA private key"},
	    {"[proxy]\ndefault_auth_plugin = sha256_password\n",
	     "want mysql_native_password | caching_sha2_password"},
	};
	char text[512], want[300];
	struct config *c;

	rsa_pair("a");
	rsa_pair("b");
	write_conf("k.pem", tls_key_pem, 0600);

	c = load_text(BE PW);
	ck_assert_msg(c, "%s", errbuf);
	ck_assert_int_eq(c->default_auth_plugin, AUTH_NATIVE);
	ck_assert_str_eq(c->rsa_private_key, "");
	config_free(c);

	c = load_text(BE PW "[proxy]\ndefault_auth_plugin = caching_sha2_password\n"
	                    "rsa_private_key = a.priv.pem\nrsa_public_key = a.pub.pem\n");
	ck_assert_msg(c, "%s", errbuf);
	ck_assert_int_eq(c->default_auth_plugin, AUTH_CACHING_SHA2);
	snprintf(want, sizeof(want), "%s/a.pub.pem", tmpdir);
	ck_assert_str_eq(c->rsa_public_key, want);
	config_free(c);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), BE PW "%s", bad[i].text);
		c = load_text(text);
		ck_assert_msg(!c, "case %zu loaded", i);
		ck_assert_msg(strstr(errbuf, bad[i].err), "case %zu: %s", i, errbuf);
		ck_assert_msg(!strchr(errbuf, '\n'), "case %zu: more than one line", i);
	}
}
END_TEST

/* ---- [backend:NAME] tls, tls_ca ---- */

START_TEST(test_backend_tls)
{
	static const struct {
		const char *text;
		const char *err;
	} bad[] = {
	    {"[backend:b]\nhost = h\ntls = maybe\n", "tls: bad value \"maybe\""},
	    {"[backend:b]\nhost = h\ntls = verify\n", "tls = verify needs tls_ca"},
	    {"[backend:b]\nhost = h\ntls = on\ntls_ca = c.pem\n", "tls_ca is for tls = verify"},
	    {"[backend:b]\nhost = h\ntls = verify\ntls_ca = junk.pem\n", "not a PEM certificate"},
	    {"[backend:b]\nhost = h\nproxy_protocol = v2\n", "proxy_protocol: bad value"},
	};
	char text[512], want[300];
	struct config *c;

	write_conf("c.pem", tls_cert_pem, 0644);
	write_conf("junk.pem", "not a certificate\n", 0644);
	c = load_text(BE PW "[backend:b]\nhost = h\ntls = on\nproxy_protocol = on\n"
	                    "[backend:v]\nhost = v\ntls = verify\ntls_ca = c.pem\n");
	ck_assert_msg(c, "%s", errbuf);
	ck_assert_int_eq(c->backends[0].tls, BACKEND_TLS_OFF);
	ck_assert_int_eq(c->backends[1].tls, BACKEND_TLS_ON);
	ck_assert_int_eq(c->backends[2].tls, BACKEND_TLS_VERIFY);
	ck_assert(!c->backends[0].proxy_protocol);
	ck_assert(c->backends[1].proxy_protocol);
	snprintf(want, sizeof(want), "%s/c.pem", tmpdir);
	ck_assert_str_eq(c->backends[2].tls_ca, want);
	config_free(c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), BE PW "%s", bad[i].text);
		c = load_text(text);
		ck_assert_msg(!c, "case %zu loaded", i);
		ck_assert_msg(strstr(errbuf, bad[i].err), "case %zu: %s", i, errbuf);
		ck_assert_msg(!strchr(errbuf, '\n'), "case %zu: more than one line", i);
	}
}
END_TEST

/* ---- no built-in credential; password_file ---- */

START_TEST(test_probe_password_required)
{
	struct config *c = load_text(BE "[probe]\nuser = mon\n");

	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(errbuf, "/t.conf:3: [probe] password: not set"), "%s", errbuf);
	ck_assert_msg(!strchr(errbuf, '\n'), "more than one line: %s", errbuf);
	/* no [probe] section at all: line 1 */
	ck_assert_ptr_null(load_text(BE));
	ck_assert_msg(strstr(errbuf, "/t.conf:1: [probe] password: not set"), "%s", errbuf);
	/* an explicitly empty password is a password */
	c = load_text(BE "[probe]\npassword =\n");
	ck_assert_msg(c, "%s", errbuf);
	ck_assert_str_eq(c->probe_password, "");
	config_free(c);
	/* mysteerctl reads the file for its socket and bpffs: no secret needed */
	c = config_load_flags(write_conf("t.conf", BE, 0600), CONFIG_LOAD_NO_SECRETS, errbuf,
	                      sizeof(errbuf));
	ck_assert_msg(c, "%s", errbuf);
	config_free(c);
}
END_TEST

START_TEST(test_password_file)
{
	char text[1024];
	struct config *c;
	const struct config_user *u;
	uint8_t want[20];

	write_conf("probe.pw", "m0nitor\n", 0600);
	write_conf("app.pw", "app secret\r\n", 0600);
	write_conf("bob.pw", "nonewline", 0600);
	/* relative to the config's directory, or absolute */
	snprintf(text, sizeof(text),
	         BE "[probe]\npassword_file = probe.pw\n[user:app]\npassword_file = app.pw\n"
	            "[user:bob]\npassword_file = %s/bob.pw\n",
	         tmpdir);
	c = load_text(text);
	ck_assert_msg(c, "%s", errbuf);
	ck_assert_str_eq(c->probe_password, "m0nitor");
	u = config_find_user(c, "app");
	ck_assert(u->has_password && u->has_hash);
	ck_assert_str_eq(u->password, "app secret");
	config_hash_password("app secret", want);
	ck_assert_mem_eq(u->hash_stage2, want, 20);
	ck_assert_str_eq(config_find_user(c, "bob")->password, "nonewline");
	config_free(c);

	/* read again at every load (a reload): a changed file is taken */
	write_conf("probe.pw", "rotated\n", 0600);
	c = load_text(text);
	ck_assert_msg(c, "%s", errbuf);
	ck_assert_str_eq(c->probe_password, "rotated");
	config_free(c);

	/* mysteerctl does not read them */
	write_conf("t2.conf", BE "[probe]\npassword_file = /nonexistent/pw\n", 0600);
	snprintf(text, sizeof(text), "%s/t2.conf", tmpdir);
	c = config_load_flags(text, CONFIG_LOAD_NO_SECRETS, errbuf, sizeof(errbuf));
	ck_assert_msg(c, "%s", errbuf);
	config_free(c);
}
END_TEST

struct bad_pwfile {
	const char *text;
	int line;
	const char *want;
};

static const struct bad_pwfile bad_pwfiles[] = {
    {BE "[probe]\npassword_file = missing.pw\n", 4,
     "password_file: cannot read %s/missing.pw: No such file or directory"},
    {BE "[probe]\npassword_file = .\n", 4, "password_file: cannot read %s/.: not a regular file"},
    {BE "[probe]\npassword_file =\n", 4, "password_file: no file named"},
    {BE "[probe]\npassword = x\npassword_file = ok.pw\n", 5,
     "password_file: give password or password_file, not both"},
    {BE "[probe]\npassword_file = ok.pw\npassword = x\n", 5,
     "password: give password or password_file, not both"},
    {BE "[probe]\npassword_file = two.pw\n", 4, "password_file: %s/two.pw: more than one line"},
    {BE "[probe]\npassword_file = long.pw\n", 4,
     "password_file: %s/long.pw: too long (at most 127 characters)"},
    {BE PW "[user:u]\npassword_file = missing.pw\n", 6,
     "password_file: cannot read %s/missing.pw: No such file or directory"},
    {BE PW "[user:u]\npassword = a\npassword_file = ok.pw\n", 7,
     "password_file: give password or password_file, not both"},
    {BE PW "[user:u]\npassword_file = ok.pw\npassword_hash = "
           "*6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9\n",
     5, "user \"u\": give password (or password_file) or password_hash, not both"},
};

START_TEST(test_bad_password_file)
{
	const struct bad_pwfile *b = &bad_pwfiles[_i];
	char want[512], prefix[512], longpw[200];
	struct config *c;

	memset(longpw, 'x', sizeof(longpw) - 1);
	longpw[sizeof(longpw) - 1] = '\0';
	write_conf("ok.pw", "fine\n", 0600);
	write_conf("two.pw", "line1\nline2\n", 0600);
	write_conf("long.pw", longpw, 0600);
	c = load_text(b->text);
	ck_assert_msg(!c, "case %d accepted", _i);
	snprintf(prefix, sizeof(prefix), "%s/t.conf:%d: ", tmpdir, b->line);
	snprintf(want, sizeof(want), b->want, tmpdir);
	ck_assert_msg(!strncmp(errbuf, prefix, strlen(prefix)), "case %d: got \"%s\", want %s", _i,
	              errbuf, prefix);
	ck_assert_msg(strstr(errbuf, want), "case %d: got \"%s\", want \"%s\"", _i, errbuf, want);
	ck_assert_msg(!strchr(errbuf, '\n'), "case %d: more than one line", _i);
	ck_assert_msg(!strstr(errbuf, "fine") && !strstr(errbuf, "line2"), "secret in: %s", errbuf);
}
END_TEST

START_TEST(test_warn_readable_password_file)
{
	char out[4096];
	const char *p;

	write_conf("open.pw", "s3cret\n", 0644);
	p = write_conf("pw.conf", BE "[probe]\npassword_file = open.pw\n", 0600);
	capture_warnings(p, out, sizeof(out));
	ck_assert_msg(strstr(out, "pw.conf:4: password_file ") &&
	                  strstr(out, "open.pw is readable by others (chmod 600 it)"),
	              "%s", out);
	ck_assert_msg(!strstr(out, "s3cret"), "password logged: %s", out);
}
END_TEST

/* ---- state overlay ---- */

static struct config *sandbox_config(void)
{
	struct config *c = config_load("etc/mysteer.conf", errbuf, sizeof(errbuf));

	ck_assert_msg(c, "%s", errbuf);
	return c;
}

static const struct state_backend *eff(const struct state_backend *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].cfg.name, name))
			return &v[i];
	return NULL;
}

START_TEST(test_state_edits_and_apply)
{
	struct config *c = sandbox_config();
	struct state_overlay ov;
	struct state_backend *v;
	size_t n;

	state_init(&ov);
	ck_assert_int_eq(state_add(&ov, c, "db4", "127.0.0.1", 3309, -1, 3, errbuf, 256), 0);
	ck_assert_int_eq(state_add(&ov, c, "db4", "127.0.0.1", 3310, -1, -1, errbuf, 256), -1);
	ck_assert_str_eq(errbuf, "backend \"db4\" exists");
	ck_assert_int_eq(state_add(&ov, c, "db1", "127.0.0.1", 3310, -1, -1, errbuf, 256), -1);
	ck_assert_int_eq(state_add(&ov, c, "b d", "127.0.0.1", 3310, -1, -1, errbuf, 256), -1);
	ck_assert_int_eq(state_remove(&ov, c, "db2", errbuf, 256), 0);
	ck_assert_int_eq(state_remove(&ov, c, "db2", errbuf, 256), -1);
	ck_assert_str_eq(errbuf, "unknown backend \"db2\"");
	ck_assert_int_eq(state_set(&ov, c, "db3", 50, -1, errbuf, 256), 0);
	ck_assert_int_eq(state_set(&ov, c, "db3", -1, CONFIG_WEIGHT_MAX + 1, errbuf, 256), -1);
	ck_assert_int_eq(state_set(&ov, c, "nope", 1, -1, errbuf, 256), -1);
	ck_assert_int_eq(state_set(&ov, c, "db2", 1, -1, errbuf, 256), -1); /* removed */
	ck_assert_int_eq(state_set_admin(&ov, c, "db1", ADMIN_DRAINED, errbuf, 256), 0);
	ck_assert_int_eq(state_set_admin(&ov, c, "db4", ADMIN_DISABLED, errbuf, 256), 0);
	ck_assert_int_eq(state_set_admin(&ov, c, "zz", ADMIN_DISABLED, errbuf, 256), -1);

	ck_assert_int_eq(state_apply(c, &ov, &v, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(v[0].cfg.name, "db1");
	ck_assert_int_eq(v[0].admin, ADMIN_DRAINED);
	ck_assert_str_eq(v[1].cfg.name, "db3");
	ck_assert_int_eq(v[1].cfg.priority, 50);
	ck_assert_int_eq(v[1].cfg.port, 3308);
	ck_assert_str_eq(v[2].cfg.name, "db4");
	ck_assert(v[2].runtime_added);
	ck_assert_int_eq(v[2].cfg.port, 3309);
	ck_assert_int_eq(v[2].cfg.priority, CONFIG_DEFAULT_PRIORITY);
	ck_assert_int_eq(v[2].cfg.weight, 3);
	ck_assert_int_eq(v[2].admin, ADMIN_DISABLED);
	ck_assert_ptr_null(eff(v, n, "db2"));
	free(v);

	/* enable drops the change; removing a runtime backend forgets it. */
	ck_assert_int_eq(state_set_admin(&ov, c, "db1", ADMIN_ENABLED, errbuf, 256), 0);
	ck_assert_ptr_null(state_find(&ov, "db1"));
	ck_assert_int_eq(state_remove(&ov, c, "db4", errbuf, 256), 0);
	ck_assert_ptr_null(state_find(&ov, "db4"));
	/* A removed config backend can be added back elsewhere. */
	ck_assert_int_eq(state_add(&ov, c, "db2", "::1", 4000, 7, -1, errbuf, 256), 0);
	ck_assert_int_eq(state_apply(c, &ov, &v, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(v[1].cfg.name, "db2");
	ck_assert_str_eq(v[1].cfg.host, "::1");
	ck_assert_int_eq(v[1].cfg.priority, 7);
	free(v);

	ck_assert_uint_eq(state_reset(&ov, "db2"), 1);
	ck_assert_uint_eq(state_reset(&ov, "db2"), 0);
	ck_assert_uint_eq(state_reset(&ov, NULL), 1); /* db3's priority */
	ck_assert_int_eq(state_apply(c, &ov, &v, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(v[2].cfg.priority, 300);
	free(v);
	state_free(&ov);
	config_free(c);
}
END_TEST

START_TEST(test_state_round_trip)
{
	struct config *c = sandbox_config();
	struct state_overlay ov, back;
	char path[256];
	struct stat st;

	state_init(&ov);
	state_init(&back);
	snprintf(path, sizeof(path), "%s/sub/state", tmpdir);
	/* Missing file: empty overlay, no error. */
	ck_assert_int_eq(state_load(path, &back, errbuf, sizeof(errbuf)), 0);
	ck_assert_uint_eq(back.n, 0);

	ck_assert_int_eq(state_add(&ov, c, "db4", "::1", 3309, 10, 0, errbuf, 256), 0);
	ck_assert_int_eq(state_remove(&ov, c, "db2", errbuf, 256), 0);
	ck_assert_int_eq(state_set(&ov, c, "db3", 1, 2, errbuf, 256), 0);
	ck_assert_int_eq(state_set_admin(&ov, c, "db3", ADMIN_DRAINED, errbuf, 256), 0);
	ck_assert_int_eq(state_save(path, &ov, errbuf, sizeof(errbuf)), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);

	ck_assert_int_eq(state_load(path, &back, errbuf, sizeof(errbuf)), 0);
	ck_assert_uint_eq(back.n, ov.n);
	for (size_t i = 0; i < ov.n; i++)
		ck_assert_mem_eq(&back.changes[i], &ov.changes[i], sizeof(ov.changes[i]));

	/* The controller's runtime part round-trips too, and reset keeps it. */
	struct state_runtime_backend rb[2] = {{"db1", "127.0.0.1", 3306, 4, true},
	                                      {"db2", "::1", 3307, 0, false}};
	struct state_runtime rt = {.writer = "db2", .b = rb, .n = 2};
	ck_assert_int_eq(state_set_runtime(&ov, &rt), 0);
	ck_assert_int_eq(state_save(path, &ov, errbuf, sizeof(errbuf)), 0);
	ck_assert_int_eq(state_load(path, &back, errbuf, sizeof(errbuf)), 0);
	ck_assert_str_eq(back.rt.writer, "db2");
	ck_assert_uint_eq(back.rt.n, 2);
	ck_assert_mem_eq(back.rt.b, rb, sizeof(rb));

	/* Saving over it replaces it, with no temp file left behind. */
	state_reset(&ov, NULL);
	ck_assert_int_eq(state_save(path, &ov, errbuf, sizeof(errbuf)), 0);
	ck_assert_int_eq(state_load(path, &back, errbuf, sizeof(errbuf)), 0);
	ck_assert_uint_eq(back.n, 0);
	ck_assert_uint_eq(back.rt.n, 2);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "test $(ls -A '%s/sub' | wc -l) -eq 1", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
	state_free(&ov);
	state_free(&back);
	config_free(c);
}
END_TEST

static const char *const corrupt_states[] = {
    "",
    "{not json",
    "[]",
    "{\"backends\":[]}",
    "{\"version\":2,\"backends\":[]}",
    "{\"version\":1}",
    "{\"version\":1,\"backends\":[1]}",
    "{\"version\":1,\"backends\":[{\"priority\":1}]}",
    "{\"version\":1,\"backends\":[{\"name\":\"a\",\"added\":true,\"port\":1}]}",
    "{\"version\":1,\"backends\":[{\"name\":\"a\",\"added\":true,\"host\":\"h\","
    "\"port\":70000}]}",
    "{\"version\":1,\"backends\":[{\"name\":\"a\",\"priority\":-1}]}",
    "{\"version\":1,\"backends\":[{\"name\":\"a\",\"weight\":\"1\"}]}",
    "{\"version\":1,\"backends\":[{\"name\":\"a\",\"admin\":\"sleeping\"}]}",
    "{\"version\":1,\"backends\":[{\"name\":\"a\",\"added\":true,\"removed\":true,"
    "\"host\":\"h\",\"port\":1}]}",
    "{\"version\":1,\"backends\":[{\"name\":\"a\",\"removed\":true},{\"name\":\"a\","
    "\"removed\":true}]}",
    "{\"version\":1,\"backends\":[],\"runtime\":[]}",
    "{\"version\":1,\"backends\":[],\"runtime\":{\"writer\":1}}",
    "{\"version\":1,\"backends\":[],\"runtime\":{\"backends\":[{\"name\":\"a\","
    "\"host\":\"h\",\"port\":1,\"id\":256}]}}",
};

START_TEST(test_state_corrupt)
{
	struct state_overlay ov;
	const char *p = write_conf("state", corrupt_states[_i], 0600);
	char want[300];

	struct config *c = sandbox_config();

	state_init(&ov);
	/* Something in the overlay first: a failed load must leave it empty. */
	ck_assert_int_eq(state_add(&ov, c, "x", "h", 1, -1, -1, errbuf, 256), 0);
	config_free(c);
	ck_assert_int_eq(state_load(p, &ov, errbuf, sizeof(errbuf)), -1);
	snprintf(want, sizeof(want), "%s: corrupt state file: ", p);
	ck_assert_msg(!strncmp(errbuf, want, strlen(want)), "case %d: %s", _i, errbuf);
	ck_assert_msg(!strchr(errbuf, '\n'), "case %d: more than one line", _i);
	ck_assert_uint_eq(ov.n, 0);
	state_free(&ov);
}
END_TEST

START_TEST(test_state_save_fails_cleanly)
{
	struct state_overlay ov;

	state_init(&ov);
	ck_assert_int_eq(state_save("/proc/nope/deeper/state", &ov, errbuf, sizeof(errbuf)), -1);
	ck_assert_ptr_nonnull(strstr(errbuf, "/proc/nope/deeper/state: "));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_shipped_config);
	tcase_add_test(tc, test_full_config);
	tcase_add_test(tc, test_minimal_defaults);
	tcase_add_test(tc, test_cluster_keys);
	tcase_add_test(tc, test_restart_keys);
	tcase_add_test(tc, test_long_line);
	tcase_add_test(tc, test_bom);
	tcase_add_loop_test(tc, test_bad_config, 0,
	                    (int)(sizeof(bad_configs) / sizeof(bad_configs[0])));
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_warn_shared_address);
	tcase_add_test(tc, test_router_sections);
	tcase_add_test(tc, test_warn_readable_password);
	tcase_add_test(tc, test_probe_password_required);
	tcase_add_test(tc, test_password_file);
	tcase_add_test(tc, test_tls_keys);
	tcase_add_test(tc, test_backend_tls);
	tcase_add_test(tc, test_auth_keys);
	tcase_add_loop_test(tc, test_bad_password_file, 0,
	                    (int)(sizeof(bad_pwfiles) / sizeof(bad_pwfiles[0])));
	tcase_add_test(tc, test_warn_readable_password_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("state");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_state_edits_and_apply);
	tcase_add_test(tc, test_state_round_trip);
	tcase_add_loop_test(tc, test_state_corrupt, 0,
	                    (int)(sizeof(corrupt_states) / sizeof(corrupt_states[0])));
	tcase_add_test(tc, test_state_save_fails_cleanly);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
