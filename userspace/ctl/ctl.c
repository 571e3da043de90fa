/*
 * ctl.c - mysteerctl (see ctl.h): parse the command line, send one request
 * to mysteerd's admin socket, print the answer.
 *
 * Exit codes are a contract (docs/CLI.md): 0 done, 1 refused or failed with a
 * one-line reason, 2 usage. Every failure path below ends in exactly one
 * "mysteerctl: ..." line on stderr.
 */
#include "ctl/ctl.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <ctype.h>

#include "common/io.h"
#include "common/log.h"
#include "config/config.h"
#include "common/admin_proto.h"
#include "maps/leftover.h"
#include "maps/dump.h"

/* Long enough for a reload on a loaded machine; a hung daemon still ends. */
#define CTL_TIMEOUT_S 15

const char ctl_usage[] =
    "usage: mysteerctl [--socket PATH | -c FILE] [--json] COMMAND\n"
    "commands:\n"
    "  status                      backends, roles, states and routes\n"
    "  add NAME HOST:PORT [priority=N] [weight=N]\n"
    "  remove NAME\n"
    "  set NAME priority=N|weight=N\n"
    "  drain NAME                  no new connections, existing ones continue\n"
    "  disable NAME                out of the topology, its connections closed\n"
    "  enable NAME\n"
    "  reload                      re-read the config, keep runtime changes\n"
    "  reset [NAME]                drop runtime changes (of NAME, or all)\n"
    "  maps                        dump the pinned eBPF maps (daemon not needed)\n"
    "  exec -- CMD [ARG...]        run CMD inside the steered cgroup\n"
    "  detach                      remove every mysteer eBPF program and pin\n"
    "                              (bpffs_dir, cgroup, this netns; daemon not needed)\n"
    "  top                         backends with rates, redrawn each second (q quits)\n"
    "options:\n"
    "  --socket PATH   admin socket (default: admin_socket of -c FILE, else\n"
    "                  $" ADMIN_SOCKET_ENV ", else " ADMIN_DEFAULT_SOCKET ")\n"
    "  -c, --config FILE   read admin_socket, bpffs_dir and cgroup from FILE\n"
    "  --json          machine-readable output (status: one JSON object)\n"
    "exit: 0 done, 1 refused or failed, 2 usage\n";

static const struct {
	const char *name;
	enum ctl_cmd cmd;
	int min_args, max_args; /* positional arguments after the command */
} commands[] = {
    {ADMIN_CMD_STATUS, CTL_STATUS, 0, 0},
    {ADMIN_CMD_ADD, CTL_ADD, 2, 4},
    {ADMIN_CMD_REMOVE, CTL_REMOVE, 1, 1},
    {ADMIN_CMD_SET, CTL_SET, 2, 3},
    {ADMIN_CMD_DRAIN, CTL_DRAIN, 1, 1},
    {ADMIN_CMD_DISABLE, CTL_DISABLE, 1, 1},
    {ADMIN_CMD_ENABLE, CTL_ENABLE, 1, 1},
    {ADMIN_CMD_RELOAD, CTL_RELOAD, 0, 0},
    {ADMIN_CMD_RESET, CTL_RESET, 0, 1},
    {"maps", CTL_MAPS, 0, 0},
    {"exec", CTL_EXEC, 0, 0},
    {"detach", CTL_DETACH, 0, 0},
    {"top", CTL_TOP, 0, 0},
    {"help", CTL_HELP, 0, 0},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))
#define MAX_POS   8

