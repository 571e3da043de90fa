/*
 * test_classify.c - the classifier's decisions, table-driven: one row a
 * statement with the token it must get, the flags that must be set and those
 * that must not. Every form docs/CLASSIFIER.md documents has rows here; then routines with and
 * without trust, the thread safety of cls_classify, and hostile inputs (16 MB statements, deep
 * nesting, NUL bytes, invalid UTF-8) bounded by a generous deadline.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/valgrind.h>

#include "classify/classify.h"
#include "classify/classify_int.h"

#define R   CLS_READ
#define W   CLS_WRITE
#define S   CLS_SESSION
#define B   CLS_BEGIN
#define BRO CLS_BEGIN_RO
#define E   CLS_END

#define TMP   CLS_F_TEMP_TABLE
#define VR    CLS_F_USER_VAR_READ
#define VW    CLS_F_USER_VAR_WRITE
#define MUL   CLS_F_MULTI
#define HW    CLS_F_HINT_WRITER
#define HR    CLS_F_HINT_READER
#define PREV  CLS_F_PREV_STATE
#define LCK   CLS_F_NAMED_LOCK
#define ACOFF CLS_F_AUTOCOMMIT_OFF
#define ACON  CLS_F_AUTOCOMMIT_ON
#define USE   CLS_F_USE
#define IC    CLS_F_IMPLICIT_COMMIT
#define UNR   CLS_F_UNREPLAYABLE
#define RTN   CLS_F_ROUTINE
#define UNT   CLS_F_UNTERMINATED
#define STX   CLS_F_SET_TRANSACTION
#define CFR   CLS_F_CALC_FOUND_ROWS

struct tcase_row {
	const char *sql;
	enum cls_token tok;
	uint32_t set;   /* flags that must be set */
	uint32_t clear; /* flags that must not be set */
};

