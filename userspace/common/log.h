/*
 * log.h - one-line log messages, to stderr (foreground) or syslog (daemon).
 *
 * Every state or role change is one line; nothing secret is ever logged.
 * Thread-safe: each message is formatted into one buffer and written with a
 * single write(2).
 */
#ifndef MYSTEER_LOG_H
#define MYSTEER_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum log_level { LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

enum log_format { LOG_FMT_TEXT = 0, LOG_FMT_JSON };

void log_set_level(enum log_level lvl);
/* JSON: one object a line, {"ts":"...","level":"...","msg":"..."}, for log
 * shippers; the message is escaped as in text, then for JSON. */
void log_set_format(enum log_format fmt);
enum log_level log_get_level(void);
/* to_syslog: 0 = stderr with a timestamp, 1 = syslog(3). */
void log_set_syslog(int to_syslog);
/* While fd >= 0, errors are also written there as "mysteerd: MESSAGE" lines:
 * a detaching daemon's parent shows them, so a failure to start is not only
 * in syslog. -1 stops it. */
void log_set_startup_fd(int fd);

void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n bytes of in, as one log line shows them: control characters, DEL,
 * bytes that are not printable UTF-8 and C1 controls as \xNN, a backslash
 * as \\; cut (never in the middle of an escape) to fit cap with its NUL.
 * Returns the length written. */
size_t log_escape(const char *in, size_t n, char *out, size_t cap);
void log_vmsg(enum log_level lvl, const char *fmt, va_list ap);

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...)                                                                             \
	do {                                                                                       \
		if (log_get_level() >= LOG_LVL_DEBUG)                                              \
			log_msg(LOG_LVL_DEBUG, __VA_ARGS__);                                       \
	} while (0)

#endif
