/*
 * peer_check.c - a libmysqlclient test client for the steering tests: makes
 * connections to HOST:PORT and reports where each landed (SELECT @@port) and
 * what getpeername() said, so a test can check connect steering with a real
 * MySQL client rather than with raw sockets.
 *
 *   peer_check count HOST PORT N [INTERVAL_MS]
 *       N connections one after the other; prints "port P N" per backend
 *       port, "errors N", "peer ADDR:PORT" (getpeername of the first one) and
 *       "error MSG" for the first failure. Exit 0 when none failed.
 *   peer_check hold HOST PORT FILE
 *       connects, prints "before P", waits until FILE exists, runs the query
 *       again on the same connection and prints "after P" or "after-error
 *       CODE MSG", then reconnects and prints "reconnect P".
 */
#include <arpa/inet.h>
#include <mysql.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_PORTS 16

static MYSQL *open_conn(const char *host, unsigned port)
{
	MYSQL *m = mysql_init(NULL);
	unsigned timeout = 5;

	if (!m)
		return NULL;
	mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &timeout);
	if (!mysql_real_connect(m, host, "app", "app", NULL, port, NULL, 0)) {
		fprintf(stdout, "error %u %s\n", mysql_errno(m), mysql_error(m));
		mysql_close(m);
		return NULL;
	}
	return m;
}

/* SELECT @@port on m: the port, or -1 (error printed with prefix). */
static long query_port(MYSQL *m, const char *prefix)
{
	MYSQL_RES *res;
	MYSQL_ROW row;
	long port = -1;

	if (mysql_query(m, "SELECT @@port")) {
		printf("%s %u %s\n", prefix, mysql_errno(m), mysql_error(m));
		return -1;
	}
	res = mysql_store_result(m);
	if (res && (row = mysql_fetch_row(res)) && row[0])
		port = strtol(row[0], NULL, 10);
	mysql_free_result(res);
	return port;
}

static void print_peer(MYSQL *m)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char a[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	int fd = (int)mysql_get_socket(m);

	if (getpeername(fd, (struct sockaddr *)&ss, &sl))
		return;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &s->sin_addr, a, sizeof(a));
		port = ntohs(s->sin_port);
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &s->sin6_addr, a, sizeof(a));
		port = ntohs(s->sin6_port);
	}
	printf("peer %s:%u\n", a, port);
}

static int do_count(const char *host, unsigned port, long n, long interval_ms)
{
	long ports[MAX_PORTS] = {0}, counts[MAX_PORTS] = {0}, errors = 0;
	int nports = 0;

	for (long i = 0; i < n; i++) {
		MYSQL *m = open_conn(host, port);
		long p = m ? query_port(m, "error") : -1;
		if (m && i == 0)
			print_peer(m);
		if (m)
			mysql_close(m);
		if (p < 0) {
			errors++;
		} else {
			int j;
			for (j = 0; j < nports && ports[j] != p; j++)
				;
			if (j == nports && nports < MAX_PORTS)
				ports[nports++] = p;
			if (j < MAX_PORTS)
				counts[j]++;
		}
		if (interval_ms > 0)
			usleep((useconds_t)interval_ms * 1000);
	}
	for (int j = 0; j < nports; j++)
		printf("port %ld %ld\n", ports[j], counts[j]);
	printf("errors %ld\n", errors);
	return errors ? 1 : 0;
}

static int do_hold(const char *host, unsigned port, const char *file)
{
	MYSQL *m = open_conn(host, port);
	long p;

	if (!m)
		return 1;
	printf("before %ld\n", query_port(m, "before-error"));
	fflush(stdout);
	while (access(file, F_OK) != 0)
		usleep(20000);
	p = query_port(m, "after-error");
	if (p >= 0)
		printf("after %ld\n", p);
	mysql_close(m);
	m = open_conn(host, port);
	if (!m)
		return 1;
	printf("reconnect %ld\n", query_port(m, "reconnect-error"));
	mysql_close(m);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (mysql_library_init(0, NULL, NULL))
		return 2;
	if (argc >= 5 && strcmp(argv[1], "count") == 0)
		rc = do_count(argv[2], (unsigned)atoi(argv[3]), atol(argv[4]),
		              argc > 5 ? atol(argv[5]) : 0);
	else if (argc == 5 && strcmp(argv[1], "hold") == 0)
		rc = do_hold(argv[2], (unsigned)atoi(argv[3]), argv[4]);
	else
		fprintf(stderr, "usage: peer_check count HOST PORT N [INTERVAL_MS] | "
		                "hold HOST PORT FILE\n");
	mysql_library_end();
	return rc;
}