static int errf(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

static bool valid_hostname(const char *s)
{
	if (!*s || strlen(s) >= TOPO_HOST_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '.' && *s != '_')
			return false;
	return true;
}

int ctl_parse_hostport(const char *s, char *host, size_t hostlen, uint16_t *port)
{
	const char *colon, *h = s;
	size_t hl;
	long long p;
	unsigned char buf[sizeof(struct in6_addr)];

	if (*s == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -1;
		h = s + 1;
		hl = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return -1; /* none, or a bare IPv6 address: needs brackets */
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= hostlen || hl >= TOPO_HOST_MAX)
		return -1;
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (*s == '[' ? inet_pton(AF_INET6, host, buf) != 1 : !valid_hostname(host))
		return -1;
	if (!config_parse_int(colon + 1, 1, 65535, &p))
		return -1;
	*port = (uint16_t)p;
	return 0;
}

/* "priority=N" / "weight=N" of add and set. */
static int parse_kv(const char *arg, struct ctl_request *req, char *err, size_t errlen)
{
	bool prio = !strncmp(arg, "priority=", 9), weight = !strncmp(arg, "weight=", 7);
	const char *v = arg + (prio ? 9 : 7);
	int *dst = prio ? &req->priority : &req->weight;
	long long max = prio ? CONFIG_PRIORITY_MAX : CONFIG_WEIGHT_MAX;
	long long x;

	if (!prio && !weight)
		return errf(err, errlen, CTL_PARSE_USAGE,
		            "unexpected argument \"%s\" (want priority=N or weight=N)", arg);
	if (*dst >= 0)
		return errf(err, errlen, CTL_PARSE_USAGE, "%s given twice",
		            prio ? "priority" : "weight");
	if (!config_parse_int(v, 0, max, &x))
		return errf(err, errlen, CTL_PARSE_BAD_VALUE, "bad %s \"%s\" (want 0..%lld)",
		            prio ? "priority" : "weight", v, max);
	*dst = (int)x;
	return CTL_PARSE_OK;
}

static int set_name(struct ctl_request *req, const char *name, char *err, size_t errlen)
{
	if (!config_valid_name(name))
		return errf(err, errlen, CTL_PARSE_BAD_VALUE,
		            "bad backend name \"%s\" (want 1-%d of A-Z a-z 0-9 _ - .)", name,
		            TOPO_NAME_MAX - 1);
	strcpy(req->name, name);
	return CTL_PARSE_OK;
}

/* The positional arguments of each command, once the shape is right. */
static int parse_positional(struct ctl_request *req, char **pos, int npos, char *err, size_t errlen)
{
	int rc;

	if (req->cmd == CTL_RESET && npos == 0)
		return CTL_PARSE_OK;
	if (req->cmd == CTL_STATUS || req->cmd == CTL_RELOAD || req->cmd == CTL_MAPS ||
	    req->cmd == CTL_DETACH || req->cmd == CTL_HELP || req->cmd == CTL_TOP)
		return CTL_PARSE_OK;
	rc = set_name(req, pos[0], err, errlen);
	if (rc)
		return rc;
	if (req->cmd == CTL_ADD) {
		if (ctl_parse_hostport(pos[1], req->host, sizeof(req->host), &req->port))
			return errf(err, errlen, CTL_PARSE_BAD_VALUE,
			            "bad address \"%s\" (want HOST:PORT or [IPV6]:PORT)", pos[1]);
		for (int i = 2; i < npos; i++)
			if ((rc = parse_kv(pos[i], req, err, errlen)))
				return rc;
	}
	if (req->cmd == CTL_SET)
		for (int i = 1; i < npos; i++)
			if ((rc = parse_kv(pos[i], req, err, errlen)))
				return rc;
	return CTL_PARSE_OK;
}

/* An option taking a value: "--opt V" or "--opt=V". */
static const char *opt_value(int argc, char **argv, int *i, const char *longname,
                             const char *shortname)
{
	size_t n = strlen(longname);

	if (!strcmp(argv[*i], longname) || (shortname && !strcmp(argv[*i], shortname)))
		return *i + 1 < argc ? argv[++*i] : "";
	if (!strncmp(argv[*i], longname, n) && argv[*i][n] == '=')
		return argv[*i] + n + 1;
	return NULL;
}

static int find_command(const char *word, struct ctl_request *req, int *min, int *max)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(word, commands[i].name)) {
			req->cmd = commands[i].cmd;
			*min = commands[i].min_args;
			*max = commands[i].max_args;
			return 0;
		}
	return -1;
}

int ctl_parse_args(int argc, char **argv, struct ctl_request *req, char *err, size_t errlen)
{
	char *pos[MAX_POS];
	int npos = 0, min = 0, max = 0;
	const char *v, *cmdword = "";

	memset(req, 0, sizeof(*req));
	req->priority = req->weight = -1;
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];

		if (req->cmd == CTL_EXEC) {
			/* Everything after exec (and an optional --) is the command. */
			if (!strcmp(a, "--"))
				i++;
			if (i >= argc)
				break;
			req->exec_argv = &argv[i];
			return CTL_PARSE_OK;
		}
		if (!strcmp(a, "--json")) {
			req->json = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			req->cmd = CTL_HELP;
			return CTL_PARSE_OK;
		} else if ((v = opt_value(argc, argv, &i, "--socket", "-s"))) {
			if (!*v)
				return errf(err, errlen, CTL_PARSE_USAGE, "--socket needs a path");
			req->socket = v;
		} else if ((v = opt_value(argc, argv, &i, "--config", "-c"))) {
			if (!*v)
				return errf(err, errlen, CTL_PARSE_USAGE, "--config needs a file");
			req->config = v;
		} else if (a[0] == '-' && a[1]) {
			return errf(err, errlen, CTL_PARSE_USAGE, "unknown option \"%s\"", a);
		} else if (req->cmd == CTL_NONE) {
			if (find_command(a, req, &min, &max))
				return errf(err, errlen, CTL_PARSE_USAGE, "unknown command \"%s\"",
				            a);
			cmdword = a;
		} else if (npos == max) {
			return errf(err, errlen, CTL_PARSE_USAGE, "%s: too many arguments (\"%s\")",
			            cmdword, a);
		} else {
			pos[npos++] = a;
		}
	}
	if (req->cmd == CTL_NONE)
		return errf(err, errlen, CTL_PARSE_USAGE, "no command");
	if (req->cmd == CTL_EXEC && !req->exec_argv)
		return errf(err, errlen, CTL_PARSE_USAGE, "exec: no command to run");
	if (npos < min)
		return errf(err, errlen, CTL_PARSE_USAGE, "%s: missing arguments", cmdword);
	return parse_positional(req, pos, npos, err, errlen);
}

