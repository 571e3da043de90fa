#!/usr/bin/env bash
# proxy_kill.sh - CONNECTION_ID() and KILL through the 6450 proxy (ops.c),
# two workers, real clients:
# - the mariadb CLI: the connection id its `status` shows (the proxy's
#   handshake) is what SELECT CONNECTION_ID() answers;
# - PyMySQL (proxy_kill.py): ids unique over the workers, CONNECTION_ID()
#   inside larger statements; client A runs SELECT SLEEP(30), client B (same
#   user) KILL QUERY <A's id>: A gets ERROR 1317 within seconds and its
#   session goes on, on a replica and inside a transaction on the writer;
#   another user is refused (1095), an unknown id is 1094, KILL USER and a
#   KILL in a multi-statement 1235; KILL CONNECTION ends A (1927) and its
#   statement on the backend, an idle session, and a session itself;
# - the mariadb CLI's KILL QUERY of a PyMySQL session's SLEEP(30);
# - [proxy] kill_any_user: app_admin's KILLs of app's sessions;
# - KILL QUERY of a statement waiting for a connection (pool_max_per_backend
#   = 1): 1317 where it waits;
# - no killed SLEEP is left running on any server, no KILL reached one as
#   the client wrote it.
. "$(dirname "$0")/lib.sh"
itest_init proxy_kill
itest_sandbox_up

PP=6450
ITEST_APP_ADMIN=1
ITEST_PROXY_EXTRA="workers = 2" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 20 bash -c "[ \"\$('$MYSTEERCTL' --socket '$T/admin.sock' --json status |
	python3 -c 'import json,sys; print(json.load(sys.stdin)[\"writer\"])')\" = db1 ]" >/dev/null ||
	{ echo "not ok - no writer"; tail -n 20 "$T/mysteerd.log"; exit 1; }
wait_until 20 sql $PP "SELECT 1" >/dev/null

out=$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=10 \
	-e "status; SELECT CONNECTION_ID() AS cid" 2>&1)
hs=$(awk -F':[ \t]+' '/^Connection id:/ {print $2}' <<<"$out")
cid=$(awk '/^cid/ {getline; print $1}' <<<"$out")
echo "# mariadb CLI: Connection id: $hs, CONNECTION_ID(): $cid"
check "mariadb CLI: CONNECTION_ID() is the handshake's id ($hs)" [ -n "$hs" -a "$hs" = "$cid" ]

# the mariadb CLI kills a session of PyMySQL's (another worker maybe)
/usr/bin/python3 -c "
import pymysql, sys, time
c = pymysql.connect(host='127.0.0.1', port=$PP, user='app', password='app')
print(c.thread_id(), flush=True)
cur = c.cursor()
t0 = time.monotonic()
try:
    cur.execute('SELECT SLEEP(30)')
    print('no error', flush=True)
except pymysql.err.MySQLError as e:
    print('error', e.args[0], '%.1f' % (time.monotonic() - t0), flush=True)
cur.execute('SELECT 1')
print('after', cur.fetchone()[0], flush=True)
" >"$T/victim.out" 2>&1 &
VICTIM=$!
ITEST_PIDS+=("$VICTIM")
wait_until 10 grep -q . "$T/victim.out" >/dev/null
vid=$(head -n1 "$T/victim.out")
sleep 1.5
out=$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=10 -e "KILL QUERY $vid" 2>&1)
wait "$VICTIM"
ITEST_PIDS=()
echo "# mariadb -e 'KILL QUERY $vid': '$out'; the victim: $(tr '\n' ' ' <"$T/victim.out")"
check_eq "mariadb CLI: KILL QUERY of a PyMySQL session's SLEEP(30) is OK" "" "$out"
check "the PyMySQL session gets 1317" grep -q "^error 1317" "$T/victim.out"
check "and goes on" grep -q "^after 1" "$T/victim.out"
out=$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=10 -e "KILL 987654" 2>&1)
check "mariadb CLI: KILL of an unknown id: ERROR 1094" grep -q "ERROR 1094" <<<"$out"

sql_root $P1 "SET GLOBAL general_log_file = '$T/general.log', general_log = 1" >/dev/null
/usr/bin/python3 "$(dirname "$0")/proxy_kill.py" $PP $P1 >"$T/py.out" 2>&1
rc=$?
cat "$T/py.out"
check "proxy_kill.py: every check passed" [ $rc -eq 0 ]
check "proxy_kill.py ran to the end" grep -q "B still works" "$T/py.out"
sql_root $P1 "SET GLOBAL general_log = 0" >/dev/null

left=0
for p in $P1 $P2 $P3; do
	n=$(sql_root $p "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(30)%'")
	left=$((left + n))
done
check_eq "no killed SLEEP(30) still runs on a server" 0 "$left"
check "the writer never got KILL USER nor a client's KILL <proxy id>" \
	bash -c "! grep -Ei 'KILL (USER|[0-9]|CONNECTION)' '$T/general.log'"
kills=$(grep -c "KILL QUERY" "$T/general.log")
echo "# the writer ran $kills KILL QUERY of the proxy's"
check "the proxy's KILL QUERY reached the writer (the transaction's statement)" [ "$kills" -ge 1 ]
check "mysteerd logged the KILLs" grep -q "proxy: KILL QUERY" "$T/mysteerd.log"

# [proxy] kill_any_user = app_admin (reload): an operator's KILL of app's
# sessions (app_admin's server account may kill any thread)
sed -i 's/^\[proxy\]$/[proxy]\nkill_any_user = nobody, app_admin/' "$T/mysteer.conf"
check "reload with kill_any_user = nobody, app_admin" ctl reload
/usr/bin/python3 "$(dirname "$0")/proxy_kill.py" $PP $P1 any >"$T/any.out" 2>&1
rc=$?
cat "$T/any.out"
check "proxy_kill.py any: every check passed" [ $rc -eq 0 ]

# pool_max_per_backend = 1 (reload): a statement waiting for the writer's
# only connection is killed where it waits (idle connections time out
# first: a pooled one would serve the statement without a wait)
sed -i 's/^\[proxy\]$/[proxy]\npool_max_per_backend = 1\npool_min_idle = 0\npool_idle_timeout_ms = 200/' "$T/mysteer.conf"
check "reload with pool_max_per_backend = 1" ctl reload
sleep 1.5
/usr/bin/python3 "$(dirname "$0")/proxy_kill.py" $PP $P1 wait >"$T/wait.out" 2>&1
rc=$?
cat "$T/wait.out"
check "proxy_kill.py wait: every check passed" [ $rc -eq 0 ]
check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"
itest_done
