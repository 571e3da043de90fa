#!/usr/bin/env bash
# writer_sticky.sh - the writer stays put: after a promote to db2 and the old
# primary db1 made writable again, db2 stays the writer (two writable
# servers: a warning in the log and in `mysteerctl status`, text and JSON),
# across a SIGKILL + restart (pinned maps and state file) and a SIGTERM +
# restart (state file only); with failback = off (the default) the demoted
# db1 does not take the writes when db2 goes away, until `mysteerctl enable
# db1`. Under writer_policy = priority the same: a demoted better-priority
# server that comes back does not take the writes; failback = on restores
# the move back to it.
. "$(dirname "$0")/lib.sh"
itest_init writer_sticky

INTERVAL=200 TIMEOUT=500 FALL=2
export ITEST_INTERVAL_MS=$INTERVAL ITEST_TIMEOUT_MS=$TIMEOUT
DOWN_DEADLINE_S=$(((FALL * INTERVAL + TIMEOUT) * 3 / 1000 + 1))
writer_is() { test "$(ctl_writer)" = "$1"; }
bfield() { status_json | json_get "[b['$2'] for b in d['backends'] if b['name']=='$1'][0]"; }
warnings() { status_json | json_get "' | '.join(d['warnings'])"; }
state_writer() { python3 -c "import json; print(json.load(open('$T/state'))['runtime']['writer'])"; }
state_demoted() {
	python3 -c "import json; print(' '.join(b['name'] for b in json.load(open('$T/state'))['runtime']['backends'] if b.get('demoted')))"
}

itest_sandbox_up
itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 15 writer_is db1 >/dev/null
check "db1 is the writer at start" writer_is db1

sb promote "$P2" >/dev/null 2>&1
ms=$(wait_until 15 writer_is db2)
check "promote $P2: writer db2 (${ms} ms)" writer_is db2
check_eq "db1 is demoted" True "$(bfield db1 demoted)"
check_eq "the state file keeps the writer" db2 "$(state_writer)"
check_eq "the state file keeps db1 demoted" db1 "$(state_demoted)"

# The stale old primary made writable again.
sql_root "$P1" "SET GLOBAL read_only = 0"
two() { warnings | grep -q 'two writable servers: db1 is writable but is not the writer (db2 is)'; }
ms=$(wait_until 10 two)
check "two writable servers: a warning in status --json (${ms} ms)" two
check "and in status" bash -c "'$MYSTEERCTL' --socket '$T/admin.sock' status | grep -q '^WARNING: two writable servers: db1'"
check "and in the log" grep -q 'TWO WRITABLE SERVERS: db1 is writable but is not the writer' "$T/mysteerd.log"
sleep 1
check_eq "the writer stays db2" db2 "$(ctl_writer)"

# Restarts: the old primary, writable and better by priority, gets nothing.
itest_daemon_stop KILL
itest_daemon_start "$T/mysteer.conf" || exit 1
ms=$(wait_until 15 writer_is db2)
check "SIGKILL + restart: the writer stays db2 (${ms} ms)" writer_is db2
itest_daemon_stop TERM
check_eq "SIGTERM unpinned the maps: only the state file remains" "" "$(ls /sys/fs/bpf/mysteer 2>/dev/null)"
itest_daemon_start "$T/mysteer.conf" || exit 1
ms=$(wait_until 15 writer_is db2)
check "SIGTERM + restart: the writer stays db2 (${ms} ms)" writer_is db2
check_eq "db1 never was the writer again (only at the first start)" 1 \
	"$(grep -c 'writer [a-z0-9]* -> db1$' "$T/mysteerd.log")"

# failback = off: db2 goes away; the demoted db1 is writable but gets nothing.
sb kill "$P2" >/dev/null 2>&1
wait_until "$DOWN_DEADLINE_S" test "$(bfield db2 state)" = down >/dev/null
sleep 1
check_eq "db2 down: no writer, the demoted db1 is not chosen" None "$(ctl_writer)"
check "status says why" bash -c "'$MYSTEERCTL' --socket '$T/admin.sock' --json status | grep -q 'db1 is writable but was demoted (failback = off)'"
out=$(sql 6446 'SELECT @@port' 2>&1)
check "6446 gives the named error" grep -q 'route rw has no writer' <<<"$out"
check "an operator's enable makes db1 the writer" ctl enable db1
ms=$(wait_until 10 writer_is db1)
check "db1 is the writer after \`mysteerctl enable db1\` (${ms} ms)" writer_is db1
itest_daemon_stop TERM

# --- writer_policy = priority: failback off keeps the writer; on moves back.
sb down >/dev/null 2>&1
itest_sandbox_up >/dev/null 2>&1
rm -f "$T/state"
ITEST_PROBE_EXTRA="writer_policy = priority" itest_write_config "$T/prio.conf"
itest_daemon_start "$T/prio.conf" || exit 1
wait_until 15 writer_is db1 >/dev/null
check "priority policy: db1 the writer at start" writer_is db1
sb kill "$P1" >/dev/null 2>&1
ms=$(wait_until 10 writer_is db2)
check "priority policy: db1 killed, db2 the writer (${ms} ms)" writer_is db2
sb start "$P1" >/dev/null 2>&1
wait_until 15 test "$(bfield db1 state)" = up >/dev/null
sleep 1
check_eq "priority policy, failback off: db1 back does not take the writes" db2 "$(ctl_writer)"
sed -i 's/^writer_policy = priority$/&\nfailback = on/' "$T/prio.conf"
check "reload with failback = on" ctl reload
ms=$(wait_until 10 writer_is db1)
check "priority policy, failback on: db1 takes the writes back (${ms} ms)" writer_is db1

itest_daemon_stop TERM
itest_done
