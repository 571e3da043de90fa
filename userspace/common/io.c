/*
 * io.c - see io.h.
 */
#include "common/io.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int io_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	struct stat st;
	bool sock = fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);

	while (n) {
		ssize_t w = sock ? send(fd, p, n, MSG_NOSIGNAL) : write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static enum io_step step_result(ssize_t r, size_t *done)
{
	*done = r > 0 ? (size_t)r : 0;
	if (r > 0)
		return IO_MOVED;
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return IO_AGAIN;
	if (r == 0)
		errno = 0;
	return IO_CLOSED;
}

enum io_step io_recv_step(int fd, void *buf, size_t n, size_t *done)
{
	ssize_t r;

	do
		r = recv(fd, buf, n, 0);
	while (r < 0 && errno == EINTR);
	return step_result(r, done);
}

enum io_step io_send_step(int fd, const void *buf, size_t n, size_t *done)
{
	ssize_t r;

	do
		r = send(fd, buf, n, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	return step_result(r, done);
}

int io_mkdir_p(const char *path, mode_t mode)
{
	char tmp[4096];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, mode) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, mode) && errno != EEXIST ? -1 : 0;
}
