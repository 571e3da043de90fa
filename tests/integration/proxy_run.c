/*
 * proxy_run.c - runs the 6450 proxy engine without mysteerd, for the proxy's
 * integration tests: loads a config, publishes a topology given on the
 * command line (no probes: the test says who is the writer and the readers),
 * and serves until SIGTERM or SIGINT. SIGHUP re-reads the topology from the
 * file given with -t (one line "writer=NAME readers=NAME,NAME").
 *
 *   proxy_run -c CONFIG -w WRITER [-r READER,READER] [-t FILE]
 */
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/topology.h"
#include "config/config.h"
#include "proxy/proxy.h"

static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

static int publish(const struct config *cfg, const char *writer, const char *readers)
{
	struct topology *t = topo_alloc(cfg->nbackends, cfg->nroutes);

	if (!t)
		return -1;
	for (size_t i = 0; i < cfg->nbackends; i++) {
		const struct config_backend *cb = &cfg->backends[i];
		struct topo_backend *b = &t->backends[i];
		struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
		struct addrinfo *ai;
		char port[8];

		b->id = (uint32_t)i;
		snprintf(b->name, sizeof(b->name), "%s", cb->name);
		snprintf(b->host, sizeof(b->host), "%s", cb->host);
		b->port = cb->port;
		b->priority = cb->priority;
		b->weight = cb->weight;
		b->health = HEALTH_UP;
		b->admin = ADMIN_ENABLED;
		snprintf(port, sizeof(port), "%u", cb->port);
		if (getaddrinfo(cb->host, port, &hints, &ai) == 0) {
			memcpy(&b->addr, ai->ai_addr, ai->ai_addrlen);
			b->addrlen = ai->ai_addrlen;
			freeaddrinfo(ai);
		}
		if (writer && !strcmp(writer, cb->name)) {
			b->role = ROLE_WRITER;
			t->writer = (int)i;
		} else if (in_list(readers, cb->name)) {
			b->role = ROLE_READER;
			b->read_only = true;
		}
	}
	for (size_t i = 0; i < cfg->nroutes; i++) {
		snprintf(t->routes[i].name, sizeof(t->routes[i].name), "%s", cfg->routes[i].name);
		t->routes[i].port = cfg->routes[i].port;
		t->routes[i].role = cfg->routes[i].role;
	}
	topo_publish(t);
	log_info("proxy_run: writer=%s readers=%s", writer ? writer : "-", readers ? readers : "-");
	return 0;
}

static void republish(const struct config *cfg, const char *file)
{
	char line[512], *w = NULL, *r = NULL;
	FILE *f = fopen(file, "r");

	if (!f || !fgets(line, sizeof(line), f)) {
		log_error("proxy_run: cannot read %s", file);
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	for (char *tok = strtok(line, " "); tok; tok = strtok(NULL, " ")) {
		if (!strncmp(tok, "writer=", 7))
			w = tok + 7;
		else if (!strncmp(tok, "readers=", 8))
			r = tok + 8;
	}
	publish(cfg, w && *w ? w : NULL, r);
}

int main(int argc, char **argv)
{
	const char *conf = NULL, *writer = NULL, *readers = NULL, *tfile = NULL;
	char err[512];
	struct config *cfg;
	struct proxy_engine *e;
	sigset_t set;
	int opt, sig;
	uint16_t port = 0;

	while ((opt = getopt(argc, argv, "c:w:r:t:")) != -1) {
		switch (opt) {
		case 'c':
			conf = optarg;
			break;
		case 'w':
			writer = optarg;
			break;
		case 'r':
			readers = optarg;
			break;
		case 't':
			tfile = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!conf) {
		fprintf(stderr, "usage: proxy_run -c CONFIG -w WRITER [-r R1,R2] [-t FILE]\n");
		return 2;
	}
	cfg = config_load(conf, err, sizeof(err));
	if (!cfg) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	log_set_level((enum log_level)cfg->log_level);
	for (size_t i = 0; i < cfg->nroutes; i++)
		if (cfg->routes[i].role == ROUTE_SPLIT)
			port = cfg->routes[i].port;
	if (!port || publish(cfg, writer, readers) < 0) {
		fprintf(stderr, "proxy_run: no split route, or out of memory\n");
		return 1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	e = proxy_engine_start(cfg, port, err, sizeof(err));
	if (!e) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	while (sigwait(&set, &sig) == 0 && sig == SIGHUP)
		if (tfile)
			republish(cfg, tfile);
	proxy_engine_stop(e);
	topo_reset();
	config_free(cfg);
	return 0;
}
