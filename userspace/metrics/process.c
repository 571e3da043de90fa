/*
 * process.c - see process.h.
 */
#include "metrics/process.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/metrics.h"
#include "mysteer_version.h"

static struct {
	struct metric_family *cpu, *rss, *vsz, *fds, *max_fds, *start;
	double start_s;
} M;

/* Resident and virtual size from /proc/self/statm (pages). */
static void memory(double *rss, double *vsz)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	long page = sysconf(_SC_PAGESIZE);

	*rss = *vsz = -1;
	if (!f)
		return;
	if (fscanf(f, "%lu %lu", &size, &resident) == 2 && page > 0) {
		*rss = (double)resident * (double)page;
		*vsz = (double)size * (double)page;
	}
	fclose(f);
}

static double open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	double n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own */
}

static void collect(struct metrics *m, void *arg)
{
	struct rusage ru;
	struct rlimit rl;
	double rss, vsz, fds = open_fds();

	if (getrusage(RUSAGE_SELF, &ru) == 0)
		metric_set(metric_series(M.cpu, NULL),
		           (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
		               ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6);
	memory(&rss, &vsz);
	if (rss >= 0) {
		metric_set(metric_series(M.rss, NULL), rss);
		metric_set(metric_series(M.vsz, NULL), vsz);
	}
	if (fds >= 0)
		metric_set(metric_series(M.fds, NULL), fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		metric_set(metric_series(M.max_fds, NULL),
		           rl.rlim_cur == RLIM_INFINITY ? -1 : (double)rl.rlim_cur);
	metric_set(metric_series(M.start, NULL), M.start_s);
}

int metrics_process_init(double start_realtime_s)
{
	static const char *const none[] = {NULL};
	static const char *const info[] = {"version", NULL};
	const unsigned C = METRIC_COLLECTED;

	M.start_s = start_realtime_s;
	M.cpu = metrics_counter("process_cpu_seconds_total",
	                        "CPU time of mysteerd (user and system), in seconds", none, C);
	M.rss =
	    metrics_gauge("process_resident_memory_bytes", "Resident memory of mysteerd", none, C);
	M.vsz =
	    metrics_gauge("process_virtual_memory_bytes", "Virtual memory of mysteerd", none, C);
	M.fds = metrics_gauge("process_open_fds", "Open file descriptors of mysteerd", none, C);
	M.max_fds = metrics_gauge("process_max_fds", "The open file limit of mysteerd", none, C);
	M.start = metrics_gauge("process_start_time_seconds",
	                        "When mysteerd started, in seconds since the epoch", none, C);
	struct metric_family *b =
	    metrics_gauge("mysteer_build_info", "Always 1; the version of mysteerd", info, 0);
	metric_set(metric_at(b, MYSTEER_VERSION), 1);
	return metrics_add_collector(metrics_global(), collect, NULL);
}

const char *metrics_process_version(void)
{
	return MYSTEER_VERSION;
}

void metrics_process_stop(void)
{
	metrics_remove_collector(metrics_global(), collect, NULL);
}
