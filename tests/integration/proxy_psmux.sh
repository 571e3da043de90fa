#!/usr/bin/env bash
# proxy_psmux.sh - prepared statements do not stop multiplexing on 6450:
# sessions with open prepared statements give their backend connection back
# between statements like the others, the backend connections cache the
# server-side statements for every session that takes them (same text, same
# schema, no session state applied), and the statements are closed on the
# servers when the last client statement of a text goes.
#
# proxy_psmux (libmysqlclient, one worker so that the sessions share the
# connections): 20 held-open sessions with 2 statements each, a text under
# two sql_modes, a text in two schemas (see proxy_psmux.c); then 20 sysbench
# threads running prepared point selects at a low rate. Both count the `app`
# connections in the servers' processlists and each server's
# Prepared_stmt_count, which must come back to its start.
#
# PSMUX_PROXY_RUN may name another proxy_run binary (to measure a build
# without this change).
. "$(dirname "$0")/lib.sh"
itest_init proxy_psmux
itest_sandbox_up

PROXY_RUN=${PSMUX_PROXY_RUN:-$ITEST_BUILD/tests/proxy_run}
PP=6450
# pool_min_idle = 0: every connection counted was opened for a client;
# pool_idle_timeout_ms = 2000: those opened for the clients' simultaneous
# start (20 sysbench threads prepare at once) idle out before the samples.
ITEST_PROXY_EXTRA="workers = 1
pool_min_idle = 0
pool_idle_timeout_ms = 2000" itest_write_config "$T/mysteer.conf"
"$PROXY_RUN" -c "$T/mysteer.conf" -w db1 -r db2,db3 -t "$T/topo" >"$T/proxy.log" 2>&1 &
PROXY_PID=$!
ITEST_PIDS+=("$PROXY_PID")
wait_until 10 bash -c "echo >/dev/tcp/127.0.0.1/$PP" >/dev/null ||
	{ echo "not ok - proxy did not listen"; cat "$T/proxy.log"; exit 1; }

apps() { sql_root "$1" "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER='app'"; }
all_apps() { echo $(($(apps $P1) + $(apps $P2) + $(apps $P3))); }
pscount() { sql_root "$1" "SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'" | awk '{print $2}'; }
all_ps() { echo $(($(pscount $P1) + $(pscount $P2) + $(pscount $P3))); }

sql_root $P1 "CREATE DATABASE IF NOT EXISTS psmux; CREATE TABLE psmux.t (id INT PRIMARY KEY); INSERT INTO psmux.t VALUES (1), (2), (3);
CREATE DATABASE IF NOT EXISTS psa; CREATE TABLE psa.t (v VARCHAR(8)); INSERT INTO psa.t VALUES ('psa');
CREATE DATABASE IF NOT EXISTS psb; CREATE TABLE psb.t (v VARCHAR(8)); INSERT INTO psb.t VALUES ('psb');
CREATE DATABASE IF NOT EXISTS sbtest"
for port in $P2 $P3; do
	wait_until 10 bash -c "[ \"\$(mariadb --no-defaults -uroot -S $SANDBOX_DIR/$port/mysqld.sock -N -B -e 'SELECT v FROM psb.t' 2>/dev/null)\" = psb ]" >/dev/null ||
		echo "# replica $port did not catch up"
done

# --- libmysqlclient sessions ---------------------------------------------------
"$ITEST_BUILD/tests/proxy_psmux" $PP 20 6 $P1 $P2 $P3 2>"$T/psmux.err" |
	tee "$T/psmux.out" | grep -v '^ok'
ITEST_PASSED=$((ITEST_PASSED + $(grep -c '^ok' "$T/psmux.out")))
ITEST_FAILED=$((ITEST_FAILED + $(grep -c '^not ok' "$T/psmux.out")))
check "proxy_psmux ran to the end" grep -q "psmux: done" "$T/psmux.out"
[ -s "$T/psmux.err" ] && sed 's/^/# /' "$T/psmux.err" | head -20

# --- sysbench: 20 threads of prepared point selects at a low rate ---------------
SB="sysbench --mysql-host=127.0.0.1 --mysql-user=app --mysql-password=app --mysql-db=sbtest --tables=1 --table-size=1000"
$SB --mysql-port=$P1 oltp_point_select prepare >"$T/sb-prepare.log" 2>&1
wait_until 10 bash -c "[ \"\$(mariadb --no-defaults -uroot -S $SANDBOX_DIR/$P3/mysqld.sock -N -B -e 'SELECT COUNT(*) FROM sbtest.sbtest1' 2>/dev/null)\" = 1000 ]" >/dev/null
ps0=$(all_ps)
$SB --mysql-port=$PP --db-ps-mode=auto --threads=20 --rate=40 --time=14 oltp_point_select run \
	>"$T/sb.log" 2>&1 &
sb=$!
sleep 5
cs=() ss=()
for s in $(seq 1 14); do
	kill -0 $sb 2>/dev/null || break
	cs+=("$(all_apps)") ss+=("$(($(all_ps) - ps0))")
	sleep 0.5
done
wait $sb
rc=$?
grep -q FATAL "$T/sb.log" && rc=99
stat() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[NR], v[int((NR+1)/2)]}'; }
read -r max_c med_c < <(stat "${cs[@]:-0}")
read -r max_s med_s < <(stat "${ss[@]:-0}")
qps=$(awk '/queries:/ {gsub(/\(/, "", $3); print $3}' "$T/sb.log")
ps_back() { [ "$(all_ps)" -eq "$1" ]; }
back=$(wait_until 5 ps_back "$ps0")
ps1=$(all_ps)
measured "sysbench oltp_point_select --db-ps-mode=auto, 20 threads at 40 events/s through 6450 ($qps qps), ${#cs[@]} samples: app connections in the 3 processlists at most $max_c, median $med_c; Prepared_stmt_count above start at most $max_s, median $med_s; after the run $((ps1 - ps0)) (back in ${back:-?} ms)"
check "sysbench with prepared statements through 6450: no error" [ $rc -eq 0 ]
check "sampled while sysbench ran (${#cs[@]} samples)" [ ${#cs[@]} -ge 3 ]
check "20 sysbench threads with prepared statements usually need at most 10 backend connections (median $med_c)" [ "$med_c" -le 10 ]
check "never 20 (at most $max_c)" [ "$max_c" -lt 20 ]
check "Prepared_stmt_count never above the proxy's connections (at most $max_s for at most $max_c connections)" [ "$max_s" -le "$max_c" ]
check_eq "Prepared_stmt_count back at its start after sysbench ended" 0 $((ps1 - ps0))

itest_proxy_stop "$PROXY_PID" "$T/proxy.log"
itest_done
