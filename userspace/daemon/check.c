/*
 * check.c - see check.h. Each check is a small function that prints its own
 * line and says whether it is fatal; daemon_check runs them in the order an
 * operator would fix things: kernel, privileges, then the servers.
 */
#define _GNU_SOURCE
#include "daemon/check.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/capability.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "config/config.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

struct check {
	FILE *out;
	int fails, warns;
};

static void say(struct check *c, const char *level, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void say(struct check *c, const char *level, const char *what, const char *fmt, ...)
{
	va_list ap;

	if (level[0] == 'F')
		c->fails++;
	else if (level[0] == 'w')
		c->warns++;
	fprintf(c->out, "%-4s  %s: ", level, what);
	va_start(ap, fmt);
	vfprintf(c->out, fmt, ap);
	va_end(ap);
	fputc('\n', c->out);
}

static bool prog_type_ok(enum bpf_prog_type t)
{
	return libbpf_probe_bpf_prog_type(t, NULL) > 0;
}

/* A path needs a program type; missing it is fatal only when configured. */
static void check_prog(struct check *c, const char *what, enum bpf_prog_type t, bool wanted,
                       const char *since)
{
	if (prog_type_ok(t))
		say(c, "ok", what, "supported");
	else
		say(c, wanted ? "FAIL" : "warn", what, "not supported by this kernel (needs %s)%s",
		    since, wanted ? "" : "; not used by this config");
}

static void check_kernel(struct check *c, const struct config *cfg)
{
	struct utsname u;
	struct btf *vmlinux;
	struct statfs fs;
	bool cgroup = cfg->cgroup[0] != 0;

	if (uname(&u) == 0)
		say(c, "ok", "kernel", "%s %s", u.sysname, u.release);
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		say(c, "FAIL", "kernel BTF", "/sys/kernel/btf/vmlinux: %s (CONFIG_DEBUG_INFO_BTF)",
		    strerror(errno));
	} else {
		say(c, "ok", "kernel BTF", "present");
		if (btf__find_by_name_kind(vmlinux, "bpf_sock_destroy", BTF_KIND_FUNC) >= 0)
			say(c, "ok", "bpf_sock_destroy",
			    "present: close_on_demote closes in the kernel");
		else
			say(c, cfg->close_on_demote ? "warn" : "ok", "bpf_sock_destroy",
			    "absent (needs 6.5): close_on_demote cannot use the kernel's iterator");
		btf__free(vmlinux);
	}
	check_prog(
	    c, "connect4/6 steering", BPF_PROG_TYPE_CGROUP_SOCK_ADDR, cgroup,
	    "4.17; the getpeername hooks 5.8, else applications see the server as their peer");
	check_prog(c, "sockops accounting", BPF_PROG_TYPE_SOCK_OPS, cgroup, "4.13");
	check_prog(c, "sk_lookup steering", BPF_PROG_TYPE_SK_LOOKUP, cfg->lookup, "5.9");
	if (statfs("/sys/fs/bpf", &fs) == 0 && fs.f_type == BPF_FS_MAGIC)
		say(c, "ok", "bpffs", "mounted at /sys/fs/bpf");
	else
		say(c, "ok", "bpffs", "not mounted at /sys/fs/bpf: mysteerd mounts it at start");
}

static void check_caps(struct check *c, const struct config *cfg)
{
	static const struct {
		int cap;
		const char *name, *why;
	} need[] = {
	    {CAP_BPF, "CAP_BPF", "load programs and maps"},
	    {CAP_PERFMON, "CAP_PERFMON", "programs that read kernel memory"},
	    {CAP_NET_ADMIN, "CAP_NET_ADMIN", "attach to the cgroup and the network namespace"},
	    {CAP_SYS_ADMIN, "CAP_SYS_ADMIN", "mount bpffs, the iterator of close_on_demote"},
	    {CAP_SYS_PTRACE, "CAP_SYS_PTRACE", "take a local server's listener (pidfd_getfd)"},
	};
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};
	char missing[512] = "";
	size_t used = 0;

	if (syscall(SYS_capget, &h, d) != 0) {
		say(c, "FAIL", "capabilities", "capget: %s", strerror(errno));
		return;
	}
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		int cap = need[i].cap;

		if (d[cap / 32].effective & (1u << (cap % 32)))
			continue;
		if (cap == CAP_SYS_PTRACE && !(cfg->lookup && cfg->local_handoff))
			continue;
		used += (size_t)snprintf(missing + used, sizeof(missing) - used, "%s%s (%s)",
		                         used ? ", " : "", need[i].name, need[i].why);
		if (used >= sizeof(missing))
			break;
	}
	if (missing[0])
		say(c, "FAIL", "capabilities", "missing %s", missing);
	else
		say(c, "ok", "capabilities", "every one the daemon uses");
}

