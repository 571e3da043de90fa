/*
 * leftover.c - see leftover.h.
 *
 * A live daemon is told apart from what a dead one left by who holds the
 * link: a running mysteerd keeps an fd on every link it attached (fdinfo
 * shows its link_id), a dead one's links are held only by their pins or
 * by nothing at all but the attachment. Tools that list links (bpftool, the
 * scan below in another daemon) hold fds for a moment only, so a holder
 * counts when it is a mysteerd and still holds the link a little later.
 */
#define _GNU_SOURCE
#include "maps/leftover.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/log.h"
#include "mysteer_abi.h"

const char *const leftover_link_names[] = {
    MS_LINK_CONNECT4, MS_LINK_CONNECT6, MS_LINK_GETPEER4,
    MS_LINK_GETPEER6, MS_LINK_SOCKOPS,  MS_LINK_LOOKUP,
};
const size_t leftover_nlink_names = sizeof(leftover_link_names) / sizeof(leftover_link_names[0]);

const char *const leftover_map_names[] = {
    MS_MAP_SERVICES, MS_MAP_BACKENDS, MS_MAP_ROUTE_SEL, MS_MAP_ACTIVE_GEN,
    MS_MAP_COUNTERS, MS_MAP_SOCKMAP,  MS_MAP_SOCKMAP6,  MS_MAP_EVENTS,
    MS_MAP_SK_MARK,  MS_MAP_CFG,      MS_MAP_HANDOFF,
};
const size_t leftover_nmap_names = sizeof(leftover_map_names) / sizeof(leftover_map_names[0]);

/* The programs mysteer attaches with a link (bpf/), by their kernel name. */
static const char *const prog_names[] = {
    "ms_connect4",     "ms_connect6", "ms_getpeername4",
    "ms_getpeername6", "ms_sockops",  "ms_sk_lookup",
};

/* How often, and how far apart, a holder must be seen holding a link. */
#define HOLDER_CHECKS      3
#define HOLDER_INTERVAL_US 50000

static void read_comm(long pid, char *out, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(out, len, "?");
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

long leftover_lock_holder(const char *dir)
{
	char line[512], kind[32], mode[32], rw[32];
	unsigned maj, min;
	unsigned long ino;
	long pid, found = 0;
	struct stat st;
	FILE *f;

	if (stat(dir, &st))
		return 0;
	f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		/* "5: FLOCK  ADVISORY  WRITE 13607 00:2a:239104 0 EOF"; waiters
		 * ("5: -> FLOCK ...") do not hold it. */
		if (sscanf(line, "%*d: %31s %31s %31s %ld %x:%x:%lu", kind, mode, rw, &pid, &maj,
		           &min, &ino) == 7 &&
		    strcmp(kind, "FLOCK") == 0 && maj == major(st.st_dev) &&
		    min == minor(st.st_dev) && ino == st.st_ino)
			found = pid;
	}
	fclose(f);
	return found;
}

int leftover_cgroup_path(const char *want, char *out, size_t len)
{
	char line[8192], dev[256], mnt[4096], type[64];
	FILE *f;
	int rc = -1;

	if (strcmp(want, "auto") != 0) {
		snprintf(out, len, "%s", want);
		return 0;
	}
	f = fopen("/proc/mounts", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %4095s %63s", dev, mnt, type) == 3 &&
		    strcmp(type, "cgroup2") == 0) {
			snprintf(out, len, "%.4080s/mysteer", mnt);
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

uint64_t leftover_cgroup_id(const char *path)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = {.fh.handle_bytes = sizeof(uint64_t)};
	int mount_id;

	if (!path[0] || name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0))
		return 0;
	return h.id;
}

uint64_t leftover_netns_ino(void)
{
	struct stat st;

	return stat("/proc/self/ns/net", &st) ? 0 : (uint64_t)st.st_ino;
}

