/*
 * classify.c - the SQL classifier's grammar and entry points.
 *
 * One pass over the bytes: the lexer (lex.h) returns one token at a time.
 * Plain SELECT/DML take the fast path first (fastpath.c); what it does not
 * decide comes here. The grammar keeps a small explicit state (the current
 * token and the two before it, a parenthesis depth counter, a few booleans),
 * never recurses and never allocates, so time is linear in the input and the
 * stack is bounded whatever the nesting.
 *
 * The statement head (first keywords) picks a token; the body scan then
 * looks, to the end of the statement, for what can turn a read into a write
 * (locking clauses, INTO, side-effect or unknown functions, user variable
 * assignment, DML verbs inside WITH) and for the flags. Every statement of a
 * multi-statement is scanned so that its flags are known, although the
 * token of a multi-statement is always write.
 */
#include <string.h>

#include "classify/classify_int.h"
#include "classify/lex.h"
#include "classify/words.h"

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

/* FLUSH TABLES [t, ...] WITH READ LOCK (or FOR EXPORT) holds table locks
 * on the connection it ran on until UNLOCK TABLES, as LOCK TABLES does. */
static void flush_read_lock(struct ps *s)
{
	bool after_read = false;

	for (; !at_end(s); adv(s)) {
		if (after_read && kw_is(s, KW_LOCK))
			s->flags |= CLS_F_TABLE_LOCK;
		after_read = kw_is(s, KW_READ);
		if (s->t->type == T_WORD && name_is(s->lx.base + s->t->off, s->t->len, "export"))
			s->flags |= CLS_F_TABLE_LOCK;
	}
}

static void parse_admin(struct ps *s)
{
	bool flush = kw_is(s, KW_FLUSH);

	switch (s->t->kw) {
	case KW_LOCK:
		s->flags |= CLS_F_TABLE_LOCK;
		/* fall through */
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
	if (flush) {
		flush_status(s);
		flush_read_lock(s);
	}
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

void cls_classify(const struct cls_options *opt, const char *sql, size_t len,
                  struct cls_result *out)
{
	words_init();
	if (cls_fast_path((const uint8_t *)sql, (const uint8_t *)sql + len, out))
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
	    "table_lock",
	};

	return bit < sizeof(names) / sizeof(names[0]) ? names[bit] : NULL;
}
