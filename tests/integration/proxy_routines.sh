#!/usr/bin/env bash
# proxy_routines.sh - the proxy's routine table from the writer's
# information_schema.ROUTINES: with trust_routine_characteristics on, a
# function declared READS SQL DATA runs on a replica; with it off, on the
# writer; a MODIFIES SQL DATA function always on the writer. Each function
# returns @@port, so the answer names the server that ran it.
. "$(dirname "$0")/lib.sh"
itest_init proxy_routines
itest_sandbox_up

PROXY_RUN=$ITEST_BUILD/tests/proxy_run
PP=6450
p() { mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=5 -N -B -e "$1"; }

sql_root $P1 "CREATE DATABASE IF NOT EXISTS rt;
CREATE OR REPLACE FUNCTION rt.f_read() RETURNS INT READS SQL DATA RETURN @@port;
CREATE OR REPLACE FUNCTION rt.f_mod() RETURNS INT DETERMINISTIC MODIFIES SQL DATA RETURN @@port;
GRANT EXECUTE ON rt.* TO 'app'@'%'"
wait_until 10 bash -c "[ -n \"\$(mariadb --no-defaults -uroot -S $SANDBOX_DIR/$P2/mysqld.sock -N -B -e \"SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA='rt' AND ROUTINE_NAME='f_mod'\")\" ]" >/dev/null

run_proxy() { # trust on|off
	ITEST_PROBE_EXTRA="trust_routine_characteristics = $1" ITEST_PROXY_EXTRA="workers = 2" \
		itest_write_config "$T/$1.conf"
	"$PROXY_RUN" -c "$T/$1.conf" -w db1 -r db2,db3 -t "$T/topo" >"$T/proxy-$1.log" 2>&1 &
	PROXY_PID=$!
	ITEST_PIDS+=("$PROXY_PID")
	wait_until 10 grep -q "routines: [0-9]* loaded" "$T/proxy-$1.log" >/dev/null
}
stop_proxy() { kill "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null; }

run_proxy on
check "trust on: the table is loaded (info log)" grep -q "routines: [1-9][0-9]* loaded from 127.0.0.1:$P1" "$T/proxy-on.log"
sed -n 's/^.*\(routines: .*\)$/# \1/p' "$T/proxy-on.log"
r=$(p "SELECT rt.f_read()")
check "trust on: SELECT rt.f_read() runs on a replica ($r)" [ "$r" = $P2 -o "$r" = $P3 ]
r=$(p "USE rt; SELECT f_read()")
check "trust on: unqualified f_read() in schema rt runs on a replica ($r)" [ "$r" = $P2 -o "$r" = $P3 ]
check_eq "trust on: MODIFIES SQL DATA function on the writer" $P1 "$(p 'SELECT rt.f_mod()')"
# A routine created after start is picked up by the next check.
sql_root $P1 "CREATE OR REPLACE FUNCTION rt.f_new() RETURNS INT READS SQL DATA RETURN @@port"
wait_until 10 bash -c "[ \$(grep -c 'routines: [0-9]* loaded' $T/proxy-on.log) -ge 2 ]" >/dev/null
sleep 0.5
r=$(p "SELECT rt.f_new()")
check "trust on: a function created later is reloaded and runs on a replica ($r)" [ "$r" = $P2 -o "$r" = $P3 ]
stop_proxy

run_proxy off
check_eq "trust off: SELECT rt.f_read() on the writer" $P1 "$(p 'SELECT rt.f_read()')"
check_eq "trust off: MODIFIES SQL DATA function on the writer" $P1 "$(p 'SELECT rt.f_mod()')"
stop_proxy
itest_done
