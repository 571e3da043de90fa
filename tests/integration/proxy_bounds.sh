#!/usr/bin/env bash
# proxy_bounds.sh - one client of 6450 cannot grow mysteerd's memory or hold
# its resources without bound:
#   - answers the proxy makes itself (COM_PING, ERR) are bounded like backend
#     results: a client pipelining without reading is not read on;
#   - the session history is bounded (max_session_history): past it the
#     session keeps its connection on the writer instead of growing;
#   - max_packet_size (16 MiB by default), client_packet_timeout_ms,
#     client_idle_timeout_s and max_client_buffer_bytes each end with the ERR
#     a client is told about;
#   - silent connections that never log in cannot lock real clients out;
#   - silent admin connections cannot lock mysteerctl out.
# Memory figures are the daemon's VmRSS; the assertion is a generous bound
# (+32 MB) that the unbounded code broke by far (+100 MB and more).
. "$(dirname "$0")/lib.sh"
itest_init proxy_bounds
itest_sandbox_up

PP=6450
PB=$(dirname "$0")/proxy_bounds.py
CONF=$T/mysteer.conf
ITEST_PROXY_EXTRA="workers = 2
max_client_connections = 1000
client_packet_timeout_ms = 2000
max_client_buffer_bytes = 41943040" itest_write_config "$CONF"
itest_daemon_start "$CONF" || { itest_done; exit 1; }
PID=$ITEST_DAEMON_PID

p() { mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=5 -N -B -e "$1"; }
serves() { [ "$(p 'SELECT 1' 2>/dev/null)" = 1 ]; }
ms=$(wait_until 20 serves)
check "6450 serves (${ms} ms)" serves
# a setting of the [proxy] section, then reload
proxy_set() { # key value
	sed -i "/^$1 = /d" "$CONF" && sed -i "s/^\[proxy\]\$/[proxy]\n$1 = $2/" "$CONF" && ctl reload >/dev/null
}
# runs proxy_bounds.py KIND ARGS...: its '# ' and 'measured:' lines shown,
# its exit code returned
pb() {
	local out rc
	out=$(python3 "$PB" "$@" 2>&1)
	rc=$?
	echo "$out" | grep -E '^(# |measured: )'
	echo "$out" | grep -vE '^(# |measured: )' | sed 's/^/# /'
	return $rc
}

# --- output the proxy makes itself ------------------------------------------------
pb flood $PP $PID 8
check "a client pipelining COM_PING and COM_STMT_EXECUTE without reading: RSS within +32 MB, every answer in order" [ $? -eq 0 ]

# --- the session history ------------------------------------------------------------
sed -i 's/^log_level = .*/log_level = debug/' "$CONF"
ctl reload >/dev/null
out=$(python3 "$PB" history $PP $PID 200 500 2>&1)
rc=$?
echo "$out" | grep -E '^(# |measured: )'
check "200 SET @vN of 500 KB in one session: RSS within +32 MB, every value kept" [ $rc -eq 0 ]
check_eq "past the history bound the session runs on the writer" "server_id $P1" \
	"$(echo "$out" | grep '^server_id')"
check "the log says the history bound kept the session on the writer" \
	grep -q "max_session_history.*stays on the writer" "$T/mysteerd.log"
sed -i 's/^log_level = .*/log_level = info/' "$CONF"
ctl reload >/dev/null
out=$(p "SELECT @@server_id")
check "a new session still reads on a replica (server $out)" [ -n "$out" -a "$out" != "$P1" ]

# --- packets and timeouts -------------------------------------------------------------
pb toobig $PP
check "a packet past 16 MiB (the default max_packet_size) gets ERR 1153" [ $? -eq 0 ]
pb trickle $PP 10
check "a packet trickling in past client_packet_timeout_ms gets ERR 1159 and a close" [ $? -eq 0 ]
proxy_set client_idle_timeout_s 2
pb idle $PP 10
check "a session idle past client_idle_timeout_s gets ERR 1159 and a close" [ $? -eq 0 ]
proxy_set client_idle_timeout_s 28800
pb buffers $PP 15
check "past max_client_buffer_bytes a new large packet gets ERR 1041; small ones go on" [ $? -eq 0 ]
check "after the bounds: 6450 serves" serves

# --- connections that never log in --------------------------------------------------------
pb silent $PP 3000
check "3000 silent connections (max_client_connections 1000): a real login succeeds" [ $? -eq 0 ]
sleep 1
check "after them: 6450 serves" serves

# --- the admin socket -------------------------------------------------------------------------
# MYSTEER_TEST_ADMIN_IDLE_MS is not set: the default idle bound (5 s) applies
pb admin "$T/admin.sock" 300 5 "$MYSTEERCTL" --socket "$T/admin.sock"
check "300 silent admin connections: status answers, at most 64 held, none after the idle bound" [ $? -eq 0 ]

check "mysteerd still runs" kill -0 "$PID"
itest_done