static const struct tcase_row rows[] = {
    /* plain reads */
    {"SELECT 1", R, 0, VR | VW | MUL | RTN},
    {"select 1", R, 0, 0},
    {"SeLeCt 1", R, 0, 0},
    {"  \t\n SELECT 1", R, 0, 0},
    {"SELECT 1;", R, 0, MUL},
    {"SELECT 1 ;  ", R, 0, MUL},
    {"SELECT 1;;", R, 0, MUL},
    {"SELECT c FROM sbtest1 WHERE id=4992", R, 0, 0},
    {"SELECT c FROM sbtest1 WHERE id BETWEEN 5 AND 104", R, 0, 0},
    {"SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 5 AND 104", R, 0, 0},
    {"SELECT c FROM sbtest1 WHERE id BETWEEN 5 AND 104 ORDER BY c", R, 0, 0},
    {"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 5 AND 104 ORDER BY c", R, 0, 0},
    {"SELECT * FROM t WHERE a = 'for update'", R, 0, 0},
    {"SELECT * FROM t WHERE a = \"FOR UPDATE\"", R, 0, 0},
    {"SELECT `for update` FROM t", R, 0, 0},
    {"SELECT * FROM `update`", R, 0, 0},
    {"SELECT * FROM t WHERE a = 'it''s' AND b = 'x\\'y'", R, 0, UNT},
    {"SELECT 'a\\\\' FROM t", R, 0, UNT},
    {"SELECT \"a\"\"b\" FROM t", R, 0, UNT},
    {"SELECT `a``b` FROM t", R, 0, UNT},
    {"SELECT 'INTO @x' FROM t", R, 0, VW},
    {"SELECT '; DROP TABLE t' FROM t", R, 0, MUL},
    {"SELECT a FROM t WHERE b LIKE '%;%'", R, 0, MUL},
    {"SELECT 'GET_LOCK(1)'", R, 0, LCK},
    {"SELECT * FROM t1 JOIN t2 ON (t1.a = t2.a)", R, 0, RTN},
    {"SELECT * FROM t1 JOIN t2 USING (a)", R, 0, RTN},
    {"SELECT * FROM t1 LEFT JOIN t2 ON t1.a=t2.a", R, 0, 0},
    {"SELECT * FROM t1 STRAIGHT_JOIN t2 ON (a)", R, 0, RTN},
    {"SELECT * FROM t FORCE INDEX (i1) WHERE a > 1", R, 0, RTN},
    {"SELECT * FROM t USE INDEX (i1)", R, 0, RTN},
    {"SELECT * FROM t IGNORE INDEX FOR JOIN (i1)", R, 0, RTN},
    {"SELECT * FROM t WHERE a IN (1, 2, 3)", R, 0, RTN},
    {"SELECT * FROM t WHERE a NOT IN (SELECT b FROM u)", R, 0, RTN},
    {"SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u)", R, 0, RTN},
    {"SELECT * FROM t WHERE NOT EXISTS(SELECT 1)", R, 0, RTN},
    {"SELECT * FROM t WHERE a = ANY (SELECT b FROM u)", R, 0, RTN},
    {"SELECT * FROM t WHERE a > ALL (SELECT b FROM u)", R, 0, RTN},
    {"SELECT * FROM t WHERE a = SOME (SELECT b FROM u)", R, 0, RTN},
    {"SELECT * FROM t WHERE (a, b) IN ((1, 2), (3, 4))", R, 0, RTN},
    {"SELECT * FROM t WHERE a AND (b OR c)", R, 0, RTN},
    {"SELECT * FROM t WHERE NOT (a)", R, 0, RTN},
    {"SELECT CASE WHEN (a) THEN (b) ELSE (c) END FROM t", R, 0, RTN},
    {"SELECT * FROM t ORDER BY (a) LIMIT 10", R, 0, RTN},
    {"SELECT * FROM t GROUP BY a WITH ROLLUP", R, 0, RTN},
    {"SELECT a FROM t HAVING (COUNT(*) > 1)", R, 0, RTN},
    {"SELECT * FROM t WHERE a LIKE ('x%')", R, 0, RTN},
    {"SELECT * FROM t WHERE a BETWEEN (1) AND (2)", R, 0, RTN},
    {"SELECT * FROM t WHERE a REGEXP ('^x')", R, 0, RTN},
    {"SELECT a DIV (2), a MOD (3), a XOR (b) FROM t", R, 0, RTN},
    {"SELECT * FROM (SELECT 1) AS d", R, 0, RTN},
    {"SELECT * FROM (SELECT 1, 2) AS d (a, b)", R, 0, RTN},
    {"SELECT * FROM (SELECT 1) d", R, 0, RTN},
    {"SELECT MATCH (a, b) AGAINST ('x' IN BOOLEAN MODE) FROM t", R, 0, RTN},
    {"SELECT * FROM t PARTITION (p0)", R, 0, RTN},
    {"SELECT ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) FROM t", R, 0, RTN},
    {"SELECT SUM(a) OVER w FROM t WINDOW w AS (ORDER BY b)", R, 0, RTN},
    {"SELECT RANK() OVER (ORDER BY a), DENSE_RANK() OVER (ORDER BY a) FROM t", R, 0, RTN},
    {"SELECT LAG(a, 1) OVER (ORDER BY b), LEAD(a) OVER (ORDER BY b) FROM t", R, 0, RTN},
    {"SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (a INT PATH '$')) AS jt", R, 0, RTN},
    {"SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2020-01-01'", R, 0, 0},
    {"SELECT * FROM t WHERE a MEMBER OF ('[1]')", R, 0, RTN},
    {"SELECT 1 FROM DUAL", R, 0, 0},
    /* SQL_CALC_FOUND_ROWS among the leading SELECT's options, and only there */
    {"SELECT SQL_CALC_FOUND_ROWS * FROM t", R, CFR, 0},
    {"select sql_calc_found_rows a from t limit 10", R, CFR, 0},
    {"SELECT DISTINCT SQL_NO_CACHE  SQL_CALC_FOUND_ROWS a FROM t", R, CFR, 0},
    {"SELECT ALL HIGH_PRIORITY STRAIGHT_JOIN SQL_CALC_FOUND_ROWS a FROM t", R, CFR, 0},
    {"(SELECT SQL_CALC_FOUND_ROWS a FROM t LIMIT 1) UNION (SELECT 2)", R, CFR, 0},
    {"SELECT /* c */ SQL_CALC_FOUND_ROWS a FROM t", R, CFR, 0},
    {"SELECT /*!40001 SQL_CALC_FOUND_ROWS */ a FROM t", R, CFR, 0},
    {"SELECT SQL_CALC_FOUND_ROWS a FROM t FOR UPDATE", W, CFR, 0},
    {"SELECT a, SQL_CALC_FOUND_ROWS FROM t", R, 0, CFR},
    {"SELECT DISTINCT(a), SQL_CALC_FOUND_ROWS FROM t", R, 0, CFR},
    {"SELECT 1 UNION SELECT SQL_CALC_FOUND_ROWS 2", R, 0, CFR},
    {"SELECT `SQL_CALC_FOUND_ROWS` FROM t", R, 0, CFR},
    {"INSERT INTO t SELECT SQL_CALC_FOUND_ROWS a FROM u", W, 0, CFR},
    {"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 1 AND 9 ORDER BY c", R, 0, CFR},
    {"SELECT SQL_NO_CACHE a FROM t", R, 0, 0},
    {"SELECT HIGH_PRIORITY a FROM t", R, 0, 0},
    {"SELECT a FROM t WHERE a IS NOT NULL", R, 0, 0},
    {"SELECT X'4142', B'01', N'abc', _utf8mb4'x' COLLATE utf8mb4_bin", R, 0, 0},
    {"SELECT 1.5e3, .5, 0x1F, -1, +2", R, 0, 0},
    {"SELECT a.b.c FROM a.b", R, 0, 0},
    {"SELECT t.max FROM t", R, 0, 0},
    {"SELECT 1--1", R, 0, 0},
    {"SELECT 1 - -1", R, 0, 0},
    {"SELECT a->>'$.x', a->'$.y' FROM t", R, 0, 0},
    {"SELECT 'caf\xc3\xa9' AS `n\xc3\xa4me`", R, 0, 0},
    {"SELECT \xc3\xa4 FROM t", R, 0, 0},
    {"SELECT a FROM t WHERE a = :1", R, 0, 0},
    {"SELECT a FROM t WHERE a = ?", R, 0, 0},
    {"SELECT 'a' 'b' 'c'", R, 0, 0},
    {"SELECT a FROM t WHERE b = 1 UNION SELECT a FROM u", R, 0, 0},
    {"SELECT a FROM t UNION ALL SELECT a FROM u UNION DISTINCT SELECT 1", R, 0, 0},
    {"SELECT a FROM t INTERSECT SELECT a FROM u", R, 0, 0},
    {"SELECT a FROM t EXCEPT SELECT a FROM u", R, 0, 0},
    {"SELECT a FROM t UNION (SELECT a FROM u)", R, 0, RTN},
    {"SELECT 1 /* ; */", R, 0, MUL},
    {"SELECT 1 # ; DROP TABLE t", R, 0, MUL},
    {"SELECT 1 -- ; DROP TABLE t", R, 0, MUL},
    {"SELECT 1 -- x\n", R, 0, 0},
    {"SELECT 1 #", R, 0, 0},
    {"SELECT 1 --", R, 0, 0},
    {"SELECT 1 --\tx", R, 0, 0},
    {"SELECT 1 /**/", R, 0, 0},
    {"SELECT /* a */ 1 /* b */", R, 0, 0},
    {"SELECT /* nested /* not */ 1", R, 0, UNT},
    {"SELECT 1 FROM t WHERE a = '/*'", R, 0, UNT},
    {"SELECT 1 FROM t WHERE a = '--'", R, 0, 0},
    {"SELECT \"it's\" FROM t", R, 0, UNT},
    {"SELECT 'say \"hi\"' FROM t", R, 0, UNT},
    /* comments of the 3 forms before the statement */
    {"/* c */ SELECT 1", R, 0, 0},
    {"/* c */SELECT 1", R, 0, 0},
    {"-- c\nSELECT 1", R, 0, 0},
    {"# c\nSELECT 1", R, 0, 0},
    {"#c\r\nSELECT 1", R, 0, 0},
    {"/* a */ /* b */ -- c\n # d\n SELECT 1", R, 0, 0},
    {"/* SELECT */ INSERT INTO t VALUES (1)", W, 0, 0},
    {"-- SELECT\nDELETE FROM t", W, 0, 0},
    {"# SELECT\nUPDATE t SET a = 1", W, 0, 0},
    {"/* INSERT */ SELECT 1", R, 0, 0},
    {"--SELECT 1", W, 0, 0},
    /* executable comments count, optimizer hints do not */
    {"/*!40101 SELECT 1 */", R, 0, 0},
    {"/*!SELECT 1*/", R, 0, 0},
    {"/*!50000 SELECT 1 FOR UPDATE */", W, 0, 0},
    {"SELECT * FROM t /*!50000 FOR UPDATE */", W, 0, 0},
    {"SELECT * FROM t /*!80000 FOR SHARE*/", W, 0, 0},
    {"SELECT a /*!INTO @x */ FROM t", W, VW, 0},
    {"/*M!100100 SELECT 1 FOR UPDATE */", W, 0, 0},
    {"/*!40101 SET NAMES utf8 */", S, 0, 0},
    {"/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS */", S, VW, 0},
    {"/*!40101 SET character_set_client = utf8 */;", S, 0, MUL},
    {"SELECT /*!1 /* inner */ 1 */", R, 0, UNT},
    {"/*!40101 SELECT 1", W, UNT, 0},
    {"SELECT /*+ MAX_EXECUTION_TIME(1000) */ * FROM t", R, 0, RTN},
    {"SELECT /*+ BKA(t1) NO_BKA(t2) */ * FROM t1", R, 0, RTN},
    {"SELECT /*+ FOR UPDATE */ * FROM t", R, 0, 0},
    {"SELECT /*+ INTO @x */ a FROM t", R, 0, VW},
    {"SELECT /* FOR UPDATE */ * FROM t", R, 0, 0},
    {"/*+ mysteer:writer */ SELECT 1", R, 0, HW},
    /* routing hints */
    {"/* mysteer:writer */ SELECT 1", W, HW, HR},
    {"/*mysteer:writer*/SELECT 1", W, HW, 0},
    {"/*  MYSTEER:WRITER */ SELECT 1", W, HW, 0},
    {"SELECT 1 /* mysteer:writer */", W, HW, 0},
    {"SELECT /* mysteer:writer */ a FROM t", W, HW, 0},
    {"/* mysteer:reader */ SELECT 1", R, HR, HW},
    {"SELECT 1 /* mysteer:reader */", R, HR, 0},
    {"/* mysteer:reader */ SELECT * FROM t FOR UPDATE", W, HR, 0},
    {"/* mysteer:reader */ INSERT INTO t VALUES (1)", W, HR, 0},
    {"/* mysteer:reader */ SELECT GET_LOCK('a', 1)", W, HR | LCK, 0},
    {"/* mysteer:reader */ SELECT f(1)", W, HR | RTN, 0},
    {"/* mysteer:writer */ /* mysteer:reader */ SELECT 1", W, HW | HR, 0},
    {"/* mysteer:writer */ INSERT INTO t VALUES (1)", W, HW, 0},
    {"/* mysteer:writer */ START TRANSACTION READ ONLY", B, HW, 0},
    {"/* mysteer:writer */ SET @a = 1", S, HW | VW, 0},
    {"/* mysteer:writerx */ SELECT 1", W, HW, 0},
    {"/* mysteer: writer */ SELECT 1", R, 0, HW},
    {"/* not mysteer:writer */ SELECT 1", R, 0, HW},
    {"-- mysteer:writer\nSELECT 1", R, 0, HW},
    {"SELECT '/* mysteer:writer */'", R, 0, HW},
    /* leading parentheses and whitespace */
    {"(SELECT 1)", R, 0, 0},
    {"((SELECT 1))", R, 0, 0},
    {" ( ( SELECT 1 ) ) ", R, 0, 0},
    {"(SELECT 1) UNION (SELECT 2)", R, 0, 0},
    {"(SELECT a FROM t) ORDER BY a LIMIT 1", R, 0, 0},
    {"(SELECT a FROM t FOR UPDATE)", W, 0, 0},
    {"((SELECT a FROM t) FOR UPDATE)", W, 0, 0},
    {"(WITH c AS (SELECT 1) SELECT * FROM c)", R, 0, RTN},
    {"(VALUES (1), (2))", R, 0, 0},
    {"(INSERT INTO t VALUES (1))", W, 0, 0},
    {"(", W, 0, 0},
    {"()", W, 0, 0},
    {"(1)", W, 0, 0},
    /* WITH */
    {"WITH c AS (SELECT 1) SELECT * FROM c", R, 0, RTN},
    {"WITH c (a) AS (SELECT 1) SELECT * FROM c", R, 0, RTN},
    {"WITH c(a, b) AS (SELECT 1, 2) SELECT * FROM c", R, 0, RTN},
    {"WITH a AS (SELECT 1), b AS (SELECT 2) SELECT * FROM a, b", R, 0, RTN},
    {"WITH a(x) AS (SELECT 1), b(y) AS (SELECT 2) SELECT * FROM a, b", R, 0, RTN},
    {"WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) "
     "SELECT * FROM c",
     R, 0, RTN},
    {"WITH RECURSIVE c(n) AS (SELECT 1) SELECT n FROM c", R, 0, RTN},
    {"with c as (select 1) select * from c", R, 0, 0},
    {"WITH c AS (SELECT 1) SELECT * FROM c FOR UPDATE", W, 0, 0},
    {"WITH c AS (SELECT a FROM t FOR UPDATE) SELECT * FROM c", W, 0, 0},
    {"WITH c AS (SELECT 1) SELECT f(a) FROM c", W, RTN, 0},
    {"WITH c AS (SELECT LAST_INSERT_ID()) SELECT * FROM c", W, PREV, 0},
    {"WITH c AS (SELECT 1) UPDATE t JOIN c SET t.a = 1", W, 0, 0},
    {"WITH c AS (SELECT 1) DELETE FROM t WHERE a IN (SELECT * FROM c)", W, 0, 0},
    {"WITH c AS (SELECT 1) INSERT INTO t SELECT * FROM c", W, 0, 0},
    {"WITH c AS (SELECT 1) REPLACE INTO t SELECT * FROM c", W, 0, 0},
    {"WITH c AS (SELECT 1) SELECT REPLACE(a, 'x', 'y') FROM c", R, 0, RTN},
    {"WITH c AS (SELECT 1) SELECT INSERT('abc', 1, 1, 'x') FROM c", R, 0, RTN},
    {"SELECT * FROM (WITH c(a) AS (SELECT 1) SELECT a FROM c) d", R, 0, RTN},
    /* UNION with locking in any part */
    {"SELECT 1 UNION SELECT 2 FOR UPDATE", W, 0, 0},
    {"(SELECT 1 FOR UPDATE) UNION (SELECT 2)", W, 0, 0},
    {"(SELECT 1) UNION (SELECT 2 FOR UPDATE)", W, 0, 0},
    {"(SELECT 1) UNION ALL (SELECT 2 LOCK IN SHARE MODE)", W, 0, 0},
    {"(SELECT 1 FOR SHARE) UNION (SELECT 2)", W, 0, 0},
    {"(SELECT a FROM t FOR UPDATE NOWAIT) UNION (SELECT 2)", W, 0, 0},
    {"(SELECT a FROM t) UNION (SELECT b FROM u FOR UPDATE SKIP LOCKED)", W, 0, 0},
    {"(SELECT a FROM t) UNION (SELECT b FROM u FOR UPDATE WAIT 5)", W, 0, 0},
    {"SELECT a FROM t UNION SELECT b FROM u FOR SHARE NOWAIT", W, 0, 0},
    {"SELECT * FROM t WHERE a IN (SELECT b FROM u FOR UPDATE)", W, 0, 0},
    /* VALUES / TABLE */
    {"VALUES (1, 2), (3, 4)", R, 0, RTN},
    {"VALUES ROW(1, 2), ROW(3, 4)", R, 0, RTN},
    {"VALUES (1) UNION VALUES (2)", R, 0, 0},
    {"VALUES (LAST_INSERT_ID())", W, PREV, 0},
    {"VALUES (f(1))", W, RTN, 0},
    {"TABLE t", R, 0, 0},
    {"TABLE t ORDER BY a LIMIT 1", R, 0, 0},
    {"TABLE t UNION TABLE u", R, 0, 0},
    {"SELECT * FROM t UNION TABLE u", R, 0, 0},
    {"TABLE t INTO @x", W, VW, 0},
    /* locking reads */
    {"SELECT * FROM t FOR UPDATE", W, 0, 0},
    {"select * from t for update", W, 0, 0},
    {"SELECT * FROM t WHERE id = 1 FOR UPDATE", W, 0, 0},
    {"SELECT * FROM t FOR UPDATE NOWAIT", W, 0, 0},
    {"SELECT * FROM t FOR UPDATE SKIP LOCKED", W, 0, 0},
    {"SELECT * FROM t FOR UPDATE WAIT 10", W, 0, 0},
    {"SELECT * FROM t FOR UPDATE OF t", W, 0, 0},
    {"SELECT * FROM t FOR SHARE", W, 0, 0},
    {"SELECT * FROM t FOR SHARE NOWAIT", W, 0, 0},
    {"SELECT * FROM t FOR SHARE SKIP LOCKED", W, 0, 0},
    {"SELECT * FROM t LOCK IN SHARE MODE", W, 0, 0},
    {"SELECT * FROM t LOCK IN SHARE MODE WAIT 3", W, 0, 0},
    {"SELECT * FROM t LOCK IN SHARE MODE NOWAIT", W, 0, 0},
    {"SELECT * FROM t FOR\nUPDATE", W, 0, 0},
    {"SELECT * FROM t FOR /* x */ UPDATE", W, 0, 0},
    {"SELECT * FROM t LIMIT 1 FOR UPDATE", W, 0, 0},
    {"SELECT * FROM t ORDER BY a LIMIT 1 OFFSET 2 FOR UPDATE", W, 0, 0},
    {"SELECT * FROM t WHERE a = 1 FOR UPDATE;", W, 0, MUL},
    /* SELECT ... INTO */
    {"SELECT a INTO @x FROM t", W, VW, 0},
    {"SELECT a, b INTO @x, @y FROM t", W, VW, VR},
    {"SELECT a FROM t INTO @x", W, VW, 0},
    {"SELECT a FROM t LIMIT 1 INTO @x", W, VW, 0},
    {"SELECT a FROM t INTO OUTFILE '/tmp/x'", W, 0, 0},
    {"SELECT a FROM t INTO DUMPFILE '/tmp/x'", W, 0, 0},
    {"SELECT * INTO OUTFILE '/tmp/x' FIELDS TERMINATED BY ',' FROM t", W, 0, 0},
    {"SELECT a INTO @`x y` FROM t", W, VW, 0},
    {"SELECT a INTO @'x' FROM t", W, VW, 0},
    {"SELECT a INTO v FROM t", W, 0, 0},
    /* user variables */
    {"SELECT @a", R, VR, VW},
    {"SELECT @a, @b FROM t", R, VR, VW},
    {"SELECT * FROM t WHERE a = @x", R, VR, 0},
    {"SELECT * FROM t WHERE a=@x", R, VR, 0},
    {"SELECT (@x)", R, VR, 0},
    {"SELECT @`quoted var`", R, VR, 0},
    {"SELECT @'q'", R, VR, 0},
    {"SELECT @\"q\"", R, VR, 0},
    {"SELECT @a := 1", W, VW, 0},
    {"SELECT @a:=a FROM t", W, VW, 0},
    {"SELECT @rn := @rn + 1 FROM t", W, VW | VR, 0},
    {"SELECT @a = 1", R, VR, VW},
    {"SELECT a FROM t WHERE @a := 1", W, VW, 0},
    {"INSERT INTO t VALUES (@a)", W, VR, VW},
    {"UPDATE t SET a = @a", W, VR, 0},
    {"UPDATE t SET a = (@x := @x + 1)", W, VW | VR, 0},
    {"SELECT 'user'@'host'", R, 0, VR},
    {"SELECT a@b", R, 0, VR},
    /* system variables */
    {"SELECT @@version", R, 0, PREV},
    {"SELECT @@global.read_only", R, 0, 0},
    {"SELECT @@session.sql_mode", R, 0, 0},
    {"SELECT @@warning_count", R, PREV, 0},
    {"SELECT @@error_count", R, PREV, 0},
    {"SELECT @@session.warning_count", R, PREV, 0},
    {"SELECT @@WARNING_COUNT", R, PREV, 0},
    {"SELECT @@identity", W, PREV, 0},
    {"SELECT @@last_insert_id", W, PREV, 0},
    {"SELECT @@autocommit", R, 0, ACOFF | ACON},
    /* builtin functions free of side effects */
    {"SELECT NOW()", R, 0, RTN},
    {"SELECT NOW(), UUID(), RAND()", R, 0, RTN},
    {"SELECT CURRENT_TIMESTAMP, CURRENT_DATE, CURRENT_USER", R, 0, RTN},
    {"SELECT CURRENT_TIMESTAMP(6), CURRENT_USER()", R, 0, RTN},
    {"SELECT SYSDATE(), UNIX_TIMESTAMP(), UTC_TIMESTAMP()", R, 0, RTN},
    {"SELECT COUNT(*) FROM t", R, 0, RTN},
    {"SELECT count(DISTINCT a) FROM t", R, 0, RTN},
    {"SELECT COUNT (*) FROM t", R, 0, RTN},
    {"SELECT SUM(a), AVG(a), MIN(a), MAX(a) FROM t", R, 0, RTN},
    {"SELECT GROUP_CONCAT(a ORDER BY a SEPARATOR ',') FROM t", R, 0, RTN},
    {"SELECT CONCAT('a', 'b'), CONCAT_WS(',', a), SUBSTRING(a, 1, 2)", R, 0, RTN},
    {"SELECT IF(a > 1, 'x', 'y') FROM t", R, 0, RTN},
    {"SELECT IFNULL(a, 0), COALESCE(a, b), NULLIF(a, b) FROM t", R, 0, RTN},
    {"SELECT CAST(a AS CHAR), CAST(a AS UNSIGNED), CAST(a AS SIGNED INTEGER) FROM t", R, 0, RTN},
    {"SELECT CAST(a AS DECIMAL(10, 2)), CAST(a AS DATETIME(6)) FROM t", R, 0, RTN},
    {"SELECT CONVERT(a, CHAR(10)), CONVERT(a USING utf8mb4) FROM t", R, 0, RTN},
    {"SELECT CAST(a AS BINARY(4)), CAST(a AS TIME(3)), CAST(a AS DOUBLE) FROM t", R, 0, RTN},
    {"SELECT DATE_ADD(NOW(), INTERVAL 1 DAY), DATE_FORMAT(d, '%Y') FROM t", R, 0, RTN},
    {"SELECT INTERVAL(5, 1, 10), DATE(NOW()), TIME(NOW()), TIMESTAMP(NOW())", R, 0, RTN},
    {"SELECT LEFT(a, 1), RIGHT(a, 1), REPLACE(a, 'x', 'y'), INSERT(a, 1, 1, 'z')", R, 0, RTN},
    {"SELECT MOD(a, 2), CHAR(65), DATABASE(), SCHEMA(), USER(), VERSION()", R, 0, RTN},
    {"SELECT JSON_EXTRACT(doc, '$.a'), JSON_OBJECT('a', 1), JSON_ARRAYAGG(a) FROM t", R, 0, RTN},
    {"SELECT JSON_VALUE(j, '$.a' RETURNING DECIMAL(10,2)) FROM t", R, 0, RTN},
    {"SELECT SLEEP(1)", R, 0, RTN},
    {"SELECT BENCHMARK(10, MD5('a'))", R, 0, RTN},
    {"SELECT MASTER_GTID_WAIT('0-1-100', 10)", R, 0, RTN},
    {"SELECT MASTER_POS_WAIT('bin.1', 4)", R, 0, RTN},
    {"SELECT WAIT_FOR_EXECUTED_GTID_SET('x', 1)", R, 0, RTN},
    {"SELECT UUID_SHORT(), SYS_GUID()", R, 0, RTN},
    {"SELECT MD5(a), SHA2(a, 256), CRC32(a), HEX(a), UNHEX(a) FROM t", R, 0, RTN},
    {"SELECT ST_AsText(ST_GeomFromText('POINT(1 1)'))", R, 0, RTN},
    {"SELECT REGEXP_REPLACE(a, 'x', 'y'), REGEXP_LIKE(a, 'x') FROM t", R, 0, RTN},
    {"SELECT DEFAULT(a) FROM t", R, 0, RTN},
    {"SELECT TRIM(LEADING 'x' FROM a), POSITION('a' IN b), EXTRACT(YEAR FROM d)", R, 0, RTN},
    {"SELECT ROUND(a, 2), FLOOR(a), CEIL(a), ABS(a), POW(a, 2), SQRT(a) FROM t", R, 0, RTN},
    {"SELECT UPPER(a), lower(a), Length(a) FROM t", R, 0, RTN},
    {"SELECT NVL(a, 1), DECODE_HISTOGRAM('x', 'y')", R, 0, RTN},
    {"SELECT BIN_TO_UUID(UUID_TO_BIN(UUID()))", R, 0, RTN},
    {"SELECT a FROM t WHERE a = PASSWORD('x')", R, 0, RTN},
    {"SELECT WEIGHT_STRING(a AS CHAR(3)) FROM t", R, 0, RTN},
    {"SELECT CURRENT_ROLE(), SESSION_USER(), SYSTEM_USER()", R, 0, RTN},
    {"SELECT FORMAT(1234.5, 2), COLLATION(a), CHARSET(a) FROM t", R, 0, RTN},
    {"SELECT TIMESTAMPDIFF(SECOND, a, b) FROM t", R, 0, RTN},
    {"SELECT VALUES(a) FROM t", R, 0, RTN},
    {"SELECT TRUNCATE(1.5, 0)", R, 0, RTN},
    /* builtins with side effects or connection state */
    {"SELECT LAST_INSERT_ID()", W, PREV, RTN},
    {"select last_insert_id()", W, PREV, 0},
    {"SELECT LAST_INSERT_ID(5)", W, PREV, 0},
    {"SELECT FOUND_ROWS()", W, PREV, 0},
    {"SELECT ROW_COUNT()", W, PREV, 0},
    {"SELECT GET_LOCK('a', 10)", W, LCK, PREV},
    {"SELECT RELEASE_LOCK('a')", W, LCK, 0},
    {"SELECT RELEASE_ALL_LOCKS()", W, LCK, 0},
    {"SELECT IS_FREE_LOCK('a')", W, LCK, 0},
    {"SELECT IS_USED_LOCK('a')", W, LCK, 0},
    {"SELECT NEXTVAL(s)", W, 0, RTN},
    {"SELECT LASTVAL(s)", W, 0, 0},
    {"SELECT SETVAL(s, 10)", W, 0, 0},
    {"SELECT NEXT VALUE FOR s", W, 0, RTN},
    {"SELECT next value for db.s", W, 0, 0},
    {"SELECT PREVIOUS VALUE FOR s", W, 0, 0},
    {"SELECT CONNECTION_ID()", W, 0, 0},
    {"SELECT LOAD_FILE('/etc/passwd')", W, 0, 0},
    {"SELECT PS_CURRENT_THREAD_ID()", W, 0, 0},
    {"SELECT WSREP_LAST_SEEN_GTID()", W, 0, 0},
    {"SELECT a FROM t WHERE id = LAST_INSERT_ID()", W, PREV, 0},
    {"SELECT a FROM t WHERE b = (SELECT GET_LOCK('x', 1))", W, LCK, 0},
    {"SELECT CONCAT(a, GET_LOCK('x', 1)) FROM t", W, LCK, 0},
    {"SELECT GET_LOCK ('a', 1)", W, LCK, 0},
    {"SELECT GET_LOCK/* c */('a', 1)", W, LCK, 0},
    {"SELECT 1 UNION SELECT LAST_INSERT_ID()", W, PREV, 0},
    {"SELECT 'LAST_INSERT_ID()'", R, 0, PREV},
    {"SELECT last_insert_id FROM t", R, 0, PREV},
    {"SELECT `LAST_INSERT_ID` FROM t", R, 0, PREV},
    /* not builtin: stored functions */
    {"SELECT f(1)", W, RTN, 0},
    {"SELECT myfunc(a) FROM t", W, RTN, 0},
    {"SELECT my_func (a) FROM t", W, RTN, 0},
    {"SELECT db.f(1)", W, RTN, 0},
    {"SELECT `db`.`f`(1)", W, RTN, 0},
    {"SELECT `f`(1)", W, RTN, 0},
    {"SELECT `concat`(1)", W, RTN, 0},
    {"SELECT db.concat(1)", W, RTN, 0},
    {"SELECT * FROM t WHERE a = f(b)", W, RTN, 0},
    {"SELECT * FROM t WHERE a IN (SELECT f(b) FROM u)", W, RTN, 0},
    {"SELECT COUNT(f(a)) FROM t", W, RTN, 0},
    {"SELECT status(1)", W, RTN, 0},
    {"SELECT work(1)", W, RTN, 0},
    {"SELECT a FROM t ORDER BY f(a)", W, RTN, 0},
    {"SELECT f\xc3\xa4(1)", W, RTN, 0},
    {"DO f(1)", W, RTN, 0},
    /* DO */
    {"DO 1", R, 0, 0},
    {"DO SLEEP(1)", R, 0, RTN},
    {"DO NOW()", R, 0, 0},
    {"DO GET_LOCK('a', 1)", W, LCK, 0},
    {"DO RELEASE_LOCK('a')", W, LCK, 0},
    {"DO LAST_INSERT_ID(1)", W, PREV, 0},
    {"DO NEXTVAL(s)", W, 0, 0},
    {"DO @a := 1", W, VW, 0},
    /* DML */
    {"INSERT INTO t VALUES (1)", W, 0, RTN},
    {"INSERT INTO t (a, b) VALUES (1, 2)", W, 0, RTN},
    {"INSERT INTO t(a) VALUES(1)", W, 0, RTN},
    {"INSERT INTO db.t (a) VALUES (1)", W, 0, RTN},
    {"INSERT INTO `db`.`t` (a) VALUES (1)", W, 0, RTN},
    {"INSERT t (a) VALUES (1)", W, 0, RTN},
    {"INSERT IGNORE t (a) VALUES (1)", W, 0, RTN},
    {"INSERT IGNORE INTO t (a) VALUE (1)", W, 0, RTN},
    {"INSERT LOW_PRIORITY INTO t (a) VALUES (1)", W, 0, RTN},
    {"INSERT DELAYED t (a) VALUES (1)", W, 0, RTN},
    {"INSERT INTO t PARTITION (p0) (a) VALUES (1)", W, 0, RTN},
    {"INSERT INTO t (a) SELECT a FROM u", W, 0, RTN},
    {"INSERT INTO t SET a = 1", W, 0, 0},
    {"INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = VALUES(a)", W, 0, RTN},
    {"INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = f(a)", W, RTN, 0},
    {"INSERT INTO t VALUES (LAST_INSERT_ID())", W, PREV, 0},
    {"INSERT INTO t VALUES (GET_LOCK('a', 1))", W, LCK, 0},
    {"INSERT INTO t VALUES (NEXT VALUE FOR s)", W, 0, 0},
    {"INSERT INTO t VALUES (1) RETURNING id", W, 0, 0},
    {"insert into sbtest1 (id, k, c, pad) values (5012, 4993, '1234', '5678')", W, 0, RTN},
    {"REPLACE INTO t VALUES (1)", W, 0, RTN},
    {"REPLACE INTO t (a) VALUES (1)", W, 0, RTN},
    {"REPLACE t (a) VALUES (1)", W, 0, RTN},
    {"UPDATE t SET a = 1", W, 0, 0},
    {"UPDATE t SET a = 1 WHERE id = 2", W, 0, 0},
    {"UPDATE LOW_PRIORITY IGNORE t SET a = 1", W, 0, 0},
    {"UPDATE t1, t2 SET t1.a = t2.b", W, 0, 0},
    {"UPDATE t SET a = f(1)", W, RTN, 0},
    {"UPDATE sbtest1 SET k=k+1 WHERE id=5", W, 0, 0},
    {"UPDATE sbtest1 SET c='abc' WHERE id=5", W, 0, 0},
    {"DELETE FROM t", W, 0, 0},
    {"DELETE FROM t WHERE id = 1", W, 0, 0},
    {"DELETE QUICK FROM t WHERE id = 1", W, 0, 0},
    {"DELETE t1 FROM t1 JOIN t2 ON t1.a = t2.a", W, 0, 0},
    {"DELETE FROM t WHERE a = f(1)", W, RTN, 0},
    {"DELETE FROM sbtest1 WHERE id=5", W, 0, 0},
    {"LOAD DATA INFILE '/tmp/x' INTO TABLE t", W, 0, 0},
    {"LOAD DATA LOCAL INFILE 'x' INTO TABLE t (a, @b) SET c = @b", W, 0, 0},
    {"LOAD XML INFILE 'x' INTO TABLE t", W, 0, 0},
    /* SET */
    {"SET autocommit = 0", S, ACOFF, ACON},
    {"SET autocommit=1", S, ACON, ACOFF},
    {"SET AUTOCOMMIT = OFF", S, ACOFF, 0},
    {"SET autocommit = ON", S, ACON, 0},
    {"SET autocommit = false", S, ACOFF, 0},
    {"SET autocommit = TRUE", S, ACON, 0},
    {"SET @@autocommit = 0", S, ACOFF, 0},
    {"SET @@session.autocommit = 0", S, ACOFF, 0},
    {"SET SESSION autocommit = 1", S, ACON, 0},
    {"SET LOCAL autocommit = 0", S, ACOFF, 0},
    {"SET autocommit = 0, sql_mode = ''", S, ACOFF, 0},
    {"SET sql_mode = '', autocommit = 1", S, ACON, 0},
    {"SET GLOBAL autocommit = 0", W, 0, 0},
    {"SET @a = 1", S, VW, 0},
    {"SET @a := 1", S, VW, 0},
    {"SET @a = 1, @b = 2", S, VW, 0},
    {"SET @a = @b", S, VW | VR, 0},
    {"SET @`a b` = 1", S, VW, 0},
    {"SET @a = 'x;y'", S, VW, MUL},
    {"SET @a = NOW()", S, VW | UNR, 0},
    {"SET @a = (SELECT MAX(id) FROM t)", S, VW | UNR, 0},
    {"SET @a = 1 + 2", S, VW, UNR},
    /* what these change only the writer's connection gives */
    {"SET DEFAULT_STORAGE_ENGINE=MyISAM", S, UNR, 0},
    {"SET SESSION default_storage_engine = InnoDB", S, UNR, 0},
    {"SET @@session.storage_engine = Aria", S, UNR, 0},
    {"SET @@default_tmp_storage_engine = MEMORY", S, UNR, 0},
    {"SET sql_auto_is_null = 1", S, UNR, 0},
    {"SET sql_log_bin = 0", S, UNR, 0},
    {"SET time_zone = '+01:00', sql_auto_is_null = 1", S, UNR, 0},
    {"SET GLOBAL default_storage_engine = MyISAM", W, 0, UNR},
    {"SET default_week_format = 1", S, 0, UNR},
    {"SET @a = LAST_INSERT_ID()", W, VW | PREV, 0},
    {"SET @a = GET_LOCK('x', 1)", W, VW | LCK, 0},
    {"SET @a = f(1)", W, VW | RTN, 0},
    {"SET @a = (SELECT b FROM t FOR UPDATE)", W, VW, 0},
    {"SET sql_mode = 'ANSI'", S, 0, 0},
    {"SET SESSION sql_mode = 'ANSI'", S, 0, 0},
    {"SET @@session.sql_mode = 'ANSI'", S, 0, 0},
    {"SET @@sql_mode = 'ANSI'", S, 0, 0},
    {"SET @@local.sql_mode = ''", S, 0, 0},
    {"SET sql_mode = DEFAULT", S, 0, 0},
    {"SET time_zone = '+00:00'", S, 0, 0},
    {"SET max_statement_time = 10", S, 0, 0},
    {"SET NAMES utf8mb4", S, 0, 0},
    {"SET NAMES 'utf8mb4' COLLATE 'utf8mb4_general_ci'", S, 0, 0},
    {"SET NAMES utf8, autocommit = 0", S, ACOFF, 0},
    {"SET CHARACTER SET utf8", S, 0, 0},
    {"SET CHARSET utf8", S, 0, 0},
    {"SET GLOBAL max_connections = 100", W, 0, 0},
    {"SET @@global.max_connections = 100", W, 0, 0},
    {"SET @@GLOBAL.max_connections = 100", W, 0, 0},
    {"SET PERSIST max_connections = 100", W, 0, 0},
    {"SET PERSIST_ONLY max_connections = 100", W, 0, 0},
    {"SET sql_mode = '', GLOBAL max_connections = 100", W, 0, 0},
    {"SET PASSWORD = PASSWORD('x')", W, 0, 0},
    {"SET PASSWORD FOR 'u'@'h' = 'x'", W, 0, VR},
    {"SET DEFAULT ROLE r FOR u", W, 0, 0},
    {"SET ROLE r", S, 0, 0},
    {"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", S, STX, 0},
    {"SET TRANSACTION READ ONLY", S, STX, 0},
    {"SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE", S, STX, 0},
    {"SET GLOBAL TRANSACTION ISOLATION LEVEL SERIALIZABLE", W, STX, 0},
    {"SET STATEMENT max_statement_time=10 FOR SELECT 1", R, 0, 0},
    {"SET STATEMENT max_statement_time=10 FOR SELECT * FROM t FOR UPDATE", W, 0, 0},
    {"SET STATEMENT a=1, b=(2) FOR UPDATE t SET a = 1", W, 0, 0},
    {"SET STATEMENT sql_mode='' FOR INSERT INTO t VALUES (1)", W, 0, 0},
    {"SET STATEMENT sql_mode=''", W, 0, 0},
    {"SET STATEMENT a=1 FOR SET @a = 1", S, VW, 0},
    {"SET", W, 0, 0},
    {"SET a", W, 0, 0},
    {"SET 1 = 2", W, 0, 0},
    {"SET @a = 1 garbage", S, 0, 0},
    /* USE */
    {"USE db", S, USE, 0},
    {"use `my db`", S, USE, 0},
    {"USE db;", S, USE, MUL},
    {"USE", W, 0, USE},
    {"USE db extra", W, USE, 0},
    /* transactions */
    {"BEGIN", B, 0, 0},
    {"begin", B, 0, 0},
    {"BEGIN WORK", B, 0, 0},
    {"BEGIN;", B, 0, MUL},
    {"BEGIN NOT ATOMIC SELECT 1; END", W, 0, MUL},
    {"BEGIN foo", W, 0, 0},
    {"START TRANSACTION", B, 0, 0},
    {"START TRANSACTION READ WRITE", B, 0, 0},
    {"START TRANSACTION READ ONLY", BRO, 0, 0},
    {"start transaction read only", BRO, 0, 0},
    {"START TRANSACTION WITH CONSISTENT SNAPSHOT", B, 0, 0},
    {"START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY", BRO, 0, 0},
    {"START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT", BRO, 0, 0},
    {"START TRANSACTION READ ONLY, READ WRITE", B, 0, 0},
    {"START TRANSACTION READ", W, 0, 0},
    {"START TRANSACTION FOO", W, 0, 0},
    {"/* c */ START /* d */ TRANSACTION -- e\n READ ONLY", BRO, 0, 0},
    {"START SLAVE", W, 0, 0},
    {"START REPLICA", W, 0, 0},
    {"COMMIT", E, 0, 0},
    {"COMMIT WORK", E, 0, 0},
    {"commit;", E, 0, MUL},
    {"COMMIT AND NO CHAIN", E, 0, 0},
    {"COMMIT AND CHAIN", W, 0, 0},
    {"COMMIT RELEASE", E, 0, 0},
    {"COMMIT NO RELEASE", E, 0, 0},
    {"COMMIT WORK AND NO CHAIN NO RELEASE", E, 0, 0},
    {"ROLLBACK", E, 0, 0},
    {"ROLLBACK WORK", E, 0, 0},
    {"ROLLBACK AND CHAIN", W, 0, 0},
    {"ROLLBACK TO SAVEPOINT sp1", W, 0, 0},
    {"ROLLBACK TO sp1", W, 0, 0},
    {"ROLLBACK WORK TO SAVEPOINT sp1", W, 0, 0},
    {"SAVEPOINT sp1", W, 0, 0},
    {"RELEASE SAVEPOINT sp1", W, 0, 0},
    {"XA START 'x'", W, 0, 0},
    {"XA END 'x'", W, 0, 0},
    {"XA PREPARE 'x'", W, 0, 0},
    {"XA COMMIT 'x'", W, 0, 0},
    {"XA RECOVER", W, 0, 0},
    {"COMMIT garbage", W, 0, 0},
    /* SHOW, DESCRIBE, EXPLAIN, ANALYZE */
    {"SHOW TABLES", R, 0, PREV},
    {"SHOW DATABASES", R, 0, 0},
    {"SHOW CREATE TABLE t", R, 0, 0},
    {"SHOW VARIABLES LIKE 'x%'", R, 0, 0},
    {"SHOW GLOBAL STATUS", R, 0, 0},
    {"SHOW FULL PROCESSLIST", R, 0, 0},
    {"SHOW SLAVE STATUS", R, 0, 0},
    {"SHOW INDEX FROM t", R, 0, 0},
    {"show columns from t", R, 0, 0},
    {"SHOW WARNINGS", R, PREV, 0},
    {"SHOW WARNINGS LIMIT 10", R, PREV, 0},
    {"SHOW ERRORS", R, PREV, 0},
    {"SHOW COUNT(*) WARNINGS", R, PREV, 0},
    {"SHOW COUNT(*) ERRORS", R, PREV, 0},
    {"SHOW MASTER STATUS", W, 0, 0},
    {"SHOW BINARY LOGS", W, 0, 0},
    {"SHOW BINLOG EVENTS", W, 0, 0},
    {"SHOW EXPLAIN FOR 5", R, 0, 0},
    {"GET DIAGNOSTICS @n = NUMBER", R, PREV, 0},
    {"GET CURRENT DIAGNOSTICS CONDITION 1 @m = MESSAGE_TEXT", R, PREV, 0},
    {"GET STACKED DIAGNOSTICS @n = NUMBER", R, PREV, 0},
    {"GET foo", W, 0, 0},
    {"DESCRIBE t", R, 0, 0},
    {"DESC t", R, 0, 0},
    {"DESCRIBE db.t", R, 0, 0},
    {"DESCRIBE `t`", R, 0, 0},
    {"DESCRIBE t a", R, 0, 0},
    {"EXPLAIN t", R, 0, 0},
    {"EXPLAIN SELECT 1", R, 0, 0},
    {"EXPLAIN SELECT * FROM t WHERE a = 1", R, 0, 0},
    {"EXPLAIN EXTENDED SELECT 1", R, 0, 0},
    {"EXPLAIN PARTITIONS SELECT 1", R, 0, 0},
    {"EXPLAIN FORMAT=JSON SELECT 1", R, 0, 0},
    {"EXPLAIN FORMAT = TREE SELECT 1", R, 0, 0},
    {"EXPLAIN ANALYZE SELECT 1", R, 0, 0},
    {"DESCRIBE SELECT 1", R, 0, 0},
    {"EXPLAIN (SELECT 1)", R, 0, 0},
    {"EXPLAIN WITH c AS (SELECT 1) SELECT * FROM c", R, 0, 0},
    {"EXPLAIN SELECT * FROM t FOR UPDATE", W, 0, 0},
    {"EXPLAIN SELECT * FROM t LOCK IN SHARE MODE", W, 0, 0},
    {"EXPLAIN UPDATE t SET a = 1", W, 0, 0},
    {"EXPLAIN DELETE FROM t", W, 0, 0},
    {"EXPLAIN INSERT INTO t VALUES (1)", W, 0, 0},
    {"EXPLAIN REPLACE INTO t VALUES (1)", W, 0, 0},
    {"EXPLAIN SELECT f(1)", W, RTN, 0},
    {"EXPLAIN FOR CONNECTION 5", R, 0, 0},
    {"EXPLAIN", W, 0, 0},
    {"EXPLAIN ;", W, 0, MUL},
    {"ANALYZE SELECT 1", R, 0, 0},
    {"ANALYZE FORMAT=JSON SELECT * FROM t", R, 0, 0},
    {"ANALYZE SELECT * FROM t FOR UPDATE", W, 0, 0},
    {"ANALYZE UPDATE t SET a = 1", W, 0, 0},
    {"ANALYZE DELETE FROM t", W, 0, 0},
    {"ANALYZE TABLE t", W, IC, 0},
    {"ANALYZE NO_WRITE_TO_BINLOG TABLE t", W, 0, 0},
    {"ANALYZE LOCAL TABLE t", W, 0, 0},
    {"ANALYZE TABLE t PERSISTENT FOR ALL", W, 0, 0},
    {"ANALYZE foo", W, 0, 0},
    {"HELP 'select'", R, 0, 0},
    /* DDL and administration */
    {"CREATE TABLE t (a INT)", W, IC, TMP},
    {"CREATE TABLE t (a INT, KEY k (a), PRIMARY KEY (a))", W, IC, RTN},
    {"CREATE TABLE t (a VARCHAR(10) DEFAULT (UUID()))", W, IC, 0},
    {"CREATE TABLE t AS SELECT * FROM u", W, IC, 0},
    {"CREATE TEMPORARY TABLE t (a INT)", W, TMP, IC},
    {"create temporary table t select 1", W, TMP, IC},
    {"CREATE OR REPLACE TEMPORARY TABLE t (a INT)", W, TMP, IC},
    {"CREATE TEMPORARY TABLE IF NOT EXISTS t (a INT)", W, TMP, 0},
    {"DROP TEMPORARY TABLE t", W, TMP, IC},
    {"DROP TEMPORARY TABLE IF EXISTS t", W, TMP, 0},
    {"DROP TABLE t", W, IC, TMP},
    {"DROP TABLE IF EXISTS t", W, IC, 0},
    {"ALTER TABLE t ADD COLUMN b INT", W, IC, 0},
    {"ALTER TABLE t ADD INDEX i (a)", W, IC, RTN},
    {"CREATE INDEX i ON t (a)", W, IC, RTN},
    {"CREATE VIEW v AS SELECT 1", W, IC, 0},
    {"CREATE OR REPLACE VIEW v (a) AS SELECT 1", W, IC, 0},
    {"CREATE DATABASE d", W, IC, 0},
    {"DROP DATABASE d", W, IC, 0},
    {"RENAME TABLE a TO b", W, IC, 0},
    {"TRUNCATE TABLE t", W, IC, 0},
    {"TRUNCATE t", W, IC, 0},
    {"GRANT SELECT ON *.* TO 'u'@'%'", W, IC, VR},
    {"REVOKE ALL ON *.* FROM u", W, IC, 0},
    {"CREATE USER 'u'@'localhost' IDENTIFIED BY 'p'", W, 0, VR},
    {"DROP USER u", W, 0, 0},
    {"CREATE SEQUENCE s", W, 0, 0},
    {"CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END", W, 0, MUL},
    {"CREATE DEFINER=`root`@`localhost` PROCEDURE p() BEGIN INSERT INTO t VALUES (1); END", W, 0,
     MUL | VR},
    {"CREATE FUNCTION f() RETURNS INT RETURN 1", W, 0, 0},
    {"CREATE OR REPLACE FUNCTION f(a INT) RETURNS INT READS SQL DATA BEGIN RETURN 1; END", W, 0,
     MUL},
    {"CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.a = 1; END", W, 0, MUL},
    {"CREATE EVENT e ON SCHEDULE EVERY 1 HOUR DO BEGIN DELETE FROM t; END", W, 0, MUL},
    {"CREATE AGGREGATE FUNCTION f(x INT) RETURNS INT BEGIN RETURN 1; END", W, 0, MUL},
    {"DROP PROCEDURE p", W, 0, 0},
    {"DROP FUNCTION IF EXISTS f", W, 0, 0},
    {"LOCK TABLES t READ", W, IC | CLS_F_TABLE_LOCK, 0},
    {"LOCK TABLE t WRITE, u READ", W, CLS_F_TABLE_LOCK, 0},
    {"lock tables t as a read local", W, CLS_F_TABLE_LOCK, 0},
    {"UNLOCK TABLES", W, 0, CLS_F_TABLE_LOCK},
    {"FLUSH TABLES WITH READ LOCK", W, CLS_F_TABLE_LOCK, 0},
    {"FLUSH TABLES t, u WITH READ LOCK", W, CLS_F_TABLE_LOCK, 0},
    {"FLUSH TABLES t FOR EXPORT", W, CLS_F_TABLE_LOCK, 0},
    {"FLUSH TABLES", W, 0, CLS_F_TABLE_LOCK},
    {"FLUSH STATUS", W, 0, CLS_F_TABLE_LOCK},
    {"SELECT * FROM t LOCK IN SHARE MODE", W, 0, CLS_F_TABLE_LOCK},
    {"HANDLER t OPEN", W, 0, 0},
    {"HANDLER t READ FIRST", W, 0, 0},
    {"FLUSH TABLES", W, IC, 0},
    {"FLUSH LOCAL PRIVILEGES", W, 0, 0},
    {"KILL 5", W, 0, 0},
    {"KILL QUERY 5", W, 0, 0},
    {"RESET MASTER", W, 0, 0},
    {"PURGE BINARY LOGS TO 'x'", W, 0, 0},
    {"CHANGE MASTER TO MASTER_HOST='x'", W, 0, 0},
    {"STOP SLAVE", W, 0, 0},
    {"INSTALL PLUGIN x SONAME 'y'", W, 0, 0},
    {"UNINSTALL PLUGIN x", W, 0, 0},
    {"OPTIMIZE TABLE t", W, IC, 0},
    {"REPAIR TABLE t", W, IC, 0},
    {"CHECK TABLE t", W, 0, 0},
    {"CHECKSUM TABLE t", W, 0, 0},
    {"CACHE INDEX t IN c", W, 0, 0},
    {"BINLOG 'x'", W, 0, 0},
    {"SIGNAL SQLSTATE '45000'", W, 0, 0},
    {"PREPARE s FROM 'SELECT 1'", W, UNR, 0},
    {"FLUSH STATUS", W, CLS_F_SESSION_STATUS, 0},
    {"flush local status", W, CLS_F_SESSION_STATUS, 0},
    {"FLUSH NO_WRITE_TO_BINLOG STATUS", W, CLS_F_SESSION_STATUS, 0},
    {"FLUSH TABLES", W, 0, CLS_F_SESSION_STATUS},
    {"FLUSH LOCAL TABLES", W, 0, CLS_F_SESSION_STATUS},
    {"EXECUTE s", W, 0, 0},
    {"EXECUTE s USING @a", W, VR, 0},
    {"DEALLOCATE PREPARE s", W, 0, 0},
    {"SHUTDOWN", W, 0, 0},
    {"BACKUP STAGE START", W, 0, 0},
    /* CALL */
    {"CALL p()", W, RTN, 0},
    {"CALL p", W, RTN, 0},
    {"CALL db.p(1, 2)", W, RTN, 0},
    {"call `db`.`p`(@a)", W, RTN | VR | VW, 0},
    {"CALL p(1, @out)", W, RTN | VW, 0},
    {"CALL p(NOW())", W, RTN, 0},
    {"CALL", W, 0, 0},
    /* multi-statements */
    {"SELECT 1; SELECT 2", W, MUL, 0},
    {"SELECT 1;SELECT 2;", W, MUL, 0},
    {"SELECT 1; -- c\n SELECT 2", W, MUL, 0},
    {"SELECT 1; /* c */", R, 0, MUL},
    {"SELECT 1; -- c", R, 0, MUL},
    {"; SELECT 1", R, 0, MUL},
    {"SET @a = 1; SELECT @a", W, MUL | VW | VR, 0},
    {"SELECT 1; CREATE TEMPORARY TABLE t (a INT)", W, MUL | TMP, 0},
    {"BEGIN; SELECT 1; COMMIT", W, MUL, 0},
    {"USE db; SELECT 1", W, MUL | USE, 0},
    {"SELECT 1; SELECT GET_LOCK('a', 1)", W, MUL | LCK, 0},
    {"SELECT 1; SELECT 'x", W, MUL | UNT, 0},
    {"SELECT 1;\nSELECT 2", W, MUL, 0},
    /* unterminated strings and comments */
    {"SELECT 'abc", W, UNT, 0},
    {"SELECT \"abc", W, UNT, 0},
    {"SELECT `abc", W, UNT, 0},
    {"SELECT 'abc\\'", W, UNT, 0},
    {"SELECT 'abc''", W, UNT, 0},
    {"SELECT 1 /* abc", W, UNT, 0},
    {"SELECT 1 /*", W, UNT, 0},
    {"SELECT 1 /*/", W, UNT, 0},
    {"/* SELECT 1", W, UNT, 0},
    {"/*!40101 SELECT 1", W, UNT, 0},
    {"SELECT @'abc", W, UNT, 0},
    {"BEGIN /*", W, UNT, 0},
    {"SET @a = 'x", W, UNT, 0},
    {"'", W, UNT, 0},
    {"\"", W, UNT, 0},
    {"`", W, UNT, 0},
    {"SELECT '\\", W, UNT, 0},
    /* empty and comment-only */
    {"", R, 0, 0},
    {" ", R, 0, 0},
    {"\n\t\r ", R, 0, 0},
    {";", R, 0, MUL},
    {";;;", R, 0, MUL},
    {"-- only a comment", R, 0, 0},
    {"# only a comment", R, 0, 0},
    {"/* only a comment */", R, 0, 0},
    {"/* a */ -- b\n # c", R, 0, 0},
    {"/* mysteer:writer */", W, HW, 0},
    {"/* mysteer:reader */", R, HR, 0},
    /* not understood */
    {"FOO BAR", W, 0, 0},
    {"1", W, 0, 0},
    {"'a'", W, 0, 0},
    {"@a", W, 0, 0},
    {"SELEC 1", W, 0, 0},
    {"SELECTX 1", W, 0, 0},
    {"DECLARE x INT", W, 0, 0},
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

static void check_row(const struct tcase_row *r, const struct cls_options *opt)
{
	struct cls_result res;

	cls_classify(opt, r->sql, strlen(r->sql), &res);
	ck_assert_msg(res.token == r->tok, "%s: token %s (%s), expected %s", r->sql,
	              cls_token_name(res.token), cls_reason_name(res.reason),
	              cls_token_name(r->tok));
	ck_assert_msg((res.flags & r->set) == r->set, "%s: flags %#x lack %#x", r->sql, res.flags,
	              r->set);
	ck_assert_msg((res.flags & r->clear) == 0, "%s: flags %#x have %#x", r->sql, res.flags,
	              res.flags & r->clear);
}

START_TEST(table_row)
{
	check_row(&rows[_i], NULL);
}
END_TEST

/* The same rows in other clothes: lowercase keywords are already covered;
 * here a leading comment and a trailing ";" must not change the decision. */
START_TEST(table_row_wrapped)
{
	const struct tcase_row *r = &rows[_i];
	char buf[512];
	struct cls_result a, b;

	if (strlen(r->sql) + 32 > sizeof(buf) || r->tok == W)
		return; /* a write stays a write; wrapping may not change reads */
	snprintf(buf, sizeof(buf), "/* app:42 */ %s", r->sql);
	cls_classify(NULL, r->sql, strlen(r->sql), &a);
	cls_classify(NULL, buf, strlen(buf), &b);
	ck_assert_msg(a.token == b.token, "%s: %s vs %s", buf, cls_token_name(a.token),
	              cls_token_name(b.token));
}
END_TEST

/* The fast path (plain SELECT/DML) must decide exactly as the full parser:
 * every row, and every row with a prefix that keeps it on the fast path. */
static void same_as_full(const char *sql, size_t n)
{
	struct cls_result a, b;

	cls_classify(NULL, sql, n, &a);
	cls_classify_full(NULL, sql, n, &b);
	ck_assert_msg(a.token == b.token && a.flags == b.flags && a.reason == b.reason,
	              "%.*s: fast %s/%s/%#x, full %s/%s/%#x", (int)n, sql, cls_token_name(a.token),
	              cls_reason_name(a.reason), a.flags, cls_token_name(b.token),
	              cls_reason_name(b.reason), b.flags);
}

START_TEST(fast_path_row)
{
	const char *sql = rows[_i].sql;
	char buf[600];

	same_as_full(sql, strlen(sql));
	for (size_t cut = 0; cut < strlen(sql); cut += 3) /* every prefix: unterminated too */
		same_as_full(sql, cut);
	snprintf(buf, sizeof(buf), "SELECT a FROM t WHERE x = (%s)", sql);
	same_as_full(buf, strlen(buf));
	snprintf(buf, sizeof(buf), "INSERT INTO t VALUES (%s)", sql);
	same_as_full(buf, strlen(buf));
	snprintf(buf, sizeof(buf), "UPDATE t SET a = 1 WHERE b IN (%s)", sql);
	same_as_full(buf, strlen(buf));
}
END_TEST

/* The fast path works on 16-byte blocks and 64-bit masks: move the part
 * that matters across every block and word boundary. */
START_TEST(fast_path_offsets)
{
	static const struct {
		const char *head, *tail;
		enum cls_token tok;
	} probes[] = {
	    {"SELECT ", " FROM t FOR UPDATE", W},
	    {"SELECT ", " FROM t LOCK IN SHARE MODE", W},
	    {"SELECT ", " INTO @x FROM t", W},
	    {"SELECT ", ", f(1) FROM t", W},
	    {"SELECT ", ", GET_LOCK('a', 1)", W},
	    {"SELECT ", ", COUNT(*) FROM sbtest1 WHERE id IN (1, 2)", R},
	    {"SELECT ", " FROM sbtest1 WHERE c = 'FOR UPDATE' AND id=5", R},
	    {"SELECT ", " FROM t WHERE a = 1; SELECT 2", W},
	    {"SELECT ", " FROM t /* mysteer:writer */", W},
	    {"SELECT ", " FROM db.t WHERE a = 1.5", R},
	    {"SELECT ", " FROM t WHERE a = 'x", W},
	    {"UPDATE t SET a = 1, b = ", " WHERE id = @x", W},
	    {"INSERT INTO t (a, b) VALUES (1, ", ", LAST_INSERT_ID())", W},
	    {"INSERT INTO t (a, b) VALUES (1, ", ", 'x')", W},
	    {"DELETE FROM t WHERE a = ", " -- c", W},
	};
	char buf[1024];

	for (size_t k = 0; k < sizeof(probes) / sizeof(probes[0]); k++) {
		for (size_t pad = 0; pad < 200; pad++) {
			size_t n = (size_t)snprintf(buf, sizeof(buf), "%s", probes[k].head);
			struct cls_result r;

			for (size_t i = 0; i < pad; i++)
				buf[n++] = "abcdefghij"[i % 10];
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s", probes[k].tail);
			cls_classify(NULL, buf, n, &r);
			ck_assert_msg(r.token == probes[k].tok, "%s: %s", buf,
			              cls_token_name(r.token));
			same_as_full(buf, n);
			/* the same with spaces: many short words */
			for (size_t i = 0; i < pad; i += 3)
				buf[strlen(probes[k].head) + i] = ' ';
			cls_classify(NULL, buf, n, &r);
			ck_assert_msg(r.token == probes[k].tok, "%s: %s", buf,
			              cls_token_name(r.token));
			same_as_full(buf, n);
		}
	}
}
END_TEST

/* Reasons for a few rows, so that --explain means something. */
START_TEST(reasons)
{
	static const struct {
		const char *sql;
		enum cls_reason reason;
	} rr[] = {
	    {"", CLS_R_EMPTY},
	    {"-- c", CLS_R_EMPTY},
	    {"SELECT 1", CLS_R_SELECT},
	    {"SHOW TABLES", CLS_R_SHOW},
	    {"INSERT INTO t VALUES (1)", CLS_R_DML},
	    {"CREATE TABLE t (a INT)", CLS_R_DDL},
	    {"SELECT 1 FOR UPDATE", CLS_R_LOCKING_READ},
	    {"SELECT 1 INTO @a", CLS_R_SELECT_INTO},
	    {"SELECT GET_LOCK('a', 1)", CLS_R_WRITE_FUNCTION},
	    {"SELECT f(1)", CLS_R_UNKNOWN_FUNCTION},
	    {"CALL p()", CLS_R_CALL},
	    {"SELECT 1; SELECT 2", CLS_R_MULTI},
	    {"/* mysteer:writer */ SELECT 1", CLS_R_HINT},
	    {"SET @a = 1", CLS_R_SET},
	    {"SET GLOBAL a = 1", CLS_R_SET_GLOBAL},
	    {"BEGIN", CLS_R_TRANSACTION},
	    {"SELECT 'x", CLS_R_UNTERMINATED},
	    {"FOO", CLS_R_NOT_UNDERSTOOD},
	    {"EXPLAIN SELECT 1", CLS_R_EXPLAIN},
	    {"FLUSH TABLES", CLS_R_ADMIN},
	    {"SELECT @a := 1", CLS_R_USER_VAR_WRITE},
	    /* a read but for the previous statement's result: the proxy may run it
	     * on that statement's connection, replica or not */
	    {"SELECT FOUND_ROWS()", CLS_R_PREV_RESULT},
	    {"SELECT ROW_COUNT(), 1 + 1", CLS_R_PREV_RESULT},
	    {"select found_rows() as n", CLS_R_PREV_RESULT},
	    {"SELECT LAST_INSERT_ID()", CLS_R_WRITE_FUNCTION},
	    {"SELECT @@identity", CLS_R_WRITE_FUNCTION},
	    {"SELECT FOUND_ROWS(), LAST_INSERT_ID()", CLS_R_WRITE_FUNCTION},
	    {"SELECT FOUND_ROWS(), NEXTVAL(s)", CLS_R_WRITE_FUNCTION},
	    {"SELECT NEXTVAL(s), FOUND_ROWS()", CLS_R_WRITE_FUNCTION},
	    {"SELECT FOUND_ROWS(), GET_LOCK('a', 1)", CLS_R_WRITE_FUNCTION},
	    {"SELECT FOUND_ROWS(), f(1)", CLS_R_WRITE_FUNCTION},
	    {"SELECT FOUND_ROWS() INTO @n", CLS_R_WRITE_FUNCTION},
	    {"SELECT @n := FOUND_ROWS()", CLS_R_USER_VAR_WRITE},
	    {"SELECT FOUND_ROWS() FOR UPDATE", CLS_R_WRITE_FUNCTION},
	    {"INSERT INTO t VALUES (ROW_COUNT())", CLS_R_DML},
	    {"EXPLAIN SELECT FOUND_ROWS()", CLS_R_WRITE_FUNCTION},
	    {"/* mysteer:writer */ SELECT FOUND_ROWS()", CLS_R_HINT},
	    {"SELECT FOUND_ROWS(); SELECT 1", CLS_R_MULTI},
	};

	for (size_t i = 0; i < sizeof(rr) / sizeof(rr[0]); i++) {
		struct cls_result res;

		cls_classify(NULL, rr[i].sql, strlen(rr[i].sql), &res);
		ck_assert_msg(res.reason == rr[i].reason, "%s: reason %s, expected %s", rr[i].sql,
		              cls_reason_name(res.reason), cls_reason_name(rr[i].reason));
	}
	ck_assert_str_eq(cls_token_name(CLS_BEGIN_RO), "begin_ro");
	ck_assert_str_eq(cls_reason_name(CLS_R__COUNT), "unknown");
	ck_assert_str_eq(cls_flag_name(0), "temp_table");
	ck_assert_str_eq(cls_flag_name(16), "calc_found_rows");
	ck_assert_str_eq(cls_flag_name(17), "routine_tracked");
	ck_assert_str_eq(cls_flag_name(18), "session_status");
	ck_assert_str_eq(cls_flag_name(19), "table_lock");
	ck_assert_ptr_null(cls_flag_name(20));
}
END_TEST

START_TEST(use_span)
{
	static const char *sql[] = {"USE shop", "use `shop`", "/* x */ USE shop ;"};

	for (size_t i = 0; i < 3; i++) {
		struct cls_result r;

		cls_classify(NULL, sql[i], strlen(sql[i]), &r);
		ck_assert(r.flags & CLS_F_USE);
		ck_assert_uint_eq(r.db_len, 4);
		ck_assert(memcmp(sql[i] + r.db_off, "shop", 4) == 0);
	}
}
END_TEST

/* ---- routines --------------------------------------------------------- */

static struct cls_routines *routines(void)
{
	struct cls_routines *rt = cls_routines_new();

	ck_assert_ptr_nonnull(rt);
	ck_assert_int_eq(
	    cls_routines_add(rt, "shop", "price", CLS_ROUTINE_FUNCTION, CLS_ACCESS_READS_SQL_DATA),
	    0);
	ck_assert_int_eq(
	    cls_routines_add(rt, "shop", "pure", CLS_ROUTINE_FUNCTION, CLS_ACCESS_NO_SQL), 0);
	ck_assert_int_eq(cls_routines_add(rt, "shop", "bump", CLS_ROUTINE_FUNCTION,
	                                  CLS_ACCESS_MODIFIES_SQL_DATA),
	                 0);
	ck_assert_int_eq(
	    cls_routines_add(rt, "shop", "plain", CLS_ROUTINE_FUNCTION, CLS_ACCESS_CONTAINS_SQL),
	    0);
	ck_assert_int_eq(cls_routines_add(rt, "shop", "report", CLS_ROUTINE_PROCEDURE,
	                                  CLS_ACCESS_READS_SQL_DATA),
	                 0);
	ck_assert_int_eq(cls_routines_add(rt, "shop", "purge", CLS_ROUTINE_PROCEDURE,
	                                  CLS_ACCESS_MODIFIES_SQL_DATA),
	                 0);
	ck_assert_int_eq(
	    cls_routines_add(rt, "Other", "Price", CLS_ROUTINE_FUNCTION, CLS_ACCESS_READS_SQL_DATA),
	    0);
	return rt;
}

static const struct {
	const char *sql;
	const char *db;
	enum cls_token untrusted, trusted;
} routine_rows[] = {
    {"SELECT price(1)", "shop", W, R},
    {"SELECT PRICE(1)", "shop", W, R},
    {"SELECT `price`(1)", "shop", W, R},
    {"SELECT shop.price(1)", NULL, W, R},
    {"SELECT `shop`.`price`(1)", NULL, W, R},
    {"SELECT SHOP.price(1)", NULL, W, R},
    {"SELECT price(1)", NULL, W, W},
    {"SELECT price(1)", "other", W, R},
    {"SELECT other.price(1)", "shop", W, R},
    {"SELECT price(1)", "nowhere", W, W},
    {"SELECT pure(1)", "shop", W, R},
    {"SELECT bump(1)", "shop", W, W},
    {"SELECT plain(1)", "shop", W, W},
    {"SELECT unknown(1)", "shop", W, W},
    {"SELECT report(1)", "shop", W, W}, /* a procedure, not a function */
    {"SELECT price(1), bump(2)", "shop", W, W},
    {"SELECT price(1) FOR UPDATE", "shop", W, W},
    {"SELECT price(a) FROM t WHERE pure(b) > 1", "shop", W, R},
    {"SELECT price(GET_LOCK('a', 1))", "shop", W, W},
    {"DO price(1)", "shop", W, R},
    {"CALL report()", "shop", W, R},
    {"CALL report", "shop", W, R},
    {"CALL shop.report(1)", NULL, W, R},
    {"CALL report()", NULL, W, W},
    {"CALL purge()", "shop", W, W},
    {"CALL price()", "shop", W, W}, /* a function, not a procedure */
    {"CALL report(bump(1))", "shop", W, W},
    {"CALL report(price(1))", "shop", W, R},
    {"SET @a = price(1)", "shop", W, S},
    {"INSERT INTO t VALUES (price(1))", "shop", W, W},
};

START_TEST(routine_row)
{
	struct cls_routines *rt = routines();
	struct cls_options opt = {.routines = rt};
	struct cls_result r;
	const char *sql = routine_rows[_i].sql;

	opt.current_db = routine_rows[_i].db;
	opt.current_db_len = opt.current_db ? strlen(opt.current_db) : 0;
	cls_classify(&opt, sql, strlen(sql), &r);
	ck_assert_msg(r.token == routine_rows[_i].untrusted, "%s untrusted: %s", sql,
	              cls_token_name(r.token));
	ck_assert(r.flags & CLS_F_ROUTINE);
	opt.trust_routines = true;
	cls_classify(&opt, sql, strlen(sql), &r);
	ck_assert_msg(r.token == routine_rows[_i].trusted, "%s trusted: %s", sql,
	              cls_token_name(r.token));
	ck_assert(r.flags & CLS_F_ROUTINE);
	cls_routines_free(rt);
}
END_TEST

START_TEST(routine_multi_use)
{
	struct cls_routines *rt = routines();
	struct cls_options opt = {.routines = rt, .trust_routines = true};
	struct cls_result r;
	const char *sql = "USE shop; SELECT price(1)";

	/* a multi-statement is a write whatever its parts; but the USE must
	 * move the schema for the later parts (flags only here) */
	cls_classify(&opt, sql, strlen(sql), &r);
	ck_assert_int_eq(r.token, CLS_WRITE);
	ck_assert(r.flags & CLS_F_ROUTINE);
	cls_classify(NULL, "SELECT price(1)", 15, &r);
	ck_assert_int_eq(r.token, CLS_WRITE);
	cls_routines_free(rt);
}
END_TEST

/* A procedure marked tracked flags its CALL, trusted or not; an unmarked
 * one, a function, an unknown name and a redefinition do not. */
START_TEST(routine_tracked)
{
	struct cls_routines *rt = routines();
	struct cls_options opt = {.routines = rt, .current_db = "shop", .current_db_len = 4};
	struct cls_result r;
	static const struct {
		const char *sql;
		bool tracked;
	} rows[] = {
	    {"CALL purge()", true},    {"CALL shop.purge(1)", true},  {"CALL PURGE", true},
	    {"CALL report()", false},  {"CALL other.purge()", false}, {"SELECT price(1)", false},
	    {"CALL nothing()", false},
	};

	ck_assert_int_eq(cls_routines_set_tracked(rt, "shop", "purge"), 0);
	ck_assert_int_eq(cls_routines_set_tracked(rt, "shop", "price"), -1); /* a function */
	ck_assert_int_eq(cls_routines_set_tracked(rt, "shop", "nothing"), -1);
	for (int trust = 0; trust < 2; trust++) {
		opt.trust_routines = trust;
		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			cls_classify(&opt, rows[i].sql, strlen(rows[i].sql), &r);
			ck_assert_msg(!!(r.flags & CLS_F_ROUTINE_TRACKED) == rows[i].tracked,
			              "%s: routine_tracked %d", rows[i].sql,
			              !!(r.flags & CLS_F_ROUTINE_TRACKED));
			cls_classify_full(&opt, rows[i].sql, strlen(rows[i].sql), &r);
			ck_assert(!!(r.flags & CLS_F_ROUTINE_TRACKED) == rows[i].tracked);
		}
	}
	ck_assert_int_eq(cls_routines_add(rt, "shop", "purge", CLS_ROUTINE_PROCEDURE,
	                                  CLS_ACCESS_MODIFIES_SQL_DATA),
	                 0);
	cls_classify(&opt, "CALL purge()", 12, &r);
	ck_assert_msg(!(r.flags & CLS_F_ROUTINE_TRACKED), "a redefinition is not tracked");
	cls_routines_free(rt);
}
END_TEST

