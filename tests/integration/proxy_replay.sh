#!/usr/bin/env bash
# proxy_replay.sh - transaction replay on 6450 (transaction_replay): a
# PyMySQL session with a transaction open through 6450 loses its writer,
# and its next statements go on on the new writer as if nothing happened,
# or it gets ERR 1927 naming why not. Rows are checked on the servers
# themselves (@@server_id is the port in the sandbox), not by error codes.
# (a) 2 inserts, the primary SIGKILLed and a replica promoted, a 3rd
#     insert and COMMIT: no error, the 3 rows on the new primary;
# (b) the same with a planned switchover (the old primary up, fenced): the
#     3 rows on the new primary, none on the old one;
# (c) a transaction that read a row changed on the next primary before it
#     was promoted: ERR 1927 naming "mismatch", its insert nowhere;
# (d) transaction_replay = off (reload): the ERR 1927 of before replay;
# (e) transaction_replay_max_size = 200 and a 500-byte insert: ERR 1927
#     naming "too_large";
# (g) a statement in flight in the transaction at a SIGKILL (seen running): replayed, sent
#     again, committed once;
# (f) an autocommit write in flight at a SIGKILL: ERR 1158, never sent again;
# and mysteer_proxy_transaction_replays_total counts each outcome.
# Runs with the ASan daemon too: BUILD=build/asan tests/integration/proxy_replay.sh
. "$(dirname "$0")/lib.sh"
itest_init proxy_replay

PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
M=127.0.0.1:9470
itest_sandbox_up
ITEST_PROXY_EXTRA="workers = 2
switchover_buffer_ms = 10000" itest_write_config "$T/mysteer.conf"
sql_root "$P1" "CREATE DATABASE IF NOT EXISTS rp; CREATE TABLE rp.t (id INT PRIMARY KEY, c INT,
	s VARCHAR(600)); INSERT INTO rp.t VALUES (100, 1, '')"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 15 test "$(ctl_writer)" = db1 >/dev/null
wait_until 15 test "$(ctl_readers)" = "db2 db3" >/dev/null
check "db1 the writer, db2 db3 readers" test "$(ctl_writer) $(ctl_readers)" = "db1 db2 db3"
metric() { # outcome: mysteer_proxy_transaction_replays_total{outcome=...} (0 when absent)
	curl -s --max-time 10 "http://$M/metrics" |
		awk -v n="mysteer_proxy_transaction_replays_total{outcome=\"$1\"}" '$1 == n {v = $2} END {print v + 0}'
}

# trx.py NAME: BEGIN and the statements of $T/NAME.before, "ready", waits
# for $T/NAME.go, then the statements of $T/NAME.after; prints "ok
# SERVER_ID" (the writer of its last statement) or "err CODE MESSAGE"
cat >"$T/trx.py" <<'PY'
import os, sys, time, pymysql
t, name = sys.argv[1], sys.argv[2]
c = pymysql.connect(host='127.0.0.1', port=6450, user='app', password='app', autocommit=True,
                    read_timeout=60)
cur = c.cursor()
def run(part):
    for q in open(os.path.join(t, name + '.' + part)).read().split(';\n'):
        if q.strip():
            cur.execute(q)
            print('#', q.strip()[:60], '->', cur.fetchall(), flush=True)
try:
    cur.execute('BEGIN')
    run('before')
    print('ready', flush=True)
    while not os.path.exists(os.path.join(t, name + '.go')):
        time.sleep(0.05)
    t0 = time.time()
    run('after')
    cur.execute('SELECT @@server_id')
    sid = cur.fetchone()[0]
    cur.execute('COMMIT')
    print('ok', sid, '%.0f' % ((time.time() - t0) * 1000), flush=True)
except pymysql.MySQLError as e:
    print('err', e.args[0], e.args[1] if len(e.args) > 1 else '', flush=True)
