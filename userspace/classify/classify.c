/*
 * classify.c - the SQL classifier: lexer, statement grammar, decisions.
 *
 * One pass over the bytes. The lexer is table-driven (a class per byte, no
 * locale) and returns one token at a time; strings and comments are skipped
 * 16 bytes at a time with SSE2 where available. Plain SELECT/DML take a
 * fast path first (bottom of this file) that classifies 32 or 16 bytes at a
 * time with AVX2 or SSSE3 nibble tables, chosen at run time. The grammar keeps a small
 * explicit state (the current token and the two before it, a parenthesis
 * depth counter, a few booleans), never recurses and never allocates, so time
 * is linear in the input and the stack is bounded whatever the nesting.
 *
 * The statement head (first keywords) picks a token; the body scan then
 * looks, to the end of the statement, for what can turn a read into a write
 * (locking clauses, INTO, side-effect or unknown functions, user variable
 * assignment, DML verbs inside WITH) and for the flags. Every statement of a
 * multi-statement is scanned so that its flags are known, although the
 * token of a multi-statement is always write.
 */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h> /* SSSE3 and AVX2, used only behind a runtime check */
#include <stdlib.h>
#define HAVE_NIBBLE_SCAN 1
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

static bool ieq_ascii(const uint8_t *s, const char *lit, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cls_lower(s[i]) != (uint8_t)lit[i])
			return false;
	return true;
}

/* A plain comment's content: is it a routing hint? */
static void check_hint(struct lx *lx, const uint8_t *s, const uint8_t *e)
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
static void lex_at(struct lx *lx, struct tok *t, const uint8_t *p, bool glued)
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

/* ---- grammar ---------------------------------------------------------- */

enum mode {
	M_NONE = 0,       /* only variables and system variables */
	M_CALLS = 1 << 0, /* function calls matter */
	M_QUERY = 1 << 1, /* a read: locking clauses, INTO, DML verbs matter */
};

enum pend { P_NONE = 0, P_VAR, P_DML };

struct ps {
	struct lx lx;
	struct tok ring[3];
	struct tok *t, *prev, *prev2; /* rotate through ring: no copies */
	const struct cls_options *opt;
	const char *db; /* current schema (changes with USE in a multi-statement) */
	size_t dblen;
	uint32_t use_off, use_len;
	/* per statement */
	uint32_t flags;
	enum cls_token tok;
	enum cls_reason rd_reason, wr_reason;
	bool wr;         /* forced to write */
	bool wr_other;   /* by something other than FOUND_ROWS()/ROW_COUNT() */
	uint8_t sel_opt; /* enum sel_opt: where SQL_CALC_FOUND_ROWS counts */
	bool explain;    /* EXPLAIN/ANALYZE of a statement */
	bool into;       /* after INTO: @vars are assigned */
	bool in_with;    /* in a WITH list: "name (" is a CTE column list */
	uint8_t pend;    /* enum pend: decided by the next token */
	int depth, with_depth, base_depth;
	unsigned calls; /* function calls and subqueries seen (SET values) */
};

static void force_write(struct ps *s, enum cls_reason r)
{
	if (!s->wr) {
		s->wr = true;
		s->wr_reason = r;
	}
	s->wr_other = true;
}

/*
 * SQL_CALC_FOUND_ROWS counts among the select options right after a
 * statement's leading SELECT (the servers refuse it elsewhere). The fast path
 * and the parser both look there and only there, so they agree.
 */
enum sel_opt { SO_NONE = 0, SO_SELECT, SO_OPTIONS };

/* 2: SQL_CALC_FOUND_ROWS, 1: another select option, 0: anything else. By
 * length first: this runs for the first word of every SELECT. */
static int select_option(const uint8_t *w, size_t n)
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

/* The parser's side: called for every token of a leading SELECT's body. */
static void on_select_option(struct ps *s)
{
	const struct tok *t = s->t;
	int o;

	if (s->sel_opt == SO_SELECT) { /* the SELECT keyword itself */
		s->sel_opt = SO_OPTIONS;
		return;
	}
	o = t->type == T_WORD ? select_option(s->lx.base + t->off, t->len) : 0;
	if (o == 2)
		s->flags |= CLS_F_CALC_FOUND_ROWS;
	if (o == 0)
		s->sel_opt = SO_NONE;
}

static bool is_name(const struct tok *t)
{
	return t->type == T_WORD || t->type == T_QID;
}

static inline __attribute__((always_inline)) void adv_inline(struct ps *s)
{
	struct tok *n = s->prev2;

	s->prev2 = s->prev;
	s->prev = s->t;
	s->t = n;
	lex(&s->lx, n);
	if (!is_name(n))
		return;
	if (s->prev->type == T_DOT && is_name(s->prev2)) {
		n->qual = true;
		n->qoff = s->prev2->off;
		n->qlen = s->prev2->len;
		n->tctx = s->prev2->tctx;
		return;
	}
	if (s->prev->type == T_WORD && (s->prev->kwf & KWF_T))
		n->tctx = true;
	else if (s->prev->type == T_COMMA && s->in_with && s->depth == s->with_depth)
		n->tctx = true;
}

static void adv(struct ps *s)
{
	adv_inline(s);
}

static inline bool at_end(const struct ps *s)
{
	return s->t->type == T_EOF || s->t->type == T_SEMI;
}

static const char *txt(const struct ps *s, uint32_t off)
{
	return (const char *)s->lx.base + off;
}

/* A call of something that is not a builtin: a stored function. */
static void on_stored_function(struct ps *s, const struct tok *name)
{
	const char *schema = s->db;
	size_t slen = s->dblen;
	enum cls_data_access a;

	s->flags |= CLS_F_ROUTINE;
	if (name->qual) {
		schema = txt(s, name->qoff);
		slen = name->qlen;
	}
	if (s->opt && s->opt->trust_routines && schema &&
	    cls_routines_find(s->opt->routines, schema, slen, txt(s, name->off), name->len,
	                      CLS_ROUTINE_FUNCTION, &a) &&
	    (a == CLS_ACCESS_READS_SQL_DATA || a == CLS_ACCESS_NO_SQL)) {
		if (s->rd_reason == CLS_R_SELECT)
			s->rd_reason = CLS_R_ROUTINE_TRUSTED;
		return;
	}
	force_write(s, CLS_R_UNKNOWN_FUNCTION);
}

static void on_call(struct ps *s, const struct tok *name)
{
	s->calls++;
	if (name->type == T_QID || name->qual) {
		on_stored_function(s, name);
		return;
	}
	switch (name->fn) {
	case FN_P:
		return;
	case FN_S:
		s->flags |= CLS_F_PREV_STATE;
		force_write(s, CLS_R_WRITE_FUNCTION);
		return;
	case FN_R:
		s->flags |= CLS_F_PREV_STATE;
		if (!s->wr) { /* not force_write: leaves wr_other as it is */
			s->wr = true;
			s->wr_reason = CLS_R_WRITE_FUNCTION;
		}
		return;
	case FN_L:
		s->flags |= CLS_F_NAMED_LOCK;
		force_write(s, CLS_R_WRITE_FUNCTION);
		return;
	case FN_W:
	case FN_C:
		force_write(s, CLS_R_WRITE_FUNCTION);
		return;
	}
	if (name->kwf & KWF_N)
		return;
	on_stored_function(s, name);
}

/* The name part of @@[scope.]name, and whether the scope is global. */
static void sysvar_name(const struct ps *s, const struct tok *t, const uint8_t **name, size_t *n,
                        bool *global)
{
	const uint8_t *b = s->lx.base + t->off, *e = b + t->len, *d = b;

	for (const uint8_t *p = b; p < e; p++)
		if (*p == '.')
			d = p + 1;
	*global = d - b == 7 && ieq_ascii(b, "global.", 7);
	*name = d;
	*n = (size_t)(e - d);
}

static bool name_is(const uint8_t *s, size_t n, const char *lit)
{
	size_t l = strlen(lit);

	return n == l && ieq_ascii(s, lit, l);
}

static void on_sysvar_read(struct ps *s, const struct tok *t)
{
	const uint8_t *n;
	size_t len;
	bool global;

	s->calls++;
	sysvar_name(s, t, &n, &len, &global);
	if (name_is(n, len, "warning_count") || name_is(n, len, "error_count")) {
		s->flags |= CLS_F_PREV_STATE;
	} else if (name_is(n, len, "identity") || name_is(n, len, "last_insert_id")) {
		s->flags |= CLS_F_PREV_STATE;
		force_write(s, CLS_R_WRITE_FUNCTION);
	}
}

