#!/usr/bin/env bash
# writer_blip.sh - fail closed on role, not on a blip, and a probe that the
# server refuses. The writer stopped (SIGSTOP: it misses probes, its TCP
# connections stay) while no other server is writable: its established
# 6446 connection (connect steering) stays open and works again once it is
# back; new connects get the named error meanwhile. Stopped again while a
# replica is made writable: that one becomes the writer and the old
# writer's connection is closed. The monitoring user's SLAVE MONITOR
# revoked on a reader: the reader keeps its state and says why. The probe
# asks SHOW ALL REPLICAS STATUS and @@super_read_only (the server's general
# log).
. "$(dirname "$0")/lib.sh"
itest_init writer_blip

PEER=$ITEST_BUILD/tests/peer_check
[ -n "$ITEST_CGROUP" ] || { echo "not ok - no cgroup2 mount"; exit 1; }
incg() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$ITEST_CGROUP" "$@"; }
INTERVAL=200 TIMEOUT=500 FALL=2
export ITEST_INTERVAL_MS=$INTERVAL ITEST_TIMEOUT_MS=$TIMEOUT
DOWN_DEADLINE_S=$(((FALL * INTERVAL + TIMEOUT) * 3 / 1000 + 1))
writer_is() { test "$(ctl_writer)" = "$1"; }
bfield() { status_json | json_get "[b['$2'] for b in d['backends'] if b['name']=='$1'][0]"; }
state_is() { test "$(bfield "$1" state)" = "$2"; }

# A stopped server is always continued, whatever happens (sandbox down
# could not stop it otherwise).
STOPPED=
trap 'rc=$?; [ -n "$STOPPED" ] && kill -CONT "$STOPPED" 2>/dev/null; (exit $rc); itest_cleanup' EXIT
stop_server() { STOPPED=$(cat "$SANDBOX_DIR/$1/mysqld.pid") && kill -STOP "$STOPPED"; }
cont_server() { kill -CONT "$STOPPED"; STOPPED=; }

itest_sandbox_up
itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 15 writer_is db1 >/dev/null
wait_until 15 test "$(ctl_readers)" = "db2 db3" >/dev/null
check "db1 the writer, db2 db3 readers" test "$(ctl_writer) $(ctl_readers)" = "db1 db2 db3"

# --- a blip: the writer misses probes, nobody replaces it.
incg "$PEER" hold 127.0.0.1 6446 "$T/go1" >"$T/hold1.out" 2>&1 &
h1=$!
ITEST_PIDS+=($h1)
wait_until 10 grep -q '^before' "$T/hold1.out" >/dev/null
stop_server "$P1"
ms=$(wait_until "$DOWN_DEADLINE_S" state_is db1 down)
check "db1 stopped: down (${ms} ms), no writer" test "$(bfield db1 state) $(ctl_writer)" = "down None"
out=$(incg "$PEER" count 127.0.0.1 6446 1)
check "a new connect gets the named error" grep -q 'error 1105 mysteer: route rw has no writer' <<<"$out"
sleep 1
cont_server
ms=$(wait_until 15 writer_is db1)
check "db1 back: the writer again (${ms} ms)" writer_is db1
touch "$T/go1"
wait "$h1" 2>/dev/null
check_eq "the connection held across the blip started on db1" "before $P1" "$(grep '^before' "$T/hold1.out")"
check_eq "it was not closed: it works after the blip" "after $P1" "$(grep '^after' "$T/hold1.out")"
check "the daemon closed nothing" bash -c "! grep -q 'close_on_demote: closed [1-9]' '$T/mysteerd.log'"

# --- the writer misses probes and a replica becomes writable: replaced.
incg "$PEER" hold 127.0.0.1 6446 "$T/go2" >"$T/hold2.out" 2>&1 &
h2=$!
ITEST_PIDS+=($h2)
wait_until 10 grep -q '^before' "$T/hold2.out" >/dev/null
stop_server "$P1"
wait_until "$DOWN_DEADLINE_S" state_is db1 down >/dev/null
sql_root "$P2" "STOP SLAVE; SET GLOBAL read_only = 0"
ms=$(wait_until 10 writer_is db2)
check "db2 writable while db1 is down: db2 the writer (${ms} ms)" writer_is db2
wait_until 5 grep -q 'close_on_demote: closed [1-9]' "$T/mysteerd.log" >/dev/null
cont_server
touch "$T/go2"
wait "$h2" 2>/dev/null
check_eq "the second held connection started on db1" "before $P1" "$(grep '^before' "$T/hold2.out")"
check "the old writer's connection was closed once db2 was the writer" grep -q '^after-error' "$T/hold2.out"
check_eq "its reconnect lands on db2" "reconnect $P2" "$(grep '^reconnect' "$T/hold2.out")"

# --- a probe the server refuses: misconfigured, not down.
sql_root "$P3" "REVOKE SLAVE MONITOR ON *.* FROM 'mysteer'@'%'"
# Global privileges are read at login: the probe's kept connection goes.
for id in $(sql_root "$P3" "SELECT id FROM information_schema.processlist WHERE user = 'mysteer'"); do
	sql_root "$P3" "KILL CONNECTION $id" 2>/dev/null
done
refused() { bfield db3 last_error | grep -q 'misconfigured, last state kept:.*SLAVE MONITOR'; }
ms=$(wait_until 10 refused)
check "SLAVE MONITOR revoked on db3: its probe says why (${ms} ms)" refused
sleep 1
check_eq "db3 keeps its state" up "$(bfield db3 state)"
check "the log warns naming the grants" grep -q 'db3: the probe is refused (.*grants (SLAVE MONITOR or REPLICATION CLIENT)' "$T/mysteerd.log"
sql_root "$P3" "GRANT SLAVE MONITOR ON *.* TO 'mysteer'@'%'"
wait_until 10 test -z "$(bfield db3 last_error)" >/dev/null
check_eq "granted again: db3 up, no error" "up " "$(bfield db3 state) $(bfield db3 last_error)"

# --- what the probe asks (MariaDB: no super_read_only, asked once).
sql_root "$P3" "SET GLOBAL general_log_file = '$T/general3.log'; SET GLOBAL general_log = 1"
sleep 1.5
sql_root "$P3" "SET GLOBAL general_log = 0"
check "the probe asks SHOW ALL REPLICAS STATUS" grep -q 'SHOW ALL REPLICAS STATUS' "$T/general3.log"
check "and never SHOW SLAVE STATUS" bash -c "! grep -q 'SLAVE' '$T/general3.log'"
check "@@super_read_only is not asked again on MariaDB" bash -c "! grep -q 'super_read_only' '$T/general3.log'"

itest_daemon_stop TERM
itest_done
