#!/usr/bin/env bash
# proxy_correct.sh - the 6450 proxy never runs a write on a replica, checked
# with app_admin (READ_ONLY ADMIN: a replica accepts its writes, so a misroute
# shows as a row there, not as error 1290) and each server's own counters:
# the writer's Com_insert delta and the replicas' own GTIDs (writes_mark,
# local_writes in lib.sh).
# - Inside START TRANSACTION READ ONLY (on a replica), BEGIN, START
#   TRANSACTION, DDL, LOCK TABLES end that transaction and go to the writer,
#   and the session is on the writer afterwards.
# - Reads under LOCK TABLES run on the writer's connection that holds them.
# - A SET that fails when run again leaves the earlier identical one in the
#   session's history; a COM_INIT_DB the server refused leaves the session's
#   schema as it was (also for the pooled connection it leaves behind).
# - COM_RESET_CONNECTION drops prepared statements; a COM_STMT_FETCH after
#   the history grew gets its cursor's rows; a user with an empty password
#   logs in, its warm pool too (proxy_session.py).
# - Sessions pinned to the writer when it is demoted get ERR 1927 and are
#   closed; no later write reaches the old writer (proxy_demote.py).
#
# Runs the engine with tests/proxy_run (db1 writer, db2 and db3 readers).
. "$(dirname "$0")/lib.sh"
itest_init proxy_correct
itest_sandbox_up

PROXY_RUN=$ITEST_BUILD/tests/proxy_run
PP=6450
ITEST_APP_ADMIN=1
# one worker: the schema case below needs the pool of the session before;
# no transaction replay: the demotion below checks that a pinned session
# ends (proxy_replay.sh shows an open transaction going on instead)
ITEST_PROXY_EXTRA="workers = 1
read_your_writes = gtid
transaction_replay = off" itest_write_config "$T/mysteer.conf" - <<'CONF'
[user:haproxy]
password =
CONF
"$PROXY_RUN" -c "$T/mysteer.conf" -w db1 -r db2,db3 -t "$T/topo" >"$T/proxy.log" 2>&1 &
PROXY_PID=$!
ITEST_PIDS+=("$PROXY_PID")
wait_until 10 bash -c "echo >/dev/tcp/127.0.0.1/$PP" >/dev/null ||
	{ echo "not ok - proxy did not listen"; cat "$T/proxy.log"; exit 1; }

# pa QUERY: statements through the proxy as app_admin (the client sends each
# statement of "a; b" on its own)
pa() {
	mariadb --no-defaults -h127.0.0.1 -P$PP -uapp_admin -papp_admin --connect-timeout=5 \
		-N -B -e "$1"
}
# pa_script: statements from stdin (DELIMITER works there)
pa_script() {
	mariadb --no-defaults -h127.0.0.1 -P$PP -uapp_admin -papp_admin --connect-timeout=5 -N -B "$@"
}
replica_port() { [ "$1" = $P2 ] || [ "$1" = $P3 ]; }
# Waits until both replicas applied everything the writer has.
replicas_caught_up() {
	local pos port
	pos=$(sql_root $P1 "SELECT @@gtid_binlog_pos")
	for port in $P2 $P3; do
		[ "$(sql_root $port "SELECT MASTER_GTID_WAIT('$pos', 10)")" = 0 ] || return 1
	done
}
# no_local_writes WHAT: checks that neither replica wrote anything of its own
no_local_writes() {
	check_eq "$1: no write ran on replica $P2" 0 "$(local_writes $P2)"
	check_eq "$1: no write ran on replica $P3" 0 "$(local_writes $P3)"
}

check_eq "app_admin logs in through 6450" 1 "$(pa 'SELECT 1')"
check "app_admin holds READ_ONLY ADMIN on the replicas" \
	grep -q "READ_ONLY ADMIN\|ALL PRIVILEGES" <<<"$(sql $P2 "SHOW GRANTS" app_admin app_admin)"
pa "CREATE DATABASE IF NOT EXISTS t; CREATE TABLE IF NOT EXISTS t.k (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40))"
replicas_caught_up

