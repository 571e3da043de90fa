#!/usr/bin/env bash
# proxy_infile.sh - LOAD DATA LOCAL INFILE through the 6450 proxy: the
# server's request for the file (0xFB) goes to the client, the file's packets
# stream back to the same backend connection, then the server's answer.
# - mariadb --local-infile=1: a 200 MB file, every row on the writer (none
#   on a replica by a write of their own), the daemon's peak RSS growth
#   measured and logged (bound: < 64 MB, the file is streamed, not held);
# - PyMySQL local_infile=True: rows counted on the writer;
# - over TLS (mariadb --ssl --ssl-verify-server-cert): 20 MB, rows counted;
# - a file the server refuses part way (a trigger's SIGNAL at row 15000):
#   its ERR, nothing of the file kept, and the session goes on;
# - a client killed in the middle of a file: nothing of it committed, the
#   daemon and other sessions go on (the connection is closed, not pooled);
# - [proxy] local_infile = off (reload): the server's own ERR for a client
#   without the capability (4166 on MariaDB 10.11);
# - backends with tls = on (a restart): 20 MB streamed over the proxy's TLS
#   connection to the writer.
export SANDBOX_TLS=1
. "$(dirname "$0")/lib.sh"
itest_init proxy_infile
itest_sandbox_up

PP=6450
TLS=$SANDBOX_DIR/tls
cp "$TLS/server-cert.pem" "$TLS/server-key.pem" "$T/"
ITEST_PROXY_EXTRA="workers = 2
tls_cert = $T/server-cert.pem
tls_key = $T/server-key.pem" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 20 bash -c "[ \"\$('$MYSTEERCTL' --socket '$T/admin.sock' --json status |
	python3 -c 'import json,sys; print(json.load(sys.stdin)[\"writer\"])')\" = db1 ]" >/dev/null ||
	{ echo "not ok - no writer"; tail -n 20 "$T/mysteerd.log"; exit 1; }
wait_until 20 sql $PP "SELECT 1" >/dev/null

# lq QUERY: through 6450 with LOCAL INFILE allowed on the client's side
lq() {
	mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=10 \
		--local-infile=1 -N -B -e "$1"
}
kb() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$ITEST_DAEMON_PID/status"; }

sql_root $P1 "CREATE DATABASE IF NOT EXISTS t;
	CREATE TABLE t.big (id INT PRIMARY KEY, v VARCHAR(1000)) ENGINE=InnoDB;
	CREATE TABLE t.small (id INT PRIMARY KEY, v VARCHAR(100));
	CREATE TABLE t.abort (id INT PRIMARY KEY, v VARCHAR(1000));
	CREATE TABLE t.tls (id INT PRIMARY KEY, v VARCHAR(1000));
	CREATE TABLE t.dup (id INT PRIMARY KEY, v VARCHAR(1000)) ENGINE=InnoDB;
	GRANT FILE ON *.* TO 'app'@'%'"
mariadb --no-defaults -uroot -S "$SANDBOX_DIR/$P1/mysqld.sock" <<'SQL'
DELIMITER //
CREATE TRIGGER t.dup_refuse BEFORE INSERT ON t.dup FOR EACH ROW
	IF NEW.id = 15000 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'row 15000 refused'; END IF//
DELIMITER ;
SQL
ROWS=${INFILE_ROWS:-200000}
python3 - "$T/big.csv" $ROWS <<'PY'
import sys
pad = "x" * 990
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write("%d,%s\n" % (i, pad))
PY
size=$(stat -c %s "$T/big.csv")
measured "file: $((size / 1048576)) MB, $ROWS rows"