int leftover_lock(const char *dir, int *fd, char *err, size_t errlen)
{
	char comm[32];
	long pid;

	*fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0) {
		snprintf(err, errlen, "bpffs_dir %s: %s", dir, strerror(errno));
		return -1;
	}
	if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno != EWOULDBLOCK) {
		snprintf(err, errlen, "lock bpffs_dir %s: %s", dir, strerror(errno));
	} else if ((pid = leftover_lock_holder(dir)) > 0) {
		read_comm(pid, comm, sizeof(comm));
		snprintf(err, errlen,
		         "bpffs_dir %s is in use by pid %ld (%s): one daemon a bpffs_dir", dir, pid,
		         comm);
	} else {
		snprintf(err, errlen, "bpffs_dir %s is in use by another process", dir);
	}
	close(*fd);
	*fd = -1;
	return -1;
}

/* The link_id an fd of pid shows in its fdinfo, 0 when it is not a link. */
static uint32_t fd_link_id(long pid, const char *fd)
{
	char path[300], line[128];
	unsigned id = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/fd/%s", pid, fd);
	if (readlink(path, line, sizeof(line) - 1) != (ssize_t)strlen("anon_inode:bpf_link") ||
	    strncmp(line, "anon_inode:bpf_link", strlen("anon_inode:bpf_link")) != 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/fdinfo/%s", pid, fd);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "link_id: %u", &id) == 1)
			break;
	fclose(f);
	return id;
}

static bool pid_holds_link(long pid, uint32_t link_id)
{
	char path[64];
	struct dirent *e;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (e = readdir(d)))
		found = e->d_name[0] != '.' && fd_link_id(pid, e->d_name) == link_id;
	closedir(d);
	return found;
}

/* A mysteerd other than this process that holds link_id open, 0 when none. */
static long daemon_holding(uint32_t link_id)
{
	long self = getpid(), found = 0;
	struct dirent *e;
	char comm[32];
	DIR *proc = opendir("/proc");

	if (!proc)
		return 0;
	while (!found && (e = readdir(proc))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == self)
			continue;
		read_comm(pid, comm, sizeof(comm));
		if (strcmp(comm, "mysteerd") == 0 && pid_holds_link(pid, link_id))
			found = pid;
	}
	closedir(proc);
	return found;
}

/* A daemon that keeps holding the link over a few checks (see the top). */
static long live_holder(uint32_t link_id)
{
	long pid = daemon_holding(link_id);

	for (int i = 1; pid && i < HOLDER_CHECKS; i++) {
		usleep(HOLDER_INTERVAL_US);
		if (!pid_holds_link(pid, link_id))
			pid = 0;
	}
	return pid;
}

static bool is_mysteer_prog(uint32_t prog_id, char *name, size_t len)
{
	struct bpf_prog_info info;
	__u32 ilen = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(prog_id);
	bool ours = false;

	if (fd < 0)
		return false;
	memset(&info, 0, sizeof(info));
	if (!bpf_obj_get_info_by_fd(fd, &info, &ilen))
		for (size_t i = 0; i < sizeof(prog_names) / sizeof(prog_names[0]) && !ours; i++)
			ours = strcmp(info.name, prog_names[i]) == 0;
	close(fd);
	if (ours)
		snprintf(name, len, "%s", info.name);
	return ours;
}

static bool in_scope(const struct leftover_scope *s, const struct bpf_link_info *info)
{
	if (s->cgroup_id && info->type == BPF_LINK_TYPE_CGROUP)
		return info->cgroup.cgroup_id == s->cgroup_id;
	if (s->netns_ino && info->type == BPF_LINK_TYPE_NETNS)
		return info->netns.netns_ino == s->netns_ino &&
		       info->netns.attach_type == BPF_SK_LOOKUP;
	return false;
}

static bool kept(const struct leftover_scope *s, uint32_t id)
{
	for (size_t i = 0; i < s->nkeep; i++)
		if (s->keep[i] == id)
			return true;
	return false;
}

/* One link: detach it when it is mysteer's, in scope and not kept.
 * 1 detached, 0 left alone, -1 refused or failed (err). */