START_TEST(routine_tsv)
{
	char path[] = "/tmp/test_classify_XXXXXX", err[256];
	struct cls_routines *rt;
	struct cls_options opt = {.trust_routines = true, .current_db = "s", .current_db_len = 1};
	struct cls_result r;
	int fd = mkstemp(path);
	const char *good = "# schema\tname\tkind\taccess\n"
	                   "s\tf\tFUNCTION\tREADS SQL DATA\n"
	                   "s\tg\tfunction\tno_sql\r\n"
	                   "\n"
	                   "s\tp\tPROCEDURE\tMODIFIES SQL DATA\n";

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, good, strlen(good)), (ssize_t)strlen(good));
	close(fd);
	rt = cls_routines_new();
	ck_assert_int_eq(cls_routines_load_tsv(rt, path, err, sizeof(err)), 0);
	opt.routines = rt;
	cls_classify(&opt, "SELECT f(1), g(2)", 17, &r);
	ck_assert_int_eq(r.token, CLS_READ);
	cls_classify(&opt, "CALL p()", 8, &r);
	ck_assert_int_eq(r.token, CLS_WRITE);
	cls_routines_free(rt);

	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "s\tf\tFUNCTION\tREADS SQL DATA\ns\tf\tVIEW\tNO SQL\n", 42), 42);
	close(fd);
	rt = cls_routines_new();
	ck_assert_int_eq(cls_routines_load_tsv(rt, path, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, ":2: kind") != NULL, "%s", err);
	cls_routines_free(rt);

	rt = cls_routines_new();
	ck_assert_int_eq(cls_routines_load_tsv(rt, "/nonexistent/x", err, sizeof(err)), -1);
	ck_assert(strstr(err, "/nonexistent/x:0:") == err);
	cls_routines_free(rt);
	unlink(path);
}
END_TEST