PY
# start NAME: the session runs its "before" part in the background
start() {
	$PY "$T/trx.py" "$T" "$1" >"$T/$1.out" 2>&1 &
	ITEST_PIDS+=($!)
	eval "PID_$1=$!"
	wait_until 20 grep -q '^ready' "$T/$1.out" >/dev/null
	check "$1: the transaction is open" grep -q '^ready' "$T/$1.out"
}
# finish NAME: it runs its "after" part; its last line in $out
finish() {
	local pid
	eval "pid=\$PID_$1"
	touch "$T/$1.go"
	wait "$pid"
	out=$(tail -n 1 "$T/$1.out")
}
rows() { # port ids: how many of those rows the server has
	sql_root "$1" "SELECT COUNT(*) FROM rp.t WHERE id IN ($2)"
}
# failover CASE KILL_PORT NEW_PORT NEW_NAME: KILL_PORT SIGKILLed (empty: a
# planned switchover, the old primary fenced), NEW_PORT promoted and seen
# as the writer
failover() {
	local ms
	[ -z "$2" ] || sb kill "$2" 2>>"$T/sandbox.log"
	sb promote "$3" 2>>"$T/sandbox.log" || echo "# promote failed"
	ms=$(wait_until 20 test "$(ctl_writer)" = "$4")
	check "($1) $4 the writer (${ms} ms)" test "$(ctl_writer)" = "$4"
}
# running PORT ID: the insert of row ID runs on PORT now
running() {
	test "$(sql_root "$1" "SELECT COUNT(*) FROM information_schema.processlist
		WHERE info LIKE 'INSERT INTO rp.t (id, c) SELECT $2,%'")" = 1
}
# rejoin PORT READERS: the old primary PORT follows the new one again
rejoin() {
	sb rejoin "$1" 2>>"$T/sandbox.log" || echo "# rejoin failed"
	wait_until 20 test "$(ctl_readers)" = "$2" >/dev/null
}

# --- (a) SIGKILL of the primary, a replica promoted
printf 'INSERT INTO rp.t (id, c) VALUES (1, 1);\nINSERT INTO rp.t (id, c) VALUES (2, 2)' >"$T/a.before"
printf 'INSERT INTO rp.t (id, c) VALUES (3, 3)' >"$T/a.after"
start a
failover a "$P1" "$P2" db2
finish a
measured "(a) SIGKILL: the session's insert and COMMIT after the promotion: $out (server id, ms)"
check_eq "(a) SIGKILL: the client saw no error, its transaction committed on db2" "ok $P2" \
	"$(cut -d' ' -f1-2 <<<"$out")"
check_eq "(a) SIGKILL: the 3 rows are on the new primary" 3 "$(rows "$P2" 1,2,3)"
check_eq "(a) replays counted ok" 1 "$(metric ok)"

# --- (b) a planned switchover: db2 fenced read_only, db3 promoted
rejoin "$P1" "db1 db3"
printf 'INSERT INTO rp.t (id, c) VALUES (11, 1);\nINSERT INTO rp.t (id, c) VALUES (12, 2)' >"$T/b.before"
printf 'INSERT INTO rp.t (id, c) VALUES (13, 3)' >"$T/b.after"
start b
failover b "" "$P3" db3
finish b
measured "(b) planned switchover: $out (server id, ms)"
check_eq "(b) switchover: the client saw no error, its transaction committed on db3" "ok $P3" \
	"$(cut -d' ' -f1-2 <<<"$out")"
check_eq "(b) switchover: the 3 rows are on the new primary" 3 "$(rows "$P3" 11,12,13)"
check_eq "(b) switchover: none on the old primary (rolled back there)" 0 "$(rows "$P2" 11,12,13)"
check_eq "(b) replays counted ok" 2 "$(metric ok)"
rejoin "$P2" "db1 db2"

# --- (c) a mismatch: the transaction read c = 1 of row 100, which is 2 on
# db1 before db1 is promoted
wait_until 20 bash -c "[ \"\$(mariadb --no-defaults -uroot -S $SANDBOX_DIR/$P1/mysqld.sock -N -B -e 'SELECT COUNT(*) FROM rp.t WHERE id = 13')\" = 1 ]" >/dev/null
printf 'SELECT c FROM rp.t WHERE id = 100' >"$T/c.before"
printf 'INSERT INTO rp.t (id, c) VALUES (21, 1)' >"$T/c.after"
start c
sql_root "$P1" "UPDATE rp.t SET c = 2 WHERE id = 100"
failover c "" "$P1" db1
finish c
measured "(c) mismatch: $out"
check_eq "(c) mismatch: the client gets ERR 1927" 1927 "$(cut -d' ' -f2 <<<"$out")"
check "(c) mismatch: the ERR names the mismatch" grep -q 'mismatch' <<<"$out"
check_eq "(c) mismatch: its insert is nowhere" "0 0" "$(rows "$P1" 21) $(rows "$P3" 21)"
check_eq "(c) replays counted mismatch" 1 "$(metric mismatch)"
rejoin "$P3" "db2 db3"