static int detach_one(const struct leftover_scope *s, uint32_t id, long *holder, char *err,
                      size_t errlen)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);
	char name[32];
	long pid;
	int fd = bpf_link_get_fd_by_id(id), rc = 0;

	if (fd < 0)
		return 0; /* gone meanwhile */
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || !in_scope(s, &info) || kept(s, id) ||
	    !is_mysteer_prog(info.prog_id, name, sizeof(name)))
		goto out;
	pid = live_holder(id);
	if (pid && holder)
		*holder = pid;
	if (pid && s->live == LEFTOVER_LIVE_SPARE)
		goto out;
	if (pid && s->live == LEFTOVER_LIVE_REFUSE) {
		snprintf(err, errlen,
		         "%s of mysteerd pid %ld is attached to this %s: one daemon a %s", name,
		         pid, info.type == BPF_LINK_TYPE_CGROUP ? "cgroup" : "network namespace",
		         info.type == BPF_LINK_TYPE_CGROUP ? "cgroup" : "network namespace");
		rc = -1;
		goto out;
	}
	if (bpf_link_detach(fd)) {
		snprintf(err, errlen, "detach link %u (%s): %s", id, name, strerror(errno));
		rc = -1;
		goto out;
	}
	log_warn("removed link %u (%s) that %s left on this %s", id, name,
	         pid ? "a running mysteerd" : "an earlier mysteerd",
	         info.type == BPF_LINK_TYPE_CGROUP ? "cgroup" : "network namespace");
	rc = 1;
out:
	close(fd);
	return rc;
}

int leftover_detach_links(const struct leftover_scope *s, long *holder, char *err, size_t errlen)
{
	uint32_t id = 0;
	int n = 0;

	if (holder)
		*holder = 0;
	if (!s->cgroup_id && !s->netns_ino)
		return 0;
	while (bpf_link_get_next_id(id, &id) == 0) {
		int rc = detach_one(s, id, holder, err, errlen);
		if (rc < 0)
			return -1;
		n += rc;
	}
	if (errno != ENOENT) {
		snprintf(err, errlen, "list links: %s", strerror(errno));
		return -1;
	}
	return n;
}

static int open_pinned_link(const char *dir, const char *name, struct bpf_link_info *info)
{
	char path[4200];
	__u32 len = sizeof(*info);
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -1;
	memset(info, 0, sizeof(*info));
	if (bpf_obj_get_info_by_fd(fd, info, &len)) {
		close(fd);
		return -1;
	}
	return fd;
}

uint32_t leftover_pinned_link_id(const char *dir, const char *name)
{
	struct bpf_link_info info;
	int fd = open_pinned_link(dir, name, &info);

	if (fd < 0)
		return 0;
	close(fd);
	return info.id;
}

int leftover_remove_pinned_link(const char *dir, const char *name, char *err, size_t errlen)
{
	char path[4200];
	struct bpf_link_info info;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (access(path, F_OK))
		return 0;
	/* Detach first: a running daemon's own fd would keep it attached. A
	 * link already detached (defunct) says ENOLINK, which is fine. */
	fd = open_pinned_link(dir, name, &info);
	if (fd >= 0) {
		if (bpf_link_detach(fd) && errno != ENOLINK)
			log_warn("detach %s: %s", path, strerror(errno));
		close(fd);
	}
	if (unlink(path) && errno != ENOENT) {
		snprintf(err, errlen, "unpin %s: %s", path, strerror(errno));
		return -1;
	}
	return 1;
}

int leftover_remove_pins(const char *dir, char *err, size_t errlen)
{
	char path[4200];
	int n = 0, rc = 0;

	for (size_t i = 0; i < leftover_nlink_names; i++) {
		int r = leftover_remove_pinned_link(dir, leftover_link_names[i], err, errlen);
		if (r < 0)
			rc = -1;
		else
			n += r;
	}
	for (size_t i = 0; i < leftover_nmap_names; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, leftover_map_names[i]);
		if (unlink(path) == 0)
			n++;
		else if (errno != ENOENT) {
			snprintf(err, errlen, "unpin %s: %s", path, strerror(errno));
			rc = -1;
		}
	}
	if (rmdir(dir) && errno != ENOENT && errno != ENOTEMPTY)
		log_debug("rmdir %s: %s", dir, strerror(errno));
	return rc ? -1 : n;
}
