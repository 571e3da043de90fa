#!/usr/bin/env bash
# proxy_pscap.sh - prepared statement caps of the 6450 proxy: at most
# PER_CONN server-side statements per backend connection (least recently used
# closed first, re-prepared lazily when executed again) and at most
# PER_SESSION client statements per session (ERR 1461 beyond, the session goes
# on). The caps are 256 and 1024 by default; the test makes them small with
# [proxy] max_prepared_per_connection / max_prepared_per_session, and
# proxy_pscap checks each server's Prepared_stmt_count. Long
# data kept for an EXECUTE is bounded by max_packet_size (1 MB here).
# One reader: sessions multiplex (a read's connection goes back to the pool
# after it) and the statements stay cached on the backend connection, so the
# session's working set must find the reader connection it used before, not
# the other replica's.
. "$(dirname "$0")/lib.sh"
itest_init proxy_pscap
itest_sandbox_up

PROXY_RUN=$ITEST_BUILD/tests/proxy_run
PP=6450
PER_CONN=4
PER_SESSION=12

ITEST_PROXY_EXTRA="workers = 2
max_packet_size = 1048576
max_prepared_per_connection = $PER_CONN
max_prepared_per_session = $PER_SESSION" itest_write_config "$T/mysteer.conf"
"$PROXY_RUN" -c "$T/mysteer.conf" -w db1 -r db2 -t "$T/topo" >"$T/proxy.log" 2>&1 &
PROXY_PID=$!
ITEST_PIDS+=("$PROXY_PID")
wait_until 10 bash -c "echo >/dev/tcp/127.0.0.1/$PP" >/dev/null ||
	{ echo "not ok - proxy did not listen"; cat "$T/proxy.log"; exit 1; }

"$ITEST_BUILD/tests/proxy_pscap" $PP $PER_CONN $PER_SESSION $P1 $P2 $P3 2>"$T/pscap.err" |
	tee "$T/pscap.out" | grep -v '^ok'
ITEST_PASSED=$((ITEST_PASSED + $(grep -c '^ok' "$T/pscap.out")))
ITEST_FAILED=$((ITEST_FAILED + $(grep -c '^not ok' "$T/pscap.out")))
check "proxy_pscap ran to the end" grep -q "pscap: done" "$T/pscap.out"
[ -s "$T/pscap.err" ] && sed 's/^/# /' "$T/pscap.err"
itest_proxy_stop "$PROXY_PID" "$T/proxy.log"
itest_done