/* One query's result, or NULL (mysql_errno(m) tells a failure from no rows). */
static MYSQL_RES *query(MYSQL *m, const char *sql)
{
	if (mysql_query(m, sql) != 0)
		return NULL;
	return mysql_store_result(m);
}

/* Returns true when the backend answered (reachable), false otherwise. */
static bool check_backend(struct check *c, const struct config *cfg, const struct config_backend *b)
{
	unsigned int timeout_s = (unsigned)(cfg->timeout_ms + 999) / 1000;
	char what[TOPO_NAME_MAX + TOPO_HOST_MAX + 32];
	MYSQL *m = mysql_init(NULL);
	MYSQL_RES *r;
	MYSQL_ROW row;
	bool read_only;

	snprintf(what, sizeof(what), "backend %s %s:%u", b->name, b->host, b->port);
	if (!m) {
		say(c, "FAIL", what, "out of memory");
		return false;
	}
	mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout_s);
	mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &timeout_s);
	if (!mysql_real_connect(m, b->host, cfg->probe_user, cfg->probe_password, NULL, b->port,
	                        NULL, 0)) {
		unsigned e = mysql_errno(m);
		bool denied = e == ER_ACCESS_DENIED_ERROR || e == ER_DBACCESS_DENIED_ERROR;

		/* Denied is a config error (user or password); down may be a moment. */
		say(c, denied ? "FAIL" : "warn", what, "%s: %s",
		    denied ? "the monitoring user cannot log in" : "unreachable", mysql_error(m));
		mysql_close(m);
		return false;
	}
	r = query(m, "SELECT @@read_only");
	row = r ? mysql_fetch_row(r) : NULL;
	read_only = row && row[0] && strcmp(row[0], "0") != 0;
	if (r)
		mysql_free_result(r);
	else
		say(c, "FAIL", what, "SELECT @@read_only: %s", mysql_error(m));
	r = query(m, "SHOW REPLICA STATUS");
	if (!r && mysql_errno(m) == ER_PARSE_ERROR)
		r = query(m, "SHOW SLAVE STATUS");
	if (!r && mysql_errno(m)) {
		say(c, "FAIL", what,
		    "the monitoring user cannot read replication status (grant SLAVE MONITOR on "
		    "MariaDB, REPLICATION CLIENT on MySQL): %s",
		    mysql_error(m));
	} else {
		say(c, "ok", what, "%s (%s, %s)", mysql_get_server_info(m),
		    read_only ? "read_only" : "writable",
		    r && mysql_num_rows(r) ? "replicating" : "not a replica");
	}
	if (r)
		mysql_free_result(r);
	mysql_close(m);
	return true;
}

int daemon_check(const struct config *cfg, FILE *out)
{
	struct check c = {.out = out};
	size_t reachable = 0;

	say(&c, "ok", "config", "%s: %zu backend(s), %zu route(s), %zu user(s)", cfg->path,
	    cfg->nbackends, cfg->nroutes, cfg->nusers);
	check_kernel(&c, cfg);
	check_caps(&c, cfg);
	for (size_t i = 0; i < cfg->nbackends; i++)
		reachable += check_backend(&c, cfg, &cfg->backends[i]);
	if (cfg->nbackends && !reachable)
		say(&c, "FAIL", "backends", "none reachable: no route would have a target");
	fprintf(out, "%s: %d failure(s), %d warning(s)\n",
	        c.fails ? "the daemon could not do its job" : "ready", c.fails, c.warns);
	return c.fails ? 1 : 0;
}
