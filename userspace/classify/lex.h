/*
 * lex.h - the classifier's lexer, for the grammar (classify.c) and the fast
 * path (fastpath.c); internal, not an API.
 *
 * Table-driven (a class per byte, no locale), one token a call; strings and
 * comments are skipped 16 bytes at a time with SSE2 where available. It is a
 * header of inline functions on purpose: lex() runs once per token inside
 * the grammar's loop, and a call across files there costs a measurable part
 * of a point select's classification (see make bench, classify).
 */
#ifndef MYSTEER_CLASSIFY_LEX_H
#define MYSTEER_CLASSIFY_LEX_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "classify/classify_int.h"
#include "classify/words.h"

/* ---- lexer ------------------------------------------------------------ */

enum tk {
	T_EOF = 0,
	T_WORD,   /* identifier or keyword */
	T_NUM,    /* starts with a digit: number (or odd identifier) */
	T_QID,    /* `quoted identifier` */
	T_STR,    /* '...' or "..." */
	T_VAR,    /* @user_var */
	T_SYSVAR, /* @@[scope.]system_var */
	T_LP,
	T_RP,
	T_SEMI,
	T_COMMA,
	T_DOT,
	T_ASSIGN, /* := */
	T_EQ,
	T_OTHER,
};

/* Byte classes for the lexer's dispatch. */
enum cc {
	C_OTHER = 0,
	C_SPACE,
	C_WORD,
	C_DIGIT,
	C_QUOTE,
	C_BQ,
	C_AT,
	C_LP,
	C_RP,
	C_SEMI,
	C_COMMA,
	C_DOT,
	C_COLON,
	C_EQ,
	C_HASH,
	C_DASH,
	C_SLASH,
	C_STAR,
	C_NUL,
};

static const uint8_t cclass[256] = {
    [0] = C_NUL,
    ['\t'] = C_SPACE,
    ['\n'] = C_SPACE,
    ['\v'] = C_SPACE,
    ['\f'] = C_SPACE,
    ['\r'] = C_SPACE,
    [' '] = C_SPACE,
    ['0' ... '9'] = C_DIGIT,
    ['A' ... 'Z'] = C_WORD,
    ['a' ... 'z'] = C_WORD,
    ['_'] = C_WORD,
    ['$'] = C_WORD,
    [0x80 ... 0xff] = C_WORD, /* UTF-8 (valid or not) identifier bytes */
    ['\''] = C_QUOTE,
    ['"'] = C_QUOTE,
    ['`'] = C_BQ,
    ['@'] = C_AT,
    ['('] = C_LP,
    [')'] = C_RP,
    [';'] = C_SEMI,
    [','] = C_COMMA,
    ['.'] = C_DOT,
    [':'] = C_COLON,
    ['='] = C_EQ,
    ['#'] = C_HASH,
    ['-'] = C_DASH,
    ['/'] = C_SLASH,
    ['*'] = C_STAR,
};

/* Identifier bytes, one load a byte in the hot loops. */
static const bool wordc[256] = {
    ['0' ... '9'] = true, ['A' ... 'Z'] = true, ['a' ... 'z'] = true,
    ['_'] = true,         ['$'] = true,         [0x80 ... 0xff] = true,
};

static inline bool is_wordc(uint8_t c)
{
	return wordc[c];
}

struct tok {
	uint8_t type;        /* enum tk */
	uint8_t fn;          /* builtin class of a T_WORD */
	uint8_t kwf;         /* keyword flags of a T_WORD */
	bool tctx;           /* a name in table context: "name (" is no call */
	bool qual;           /* name after "x.": qoff/qlen give x */
	uint16_t kw;         /* keyword of a T_WORD */
	uint32_t off, len;   /* span; for quoted tokens the content */
	uint32_t qoff, qlen; /* qualifier span */
};

struct lx {
	const uint8_t *base, *p, *end;
	const uint8_t *last_end; /* end of the previous token */
	bool in_exec;            /* inside an executable comment */
	uint8_t last_type;       /* type of the previous token */
	bool num_lists;          /* "1, 2, 3" may be one T_NUM (no "," matters) */
	bool nul;                /* a NUL byte outside strings and comments */
	uint32_t flags;          /* hints and CLS_F_UNTERMINATED */
};

/* Index of the first b1 or b2 (or '\\' when esc) in [p, end), or end. */
static const uint8_t *scan_quote(const uint8_t *p, const uint8_t *end, uint8_t q)
{
#if defined(__SSE2__)
	const __m128i vq = _mm_set1_epi8((char)q), vb = _mm_set1_epi8('\\');

	while (end - p >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)p);
		int m =
		    _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, vq), _mm_cmpeq_epi8(v, vb)));

		if (m)
			return p + __builtin_ctz((unsigned)m);
		p += 16;
	}
#endif
	while (p < end && *p != q && *p != '\\')
		p++;
	return p;
}

/* First '*' in [p, end), or end. */
static const uint8_t *scan_star(const uint8_t *p, const uint8_t *end)
{
	const uint8_t *s = memchr(p, '*', (size_t)(end - p));

	return s ? s : end;
}