/* Keywords that matter inside a read (M_QUERY). */
static void on_query_word(struct ps *s)
{
	const struct tok *t = s->t;
	uint16_t pk = s->prev->type == T_WORD ? s->prev->kw : KW_NONE;
	uint16_t pk2 = s->prev2->type == T_WORD ? s->prev2->kw : KW_NONE;

	if (t->kw != KW_INTO)
		s->into = false;
	switch (t->kw) {
	case KW_FOR:
		if (pk == KW_VALUE && (pk2 == KW_NEXT || pk2 == KW_PREVIOUS))
			force_write(s, CLS_R_WRITE_FUNCTION); /* NEXT VALUE FOR seq */
		break;
	case KW_UPDATE:
		if (pk == KW_FOR)
			force_write(s, CLS_R_LOCKING_READ);
		else if (pk != KW_KEY)
			force_write(s, CLS_R_DML); /* WITH ... UPDATE */
		break;
	case KW_SHARE:
		if (pk == KW_FOR || (pk == KW_IN && pk2 == KW_LOCK))
			force_write(s, CLS_R_LOCKING_READ);
		break;
	case KW_INTO:
		s->into = true;
		force_write(s, CLS_R_SELECT_INTO);
		break;
	case KW_DELETE:
		force_write(s, CLS_R_DML);
		break;
	case KW_INSERT:
	case KW_REPLACE:
		s->pend = P_DML; /* unless it is INSERT( or REPLACE( */
		break;
	case KW_SELECT:
	case KW_VALUES:
	case KW_TABLE:
		s->calls++; /* a subquery (SET @a = (SELECT ..)) */
		if (s->in_with && s->depth == s->with_depth)
			s->in_with = false;
		break;
	}
}

static void resolve_pending(struct ps *s, enum mode mode)
{
	uint8_t p = s->pend;

	s->pend = P_NONE;
	if (p == P_VAR) {
		if (s->t->type == T_ASSIGN) {
			s->flags |= CLS_F_USER_VAR_WRITE;
			if (mode & M_QUERY)
				force_write(s, CLS_R_USER_VAR_WRITE);
		} else {
			s->flags |= CLS_F_USER_VAR_READ;
		}
	} else if (p == P_DML && s->t->type != T_LP) {
		force_write(s, CLS_R_DML);
	}
}

/* Scans to the end of the statement (or, with stop_comma, to a "," at the
 * depth the scan started at). */
static void scan_body(struct ps *s, unsigned mode, bool stop_comma)
{
	s->base_depth = s->depth;
	s->lx.num_lists = !stop_comma;
	for (;; adv_inline(s)) {
		if (s->pend)
			resolve_pending(s, (enum mode)mode);
		if (s->sel_opt)
			on_select_option(s);
		switch (s->t->type) {
		case T_EOF:
		case T_SEMI:
			s->lx.num_lists = false;
			return;
		case T_COMMA:
			if (stop_comma && s->depth == s->base_depth) {
				s->lx.num_lists = false;
				return;
			}
			break;
		case T_LP:
			if ((mode & M_CALLS) && is_name(s->prev) && !s->prev->tctx)
				on_call(s, s->prev);
			s->depth++;
			break;
		case T_RP:
			if (s->depth > 0)
				s->depth--;
			break;
		case T_VAR:
			if (s->into && (mode & M_QUERY))
				s->flags |= CLS_F_USER_VAR_WRITE;
			else
				s->pend = P_VAR;
			break;
		case T_SYSVAR:
			on_sysvar_read(s, s->t);
			break;
		case T_WORD:
			if (s->t->kw == KW_WITH) {
				s->in_with = true;
				s->with_depth = s->depth;
			} else if (s->t->kw && (mode & M_QUERY)) {
				on_query_word(s);
			}
			break;
		}
	}
}

/* Consumes everything to the end of the input as one statement: routine
 * bodies and compound statements contain ";". */
static void scan_all(struct ps *s)
{
	while (s->t->type != T_EOF)
		adv(s);
}

static void set_token(struct ps *s, enum cls_token tok, enum cls_reason r)
{
	s->tok = tok;
	if (tok == CLS_WRITE)
		force_write(s, r);
	else
		s->rd_reason = r;
}

static bool kw_is(const struct ps *s, enum kw k)
{
	return s->t->type == T_WORD && s->t->kw == k;
}

/* Trailing words after a complete statement mean we did not understand it. */
static void expect_end(struct ps *s)
{
	if (at_end(s))
		return;
	force_write(s, CLS_R_NOT_UNDERSTOOD);
	scan_body(s, M_NONE, false);
}

static void parse_begin(struct ps *s)
{
	adv(s);
	if (kw_is(s, KW_WORK))
		adv(s);
	if (kw_is(s, KW_NOT)) { /* BEGIN NOT ATOMIC ... END: a compound statement */
		set_token(s, CLS_WRITE, CLS_R_NOT_UNDERSTOOD);
		scan_all(s);
		return;
	}
	set_token(s, CLS_BEGIN, CLS_R_TRANSACTION);
	expect_end(s);
}

static void parse_start(struct ps *s)
{
	bool ro = false, rw = false, bad = false;

	adv(s);
	if (!kw_is(s, KW_TRANSACTION)) { /* START SLAVE, START REPLICA ... */
		set_token(s, CLS_WRITE, CLS_R_ADMIN);
		scan_body(s, M_NONE, false);
		return;
	}
	adv(s);
	while (!at_end(s) && !bad) {
		if (kw_is(s, KW_READ)) {
			adv(s);
			ro |= kw_is(s, KW_ONLY);
			rw |= kw_is(s, KW_WRITE);
			bad = !kw_is(s, KW_ONLY) && !kw_is(s, KW_WRITE);
		} else if (kw_is(s, KW_WITH)) {
			adv(s);
			bad = !kw_is(s, KW_CONSISTENT);
			if (!bad)
				adv(s);
			bad = bad || !kw_is(s, KW_SNAPSHOT);
		} else {
			bad = s->t->type != T_COMMA;
		}
		if (!bad)
			adv(s);
	}
	set_token(s, ro && !rw ? CLS_BEGIN_RO : CLS_BEGIN, CLS_R_TRANSACTION);
	if (bad)
		force_write(s, CLS_R_NOT_UNDERSTOOD);
	expect_end(s);
}

/* COMMIT|ROLLBACK [WORK] [AND [NO] CHAIN] [[NO] RELEASE], ROLLBACK TO sp. */
static void parse_end(struct ps *s, bool rollback)
{
	adv(s);
	if (kw_is(s, KW_WORK))
		adv(s);
	if (rollback && kw_is(s, KW_TO)) {
		set_token(s, CLS_WRITE, CLS_R_TRANSACTION);
		scan_body(s, M_NONE, false);
		return;
	}
	set_token(s, CLS_END, CLS_R_TRANSACTION);
	if (kw_is(s, KW_AND)) {
		adv(s);
		if (kw_is(s, KW_NO))
			adv(s);
		else if (kw_is(s, KW_CHAIN))
			force_write(s, CLS_R_TRANSACTION); /* a new transaction begins */
		if (!kw_is(s, KW_CHAIN)) {
			force_write(s, CLS_R_NOT_UNDERSTOOD);
			scan_body(s, M_NONE, false);
			return;
		}
		adv(s);
	}
	if (kw_is(s, KW_NO))
		adv(s);
	if (kw_is(s, KW_RELEASE))
		adv(s);
	expect_end(s);
}

static void parse_use(struct ps *s)
{
	adv(s);
	set_token(s, CLS_SESSION, CLS_R_SET);
	if (s->t->type != T_WORD && s->t->type != T_QID && s->t->type != T_NUM) {
		force_write(s, CLS_R_NOT_UNDERSTOOD);
		scan_body(s, M_NONE, false);
		return;
	}
	s->flags |= CLS_F_USE;
	s->use_off = s->t->off;
	s->use_len = s->t->len;
	s->db = txt(s, s->t->off);
	s->dblen = s->t->len;
	adv(s);
	expect_end(s);
}

static void parse_call(struct ps *s)
{
	const char *schema = s->db, *name;
	size_t slen = s->dblen, nlen;
	enum cls_data_access a;

	adv(s);
	s->flags |= CLS_F_ROUTINE;
	if (!is_name(s->t)) {
		set_token(s, CLS_WRITE, CLS_R_NOT_UNDERSTOOD);
		scan_body(s, M_CALLS, false);
		return;
	}
	name = txt(s, s->t->off);
	nlen = s->t->len;
	adv(s);
	if (s->t->type == T_DOT) {
		adv(s);
		if (is_name(s->t)) {
			schema = name;
			slen = nlen;
			name = txt(s, s->t->off);
			nlen = s->t->len;
			adv(s);
		}
	}
	if (s->opt && s->opt->trust_routines && schema &&
	    cls_routines_find(s->opt->routines, schema, slen, name, nlen, CLS_ROUTINE_PROCEDURE,
	                      &a) &&
	    (a == CLS_ACCESS_READS_SQL_DATA || a == CLS_ACCESS_NO_SQL))
		set_token(s, CLS_READ, CLS_R_ROUTINE_TRUSTED);
	else
		set_token(s, CLS_WRITE, CLS_R_CALL);
	if (s->opt && schema && cls_routines_tracked(s->opt->routines, schema, slen, name, nlen))
		s->flags |= CLS_F_ROUTINE_TRACKED;
	scan_body(s, M_CALLS, false);
	/* CALL p(@v): an OUT or INOUT parameter assigns @v on the connection
	 * that ran it, and the server's session tracking does not report it */
	if (s->flags & CLS_F_USER_VAR_READ)
		s->flags |= CLS_F_USER_VAR_WRITE;
}

static bool is_query_start(const struct ps *s)
{
	if (s->t->type == T_LP)
		return true;
	if (s->t->type != T_WORD)
		return false;
	switch (s->t->kw) {
	case KW_SELECT:
	case KW_WITH:
	case KW_VALUES:
	case KW_TABLE:
	case KW_INSERT:
	case KW_UPDATE:
	case KW_DELETE:
	case KW_REPLACE:
		return true;
	}
	return false;
}

