/*
 * privdrop.c - see privdrop.h.
 *
 * Credentials and capabilities are per thread in Linux, and by the time the
 * setup is done the daemon runs threads (proxy workers, relay, quiesce,
 * routine loader). glibc's setresuid() changes the uid of every thread, but
 * capset() and PR_SET_NO_NEW_PRIVS act on the calling thread alone. So every
 * thread makes the whole change itself, with raw system calls (what libcap's
 * psx does): the main thread directly, the others in a signal handler, and
 * then /proc/self/task/N/status of each thread is checked. A thread that did
 * not take it (one started meanwhile) is asked again; if any still runs with
 * more, the daemon stops rather than run half dropped.
 */
#define _GNU_SOURCE
#include "daemon/privdrop.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif

#define MAX_GROUPS 64

/* What every thread takes: set before the first signal, read-only after. */
static struct {
	uid_t uid;
	gid_t gid;
	gid_t groups[MAX_GROUPS];
	size_t ngroups;
	uint64_t caps;
	atomic_int done, failed;
} plan;

/* Async-signal-safe: raw system calls only. 0 or an errno. */
static int apply_self(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2] = {{0}};

	d[0].effective = d[0].permitted = (uint32_t)plan.caps;
	d[1].effective = d[1].permitted = (uint32_t)(plan.caps >> 32);
	/* keep the permitted set across the uid change, then cut it down */
	if (syscall(SYS_prctl, PR_SET_KEEPCAPS, 1L, 0L, 0L, 0L) != 0 ||
	    syscall(SYS_setgroups, plan.ngroups, plan.groups) != 0 ||
	    syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid) != 0 ||
	    syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0 ||
	    syscall(SYS_capset, &h, d) != 0 ||
	    syscall(SYS_prctl, PR_SET_KEEPCAPS, 0L, 0L, 0L, 0L) != 0 ||
	    syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0)
		return errno;
	return 0;
}

static void on_signal(int sig)
{
	int saved = errno;

	(void)sig;
	if (apply_self())
		atomic_fetch_add(&plan.failed, 1);
	atomic_fetch_add(&plan.done, 1);
	errno = saved;
}

/* Does thread tid run as the plan says? */
static bool thread_done(pid_t tid)
{
	char path[64], line[256];
	unsigned long long cap = ~0ull;
	unsigned uid[4] = {0}, nnp = 0;
	bool got_uid = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT; /* it ended */
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %u %u %u %u", &uid[0], &uid[1], &uid[2], &uid[3]) == 4)
			got_uid = true;
		sscanf(line, "CapEff: %llx", &cap);
		sscanf(line, "NoNewPrivs: %u", &nnp);
	}
	fclose(f);
	return got_uid && uid[0] == plan.uid && uid[1] == plan.uid && uid[2] == plan.uid &&
	       uid[3] == plan.uid && cap == plan.caps && nnp == 1;
}

/* Signals each thread that has not dropped yet; returns how many were left
 * to do (0: all done), or -1 when /proc cannot be read. */
static int round_of(int sig, pid_t self)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int left = 0, sent = 0;

	if (!d)
		return -1;
	atomic_store(&plan.done, 0);
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);

		if (tid <= 0 || tid == self || thread_done(tid))
			continue;
		left++;
		if (syscall(SYS_tgkill, getpid(), tid, sig) == 0)
			sent++;
	}
	closedir(d);
	/* wait for the handlers (each is a handful of system calls) */
	for (int i = 0; i < 2000 && atomic_load(&plan.done) < sent; i++)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	return left;
}

static uid_t chown_uid;
static gid_t chown_gid;

static int chown_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	if (lchown(path, chown_uid, chown_gid) != 0)
		log_warn("user: chown %s: %s", path, strerror(errno));
	return 0;
}

uint64_t privdrop_caps(const struct config *cfg)
{
	uint64_t caps = (1ull << CAP_BPF) | (1ull << CAP_NET_ADMIN);

	/* the handoff finds a local server's listener in /proc/PID/fd (a
	 * directory only its owner may list) and copies it with pidfd_getfd */
	if (cfg->lookup && cfg->local_handoff)
		caps |= (1ull << CAP_SYS_PTRACE) | (1ull << CAP_DAC_READ_SEARCH);
	return caps;
}

int privdrop(const struct config *cfg, char *err, size_t errlen)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	int ng = MAX_GROUPS, rc, sig = SIGRTMIN + 4;
	struct sigaction sa = {.sa_handler = on_signal}, old;
	pid_t self = (pid_t)syscall(SYS_gettid);

	if (!cfg->user[0])
		return 0;
	rc = getpwnam_r(cfg->user, &pw, buf, sizeof(buf), &res);
	if (rc || !res) {
		snprintf(err, errlen, "user: no user \"%s\"%s%s", cfg->user, rc ? ": " : "",
		         rc ? strerror(rc) : "");
		return -1;
	}
	plan.uid = pw.pw_uid;
	plan.gid = pw.pw_gid;
	if (getgrouplist(pw.pw_name, pw.pw_gid, plan.groups, &ng) < 0) {
		snprintf(err, errlen, "user: %s is in more than %d groups", cfg->user, MAX_GROUPS);
		return -1;
	}
	plan.ngroups = (size_t)ng;
	plan.caps = privdrop_caps(cfg);
	atomic_store(&plan.failed, 0);

	/* What the daemon changes from now on: its pins (unpinned at exit,
	 * made at reload), the state file. */
	chown_uid = plan.uid;
	chown_gid = plan.gid;
	if (nftw(cfg->bpffs_dir, chown_one, 16, FTW_PHYS) != 0 && errno != ENOENT)
		log_warn("user: chown %s: %s", cfg->bpffs_dir, strerror(errno));
	if (lchown(cfg->state_file, plan.uid, plan.gid) != 0 && errno != ENOENT)
		log_warn("user: chown %s: %s", cfg->state_file, strerror(errno));

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(sig, &sa, &old) != 0) {
		snprintf(err, errlen, "user: sigaction: %s", strerror(errno));
		return -1;
	}
	rc = 1;
	for (int i = 0; i < 5 && rc > 0; i++)
		rc = round_of(sig, self);
	if (rc == 0 && atomic_load(&plan.failed) == 0) {
		int e = apply_self();

		if (e) {
			snprintf(err, errlen, "user: dropping to %s: %s", cfg->user, strerror(e));
			return -1;
		}
		rc = thread_done(self) ? round_of(sig, self) : 1;
	}
	sigaction(sig, &old, NULL);
	if (rc != 0 || atomic_load(&plan.failed)) {
		snprintf(err, errlen, "user: a thread kept its privileges (dropping to %s)",
		         cfg->user);
		return -1;
	}
	log_info("running as %s (uid %u): capabilities CAP_BPF, CAP_NET_ADMIN%s; no new "
	         "privileges",
	         cfg->user, (unsigned)plan.uid,
	         (plan.caps >> CAP_SYS_PTRACE) & 1 ? ", CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH" : "");
	return 0;
}
