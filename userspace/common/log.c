/*
 * log.c - see log.h. The level is the only state, kept in an atomic so that
 * `mysteerctl reload` can change it while proxy threads log.
 */
#include "common/log.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level = LOG_LVL_INFO;
static _Atomic int log_syslog;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_level(enum log_level lvl)
{
	atomic_store(&log_level, (int)lvl);
}

enum log_level log_get_level(void)
{
	return (enum log_level)atomic_load(&log_level);
}

void log_set_syslog(int to_syslog)
{
	if (to_syslog)
		openlog("mysteerd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	atomic_store(&log_syslog, to_syslog);
}

void log_vmsg(enum log_level lvl, const char *fmt, va_list ap)
{
	static const int syslog_prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
	char buf[1024];
	size_t n = 0;

	if ((int)lvl > atomic_load(&log_level))
		return;
	if (atomic_load(&log_syslog)) {
		vsyslog(syslog_prio[lvl], fmt, ap);
		return;
	}

	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, ".%03ld %s: ", ts.tv_nsec / 1000000,
	                      level_names[lvl]);
	int m = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	if (m < 0)
		return;
	n += (size_t)m;
	if (n > sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	/* One write per line keeps lines from different threads whole. */
	ssize_t w = write(STDERR_FILENO, buf, n);
	(void)w;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(lvl, fmt, ap);
	va_end(ap);
}