/* FORMAT = JSON|TRADITIONAL|TREE of EXPLAIN and ANALYZE. */
static void skip_format(struct ps *s)
{
	if (!kw_is(s, KW_FORMAT))
		return;
	adv(s);
	if (s->t->type == T_EQ)
		adv(s);
	if (!at_end(s))
		adv(s);
}

/* EXPLAIN/DESCRIBE: of a statement (returns true: classify that statement)
 * or of a table (a read). */
static bool parse_explain(struct ps *s)
{
	adv(s);
	while (kw_is(s, KW_EXTENDED) || kw_is(s, KW_PARTITIONS) || kw_is(s, KW_ANALYZE) ||
	       kw_is(s, KW_FORMAT)) {
		if (kw_is(s, KW_FORMAT))
			skip_format(s);
		else
			adv(s);
	}
	if (is_query_start(s)) {
		s->explain = true;
		return true;
	}
	if (kw_is(s, KW_FOR) || s->t->type == T_WORD || s->t->type == T_QID) {
		set_token(s, CLS_READ, CLS_R_SHOW); /* EXPLAIN FOR CONNECTION, DESCRIBE t */
		scan_body(s, M_NONE, false);
		return false;
	}
	set_token(s, CLS_WRITE, CLS_R_NOT_UNDERSTOOD);
	scan_body(s, M_NONE, false);
	return false;
}

/* ANALYZE TABLE (write) or MariaDB's ANALYZE stmt (runs stmt: its token). */
static bool parse_analyze(struct ps *s)
{
	adv(s);
	if (kw_is(s, KW_TABLE) || kw_is(s, KW_NO_WRITE_TO_BINLOG) || kw_is(s, KW_LOCAL)) {
		s->flags |= CLS_F_IMPLICIT_COMMIT;
		set_token(s, CLS_WRITE, CLS_R_ADMIN);
		scan_body(s, M_NONE, false);
		return false;
	}
	skip_format(s);
	if (!is_query_start(s)) {
		set_token(s, CLS_WRITE, CLS_R_NOT_UNDERSTOOD);
		scan_body(s, M_NONE, false);
		return false;
	}
	s->explain = true;
	return true;
}

static void parse_show(struct ps *s)
{
	adv(s);
	set_token(s, CLS_READ, CLS_R_SHOW);
	if (kw_is(s, KW_WARNINGS) || kw_is(s, KW_ERRORS)) {
		s->flags |= CLS_F_PREV_STATE;
	} else if (kw_is(s, KW_COUNT)) { /* SHOW COUNT(*) WARNINGS|ERRORS */
		s->flags |= CLS_F_PREV_STATE;
	} else if (kw_is(s, KW_MASTER) || kw_is(s, KW_BINARY) || kw_is(s, KW_BINLOG)) {
		/* the primary's binary log position is what is asked for */
		set_token(s, CLS_WRITE, CLS_R_ADMIN);
	}
	scan_body(s, M_NONE, false);
}

static void parse_get(struct ps *s)
{
	adv(s);
	if (kw_is(s, KW_CURRENT) || kw_is(s, KW_STACKED))
		adv(s);
	if (kw_is(s, KW_DIAGNOSTICS)) {
		s->flags |= CLS_F_PREV_STATE;
		set_token(s, CLS_READ, CLS_R_SHOW);
	} else {
		set_token(s, CLS_WRITE, CLS_R_NOT_UNDERSTOOD);
	}
	scan_body(s, M_NONE, false);
}

/* CREATE/ALTER/DROP/RENAME/TRUNCATE/GRANT/REVOKE. */
static void parse_ddl(struct ps *s)
{
	uint16_t verb = s->t->kw;
	bool temp = false;

	set_token(s, CLS_WRITE, CLS_R_DDL);
	adv(s);
	if (verb == KW_CREATE && kw_is(s, KW_OR)) {
		adv(s);
		if (kw_is(s, KW_REPLACE))
			adv(s);
	}
	if ((verb == KW_CREATE || verb == KW_DROP) && kw_is(s, KW_TEMPORARY))
		temp = true;
	if (temp)
		s->flags |= CLS_F_TEMP_TABLE;
	else
		s->flags |= CLS_F_IMPLICIT_COMMIT;
	if (verb == KW_CREATE) {
		/* CREATE [DEFINER=..] [AGGREGATE] PROCEDURE|FUNCTION|TRIGGER|EVENT:
		 * the body may hold ";" and belongs to this statement. */
		for (int i = 0; i < 12 && !at_end(s) && s->t->type != T_LP; i++, adv(s)) {
			if (kw_is(s, KW_PROCEDURE) || kw_is(s, KW_FUNCTION) ||
			    kw_is(s, KW_TRIGGER) || kw_is(s, KW_EVENT)) {
				scan_all(s);
				return;
			}
		}
	}
	scan_body(s, M_NONE, false);
}

/* After FLUSH [LOCAL | NO_WRITE_TO_BINLOG] (s->t is the word after FLUSH):
 * STATUS starts the session's status counters again on the connection it
 * runs on, and a later SHOW STATUS of the session reads them there. */
static void flush_status(struct ps *s)
{
	const uint8_t *w = s->lx.base + s->t->off;

	if (s->t->type == T_WORD &&
	    (name_is(w, s->t->len, "local") || name_is(w, s->t->len, "no_write_to_binlog"))) {
		adv(s);
		w = s->lx.base + s->t->off;
	}
	if (s->t->type == T_WORD && name_is(w, s->t->len, "status"))
		s->flags |= CLS_F_SESSION_STATUS;
}

static void parse_admin(struct ps *s)
{
	bool flush = kw_is(s, KW_FLUSH);

	switch (s->t->kw) {
	case KW_LOCK:
	case KW_OPTIMIZE:
	case KW_REPAIR:
	case KW_FLUSH:
	case KW_CHECK:
	case KW_CACHE:
	case KW_LOAD:
		s->flags |= CLS_F_IMPLICIT_COMMIT;
		break;
	case KW_PREPARE:
		s->flags |= CLS_F_UNREPLAYABLE;
		break;
	}
	set_token(s, CLS_WRITE, CLS_R_ADMIN);
	adv(s);
	if (flush)
		flush_status(s);
	scan_body(s, M_NONE, false);
}

/* SET STATEMENT a=1[, ...] FOR stmt: returns true with stmt at s->t-> */
static bool skip_set_statement(struct ps *s)
{
	int depth = 0;

	for (adv(s); !at_end(s); adv(s)) {
		if (s->t->type == T_LP)
			depth++;
		else if (s->t->type == T_RP && depth > 0)
			depth--;
		else if (depth == 0 && kw_is(s, KW_FOR)) {
			adv(s);
			return true;
		}
	}
	return false;
}

/* The value of SET autocommit = v. */
static void autocommit_value(struct ps *s)
{
	const uint8_t *v = s->lx.base + s->t->off;
	size_t n = s->t->len;

	if (s->t->type == T_NUM && n == 1 && (*v == '0' || *v == '1'))
		s->flags |= *v == '0' ? CLS_F_AUTOCOMMIT_OFF : CLS_F_AUTOCOMMIT_ON;
	else if (s->t->type == T_WORD && (name_is(v, n, "off") || name_is(v, n, "false")))
		s->flags |= CLS_F_AUTOCOMMIT_OFF;
	else if (s->t->type == T_WORD && (name_is(v, n, "on") || name_is(v, n, "true")))
		s->flags |= CLS_F_AUTOCOMMIT_ON;
	else
		s->flags |= CLS_F_UNREPLAYABLE; /* an expression: cannot track */
}

/*
 * Session variables whose effect only the connection they were set on gives,
 * however the history replays them: what a CREATE TABLE without ENGINE makes
 * (the binary log carries the statement, not the variable, so a replica
 * makes the table with its own default engine), what a session's writes
 * leave on the replicas (sql_log_bin = 0: nothing), and what `WHERE
 * auto_increment_column IS NULL` reads (sql_auto_is_null: the connection's
 * LAST_INSERT_ID()). A SET of one is UNREPLAYABLE: the session stays on the
 * writer, where its tables, writes and inserts are.
 */
