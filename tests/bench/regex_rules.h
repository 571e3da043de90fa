/*
 * regex_rules.h - the baseline the classifier is measured against: routing
 * rules the way a regex-based proxy applies them (ProxySQL-style query rules).
 * Leading whitespace and comments are stripped, then, case-insensitively
 * with PCRE2 JIT, "^SELECT.*FOR UPDATE" -> writer, "^SELECT" -> reader,
 * anything else -> writer. Shared by regex-classify and classify-bench so that
 * both measure exactly the same rules.
 */
#ifndef MYSTEER_REGEX_RULES_H
#define MYSTEER_REGEX_RULES_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct rx_rules {
	pcre2_code *for_update, *select;
	pcre2_match_data *md;
};

static inline pcre2_code *rx_compile(const char *pat)
{
	int err;
	PCRE2_SIZE off;
	pcre2_code *c = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
	                              PCRE2_CASELESS | PCRE2_DOTALL, &err, &off, NULL);

	if (!c) {
		fprintf(stderr, "pcre2_compile %s failed: %d\n", pat, err);
		return NULL;
	}
	if (pcre2_jit_compile(c, PCRE2_JIT_COMPLETE) != 0) {
		fprintf(stderr, "pcre2_jit_compile %s failed\n", pat);
		pcre2_code_free(c);
		return NULL;
	}
	return c;
}

static inline int rx_init(struct rx_rules *rx)
{
	rx->for_update = rx_compile("^SELECT.*FOR UPDATE");
	rx->select = rx_compile("^SELECT");
	rx->md = rx->select ? pcre2_match_data_create_from_pattern(rx->select, NULL) : NULL;
	return rx->for_update && rx->select && rx->md ? 0 : -1;
}

static inline void rx_free(struct rx_rules *rx)
{
	pcre2_match_data_free(rx->md);
	pcre2_code_free(rx->for_update);
	pcre2_code_free(rx->select);
}

/* What a regex proxy does first: skip whitespace and leading comments. */
static inline size_t rx_strip(const char *s, size_t n)
{
	size_t i = 0;

	for (;;) {
		while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
			i++;
		if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') {
			for (i += 2; i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'); i++)
				;
			i = i + 2 <= n ? i + 2 : n;
		} else if (i < n &&
		           (s[i] == '#' || (i + 1 < n && s[i] == '-' && s[i + 1] == '-'))) {
			while (i < n && s[i] != '\n')
				i++;
		} else {
			return i;
		}
	}
}

/* true: writer, false: reader. */
static inline bool rx_is_write(struct rx_rules *rx, const char *s, size_t n)
{
	size_t i = rx_strip(s, n);
	PCRE2_SPTR p = (PCRE2_SPTR)(s + i);

	if (pcre2_match(rx->for_update, p, n - i, 0, 0, rx->md, NULL) >= 0)
		return true;
	return pcre2_match(rx->select, p, n - i, 0, 0, rx->md, NULL) < 0;
}

#endif
