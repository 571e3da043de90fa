/*
 * main.c - mysteerd: loads the config and the state overlay, starts the
 * services (eBPF steering, proxies) of the table below, the controller and
 * the admin socket, then runs the controller loop until SIGTERM/SIGINT.
 * SIGHUP reloads the config. Signals arrive through a signalfd in the loop,
 * so no handler ever runs in the middle of a probe or a command.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <mysql.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "admin/admin.h"
#include "cluster/cluster.h"
#include "common/evloop.h"
#include "daemon/check.h"
#include "daemon/privdrop.h"
#include "common/io.h"
#include "common/log.h"
#include "config/config.h"
#include "config/state.h"
#include "common/service.h"
#include "maps/maps.h"
#include "metrics/http.h"
#include "metrics/process.h"
#include "proxy/proxy.h"
#include "relay/lookup.h"
#include "topo/controller.h"

/*
 * The parts that consume the topology, started in this order and stopped in
 * the reverse. One line a part: declare `extern const struct service_ops
 * x_service;` in the part's header, include it above and list it here.
 */
static const struct service_ops *const services[] = {
    &steer_service,
    &lookup_service,
    &proxy_service,
    /* with [cluster]: the fleet's decision instead of this host's */
    &cluster_service,
};
#define NSERVICES (sizeof(services) / sizeof(services[0]))

struct daemon {
	struct daemon_ctx ctx;
	struct controller *ctl;
	struct admin *admin;
	struct metrics_http *http;
	struct state_overlay ov;
	const struct service_ops *started[NSERVICES];
	size_t nstarted;
	int sigfd;
};

static void usage(void)
{
	fprintf(stderr,
	        "usage: mysteerd -c FILE [-f | --check]\n"
	        "  -c FILE  the config (docs/CONFIG.md)\n"
	        "  -f       stay in the foreground and log to stderr\n"
	        "  --check  say what the daemon could and could not do here (kernel,\n"
	        "           capabilities, backends, grants), one line each; start nothing\n");
}

/* controller_id_hooks: a backend id is held while a started part has
 * something open to its old backend; a reused one starts from zero. */
static bool id_busy(uint32_t id, void *arg)
{
	struct daemon *dm = arg;
	struct backend_counters bc = {0};

	for (size_t i = 0; i < dm->nstarted; i++)
		if (dm->started[i]->backend_counters)
			dm->started[i]->backend_counters(id, &bc);
	return bc.open > 0;
}

static void id_reused(uint32_t id, void *arg)
{
	struct daemon *dm = arg;

	for (size_t i = 0; i < dm->nstarted; i++)
		if (dm->started[i]->backend_reset)
			dm->started[i]->backend_reset(id);
}

static void request_probe(struct daemon_ctx *d, uint32_t backend_id)
{
	controller_request_probe_async(d->controller, backend_id);
}

static void admin_run(struct daemon_ctx *d, const char *request)
{
	struct daemon *dm = (struct daemon *)d; /* ctx is its first member */
	struct json_object *rep, *ok, *err;

	if (!dm->admin)
		return;
	rep = admin_handle(dm->admin, request);
	if (rep && json_object_object_get_ex(rep, "ok", &ok) && !json_object_get_boolean(ok))
		log_warn("%s: %s", request,
		         json_object_object_get_ex(rep, "error", &err) ? json_object_get_string(err)
		                                                       : "refused");
	json_object_put(rep);
}

/* /ready: every started part can do its job and a writer is known. */
static bool daemon_ready(void *arg, char *why, size_t len)
{
	struct daemon *dm = arg;
	const struct topology *t;
	bool writer;

	for (size_t i = 0; i < dm->nstarted; i++)
		if (dm->started[i]->ready && !dm->started[i]->ready(why, len))
			return false;
	t = topo_current();
	writer = t && t->writer >= 0;
	topo_put(t);
	if (!writer)
		snprintf(why, len, "no writer known");
	return writer;
}

static void on_wake(struct evloop *l, void *arg)
{
	struct daemon *dm = arg;
	controller_run_pending(dm->ctl);
}