static bool writer_only_var(const uint8_t *n, size_t len)
{
	static const char *const names[] = {
	    "default_storage_engine", "storage_engine", "default_tmp_storage_engine",
	    "enforce_storage_engine", "sql_log_bin",    "sql_auto_is_null",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (name_is(n, len, names[i]))
			return true;
	return false;
}

/* One "target = value" of a SET list; returns false when not understood. */
static bool parse_set_item(struct ps *s)
{
	bool global = false, autocommit = false, writer_only = false;
	unsigned calls;

	if (kw_is(s, KW_GLOBAL) || kw_is(s, KW_PERSIST) || kw_is(s, KW_PERSIST_ONLY)) {
		global = true;
		adv(s);
	} else if (kw_is(s, KW_SESSION) || kw_is(s, KW_LOCAL)) {
		adv(s);
	}
	if (kw_is(s, KW_TRANSACTION)) {
		s->flags |= CLS_F_SET_TRANSACTION;
		if (global)
			force_write(s, CLS_R_SET_GLOBAL);
		scan_body(s, M_NONE, true);
		return true;
	}
	if (kw_is(s, KW_NAMES) || kw_is(s, KW_CHARSET) || kw_is(s, KW_CHARACTER)) {
		scan_body(s, M_CALLS, true);
		return true;
	}
	if (s->t->type == T_VAR) {
		s->flags |= CLS_F_USER_VAR_WRITE;
	} else if (s->t->type == T_SYSVAR) {
		const uint8_t *n;
		size_t len;
		bool g;

		sysvar_name(s, s->t, &n, &len, &g);
		global |= g;
		autocommit = name_is(n, len, "autocommit");
		writer_only = writer_only_var(n, len);
	} else if (is_name(s->t)) {
		autocommit = name_is(s->lx.base + s->t->off, s->t->len, "autocommit");
		writer_only = writer_only_var(s->lx.base + s->t->off, s->t->len);
	} else {
		return false;
	}
	adv(s);
	if (s->t->type == T_DOT) { /* SET [SESSION] component.var */
		adv(s);
		adv(s);
	}
	if (s->t->type != T_EQ && s->t->type != T_ASSIGN)
		return false;
	adv(s);
	if (global)
		force_write(s, CLS_R_SET_GLOBAL);
	if (autocommit)
		autocommit_value(s);
	if (writer_only && !global)
		s->flags |= CLS_F_UNREPLAYABLE;
	calls = s->calls;
	scan_body(s, M_CALLS | M_QUERY, true);
	if (s->calls != calls) /* a function or subquery: may differ per backend */
		s->flags |= CLS_F_UNREPLAYABLE;
	return true;
}

/* SET: returns true when a statement to classify follows (SET STATEMENT). */
static bool parse_set(struct ps *s)
{
	adv(s);
	set_token(s, CLS_SESSION, CLS_R_SET);
	if (kw_is(s, KW_STATEMENT)) {
		if (skip_set_statement(s))
			return true;
		set_token(s, CLS_WRITE, CLS_R_NOT_UNDERSTOOD);
		return false;
	}
	if (kw_is(s, KW_PASSWORD) || kw_is(s, KW_DEFAULT)) { /* SET PASSWORD, SET DEFAULT ROLE */
		set_token(s, CLS_WRITE, CLS_R_SET_GLOBAL);
		scan_body(s, M_NONE, false);
		return false;
	}
	if (kw_is(s, KW_ROLE)) {
		scan_body(s, M_NONE, false);
		return false;
	}
	for (;;) {
		if (!parse_set_item(s)) {
			force_write(s, CLS_R_NOT_UNDERSTOOD);
			scan_body(s, M_NONE, false);
			return false;
		}
		if (s->t->type != T_COMMA)
			break;
		adv(s);
	}
	/* a function with side effects in a value: the write wins over session,
	 * and such a SET cannot be replayed either */
	if (s->wr)
		s->tok = CLS_WRITE;
	expect_end(s);
	return false;
}

static void reset_stmt(struct ps *s)
{
	s->flags = 0;
	s->tok = CLS_READ;
	s->rd_reason = CLS_R_SELECT;
	s->wr_reason = CLS_R_NONE;
	s->wr = s->wr_other = s->explain = s->into = s->in_with = false;
	s->sel_opt = SO_NONE;
	s->pend = P_NONE;
	s->depth = s->with_depth = s->base_depth = 0;
	s->calls = 0;
}

/* Parses one statement starting at s->t; stops at its ";" or the end. */
static void parse_stmt(struct ps *s)
{
	reset_stmt(s);
	for (;;) {
		while (s->t->type == T_LP) {
			s->depth++;
			adv(s);
		}
		if (at_end(s)) {
			if (s->depth || s->explain)
				set_token(s, CLS_WRITE, CLS_R_NOT_UNDERSTOOD);
			return;
		}
		if (s->t->type != T_WORD) {
			set_token(s, CLS_WRITE, CLS_R_NOT_UNDERSTOOD);
			scan_body(s, M_NONE, false);
			return;
		}
		switch (s->t->kw) {
		case KW_WITH:
		case KW_SELECT:
		case KW_VALUES:
		case KW_TABLE:
			set_token(s, CLS_READ, CLS_R_SELECT);
			if (s->t->kw == KW_SELECT)
				s->sel_opt = SO_SELECT;
			scan_body(s, M_CALLS | M_QUERY, false);
			return;
		case KW_DO:
			set_token(s, CLS_READ, CLS_R_SELECT);
			adv(s);
			scan_body(s, M_CALLS | M_QUERY, false);
			return;
		case KW_INSERT:
		case KW_UPDATE:
		case KW_DELETE:
		case KW_REPLACE:
			set_token(s, CLS_WRITE, CLS_R_DML);
			scan_body(s, M_CALLS, false);
			return;
		case KW_EXPLAIN:
		case KW_DESCRIBE:
		case KW_DESC:
			if (!parse_explain(s))
				return;
			continue;
		case KW_ANALYZE:
			if (!parse_analyze(s))
				return;
			continue;
		case KW_SET:
			if (!parse_set(s))
				return;
			continue;
		case KW_SHOW:
			parse_show(s);
			return;
		case KW_HELP:
			set_token(s, CLS_READ, CLS_R_SHOW);
			scan_body(s, M_NONE, false);
			return;
		case KW_USE:
			parse_use(s);
			return;
		case KW_BEGIN:
			parse_begin(s);
			return;
		case KW_START:
			parse_start(s);
			return;
		case KW_COMMIT:
		case KW_ROLLBACK:
			parse_end(s, s->t->kw == KW_ROLLBACK);
			return;
		case KW_SAVEPOINT:
		case KW_RELEASE:
			set_token(s, CLS_WRITE, CLS_R_TRANSACTION);
			scan_body(s, M_NONE, false);
			return;
		case KW_CALL:
			parse_call(s);
			return;
		case KW_GET:
			parse_get(s);
			return;
		case KW_CREATE:
		case KW_ALTER:
		case KW_DROP:
		case KW_RENAME:
		case KW_TRUNCATE:
		case KW_GRANT:
		case KW_REVOKE:
			parse_ddl(s);
			return;
		case KW_LOAD:
		case KW_LOCK:
		case KW_UNLOCK:
		case KW_XA:
		case KW_HANDLER:
		case KW_FLUSH:
		case KW_KILL:
		case KW_RESET:
		case KW_PURGE:
		case KW_CHANGE:
		case KW_STOP:
		case KW_INSTALL:
		case KW_UNINSTALL:
		case KW_OPTIMIZE:
		case KW_REPAIR:
		case KW_CHECK:
		case KW_CHECKSUM:
		case KW_CACHE:
		case KW_BINLOG:
		case KW_SIGNAL:
		case KW_RESIGNAL:
		case KW_PREPARE:
		case KW_EXECUTE:
		case KW_DEALLOCATE:
		case KW_SHUTDOWN:
		case KW_BACKUP:
			parse_admin(s);
			return;
		default:
			set_token(s, CLS_WRITE, CLS_R_NOT_UNDERSTOOD);
			scan_body(s, M_NONE, false);
			return;
		}
	}
}

static void finish_stmt(struct ps *s, enum cls_token *tok, enum cls_reason *reason)
{
	if (s->wr) {
		*tok = CLS_WRITE;
		*reason = s->wr_reason;
		if (!s->wr_other && s->tok == CLS_READ && !s->explain)
			*reason = CLS_R_PREV_RESULT;
		return;
	}
	*tok = s->tok;
	*reason = s->rd_reason;
	if (s->explain && *tok == CLS_READ)
		*reason = CLS_R_EXPLAIN;
}

/* ---- fast path ------------------------------------------------------- */

/*
 * Most statements of an OLTP application are plain SELECT/INSERT/UPDATE/
 * DELETE with nothing in them that the grammar above would act on. The fast
 * path checks that without building tokens, looking words up only where it
 * must (a word before "("), and screens the other words by their first
 * letters and length only (see fast_body_avx2 for the main variant; the
 * SSE2 and byte-loop variants below are the fallback). It gives up (returns
 * false) at anything it does not handle itself (comments, variables, ";",
 * qualified or quoted calls, a word that might be FOR/INTO/LOCK/...), and the
 * full parser decides. When it does decide, the result is the one the full
 * parser gives: the unit tests and the fuzzer compare both.
 */
#define SEL_VEC_MAX 8192 /* longest SELECT for fast_body_select_vec */

enum fc { F_OTHER = 0, F_SPACE, F_WORD, F_QUOTE, F_LP, F_DOT, F_DASH, F_SLASH, F_BAIL };

static const uint8_t fclass[256] = {
    [0] = F_BAIL,
    ['\t'] = F_SPACE,
    ['\n'] = F_SPACE,
    ['\v'] = F_SPACE,
    ['\f'] = F_SPACE,
    ['\r'] = F_SPACE,
    [' '] = F_SPACE,
    ['0' ... '9'] = F_WORD,
    ['A' ... 'Z'] = F_WORD,
    ['a' ... 'z'] = F_WORD,
    ['_'] = F_WORD,
    ['$'] = F_WORD,
    [0x80 ... 0xff] = F_WORD,
    ['\''] = F_QUOTE,
    ['"'] = F_QUOTE,
    ['`'] = F_QUOTE,
    ['('] = F_LP,
    ['.'] = F_DOT,
    ['-'] = F_DASH,
    ['/'] = F_SLASH,
    ['@'] = F_BAIL,
    [';'] = F_BAIL,
    ['#'] = F_BAIL,
};

/* Could this word be one that acts inside a SELECT without a "(": FOR INTO
 * LOCK SHARE UPDATE DELETE INSERT REPLACE? By length and first letter. */
static inline bool fast_sensitive(const uint8_t *w, size_t n)
{
	static const uint32_t first[8] = {
	    [3] = 1u << ('f' - 'a'),
	    [4] = 1u << ('i' - 'a') | 1u << ('l' - 'a'),
	    [5] = 1u << ('s' - 'a'),
	    [6] = 1u << ('u' - 'a') | 1u << ('d' - 'a') | 1u << ('i' - 'a'),
	    [7] = 1u << ('r' - 'a'),
	};
	unsigned c = (unsigned)(w[0] | 0x20) - 'a';

	return n < 8 && c < 26 && (first[n] >> c) & 1;
}

enum { L_OTHER = 0, L_WORD, L_QUOTED };

/* A word before "(" in the fast path: a builtin free of side effects, a
 * keyword that is no call, or a name in table context (INTO t (a)). */
static bool fast_call_ok(const uint8_t *w1, size_t l1, const uint8_t *w0, size_t l0,
                         const uint8_t *end)
{
	const struct word *w = words_find(w1, l1, (size_t)(end - w1)), *t;

	if (w && w->fn)
		return w->fn == FN_P;
	if (w && (w->kwf & KWF_N))
		return true;
	t = w0 ? words_find(w0, l0, (size_t)(end - w0)) : NULL;
	return t && (t->kwf & KWF_T);
}

static bool fast_body_scalar(const uint8_t *w1, size_t l1, const uint8_t *p, const uint8_t *end,
                             bool query);
static bool fast_body_dml(const uint8_t *start, const uint8_t *p, const uint8_t *end);
static bool fast_body_select_vec(const uint8_t *s, size_t len, size_t pos);

#define K8(a, b, c, d, e, f, g, h)                                                                 \
	((uint64_t)(a) | (uint64_t)(b) << 8 | (uint64_t)(c) << 16 | (uint64_t)(d) << 24 |          \
	 (uint64_t)(e) << 32 | (uint64_t)(f) << 40 | (uint64_t)(g) << 48 | (uint64_t)(h) << 56)

/*
 * The first word, when the buffer starts with it (no leading space or
 * comment): one 8-byte load folded by OR 0x20 and compared with the verbs
 * of an OLTP mix, instead of a byte loop and a hash lookup. OR 0x20 maps
 * only 'X' and 'x' to 'x' for a letter x, so the compare is exact for the
 * letters; the byte after the word must be no identifier byte. Returns the
 * keyword (length in *l1), or 0: the generic head decides.
 */
static inline unsigned fast_head(const uint8_t *p, size_t n, size_t *l1)
{
	uint64_t k;
	uint32_t k4;

	if (n < 8) {
		if (n != 5 && n != 6)
			return 0;
		memcpy(&k4, p, 4);
		k = k4 | (uint64_t)p[4] << 32 | (n == 6 ? (uint64_t)p[5] << 40 : 0);
		k |= FOLD >> (64 - 8 * n);
		*l1 = n;
		if (k == K8('b', 'e', 'g', 'i', 'n', 0, 0, 0))
			return KW_BEGIN;
		if (k == K8('c', 'o', 'm', 'm', 'i', 't', 0, 0))
			return KW_COMMIT;
		return 0;
	}
	memcpy(&k, p, 8);
	k |= FOLD;
	*l1 = 6;
	if (!wordc[p[6]]) {
		switch (k & 0xffffffffffffull) {
		case K8('s', 'e', 'l', 'e', 'c', 't', 0, 0):
			return KW_SELECT;
		case K8('i', 'n', 's', 'e', 'r', 't', 0, 0):
			return KW_INSERT;
		case K8('u', 'p', 'd', 'a', 't', 'e', 0, 0):
			return KW_UPDATE;
		case K8('d', 'e', 'l', 'e', 't', 'e', 0, 0):
			return KW_DELETE;
		case K8('c', 'o', 'm', 'm', 'i', 't', 0, 0):
			return KW_COMMIT;
		}
		return 0;
	}
	*l1 = 7;
	if (!wordc[p[7]] && (k & 0xffffffffffffffull) == K8('r', 'e', 'p', 'l', 'a', 'c', 'e', 0))
		return KW_REPLACE;
	*l1 = 8;
	if ((n == 8 || !wordc[p[8]]) && k == K8('r', 'o', 'l', 'l', 'b', 'a', 'c', 'k'))
		return KW_ROLLBACK;
	return 0;
}

static bool dml_paren_ok(const uint8_t *start, const uint8_t *lp, const uint8_t *end);

#if HAVE_NIBBLE_SCAN
/*
 * The body scan of the fast path with SSSE3 (runtime check): each byte is
 * classified by two PSHUFB lookups, one on its low and one on its high
 * nibble, AND-ed: a bit is set when the byte is in that bit's rectangle of
 * the nibble plane. 16 bytes cost about a dozen instructions for all the
 * classes at once; 64-byte chunks give 64-bit masks. Only events and the
 * starts of words whose first letter could begin a sensitive word
 * (fast_sensitive: d f i l r s u) are visited; every other byte is skipped
 * without a branch. Decides exactly as fast_body_select_vec (query) or
 * fast_body_dml.
 *
 * Table A: 0 [A-Oa-o]  1 [P-Zp-z]  2 [0-9]  3 0x80-0xff  4 '_'  5 '$'
 *          6 [DFILdfil]  7 [RSUrsu]           (identifier byte: bits 0-5)
 * Table B: 0 " # ' ( - /  1 .  2 ;  3 NUL @ `           (events)
 */
#define NB_W1   0x01
#define NB_W2   0x02
#define NB_DIG  0x04
#define NB_HIGH 0x08
#define NB_UND  0x10
#define NB_DOL  0x20
#define NB_SA   0x40
#define NB_SB   0x80

static const uint8_t nb_alo[16] = {
    NB_W2 | NB_DIG | NB_HIGH,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH | NB_SB,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH | NB_SB,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH | NB_DOL | NB_SA,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH | NB_SB,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH | NB_SA,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH | NB_SA,
    NB_W1 | NB_W2 | NB_HIGH,
    NB_W1 | NB_HIGH,
    NB_W1 | NB_HIGH | NB_SA,
    NB_W1 | NB_HIGH,
    NB_W1 | NB_HIGH,
    NB_W1 | NB_HIGH | NB_UND,
};
static const uint8_t nb_ahi[16] = {
    [2] = NB_DOL,        [3] = NB_DIG,        [4] = NB_W1 | NB_SA,  [5] = NB_W2 | NB_UND | NB_SB,
    [6] = NB_W1 | NB_SA, [7] = NB_W2 | NB_SB, [8 ... 15] = NB_HIGH,
};
static const uint8_t nb_blo[16] = {
    [0] = 8, [2] = 1, [3] = 1, [7] = 1, [8] = 1, [0xb] = 4, [0xd] = 1, [0xe] = 2, [0xf] = 1};
static const uint8_t nb_bhi[16] = {[0] = 8, [2] = 1 | 2, [3] = 4, [4] = 8, [6] = 8};

/* A word starting at s[c] whose first letter passed the nibble screen:
 * could it be one that acts in a SELECT without "(" (FOR INTO LOCK SHARE
 * UPDATE DELETE INSERT REPLACE)? The second letter rules out most words
 * (FROM, id, sbtest1) before the length is counted; the rest is
 * fast_sensitive's screen by length and first letter. */
static inline bool nb_sensitive(const uint8_t *s, size_t len, size_t c)
{
	static const uint8_t second[32] = {
	    ['d' & 31] = 'e', ['f' & 31] = 'o', ['i' & 31] = 'n', ['l' & 31] = 'o',
	    ['r' & 31] = 'e', ['s' & 31] = 'h', ['u' & 31] = 'p',
	};
	size_t n = 1;

	if (c + 1 >= len || (s[c + 1] | 0x20) != second[s[c] & 31])
		return false;
	while (n < 8 && c + n < len && wordc[s[c + n]])
		n++;
	return fast_sensitive(s + c, n);
}

/* The closing quote of a string or quoted name opened at p[-1], as
 * skip_quoted (a backslash escapes the next byte except in `names`, a doubled
 * quote is one), 16 bytes a step; the last step is loaded ending at s + len
 * (len >= 16) and the bytes before p masked off, instead of a byte loop.
 * Returns the offset after the closing quote, or 0 when unterminated. */
__attribute__((target("sse2"))) static size_t nb_skip_quoted16(const uint8_t *s, size_t len,
                                                               size_t i, uint8_t q)
{
	const __m128i vq = _mm_set1_epi8((char)q);
	const __m128i vb = _mm_set1_epi8(q == '`' ? (char)q : '\\');

	for (;;) {
		unsigned m = 0;
		size_t at;

		while (i + 16 <= len) {
			__m128i v = _mm_loadu_si128((const __m128i *)(s + i));

			m = (unsigned)_mm_movemask_epi8(
			    _mm_or_si128(_mm_cmpeq_epi8(v, vq), _mm_cmpeq_epi8(v, vb)));
			if (m)
				break;
			i += 16;
		}
		at = i;
		if (!m) { /* fewer than 16 bytes left */
			__m128i v;

			if (i >= len)
				return 0;
			at = len - 16;
			v = _mm_loadu_si128((const __m128i *)(s + at));
			m = (unsigned)_mm_movemask_epi8(
			    _mm_or_si128(_mm_cmpeq_epi8(v, vq), _mm_cmpeq_epi8(v, vb)));
			m &= ~0u << (i - at);
			if (!m)
				return 0;
		}
		i = at + (size_t)__builtin_ctz(m);
		if (s[i] != q) { /* backslash: escapes the next byte */
			i += 2;
			continue;
		}
		if (i + 1 < len && s[i + 1] == q) { /* doubled quote */
			i += 2;
			continue;
		}
		return i + 1;
	}
}

__attribute__((target("avx2"))) static size_t nb_skip_quoted32(const uint8_t *s, size_t len,
                                                               size_t i, uint8_t q)
{
	const __m256i vq = _mm256_set1_epi8((char)q);
	const __m256i vb = _mm256_set1_epi8(q == '`' ? (char)q : '\\');

	for (;;) {
		unsigned m = 0; /* 32 bits */
		size_t at;

		while (i + 32 <= len) {
			__m256i v = _mm256_loadu_si256((const __m256i *)(s + i));

			m = (unsigned)_mm256_movemask_epi8(
			    _mm256_or_si256(_mm256_cmpeq_epi8(v, vq), _mm256_cmpeq_epi8(v, vb)));
			if (m)
				break;
			i += 32;
		}
		at = i;
		if (!m) { /* fewer than 16 bytes left */
			__m256i v;

			if (i >= len)
				return 0;
			at = len - 32;
			v = _mm256_loadu_si256((const __m256i *)(s + at));
			m = (unsigned)_mm256_movemask_epi8(
			    _mm256_or_si256(_mm256_cmpeq_epi8(v, vq), _mm256_cmpeq_epi8(v, vb)));
			m &= ~0u << (i - at); /* i - at < 32 */
			if (!m)
				return 0;
		}
		i = at + (size_t)__builtin_ctz(m);
		if (s[i] != q) { /* backslash: escapes the next byte */
			i += 2;
			continue;
		}
		if (i + 1 < len && s[i + 1] == q) { /* doubled quote */
			i += 2;
			continue;
		}
		return i + 1;
	}
}

/* One block of the body scan: events (quotes, "(", "-", "/" and the bytes
 * that give up; "." too in a query) and, in a query, the starts of words
 * whose first letter passed the screen, as bit masks of the block at s + at.
 * The tables are broadcast to every 16-byte lane. */
struct nbm {
	uint64_t ev, cand;
};

#define NB_CLASSIFY(V, SET1, LOADT, AND, SRLI, SHUF, CMPEQ, ADD, MOVMSK, ZERO, FULL)               \
	do {                                                                                       \
		const V nib = SET1(0x0f), zero = ZERO();                                           \
		V lo = AND(v, nib), hi = AND(SRLI(v, 4), nib);                                     \
		V b = AND(SHUF(LOADT(nb_blo), lo), SHUF(LOADT(nb_bhi), hi));                       \
                                                                                                   \
		b = AND(b, SET1(query ? (char)0xff : (char)0xfd)); /* DML: "." is no event */      \
		m->ev = ~(uint64_t)(uint32_t)MOVMSK(CMPEQ(b, zero)) & (FULL);                      \
		m->cand = 0;                                                                       \
		if (query) {                                                                       \
			V a = AND(SHUF(LOADT(nb_alo), lo), SHUF(LOADT(nb_ahi), hi));               \
			uint64_t w =                                                               \
			    ~(uint64_t)(uint32_t)MOVMSK(CMPEQ(AND(a, SET1(0x3f)), zero)) & (FULL); \
			uint64_t sens = (uint32_t)MOVMSK(a) | (uint32_t)MOVMSK(ADD(a, a));         \
                                                                                                   \
			m->cand = w & ~((w << 1) | (at && wordc[s[at - 1]])) & sens;               \
		}                                                                                  \
	} while (0)

#define NB_LOADT16(t) _mm_loadu_si128((const __m128i *)(t))
__attribute__((target("ssse3"), always_inline)) static inline void
nb_cls16(const uint8_t *s, size_t at, bool query, struct nbm *m)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(s + at));

	NB_CLASSIFY(__m128i, _mm_set1_epi8, NB_LOADT16, _mm_and_si128, _mm_srli_epi16,
	            _mm_shuffle_epi8, _mm_cmpeq_epi8, _mm_add_epi8, _mm_movemask_epi8,
	            _mm_setzero_si128, 0xffffull);
}

