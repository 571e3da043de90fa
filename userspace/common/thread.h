/*
 * thread.h - names for the daemon's threads, so that `top -H`, `ps -L`,
 * perf and /proc/PID/task/TID/comm tell a proxy worker from a relay thread
 * or a loader. A name that cannot be set costs nothing but the label: the
 * failure is logged at debug level and the thread runs on.
 */
#ifndef MYSTEER_THREAD_H
#define MYSTEER_THREAD_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"

/* The kernel keeps 15 characters; longer names are cut to fit. */
__attribute__((format(printf, 2, 3))) static inline void thread_name(pthread_t th, const char *fmt,
                                                                     ...)
{
	char name[16];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	rc = pthread_setname_np(th, name);
	if (rc != 0)
		log_debug("thread name %s: %s", name, strerror(rc));
}

#endif