# --- writes inside START TRANSACTION READ ONLY ------------------------------
# each case: a read-only transaction on a replica, then a statement that ends
# it and starts a write; @@port after it says where the session is
# (in a transaction: on the writer; after DDL, outside one: anywhere)
ro_case() { # name statements-after-the-read expected-inserts in-trans
	local out ro_port after
	writes_mark
	out=$(printf 'START TRANSACTION READ ONLY;\nSELECT @@port;\n%s;\nSELECT @@port;\nCOMMIT;\n' \
		"$2" | pa_script)
	ro_port=$(head -n 1 <<<"$out")
	after=$(tail -n 1 <<<"$out")
	measured "$1: the read-only transaction ran on $ro_port, the statement after on $after"
	check "$1: the read-only transaction ran on a replica" replica_port "$ro_port"
	[ "$4" = 1 ] && check_eq "$1: the session is on the writer afterwards" $P1 "$after"
	check_eq "$1: the writer ran the inserts (Com_insert)" "$3" "$(writes_delta $P1)"
	replicas_caught_up || echo "# replicas did not catch up with the writer"
	no_local_writes "$1"
}
ro_case "BEGIN" "BEGIN; INSERT INTO t.k (v) VALUES ('ro-begin')" 1 1
ro_case "START TRANSACTION" "START TRANSACTION; INSERT INTO t.k (v) VALUES ('ro-start')" 1 1
ro_case "START TRANSACTION READ WRITE" \
	"START TRANSACTION READ WRITE; INSERT INTO t.k (v) VALUES ('ro-rw')" 1 1
ro_case "CREATE TABLE" "CREATE TABLE t.ro_ddl (a INT); INSERT INTO t.ro_ddl VALUES (1)" 1 0
ro_case "DROP TABLE" "DROP TABLE t.ro_ddl; INSERT INTO t.k (v) VALUES ('ro-drop')" 1 0
ro_case "LOCK TABLES" \
	"LOCK TABLES t.k WRITE; INSERT INTO t.k (v) VALUES ('ro-lock'); UNLOCK TABLES" 1 0
pa_script <<'SQL'
DELIMITER //
CREATE PROCEDURE t.p_rw() BEGIN START TRANSACTION; INSERT INTO t.k (v) VALUES ('ro-call'); COMMIT; END//
SQL
replicas_caught_up
ro_case "CALL of a procedure that begins a transaction" "CALL t.p_rw()" 1 0
ro_case "a multi-statement" "DELIMITER //
BEGIN; INSERT INTO t.k (v) VALUES ('ro-multi'); COMMIT//
DELIMITER ;
SELECT 1" 1 0
check_eq "every row written is on the writer" 7 \
	"$(sql_root $P1 "SELECT COUNT(*) FROM t.k WHERE v LIKE 'ro-%'")"
out=$(pa "START TRANSACTION READ ONLY; INSERT INTO t.k (v) VALUES ('ro-refused')" 2>&1)
check "a plain write inside READ ONLY is refused, as the server refuses it" grep -q 1792 <<<"$out"
check_eq "and wrote nothing anywhere" 0 \
	"$(sql_root $P1 "SELECT COUNT(*) FROM t.k WHERE v = 'ro-refused'")"
no_local_writes "a refused write"

# --- reads under LOCK TABLES ---------------------------------------------------
# The locks live on the writer's connection: a read there sees the session's
# writes and its locks; a replica would answer without either.
out=$(pa_script <<'SQL'
LOCK TABLES t.k WRITE;
INSERT INTO t.k (v) VALUES ('lock-read');
SELECT @@port, (SELECT COUNT(*) FROM t.k WHERE v = 'lock-read');
UNLOCK TABLES;
LOCK TABLES t.k READ;
SELECT @@port;
UNLOCK TABLES;
SQL
)
sed 's/^/# /' <<<"$out"
check_eq "a read under LOCK TABLES ... WRITE runs on the writer and sees the session's row" \
	"$P1	1" "$(head -n 1 <<<"$out")"
check_eq "a read under LOCK TABLES ... READ runs on the writer" $P1 "$(tail -n 1 <<<"$out")"

# --- session history and schema ---------------------------------------------
# SET gtid_domain_id is refused inside a transaction (1774): the same SET,
# which succeeded before, fails there, and the setting still holds, also on
# the replica the next read goes to (where the history is replayed)
out=$(pa_script --force <<'SQL' 2>&1
SET SESSION gtid_domain_id = 7;
BEGIN;
SELECT 1;
SET SESSION gtid_domain_id = 7;
ROLLBACK;
SELECT @@session.gtid_domain_id, @@port;
SQL
)
sed 's/^/# /' <<<"$out"
check "the same SET inside a transaction failed" grep -q "ERROR" <<<"$out"
last=$(tail -n 1 <<<"$out")
check_eq "a SET that failed when run again keeps the earlier one's setting" 7 "${last%%	*}"
check "that read ran on a replica (the history replayed there)" replica_port "${last##*	}"