#define NB_LOADT32(t) _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(t)))
__attribute__((target("avx2"), always_inline)) static inline void
nb_cls32(const uint8_t *s, size_t at, bool query, struct nbm *m)
{
	__m256i v = _mm256_loadu_si256((const __m256i *)(s + at));

	NB_CLASSIFY(__m256i, _mm256_set1_epi8, NB_LOADT32, _mm256_and_si256, _mm256_srli_epi16,
	            _mm256_shuffle_epi8, _mm256_cmpeq_epi8, _mm256_add_epi8, _mm256_movemask_epi8,
	            _mm256_setzero_si256, 0xffffffffull);
}

/* s[0..len), len >= W, starts with the first word (pos bytes). Walks
 * W-byte blocks (the last one loaded ending at s + len, the bytes already
 * seen masked off): a block with no event and no candidate word start
 * costs its classification only. */
static inline __attribute__((always_inline)) bool
nb_body(const uint8_t *s, size_t len, size_t pos, bool query, unsigned W,
        void (*cls)(const uint8_t *, size_t, bool, struct nbm *))
{
	const uint8_t *end = s + len;

	while (pos < len) {
		size_t at = pos + W > len ? len - W : pos;
		uint64_t live = ~0ull << (pos - at); /* bytes not looked at yet */
		struct nbm m;

		cls(s, at, query, &m);
		for (;;) {
			unsigned e;
			uint64_t below;
			const uint8_t *p;

			m.ev &= live;
			e = m.ev ? (unsigned)__builtin_ctzll(m.ev) : W;
			below = m.cand & live & ((1ull << e) - 1);
			while (below) {
				if (nb_sensitive(s, len, at + (unsigned)__builtin_ctzll(below)))
					return false;
				below &= below - 1;
			}
			if (e == W) {
				pos = at + W;
				break;
			}
			p = s + at + e;
			switch (fclass[*p]) {
			case F_QUOTE: {
				size_t q = W == 32 ? nb_skip_quoted32(s, len, at + e + 1, *p)
				                   : nb_skip_quoted16(s, len, at + e + 1, *p);

				if (!q)
					return false;
				pos = q;
				break;
			}
			case F_LP:
				if (!dml_paren_ok(s, p, end))
					return false;
				pos = at + e + 1;
				break;
			case F_DASH:
				if (p + 1 < end && p[1] == '-')
					return false;
				pos = at + e + 1;
				break;
			case F_SLASH:
				if (p + 1 < end && p[1] == '*')
					return false;
				pos = at + e + 1;
				break;
			default: /* . @ ; # NUL */
				return false;
			}
			if (pos >= at + W)
				break;
			live = ~0ull << (pos - at);
		}
	}
	return true;
}

