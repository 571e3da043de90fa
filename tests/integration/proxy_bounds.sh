#!/usr/bin/env bash
# proxy_bounds.sh - one client of 6450 cannot grow mysteerd's memory or hold
# its resources without bound, and the login path gives nothing away:
#   - answers the proxy makes itself (COM_PING, ERR) are bounded like backend
#     results: a client pipelining without reading is not read on;
#   - the session history is bounded (max_session_history): past it the
#     session keeps its connection on the writer instead of growing;
#   - max_packet_size (16 MiB by default), client_packet_timeout_ms,
#     client_idle_timeout_s and max_client_buffer_bytes each end with the ERR
#     a client is told about;
#   - silent connections that never log in cannot lock real clients out;
#   - silent admin connections cannot lock mysteerctl out;
#   - `mysteerctl reload` applies [user:...] changes to new logins;
#   - client-supplied names are escaped in the log; the refusal of an unknown
#     user and of a wrong password are timed (measured, never judged).
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
sql_root $P1 "CREATE USER IF NOT EXISTS bob@'%' IDENTIFIED BY 'bob'; GRANT SELECT ON *.* TO bob@'%'"
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
	grep -q "stays on the writer from now on: session settings past max_session_history" "$T/mysteerd.log"
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

# --- [user:...] on reload -----------------------------------------------------------------------
check_eq "bob is not a user of the proxy yet" "ERR 1045" "$(python3 "$PB" login $PP bob bob)"
printf '\n[user:bob]\npassword = bob\n' >>"$CONF"
ctl reload >/dev/null
check_eq "reload adds bob: his login passes" ok "$(python3 "$PB" login $PP bob bob)"
check "the log says bob was added" grep -q "proxy: users reloaded: added bob" "$T/mysteerd.log"
# a session of bob kept open: queries in through one FIFO, answers out of another
mkfifo "$T/bob.in" "$T/bob.out"
python3 "$PB" session $PP bob bob <"$T/bob.in" >"$T/bob.out" 2>&1 &
ITEST_PIDS+=($!)
exec {bob_w}>"$T/bob.in" {bob_r}<"$T/bob.out"
line=
read -r -t 10 line <&$bob_r
check_eq "a session of bob is open" ready "$line"
python3 - "$CONF" <<'EOF'
import re, sys
p = sys.argv[1]
s = open(p).read()
s = s.replace('\n[user:bob]\npassword = bob\n', '\n')
s = re.sub(r'\[user:app\]\npassword = app\n', '[user:app]\npassword = app2\n', s)
open(p, 'w').write(s)
EOF
ctl reload >/dev/null
check_eq "reload removes bob: a new login of bob is refused" "ERR 1045" "$(python3 "$PB" login $PP bob bob)"
(echo "SELECT 1" >&$bob_w) 2>/dev/null # a subshell: a session gone is no SIGPIPE here
line=
read -r -t 10 line <&$bob_r
check_eq "bob's open session still runs" "rows 1" "$line"
check_eq "app's old password is refused after the reload" "ERR 1045" "$(python3 "$PB" login $PP app app)"
check_eq "app's new password logs in" ok "$(python3 "$PB" login $PP app app2)"
check "the log says bob was removed and app's password changed" \
	grep -q "proxy: users reloaded: removed bob; password changed for app" "$T/mysteerd.log"
sed -i 's/^password = app2$/password = app/' "$CONF"
ctl reload >/dev/null
exec {bob_w}>&- {bob_r}<&-
check "app logs in again with its password" serves

# --- what the log shows of client-supplied names ------------------------------------------------
python3 "$PB" login $PP $'evil\nFORGED: mysteerd: fake line' x >/dev/null
python3 "$PB" login $PP $'esc\e[31mred' x >/dev/null
check "a user name with a newline forges no log line" bash -c "! grep -q '^FORGED' '$T/mysteerd.log'"
check "the newline is escaped" grep -qF 'evil\x0aFORGED' "$T/mysteerd.log"
check "no escape character reaches the log" bash -c "! grep -q $'\e' '$T/mysteerd.log'"
pb authtime $PP 200
check "unknown user and wrong password are both refused with 1045" [ $? -eq 0 ]

check "mysteerd still runs" kill -0 "$PID"
itest_done