START_TEST(routine_many)
{
	struct cls_routines *rt = cls_routines_new();
	struct cls_options opt = {.trust_routines = true, .current_db = "db", .current_db_len = 2};
	char name[32], sql[64];
	struct cls_result r;

	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "fn%d", i);
		ck_assert_int_eq(
		    cls_routines_add(rt, "db", name, CLS_ROUTINE_FUNCTION,
		                     i % 2 ? CLS_ACCESS_NO_SQL : CLS_ACCESS_MODIFIES_SQL_DATA),
		    0);
	}
	opt.routines = rt;
	for (int i = 0; i < 5000; i += 97) {
		snprintf(sql, sizeof(sql), "SELECT FN%d(1)", i);
		cls_classify(&opt, sql, strlen(sql), &r);
		ck_assert_int_eq(r.token, i % 2 ? CLS_READ : CLS_WRITE);
	}
	cls_routines_free(rt);
}
END_TEST

/* ---- thread safety ---------------------------------------------------- */

static void *classify_all(void *arg)
{
	unsigned long bad = 0;

	for (int rep = 0; rep < 20; rep++)
		for (size_t i = 0; i < NROWS; i++) {
			struct cls_result r;

			cls_classify(NULL, rows[i].sql, strlen(rows[i].sql), &r);
			bad += r.token != rows[i].tok;
		}
	*(unsigned long *)arg = bad;
	return NULL;
}