__attribute__((target("ssse3"))) static bool fast_body_ssse3(const uint8_t *s, size_t len,
                                                             size_t pos, bool query)
{
	return nb_body(s, len, pos, query, 16, nb_cls16);
}

__attribute__((target("avx2"))) static bool fast_body_avx2(const uint8_t *s, size_t len, size_t pos,
                                                           bool query)
{
	return nb_body(s, len, pos, query, 32, nb_cls32);
}

/* The widest scan this CPU has, found once; MYSTEER_CLASSIFY_SIMD=avx2,
 * ssse3 or sse2 caps it, so that the tests can run every variant on one
 * machine. */
enum { SIMD_UNKNOWN = 0, SIMD_SSE2, SIMD_SSSE3, SIMD_AVX2 };
static int simd_level_cached;

static int simd_detect(void)
{
	int l;
	const char *cap;

	__builtin_cpu_init();
	l = __builtin_cpu_supports("avx2")    ? SIMD_AVX2
	    : __builtin_cpu_supports("ssse3") ? SIMD_SSSE3
	                                      : SIMD_SSE2;
	cap = getenv("MYSTEER_CLASSIFY_SIMD");
	if (cap && !strcmp(cap, "sse2"))
		l = SIMD_SSE2;
	else if (cap && !strcmp(cap, "ssse3") && l > SIMD_SSSE3)
		l = SIMD_SSSE3;
	__atomic_store_n(&simd_level_cached, l, __ATOMIC_RELAXED);
	return l;
}

static inline int simd_level(void)
{
	int l = __atomic_load_n(&simd_level_cached, __ATOMIC_RELAXED);

	return __builtin_expect(l != SIMD_UNKNOWN, 1) ? l : simd_detect();
}
#endif

/* Could a select option start with c (the byte after SELECT and one space;
 * other spacing takes the long way)? */
static inline bool select_option_start(uint8_t c)
{
	uint8_t l = c | 0x20;

	return l == 's' || l == 'd' || l == 'a' || l == 'h' || fclass[c] == F_SPACE;
}

/* Whether SQL_CALC_FOUND_ROWS is among the select options at p (after the
 * leading SELECT): the parser then sets its flag. Words apart by spaces only,
 * as anything else makes the fast path give up or ends the options. */
