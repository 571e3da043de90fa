#!/usr/bin/env bash
# proxy_asdirect.sh - what MariaDB's own test suite found different through
# 6450 than directly (tests/mtr), each checked on its own with real clients
# against the sandbox's servers (default engine InnoDB) and mysteerd:
#   - a CALL whose procedure returns result sets from inside a cursor loop
#     (plain SELECT and dynamic SQL in a FOR loop) answers, and does not hang;
#   - @@warning_count and SHOW WARNINGS after a ROLLBACK that warned, when the
#     client itself asked SHOW WARNINGS in between (mariadb --show-warnings,
#     as mariadb-test does);
#   - SET default_storage_engine, then CREATE TABLE: the table the session
#     reads is of that engine;
#   - sql_auto_is_null: WHERE auto_increment_column IS NULL finds the row just
#     inserted;
#   - a backend login the server refuses for the client's schema name gives
#     the server's error (1300), not the proxy's 1158;
#   - MariaDB's extended type metadata (format=json) reaches the client;
#   - a write that failed after writing a row (MyISAM): the next read sees it;
#   - FLUSH STATUS, reads, SHOW STATUS: the session's counters as directly;
#   - a read on a late replica of a schema the session just made and USEd;
#   - SET GLOBAL, then the global value read by the same session;
#   - ANALYZE TABLE (a write answered by a result set), then its statistics.
. "$(dirname "$0")/lib.sh"
itest_init proxy_asdirect
itest_sandbox_up
# a GTID wait bound longer than the replicas' delay of checks 8 and 9
ITEST_PROXY_EXTRA="workers = 2
read_your_writes_ms = 5000" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || { itest_done; exit 1; }
PP=6450
wait_until 20 bash -c "[ \"\$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B -e 'SELECT 1' 2>/dev/null)\" = 1 ]" >/dev/null

# q PORT SQL [client options...]: one client session, batch output, at most 30 s.
q() {
	local port=$1 sql=$2
	shift 2
	timeout -k 5 30 mariadb --no-defaults -h127.0.0.1 -P"$port" -uapp -papp --connect-timeout=5 \
		-N -B "$@" -e "$sql" 2>&1
}

mariadb --no-defaults -uroot -S "$SANDBOX_DIR/$P1/mysqld.sock" <<'SQL' || echo "not ok - setup"
CREATE DATABASE asd;
CREATE TABLE asd.t (a INT) ENGINE=InnoDB;
INSERT INTO asd.t VALUES (1), (2), (3);
CREATE TABLE asd.tw (n INT) ENGINE=MyISAM;
CREATE TABLE asd.tj (j JSON);
INSERT INTO asd.tj VALUES ('{"k": 1}');
DELIMITER //
CREATE PROCEDURE asd.p_loop() BEGIN
  DECLARE done INT DEFAULT 0;
  DECLARE v INT;
  DECLARE c CURSOR FOR SELECT a FROM asd.t ORDER BY a;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  OPEN c;
  l: LOOP
    FETCH c INTO v;
    IF done THEN LEAVE l; END IF;
    SELECT v;
  END LOOP;
  CLOSE c;
END //
CREATE PROCEDURE asd.p_dyn() BEGIN
  DECLARE c CURSOR FOR SELECT a FROM asd.t ORDER BY a;
  FOR r IN c DO
    EXECUTE IMMEDIATE CONCAT('SELECT ', r.a, ' * 10 AS x');
  END FOR;
END //
DELIMITER ;
SQL
wait_until 10 bash -c "[ -n \"\$(sql $P2 'SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA=\"asd\" AND ROUTINE_NAME=\"p_dyn\"')\" ]" >/dev/null

# 1. Result sets from inside a procedure's cursor loop carry the cursor
# flag of the procedure's own cursor; their rows still follow.
start=$(date +%s%3N)
r=$(q $PP "CALL asd.p_loop()" | tr '\n' ' ')
check_eq "CALL of a procedure selecting inside its cursor loop answers its rows" "1 2 3 " "$r"
r=$(q $PP "CALL asd.p_dyn()" | tr '\n' ' ')
check_eq "CALL of a procedure running dynamic SQL in a FOR loop over a cursor answers" "10 20 30 " "$r"
measured "both CALLs through 6450 took $(($(date +%s%3N) - start)) ms"
check_eq "the session goes on after such a CALL" "1 2 3 7 " \
	"$(q $PP "CALL asd.p_loop(); SELECT 7" | tr "\n" " ")"

