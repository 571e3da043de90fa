/*
 * log.c - see log.h. The level is the only state, kept in an atomic so that
 * `mysteerctl reload` can change it while proxy threads log. Messages carry
 * what clients send (user names, schema names, server messages about
 * them): each is escaped (log_escape) so that no client can end a line or
 * send a terminal escape sequence through the log.
 */
#include "common/log.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level = LOG_LVL_INFO;
static _Atomic int log_syslog;
static _Atomic int log_startup_fd = -1;
static _Atomic int log_format = LOG_FMT_TEXT;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_level(enum log_level lvl)
{
	atomic_store(&log_level, (int)lvl);
}

enum log_level log_get_level(void)
{
	return (enum log_level)atomic_load(&log_level);
}

void log_set_format(enum log_format fmt)
{
	atomic_store(&log_format, fmt);
}

/* s (already log-escaped: printable UTF-8, no control byte) as the inside
 * of a JSON string: only '"' and '\\' need a backslash. */
static size_t json_inside(const char *s, char *out, size_t cap)
{
	size_t o = 0;

	for (; *s && o + 2 < cap; s++) {
		if (*s == '"' || *s == '\\')
			out[o++] = '\\';
		out[o++] = *s;
	}
	out[o] = 0;
	return o;
}

/* One JSON log line (without the newline) into out. */
static size_t json_line(enum log_level lvl, const char *escaped, char *out, size_t cap)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(out, cap, "{\"ts\":\"%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t)snprintf(out + n, cap - n, ".%03ldZ\",\"level\":\"%s\",\"msg\":\"",
	                      ts.tv_nsec / 1000000, level_names[lvl]);
	n += json_inside(escaped, out + n, cap - n - 2);
	n += (size_t)snprintf(out + n, cap - n, "\"}");
	return n < cap ? n : cap - 1;
}

void log_set_startup_fd(int fd)
{
	atomic_store(&log_startup_fd, fd);
}

void log_set_syslog(int to_syslog)
{
	if (to_syslog)
		openlog("mysteerd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	atomic_store(&log_syslog, to_syslog);
}

/* The length of the UTF-8 sequence at p (at most n bytes) if it is a valid
 * one of a printable character, else 0: C1 controls (U+0080..U+009F, which
 * terminals take as escapes), overlong forms and surrogates are not. */
static size_t utf8_printable(const unsigned char *p, size_t n)
{
	size_t len = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
	uint32_t cp;

	if (p[0] < 0xc2 || p[0] > 0xf4 || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if (len == 2)
		cp = (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
	else if (len == 3)
		cp = (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
	else
		cp = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 |
		     (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
	if ((len == 2 && cp < 0xa0) ||
	    (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

size_t log_escape(const char *in, size_t n, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)in;
	size_t o = 0;

	if (cap == 0)
		return 0;
	for (size_t i = 0; i < n;) {
		size_t len = p[i] >= 0x80 ? utf8_printable(p + i, n - i) : 1;
		bool plain =
		    len > 0 && (p[i] >= 0x80 || (p[i] >= 0x20 && p[i] != 0x7f && p[i] != '\\'));

		if (plain) {
			if (o + len >= cap)
				break;
			memcpy(out + o, p + i, len);
			o += len;
			i += len;
			continue;
		}
		if (o + (p[i] == '\\' ? 2 : 4) >= cap)
			break;
		out[o++] = '\\';
		if (p[i] == '\\') {
			out[o++] = '\\';
		} else {
			out[o++] = 'x';
			out[o++] = hex[p[i] >> 4];
			out[o++] = hex[p[i] & 15];
		}
		i++;
	}
	out[o] = 0;
	return o;
}

void log_vmsg(enum log_level lvl, const char *fmt, va_list ap)
{
	static const int syslog_prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
	char msg[1024], esc[1024], line[2400];
	bool json = atomic_load(&log_format) == LOG_FMT_JSON;
	size_t n = 0;

	if ((int)lvl > atomic_load(&log_level))
		return;
	if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
		return;
	log_escape(msg, strlen(msg), esc, sizeof(esc));
	if (json)
		n = json_line(lvl, esc, line, sizeof(line) - 1);
	if (atomic_load(&log_syslog)) {
		int fd = atomic_load(&log_startup_fd);

		syslog(syslog_prio[lvl], "%s", json ? line : esc);
		if (fd >= 0 && lvl == LOG_LVL_ERROR) {
			char err[1100];
			int k = snprintf(err, sizeof(err), "mysteerd: %s\n", esc);
			ssize_t w =
			    write(fd, err, (size_t)k < sizeof(err) ? (size_t)k : sizeof(err));
			(void)w; /* the parent is gone: syslog has the line */
		}
		return;
	}
	if (!json) {
		struct timespec ts;
		struct tm tm;

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		n = strftime(line, sizeof(line), "%Y-%m-%d %H:%M:%S", &tm);
		n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03ld %s: %s",
		                      ts.tv_nsec / 1000000, level_names[lvl], esc);
		n = n < sizeof(line) - 1 ? n : sizeof(line) - 2;
	}
	line[n++] = '\n';
	/* One write per line keeps lines from different threads whole. */
	ssize_t w = write(STDERR_FILENO, line, n);
	(void)w;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(lvl, fmt, ap);
	va_end(ap);
}
