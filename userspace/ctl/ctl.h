/*
 * ctl.h - mysteerctl, the control CLI: argument parsing, the admin socket
 * client (protocol in admin_proto.h) and the status table.
 *
 * Split from main() so that the parsing and the printing are unit-tested
 * without a daemon (tests/unit/test_ctl.c).
 */
#ifndef MYSTEER_CTL_H
#define MYSTEER_CTL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/topology.h"

enum ctl_cmd {
	CTL_NONE = 0,
	CTL_HELP,
	CTL_STATUS,
	CTL_ADD,
	CTL_REMOVE,
	CTL_SET,
	CTL_DRAIN,
	CTL_DISABLE,
	CTL_ENABLE,
	CTL_RELOAD,
	CTL_RESET,
	CTL_MAPS,
	CTL_EXEC,
	CTL_DETACH,
	CTL_TOP,
};

struct ctl_request {
	enum ctl_cmd cmd;
	bool json;
	const char *socket;       /* --socket PATH; NULL: not given */
	const char *config;       /* -c/--config FILE; NULL: not given */
	char name[TOPO_NAME_MAX]; /* "" when the command takes none (reset: all) */
	char host[TOPO_HOST_MAX]; /* add: without brackets */
	uint16_t port;
	int priority, weight; /* -1: not given */
	char **exec_argv;     /* exec: NULL-terminated, points into argv */
};

/* ctl_parse_args() results, and mysteerctl's exit codes for them. */
#define CTL_PARSE_OK        0
#define CTL_PARSE_USAGE     -1 /* wrong shape of the command line: exit 2 + usage */
#define CTL_PARSE_BAD_VALUE -2 /* a value that cannot be right: exit 1, one line */

#define CTL_EXIT_OK     0
#define CTL_EXIT_FAILED 1
#define CTL_EXIT_USAGE  2

extern const char ctl_usage[];

int ctl_parse_args(int argc, char **argv, struct ctl_request *req, char *err, size_t errlen);

/* HOST:PORT, [IPV6]:PORT. 0, or -1 when malformed. */
int ctl_parse_hostport(const char *s, char *host, size_t hostlen, uint16_t *port);

/* The socket to use: --socket, else admin_socket of -c FILE, else
 * $MYSTEER_ADMIN_SOCKET, else the default. -1 with err when -c FILE fails. */
int ctl_socket_path(const struct ctl_request *req, char *out, size_t outlen, char *err,
                    size_t errlen);

/* The JSON request of a daemon command (not maps/exec/help). */
json_object *ctl_build_request(const struct ctl_request *req);

/* One request/reply exchange. 0 with *reply (caller puts it), or -1 with a
 * one-line reason ("daemon not running (PATH: ...)"). */
/* `mysteerctl top`: the status redrawn every interval_ms with rates, until
 * "q" or SIGINT. Returns a CTL_EXIT_* code. */
int ctl_top(const char *socket_path, int interval_ms, FILE *out);

int ctl_call(const char *socket_path, json_object *request, json_object **reply, char *err,
             size_t errlen);

/* The readable status table; now_ms (CLOCK_REALTIME) for probe ages. */
void ctl_print_status(json_object *status, FILE *out, int64_t now_ms);

int ctl_main(int argc, char **argv);

#endif
