#!/usr/bin/env bash
# proxy.sh - the 6450 protocol proxy against real servers and real clients:
# auth (good, bad password, unknown user), read/write split checked with each
# server's Com_* counters, transactions, READ ONLY transactions on a replica,
# session state replay, temporary tables, LAST_INSERT_ID, read-your-writes,
# a 64 MB row both ways, hostile clients (garbage, truncated, silent), and
# sysbench through the proxy with zero errors.
#
# Runs the engine with tests/proxy_run (a fixed topology: db1 writer, db2 and
# db3 readers), so it does not depend on the controller's probes.
. "$(dirname "$0")/lib.sh"
itest_init proxy
itest_sandbox_up

PROXY_RUN=$ITEST_BUILD/tests/proxy_run
PP=6450
ITEST_PROXY_EXTRA="handshake_timeout_ms = 1000
max_client_connections = 40
max_packet_size = 134217728
read_your_writes = gtid
read_your_writes_ms = 500
workers = 2"
itest_write_config "$T/mysteer.conf"
ITEST_PROXY_EXTRA="read_your_writes = window
read_your_writes_ms = 2000" itest_write_config "$T/window.conf"
"$PROXY_RUN" -c "$T/mysteer.conf" -w db1 -r db2,db3 -t "$T/topo" >"$T/proxy.log" 2>&1 &
PROXY_PID=$!
ITEST_PIDS+=("$PROXY_PID")
wait_until 10 bash -c "echo >/dev/tcp/127.0.0.1/$PP" >/dev/null ||
	{ echo "not ok - proxy did not listen"; cat "$T/proxy.log"; exit 1; }

# p QUERY: one query through the proxy as app (--comments: keep hint comments)
p() { mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --comments --connect-timeout=5 -N -B -e "$1"; }
com() { sql_root "$1" "SHOW GLOBAL STATUS LIKE '$2'" | awk '{print $2}'; }

check_eq "login and SELECT 1" 1 "$(p 'SELECT 1')"
out=$(sql $PP "SELECT 1" app wrong 2>&1)
check "bad password: 1045 with the usual text" \
	grep -q "1045.*Access denied for user 'app'@'127.0.0.1' (using password: YES)" <<<"$out"
out=$(sql $PP "SELECT 1" nobody app 2>&1)
check "unknown user: 1045" grep -q "1045.*Access denied for user 'nobody'" <<<"$out"
check_eq "proxy alive after refusals" 1 "$(p 'SELECT 1')"

# --- read/write split -----------------------------------------------------
p "CREATE DATABASE IF NOT EXISTS t; CREATE TABLE IF NOT EXISTS t.k (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20))"
sleep 0.5
s2=$(com $P2 Com_select) s3=$(com $P3 Com_select) i1=$(com $P1 Com_insert)
for i in $(seq 1 30); do p "SELECT v FROM t.k LIMIT 1" >/dev/null; done
d2=$(($(com $P2 Com_select) - s2)) d3=$(($(com $P3 Com_select) - s3))
measured "Com_select deltas after 30 reads: replica $P2 +$d2, replica $P3 +$d3"
check "reads reach replica $P2" [ "$d2" -gt 0 ]
check "reads reach replica $P3" [ "$d3" -gt 0 ]
p "INSERT INTO t.k (v) VALUES ('w1')"
check_eq "the write ran on the writer" $((i1 + 1)) "$(com $P1 Com_insert)"
# app lacks READ_ONLY ADMIN: a write that reached a replica would fail with 1290
out=$(for i in $(seq 1 20); do p "INSERT INTO t.k (v) VALUES ('w$i')" 2>&1; done)
check_eq "20 writes in 20 sessions all reach the writer" "" "$out"
port_of_read=$(p "SELECT @@port")
check "a plain read runs on a replica" [ "$port_of_read" = $P2 -o "$port_of_read" = $P3 ]