int ctl_socket_path(const struct ctl_request *req, char *out, size_t outlen, char *err,
                    size_t errlen)
{
	const char *env = getenv(ADMIN_SOCKET_ENV);

	if (req->socket) {
		snprintf(out, outlen, "%s", req->socket);
		return 0;
	}
	if (req->config) {
		struct config *c =
		    config_load_flags(req->config, CONFIG_LOAD_NO_SECRETS, err, errlen);

		if (!c)
			return -1;
		snprintf(out, outlen, "%s", c->admin_socket);
		config_free(c);
		return 0;
	}
	snprintf(out, outlen, "%s", env && *env ? env : ADMIN_DEFAULT_SOCKET);
	return 0;
}

json_object *ctl_build_request(const struct ctl_request *req)
{
	static const char *const names[] = {
	    [CTL_STATUS] = ADMIN_CMD_STATUS, [CTL_ADD] = ADMIN_CMD_ADD,
	    [CTL_REMOVE] = ADMIN_CMD_REMOVE, [CTL_SET] = ADMIN_CMD_SET,
	    [CTL_DRAIN] = ADMIN_CMD_DRAIN,   [CTL_DISABLE] = ADMIN_CMD_DISABLE,
	    [CTL_ENABLE] = ADMIN_CMD_ENABLE, [CTL_RELOAD] = ADMIN_CMD_RELOAD,
	    [CTL_RESET] = ADMIN_CMD_RESET,   [CTL_EXEC] = ADMIN_CMD_STATUS,
	};
	json_object *o;

	if ((size_t)req->cmd >= sizeof(names) / sizeof(names[0]) || !names[req->cmd])
		return NULL;
	o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, ADMIN_KEY_CMD, json_object_new_string(names[req->cmd]));
	if (req->name[0] && req->cmd != CTL_EXEC)
		json_object_object_add(o, ADMIN_KEY_NAME, json_object_new_string(req->name));
	if (req->cmd == CTL_ADD) {
		json_object_object_add(o, ADMIN_KEY_HOST, json_object_new_string(req->host));
		json_object_object_add(o, ADMIN_KEY_PORT, json_object_new_int(req->port));
	}
	if (req->cmd == CTL_ADD || req->cmd == CTL_SET) {
		if (req->priority >= 0)
			json_object_object_add(o, ADMIN_KEY_PRIORITY,
			                       json_object_new_int(req->priority));
		if (req->weight >= 0)
			json_object_object_add(o, ADMIN_KEY_WEIGHT,
			                       json_object_new_int(req->weight));
	}
	return o;
}

/* Reads the reply line (or up to EOF). NUL-terminated, malloc'ed. */
static char *recv_reply(int fd, char *err, size_t errlen)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);

	while (buf) {
		ssize_t r;

		if (len + 1 == cap) {
			char *nb = cap >= ADMIN_MAX_REPLY ? NULL : realloc(buf, cap * 2);

			if (!nb) {
				errf(err, errlen, -1, "reply from the daemon too large");
				break;
			}
			buf = nb;
			cap *= 2;
		}
		r = recv(fd, buf + len, cap - len - 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				errf(err, errlen, -1, "no reply from the daemon within %d s",
				     CTL_TIMEOUT_S);
			else
				errf(err, errlen, -1, "%s", strerror(errno));
			break;
		}
		len += (size_t)r;
		buf[len] = '\0';
		if (r == 0 || memchr(buf + len - r, '\n', (size_t)r)) {
			if (len == 0) {
				errf(err, errlen, -1,
				     "the daemon closed the connection without "
				     "a reply");
				break;
			}
			return buf;
		}
	}
	if (!buf)
		errf(err, errlen, -1, "out of memory");
	free(buf);
	return NULL;
}

