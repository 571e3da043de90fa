/*
 * test_log.c - log lines: what a client sends (user names, schema names)
 * is escaped, so that no line can be forged with a newline and no terminal
 * escape sequence reaches whoever reads the log.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

static const char *esc(const char *in, size_t n, size_t cap)
{
	static char out[256];

	log_escape(in, n, out, cap);
	return out;
}

START_TEST(escapes)
{
	ck_assert_str_eq(esc("app", 3, 256), "app");
	ck_assert_str_eq(esc("a\nFORGED", 8, 256), "a\\x0aFORGED");
	ck_assert_str_eq(esc("\r\t\x1b[31m", 7, 256), "\\x0d\\x09\\x1b[31m");
	ck_assert_str_eq(esc("back\\slash", 10, 256), "back\\\\slash");
	ck_assert_str_eq(esc("del\x7f", 4, 256), "del\\x7f");
	/* printable UTF-8 stays; C1 controls (U+009B is CSI), bare or broken
	 * sequences, overlong forms and surrogates do not */
	ck_assert_str_eq(esc("h\xc3\xa9\xe2\x98\x83", 6, 256), "h\xc3\xa9\xe2\x98\x83");
	ck_assert_str_eq(esc("\xc2\x9b", 2, 256), "\\xc2\\x9b");
	ck_assert_str_eq(esc("\x9b", 1, 256), "\\x9b");
	ck_assert_str_eq(esc("\xc3", 1, 256), "\\xc3");
	ck_assert_str_eq(esc("\xc0\x8a", 2, 256), "\\xc0\\x8a");
	ck_assert_str_eq(esc("\xed\xa0\x80", 3, 256), "\\xed\\xa0\\x80");
	ck_assert_str_eq(esc("\xf0\x9f\x98\x80", 4, 256), "\xf0\x9f\x98\x80");
	/* cut to fit, never inside an escape */
	ck_assert_str_eq(esc("ab\ncd", 5, 5), "ab");
	ck_assert_str_eq(esc("ab\ncd", 5, 7), "ab\\x0a");
	ck_assert_uint_eq(log_escape("x", 1, NULL, 0), 0);
}
END_TEST

/* A whole line through log_msg: one line, escaped, ending in a newline. */
START_TEST(one_line)
{
	int fds[2], saved = dup(STDERR_FILENO);
	char buf[512];
	ssize_t n;

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fds[1], STDERR_FILENO), 0);
	log_set_level(LOG_LVL_INFO);
	log_info("proxy: access denied for user '%s'", "evil\n2026-01-01 00:00:00.000 error: x");
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	ck_assert_int_gt(n, 0);
	buf[n] = 0;
	close(fds[0]);
	close(saved);
	ck_assert_ptr_nonnull(strstr(buf, "user 'evil\\x0a2026-01-01 00:00:00.000 error: x'\n"));
	ck_assert_ptr_eq(strchr(buf, '\n'), buf + n - 1);
}
END_TEST

/* log_format = json: one object a line that a JSON parser takes back whole,
 * whatever the message holds. */
START_TEST(json_line)
{
	int fds[2], saved = dup(STDERR_FILENO);
	char buf[1024];
	ssize_t n;

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_ge(dup2(fds[1], STDERR_FILENO), 0);
	log_set_level(LOG_LVL_INFO);
	log_set_format(LOG_FMT_JSON);
	log_warn("writer db1 -> db2 (\"%s\")", "q\\b\n\x01");
	log_set_format(LOG_FMT_TEXT);
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	ck_assert_int_gt(n, 0);
	buf[n] = 0;
	close(fds[0]);
	close(saved);
	ck_assert_msg(!strncmp(buf, "{\"ts\":\"", 7), "%s", buf);
	ck_assert_msg(strstr(buf, "Z\",\"level\":\"warn\",\"msg\":\"writer db1 -> db2 "
	                          "(\\\"q\\\\\\\\b\\\\x0a\\\\x01\\\")\"}\n"),
	              "%s", buf);
	ck_assert_ptr_eq(strchr(buf, '\n'), buf + n - 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("log");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, escapes);
	tcase_add_test(tc, one_line);
	tcase_add_test(tc, json_line);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