# --- transactions and session state ---------------------------------------
out=$(p "BEGIN; INSERT INTO t.k (v) VALUES ('trx'); SELECT COUNT(*) FROM t.k WHERE v='trx'; ROLLBACK")
check_eq "a transaction sees its own uncommitted insert" 1 "$out"
check_eq "and the rollback undid it" 0 "$(p "SELECT /* mysteer:writer */ COUNT(*) FROM t.k WHERE v='trx'")"
out=$(p "START TRANSACTION READ ONLY; SELECT @@port; SELECT @@port; COMMIT" | sort -u)
check "START TRANSACTION READ ONLY runs on one replica" [ "$out" = $P2 -o "$out" = $P3 ]
out=$(p "SET time_zone='+05:00'; SELECT @@time_zone; INSERT INTO t.k (v) VALUES ('tz'); SELECT @@time_zone")
check_eq "SET time_zone is replayed wherever the session goes" "+05:00 +05:00" "$(echo $out)"
out=$(p "CREATE TEMPORARY TABLE t.tmp1 (a INT); INSERT INTO t.tmp1 VALUES (7); SELECT a FROM t.tmp1")
check_eq "a temporary table is usable right after it is created" 7 "$out"
out=$(p "USE t; INSERT INTO k (v) VALUES ('lid'); SELECT LAST_INSERT_ID() = (SELECT MAX(id) FROM k WHERE v='lid')")
check_eq "LAST_INSERT_ID() after an INSERT is that insert's id" 1 "$out"
# FOUND_ROWS() belongs to the connection of the read before it, a replica's
sleep 0.5 # past read-your-writes: the read goes to a replica
good=0 on_replica=0
for i in $(seq 1 10); do
	out=$(p "SELECT SQL_CALC_FOUND_ROWS @@port FROM t.k LIMIT 1; SELECT FOUND_ROWS(), @@port")
	read -r rport frows fport <<<"$(echo $out)"
	[ "$rport" != $P1 ] && on_replica=$((on_replica + 1))
	[ "$fport" = "$rport" ] && [ "$frows" = "$(sql_root "$rport" "SELECT COUNT(*) FROM t.k")" ] &&
		good=$((good + 1))
done
measured "SQL_CALC_FOUND_ROWS then FOUND_ROWS(): $good/10 right and on the read's backend, $on_replica/10 reads on a replica"
check "SQL_CALC_FOUND_ROWS reads ran on replicas" [ "$on_replica" -ge 8 ]
check_eq "FOUND_ROWS() runs where the SQL_CALC_FOUND_ROWS read ran and counts its rows" 10 "$good"
# ... and after a plain read, whose clean connection went back to the pool:
# it comes back for FOUND_ROWS() (the rows that read returned, 3 here)
good=0 on_replica=0
for i in $(seq 1 10); do
	out=$(p "SELECT @@port FROM t.k LIMIT 3; SELECT FOUND_ROWS(), @@port")
	read -r rport _ _ frows fport <<<"$(echo $out)"
	[ "$rport" != $P1 ] && on_replica=$((on_replica + 1))
	[ "$fport" = "$rport" ] && [ "$frows" = 3 ] && good=$((good + 1))
done
measured "plain read then FOUND_ROWS(): $good/10 right and on the read's backend, $on_replica/10 reads on a replica"
check "plain reads ran on replicas" [ "$on_replica" -ge 8 ]
check_eq "FOUND_ROWS() after a plain read counts the rows it returned, on its connection" 10 "$good"
r2=$(com $P2 Com_select) r3=$(com $P3 Com_select) seen=0 on_replica=0
for i in $(seq 1 20); do
	out=$(p "INSERT INTO t.k (v) VALUES ('ryw$i'); SELECT COUNT(*), @@port FROM t.k WHERE v='ryw$i'")
	[ "${out%%	*}" = 1 ] && seen=$((seen + 1))
	[ "${out##*	}" != $P1 ] && on_replica=$((on_replica + 1))
done
measured "read-your-writes (gtid): $seen/20 reads saw the write just made, $on_replica/20 on a replica"
check_eq "read-your-writes (gtid): every read right after a write sees it" 20 "$seen"
check "read-your-writes (gtid): those reads still run on replicas (after MASTER_GTID_WAIT)" \
	[ "$on_replica" -ge 15 ]
out=$(p "SET @x = 41; SELECT @x + 1")
check_eq "a user variable set by SET is replayed" 42 "$out"
out=$(sql $PP "SELECT DATABASE()" app app 127.0.0.1 2>&1; mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B t -e "SELECT DATABASE(), COUNT(*) > 0 FROM k")
check_eq "connect with a default schema" "NULL t 1" "$(echo $out)"