# USE of a schema that does not exist (the CLI sends COM_INIT_DB): refused,
# the session stays in t; its writer connection, parked with a reset after
# a statement with a warning, keeps t as its schema in the pool, so a
# session that logs in to that schema once it exists is in it
out=$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp_admin -papp_admin --comments --force \
	-N -B t 2>&1 <<'SQL'
use nosuch_db
SELECT /* mysteer:writer */ 1/0, DATABASE();
SQL
)
sed 's/^/# /' <<<"$out"
check "COM_INIT_DB to a missing schema is refused" grep -q "ERROR 1049" <<<"$out"
check "the session stays in its schema" grep -q "^NULL	t$" <<<"$out"
sql_root $P1 "CREATE DATABASE nosuch_db"
replicas_caught_up
out=$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp_admin -papp_admin --comments -N -B \
	nosuch_db -e "SELECT /* mysteer:writer */ DATABASE()" 2>&1)
check_eq "a session logged in to that schema later is in it" nosuch_db "$out"

# --- protocol details ---------------------------------------------------------------
python3 "$ITEST_ROOT/tests/integration/proxy_session.py" $PP app_admin app_admin haproxy \
	>"$T/session.out" 2>&1
grep -v '^ok' "$T/session.out"
ITEST_PASSED=$((ITEST_PASSED + $(grep -c '^ok' "$T/session.out")))
ITEST_FAILED=$((ITEST_FAILED + $(grep -c '^not ok' "$T/session.out")))
check "proxy_session ran to the end" grep -q "proxy_session: done" "$T/session.out"
# the warm pool of the user with an empty password (haproxy, no privileges)
# logs in too: its connections show in the servers' processlists
haproxy_warm() {
	local port n=0
	for port in $P1 $P2 $P3; do
		n=$((n + $(sql_root $port "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'haproxy'")))
	done
	[ "$n" -gt 0 ]
}
check "the warm pool of a user with an empty password logs in" wait_until 20 haproxy_warm
check "no warm login of it was refused" bash -c "! grep -q 'haproxy.*refused\|refused.*haproxy' '$T/proxy.log'"

# --- a demoted writer ------------------------------------------------------------
# Sessions pinned to db1 (a transaction, autocommit off, a temporary table,
# a named lock, a variable assigned by a query, LOCK TABLES, a cursor) when db2 is
# promoted: ERR 1927 naming why and a close, never a later write on db1
# (app_admin could still write there). sandbox.sh promote waits for the
# session's locks and transactions on db1 (SET GLOBAL read_only), which the
# proxy ends when its topology changes (SIGHUP of proxy_run); bounded, so
# that a proxy that kept them fails the test rather than hanging it.
pa "CREATE TABLE t.dm_lock (a INT)"
demote="timeout 120 $SANDBOX promote $P2 >'$T/promote.log' 2>&1 & echo 'writer=db2 readers=db3' >'$T/topo'; kill -HUP $PROXY_PID; wait"
python3 "$ITEST_ROOT/tests/integration/proxy_demote.py" $PP app_admin app_admin "$demote" \
	>"$T/demote.out" 2>&1
grep -v '^ok' "$T/demote.out"
ITEST_PASSED=$((ITEST_PASSED + $(grep -c '^ok' "$T/demote.out")))
ITEST_FAILED=$((ITEST_FAILED + $(grep -c '^not ok' "$T/demote.out")))
check "proxy_demote ran to the end" grep -q "proxy_demote: done" "$T/demote.out"
check_eq "the old writer has no write made after the demotion, and none of the pinned sessions' uncommitted ones" 0 \
	"$(sql_root $P1 "SELECT COUNT(*) FROM t.k WHERE v IN ('dm-trx', 'dm-ac', 'dm-after', 'dm-plain-after', 'dm-new')")"
check_eq "the new writer has the writes made after the demotion, and not the refused one" \
	"dm-new dm-plain-after" \
	"$(echo $(sql_root $P2 "SELECT v FROM t.k WHERE v IN ('dm-after', 'dm-plain-after', 'dm-new') ORDER BY v"))"
check "the demotion is logged with the reason" grep -q "no longer the writer: a session of app_admin" "$T/proxy.log"

itest_proxy_stop "$PROXY_PID" "$T/proxy.log"
itest_done