/* Skips a quoted string or identifier whose opening quote is at p[-1];
 * returns the position after the closing quote, or end (unterminated). */
static const uint8_t *skip_quoted(struct lx *lx, const uint8_t *p, uint8_t q)
{
	const uint8_t *end = lx->end;

	for (;;) {
		p = q == '`' ? memchr(p, '`', (size_t)(end - p)) : scan_quote(p, end, q);
		if (!p || p >= end) {
			lx->flags |= CLS_F_UNTERMINATED;
			return end;
		}
		if (*p == '\\') { /* escapes the next byte, whatever it is */
			p += 2;
			if (p > end)
				p = end;
			continue;
		}
		if (p + 1 < end && p[1] == q) { /* doubled quote */
			p += 2;
			continue;
		}
		return p + 1;
	}
}

static inline bool ieq_ascii(const uint8_t *s, const char *lit, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cls_lower(s[i]) != (uint8_t)lit[i])
			return false;
	return true;
}

/* A plain comment's content: is it a routing hint? */
static inline void check_hint(struct lx *lx, const uint8_t *s, const uint8_t *e)
{
	while (s < e && cclass[*s] == C_SPACE)
		s++;
	if (e - s < 14 || !ieq_ascii(s, "mysteer:", 8))
		return;
	if (ieq_ascii(s + 8, "writer", 6))
		lx->flags |= CLS_F_HINT_WRITER;
	else if (ieq_ascii(s + 8, "reader", 6))
		lx->flags |= CLS_F_HINT_READER;
}

/* Handles the comment starting at p ("/\*" seen). Returns where lexing goes
 * on: after the comment, or inside an executable comment. */
static const uint8_t *skip_block_comment(struct lx *lx, const uint8_t *p)
{
	const uint8_t *end = lx->end, *s = p + 2;

	if (s < end && (*s == '!' || (*s == 'M' && s + 1 < end && s[1] == '!'))) {
		s += *s == '!' ? 1 : 2;
		for (int i = 0; i < 6 && s < end && cclass[*s] == C_DIGIT; i++)
			s++;
		lx->in_exec = true; /* its content is SQL: lex it */
		return s;
	}
	for (const uint8_t *q = s;;) {
		q = scan_star(q, end);
		if (q + 1 >= end) {
			lx->flags |= CLS_F_UNTERMINATED;
			return end;
		}
		if (q[1] == '/') {
			if (s < end && *s != '+') /* optimizer hints are not ours */
				check_hint(lx, s, q);
			return q + 2;
		}
		q++;
	}
}

static const uint8_t *skip_line(const uint8_t *p, const uint8_t *end)
{
	const uint8_t *n = memchr(p, '\n', (size_t)(end - p));

	return n ? n + 1 : end;
}

static inline __attribute__((always_inline)) void lex_word(struct lx *lx, struct tok *t,
                                                           const uint8_t *p)
{
	const uint8_t *s = p, *end = lx->end;
	const struct word *w;

	while (p < end && is_wordc(*p))
		p++;
	t->type = T_WORD;
	t->off = (uint32_t)(s - lx->base);
	t->len = (uint32_t)(p - s);
	lx->p = p;
	w = words_find(s, (size_t)(p - s), (size_t)(end - s));
	if (w) {
		t->kw = w->kw;
		t->kwf = w->kwf;
		t->fn = w->fn;
	}
}

/* @var, @'var', @@scope.var. A "@" right after a string, name or quoted
 * name is the host part of 'user'@'host', not a variable. */
static inline void lex_at(struct lx *lx, struct tok *t, const uint8_t *p, bool glued)
{
	const uint8_t *end = lx->end, *s;

	p++;
	if (glued) {
		t->type = T_OTHER;
		lx->p = p;
		return;
	}
	if (p < end && *p == '@') {
		s = ++p;
		while (p < end && (is_wordc(*p) || *p == '.'))
			p++;
		t->type = T_SYSVAR;
		t->off = (uint32_t)(s - lx->base);
		t->len = (uint32_t)(p - s);
		lx->p = p;
		return;
	}
	t->type = T_VAR;
	if (p < end && (*p == '\'' || *p == '"' || *p == '`')) {
		s = p + 1;
		p = skip_quoted(lx, s, *p);
		t->off = (uint32_t)(s - lx->base);
		t->len = (uint32_t)(p - s) - (p > s && p[-1] == s[-1] ? 1 : 0);
		lx->p = p;
		return;
	}
	s = p;
	while (p < end && (is_wordc(*p) || *p == '.'))
		p++;
	t->off = (uint32_t)(s - lx->base);
	t->len = (uint32_t)(p - s);
	lx->p = p;
}

static inline const uint8_t *skip_number(const uint8_t *p, const uint8_t *end)
{
	while (p < end && (is_wordc(*p) || *p == '.'))
		p++;
	return p;
}

/* "1, 2, 3" as one token: long IN lists and multi-row VALUES are mostly
 * numbers, and nothing in them changes a decision; the separators after the
 * last number are given back. */