# --- a 64 MB row both ways ------------------------------------------------
p "CREATE TABLE IF NOT EXISTS t.big (id INT PRIMARY KEY, b LONGBLOB)"
python3 -c "import sys; sys.stdout.write(\"INSERT INTO t.big VALUES (1, '\" + 'x' * (64 << 20) + \"');\")" >"$T/big.sql"
mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --max-allowed-packet=1G t <"$T/big.sql" 2>&1 |
	cut -c1-200 | tail -n 3
check_eq "a 64 MB row sent through the proxy arrives whole" $((64 << 20)) \
	"$(sql_root $P1 "SELECT LENGTH(b) FROM t.big WHERE id=1")"
sum=$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --max-allowed-packet=1G --comments -N -B \
	-e "SELECT /* mysteer:writer */ b FROM t.big WHERE id=1" 2>"$T/bigread.err" | md5sum | cut -d' ' -f1)
sed 's/^/# /' "$T/bigread.err"
want=$(python3 -c "import hashlib; print(hashlib.md5(b'x' * (64 << 20) + b'\n').hexdigest())")
check_eq "a 64 MB row read through the proxy arrives whole" "$want" "$sum"

# The statements below expect reads on replicas; a replica still applying the
# 64 MB row would make MASTER_GTID_WAIT time out and send them to the writer.
pos=$(sql_root $P1 "SELECT @@gtid_binlog_pos")
caught_up() { [ "$(sql_root "$1" "SELECT MASTER_GTID_WAIT('$pos', 0)")" = 0 ]; }
for port in $P2 $P3; do
	ms=$(wait_until 60 caught_up $port) &&
		measured "replica $port applied the 64 MB row ${ms} ms after the read" ||
		echo "# replica $port did not catch up with $pos within 60 s"
done

# --- prepared statements (libmysqlclient) -----------------------------------
"$ITEST_BUILD/tests/proxy_ps" $PP $P1 $P2 $P3 2>"$T/ps.err" | tee "$T/ps.out" | grep -v '^ok' 
ITEST_PASSED=$((ITEST_PASSED + $(grep -c '^ok' "$T/ps.out")))
ITEST_FAILED=$((ITEST_FAILED + $(grep -c '^not ok' "$T/ps.out")))
check "proxy_ps ran to the end" grep -q "usable after the closes" "$T/ps.out"
[ -s "$T/ps.err" ] && sed 's/^/# /' "$T/ps.err"

# --- session-state tracking: the proxy's last_gtid is hidden (libmysqlclient)
"$ITEST_BUILD/tests/proxy_track" $PP 2>"$T/track.err" | tee "$T/track.out" | grep -v '^ok'
ITEST_PASSED=$((ITEST_PASSED + $(grep -c '^ok' "$T/track.out")))
ITEST_FAILED=$((ITEST_FAILED + $(grep -c '^not ok' "$T/track.out")))
check "proxy_track ran to the end" grep -q "proxy_track: done" "$T/track.out"
[ -s "$T/track.err" ] && sed 's/^/# /' "$T/track.err"

# --- a client without CLIENT_SESSION_TRACK (PyMySQL): gtid read-your-writes
# and OK packets as the server would send them
/usr/bin/python3 "$ITEST_ROOT/tests/integration/proxy_pymysql.py" $PP $P1 2>"$T/pym.err" |
	tee "$T/pym.out" | grep -v '^ok'
ITEST_PASSED=$((ITEST_PASSED + $(grep -c '^ok' "$T/pym.out")))
ITEST_FAILED=$((ITEST_FAILED + $(grep -c '^not ok' "$T/pym.out")))
check "proxy_pymysql ran to the end" grep -q "proxy_pymysql: done" "$T/pym.out"
[ -s "$T/pym.err" ] && sed 's/^/# /' "$T/pym.err"

# --- hostile clients --------------------------------------------------------
python3 - "$PP" <<'PY' >"$T/hostile.out" 2>&1
import socket, sys, time, os
port = int(sys.argv[1])
def conn():
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.recv(4096)  # handshake
    return s
