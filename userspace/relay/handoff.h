/*
 * handoff.h - local handoff: finding a local server's listening socket by
 * address and port through /proc, and taking a copy of it from the server
 * with pidfd_getfd(2), so that sk_lookup can assign connections straight to
 * it (no proxy; the server sees the client's real address).
 *
 * The copy must be closed as soon as it is in the SOCKMAP: a copy kept open
 * would outlive the server, accept handshakes nobody answers and block the
 * server's restart on that port. The SOCKMAP entry leaves by itself when the
 * server closes its socket.
 */
#ifndef MYSTEER_HANDOFF_H
#define MYSTEER_HANDOFF_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Parses one line of /proc/net/tcp (v6 false) or tcp6. Returns 0 and fills
 * local (address and port), state (TCP_LISTEN is 0x0A) and inode; -1 for the
 * header or a malformed line. */
int handoff_parse_line(const char *line, bool v6, struct sockaddr_storage *local, int *state,
                       unsigned long *inode);

/* Loopback, or an address of an interface of this network namespace. */
bool handoff_addr_is_local(const struct sockaddr *sa);

/* The inode of a listening TCP socket of this network namespace that takes
 * connections for addr (bound to that address or to the wildcard). 0: none. */
unsigned long handoff_find_listener(const struct sockaddr *addr);

/* The process and fd number holding socket inode. 0, or -1 when not found. */
int handoff_find_owner(unsigned long inode, pid_t *pid, int *fd);

/* A copy of fd of process pid (pidfd_open + pidfd_getfd), or -1 with errno. */
int handoff_take(pid_t pid, int fd);

/* Finds and copies the listener for addr: the copy, or -1 (errno ENOENT when
 * no listener). The caller closes it right after use. */
int handoff_take_listener(const struct sockaddr *addr);

/* handoff_parse_line, and the socket's owner (the uid column). */
int handoff_parse_line_uid(const char *line, bool v6, struct sockaddr_storage *local, int *state,
                           unsigned long *inode, uid_t *uid);

/*
 * handoff_take_listener, only for a listener of user want (-1: anyone's):
 * a listener of another user on the port is never taken (errno EPERM when
 * only such a one was found; *other, if not NULL, says its user, else -1).
 * *uid (if not NULL) gets the owner of the listener taken.
 */
int handoff_take_listener_uid(const struct sockaddr *addr, long want, uid_t *uid, long *other);

/* SO_COOKIE of a socket, 0 on error. */
uint64_t handoff_sock_cookie(int fd);

#endif