static void on_signal(struct evloop *l, int fd, unsigned events, void *arg)
{
	struct daemon *dm = arg;
	struct signalfd_siginfo si;
	char err[512];
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			log_info("SIGHUP: reloading");
			sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
			           (unsigned long long)mono_us());
			if (admin_reload(dm->admin, err, sizeof(err)) < 0)
				log_error("reload failed: %s", err);
			sd_notify(0, "READY=1");
			continue;
		}
		log_info("signal %u: stopping", si.ssi_signo);
		evloop_stop(l);
	}
}

static int setup_signals(struct daemon *dm)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	/* Blocked before any thread starts, so every thread inherits the mask
	 * and only the signalfd sees them. */
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	dm->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (dm->sigfd < 0)
		return -1;
	return evloop_add_fd(dm->ctx.loop, dm->sigfd, EV_READ, on_signal, dm);
}

/*
 * The process that ran `mysteerd` waits here until the daemon says it runs
 * ("READY" on the pipe) or the pipe closes without it; it prints the errors
 * the daemon sent meanwhile and exits 0 or 1, so that a BPF or bind failure
 * is seen by whoever started it, not only in syslog.
 */
static void wait_ready(int fd)
{
	char buf[4096];
	size_t len = 0;
	ssize_t n;

	while (len < sizeof(buf) - 1 &&
	       ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0 || (n < 0 && errno == EINTR)))
		len += n > 0 ? (size_t)n : 0;
	buf[len] = 0;
	if (!strncmp(buf, "READY\n", 6))
		_exit(0);
	if (len)
		fputs(buf, stderr);
	else
		fputs("mysteerd: the daemon ended before it was running (see syslog)\n", stderr);
	_exit(1);
}

/* Detaches. In the daemon, *ready_fd is the pipe on which it says it runs. */
static int daemonize(int *ready_fd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0) {
		close(p[1]);
		wait_ready(p[0]);
	}
	close(p[0]);
	*ready_fd = p[1];
	if (setsid() < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0)
		_exit(0);
	if (chdir("/") < 0)
		return -1;
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
	return 0;
}

/*
 * Open files: relay pairs and 6450 clients take two descriptors each, so the
 * usual soft limit of 1024 is far too low. The soft limit goes to the hard
 * one, and the hard one up to NOFILE_WANT where the daemon may (root with
 * CAP_SYS_RESOURCE). What the relay may take of it is bounded (lookup.c).
 */
