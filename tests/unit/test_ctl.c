/*
 * test_ctl.c - mysteerctl without a daemon: argument parsing (every command,
 * wrong shapes, bad values), the request JSON, the status table, and the
 * socket exchange against a one-shot server thread that plays the daemon's
 * side of admin_proto.h (to check what the client sends and how it reacts to
 * each kind of reply).
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/admin_proto.h"
#include "ctl/ctl.h"

static char err[600];

/* Parses a space-separated command line (after "mysteerctl"). */
static int parse(const char *line, struct ctl_request *req)
{
	static char buf[1024];
	static char *argv[64];
	int argc = 0;

	snprintf(buf, sizeof(buf), "%s", line);
	argv[argc++] = "mysteerctl";
	for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	err[0] = '\0';
	return ctl_parse_args(argc, argv, req, err, sizeof(err));
}

START_TEST(test_parse_commands)
{
	struct ctl_request r;

	ck_assert_int_eq(parse("status", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.cmd, CTL_STATUS);
	ck_assert(!r.json && !r.socket && !r.config);

	ck_assert_int_eq(parse("--socket /tmp/s --json status", &r), CTL_PARSE_OK);
	ck_assert_str_eq(r.socket, "/tmp/s");
	ck_assert(r.json);
	ck_assert_int_eq(parse("status --json", &r), CTL_PARSE_OK);
	ck_assert(r.json);
	ck_assert_int_eq(parse("--socket=/x status", &r), CTL_PARSE_OK);
	ck_assert_str_eq(r.socket, "/x");
	ck_assert_int_eq(parse("-c /etc/m.conf status", &r), CTL_PARSE_OK);
	ck_assert_str_eq(r.config, "/etc/m.conf");
	ck_assert_int_eq(parse("--config=/a.conf reload", &r), CTL_PARSE_OK);
	ck_assert_str_eq(r.config, "/a.conf");
	ck_assert_int_eq(r.cmd, CTL_RELOAD);

	ck_assert_int_eq(parse("add db4 127.0.0.1:3309", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.cmd, CTL_ADD);
	ck_assert_str_eq(r.name, "db4");
	ck_assert_str_eq(r.host, "127.0.0.1");
	ck_assert_int_eq(r.port, 3309);
	ck_assert_int_eq(r.priority, -1);
	ck_assert_int_eq(r.weight, -1);
	ck_assert_int_eq(parse("add db4 [::1]:3309 weight=0 priority=5", &r), CTL_PARSE_OK);
	ck_assert_str_eq(r.host, "::1");
	ck_assert_int_eq(r.priority, 5);
	ck_assert_int_eq(r.weight, 0);
	ck_assert_int_eq(parse("add db5 db-5.example:1", &r), CTL_PARSE_OK);
	ck_assert_str_eq(r.host, "db-5.example");

	ck_assert_int_eq(parse("remove db2", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.cmd, CTL_REMOVE);
	ck_assert_str_eq(r.name, "db2");
	ck_assert_int_eq(parse("set db2 priority=10", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.cmd, CTL_SET);
	ck_assert_int_eq(r.priority, 10);
	ck_assert_int_eq(r.weight, -1);
	ck_assert_int_eq(parse("set db2 weight=3 priority=1000000", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.weight, 3);
	ck_assert_int_eq(r.priority, 1000000);
	ck_assert_int_eq(parse("drain db1", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.cmd, CTL_DRAIN);
	ck_assert_int_eq(parse("disable db1", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.cmd, CTL_DISABLE);
	ck_assert_int_eq(parse("enable db1", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.cmd, CTL_ENABLE);
	ck_assert_int_eq(parse("reset", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.cmd, CTL_RESET);
	ck_assert_str_eq(r.name, "");
	ck_assert_int_eq(parse("reset db3", &r), CTL_PARSE_OK);
	ck_assert_str_eq(r.name, "db3");
	ck_assert_int_eq(parse("maps", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.cmd, CTL_MAPS);
	ck_assert_int_eq(parse("detach", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.cmd, CTL_DETACH);
	ck_assert_int_eq(parse("--json detach", &r), CTL_PARSE_OK);
	ck_assert(r.json);
	ck_assert_int_eq(parse("detach db1", &r), CTL_PARSE_USAGE);
	ck_assert_int_eq(parse("--help", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.cmd, CTL_HELP);
	ck_assert_int_eq(parse("help", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.cmd, CTL_HELP);
}
END_TEST

START_TEST(test_parse_exec)
{
	struct ctl_request r;

	ck_assert_int_eq(parse("exec -- mysql -h 127.0.0.1 --json", &r), CTL_PARSE_OK);
	ck_assert_int_eq(r.cmd, CTL_EXEC);
	ck_assert_str_eq(r.exec_argv[0], "mysql");
	ck_assert_str_eq(r.exec_argv[1], "-h");
	ck_assert_str_eq(r.exec_argv[3], "--json"); /* the command's, not ours */
	ck_assert(!r.json);
	ck_assert_ptr_null(r.exec_argv[4]);
	ck_assert_int_eq(parse("--socket /s exec true", &r), CTL_PARSE_OK);
	ck_assert_str_eq(r.exec_argv[0], "true");
	ck_assert_int_eq(parse("exec", &r), CTL_PARSE_USAGE);
	ck_assert_int_eq(parse("exec --", &r), CTL_PARSE_USAGE);
}
END_TEST

struct bad_args {
	const char *line;
	int rc;
	const char *want;
};

static const struct bad_args bad[] = {
    {"", CTL_PARSE_USAGE, "no command"},
    {"--json", CTL_PARSE_USAGE, "no command"},
    {"frob", CTL_PARSE_USAGE, "unknown command \"frob\""},
    {"--frob status", CTL_PARSE_USAGE, "unknown option \"--frob\""},
    {"status extra", CTL_PARSE_USAGE, "too many arguments"},
    {"reload now", CTL_PARSE_USAGE, "too many arguments"},
    {"maps x", CTL_PARSE_USAGE, "too many arguments"},
    {"remove", CTL_PARSE_USAGE, "remove: missing arguments"},
    {"remove a b", CTL_PARSE_USAGE, "too many arguments"},
    {"drain", CTL_PARSE_USAGE, "missing"},
    {"disable", CTL_PARSE_USAGE, "missing"},
    {"enable", CTL_PARSE_USAGE, "missing"},
    {"reset a b", CTL_PARSE_USAGE, "too many"},
    {"add db4", CTL_PARSE_USAGE, "add: missing arguments"},
    {"add", CTL_PARSE_USAGE, "missing"},
    {"add db4 h:1 priority=1 weight=1 x=1", CTL_PARSE_USAGE, "too many"},
    {"add db4 h:1 color=red", CTL_PARSE_USAGE, "unexpected argument \"color=red\""},
    {"add db4 h:1 priority=1 priority=2", CTL_PARSE_USAGE, "priority given twice"},
    {"set db1", CTL_PARSE_USAGE, "set: missing arguments"},
    {"set db1 5", CTL_PARSE_USAGE, "unexpected argument"},
    {"set db1 priority=", CTL_PARSE_BAD_VALUE, "bad priority \"\""},
    {"set db1 priority=abc", CTL_PARSE_BAD_VALUE, "bad priority \"abc\""},
    {"set db1 priority=-1", CTL_PARSE_BAD_VALUE, "bad priority \"-1\""},
    {"set db1 priority=1000001", CTL_PARSE_BAD_VALUE, "bad priority"},
    {"set db1 priority=99999999999999999999999", CTL_PARSE_BAD_VALUE, "bad priority"},
    {"set db1 priority=1x", CTL_PARSE_BAD_VALUE, "bad priority"},
    {"set db1 priority=+1e3", CTL_PARSE_BAD_VALUE, "bad priority"},
    {"set db1 weight=-3", CTL_PARSE_BAD_VALUE, "bad weight"},
    {"set bad/name weight=1", CTL_PARSE_BAD_VALUE, "bad backend name \"bad/name\""},
    {"drain a:b", CTL_PARSE_BAD_VALUE, "bad backend name"},
    {"add db4 127.0.0.1", CTL_PARSE_BAD_VALUE, "bad address \"127.0.0.1\""},
    {"add db4 127.0.0.1:", CTL_PARSE_BAD_VALUE, "bad address"},
    {"add db4 :3306", CTL_PARSE_BAD_VALUE, "bad address"},
    {"add db4 127.0.0.1:0", CTL_PARSE_BAD_VALUE, "bad address"},
    {"add db4 127.0.0.1:65536", CTL_PARSE_BAD_VALUE, "bad address"},
    {"add db4 127.0.0.1:33x", CTL_PARSE_BAD_VALUE, "bad address"},
    {"add db4 ::1:3306", CTL_PARSE_BAD_VALUE, "bad address"},
    {"add db4 [::1]3306", CTL_PARSE_BAD_VALUE, "bad address"},
    {"add db4 [::1:3306", CTL_PARSE_BAD_VALUE, "bad address"},
    {"add db4 [nothost]:3306", CTL_PARSE_BAD_VALUE, "bad address"},
    {"add db4 []:3306", CTL_PARSE_BAD_VALUE, "bad address"},
    {"add db4 ho$t:3306", CTL_PARSE_BAD_VALUE, "bad address"},
    {"--socket", CTL_PARSE_USAGE, "--socket needs a path"},
    {"status -c", CTL_PARSE_USAGE, "--config needs a file"},
};

START_TEST(test_parse_bad)
{
	struct ctl_request r;
	int rc = parse(bad[_i].line, &r);

	ck_assert_msg(rc == bad[_i].rc, "\"%s\": rc %d, want %d (%s)", bad[_i].line, rc, bad[_i].rc,
	              err);
	ck_assert_msg(strstr(err, bad[_i].want), "\"%s\": got \"%s\", want \"%s\"", bad[_i].line,
	              err, bad[_i].want);
	ck_assert(!strchr(err, '\n'));
}
END_TEST

START_TEST(test_build_request)
{
	struct ctl_request r;
	json_object *o;

	ck_assert_int_eq(parse("add db4 [::1]:3309 priority=7", &r), CTL_PARSE_OK);
	o = ctl_build_request(&r);
	ck_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	                 "{\"cmd\":\"add\",\"name\":\"db4\",\"host\":\"::1\",\"port\":3309,"
	                 "\"priority\":7}");
	json_object_put(o);

	ck_assert_int_eq(parse("set db2 weight=0", &r), CTL_PARSE_OK);
	o = ctl_build_request(&r);
	ck_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	                 "{\"cmd\":\"set\",\"name\":\"db2\",\"weight\":0}");
	json_object_put(o);

	ck_assert_int_eq(parse("reset", &r), CTL_PARSE_OK);
	o = ctl_build_request(&r);
	ck_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	                 "{\"cmd\":\"reset\"}");
	json_object_put(o);

	ck_assert_int_eq(parse("exec -- true", &r), CTL_PARSE_OK);
	o = ctl_build_request(&r); /* exec asks for the status (cgroup) */
	ck_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	                 "{\"cmd\":\"status\"}");
	json_object_put(o);

	ck_assert_int_eq(parse("maps", &r), CTL_PARSE_OK);
	ck_assert_ptr_null(ctl_build_request(&r));
	ck_assert_int_eq(parse("detach", &r), CTL_PARSE_OK);
	ck_assert_ptr_null(ctl_build_request(&r)); /* no daemon involved */
}
END_TEST

START_TEST(test_socket_path)
{
	struct ctl_request r;
	char path[256];
	char conf[] = "/tmp/test_ctl.conf.XXXXXX";
	int fd;

	unsetenv(ADMIN_SOCKET_ENV);
	ck_assert_int_eq(parse("status", &r), CTL_PARSE_OK);
	ck_assert_int_eq(ctl_socket_path(&r, path, sizeof(path), err, sizeof(err)), 0);
	ck_assert_str_eq(path, ADMIN_DEFAULT_SOCKET);
	setenv(ADMIN_SOCKET_ENV, "/env.sock", 1);
	ck_assert_int_eq(ctl_socket_path(&r, path, sizeof(path), err, sizeof(err)), 0);
	ck_assert_str_eq(path, "/env.sock");

	fd = mkstemp(conf);
	ck_assert_int_ge(fd, 0);
	dprintf(fd, "[mysteerd]\nadmin_socket = /conf.sock\n[backend:a]\nhost = h\n");
	close(fd);
	char line[128];
	snprintf(line, sizeof(line), "-c %s status", conf);
	ck_assert_int_eq(parse(line, &r), CTL_PARSE_OK);
	ck_assert_int_eq(ctl_socket_path(&r, path, sizeof(path), err, sizeof(err)), 0);
	ck_assert_str_eq(path, "/conf.sock"); /* -c beats the environment */
	snprintf(line, sizeof(line), "-c %s --socket /opt.sock status", conf);
	ck_assert_int_eq(parse(line, &r), CTL_PARSE_OK);
	ck_assert_int_eq(ctl_socket_path(&r, path, sizeof(path), err, sizeof(err)), 0);
	ck_assert_str_eq(path, "/opt.sock");
	unlink(conf);
	ck_assert_int_eq(parse(line, &r), CTL_PARSE_OK);
	ck_assert_int_eq(parse("-c /nonexistent.conf status", &r), CTL_PARSE_OK);
	ck_assert_int_eq(ctl_socket_path(&r, path, sizeof(path), err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent.conf: cannot open"));
	unsetenv(ADMIN_SOCKET_ENV);
}
END_TEST

static const char status_json[] =
    "{\"writer\":\"db1\",\"cgroup\":\"/sys/fs/cgroup/unified/mysteer\","
    "\"backends\":["
    "{\"name\":\"db1\",\"host\":\"127.0.0.1\",\"port\":3306,\"role\":\"writer\","
    "\"state\":\"up\",\"health\":\"up\",\"admin\":\"enabled\",\"priority\":100,"
    "\"weight\":1,\"read_only\":false,\"lag_s\":null,\"probe_ms\":0.4,"
    "\"last_probe_ms\":999000,\"active\":3,\"steered\":120,\"connect_failures\":0},"
    "{\"name\":\"db2\",\"host\":\"::1\",\"port\":3307,\"role\":\"reader\","
    "\"state\":\"drained\",\"priority\":200,\"weight\":2,\"lag_s\":4,\"probe_ms\":1.25,"
    "\"last_probe_ms\":0,\"active\":0,\"steered\":7,\"connect_failures\":2}],"
    "\"routes\":[{\"name\":\"rw\",\"port\":6446,\"role\":\"writer\",\"targets\":[\"db1\"]},"
    "{\"name\":\"split\",\"port\":6450,\"role\":\"split\",\"targets\":[\"db1\",\"db2\"]},"
    "{\"name\":\"ro\",\"port\":6447,\"role\":\"reader\",\"targets\":[]}],"
    "\"pool\":{\"db1\":{\"idle\":0,\"in_use\":2,\"opened\":9,\"reused\":40,\"resets\":3,"
    "\"clean\":30,\"open\":2,\"max\":2,\"waiting\":3,\"waits\":17,\"wait_timeouts\":1,"
    "\"readers\":5}}}";

START_TEST(test_status_table)
{
	json_object *st = json_tokener_parse(status_json);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(st);
	ck_assert_ptr_nonnull(f);
	ctl_print_status(st, f, 1000000);
	fclose(f);
	ck_assert_msg(strstr(text, "writer: db1\n"), "%s", text);
	ck_assert_msg(strstr(text, "NAME  ADDRESS         ROLE    STATE    PRIO  WEIGHT  LAG  "
	                           "PROBE  AGE    ACTIVE  STEERED  FAILS\n"),
	              "%s", text);
	ck_assert_msg(strstr(text, "db1   127.0.0.1:3306  writer  up       100   1       -    "
	                           "0.4ms  1.0s   3       120      0\n"),
	              "%s", text);
	ck_assert_msg(strstr(text, "db2   [::1]:3307      reader  drained  200   2       4s   "
	                           "1.2ms  never  0       7        2\n"),
	              "%s", text);
	ck_assert_msg(strstr(text, "rw     6446  writer  db1\n"), "%s", text);
	ck_assert_msg(strstr(text, "split  6450  split   db1,db2\n"), "%s", text);
	ck_assert_msg(strstr(text, "ro     6447  reader  -\n"), "%s", text);
	ck_assert_msg(strstr(text, "POOL  IDLE  IN_USE  OPENED  REUSED  OPEN  MAX  WAITING  WAITS  "
	                           "TIMEOUTS  READERS\n"
	                           "db1   0     2       9       40      2     2    3        17     "
	                           "1         5\n"),
	              "%s", text);
	free(text);
	json_object_put(st);

	/* No writer, missing keys: still a table, no crash. */
	st = json_tokener_parse("{\"writer\":null,\"backends\":[{\"name\":\"x\"}],\"routes\":[]}");
	f = open_memstream(&text, &len);
	ctl_print_status(st, f, 0);
	fclose(f);
	ck_assert_msg(strstr(text, "writer: none\n"), "%s", text);
	ck_assert_msg(strstr(text, "x     ?:-"), "%s", text);
	free(text);
	json_object_put(st);
}
END_TEST

/* ---- the socket exchange against a one-shot server ---- */

struct fake {
	char path[108];
	int lfd;
	const char *reply; /* sent as is; NULL: close without a reply */
	char got[4096];    /* the request line received */
};

static void *fake_serve(void *arg)
{
	struct fake *f = arg;
	int c = accept(f->lfd, NULL, NULL);
	size_t n = 0;

	if (c < 0)
		return NULL;
	while (n < sizeof(f->got) - 1) {
		ssize_t r = read(c, f->got + n, sizeof(f->got) - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
		if (memchr(f->got, '\n', n))
			break;
	}
	f->got[n] = '\0';
	if (f->reply && write(c, f->reply, strlen(f->reply)) < 0)
		perror("fake write");
	close(c);
	return NULL;
}

static void fake_start(struct fake *f, pthread_t *th, const char *reply)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "/tmp/test_ctl.%d.sock", (int)getpid());
	unlink(f->path);
	strcpy(sa.sun_path, f->path);
	f->reply = reply;
	f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_ge(f->lfd, 0);
	ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(f->lfd, 1), 0);
	ck_assert_int_eq(pthread_create(th, NULL, fake_serve, f), 0);
}

static void fake_stop(struct fake *f, pthread_t th)
{
	pthread_join(th, NULL);
	close(f->lfd);
	unlink(f->path);
}

START_TEST(test_call_ok)
{
	struct fake f;
	pthread_t th;
	json_object *req = json_tokener_parse("{\"cmd\":\"drain\",\"name\":\"db1\"}"), *rep;

	fake_start(&f, &th, "{\"ok\":true}\n");
	ck_assert_int_eq(ctl_call(f.path, req, &rep, err, sizeof(err)), 0);
	fake_stop(&f, th);
	ck_assert_str_eq(f.got, "{\"cmd\":\"drain\",\"name\":\"db1\"}\n");
	ck_assert(json_object_get_boolean(json_object_object_get(rep, "ok")));
	json_object_put(rep);
	json_object_put(req);
}
END_TEST

START_TEST(test_call_failures)
{
	struct fake f;
	pthread_t th;
	json_object *req = json_tokener_parse("{\"cmd\":\"status\"}"), *rep;

	ck_assert_int_eq(ctl_call("/tmp/test_ctl.none.sock", req, &rep, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "daemon not running (/tmp/test_ctl.none.sock: No such file or "
	                      "directory)");

	fake_start(&f, &th, NULL);
	ck_assert_int_eq(ctl_call(f.path, req, &rep, err, sizeof(err)), -1);
	fake_stop(&f, th);
	ck_assert_ptr_nonnull(strstr(err, "closed the connection without a reply"));

	fake_start(&f, &th, "{\"ok\":tru");
	ck_assert_int_eq(ctl_call(f.path, req, &rep, err, sizeof(err)), -1);
	fake_stop(&f, th);
	ck_assert_ptr_nonnull(strstr(err, "malformed reply"));
	ck_assert_ptr_null(rep);
	json_object_put(req);
}
END_TEST

/* ctl_main end to end, with its exit code and output. */
static int run_main(const char *reply, const char *args, char *out, size_t outlen)
{
	struct fake f;
	pthread_t th;
	char line[512];
	char *argv[16];
	int argc = 0, rc, fds[2], saved = dup(STDOUT_FILENO);
	ssize_t n;

	fake_start(&f, &th, reply);
	snprintf(line, sizeof(line), "mysteerctl --socket %s %s", f.path, args);
	for (char *save = NULL, *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	ck_assert_int_eq(pipe(fds), 0);
	fflush(stdout);
	dup2(fds[1], STDOUT_FILENO);
	rc = ctl_main(argc, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fds[1]);
	n = read(fds[0], out, outlen - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	fake_stop(&f, th);
	return rc;
}

START_TEST(test_main_exit_codes)
{
	char out[8192], reply[4096];

	snprintf(reply, sizeof(reply), "{\"ok\":true,%s\n", status_json + 1);
	ck_assert_int_eq(run_main(reply, "status --json", out, sizeof(out)), CTL_EXIT_OK);
	ck_assert_msg(!strncmp(out, "{\"writer\":\"db1\",\"cgroup\":", 25), "%s", out);
	ck_assert_msg(!strstr(out, "\"ok\""), "%s", out);
	ck_assert_int_eq(out[strlen(out) - 1], '\n');
	ck_assert_ptr_eq(strchr(out, '\n'), &out[strlen(out) - 1]); /* one line */

	ck_assert_int_eq(run_main(reply, "status", out, sizeof(out)), CTL_EXIT_OK);
	ck_assert_ptr_nonnull(strstr(out, "writer: db1\nNAME"));

	ck_assert_int_eq(run_main("{\"ok\":true}\n", "enable db1", out, sizeof(out)), CTL_EXIT_OK);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(run_main("{\"ok\":false,\"error\":\"unknown backend \\\"zz\\\"\"}\n",
	                          "drain zz", out, sizeof(out)),
	                 CTL_EXIT_FAILED);
	ck_assert_int_eq(run_main("{\"nothing\":1}\n", "reload", out, sizeof(out)),
	                 CTL_EXIT_FAILED);
	/* exec: the status names a cgroup we cannot write to. */
	ck_assert_int_eq(run_main("{\"ok\":true,\"cgroup\":\"/nonexistent/cg\"}\n", "exec -- true",
	                          out, sizeof(out)),
	                 CTL_EXIT_FAILED);
	ck_assert_int_eq(
	    run_main("{\"ok\":true,\"cgroup\":\"\"}\n", "exec -- true", out, sizeof(out)),
	    CTL_EXIT_FAILED);
}
END_TEST

START_TEST(test_main_usage_and_maps)
{
	char *argv[] = {"mysteerctl", "bogus", NULL};
	char *argv2[] = {"mysteerctl", "set", "db1", "priority=x", NULL};
	char conf[] = "/tmp/test_ctl.conf.XXXXXX";
	int fd = mkstemp(conf);

	ck_assert_int_ge(fd, 0);
	dprintf(fd, "[mysteerd]\nbpffs_dir = /nonexistent/bpf\n[backend:a]\nhost = h\n");
	close(fd);
	char *argv3[] = {"mysteerctl", "-c", conf, "maps", NULL};

	ck_assert_int_eq(ctl_main(2, argv), CTL_EXIT_USAGE);
	ck_assert_int_eq(ctl_main(4, argv2), CTL_EXIT_FAILED);
	/* Nothing pinned there: one line, exit 1, no daemon needed. */
	ck_assert_int_eq(ctl_main(4, argv3), CTL_EXIT_FAILED);
	unlink(conf);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_parse_commands);
	tcase_add_test(tc, test_parse_exec);
	tcase_add_loop_test(tc, test_parse_bad, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, test_build_request);
	tcase_add_test(tc, test_socket_path);
	tcase_add_test(tc, test_status_table);
	suite_add_tcase(s, tc);
	tc = tcase_create("socket");
	tcase_add_test(tc, test_call_ok);
	tcase_add_test(tc, test_call_failures);
	tcase_add_test(tc, test_main_exit_codes);
	tcase_add_test(tc, test_main_usage_and_maps);
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