int ctl_call(const char *socket_path, json_object *request, json_object **reply, char *err,
             size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = CTL_TIMEOUT_S};
	const char *text;
	char why[256];
	char *line;
	int fd;

	*reply = NULL;
	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return errf(err, errlen, -1, "socket path too long: %s", socket_path);
	strcpy(sa.sun_path, socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errf(err, errlen, -1, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		return errf(err, errlen, -1, "daemon not running (%s: %s)", socket_path,
		            strerror(e));
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	text = json_object_to_json_string_ext(request, JSON_C_TO_STRING_PLAIN);
	if (io_write_all(fd, text, strlen(text)) || io_write_all(fd, "\n", 1)) {
		int e = errno;

		close(fd);
		return errf(err, errlen, -1, "%s: send: %s", socket_path, strerror(e));
	}
	line = recv_reply(fd, why, sizeof(why));
	close(fd);
	if (!line)
		return errf(err, errlen, -1, "%s: %s", socket_path, why);
	*reply = json_tokener_parse(line);
	free(line);
	if (!*reply || !json_object_is_type(*reply, json_type_object)) {
		json_object_put(*reply);
		*reply = NULL;
		return errf(err, errlen, -1, "%s: malformed reply from the daemon", socket_path);
	}
	return 0;
}

/* ---- status table ---- */

#define NCOLS 12

struct table {
	char (*cells)[NCOLS][96];
	size_t rows, cols;
};

static void cell(struct table *t, size_t row, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void cell(struct table *t, size_t row, size_t col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->cells[row][col], sizeof(t->cells[row][col]), fmt, ap);
	va_end(ap);
}

static void print_table(const struct table *t, FILE *out)
{
	size_t w[NCOLS] = {0};

	for (size_t r = 0; r < t->rows; r++)
		for (size_t c = 0; c < t->cols; c++)
			if (strlen(t->cells[r][c]) > w[c])
				w[c] = strlen(t->cells[r][c]);
	for (size_t r = 0; r < t->rows; r++) {
		for (size_t c = 0; c < t->cols; c++) {
			if (c + 1 == t->cols)
				fprintf(out, "%s\n", t->cells[r][c]);
			else
				fprintf(out, "%-*s  ", (int)w[c], t->cells[r][c]);
		}
	}
}

static const char *jstr(json_object *o, const char *key, const char *dflt)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return dflt;
	return json_object_get_string(v);
}

/* A number as text, or "-" when absent or null. */
static void jnum(char *buf, size_t len, json_object *o, const char *key, const char *fmt,
                 const char *unit)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))) {
		snprintf(buf, len, "-");
		return;
	}
	if (!strcmp(fmt, "%d"))
		snprintf(buf, len, "%lld%s", (long long)json_object_get_int64(v), unit);
	else
		snprintf(buf, len, "%.1f%s", json_object_get_double(v), unit);
}

/* A table with a row for each element of the status array `key` under a
 * header row (t->cols columns of head). Returns the array, or NULL when
 * there is none or no memory (nothing to print then). */
static json_object *table_of_array(json_object *st, const char *key, const char *const *head,
                                   struct table *t)
{
	json_object *arr;
	size_t n;

	if (!json_object_object_get_ex(st, key, &arr) || !json_object_is_type(arr, json_type_array))
		return NULL;
	n = json_object_array_length(arr);
	t->cells = calloc(n + 1, sizeof(*t->cells));
	if (!t->cells)
		return NULL;
	for (size_t c = 0; c < t->cols; c++)
		cell(t, 0, c, "%s", head[c]);
	t->rows = n + 1;
	return arr;
}

static void backend_row(struct table *t, size_t r, json_object *b, int64_t now_ms)
{
	const char *host = jstr(b, "host", "?");
	json_object *v;
	char buf[96];

	cell(t, r, 0, "%s", jstr(b, "name", "?"));
	jnum(buf, sizeof(buf), b, "port", "%d", "");
	const char *addr = jstr(b, "address", NULL);
	if (addr && strcmp(addr, host) != 0) /* a name: what it resolves to now */
		cell(t, r, 1, strchr(addr, ':') ? "%s:%s ([%s])" : "%s:%s (%s)", host, buf, addr);
	else
		cell(t, r, 1, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, buf);
	cell(t, r, 2, "%s", jstr(b, "role", "-"));
	cell(t, r, 3, "%s", jstr(b, "state", "-"));
	jnum(t->cells[r][4], sizeof(t->cells[r][4]), b, "priority", "%d", "");
	jnum(t->cells[r][5], sizeof(t->cells[r][5]), b, "weight", "%d", "");
	jnum(t->cells[r][6], sizeof(t->cells[r][6]), b, "lag_s", "%d", "s");
	jnum(t->cells[r][7], sizeof(t->cells[r][7]), b, "probe_ms", "%.1f", "ms");
	if (json_object_object_get_ex(b, "last_probe_ms", &v) &&
	    json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0)
		cell(t, r, 8, "%.1fs", (double)(now_ms - json_object_get_int64(v)) / 1000.0);
	else
		cell(t, r, 8, "never");
	jnum(t->cells[r][9], sizeof(t->cells[r][9]), b, "active", "%d", "");
	jnum(t->cells[r][10], sizeof(t->cells[r][10]), b, "steered", "%d", "");
	jnum(t->cells[r][11], sizeof(t->cells[r][11]), b, "connect_failures", "%d", "");
}