#define NOFILE_WANT 65536
static void raise_nofile(void)
{
	struct rlimit rl, want;

	if (getrlimit(RLIMIT_NOFILE, &rl)) {
		log_warn("getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
		return;
	}
	want = rl;
	if (want.rlim_max != RLIM_INFINITY && want.rlim_max < NOFILE_WANT) {
		want.rlim_max = NOFILE_WANT;
		want.rlim_cur = NOFILE_WANT;
		if (setrlimit(RLIMIT_NOFILE, &want) == 0) {
			log_info("open files limit %d", NOFILE_WANT);
			return;
		}
		want = rl;
	}
	want.rlim_cur = want.rlim_max;
	if (want.rlim_cur != rl.rlim_cur && setrlimit(RLIMIT_NOFILE, &want))
		log_warn("setrlimit(RLIMIT_NOFILE): %s", strerror(errno));
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		log_info("open files limit %llu%s", (unsigned long long)rl.rlim_cur,
		         rl.rlim_cur < 1024 ? " (low: relayed connections wait beyond what it "
		                              "leaves; raise it, e.g. LimitNOFILE=)"
		                            : "");
}

static int start_services(struct daemon *dm)
{
	char err[512] = "";
	for (size_t i = 0; i < NSERVICES; i++) {
		const struct service_ops *s = services[i];
		if (!s)
			continue;
		if (s->start && s->start(&dm->ctx, err, sizeof(err)) != 0) {
			log_error("%s: %s", s->name, err);
			return -1;
		}
		dm->started[dm->nstarted++] = s;
		log_info("%s started", s->name);
	}
	return 0;
}

static void stop_services(struct daemon *dm, bool keep)
{
	while (dm->nstarted) {
		const struct service_ops *s = dm->started[--dm->nstarted];
		if (s->stop)
			s->stop(&dm->ctx, keep);
	}
}

/* Backend ids, the writer and the demoted backends as an earlier daemon
 * left them (the pinned maps, the state file), before the first backends
 * are applied. */
static void restore_ids(struct daemon *dm)
{
	struct topo_prior_ids *p = calloc(1, sizeof(*p));
	const struct state_runtime *rt = &dm->ov.rt;

	if (!p) {
		log_error("out of memory reading the backend ids of the last run");
		return;
	}
	p->writer_id = -1;
	for (size_t i = 0; i < dm->nstarted; i++)
		if (dm->started[i]->prior_ids)
			dm->started[i]->prior_ids(p);
	for (size_t i = 0; i < rt->n; i++) {
		uint32_t id = rt->b[i].id;
		if (id >= TOPO_MAX_IDS || p->kept[id].name[0])
			continue;
		snprintf(p->kept[id].name, sizeof(p->kept[id].name), "%s", rt->b[i].name);
		snprintf(p->kept[id].host, sizeof(p->kept[id].host), "%s", rt->b[i].host);
		p->kept[id].port = rt->b[i].port;
	}
	controller_restore_runtime(dm->ctl, rt);
	controller_restore_ids(dm->ctl, p);
	free(p);
}

/* The pid file, when configured: written once the daemon runs. */
static int write_pid_file(const char *path)
{
	char line[32];
	int fd, n;

	if (!path[0])
		return 0;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	n = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
	if (fd < 0 || io_write_all(fd, line, (size_t)n) < 0) {
		log_error("pid_file %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return close(fd);
}

/* Tells whoever waits that the daemon runs: the parent of a detached start
 * (ready_fd) and systemd (Type=notify; sd_notify does nothing without
 * NOTIFY_SOCKET). */
static void say_ready(int *ready_fd)
{
	if (*ready_fd >= 0) {
		log_set_startup_fd(-1);
		if (io_write_all(*ready_fd, "READY\n", 6) < 0)
			log_warn("cannot tell the parent that the daemon runs: %s",
			         strerror(errno));
		close(*ready_fd);
		*ready_fd = -1;
	}
	sd_notify(0, "READY=1\nSTATUS=steering");
}

/* The controller's runtime state (writer, ids, demoted) into the state
 * file, with the operator's changes. */
static void persist(const struct state_runtime *rt, void *arg)
{
	struct daemon *dm = arg;
	char err[512];

	if (state_set_runtime(&dm->ov, rt) < 0) {
		log_error("state not saved: out of memory");
		return;
	}
	if (state_save(dm->ctx.cfg->state_file, &dm->ov, err, sizeof(err)) < 0)
		log_error("state not saved (the writer %s is not kept across a restart): %s",
		          rt->writer[0] ? rt->writer : "none", err);
}

static int run(struct daemon *dm, bool foreground)
{
	char err[512];
	const struct config *cfg = dm->ctx.cfg;
	int ready_fd = -1;

	if (!foreground) {
		if (daemonize(&ready_fd) < 0) {
			fprintf(stderr, "mysteerd: cannot daemonize: %s\n", strerror(errno));
			return 1;
		}
		log_set_syslog(1);
		log_set_startup_fd(ready_fd);
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	if (metrics_process_init((double)now.tv_sec + (double)now.tv_nsec / 1e9) < 0) {
		log_error("cannot register the daemon's metrics: out of memory");
		return 1;
	}
	dm->ctx.loop = evloop_new();
	dm->ctl = dm->ctx.loop ? controller_new(dm->ctx.loop) : NULL;
	if (!dm->ctl || evloop_set_wake(dm->ctx.loop, on_wake, dm) < 0 || setup_signals(dm) < 0) {
		log_error("cannot set up the event loop: %s", strerror(errno));
		return 1;
	}
	dm->ctx.controller = dm->ctl;
	dm->ctx.request_probe = request_probe;
	dm->ctx.admin_run = admin_run;
	controller_set_id_hooks(dm->ctl, &(struct controller_id_hooks){
	                                     .busy = id_busy, .reused = id_reused, .arg = dm});
	controller_set_persist(dm->ctl, persist, dm);

	struct admin_env env = {.d = &dm->ctx,
	                        .ctl = dm->ctl,
	                        .ov = &dm->ov,
	                        .services = services,
	                        .nservices = NSERVICES,
	                        .version = metrics_process_version(),
	                        .started_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000};
	dm->admin = admin_new(&env, err, sizeof(err));
	if (!dm->admin) {
		log_error("admin socket: %s", err);
		return 1;
	}
	int rc = 1;
	raise_nofile();
	if (start_services(dm) < 0)
		goto out;
	restore_ids(dm);
	if (admin_apply(dm->admin, err, sizeof(err)) < 0) {
		log_error("%s", err);
		goto out;
	}
	if (cfg->metrics_listen[0]) {
		dm->http = metrics_http_start(cfg->metrics_listen, dm->ctx.loop, daemon_ready, dm,
		                              err, sizeof(err));
		if (!dm->http) {
			log_error("%s", err);
			goto out;
		}
	}
	if (write_pid_file(cfg->pid_file) < 0)
		goto out;
	/* set up: from here on every thread runs as [mysteerd] user */
	if (privdrop(cfg, err, sizeof(err)) < 0) {
		log_error("%s", err);
		goto out;
	}
	log_info("mysteerd running: %zu backend(s), admin socket %s", cfg->nbackends,
	         cfg->admin_socket);
	say_ready(&ready_fd);
	rc = evloop_run(dm->ctx.loop) < 0 ? 1 : 0;
	sd_notify(0, "STOPPING=1");
	if (cfg->pid_file[0] && unlink(cfg->pid_file) < 0 && errno != ENOENT)
		log_warn("pid_file %s: %s", cfg->pid_file, strerror(errno));
out:
	metrics_http_stop(dm->http);
	dm->http = NULL;
	stop_services(dm, dm->ctx.cfg->keep_on_exit);
	controller_free(dm->ctl);
	dm->ctl = NULL;
	topo_reset();
	metrics_process_stop();
	return rc;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	bool foreground = false, check = false;
	int opt;
	char err[1024];
	static const struct option longopts[] = {{"check", no_argument, NULL, 'C'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};

	while ((opt = getopt_long(argc, argv, "c:fh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'C':
			check = true;
			break;
		case 'c':
			path = optarg;
			break;
		case 'f':
			foreground = true;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 2;
		}
	}
	if (!path || optind != argc) {
		usage();
		return 2;
	}

	/* Absolute, so that reload still finds it after daemonize's chdir("/"). */
	char abspath[PATH_MAX];
	if (realpath(path, abspath))
		path = abspath;

	struct daemon dm = {.sigfd = -1};
	struct config *cfg = config_load(path, err, sizeof(err));
	if (!cfg) {
		fprintf(stderr, "mysteerd: %s\n", err);
		return 2;
	}
	log_set_level((enum log_level)cfg->log_level);
	log_set_format((enum log_format)cfg->log_format);
	if (check) {
		int rc = mysql_library_init(0, NULL, NULL) ? 1 : daemon_check(cfg, stdout);
		mysql_library_end();
		config_free(cfg);
		return rc;
	}
	state_init(&dm.ov);
	if (state_load(cfg->state_file, &dm.ov, err, sizeof(err)) < 0) {
		fprintf(stderr, "mysteerd: %s\n", err);
		config_free(cfg);
		return 1;
	}
	if (mysql_library_init(0, NULL, NULL) != 0) {
		fprintf(stderr, "mysteerd: cannot initialise libmysqlclient\n");
		return 1;
	}
	dm.ctx.cfg = cfg;

	int rc = run(&dm, foreground);

	admin_free(dm.admin);
	if (dm.sigfd >= 0)
		close(dm.sigfd);
	evloop_free(dm.ctx.loop);
	config_free((struct config *)dm.ctx.cfg);
	state_free(&dm.ov);
	mysql_library_end();
	log_info("mysteerd stopped");
	return rc;
}