static bool fast_calc_found_rows(const uint8_t *p, const uint8_t *end)
{
	for (;;) {
		const uint8_t *w;
		int o;

		while (p < end && fclass[*p] == F_SPACE)
			p++;
		for (w = p; p < end && wordc[*p];)
			p++;
		if (p == w)
			return false;
		o = select_option(w, (size_t)(p - w));
		if (o != 1)
			return o == 2;
	}
}

static bool fast_path(const uint8_t *p, const uint8_t *end, struct cls_result *out)
{
	const uint8_t *w1;
	size_t l1;
	const struct word *first;
	unsigned kw;
	bool query;

	kw = fast_head(p, (size_t)(end - p), &l1);
	if (kw) {
		w1 = p;
		p += l1;
	} else {
		while (p < end && fclass[*p] == F_SPACE)
			p++;
		if (p >= end || cclass[*p] != C_WORD)
			return false;
		w1 = p;
		while (p < end && wordc[*p])
			p++;
		l1 = (size_t)(p - w1);
		first = words_find(w1, l1, (size_t)(end - w1));
		if (!first)
			return false;
		kw = first->kw;
	}
	switch (kw) {
	case KW_BEGIN:
	case KW_COMMIT:
	case KW_ROLLBACK: /* alone: the transaction statements of every OLTP mix */
		while (p < end && fclass[*p] == F_SPACE)
			p++;
		if (p != end)
			return false;
		memset(out, 0, sizeof(*out));
		out->token = kw == KW_BEGIN ? CLS_BEGIN : CLS_END;
		out->reason = CLS_R_TRANSACTION;
		return true;
	case KW_SELECT:
		if (p + 1 < end && select_option_start(p[1]) && fast_calc_found_rows(p, end))
			return false;
		query = true;
		break;
	case KW_INSERT:
	case KW_UPDATE:
	case KW_DELETE:
	case KW_REPLACE:
		query = false;
		break;
	default:
		return false;
	}
#if HAVE_NIBBLE_SCAN
	if (end - w1 >= 32 && simd_level() >= SIMD_AVX2) {
		if (!fast_body_avx2(w1, (size_t)(end - w1), l1, query))
			return false;
	} else if (end - w1 >= 16 && simd_level() >= SIMD_SSSE3) {
		if (!fast_body_ssse3(w1, (size_t)(end - w1), l1, query))
			return false;
	} else
#endif
	    if (!query) {
		if (!fast_body_dml(w1, p, end))
			return false;
	}
#if defined(__SSE2__)
	else if (end - w1 >= 16 && end - w1 <= SEL_VEC_MAX) {
		if (!fast_body_select_vec(w1, (size_t)(end - w1), l1))
			return false;
	}
#endif
	else if (!fast_body_scalar(w1, l1, p, end, true)) {
		return false;
	}
	memset(out, 0, sizeof(*out));
	out->token = query ? CLS_READ : CLS_WRITE;
	out->reason = query ? CLS_R_SELECT : CLS_R_DML;
	return true;
}

/* Next byte a DML body must look at: quotes, "(", "-", "/" and the bytes
 * that make the fast path give up (@ ; # NUL). 16 bytes a step with SSE2. */
static inline const uint8_t *next_event(const uint8_t *p, const uint8_t *end)
{
#if defined(__SSE2__)
	while (end - p >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)p);
		__m128i t = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\'')),
		                         _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
		unsigned m;

		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('`')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('(')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('-')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('/')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('@')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8(';')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('#')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_setzero_si128()));
		m = (unsigned)_mm_movemask_epi8(t);
		if (m)
			return p + __builtin_ctz(m);
		p += 16;
	}
#endif
	while (p < end && fclass[*p] != F_QUOTE && fclass[*p] != F_LP && fclass[*p] != F_DASH &&
	       fclass[*p] != F_SLASH && fclass[*p] != F_BAIL)
		p++;
	return p;
}

/* "(" at lp in a DML body: looks back at the word before it (and the one
 * before that) with the rules of the scalar fast path. Each word is looked
 * back at by at most the two "(" after it: linear. */
static bool dml_paren_ok(const uint8_t *start, const uint8_t *lp, const uint8_t *end)
{
	const uint8_t *j = lp, *s1, *k, *s0;

	while (j > start && fclass[j[-1]] == F_SPACE)
		j--;
	if (j == start || fclass[j[-1]] == F_QUOTE)
		return j == start;
	if (!wordc[j[-1]])
		return true;
	for (s1 = j - 1; s1 > start && wordc[s1[-1]];)
		s1--;
	if (cclass[*s1] == C_DIGIT)
		return true;
	for (k = s1; k > start && fclass[k[-1]] == F_SPACE;)
		k--;
	if (k > start && k[-1] == '.')
		return false; /* db.fn( */
	if (k == start || !wordc[k[-1]])
		return fast_call_ok(s1, (size_t)(j - s1), NULL, 0, end);
	for (s0 = k - 1; s0 > start && wordc[s0[-1]];)
		s0--;
	if (s0 > start && s0[-1] == '.')
		return false; /* x.INTO or 1.INTO: not the keyword the parser sees */
	return fast_call_ok(s1, (size_t)(j - s1), s0, (size_t)(k - s0), end);
}

#if defined(__SSE2__)
/*
 * SELECT bodies up to SEL_VEC_MAX bytes: two bit masks of the statement
 * (identifier bytes, event bytes) are built 16 bytes a step; then words are
 * visited by their start bits and events one by one, without the branch a
 * byte loop mispredicts at the end of every word. Decides as
 * fast_body_scalar, except that any "." gives up (that needs more state).
 */
struct selmasks {
	union {
		uint64_t q[SEL_VEC_MAX / 64];
		uint16_t h[SEL_VEC_MAX / 16];
	} w, e;
	size_t nq;
};

static inline __m128i word_bytes(__m128i v)
{
	__m128i l = _mm_or_si128(v, _mm_set1_epi8(0x20));
	__m128i t = _mm_and_si128(_mm_cmpgt_epi8(l, _mm_set1_epi8('a' - 1)),
	                          _mm_cmplt_epi8(l, _mm_set1_epi8('z' + 1)));

	t = _mm_or_si128(t, _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
	                                  _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1))));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('_')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('$')));
	return _mm_or_si128(t, _mm_cmplt_epi8(v, _mm_setzero_si128()));
}

/* quotes, ( - / . and the give-up bytes @ ; # NUL */
static inline __m128i event_bytes(__m128i v)
{
	__m128i t = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\'')),
	                         _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));

	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('`')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('(')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('-')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('/')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('.')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('@')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8(';')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('#')));
	return _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_setzero_si128()));
}

/* s[0..len), 16 <= len <= SEL_VEC_MAX. The last block is loaded ending at
 * s + len (overlapping the one before) and shifted: no read past the end. */
static void sel_masks(const uint8_t *s, size_t len, struct selmasks *m)
{
	size_t nb = len / 16, rem = len % 16;

	m->nq = (len + 63) / 64;
	m->w.q[m->nq - 1] = m->e.q[m->nq - 1] = 0;
	for (size_t b = 0; b < nb; b++) {
		__m128i v = _mm_loadu_si128((const __m128i *)(s + 16 * b));

		m->w.h[b] = (uint16_t)_mm_movemask_epi8(word_bytes(v));
		m->e.h[b] = (uint16_t)_mm_movemask_epi8(event_bytes(v));
	}
	if (rem) {
		__m128i v = _mm_loadu_si128((const __m128i *)(s + len - 16));

		m->w.h[nb] = (uint16_t)((unsigned)_mm_movemask_epi8(word_bytes(v)) >> (16 - rem));
		m->e.h[nb] = (uint16_t)((unsigned)_mm_movemask_epi8(event_bytes(v)) >> (16 - rem));
	}
}

/* First set bit of a[] at or after from, or limit. */
static inline size_t sel_next(const uint64_t *a, size_t nq, size_t from, size_t limit)
{
	size_t k = from >> 6;
	uint64_t x;

	if (k >= nq)
		return limit;
	x = a[k] & (~0ull << (from & 63));
	while (!x) {
		if (++k >= nq)
			return limit;
		x = a[k];
	}
	k = (k << 6) + (size_t)__builtin_ctzll(x);
	return k < limit ? k : limit;
}

/* Checks the words starting in [from, to): could one be sensitive? */
static inline bool sel_words_ok(const uint8_t *s, const struct selmasks *m, size_t from, size_t to)
{
	for (size_t k = from >> 6; k < m->nq && (k << 6) < to; k++) {
		uint64_t w = m->w.q[k];
		uint64_t starts = w & ~((w << 1) | (k ? m->w.q[k - 1] >> 63 : 0));

		if ((k << 6) < from)
			starts &= ~0ull << (from & 63);
		while (starts) {
			size_t c = (k << 6) + (size_t)__builtin_ctzll(starts), n;
			uint64_t rest;

			if (c >= to)
				return true;
			starts &= starts - 1;
			/* length: the run of word bits from c (at most 7 matter) */
			rest = ~w >> (c & 63);
			n = rest ? (size_t)__builtin_ctzll(rest) : 64 - (c & 63);
			if ((c & 63) + n == 64 && k + 1 < m->nq)
				n += (size_t)__builtin_ctzll(~m->w.q[k + 1] | (1ull << 63));
			if (fast_sensitive(s + c, n))
				return false;
		}
	}
	return true;
}