static void print_backends(json_object *st, FILE *out, int64_t now_ms)
{
	static const char *const head[NCOLS] = {"NAME", "ADDRESS", "ROLE",    "STATE",
	                                        "PRIO", "WEIGHT",  "LAG",     "PROBE",
	                                        "AGE",  "ACTIVE",  "STEERED", "FAILS"};
	struct table t = {.cols = NCOLS};
	json_object *arr = table_of_array(st, "backends", head, &t);

	if (!arr)
		return;
	for (size_t i = 1; i < t.rows; i++)
		backend_row(&t, i, json_object_array_get_idx(arr, i - 1), now_ms);
	print_table(&t, out);
	free(t.cells);
}

/* A duration as an operator reads it: 45s, 2m13s, 3h02m, 2d04h. */
static void fmt_age(char *buf, size_t len, double s)
{
	long long t = s < 0 ? 0 : (long long)s;

	if (t < 60)
		snprintf(buf, len, "%llds", t);
	else if (t < 3600)
		snprintf(buf, len, "%lldm%02llds", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, len, "%lldh%02lldm", t / 3600, t % 3600 / 60);
	else
		snprintf(buf, len, "%lldd%02lldh", t / 86400, t % 86400 / 3600);
}

static double jdouble(json_object *o, const char *key, double dflt)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
		return dflt;
	return json_object_get_double(v);
}

/* Each backend's rates over the daemon's window and its last change. */
static void print_traffic(json_object *st, FILE *out)
{
	static const char *const head[] = {"NAME",  "CONN/S", "STMT/S",
	                                   "ERR/S", "P99",    "LAST CHANGE"};
	struct table t = {.cols = 6};
	json_object *arr = table_of_array(st, "backends", head, &t);
	double window = 0;

	if (!arr)
		return;
	for (size_t i = 1; i < t.rows; i++) {
		json_object *b = json_object_array_get_idx(arr, i - 1), *tr = NULL, *ch = NULL;
		char age[32];

		json_object_object_get_ex(b, "traffic", &tr);
		json_object_object_get_ex(b, "last_change", &ch);
		if (jdouble(tr, "window_s", 0) > window)
			window = jdouble(tr, "window_s", 0);
		cell(&t, i, 0, "%s", jstr(b, "name", "?"));
		jnum(t.cells[i][1], sizeof(t.cells[i][1]), tr, "connections_per_s", "%.1f", "");
		jnum(t.cells[i][2], sizeof(t.cells[i][2]), tr, "statements_per_s", "%.1f", "");
		jnum(t.cells[i][3], sizeof(t.cells[i][3]), tr, "errors_per_s", "%.1f", "");
		jnum(t.cells[i][4], sizeof(t.cells[i][4]), tr, "p99_ms", "%.1f", "ms");
		if (!ch || json_object_is_type(ch, json_type_null)) {
			cell(&t, i, 5, "none since start");
			continue;
		}
		fmt_age(age, sizeof(age), jdouble(ch, "age_s", 0));
		cell(&t, i, 5, "%s ago: %s", age, jstr(ch, "what", "?"));
	}
	fprintf(out, "\ntraffic over the last %.0f s (p99: the latency bucket's bound)\n", window);
	print_table(&t, out);
	free(t.cells);
}

static void print_routes(json_object *st, FILE *out)
{
	static const char *const head[] = {"ROUTE", "PORT", "ROLE", "TARGETS"};
	struct table t = {.cols = 4};
	json_object *arr = table_of_array(st, "routes", head, &t), *targets;

	if (!arr)
		return;
	for (size_t i = 0; i + 1 < t.rows; i++) {
		json_object *r = json_object_array_get_idx(arr, i);
		char *dst = t.cells[i + 1][3];
		size_t len = sizeof(t.cells[0][3]);

		cell(&t, i + 1, 0, "%s", jstr(r, "name", "?"));
		jnum(t.cells[i + 1][1], sizeof(t.cells[0][1]), r, "port", "%d", "");
		cell(&t, i + 1, 2, "%s", jstr(r, "role", "-"));
		snprintf(dst, len, "-");
		if (!json_object_object_get_ex(r, "targets", &targets) ||
		    !json_object_is_type(targets, json_type_array))
			continue;
		for (size_t j = 0; j < json_object_array_length(targets); j++) {
			const char *name =
			    json_object_get_string(json_object_array_get_idx(targets, j));
			size_t used = j ? strlen(dst) : 0;

			snprintf(dst + used, len - used, "%s%s", j ? "," : "", name);
		}
	}
	print_table(&t, out);
	free(t.cells);
}