# garbage instead of a handshake response
s = conn(); s.sendall(os.urandom(3000))
try:
    d = s.recv(4096); print("garbage:", "err" if d[4:5] == b'\xff' else "closed" if not d else "other")
except Exception as e: print("garbage: closed", e)
# a truncated packet: the header says 100 bytes, 10 come, then the client goes
s = conn(); s.sendall(b'\x64\x00\x00\x01' + b'a' * 10); s.close()
# a silent client is dropped after handshake_timeout_ms
s = conn(); t0 = time.time()
try:
    d = s.recv(4096)
    print("silent: dropped after %.1f s" % (time.time() - t0), "data" if d else "eof")
except Exception as e: print("silent: not dropped", e)
PY
cat "$T/hostile.out" | sed 's/^/# /'
check "garbage bytes get an ERR or a close" grep -Eq "^garbage: (err|closed)" "$T/hostile.out"
check "a silent client is dropped" grep -q "^silent: dropped" "$T/hostile.out"
# Pipelined input behind a running statement is read only up to a bound (4 MB):
# TCP holds the rest, and nothing is lost. 48 statements of 1 MB sent behind a
# SELECT SLEEP(2): how many the kernel took during the sleep, then every answer.
out=$(python3 - "$PP" "$(dirname "$0")" <<'PY' 2>&1
import socket, sys, threading, time
sys.path.insert(0, sys.argv[2])
from proxy_chaos import login, write_packet, read_packet
s = login(int(sys.argv[1])); s.settimeout(60)
write_packet(s, 0, b'\x03SELECT SLEEP(2)')
big = b"\x03SELECT '" + b'x' * (1 << 20) + b"'"
sent = [0]
def pump():
    for _ in range(48):
        write_packet(s, 0, big)
        sent[0] += 1
t = threading.Thread(target=pump, daemon=True); t.start()
time.sleep(1.5)
during = sent[0]
results = rows = 0
while results < 49:
    n, p = read_packet(s)
    if p[:1] == b'\xff':
        break
    if p[:1] == b'\xfe' and n < 9:
        results += 1
    elif n > (1 << 20):
        rows += 1
t.join(30)
print("taken during the sleep: %d of 48; answers %d of 49, 1 MB rows %d" % (during, results, rows))
PY
)
echo "# pipelined: $out"
taken=$(echo "$out" | sed -n 's/^taken during the sleep: \([0-9]*\).*/\1/p')
measured "pipelined 1 MB statements the kernel took while a statement ran: ${taken:-?} of 48"
check "pipelined input is not all read while a statement runs (${taken:-?} of 48)" test "${taken:-99}" -lt 40
check "and every pipelined statement is answered afterwards" grep -q "answers 49 of 49, 1 MB rows 48" <<<"$out"
out=$(python3 - $PP "$(dirname "$0")" <<'PY'
import socket, sys, time
sys.path.insert(0, sys.argv[2])
from proxy_chaos import login
port = int(sys.argv[1])
def told_1040(d):
    return d[4:5] == b'\xff' and d[5:7] == (1040).to_bytes(2, 'little')
# 40 sessions logged in: the 41st connection is refused
sessions = [login(port) for i in range(40)]
s = socket.create_connection(("127.0.0.1", port), timeout=5)
print("41st:", "refused" if told_1040(s.recv(4096)) else "greeted")
s.close()
for x in sessions:
    x.close()
time.sleep(0.5)
# 45 connections that never log in: each is greeted; past half of
# max_client_connections the oldest are told (ERR 1040) and closed
socks, greeted, told = [], 0, 0
for i in range(45):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    greeted += not told_1040(s.recv(4096))
    socks.append(s)
time.sleep(0.3)
for s in socks:
    s.setblocking(False)
    try:
        told += told_1040(s.recv(4096))
    except BlockingIOError:
        pass
print("silent: greeted %d, told and closed %d" % (greeted, told))
PY
)
echo "$out" | sed 's/^/# /'
check "max_client_connections = 40: with 40 sessions in, the 41st connection gets ERR 1040" \
	grep -q "^41st: refused" <<<"$out"
told=$(echo "$out" | sed -n 's/^silent: greeted 45, told and closed \([0-9]*\)$/\1/p')
check "45 connections that never log in: all greeted, 25 or more of the oldest told ERR 1040 (${told:-?})" \
	test "${told:-0}" -ge 25
