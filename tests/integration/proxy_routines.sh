#!/usr/bin/env bash
# proxy_routines.sh - the proxy's routine table from the writer's
# information_schema.ROUTINES: with trust_routine_characteristics on, a
# function declared READS SQL DATA runs on a replica; with it off, on the
# writer; a MODIFIES SQL DATA function always on the writer. Each function
# returns @@port, so the answer names the server that ran it. Then session
# state made inside a procedure (a temporary table, a user variable, an OUT
# parameter, a session variable) is there for the session's next statements,
# while a procedure that changes no state leaves the session's reads on the
# replicas.
. "$(dirname "$0")/lib.sh"
itest_init proxy_routines
itest_sandbox_up

PROXY_RUN=$ITEST_BUILD/tests/proxy_run
PP=6450
p() { mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=5 -N -B -e "$1"; }

sql_root $P1 "CREATE DATABASE IF NOT EXISTS rt;
CREATE OR REPLACE FUNCTION rt.f_read() RETURNS INT READS SQL DATA RETURN @@port;
CREATE OR REPLACE FUNCTION rt.f_mod() RETURNS INT DETERMINISTIC MODIFIES SQL DATA RETURN @@port;
CREATE OR REPLACE PROCEDURE rt.p_tmp() CREATE TEMPORARY TABLE rt.tmp_port AS SELECT @@port AS port;
CREATE OR REPLACE PROCEDURE rt.p_var() SET @pv = @@port;
CREATE OR REPLACE PROCEDURE rt.p_out(OUT n INT) SET n = @@port;
CREATE OR REPLACE PROCEDURE rt.p_tz() SET time_zone = '+07:00';
CREATE OR REPLACE PROCEDURE rt.p_none() DO 1;
GRANT EXECUTE ON rt.* TO 'app'@'%'"
wait_until 10 bash -c "[ -n \"\$(mariadb --no-defaults -uroot -S $SANDBOX_DIR/$P2/mysqld.sock -N -B -e \"SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA='rt' AND ROUTINE_NAME='f_mod'\")\" ]" >/dev/null

run_proxy() { # trust on|off
	ITEST_LOG_LEVEL=debug ITEST_PROBE_EXTRA="trust_routine_characteristics = $1" ITEST_PROXY_EXTRA="workers = 2" \
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

# State made inside a procedure: the writer reports it (session tracking),
# and the session's later reads run where it lives. Each line is one client
# session; the CLI sends its statements one by one.
check_eq "a temporary table made by CALL is readable next, three times" "$P1 $P1 $P1" \
	"$(p 'CALL rt.p_tmp(); SELECT port FROM rt.tmp_port; SELECT port FROM rt.tmp_port;
	      SELECT port FROM rt.tmp_port' | tr '\n' ' ' | sed 's/ $//')"
check_eq "@pv set inside a procedure is read back, and plain reads follow it" "$P1 $P1" \
	"$(p 'CALL rt.p_var(); SELECT @pv; SELECT @@port' | tr '\n' ' ' | sed 's/ $//')"
check_eq "an OUT parameter's user variable is read back" $P1 "$(p 'CALL rt.p_out(@o); SELECT @o')"
check_eq "a session variable set inside a procedure holds" "+07:00" \
	"$(p 'CALL rt.p_tz(); SELECT @@time_zone')"
# (in the routine's own schema: calling one of another schema switches the
# current schema for the call, which the server reports as a state change)
r=$(p 'USE rt; CALL p_none(); SELECT @@port; SELECT @@port; SELECT @@port' | tr '\n' ' ')
echo "# reads after a procedure that changed nothing ran on: $r"
check "a procedure that changes no state leaves the reads on the replicas ($r)" \
	bash -c "! grep -qw $P1 <<<'$r'"
check "the proxy logged why a session stays on the writer (debug)" \
	grep -q "a session of app stays on the writer from now on: session state a statement or routine made there" "$T/proxy-off.log"
stop_proxy
itest_done