/* The 6450 proxy's pools, when the daemon runs it. */
static void print_pool(json_object *st, FILE *out)
{
	json_object *pool;
	struct table t = {.cols = 11};
	size_t n, r = 1;

	if (!json_object_object_get_ex(st, "pool", &pool) ||
	    !json_object_is_type(pool, json_type_object))
		return;
	n = (size_t)json_object_object_length(pool);
	t.cells = calloc(n + 1, sizeof(*t.cells));
	if (!t.cells)
		return;
	cell(&t, 0, 0, "POOL");
	cell(&t, 0, 1, "IDLE");
	cell(&t, 0, 2, "IN_USE");
	cell(&t, 0, 3, "OPENED");
	cell(&t, 0, 4, "REUSED");
	cell(&t, 0, 5, "OPEN");
	cell(&t, 0, 6, "MAX");
	cell(&t, 0, 7, "WAITING");
	cell(&t, 0, 8, "WAITS");
	cell(&t, 0, 9, "TIMEOUTS");
	cell(&t, 0, 10, "READERS");
	json_object_object_foreach(pool, name, o)
	{
		if (r > n)
			break;
		cell(&t, r, 0, "%s", name);
		jnum(t.cells[r][1], sizeof(t.cells[0][1]), o, "idle", "%d", "");
		jnum(t.cells[r][2], sizeof(t.cells[0][2]), o, "in_use", "%d", "");
		jnum(t.cells[r][3], sizeof(t.cells[0][3]), o, "opened", "%d", "");
		jnum(t.cells[r][4], sizeof(t.cells[0][4]), o, "reused", "%d", "");
		jnum(t.cells[r][5], sizeof(t.cells[0][5]), o, "open", "%d", "");
		jnum(t.cells[r][6], sizeof(t.cells[0][6]), o, "max", "%d", "");
		jnum(t.cells[r][7], sizeof(t.cells[0][7]), o, "waiting", "%d", "");
		jnum(t.cells[r][8], sizeof(t.cells[0][8]), o, "waits", "%d", "");
		jnum(t.cells[r][9], sizeof(t.cells[0][9]), o, "wait_timeouts", "%d", "");
		jnum(t.cells[r][10], sizeof(t.cells[0][10]), o, "readers", "%d", "");
		r++;
	}
	t.rows = r;
	fputc('\n', out);
	print_table(&t, out);
	free(t.cells);
}

/* prefix and the names of the array c[key], on one line, when there are any. */
static void print_names(json_object *c, const char *key, const char *prefix, FILE *out)
{
	json_object *a;
	size_t n;

	if (!json_object_object_get_ex(c, key, &a) || !json_object_is_type(a, json_type_array) ||
	    !(n = json_object_array_length(a)))
		return;
	fputs(prefix, out);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%s", i ? ", " : "",
		        json_object_get_string(json_object_array_get_idx(a, i)));
	fputc('\n', out);
}

/* With [cluster]: who leads, the epoch applied, this host's part in it, the
 * backends it cannot reach, the other hosts' views. */
