#!/usr/bin/env bash
# tls_passthrough.sh - the kernel paths carry a client's TLS to the server
# untouched: `mariadb --ssl --ssl-verify-server-cert` (the sandbox CA, the
# server's certificate names 127.0.0.1 and ::1, the addresses the client
# dials) through 6446
# - by connect steering (connect4/6 in the test's cgroup, vip = 127.0.0.1),
# - by the relay (sk_lookup, local_handoff = off), for 6446 and 6447,
# verifies the server, reports a cipher, and the server's Ssl_cipher for the
# session is set; an account that REQUIRE SSL logs in through each path.
. "$(dirname "$0")/lib.sh"
itest_init tls_passthrough
[ -n "$ITEST_CGROUP" ] || { echo "not ok - no cgroup2 mount"; exit 1; }
export SANDBOX_TLS=1
itest_sandbox_up
CA=$SANDBOX_DIR/tls/ca.pem

sql_root $P1 "CREATE USER 'tls_app'@'%' IDENTIFIED BY 'tls_app' REQUIRE SSL;
	GRANT SELECT ON *.* TO 'tls_app'@'%'"
for p in $P2 $P3; do
	wait_until 20 bash -c "[ \"\$(mariadb --no-defaults -uroot -S '$SANDBOX_DIR/$p/mysqld.sock' -N -B \
		-e \"SELECT COUNT(*) FROM mysql.user WHERE user = 'tls_app'\")\" = 1 ]" >/dev/null ||
		echo "# tls_app not replicated to $p"
done

incg() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$ITEST_CGROUP" "$@"; }
# tq HOST PORT USER QUERY: TLS, the server's certificate and name verified
# (run by $PRE: incg for the cgroup's clients)
PRE=
tq() {
	$PRE timeout 30 mariadb --no-defaults -h"$1" -P"$2" -u"$3" -p"$3" --connect-timeout=10 \
		--ssl --ssl-ca="$CA" --ssl-verify-server-cert -N -B -e "$4"
}
# paths NAME [incg]: the checks of one path
paths() {
	local name=$1 port cipher st
	PRE=${2:-}
	port=$(tq 127.0.0.1 6446 app "SELECT @@port")
	check_eq "$name: 6446 over verified TLS reaches the writer" "$P1" "$port"
	cipher=$(tq 127.0.0.1 6446 app "SHOW STATUS LIKE 'Ssl_cipher'" | awk '{print $2}')
	echo "# $name: the server's Ssl_cipher: '$cipher'"
	check "$name: Ssl_cipher is set on the server's side" [ -n "$cipher" ]
	st=$($PRE timeout 30 mariadb --no-defaults -h127.0.0.1 -P6446 -uapp -papp --connect-timeout=10 \
		--ssl --ssl-ca="$CA" --ssl-verify-server-cert -e status 2>&1 |
		awk -F'\t+' '/^SSL:/ {print $2}')
	echo "# $name: client side: SSL: $st"
	check "$name: the client reports a cipher in use" grep -q "Cipher in use is" <<<"$st"
	check_eq "$name: an account that REQUIRE SSL logs in through 6446" "$P1" \
		"$(tq 127.0.0.1 6446 tls_app "SELECT @@port")"
	port=$(tq ::1 6446 app "SELECT @@port")
	check_eq "$name: over IPv6 (::1) too" "$P1" "$port"
	port=$(tq 127.0.0.1 6447 tls_app "SELECT @@port")
	check "$name: 6447 over verified TLS reaches a replica ($port)" [ "$port" = $P2 -o "$port" = $P3 ]
	PRE=
}

# --- connect steering ---------------------------------------------------------
ITEST_STEER_EXTRA="vip = 127.0.0.1, ::1
lookup = off" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 20 test "$(ctl_writer)" = db1 >/dev/null
wait_until 20 test "$(ctl_readers)" = "db2 db3" >/dev/null
paths "connect steering" incg
check_eq "outside the cgroup 6446 is not steered (no listener)" "" \
	"$(tq 127.0.0.1 6446 app "SELECT @@port" 2>/dev/null)"
itest_daemon_stop TERM

# --- the relay (sk_lookup, no local handoff) -------------------------------------
ITEST_STEER_EXTRA="lookup = on
local_handoff = off" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 20 test "$(ctl_writer)" = db1 >/dev/null
wait_until 20 test "$(ctl_readers)" = "db2 db3" >/dev/null
before=$(status_json | json_get "d['lookup']['relay_accepted']")
paths "relay"
after=$(status_json | json_get "d['lookup']['relay_accepted']")
measured "relay_accepted $before -> $after"
check "the relay carried those connections ($before -> $after)" [ "$((after - before))" -ge 6 ]
check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"
itest_done