# --- (d) transaction_replay = off (reload), a planned switchover to db2:
# the ERR 1927 of before
sed -i 's/^switchover_buffer_ms = 10000$/switchover_buffer_ms = 10000\ntransaction_replay = off/' "$T/mysteer.conf"
ctl reload >/dev/null
printf 'INSERT INTO rp.t (id, c) VALUES (31, 1)' >"$T/d.before"
printf 'INSERT INTO rp.t (id, c) VALUES (32, 2)' >"$T/d.after"
start d
failover d "" "$P2" db2
finish d
measured "(d) transaction_replay = off: $out"
check_eq "(d) off: the client gets ERR 1927 as before replay" 1927 "$(cut -d' ' -f2 <<<"$out")"
check_eq "(d) off: none of its rows on the new primary" 0 "$(rows "$P2" 31,32)"
check_eq "(d) off: no replay counted" "2 1" "$(metric ok) $(metric mismatch)"

# --- (e) transaction_replay_max_size = 200: a 600-byte insert is too large
sed -i 's/^transaction_replay = off$/transaction_replay = on\ntransaction_replay_max_size = 200/' "$T/mysteer.conf"
ctl reload >/dev/null
printf "INSERT INTO rp.t (id, c, s) VALUES (41, 1, '%s')" "$(printf 'x%.0s' $(seq 1 500))" >"$T/e.before"
printf 'INSERT INTO rp.t (id, c) VALUES (42, 2)' >"$T/e.after"
rejoin "$P1" "db1 db3"
start e
failover e "" "$P3" db3
finish e
measured "(e) too large: $out"
check_eq "(e) too large: the client gets ERR 1927" 1927 "$(cut -d' ' -f2 <<<"$out")"
check "(e) too large: the ERR names it" grep -q 'too_large' <<<"$out"
check_eq "(e) too large: none of its rows on the new primary" 0 "$(rows "$P3" 41,42)"
check_eq "(e) replays counted too_large" 1 "$(metric too_large)"
rejoin "$P2" "db1 db2"

# --- (g) a statement in flight in the transaction when the primary is
# SIGKILLed: the transaction is replayed, then that statement sent again
# (the old server rolled it back with its connection)
printf 'INSERT INTO rp.t (id, c) VALUES (61, 1)' >"$T/g.before"
printf 'INSERT INTO rp.t (id, c) SELECT 62, SLEEP(3)' >"$T/g.after"
start g
touch "$T/g.go"
wait_until 20 running "$P3" 62 >/dev/null
failover g "$P3" "$P1" db1
wait "$PID_g"
out=$(tail -n 1 "$T/g.out")
measured "(g) a statement in flight at the SIGKILL: $out"
check_eq "(g) in flight: the client saw no error, its transaction committed on db1" "ok $P1" \
	"$(cut -d' ' -f1-2 <<<"$out")"
check_eq "(g) in flight: both rows on the new primary, once" 2 "$(rows "$P1" 61,62)"
check_eq "(g) replays counted ok" 3 "$(metric ok)"

# --- (f) an autocommit write in flight when the primary is SIGKILLed is
# never sent again: ERR 1158 naming the lost connection, and no row
cat >"$T/auto.py" <<'PY'
import pymysql
c = pymysql.connect(host='127.0.0.1', port=6450, user='app', password='app', autocommit=True,
                    read_timeout=60)
try:
    c.cursor().execute('INSERT INTO rp.t (id, c) SELECT 71, SLEEP(3)')
    print('ok')
except pymysql.MySQLError as e:
    print('err', e.args[0], e.args[1] if len(e.args) > 1 else '', flush=True)
PY
$PY "$T/auto.py" >"$T/auto.out" 2>&1 &
PID_auto=$!
ITEST_PIDS+=($PID_auto)
wait_until 20 running "$P1" 71 >/dev/null
failover f "$P1" "$P2" db2
wait "$PID_auto"
out=$(tail -n 1 "$T/auto.out")
measured "(f) an autocommit write in flight at the SIGKILL: $out"
check_eq "(f) autocommit: ERR 1158, not sent again" 1158 "$(cut -d' ' -f2 <<<"$out")"
check "(f) autocommit: the ERR names the lost writer connection" grep -q 'lost the connection to the writer' <<<"$out"
sleep 3
check_eq "(f) autocommit: the row is not on the new primary" 0 "$(rows "$P2" 71)"
check "the daemon survived" kill -0 "$ITEST_DAEMON_PID"
itest_done