# --- 200 MB with the mariadb CLI --------------------------------------------------
writes_mark
echo 5 >"/proc/$ITEST_DAEMON_PID/clear_refs" # VmHWM from now
rss0=$(kb VmRSS)
start=$(date +%s%3N)
out=$(lq "LOAD DATA LOCAL INFILE '$T/big.csv' INTO TABLE t.big FIELDS TERMINATED BY ','" 2>&1)
rc=$?
elapsed=$(($(date +%s%3N) - start))
hwm=$(kb VmHWM)
rss1=$(kb VmRSS)
[ -n "$out" ] && echo "# $out"
measured "LOAD DATA LOCAL of $((size / 1048576)) MB through 6450: $elapsed ms; mysteerd RSS $rss0 kB before, peak $hwm kB during, $rss1 kB after: peak growth $(((hwm - rss0) / 1024)) MB"
check "mariadb --local-infile=1: LOAD DATA LOCAL INFILE of 200 MB succeeded" [ $rc -eq 0 ]
check_eq "all $ROWS rows on the writer" $ROWS "$(sql_root $P1 "SELECT COUNT(*) FROM t.big")"
# an ASan build keeps freed memory in quarantine (256 MB): its RSS says
# nothing of what the proxy holds, so the bound is for the plain build
case "$MYSTEERD" in
*/asan/*) echo "# ASan build: the RSS bound is not checked" ;;
*) check "the daemon's peak RSS grew by less than 64 MB" [ $((hwm - rss0)) -lt 65536 ] ;;
esac
check_eq "no write of its own on replica $P2" 0 "$(local_writes $P2)"
check_eq "no write of its own on replica $P3" 0 "$(local_writes $P3)"

# --- PyMySQL ---------------------------------------------------------------------
seq 1 1000 | awk '{print $1 ",row " $1}' >"$T/small.csv"
out=$(/usr/bin/python3 - $PP "$T/small.csv" <<'PY' 2>&1
import sys
import pymysql
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="app", password="app",
                    local_infile=True, autocommit=True, connect_timeout=10)
with c.cursor() as cur:
    n = cur.execute("LOAD DATA LOCAL INFILE '%s' INTO TABLE t.small FIELDS TERMINATED BY ','"
                    % sys.argv[2])
    print("affected", n)
    cur.execute("SELECT 1")
    print("after", cur.fetchone()[0])
PY
)
echo "# PyMySQL: $(tr '\n' ' ' <<<"$out")"
check "PyMySQL local_infile=True: 1000 rows affected, the session goes on" \
	grep -qz "affected 1000.*after 1" <<<"$out"
check_eq "1000 rows on the writer" 1000 "$(sql_root $P1 "SELECT COUNT(*) FROM t.small")"

# --- over TLS ---------------------------------------------------------------------
head -n 20000 "$T/big.csv" >"$T/part.csv"
out=$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=10 --local-infile=1 \
	--ssl --ssl-ca="$TLS/ca.pem" --ssl-verify-server-cert -N -B \
	-e "LOAD DATA LOCAL INFILE '$T/part.csv' INTO TABLE t.tls FIELDS TERMINATED BY ','; SHOW STATUS LIKE 'Ssl_version'" 2>&1)
echo "# over TLS: $out"
check "mariadb --ssl --ssl-verify-server-cert: LOAD DATA LOCAL of 20 MB" grep -q "^Ssl_version" <<<"$out"
check_eq "20000 rows on the writer" 20000 "$(sql_root $P1 "SELECT COUNT(*) FROM t.tls")"

# --- the server refuses the file part way ------------------------------------------------
out=$(lq "LOAD DATA LOCAL INFILE '$T/part.csv' INTO TABLE t.dup FIELDS TERMINATED BY ','" 2>&1)
echo "# a row refused by a trigger: $out"
check "the server's ERROR 1644 for the refused row" grep -q "ERROR 1644.*row 15000 refused" <<<"$out"
out=$(/usr/bin/python3 - $PP "$T/part.csv" <<'PY' 2>&1
import sys
import pymysql
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="app", password="app",
                    local_infile=True, autocommit=True, connect_timeout=10)
cur = c.cursor()
try:
    cur.execute("LOAD DATA LOCAL INFILE '%s' INTO TABLE t.dup FIELDS TERMINATED BY ','"
                % sys.argv[2])
    print("no error")
except pymysql.err.MySQLError as e:
    print("error", e.args[0])
cur.execute("SELECT 'after', CONNECTION_ID() = %d" % c.thread_id())
print(*cur.fetchone())
PY
)
echo "# PyMySQL, the same file, then a SELECT: $(tr '\n' ' ' <<<"$out")"
check "PyMySQL: ERROR 1644, and the session goes on after it" grep -qz "error 1644.after 1" <<<"$out"
check_eq "nothing of the refused file is kept" 0 "$(sql_root $P1 "SELECT COUNT(*) FROM t.dup")"

# --- a client killed in the middle of its file -----------------------------------------
mkfifo "$T/fifo"
python3 -c "
import sys, time
pad = 'y' * 990
with open('$T/fifo', 'w') as f:
    for i in range(8000):
        f.write('%d,%s\n' % (i, pad))
    f.flush()
    time.sleep(60)
" &
FEED=$!
ITEST_PIDS+=("$FEED")
mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=10 --local-infile=1 \
	-e "LOAD DATA LOCAL INFILE '$T/fifo' INTO TABLE t.abort FIELDS TERMINATED BY ','" \
	>"$T/abort.out" 2>&1 &
CLI=$!
ITEST_PIDS+=("$CLI")
check "the LOAD DATA of a file that stops coming is running on the writer" \
	wait_until 20 bash -c "[ \"\$(mariadb --no-defaults -uroot -S '$SANDBOX_DIR/$P1/mysqld.sock' -N -B -e \"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'LOAD DATA%t.abort%'\")\" = 1 ]"
kill -9 "$CLI"
kill "$FEED"
wait "$CLI" "$FEED" 2>/dev/null
check "the writer's LOAD DATA ends when the client is gone" \
	wait_until 30 bash -c "[ \"\$(mariadb --no-defaults -uroot -S '$SANDBOX_DIR/$P1/mysqld.sock' -N -B -e \"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'LOAD DATA%t.abort%'\")\" = 0 ]"
check_eq "nothing of the aborted file committed" 0 "$(sql_root $P1 "SELECT COUNT(*) FROM t.abort")"
ok=0
for i in $(seq 1 10); do [ "$(lq 'SELECT COUNT(*) FROM t.small')" = 1000 ] && ok=$((ok + 1)); done
check_eq "10 sessions after it are served" 10 "$ok"
check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"

# --- local_infile = off ---------------------------------------------------------------
sed -i 's/^\[proxy\]$/[proxy]\nlocal_infile = off/' "$T/mysteer.conf"
check "reload with local_infile = off" ctl reload
out=$(lq "LOAD DATA LOCAL INFILE '$T/small.csv' INTO TABLE t.small FIELDS TERMINATED BY ','" 2>&1)
echo "# local_infile = off: $out"
# what the server itself answers a client without the capability
srv=$(mariadb --no-defaults -h127.0.0.1 -P$P1 -uapp -papp --local-infile=0 -N -B \
	-e "LOAD DATA LOCAL INFILE '$T/small.csv' INTO TABLE t.small" 2>&1)
code=$(grep -o "ERROR [0-9]*" <<<"$srv" | head -n1)
echo "# the writer itself, a client without local infile: $srv"
check "LOAD DATA LOCAL gets the server's own error ($code: 4166 or 1148 by MariaDB version)" \
	bash -c "[ -n '$code' ] && grep -q '$code' <<<\"\$1\"" _ "$out"
check_eq "a plain query still works" 1000 "$(lq 'SELECT COUNT(*) FROM t.small')"
check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"

# --- backends over TLS ---------------------------------------------------------------
itest_daemon_stop TERM
ITEST_TIMEOUT_MS=3000 ITEST_BACKEND_EXTRA="tls = on" ITEST_PROXY_EXTRA="workers = 2" \
	itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 40 bash -c "[ \"\$('$MYSTEERCTL' --socket '$T/admin.sock' --json status |
	python3 -c 'import json,sys; print(json.load(sys.stdin)[\"writer\"])')\" = db1 ]" >/dev/null ||
	{ echo "not ok - no writer"; tail -n 20 "$T/mysteerd.log"; exit 1; }
sql_root $P1 "TRUNCATE t.tls"
out=$(lq "LOAD DATA LOCAL INFILE '$T/part.csv' INTO TABLE t.tls FIELDS TERMINATED BY ','" 2>&1)
[ -n "$out" ] && echo "# $out"
check_eq "backends with tls = on: 20000 rows of the file on the writer" 20000 \
	"$(sql_root $P1 "SELECT COUNT(*) FROM t.tls")"
check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"
itest_done