START_TEST(threads)
{
	pthread_t th[4];
	unsigned long bad[4];

	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, classify_all, &bad[i]), 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_uint_eq(bad[i], 0);
	}
}
END_TEST

/* ---- hostile input ---------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Classifies buf and checks the time against a generous deadline: the point
 * is "linear, no blow-up", not speed (the bench measures speed). The
 * sanitizer build is several times slower: it gets three times as long;
 * under valgrind the slowest case takes 1.4-1.8 s of the 5 here, too little
 * slack on a loaded machine: four times as long. */
#if defined(__SANITIZE_ADDRESS__)
#define DEADLINE_S 15.0
#else
#define DEADLINE_S 5.0
#endif
#define VALGRIND_FACTOR 4.0
static struct cls_result timed(const char *what, const char *buf, size_t n)
{
	struct cls_result r;
	double t0 = now_s(), dt;

	cls_classify(NULL, buf, n, &r);
	dt = now_s() - t0;
	printf("measured: classify %s (%zu bytes): %.1f ms, %.0f MB/s\n", what, n, dt * 1e3,
	       n / dt / 1e6);
	double deadline = RUNNING_ON_VALGRIND ? DEADLINE_S * VALGRIND_FACTOR : DEADLINE_S;
	ck_assert_msg(dt < deadline, "%s took %.2f s (deadline %.0f s)", what, dt, deadline);
	return r;
}

