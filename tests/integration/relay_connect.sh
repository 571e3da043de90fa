#!/usr/bin/env bash
# relay_connect.sh - the relay's connect to a backend is bounded: with the
# writer black-holed for new connections (a tc filter on the test's own
# loopback drops every SYN to 3306; the daemon's kept-open probe connection
# goes on), a client of 6446 through the relay reads a reset after about
# connect_timeout_ms instead of waiting ~127 s on a silent socket; the failure
# is counted for the backend and reported (the backend is probed at once).
# Relayed sockets carry keepalive and a user timeout, so half-open pairs end.
# A reload changes the bound for the next connects.
export SANDBOX_BASE_PORT=3306 # the port test_blackhole.bpf.c drops SYNs to
. "$(dirname "$0")/lib.sh"
itest_init relay_connect

BH_OBJ=$ITEST_BUILD/bpf/test_blackhole.bpf.o
[ -f "$BH_OBJ" ] || BH_OBJ=$ITEST_ROOT/build/bpf/test_blackhole.bpf.o
itest_sandbox_up
# A probe that times out reconnects, and the black hole would take db1
# down: a generous probe timeout on this loaded machine.
ITEST_TIMEOUT_MS=3000 ITEST_STEER_EXTRA="lookup = on
local_handoff = off
connect_timeout_ms = 1000" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 test "$(ctl_writer)" = db1 >/dev/null
check_eq "6446 through the relay reaches the writer" "$P1" "$(sql 6446 'SELECT @@port')"

# A held relayed connection: both of its relay sockets have keepalive.
rm -f "$T/go"
"$ITEST_BUILD/tests/peer_check" hold 127.0.0.1 6446 "$T/go" >"$T/hold.out" 2>&1 &
ITEST_PIDS+=($!)
wait_until 10 grep -q '^before' "$T/hold.out" >/dev/null
ka=$(ss -tnoH state established "( sport = :6446 or dport = :$P1 )" | grep -c 'timer:(keepalive')
check "the relay's sockets of a held pair have keepalive timers ($ka)" [ "$ka" -ge 2 ]
touch "$T/go"

# --- black hole: SYNs to 3306 dropped on lo.
tc qdisc add dev lo clsact || { echo "not ok - tc clsact"; exit 1; }
tc filter add dev lo egress bpf da obj "$BH_OBJ" sec tc || { echo "not ok - tc filter"; exit 1; }
check "the black hole holds: a direct connect to $P1 times out" \
	bash -c "! timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$P1'"
out=$(python3 - <<'PY'
import socket, time
s = socket.create_connection(("127.0.0.1", 6446), timeout=5)
t0 = time.monotonic()
s.settimeout(60)
try:
    d = s.recv(100)
    r = "eof" if not d else "data"
except ConnectionResetError:
    r = "reset"
except socket.timeout:
    r = "timeout"
print(r, int((time.monotonic() - t0) * 1000))
PY
)
ms=${out#* }
measured "a client of a black-holed writer through the relay ended after ${ms} ms (${out% *})"
check "the client reads a reset, not a silent socket ($out)" [ "${out% *}" = reset ]
check "it came within 10 s, not the ~127 s of SYN retries (${ms} ms)" [ "${ms:-99999}" -lt 10000 ]
fails=$(status_json | json_get "[b['connect_failures'] for b in d['backends'] if b['name']=='db1'][0]")
check "db1's connect_failures counts it ($fails)" [ "${fails:-0}" -ge 1 ]
rfail=$(status_json | json_get "d['lookup']['relay_connect_failed']")
check "the relay counts it ($rfail)" [ "${rfail:-0}" -ge 1 ]
check "the daemon logged the failure and probed the backend" \
	grep -q 'relay: a connect to backend db1 failed (Connection timed out); probing it now' "$T/mysteerd.log"

# --- connect_timeout_ms applies at a reload, to the next connect.
blackholed_client() { python3 - <<'PY'
import socket, time
s = socket.create_connection(("127.0.0.1", 6446), timeout=5)
t0 = time.monotonic()
s.settimeout(60)
try:
    r = "eof" if not s.recv(100) else "data"
except ConnectionResetError:
    r = "reset"
except socket.timeout:
    r = "timeout"
print(r, int((time.monotonic() - t0) * 1000))
PY
}
sed -i 's/^connect_timeout_ms = 1000$/connect_timeout_ms = 4000/' "$T/mysteer.conf"
check "reload with connect_timeout_ms = 4000" ctl reload
out=$(blackholed_client)
ms=${out#* }
measured "after the reload, a client of the black-holed writer ended after ${ms} ms (${out% *})"
check "it still reads a reset ($out)" [ "${out% *}" = reset ]
check "and not before the new bound: 4000 ms, not 1000 (${ms} ms)" [ "${ms:-0}" -ge 3500 ]

tc qdisc del dev lo clsact
works() { [ "$(sql 6446 'SELECT @@port' 2>/dev/null)" = "$P1" ]; }
# Three in a row: a probe begun inside the hole may still time out once
# (ITEST_TIMEOUT_MS) and take db1 down for a moment after it is gone.
works3() { works && sleep 1 && works && sleep 1 && works; }
ms=$(wait_until 30 works3)
check "without the black hole 6446 works again (${ms} ms)" works
itest_daemon_stop TERM
itest_done
