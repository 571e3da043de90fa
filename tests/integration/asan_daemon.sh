#!/usr/bin/env bash
# asan_daemon.sh - "the daemon never crashes on what a client sends", checked
# with the whole mysteerd built with AddressSanitizer and UBSan
# ($BUILD/asan/mysteerd, made by `make asan-bins`; halt_on_error,
# abort_on_error, leaks checked at exit: see lib.sh). Normal traffic and
# hostile clients go to 6450 (the protocol proxy), to 6446/6447 (the L4
# relay: local_handoff = off) and to the admin socket; after each kind the
# daemon must still be up, answer a query through 6450 and `mysteerctl
# status`. At the end it must stop on SIGTERM with exit 0 and no sanitizer
# report (leaks included, with an admin connection left open).
#
# No ASan build is a failure, not a skip.
. "$(dirname "$0")/lib.sh"
itest_init asan_daemon

ASAN_TREE=${ASAN_BUILD:-$ITEST_BUILD/asan}
case "$ASAN_TREE" in /*) ;; *) ASAN_TREE=$ITEST_ROOT/$ASAN_TREE ;; esac
if [ "$ITEST_BUILD" = "${ITEST_BUILD%/asan}" ]; then
	MYSTEERD=$ASAN_TREE/mysteerd MYSTEERCTL=$ASAN_TREE/mysteerctl
fi
if ! nm "$MYSTEERD" 2>/dev/null | grep -q __asan_report || ! [ -x "$MYSTEERCTL" ]; then
	echo "not ok - no ASan build of mysteerd at $MYSTEERD (make BUILD=${BUILD:-build} asan-bins)"
	exit 1
fi
echo "# daemon: $MYSTEERD"
itest_sandbox_up

PP=6450
HOSTILE=$(dirname "$0")/asan_hostile.py
ITEST_STEER_EXTRA="local_handoff = off"
ITEST_PROXY_EXTRA="workers = 2
handshake_timeout_ms = 1000
max_client_connections = 2000
max_packet_size = 33554432
client_packet_timeout_ms = 1000" itest_write_config "$T/mysteer.conf"
# Tables made before the daemon starts, straight on the writer.
sql $P1 "CREATE DATABASE IF NOT EXISTS hostile; CREATE TABLE IF NOT EXISTS hostile.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)"
SB="sysbench --mysql-host=127.0.0.1 --mysql-user=app --mysql-password=app --mysql-db=hostile --tables=2 --table-size=2000"
$SB --mysql-port=$P1 oltp_read_write prepare >"$T/sb-prepare.log" 2>&1 ||
	{ echo "not ok - sysbench prepare"; tail -n 5 "$T/sb-prepare.log"; }
itest_daemon_start "$T/mysteer.conf" || { itest_done; exit 1; }

p() { mariadb --no-defaults -h127.0.0.1 -P"${2:-$PP}" -uapp -papp --connect-timeout=5 -N -B -e "$1"; }
serves() { [ "$(p 'SELECT 1' 2>/dev/null)" = 1 ]; }
ms=$(wait_until 20 serves)
check "6450 serves through the ASan daemon (${ms} ms)" serves
ms=$(wait_until 20 bash -c "[ \"\$(mariadb --no-defaults -h127.0.0.1 -P6447 -uapp -papp -N -B -e 'SELECT 1' 2>/dev/null)\" = 1 ]")
check "6446 and 6447 relay to the backends (${ms} ms)" \
	bash -c "[ \"\$(mariadb --no-defaults -h127.0.0.1 -P6446 -uapp -papp -N -B -e 'SELECT @@port')\" = $P1 ]"

# still_up WHAT: the daemon runs, 6450 answers a query, mysteerctl status works
still_up() {
	check "after $1: mysteerd still runs" kill -0 "$ITEST_DAEMON_PID"
	check_eq "after $1: a query through 6450 answers" 1 "$(p 'SELECT 1' 2>&1)"
	check "after $1: mysteerctl status answers" ctl status >/dev/null
	itest_sanitizer_check || check "after $1: no sanitizer report" false
}

# --- normal traffic -----------------------------------------------------------
out=$(p "BEGIN; INSERT INTO hostile.t (v) VALUES (1); SELECT COUNT(*) FROM hostile.t; COMMIT; SET @a = 2; SELECT @a")
check_eq "a transaction and a session variable through 6450" "1 2" "$(echo $out)"
check_eq "a 4 MB answer through 6450" $((4 << 20)) "$(p "SELECT LENGTH(REPEAT('x', 4 << 20))")"
for mode in disable auto; do
	$SB --mysql-port=$PP --db-ps-mode=$mode --threads=4 --time=4 oltp_read_write run >"$T/sb-$mode.log" 2>&1
	rc=$?
	grep -q FATAL "$T/sb-$mode.log" && rc=99
	measured "sysbench oltp_read_write ps-mode=$mode through the ASan daemon:" \
		"$(awk '/transactions:/ {print $2, "transactions"} /queries:/ {print $2, "queries"}' "$T/sb-$mode.log" | tr '\n' ' ')"
	check "sysbench oltp_read_write (ps-mode=$mode) through 6450: no error" [ $rc -eq 0 ]
done
out=$(for i in $(seq 1 20); do p "SELECT @@port" $((6446 + i % 2)); done | sort | uniq -c | tr -s ' \n' ' ')
measured "20 sessions through the relay ports 6446/6447 landed on: $out"
still_up "normal traffic"

# --- hostile clients of 6450 --------------------------------------------------
python3 "$HOSTILE" proxy $PP >"$T/hostile.out" 2>&1
rc=$?
sed 's/^/# /' "$T/hostile.out"
check "16 MB headers, 0-length packets, pipelines, floods of COM_PING unread, a trickled packet, closes mid-result: as expected" [ $rc -eq 0 ]
still_up "hostile 6450 clients"

out=$(python3 "$(dirname "$0")/proxy_chaos.py" $PP 7 300 2>&1)
measured "random and malformed commands: $out"
check "random and malformed commands all get an answer" grep -q "timeouts 0 " <<<"$out"
still_up "random commands"

# --- the L4 relay: resets, stalls and half-closes in a 32 MB answer ----------
out=$(python3 "$HOSTILE" relay 6446 6447 2>&1)
rc=$?
measured "$out"
check "relay clients that reset, stall or half-close: as expected" [ $rc -eq 0 ]
still_up "hostile relay clients"

# --- random pipelines while the topology moves -----------------------------------
out=$(python3 "$HOSTILE" mix $PP "${ASAN_MIX_S:-20}" "${ASAN_MIX_SEED:-1}" \
	"$MYSTEERCTL" --socket "$T/admin.sock" 2>&1)
rc=$?
measured "$out"
check "random pipelines, prepared statements and abrupt closes while draining and reloading" [ $rc -eq 0 ]
still_up "random pipelines"

# --- connect-and-close storms -------------------------------------------------
out=$(python3 "$HOSTILE" storm 300 $PP 6446 6447 2>&1)
rc=$?
measured "$out"
check "the storm ran" [ $rc -eq 0 ]
sleep 1.5 # past handshake_timeout_ms: the ones that never logged in are dropped
still_up "300 connections at once on each of 6450, 6446, 6447"
check_eq "the proxy counts no client left over" 0 \
	"$(status_json | json_get 'd["proxy"]["clients"]')"

# --- the admin socket ----------------------------------------------------------
out=$(python3 "$HOSTILE" admin "$T/admin.sock" 2>&1)
rc=$?
echo "$out" | grep '^# '
measured "$(echo "$out" | grep -v '^# ')"
check "random bytes, overlong lines and garbage JSON to the admin socket: all refused" [ $rc -eq 0 ]
still_up "admin garbage"
check_eq "the backends are as configured after it" "db1 db2 db3" \
	"$(status_json | json_get "' '.join(b['name'] for b in d['backends'])")"

# --- a clean stop, with connections open and sessions busy ------------------------
# 6450 sessions and a relay session in a statement, an admin connection, and
# random pipelines are running when SIGTERM comes: the stop must free them
# (LeakSanitizer reports at exit).
for port in $PP $PP 6447; do
	mariadb --no-defaults -h127.0.0.1 -P$port -uapp -papp -N -B -e "SELECT SLEEP(30)" >/dev/null 2>&1 &
	ITEST_PIDS+=($!)
done
python3 -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'{\"cmd\":'); time.sleep(30)
" "$T/admin.sock" &
ITEST_PIDS+=($!)
python3 "$HOSTILE" mix $PP 4 2 >/dev/null 2>&1 &
ITEST_PIDS+=($!)
sleep 2
itest_daemon_stop TERM
check_eq "SIGTERM stops the ASan daemon with exit 0" 0 "$ITEST_DAEMON_RC"
check "no sanitizer report (leaks included)" itest_sanitizer_check
# A backend that died is not the daemon's doing, but it fails checks above:
# say so, with the server's own last words.
for port in $P1 $P2 $P3; do
	grep -q "got signal" "$SANDBOX_DIR/$port/mysqld.err" 2>/dev/null &&
		{ echo "# mariadbd $port crashed:"; grep -A 25 "got signal" "$SANDBOX_DIR/$port/mysqld.err" | sed 's/^/#   /'; }
done
itest_done
