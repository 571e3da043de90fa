/*
 * handoff.c - see handoff.h. /proc/net/tcp{,6} belong to the reading
 * process's network namespace, so the sockets found are the ones sk_lookup of
 * this namespace can be given.
 */
#define _GNU_SOURCE
#include "relay/handoff.h"

#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#define TCP_LISTEN_STATE 0x0A

static int hexword(const char *s, uint32_t *out)
{
	char buf[9];
	char *end;

	memcpy(buf, s, 8);
	buf[8] = 0;
	unsigned long v = strtoul(buf, &end, 16);
	if (*end)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int handoff_parse_line(const char *line, bool v6, struct sockaddr_storage *local, int *state,
                       unsigned long *inode)
{
	uid_t uid;

	return handoff_parse_line_uid(line, v6, local, state, inode, &uid);
}

int handoff_parse_line_uid(const char *line, bool v6, struct sockaddr_storage *local, int *state,
                           unsigned long *inode, uid_t *uid)
{
	char addr[80];
	unsigned port, st, u;
	unsigned long ino;

	/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
	if (sscanf(line, " %*[0-9]: %64[0-9A-Fa-f]:%x %*s %x %*s %*s %*s %u %*u %lu", addr, &port,
	           &st, &u, &ino) != 5)
		return -1;
	*uid = (uid_t)u;
	size_t want = v6 ? 32 : 8;
	if (strlen(addr) != want || port > 65535)
		return -1;
	memset(local, 0, sizeof(*local));
	/* The kernel prints each 32-bit word as a host-order number, so
	 * copying the words back in host order restores the network bytes. */
	if (v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)local;
		for (int i = 0; i < 4; i++) {
			uint32_t w;
			if (hexword(addr + 8 * i, &w))
				return -1;
			memcpy(&s6->sin6_addr.s6_addr[4 * i], &w, 4);
		}
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)local;
		uint32_t w;
		if (hexword(addr, &w))
			return -1;
		memcpy(&s4->sin_addr, &w, 4);
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
	}
	*state = (int)st;
	*inode = ino;
	return 0;
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
	               &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

static uint16_t port_of(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
}

bool handoff_addr_is_local(const struct sockaddr *sa)
{
	struct ifaddrs *ifs, *i;
	bool found = false;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
		if ((ntohl(s4->sin_addr.s_addr) >> 24) == 127)
			return true;
	} else if (sa->sa_family == AF_INET6) {
		if (IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr))
			return true;
	} else {
		return false;
	}
	if (getifaddrs(&ifs))
		return false;
	for (i = ifs; i && !found; i = i->ifa_next)
		found = i->ifa_addr && same_ip(i->ifa_addr, sa);
	freeifaddrs(ifs);
	return found;
}

/* Does a socket bound to local take connections for addr? */
static bool serves(const struct sockaddr_storage *local, const struct sockaddr *addr)
{
	const struct sockaddr *l = (const struct sockaddr *)local;

	if (port_of(l) != port_of(addr))
		return false;
	if (l->sa_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)l)->sin6_addr;
		/* [::] also takes IPv4 unless IPV6_V6ONLY, which /proc does not
		 * show; a v6only socket would only be picked wrongly for an IPv4
		 * backend when no IPv4 listener exists at all. */
		if (IN6_IS_ADDR_UNSPECIFIED(a6))
			return true;
	} else if (((const struct sockaddr_in *)l)->sin_addr.s_addr == htonl(INADDR_ANY)) {
		return addr->sa_family == AF_INET;
	}
	return same_ip(l, addr);
}

/* The first listener for addr of user want (-1: anyone); *other: the owner
 * of one of another user seen meanwhile (-1: none). */