#define MB16 (16u << 20)

START_TEST(huge_string)
{
	char *b = malloc(MB16);
	struct cls_result r;
	size_t n;

	ck_assert_ptr_nonnull(b);
	n = (size_t)sprintf(b, "SELECT * FROM t WHERE doc = '");
	memset(b + n, 'x', MB16 - n - 20);
	for (size_t i = n; i < MB16 - 20; i += 4099)
		b[i] = '\\'; /* escapes the next byte */
	n = MB16 - 20;
	n += (size_t)sprintf(b + n, "' FOR UPDATE");
	r = timed("16 MB string literal", b, n);
	ck_assert_int_eq(r.token, CLS_WRITE);
	ck_assert_int_eq(r.reason, CLS_R_LOCKING_READ);
	free(b);
}
END_TEST

START_TEST(huge_in_list)
{
	char *b = malloc(MB16 + 64);
	struct cls_result r;
	size_t n = (size_t)sprintf(b, "SELECT * FROM t WHERE id IN (1");

	while (n < MB16 - 16)
		n += (size_t)sprintf(b + n, ",%u", (unsigned)(n % 100000));
	n += (size_t)sprintf(b + n, ")");
	r = timed("16 MB IN list", b, n);
	ck_assert_int_eq(r.token, CLS_READ);
	b[n - 1] = ' ';
	n--;
	n += (size_t)sprintf(b + n, ") AND f(1)");
	r = timed("16 MB IN list + stored function", b, n);
	ck_assert_int_eq(r.token, CLS_WRITE);
	free(b);
}
END_TEST