static bool fast_body_select_vec(const uint8_t *s, size_t len, size_t pos)
{
	struct selmasks m;
	const uint8_t *end = s + len;

	sel_masks(s, len, &m);
	for (;;) {
		size_t e = sel_next(m.e.q, m.nq, pos, len);

		if (!sel_words_ok(s, &m, pos, e))
			return false;
		if (e >= len)
			return true;
		switch (fclass[s[e]]) {
		case F_QUOTE: {
			struct lx lx = {.end = end};

			pos = (size_t)(skip_quoted(&lx, s + e + 1, s[e]) - s);
			if (lx.flags)
				return false;
			continue;
		}
		case F_LP:
			if (!dml_paren_ok(s, s + e, end))
				return false;
			break;
		case F_DASH:
			if (e + 1 < len && s[e + 1] == '-')
				return false;
			break;
		case F_SLASH:
			if (e + 1 < len && s[e + 1] == '*')
				return false;
			break;
		default: /* . @ ; # NUL */
			return false;
		}
		pos = e + 1;
	}
}
#endif

/* INSERT/UPDATE/DELETE/REPLACE: the token is write already, only flags are
 * at stake, and those need no words except the one before "(". */
static bool fast_body_dml(const uint8_t *start, const uint8_t *p, const uint8_t *end)
{
	for (;;) {
		p = next_event(p, end);
		if (p >= end)
			return true;
		switch (fclass[*p]) {
		case F_QUOTE: {
			struct lx lx = {.end = end};

			p = skip_quoted(&lx, p + 1, *p);
			if (lx.flags)
				return false;
			continue;
		}
		case F_LP:
			if (!dml_paren_ok(start, p, end))
				return false;
			break;
		case F_DASH:
			if (p + 1 < end && p[1] == '-')
				return false;
			break;
		case F_SLASH:
			if (p + 1 < end && p[1] == '*')
				return false;
			break;
		default:
			return false;
		}
		p++;
	}
}

/* The fast path's body scan, one byte at a time (statements too long for
 * the masks, or no SSE2). p is after the first word. */
static bool fast_body_scalar(const uint8_t *w1, size_t l1, const uint8_t *p, const uint8_t *end,
                             bool query)
{
	const uint8_t *w0 = NULL;
	size_t l0 = 0;
	bool dotted = false;
	int last = L_WORD;

	while (p < end) {
		switch (fclass[*p]) {
		case F_SPACE:
			p++;
			continue;
		case F_WORD: {
			const uint8_t *s = p;

			while (p < end && wordc[*p])
				p++;
			if (query && fast_sensitive(s, (size_t)(p - s)))
				return false;
			if (dotted)
				return false; /* x.y: a qualified name, maybe db.fn( */
			w0 = last == L_WORD ? w1 : NULL;
			l0 = l1;
			w1 = s;
			l1 = (size_t)(p - s);
			last = L_WORD;
			continue;
		}
		case F_QUOTE: {
			struct lx lx = {.end = end};

			p = skip_quoted(&lx, p + 1, *p);
			if (lx.flags)
				return false;
			last = L_QUOTED;
			dotted = false;
			continue;
		}
		case F_LP:
			if (last == L_QUOTED)
				return false; /* `fn`( */
			if (last == L_WORD && cclass[*w1] != C_DIGIT &&
			    !fast_call_ok(w1, l1, w0, l0, end))
				return false;
			break;
		case F_DOT:
			if (last == L_WORD || last == L_QUOTED)
				dotted = true;
			last = L_OTHER;
			p++;
			continue;
		case F_DASH:
			if (p + 1 < end && p[1] == '-')
				return false;
			break;
		case F_SLASH:
			if (p + 1 < end && p[1] == '*')
				return false;
			break;
		case F_BAIL:
			return false;
		}
		last = L_OTHER;
		dotted = false;
		p++;
	}
	return true;
}

void cls_classify(const struct cls_options *opt, const char *sql, size_t len,
                  struct cls_result *out)
{
	words_init();
	if (fast_path((const uint8_t *)sql, (const uint8_t *)sql + len, out))
		return;
	cls_classify_full(opt, sql, len, out);
}

void cls_classify_full(const struct cls_options *opt, const char *sql, size_t len,
                       struct cls_result *out)
{
	struct ps s;
	unsigned nstmt = 0;
	uint32_t flags = 0;

	words_init();
	s.lx.in_exec = s.lx.nul = s.lx.num_lists = false;
	s.lx.flags = 0;
	s.lx.last_type = T_EOF;
	s.db = NULL;
	s.dblen = 0;
	s.use_off = s.use_len = 0;
	s.lx.base = s.lx.p = (const uint8_t *)sql;
	s.lx.end = s.lx.base + len;
	s.lx.last_end = s.lx.base;
	s.opt = opt;
	if (opt && opt->current_db && opt->current_db_len) {
		s.db = opt->current_db;
		s.dblen = opt->current_db_len;
	}
	memset(out, 0, sizeof(*out));
	out->token = CLS_READ;
	out->reason = CLS_R_EMPTY;
	s.t = &s.ring[0];
	s.prev = &s.ring[1];
	s.prev2 = &s.ring[2];
	s.ring[1].type = s.ring[2].type = T_EOF;
	reset_stmt(&s);
	lex(&s.lx, s.t);
	for (;;) {
		enum cls_token tok;
		enum cls_reason reason;

		while (s.t->type == T_SEMI)
			adv(&s);
		if (s.t->type == T_EOF)
			break;
		parse_stmt(&s);
		finish_stmt(&s, &tok, &reason);
		flags |= s.flags;
		if (++nstmt == 1) {
			out->token = tok;
			out->reason = reason;
		}
	}
	if (flags & CLS_F_USE) {
		out->db_off = s.use_off;
		out->db_len = s.use_len;
	}
	flags |= s.lx.flags;
	if ((flags & CLS_F_HINT_WRITER) &&
	    (out->token == CLS_READ || out->reason == CLS_R_PREV_RESULT)) {
		out->token = CLS_WRITE;
		out->reason = CLS_R_HINT;
	} else if ((flags & CLS_F_HINT_WRITER) && out->token == CLS_BEGIN_RO) {
		out->token = CLS_BEGIN;
		out->reason = CLS_R_HINT;
	}
	if (nstmt > 1) {
		flags |= CLS_F_MULTI;
		out->token = CLS_WRITE;
		out->reason = CLS_R_MULTI;
	}
	if (s.lx.nul) {
		out->token = CLS_WRITE;
		out->reason = CLS_R_NOT_UNDERSTOOD;
	}
	if (flags & CLS_F_UNTERMINATED) {
		out->token = CLS_WRITE;
		out->reason = CLS_R_UNTERMINATED;
	}
	out->flags = flags;
}

const char *cls_token_name(enum cls_token t)
{
	static const char *const names[] = {
	    [CLS_READ] = "read",   [CLS_WRITE] = "write",       [CLS_SESSION] = "session",
	    [CLS_BEGIN] = "begin", [CLS_BEGIN_RO] = "begin_ro", [CLS_END] = "end",
	};

	if ((unsigned)t >= sizeof(names) / sizeof(names[0]) || !names[t])
		return "write";
	return names[t];
}

const char *cls_reason_name(enum cls_reason r)
{
	static const char *const names[CLS_R__COUNT] = {
	    [CLS_R_NONE] = "none",
	    [CLS_R_EMPTY] = "empty",
	    [CLS_R_SELECT] = "select",
	    [CLS_R_SHOW] = "show",
	    [CLS_R_DML] = "dml",
	    [CLS_R_DDL] = "ddl",
	    [CLS_R_LOCKING_READ] = "locking_read",
	    [CLS_R_SELECT_INTO] = "select_into",
	    [CLS_R_WRITE_FUNCTION] = "write_function",
	    [CLS_R_UNKNOWN_FUNCTION] = "unknown_function",
	    [CLS_R_ROUTINE_TRUSTED] = "routine_trusted",
	    [CLS_R_CALL] = "call",
	    [CLS_R_MULTI] = "multi",
	    [CLS_R_HINT] = "hint",
	    [CLS_R_SET] = "set",
	    [CLS_R_SET_GLOBAL] = "set_global",
	    [CLS_R_TRANSACTION] = "transaction",
	    [CLS_R_UNTERMINATED] = "unterminated",
	    [CLS_R_NOT_UNDERSTOOD] = "not_understood",
	    [CLS_R_EXPLAIN] = "explain",
	    [CLS_R_ADMIN] = "admin",
	    [CLS_R_USER_VAR_WRITE] = "user_var_write",
	    [CLS_R_PREV_RESULT] = "prev_result",
	};

	if ((unsigned)r >= CLS_R__COUNT || !names[r])
		return "unknown";
	return names[r];
}

const char *cls_flag_name(unsigned bit)
{
	static const char *const names[] = {
	    "temp_table",
	    "user_var_read",
	    "user_var_write",
	    "multi",
	    "hint_writer",
	    "hint_reader",
	    "prev_state",
	    "named_lock",
	    "autocommit_off",
	    "autocommit_on",
	    "use",
	    "implicit_commit",
	    "unreplayable",
	    "routine",
	    "unterminated",
	    "set_transaction",
	    "calc_found_rows",
	    "routine_tracked",
	    "session_status",
	};

	return bit < sizeof(names) / sizeof(names[0]) ? names[bit] : NULL;
}
