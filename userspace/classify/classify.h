/*
 * classify.h - decides from SQL text where a statement may run.
 *
 * The classifier is a library of its own (no dependency on the daemon), used by
 * the 6450 proxy and by the mysteer-classify CLI, so both make the same
 * decision. It reads a byte buffer of known length (any bytes: NUL, invalid
 * UTF-8), allocates nothing per statement, is independent of the locale, and
 * runs in time linear in the input with bounded stack.
 *
 * Tokens and the decisions for each statement form are documented in
 * docs/CLASSIFIER.md.
 */
#ifndef MYSTEER_CLASSIFY_H
#define MYSTEER_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cls_token {
	CLS_READ = 0, /* may run on any replica */
	CLS_WRITE,    /* must run on the primary */
	CLS_SESSION,  /* changes session state: replay on every backend used */
	CLS_BEGIN,    /* starts a read-write transaction */
	CLS_BEGIN_RO, /* starts a read-only transaction */
	CLS_END,      /* COMMIT / ROLLBACK */
};

/* Flags are computed for every statement, whatever its token. */
enum cls_flag {
	CLS_F_TEMP_TABLE = 1u << 0,       /* CREATE/DROP TEMPORARY TABLE */
	CLS_F_USER_VAR_READ = 1u << 1,    /* reads a @user variable */
	CLS_F_USER_VAR_WRITE = 1u << 2,   /* assigns one: SET @a, SELECT @a :=, INTO @a */
	CLS_F_MULTI = 1u << 3,            /* more than one statement */
	CLS_F_HINT_WRITER = 1u << 4,      /* a mysteer:writer hint comment */
	CLS_F_HINT_READER = 1u << 5,      /* a mysteer:reader hint comment */
	CLS_F_PREV_STATE = 1u << 6,       /* reads the previous statement's connection
	                                     state: run on the same backend connection */
	CLS_F_NAMED_LOCK = 1u << 7,       /* GET_LOCK and friends */
	CLS_F_AUTOCOMMIT_OFF = 1u << 8,   /* SET autocommit=0 */
	CLS_F_AUTOCOMMIT_ON = 1u << 9,    /* SET autocommit=1 */
	CLS_F_USE = 1u << 10,             /* USE db: db_off/db_len give the name */
	CLS_F_IMPLICIT_COMMIT = 1u << 11, /* DDL and others that end a transaction */
	CLS_F_UNREPLAYABLE = 1u << 12,    /* session change the proxy cannot replay
	                                     faithfully (pins the session) */
	CLS_F_ROUTINE = 1u << 13,         /* calls a stored function or procedure */
	CLS_F_UNTERMINATED = 1u << 14,    /* unterminated string or comment */
	CLS_F_SET_TRANSACTION = 1u << 15, /* SET TRANSACTION ... */
	CLS_F_CALC_FOUND_ROWS = 1u << 16, /* SELECT SQL_CALC_FOUND_ROWS: a FOUND_ROWS()
	                                     may follow and must run where it ran */
	CLS_F_ROUTINE_TRACKED = 1u << 17, /* CALL of a procedure marked tracked in the
	                                     routine table (cls_routines_set_tracked) */
	CLS_F_SESSION_STATUS = 1u << 18,  /* FLUSH STATUS: the session's status
	                                     counters start again where it runs */
	CLS_F_TABLE_LOCK = 1u << 19,      /* LOCK TABLES, FLUSH ... WITH READ LOCK:
	                                     the session's reads must see its locks */
};

/* Why the token is what it is (for --explain, logs and tests). */
enum cls_reason {
	CLS_R_NONE = 0,
	CLS_R_EMPTY,  /* empty or comment-only */
	CLS_R_SELECT, /* plain read */
	CLS_R_SHOW,
	CLS_R_DML,
	CLS_R_DDL,
	CLS_R_LOCKING_READ, /* FOR UPDATE / FOR SHARE / LOCK IN SHARE MODE */
	CLS_R_SELECT_INTO,
	CLS_R_WRITE_FUNCTION,   /* side-effect or connection-dependent builtin */
	CLS_R_UNKNOWN_FUNCTION, /* not a builtin: a stored function */
	CLS_R_ROUTINE_TRUSTED,  /* stored routine declared READS SQL DATA / NO SQL */
	CLS_R_CALL,
	CLS_R_MULTI,
	CLS_R_HINT,
	CLS_R_SET,
	CLS_R_SET_GLOBAL,
	CLS_R_TRANSACTION,
	CLS_R_UNTERMINATED,
	CLS_R_NOT_UNDERSTOOD,
	CLS_R_EXPLAIN,
	CLS_R_ADMIN,          /* FLUSH, KILL, LOCK TABLES, XA, HANDLER, ... */
	CLS_R_USER_VAR_WRITE, /* SELECT @a := ... (added by the classifier) */
	CLS_R_PREV_RESULT,    /* a read but for FOUND_ROWS()/ROW_COUNT(): the answer
	                         belongs to the previous statement's connection */
	CLS_R__COUNT
};

struct cls_result {
	enum cls_token token;
	uint32_t flags; /* enum cls_flag */
	enum cls_reason reason;
	uint32_t db_off, db_len; /* CLS_F_USE: the schema name (unquoted span) */
};

enum cls_routine_kind { CLS_ROUTINE_FUNCTION = 0, CLS_ROUTINE_PROCEDURE };
enum cls_data_access {
	CLS_ACCESS_CONTAINS_SQL = 0, /* MariaDB's default */
	CLS_ACCESS_NO_SQL,
	CLS_ACCESS_READS_SQL_DATA,
	CLS_ACCESS_MODIFIES_SQL_DATA,
};

/* A table of stored routines (schema, name, kind, data access). Built once,
 * then read-only: share it between threads and swap it whole to update. */
struct cls_routines;
struct cls_routines *cls_routines_new(void);
int cls_routines_add(struct cls_routines *rt, const char *schema, const char *name,
                     enum cls_routine_kind kind, enum cls_data_access access);
/* Marks procedure (schema, name) of the table as tracked: what its body can
 * leave on the connection, the server's session tracking reports (the caller
 * decides, from the body: no named lock, sequence, dynamic SQL or call of
 * another routine). A CALL of it then gets CLS_F_ROUTINE_TRACKED, whatever
 * trust_routines says. -1 when it is not in the table. */
int cls_routines_set_tracked(struct cls_routines *rt, const char *schema, const char *name);
/* TSV: schema<TAB>name<TAB>FUNCTION|PROCEDURE<TAB>data access. Returns 0, or -1
 * with a one-line "FILE:LINE: reason" in err. */
int cls_routines_load_tsv(struct cls_routines *rt, const char *path, char *err, size_t errlen);
void cls_routines_free(struct cls_routines *rt);

struct cls_options {
	const struct cls_routines *routines; /* NULL: no table */
	bool trust_routines;                 /* trust_routine_characteristics */
	const char *current_db;              /* for unqualified routine names */
	size_t current_db_len;
};

/* Classifies sql[0..len). Never fails: anything not understood is CLS_WRITE. */
void cls_classify(const struct cls_options *opt, const char *sql, size_t len,
                  struct cls_result *out);

const char *cls_token_name(enum cls_token t);
const char *cls_reason_name(enum cls_reason r);
/* Name of flag bit (0 for CLS_F_TEMP_TABLE ...), NULL past the last. */
const char *cls_flag_name(unsigned bit);

#endif