START_TEST(huge_insert)
{
	char *b = malloc(MB16 + 128);
	struct cls_result r;
	size_t n = (size_t)sprintf(b, "INSERT INTO t (a, b, c) VALUES ");

	while (n < MB16 - 100)
		n += (size_t)sprintf(b + n, "(%zu, 'abc%zu', @v),", n, n);
	n += (size_t)sprintf(b + n, "(0, GET_LOCK('x', 1), 1)");
	r = timed("16 MB multi-row INSERT", b, n);
	ck_assert_int_eq(r.token, CLS_WRITE);
	ck_assert(r.flags & CLS_F_NAMED_LOCK);
	ck_assert(r.flags & CLS_F_USER_VAR_READ);
	free(b);
}
END_TEST

START_TEST(huge_comments)
{
	char *b = malloc(MB16);
	struct cls_result r;
	size_t n = 0;

	while (n < MB16 - 64)
		n += (size_t)sprintf(b + n, "/* c * / */ -- x\n# y\n");
	n += (size_t)sprintf(b + n, "SELECT 1");
	r = timed("16 MB of comments", b, n);
	ck_assert_int_eq(r.token, CLS_READ);
	free(b);
}
END_TEST

START_TEST(deep_parens)
{
	size_t depth = 100000, n = 0;
	char *b = malloc(2 * depth + 64);
	struct cls_result r;

	for (size_t i = 0; i < depth; i++)
		b[n++] = '(';
	n += (size_t)sprintf(b + n, "SELECT 1");
	for (size_t i = 0; i < depth; i++)
		b[n++] = ')';
	r = timed("100000 nested parentheses", b, n);
	ck_assert_int_eq(r.token, CLS_READ);

	n = (size_t)sprintf(b, "SELECT ");
	for (size_t i = 0; i < depth; i++)
		b[n++] = '(';
	n += (size_t)sprintf(b + n, "GET_LOCK('a', 1)");
	for (size_t i = 0; i < depth; i++)
		b[n++] = ')';
	r = timed("100000 nested parentheses around GET_LOCK", b, n);
	ck_assert_int_eq(r.token, CLS_WRITE);

	n = 0;
	for (size_t i = 0; i < depth; i++)
		b[n++] = ')';
	r = timed("100000 closing parentheses", b, n);
	ck_assert_int_eq(r.token, CLS_WRITE);
	free(b);
}
END_TEST