out=$(python3 "$(dirname "$0")/proxy_chaos.py" $PP 1 150 2>&1)
measured "random and malformed commands: $out"
check "random and malformed commands all get an answer (no hang)" grep -q "timeouts 0 " <<<"$out"
check_eq "the proxy still serves after hostile clients" 1 "$(p 'SELECT 1')"

# --- sysbench ---------------------------------------------------------------
p "CREATE DATABASE IF NOT EXISTS sbtest"
SB="sysbench --mysql-host=127.0.0.1 --mysql-user=app --mysql-password=app --mysql-db=sbtest --tables=4 --table-size=10000"
$SB --mysql-port=$P1 oltp_read_write prepare >"$T/sb-prepare.log" 2>&1
sleep 1
# Deadlocks (1213) are part of oltp_read_write's workload, also direct: sysbench
# retries them ("ignored errors"); any other error is fatal and fails the run.
for mode_test in disable:oltp_read_only disable:oltp_read_write auto:oltp_read_only auto:oltp_read_write; do
	mode=${mode_test%%:*} test=${mode_test#*:}
	$SB --mysql-port=$PP --db-ps-mode=$mode --threads=4 --time=5 $test run >"$T/sb-$test.log" 2>&1
	rc=$?
	errs=$(awk '/ignored errors:/ {print $3}' "$T/sb-$test.log")
	qps=$(awk '/queries:/ {gsub(/\(/, "", $3); print $3}' "$T/sb-$test.log")
	measured "sysbench $test ps-mode=$mode through 6450: $qps qps, ${errs:-?} ignored (deadlock) errors"
	grep -q FATAL "$T/sb-$test.log" && rc=99
	check "sysbench $test (--db-ps-mode=$mode) through 6450: no error" [ $rc -eq 0 -a -n "$errs" ]
	[ $rc -ne 0 ] && tail -n 5 "$T/sb-$test.log"
done
s2=$(com $P2 Com_select) s3=$(com $P3 Com_select)
$SB --mysql-port=$PP --db-ps-mode=auto --skip_trx=on --threads=8 --time=3 oltp_read_only run >"$T/sb-skiptrx.log" 2>&1
check "sysbench --skip_trx=on (ps-mode=auto): the replicas' Com_select grow" \
	[ $(($(com $P2 Com_select) - s2)) -gt 100 -a $(($(com $P3 Com_select) - s3)) -gt 100 ]

# --- pooling ------------------------------------------------------------------
conns() { echo $(($(com $P1 Connections) + $(com $P2 Connections) + $(com $P3 Connections))); }
for i in $(seq 1 5); do p "SELECT 1" >/dev/null; done
before=$(conns) start=$(date +%s%N)
for i in $(seq 1 50); do p "SELECT 1" >/dev/null; done
opened=$(($(conns) - before)) ms=$((($(date +%s%N) - start) / 1000000))
measured "pool: 50 connect/SELECT 1/close through 6450 in $ms ms opened $opened backend connections"
# What must hold is reuse, not how much of it a loaded machine allows: a
# sequential session finds a reset connection of an earlier one at least once.
check "pool: sessions reuse reset backend connections (50 sessions, $opened opened)" [ "$opened" -lt 50 ]
start=$(date +%s%N)
for i in $(seq 1 50); do sql $P2 "SELECT 1" >/dev/null; done
measured "direct: 50 connect/SELECT 1/close in $((($(date +%s%N) - start) / 1000000)) ms (mariadb CLI start-up included in both)"
p "SET @leak = 1; SET time_zone = '+03:00'; CREATE TEMPORARY TABLE t.leak (a INT); BEGIN; SELECT COUNT(*) FROM t.k" >/dev/null
leaks=0
for i in $(seq 1 10); do
	out=$(p "SELECT /* mysteer:writer */ @leak IS NULL, @@time_zone" 2>&1)
	[ "$out" = "1	SYSTEM" ] || { leaks=$((leaks + 1)); echo "# leaked: $out"; }
	out=$(p "SELECT /* mysteer:writer */ COUNT(*) FROM t.leak" 2>&1)
	grep -q "doesn't exist" <<<"$out" || { leaks=$((leaks + 1)); echo "# leaked: $out" | head -n 3; }
done
check "pool: no session state (variables, time_zone, temporary tables) leaks into the next session" [ $leaks -eq 0 ]

check "proxy process still running" kill -0 "$PROXY_PID"
grep -i "assert\|sanitizer" "$T/proxy.log" && check "no sanitizer report" false
kill -TERM "$PROXY_PID" && wait "$PROXY_PID"

# --- the same engine inside mysteerd, following the controller's topology ---
if itest_daemon_start "$T/window.conf"; then
	wait_until 15 bash -c "[ \"\$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B -e 'SELECT @@port' 2>/dev/null)\" != '' ]" >/dev/null
	check_eq "mysteerd serves 6450: a write reaches the writer" "" "$(p "INSERT INTO t.k (v) VALUES ('daemon')" 2>&1)"
	port_of_read=$(p "SELECT @@port")
	check "mysteerd serves 6450: a read runs on a replica" [ "$port_of_read" = $P2 -o "$port_of_read" = $P3 ]
	check "mysteerctl status --json shows the proxy" \
		[ "$(status_json | json_get 'd["proxy"]["workers"] >= 1 and d["proxy"]["clients"] >= 0')" = True ]
	check "mysteerctl status counts the proxy's backend connections" \
		[ "$(status_json | json_get 'sum(b["steered"] for b in d["backends"]) > 0')" = True ]
	out=$(p "INSERT INTO t.k (v) VALUES ('win'); SELECT COUNT(*) > 0, @@port FROM t.k WHERE v='win'")
	check_eq "read-your-writes (window): a read right after a write runs on the writer" "1 $P1" "$(echo $out)"
	out=$(p "INSERT INTO t.k (v) VALUES ('win2'); DO SLEEP(2.5); SELECT @@port")
	check "read-your-writes (window): after the window, reads go to replicas again" [ "$out" != $P1 ]
	# metric NAME [LABEL VALUE]: the sum of a family's series in status --json
	metric() { status_json | json_get "sum(s['value'] for s in d['metrics'].get('$1', {}).get('series', []) if '${2:-}' == '' or s['labels'].get('${2:-}') == '${3:-}')"; }
	n=$(metric mysteer_proxy_read_your_writes_total outcome window)
	check "mysteer_proxy_read_your_writes_total{outcome=window} counts that read ($n)" [ "${n%.*}" -ge 1 ]
	# A replica dies under a read whose answer has not started: the read is
	# retried on another backend and the client sees no error.
	mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B --unbuffered \
		-e "SELECT @@port; DO SLEEP(2); SELECT 'after', @@port" >"$T/kill-read.out" 2>&1 &
	cpid=$!
	wait_until 5 grep -q . "$T/kill-read.out" >/dev/null
	victim=$(head -n 1 "$T/kill-read.out")
	sleep 0.5
	case "$victim" in $P2|$P3) sb kill "$victim" >/dev/null 2>&1 ;; esac
	wait "$cpid"
	rc=$?
	sed 's/^/# /' "$T/kill-read.out"
	grep -q "^after" "$T/kill-read.out" || rc=98
	grep -q "after	$victim" "$T/kill-read.out" && rc=97
	check "killing replica $victim mid-read: the read is retried elsewhere, no error" [ $rc -eq 0 ]
	n=$(metric mysteer_proxy_reader_retries_total)
	check "mysteer_proxy_reader_retries_total counts the retry ($n)" [ "${n%.*}" -ge 1 ]
	# The writer dies under a write: the client gets an ERR that says so.
	mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B \
		-e "INSERT INTO t.k (v) SELECT SLEEP(2)" >"$T/kill-write.out" 2>&1 &
	cpid=$!
	sleep 0.7
	sb kill $P1 >/dev/null 2>&1
	wait "$cpid"
	rc=$?
	sed 's/^/# /' "$T/kill-write.out"
	check "killing the writer mid-write: the client gets an ERR naming the writer" \
		grep -q "lost the connection to the writer" "$T/kill-write.out"
	out=$(p "INSERT INTO t.k (v) VALUES ('nowriter')" 2>&1)
	echo "# $out"
	check "no writer: a write gets an ERR naming why" grep -q "no writer" <<<"$out"
else
	check "mysteerd started" false
fi
itest_done
