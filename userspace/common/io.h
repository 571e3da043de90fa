/*
 * io.h - the few blocking file and socket helpers every part needs once:
 * write a whole buffer (the state file, the CLI's request) and make a
 * directory path. Kept here so that each is written, and fixed, once.
 */
#ifndef MYSTEER_IO_H
#define MYSTEER_IO_H

#include <stddef.h>
#include <sys/types.h>

/* Writes all n bytes to fd, retrying on EINTR and short writes. A socket
 * gets send(MSG_NOSIGNAL), so a closed peer is an error, not SIGPIPE.
 * Returns 0, or -1 with errno set. */
int io_write_all(int fd, const void *buf, size_t n);

/* mkdir -p: makes path and its missing parents with mode. Returns 0 (also
 * when it exists), or -1 with errno set. */
int io_mkdir_p(const char *path, mode_t mode);

#endif