START_TEST(nul_bytes)
{
	static const char a[] = "SELECT 1\0; DROP TABLE t";
	static const char b[] = "SELECT 'a\0b' FROM t";
	static const char c[] = "SELECT 1 /* \0 */";
	static const char d[] = "\0";
	struct cls_result r;

	cls_classify(NULL, a, sizeof(a) - 1, &r);
	ck_assert_int_eq(r.token, CLS_WRITE);
	cls_classify(NULL, a, 8, &r); /* the length is what counts, not the NUL */
	ck_assert_int_eq(r.token, CLS_READ);
	cls_classify(NULL, b, sizeof(b) - 1, &r);
	ck_assert_int_eq(r.token, CLS_READ);
	cls_classify(NULL, c, sizeof(c) - 1, &r);
	ck_assert_int_eq(r.token, CLS_READ);
	cls_classify(NULL, d, 1, &r);
	ck_assert_int_eq(r.token, CLS_WRITE);

	char *z = calloc(1, MB16);
	ck_assert_ptr_nonnull(z);
	r = timed("16 MB of NUL bytes", z, MB16);
	ck_assert_int_eq(r.token, CLS_WRITE);
	free(z);
}
END_TEST

START_TEST(invalid_utf8)
{
	static const char a[] = "SELECT \xff\xfe\xc3 FROM t";
	static const char b[] = "SELECT '\xc3\x28\xa0\xa1' FROM t";
	static const char c[] = "\xef\xbb\xbfSELECT 1";
	static const char d[] = "SELECT \xc0\xaf(1)";
	struct cls_result r;

	cls_classify(NULL, a, sizeof(a) - 1, &r);
	ck_assert_int_eq(r.token, CLS_READ);
	cls_classify(NULL, b, sizeof(b) - 1, &r);
	ck_assert_int_eq(r.token, CLS_READ);
	cls_classify(NULL, c, sizeof(c) - 1, &r); /* a BOM is no keyword */
	ck_assert_int_eq(r.token, CLS_WRITE);
	cls_classify(NULL, d, sizeof(d) - 1, &r);
	ck_assert_int_eq(r.token, CLS_WRITE);

	char *z = malloc(MB16);
	ck_assert_ptr_nonnull(z);
	for (size_t i = 0; i < MB16; i++)
		z[i] = (char)(0x80 | (i * 7919 % 128));
	r = timed("16 MB of invalid UTF-8", z, MB16);
	ck_assert_int_eq(r.token, CLS_WRITE);
	free(z);
}
END_TEST

START_TEST(random_bytes)
{
	/* every byte value in every position of short inputs: a token, and
	 * never a crash (the fuzzer goes further) */
	unsigned seed = 12345;
	char b[64];

	for (int i = 0; i < 200000; i++) {
		size_t n = (size_t)(rand_r(&seed) % sizeof(b));
		struct cls_result r;

		for (size_t k = 0; k < n; k++)
			b[k] = "SELECT (),;'\"`@:=-#/*!+ \nFORUPDATEINTO\\x\0"[rand_r(&seed) % 42];
		cls_classify(NULL, b, n, &r);
		ck_assert_int_le(r.token, CLS_END);
		ck_assert_int_lt(r.reason, CLS_R__COUNT);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("classify");
	TCase *tc = tcase_create("rows");
	TCase *th = tcase_create("hostile");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, table_row, 0, (int)NROWS);
	tcase_add_loop_test(tc, table_row_wrapped, 0, (int)NROWS);
	tcase_add_loop_test(tc, fast_path_row, 0, (int)NROWS);
	tcase_add_test(tc, fast_path_offsets);
	tcase_add_test(tc, reasons);
	tcase_add_test(tc, use_span);
	tcase_add_loop_test(tc, routine_row, 0,
	                    (int)(sizeof(routine_rows) / sizeof(routine_rows[0])));
	tcase_add_test(tc, routine_multi_use);
	tcase_add_test(tc, routine_tracked);
	tcase_add_test(tc, routine_tsv);
	tcase_add_test(tc, routine_many);
	tcase_add_test(tc, threads);
	suite_add_tcase(s, tc);
	tcase_set_timeout(tc, 60); /* the sanitizer build on a busy machine */
	tcase_set_timeout(th, 60);
	tcase_add_test(th, huge_string);
	tcase_add_test(th, huge_in_list);
	tcase_add_test(th, huge_insert);
	tcase_add_test(th, huge_comments);
	tcase_add_test(th, deep_parens);
	tcase_add_test(th, nul_bytes);
	tcase_add_test(th, invalid_utf8);
	tcase_add_test(th, random_bytes);
	suite_add_tcase(s, th);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	printf("classify: %zu table rows, %zu routine rows\n", NROWS,
	       sizeof(routine_rows) / sizeof(routine_rows[0]));
	return failed ? 1 : 0;
}