# 2. SHOW WARNINGS leaves the warnings where they are: a second read of them
# runs where the ROLLBACK ran. Ten sessions (which connection a session gets
# back from the pool varies: before the fix 4 of 10 answered 0 or nothing).
good=0
for i in $(seq 1 10); do
	r=$(q $PP "BEGIN; INSERT INTO asd.tw VALUES ($i); ROLLBACK; SELECT @@warning_count; SHOW WARNINGS" \
		--show-warnings | grep -v '^Warning (Code' | tr '\t\n' '  ')
	[ "$r" = "1 Warning 1196 Some non-transactional changed tables couldn't be rolled back " ] &&
		good=$((good + 1)) || echo "# session $i: $r"
done
check_eq "@@warning_count and SHOW WARNINGS after a ROLLBACK that warned (10 sessions)" 10 "$good"

# 3. The engine of a CREATE TABLE without ENGINE is the session's on the
# writer, and the replicas' own default on the replicas: the session reads
# its tables where they were made as it asked.
r=$(q $PP "SET default_storage_engine = MyISAM; CREATE TABLE asd.te (a INT);
	SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'asd' AND TABLE_NAME = 'te';
	SHOW CREATE TABLE asd.te" | grep -o 'MyISAM\|InnoDB' | tr '\n' ' ')
check_eq "SET default_storage_engine = MyISAM; CREATE TABLE: the session sees MyISAM" "MyISAM MyISAM " "$r"
check_eq "the table on the writer is MyISAM" MyISAM \
	"$(sql $P1 "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA='asd' AND TABLE_NAME='te'")"

# 4. sql_auto_is_null reads the connection's LAST_INSERT_ID().
r=$(q $PP "SET sql_auto_is_null = 1; CREATE TABLE asd.ta (id INT AUTO_INCREMENT PRIMARY KEY, b INT);
	INSERT INTO asd.ta (b) VALUES (5); INSERT INTO asd.ta (b) VALUES (6);
	SELECT id, b FROM asd.ta WHERE id IS NULL" | tr '\t\n' '  ')
check_eq "sql_auto_is_null: WHERE id IS NULL finds the row just inserted" "2 6 " "$r"

# 5. The server's own error for a login it refuses (the schema name is
# invalid in the client's character set), as a direct client gets it.
direct=$(q $P1 "SELECT 1" --default-character-set=utf8mb4 -D $'\xff\xfe' | grep -o 'ERROR [0-9]* ([0-9A-Z]*)')
proxied=$(q $PP "SELECT 1" --default-character-set=utf8mb4 -D $'\xff\xfe' | grep -o 'ERROR [0-9]* ([0-9A-Z]*)')
check_eq "a login the server refuses: direct ERROR 1300" "ERROR 1300 (HY000)" "$direct"
check_eq "a login the server refuses: the same error through 6450" "$direct" "$proxied"
check_eq "an unknown schema at connect: ERROR 1049 through 6450" "ERROR 1049 (42000)" \
	"$(q $PP "SELECT 1" -D no_such_schema | grep -o 'ERROR [0-9]* ([0-9A-Z]*)')"

# 6. MariaDB's extended metadata: a JSON column's format.
direct=$(q $P1 "SELECT j FROM asd.tj" -vvv --column-type-info | grep '^Type:')
proxied=$(q $PP "SELECT j FROM asd.tj" -vvv --column-type-info | grep '^Type:')
echo "# direct: $direct; through 6450: $proxied"
check "a JSON column's type says format=json directly" grep -q 'format=json' <<<"$direct"
check_eq "the same column type through 6450" "$direct" "$proxied"

# 7. FLUSH STATUS, then statements, then the session's counters: the same
# as directly (the session stays on its writer connection).
stat="FLUSH STATUS; SELECT COUNT(*) FROM asd.t WHERE a > 1; SELECT a FROM asd.t;
	SHOW SESSION STATUS LIKE 'Handler_read_rnd_next'; SHOW SESSION STATUS LIKE 'Com_select'"
direct=$(q $P1 "$stat" | tr '\t\n' '  ')
proxied=$(q $PP "$stat" | tr '\t\n' '  ')
echo "# direct: $direct; through 6450: $proxied"
check_eq "FLUSH STATUS; reads; SHOW STATUS: the counters as directly" "$direct" "$proxied"

# 7b. SET GLOBAL changes the writer alone (it is not replicated): the
# session that set it reads its value afterwards.
r=$(q $PP "SET GLOBAL max_heap_table_size = 2097152; SELECT @@global.max_heap_table_size;
	SELECT @@global.max_heap_table_size")
check_eq "SET GLOBAL, then the session reads the global value it set" "2097152 2097152" "$(echo $r)"
sql_root $P1 "SET GLOBAL max_heap_table_size = DEFAULT"

# 8. A write that failed part way still wrote (MyISAM keeps the rows before
# the failing one) and its ERR names no GTID: the session's next read must
# see that row. The replicas apply 3 s late (MASTER_DELAY, still readers),
# and the session wrote nothing before, so no GTID wait covers the row.
sql_root $P1 "CREATE TABLE asd.tm (k INT PRIMARY KEY) ENGINE=MyISAM; INSERT INTO asd.tm VALUES (1);
	CREATE DATABASE asd_old; CREATE TABLE asd_old.tu (v INT); INSERT INTO asd_old.tu VALUES (1)"
gtid=$(sql_root $P1 "SELECT @@gtid_binlog_pos")
for p in $P2 $P3; do
	sql_root $p "SELECT MASTER_GTID_WAIT('$gtid', 20); STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 3; START SLAVE" >/dev/null
done
r=$(timeout -k 5 30 mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B --force \
	<<<"INSERT INTO asd.tm VALUES (10), (1); SELECT COUNT(*) FROM asd.tm;" 2>&1 | tr '\n' ' ')
check "a write that failed after writing a row: the session's next read sees it ($r)" \
	grep -q 'Duplicate entry .* 2 $' <<<"$r"

# 9. With the same late replicas: a schema made and used by the session, a
# table in it, then a read. The read's replica catches up (GTID wait, within
# read_your_writes_ms = 5000) before the session's `USE` is replayed there:
# replayed first, it failed on the replica without the schema, and the read
# ran in the connection's former schema (ERROR 1146 'asd_old.tu'; or, with
# no table of that name there, wrong rows: the table of asd_old exists).
# (PyMySQL sends USE as a statement, as mariadb-test does; the mariadb CLI
# turns it into COM_INIT_DB)
r=$(timeout -k 5 60 /usr/bin/python3 - $PP <<'PY' 2>&1
import sys, pymysql
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="app", password="app",
                    autocommit=True)
cur = c.cursor()
for s in ["USE asd_old", "CREATE DATABASE asd_new", "USE asd_new", "CREATE TABLE tu (v INT)",
          "INSERT INTO tu VALUES (2)", "SELECT v, @@port FROM tu"]:
    cur.execute(s)
print(" ".join(str(v) for v in cur.fetchone()))
PY
)
check "a schema the session just made and used: a read on a late replica reads it ($r)" \
	grep -Eq "^2 ($P2|$P3)$" <<<"$r"

# 10. A write answered with a result set and no OK (ANALYZE TABLE) names no
# GTID either: the session's next read, on the late replicas, must still
# see what it wrote (the table's persistent statistics).
r=$(q $PP "ANALYZE TABLE asd.t PERSISTENT FOR ALL;
	SELECT COUNT(*) FROM mysql.table_stats WHERE db_name = 'asd' AND table_name = 't'" | tail -n 1)
check_eq "ANALYZE TABLE, then its statistics read by the same session" 1 "$r"
for p in $P2 $P3; do
	sql_root $p "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 0; START SLAVE"
done

check "mysteerd still runs" kill -0 "$ITEST_DAEMON_PID"
itest_done