static void print_cluster(json_object *st, FILE *out)
{
	json_object *c, *x;

	if (!json_object_object_get_ex(st, "cluster", &c) ||
	    !json_object_is_type(c, json_type_object))
		return;
	fprintf(out, "cluster: %s, leader %s, epoch %s, fleet writer %s; this host %s, %s\n",
	        jstr(c, "name", "?"), jstr(c, "leader", "none"), jstr(c, "epoch", "0"),
	        jstr(c, "writer", "none"), jstr(c, "host_id", "?"), jstr(c, "role", "?"));
	if (json_object_object_get_ex(c, "fenced", &x) && json_object_get_boolean(x))
		fprintf(out, "FENCED: no writes steered from this host: %s\n",
		        jstr(c, "fence_reason", "?"));
	print_names(c, "local_unreachable",
	            "UNREACHABLE from this host (up for the fleet; reads go elsewhere): ", out);
	print_names(c, "held_up", "held up (down from this leader only, not failed over): ", out);
	if (!json_object_object_get_ex(c, "views", &x) || !json_object_is_type(x, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(x); i++) {
		json_object *v = json_object_array_get_idx(x, i), *down, *age;
		char ago[32] = "?";
		if (json_object_object_get_ex(v, "age_ms", &age))
			fmt_age(ago, sizeof(ago), json_object_get_int64(age) / 1000.0);
		fprintf(out, "view %s (%s ago): ", jstr(v, "host", "?"), ago);
		if (json_object_object_get_ex(v, "down", &down) &&
		    json_object_is_type(down, json_type_array) && json_object_array_length(down)) {
			fputs("down", out);
			for (size_t k = 0; k < json_object_array_length(down); k++)
				fprintf(out, " %s",
				        json_object_get_string(json_object_array_get_idx(down, k)));
			fputc('\n', out);
		} else {
			fputs("none down\n", out);
		}
	}
}

void ctl_print_status(json_object *status, FILE *out, int64_t now_ms)
{
	json_object *w;

	char up[32];

	fmt_age(up, sizeof(up), jdouble(status, "uptime_s", 0));
	fprintf(out, "mysteerd %s, up %s\n", jstr(status, "version", "?"), up);
	fprintf(out, "writer: %s\n", jstr(status, "writer", "none"));
	print_cluster(status, out);
	if (json_object_object_get_ex(status, "warnings", &w) &&
	    json_object_is_type(w, json_type_array))
		for (size_t i = 0; i < json_object_array_length(w); i++)
			fprintf(out, "WARNING: %s\n",
			        json_object_get_string(json_object_array_get_idx(w, i)));
	print_backends(status, out, now_ms);
	print_traffic(status, out);
	fputc('\n', out);
	print_routes(status, out);
	print_pool(status, out);
}

/* ---- commands that are more than one exchange ---- */

static int64_t realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int fail(const char *fmt, ...)
{
	va_list ap;

	fputs("mysteerctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CTL_EXIT_FAILED;
}

/* The eBPF maps, read from bpffs: no daemon involved. maps_dump writes its
 * failure reason to its stream; buffered so that the reason goes to stderr
 * as the one "mysteerctl:" line and stdout only ever gets a whole dump. */
static int ctl_maps(const char *bpffs_dir, bool json)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int rc;

	if (!mem)
		return fail("maps: %s", strerror(errno));
	rc = maps_dump(bpffs_dir, json, mem);
	if (fclose(mem) != 0) {
		free(text);
		return fail("maps: %s", strerror(errno));
	}
	if (rc < 0) {
		len = strcspn(text, "\n");
		rc = fail("maps: %.*s", (int)len, text);
		free(text);
		return rc;
	}
	rc = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0;
	free(text);
	return rc ? CTL_EXIT_OK : fail("stdout: %s", strerror(errno));
}

/* bpffs_dir and [steer] cgroup of -c FILE, else the defaults. */
static int steer_paths_of(const struct ctl_request *req, char *dir, size_t dlen, char *cgroup,
                          size_t clen)
{
	char err[512];
	struct config *c;

	snprintf(dir, dlen, "/sys/fs/bpf/mysteer");
	snprintf(cgroup, clen, "auto");
	if (!req->config)
		return 0;
	c = config_load_flags(req->config, CONFIG_LOAD_NO_SECRETS, err, sizeof(err));
	if (!c)
		return fail("%s", err);
	snprintf(dir, dlen, "%s", c->bpffs_dir);
	snprintf(cgroup, clen, "%s", c->cgroup);
	config_free(c);
	return 0;
}

static int bpffs_dir_of(const struct ctl_request *req, char *out, size_t len)
{
	char cgroup[PATH_MAX];

	return steer_paths_of(req, out, len, cgroup, sizeof(cgroup));
}

/*
 * Removes everything mysteer attached and pinned, whether a daemon runs or
 * not: the links pinned under bpffs_dir (detached first, so that a running
 * daemon's own fds do not keep them attached), every name pinned there, and
 * the links of mysteer's programs on the cgroup and on this network
 * namespace that are pinned nowhere else. A running daemon is named: it
 * steers nothing until it is restarted.
 */
static int ctl_detach(const struct ctl_request *req)
{
	char dir[PATH_MAX], want[PATH_MAX], cg[PATH_MAX], err[600];
	struct leftover_scope sc = {.live = LEFTOVER_LIVE_DETACH};
	long daemon, holder = 0;
	int pins = 0, links;

	if (steer_paths_of(req, dir, sizeof(dir), want, sizeof(want)))
		return CTL_EXIT_FAILED;
	if (want[0] && leftover_cgroup_path(want, cg, sizeof(cg)))
		return fail("detach: cgroup = auto: no cgroup2 mount in /proc/mounts");
	if (!want[0])
		cg[0] = 0;
	daemon = leftover_lock_holder(dir);
	if (access(dir, F_OK) == 0 && (pins = leftover_remove_pins(dir, err, sizeof(err))) < 0)
		return fail("detach: %s", err);
	sc.cgroup_id = leftover_cgroup_id(cg);
	sc.netns_ino = leftover_netns_ino();
	links = leftover_detach_links(&sc, &holder, err, sizeof(err));
	if (links < 0)
		return fail("detach: %s", err);
	if (!daemon)
		daemon = holder;
	if (req->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "bpffs_dir", json_object_new_string(dir));
		json_object_object_add(o, "cgroup", json_object_new_string(cg));
		json_object_object_add(o, "unpinned", json_object_new_int(pins));
		json_object_object_add(o, "links_detached", json_object_new_int(links));
		json_object_object_add(o, "daemon_pid",
		                       daemon ? json_object_new_int64(daemon) : NULL);
		printf("%s\n", json_object_to_json_string_ext(
		                   o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		printf("detached: %d names unpinned from %s, %d more links detached (cgroup %s, "
		       "this network namespace)\n",
		       pins, dir, links, cg[0] ? cg : "none");
		if (daemon)
			printf("mysteerd pid %ld still runs and steers nothing until it is "
			       "restarted\n",
			       daemon);
	}
	if (fflush(stdout) != 0)
		return fail("stdout: %s", strerror(errno));
	return CTL_EXIT_OK;
}

/* Moves this process into the steered cgroup, then becomes the command. */
static int ctl_exec(const struct ctl_request *req, json_object *status)
{
	const char *cg = jstr(status, ADMIN_KEY_CGROUP, "");
	char path[PATH_MAX], pid[32];
	FILE *f;

	if (!*cg)
		return fail("exec: the daemon steers no cgroup (steer.cgroup is off)");
	if (snprintf(path, sizeof(path), "%s/cgroup.procs", cg) >= (int)sizeof(path))
		return fail("exec: cgroup path too long");
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	f = fopen(path, "we");
	if (!f)
		return fail("exec: %s: %s", path, strerror(errno));
	if (fputs(pid, f) < 0 || fclose(f) != 0)
		return fail("exec: %s: %s", path, strerror(errno));
	fflush(NULL);
	execvp(req->exec_argv[0], req->exec_argv);
	return fail("exec: %s: %s", req->exec_argv[0], strerror(errno));
}

static int handle_reply(const struct ctl_request *req, json_object *reply)
{
	json_object *ok;

	if (!json_object_object_get_ex(reply, ADMIN_KEY_OK, &ok) ||
	    !json_object_is_type(ok, json_type_boolean))
		return fail("malformed reply from the daemon (no \"ok\")");
	if (!json_object_get_boolean(ok))
		return fail("%s", jstr(reply, ADMIN_KEY_ERROR, "refused (no reason given)"));
	if (req->cmd == CTL_EXEC)
		return ctl_exec(req, reply);
	json_object_object_del(reply, ADMIN_KEY_OK);
	if (req->cmd == CTL_STATUS && !req->json)
		ctl_print_status(reply, stdout, realtime_ms());
	else if (req->json)
		printf("%s\n", json_object_to_json_string_ext(
		                   reply, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	if (fflush(stdout) != 0)
		return fail("stdout: %s", strerror(errno));
	return CTL_EXIT_OK;
}

int ctl_main(int argc, char **argv)
{
	struct ctl_request req;
	char err[600], sock[PATH_MAX], dir[PATH_MAX];
	json_object *request, *reply;
	int rc;

	/* Config warnings are the daemon's business, not the CLI user's. */
	log_set_level(LOG_LVL_ERROR);
	rc = ctl_parse_args(argc, argv, &req, err, sizeof(err));
	if (rc == CTL_PARSE_USAGE) {
		fprintf(stderr, "mysteerctl: %s\n%s", err, ctl_usage);
		return CTL_EXIT_USAGE;
	}
	if (rc == CTL_PARSE_BAD_VALUE)
		return fail("%s", err);
	if (req.cmd == CTL_HELP) {
		fputs(ctl_usage, stdout);
		return CTL_EXIT_OK;
	}
	if (req.cmd == CTL_MAPS) {
		if (bpffs_dir_of(&req, dir, sizeof(dir)))
			return CTL_EXIT_FAILED;
		return ctl_maps(dir, req.json);
	}
	if (req.cmd == CTL_DETACH)
		return ctl_detach(&req);
	if (ctl_socket_path(&req, sock, sizeof(sock), err, sizeof(err)))
		return fail("%s", err);
	if (req.cmd == CTL_TOP)
		return ctl_top(sock, 1000, stdout);
	request = ctl_build_request(&req);
	if (!request)
		return fail("out of memory");
	rc = ctl_call(sock, request, &reply, err, sizeof(err));
	json_object_put(request);
	if (rc)
		return fail("%s", err);
	rc = handle_reply(&req, reply);
	json_object_put(reply);
	return rc;
}