static inline const uint8_t *skip_number_list(const uint8_t *p, const uint8_t *end)
{
	for (;;) {
		const uint8_t *q;

		p = skip_number(p, end);
		q = p;
		while (q < end && (*q == ',' || *q == ' '))
			q++;
		if (q == p || q >= end || cclass[*q] != C_DIGIT)
			return p;
		p = q;
	}
}

static inline __attribute__((always_inline)) void lex(struct lx *lx, struct tok *t)
{
	const uint8_t *p = lx->p, *end = lx->end, *s;
	bool glued;

	t->fn = t->kwf = 0;
	t->tctx = t->qual = false;
	t->kw = 0;
	for (;;) {
		while (p < end && cclass[*p] == C_SPACE)
			p++;
		if (p >= end) {
			if (lx->in_exec)
				lx->flags |= CLS_F_UNTERMINATED;
			lx->p = end;
			t->type = T_EOF;
			t->off = (uint32_t)(end - lx->base);
			return;
		}
		switch (cclass[*p]) {
		case C_HASH:
			p = skip_line(p, end);
			continue;
		case C_DASH:
			if (p + 1 < end && p[1] == '-' && (p + 2 == end || p[2] <= ' ')) {
				p = skip_line(p, end);
				continue;
			}
			break;
		case C_SLASH:
			if (p + 1 < end && p[1] == '*') {
				p = skip_block_comment(lx, p);
				continue;
			}
			break;
		case C_STAR:
			if (lx->in_exec && p + 1 < end && p[1] == '/') {
				lx->in_exec = false;
				p += 2;
				continue;
			}
			break;
		}
		break;
	}
	glued = p == lx->last_end && lx->p != lx->base &&
	        (lx->last_type == T_STR || lx->last_type == T_QID || lx->last_type == T_WORD);
	t->off = (uint32_t)(p - lx->base);
	t->len = 1;
	switch (cclass[*p]) {
	case C_WORD:
		lex_word(lx, t, p);
		break;
	case C_DIGIT:
		s = p;
		p = lx->num_lists ? skip_number_list(p, end) : skip_number(p, end);
		t->type = T_NUM;
		t->len = (uint32_t)(p - s);
		lx->p = p;
		break;
	case C_QUOTE:
	case C_BQ:
		s = p + 1;
		p = skip_quoted(lx, s, *p);
		t->type = cclass[s[-1]] == C_BQ ? T_QID : T_STR;
		t->off = (uint32_t)(s - lx->base);
		t->len = (uint32_t)(p - s) - (p > s && p[-1] == s[-1] ? 1 : 0);
		lx->p = p;
		break;
	case C_AT:
		glued = p == lx->last_end && (lx->last_type == T_STR || lx->last_type == T_QID ||
		                              lx->last_type == T_WORD);
		lex_at(lx, t, p, glued);
		break;
	case C_COLON:
		if (p + 1 < end && p[1] == '=') {
			t->type = T_ASSIGN;
			lx->p = p + 2;
			break;
		}
		t->type = T_OTHER;
		lx->p = p + 1;
		break;
	case C_NUL: /* a run of them is one token: a NUL-filled buffer is cheap */
		lx->nul = true;
		t->type = T_OTHER;
		while (p < end && *p == 0)
			p++;
		lx->p = p;
		break;
	default: {
		static const uint8_t single[] = {
		    [C_LP] = T_LP,       [C_RP] = T_RP,   [C_SEMI] = T_SEMI,
		    [C_COMMA] = T_COMMA, [C_DOT] = T_DOT, [C_EQ] = T_EQ,
		};
		uint8_t c = cclass[*p];

		t->type = c < sizeof(single) && single[c] ? single[c] : T_OTHER;
		lx->p = p + 1;
		break;
	}
	}
	lx->last_end = lx->p;
	lx->last_type = t->type;
}

/* ---- words the grammar and the fast path both read -------------------- */

/*
 * SQL_CALC_FOUND_ROWS counts among the select options right after a
 * statement's leading SELECT (the servers refuse it elsewhere). The fast path
 * and the parser both look there and only there, so they agree.
 */
enum sel_opt { SO_NONE = 0, SO_SELECT, SO_OPTIONS };

/* 2: SQL_CALC_FOUND_ROWS, 1: another select option, 0: anything else. By
 * length first: this runs for the first word of every SELECT. */
static inline int select_option(const uint8_t *w, size_t n)
{
	switch (n) {
	case 3:
		return ieq_ascii(w, "all", 3);
	case 8:
		return ieq_ascii(w, "distinct", 8);
	case 9:
		return ieq_ascii(w, "sql_cache", 9);
	case 11:
		return ieq_ascii(w, "distinctrow", 11);
	case 12:
		return ieq_ascii(w, "sql_no_cache", 12);
	case 13:
		return ieq_ascii(w, "high_priority", 13) || ieq_ascii(w, "straight_join", 13);
	case 14:
		return ieq_ascii(w, "sql_big_result", 14);
	case 16:
		return ieq_ascii(w, "sql_small_result", 16);
	case 17:
		return ieq_ascii(w, "sql_buffer_result", 17);
	case 19:
		return ieq_ascii(w, "sql_calc_found_rows", 19) ? 2 : 0;
	}
	return 0;
}

#endif