static unsigned long scan_table(const char *path, bool v6, const struct sockaddr *addr,
                                bool exact_only, long want, long *other)
{
	FILE *f = fopen(path, "r");
	char line[512];
	unsigned long found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		struct sockaddr_storage local;
		int st;
		unsigned long ino;
		uid_t uid;
		if (handoff_parse_line_uid(line, v6, &local, &st, &ino, &uid) ||
		    st != TCP_LISTEN_STATE || !ino)
			continue;
		if (want >= 0 && (long)uid != want) {
			bool serving = exact_only
			                   ? (port_of((struct sockaddr *)&local) == port_of(addr) &&
			                      same_ip((struct sockaddr *)&local, addr))
			                   : serves(&local, addr);
			if (serving)
				*other = (long)uid;
			continue;
		}
		if (exact_only ? (port_of((struct sockaddr *)&local) == port_of(addr) &&
		                  same_ip((struct sockaddr *)&local, addr))
		               : serves(&local, addr))
			found = ino;
	}
	fclose(f);
	return found;
}

static unsigned long find_listener_of(const struct sockaddr *addr, long want, long *other)
{
	bool v6 = addr->sa_family == AF_INET6;
	const char *own = v6 ? "/proc/net/tcp6" : "/proc/net/tcp";
	unsigned long ino;

	*other = -1;
	/* A socket bound to the exact address wins over a wildcard one, as in
	 * the kernel's own lookup. */
	ino = scan_table(own, v6, addr, true, want, other);
	if (!ino)
		ino = scan_table(own, v6, addr, false, want, other);
	if (!ino && !v6)
		ino = scan_table("/proc/net/tcp6", true, addr, false, want, other);
	return ino;
}

unsigned long handoff_find_listener(const struct sockaddr *addr)
{
	long other;

	return find_listener_of(addr, -1, &other);
}

static int scan_fds(pid_t pid, const char *want)
{
	char dir[64], path[400], link[64];
	DIR *d;
	struct dirent *e;
	int found = -1;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while (found < 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		ssize_t n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (!strcmp(link, want))
			found = atoi(e->d_name);
	}
	closedir(d);
	return found;
}

int handoff_find_owner(unsigned long inode, pid_t *pid, int *fd)
{
	char want[64];
	DIR *d = opendir("/proc");
	struct dirent *e;
	int rc = -1;

	if (!d)
		return -1;
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	while (rc < 0 && (e = readdir(d))) {
		char *end;
		long p = strtol(e->d_name, &end, 10);
		if (*end || p <= 0)
			continue;
		int f = scan_fds((pid_t)p, want);
		if (f >= 0) {
			*pid = (pid_t)p;
			*fd = f;
			rc = 0;
		}
	}
	closedir(d);
	return rc;
}

int handoff_take(pid_t pid, int fd)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (pidfd < 0)
		return -1;
	int copy = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	int e = errno;
	close(pidfd);
	errno = e;
	return copy;
}

uint64_t handoff_sock_cookie(int fd)
{
	uint64_t c = 0;
	socklen_t len = sizeof(c);

	if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c, &len))
		return 0;
	return c;
}

int handoff_take_listener(const struct sockaddr *addr)
{
	return handoff_take_listener_uid(addr, -1, NULL, NULL);
}

int handoff_take_listener_uid(const struct sockaddr *addr, long want, uid_t *uid, long *other)
{
	long o;
	unsigned long ino = find_listener_of(addr, want, &o);
	pid_t pid;
	int fd;

	if (other)
		*other = o;
	if (!ino || handoff_find_owner(ino, &pid, &fd)) {
		errno = !ino && o >= 0 ? EPERM : ENOENT;
		return -1;
	}
	int copy = handoff_take(pid, fd);
	if (copy < 0)
		return -1;
	/* The fd number may have been reused between the scan and the copy:
	 * make sure it is still a listener of the right port. */
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int acc = 0;
	socklen_t alen = sizeof(acc);
	if (getsockname(copy, (struct sockaddr *)&ss, &len) ||
	    getsockopt(copy, SOL_SOCKET, SO_ACCEPTCONN, &acc, &alen) || !acc ||
	    port_of((struct sockaddr *)&ss) != port_of(addr)) {
		close(copy);
		errno = ENOENT;
		return -1;
	}
	if (uid) {
		/* The socket's owner, as /proc/net/tcp shows it (sock_i_uid). */
		struct stat st;
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
		*uid = stat(path, &st) == 0 ? st.st_uid : (uid_t)want;
		if (want >= 0 && (long)*uid != want) {
			close(copy);
			errno = EPERM;
			return -1;
		}
	}
	return copy;
}
