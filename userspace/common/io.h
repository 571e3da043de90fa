/*
 * io.h - the few blocking file and socket helpers every part needs once:
 * write a whole buffer (the state file, the CLI's request) and make a
 * directory path; and one step of a non-blocking socket, whose three
 * outcomes every event loop handler tells apart. Kept here so that each is
 * written, and fixed, once.
 */
#ifndef MYSTEER_IO_H
#define MYSTEER_IO_H

#include <stddef.h>
#include <sys/types.h>

/* Writes all n bytes to fd, retrying on EINTR and short writes. A socket
 * gets send(MSG_NOSIGNAL), so a closed peer is an error, not SIGPIPE.
 * Returns 0, or -1 with errno set. */
int io_write_all(int fd, const void *buf, size_t n);

/* What one non-blocking recv or send did: moved *done > 0 bytes, would
 * block (wait for the next event), or the peer is gone (end of stream or an
 * error other than EINTR, which is retried; errno says which, 0 at the end). */
enum io_step { IO_MOVED, IO_AGAIN, IO_CLOSED };
enum io_step io_recv_step(int fd, void *buf, size_t n, size_t *done);
enum io_step io_send_step(int fd, const void *buf, size_t n, size_t *done);

/* mkdir -p: makes path and its missing parents with mode. Returns 0 (also
 * when it exists), or -1 with errno set. */
int io_mkdir_p(const char *path, mode_t mode);

#endif
