/*
 * process.h - the daemon's own figures in the metrics registry: build info,
 * start time, CPU seconds, resident memory and open files (read from /proc
 * at each render), under the names Prometheus's client libraries use for a
 * process (process_*), so stock dashboards and alerts find them.
 */
#ifndef MYSTEER_METRICS_PROCESS_H
#define MYSTEER_METRICS_PROCESS_H

/* Registers the figures and their collector; start_realtime_s is when the
 * daemon started (seconds since the epoch). Returns 0, or -1 on no memory. */
int metrics_process_init(double start_realtime_s);
void metrics_process_stop(void);
/* The version built (`git describe`), as mysteer_build_info shows it. */
const char *metrics_process_version(void);

#endif
