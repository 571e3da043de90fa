#!/usr/bin/env bash
# proxy_backend_tls.sh - TLS from the 6450 proxy to its backends
# ([backend:NAME] tls = off | on | verify, tls_ca), with sandbox servers
# that offer TLS (SANDBOX_TLS=1) and an account that REQUIRE SSL:
# - tls = off: that account's queries through 6450 get the server's clean
#   ERR 1045 (no hang) and a log line, another account works;
# - tls = on: its queries work, on every statement SHOW STATUS LIKE
#   'Ssl_cipher' through 6450 names a cipher (pooled connections stay TLS),
#   a write lands on the writer; the probe user REQUIRE SSL too, and every
#   backend stays up (the probe uses TLS);
# - tls = verify with the sandbox CA: works; with another CA, or with the
#   right CA but an address the certificate does not name: a clean ERR that
#   says why, a log line, and the daemon goes on.
. "$(dirname "$0")/lib.sh"
itest_init proxy_backend_tls
export SANDBOX_TLS=1
# 127.0.0.2: an address the servers listen on that their certificate lacks
export SANDBOX_BIND=127.0.0.2
itest_sandbox_up

PP=6450
CA=$SANDBOX_DIR/tls/ca.pem
check_eq "the sandbox servers offer TLS" YES "$(sql_root $P1 "SELECT @@have_ssl")"

sql_root $P1 "CREATE USER 'tls_app'@'%' IDENTIFIED BY 'tls_app' REQUIRE SSL;
	GRANT ALL PRIVILEGES ON *.* TO 'tls_app'@'%';
	REVOKE READ_ONLY ADMIN ON *.* FROM 'tls_app'@'%';
	CREATE DATABASE IF NOT EXISTS t;
	CREATE TABLE IF NOT EXISTS t.btls (id INT PRIMARY KEY, v VARCHAR(20))"
for p in $P2 $P3; do
	wait_until 20 bash -c "[ \"\$(mariadb --no-defaults -uroot -S '$SANDBOX_DIR/$p/mysqld.sock' -N -B \
		-e \"SELECT COUNT(*) FROM mysql.user WHERE user = 'tls_app'\")\" = 1 ]" >/dev/null ||
		echo "# tls_app not replicated to $p"
done
out=$(mariadb --no-defaults -h127.0.0.1 -P$P1 -utls_app -ptls_app --skip-ssl -N -B \
	-e "SELECT 1" 2>&1)
check "the server itself refuses tls_app in plain text" grep -q "ERROR 1045" <<<"$out"

# q USER QUERY: through 6450, plain text between the client and the proxy
q() {
	timeout 30 mariadb --no-defaults -h127.0.0.1 -P$PP -u"$1" -p"$1" --connect-timeout=10 \
		--skip-ssl -N -B -e "$2"
}

# start BACKEND_LINES: the daemon with those lines in every [backend:]
start() {
	[ -n "$ITEST_DAEMON_PID" ] && itest_daemon_stop TERM
	# TLS adds to the probe's time (an ASan build on a loaded machine)
	ITEST_TIMEOUT_MS=3000 ITEST_BACKEND_EXTRA=$1 itest_write_config "$T/mysteer.conf" - <<-EOF
		[user:tls_app]
		password = tls_app
	EOF
	itest_daemon_start "$T/mysteer.conf" || exit 1
	wait_until 40 bash -c "[ \"\$('$MYSTEERCTL' --socket '$T/admin.sock' --json status |
		python3 -c 'import json,sys; print(json.load(sys.stdin)[\"writer\"])')\" = db1 ]" \
		>/dev/null || { echo "not ok - no writer"; tail -n 20 "$T/mysteerd.log"; exit 1; }
}

# --- tls = off (the default) -------------------------------------------------
start ""
start_ms=$(date +%s%3N)
out=$(q tls_app "SELECT @@port" 2>&1)
rc=$?
measured "tls = off: the refused query answered in $(($(date +%s%3N) - start_ms)) ms"
echo "# tls = off, tls_app: $out"
check "tls = off: tls_app gets an ERR, not a hang (rc $rc)" [ $rc -eq 1 ]
check "tls = off: the server's ERROR 1045 reaches the client" grep -q "ERROR 1045" <<<"$out"
check "tls = off: a log line says the login was refused" \
	grep -q "login refused: 1045" "$T/mysteerd.log"
check_eq "tls = off: app (no REQUIRE SSL) works" 1 "$(q app "SELECT 1")"

# --- tls = on ----------------------------------------------------------------
sql_root $P1 "ALTER USER 'mysteer'@'%' REQUIRE SSL"
start "tls = on"
for b in db1 db2 db3; do
	wait_until 40 bash -c "[ \"\$('$MYSTEERCTL' --socket '$T/admin.sock' --json status |
		python3 -c 'import json,sys; print([b[\"state\"] for b in json.load(sys.stdin)[\"backends\"] if b[\"name\"]==\"$b\"][0])')\" = up ]" \
		>/dev/null
	check_eq "tls = on: the probe (its user REQUIRE SSL) keeps $b up" up "$(ctl_state $b)"
done
check_eq "tls = on: tls_app SELECT 1 through 6450" 1 "$(q tls_app "SELECT 1")"
port=$(q tls_app "SELECT @@port")
check "tls = on: a read goes to a replica ($port)" [ "$port" = $P2 -o "$port" = $P3 ]
cipher=$(q tls_app "SHOW STATUS LIKE 'Ssl_cipher'" | awk '{print $2}')
echo "# tls = on: Ssl_cipher through 6450: '$cipher'"
check "tls = on: Ssl_cipher through 6450 is not empty" [ -n "$cipher" ]
empty=0
for i in $(seq 1 20); do
	c=$(q tls_app "SHOW STATUS LIKE 'Ssl_cipher'; SELECT @@port" | awk 'NR==1 {print $2}')
	[ -n "$c" ] || empty=$((empty + 1))
done
check_eq "tls = on: 20 sessions, every statement on a TLS connection" 0 "$empty"
empty=0
for i in $(seq 1 10); do
	c=$(q app "SHOW STATUS LIKE 'Ssl_cipher'" | awk '{print $2}')
	[ -n "$c" ] || empty=$((empty + 1))
done
check_eq "tls = on: app's pooled connections are TLS too" 0 "$empty"
writes_mark
q tls_app "INSERT INTO t.btls VALUES (1, 'over tls')"
check_eq "tls = on: the write landed on the writer" "over tls" \
	"$(sql_root $P1 "SELECT v FROM t.btls WHERE id = 1")"
check_eq "tls = on: no write ran on replica $P2" 0 "$(local_writes $P2)"
check_eq "tls = on: no write ran on replica $P3" 0 "$(local_writes $P3)"

# --- tls = verify ----------------------------------------------------------------
start "tls = verify
tls_ca = $CA"
check_eq "tls = verify (sandbox CA): tls_app SELECT 1" 1 "$(q tls_app "SELECT 1")"
cipher=$(q tls_app "SHOW STATUS LIKE 'Ssl_cipher'" | awk '{print $2}')
check "tls = verify: Ssl_cipher through 6450 is not empty ($cipher)" [ -n "$cipher" ]
check_eq "tls = verify: a write works" 1 \
	"$(q tls_app "INSERT INTO t.btls VALUES (2, 'verified'); SELECT ROW_COUNT()")"

# another CA, made here
(cd "$T" && openssl ecparam -name prime256v1 -genkey -noout -out other-key.pem &&
	openssl req -x509 -new -key other-key.pem -days 1 -subj "/CN=another CA" \
		-out other-ca.pem) >/dev/null 2>&1
start "tls = verify
tls_ca = $T/other-ca.pem"
out=$(q tls_app "SELECT @@port" 2>&1)
rc=$?
echo "# tls = verify, another CA: $out"
check "another CA: an ERR, not a hang (rc $rc)" [ $rc -eq 1 ]
check "another CA: the ERR says the certificate was not accepted" \
	grep -q "certificate" <<<"$out"
check "another CA: a log line says why" \
	grep -q "failed: TLS handshake: the server's certificate" "$T/mysteerd.log"
check "another CA: mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"

# the right CA, an address the certificate does not name
sed -i "s/^host = 127.0.0.1$/host = 127.0.0.2/" "$T/mysteer.conf"
sed -i "s|^tls_ca = .*|tls_ca = $CA|" "$T/mysteer.conf"
itest_daemon_stop TERM
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 40 bash -c "[ \"\$('$MYSTEERCTL' --socket '$T/admin.sock' --json status |
	python3 -c 'import json,sys; print(json.load(sys.stdin)[\"writer\"])')\" = db1 ]" >/dev/null
out=$(q tls_app "SELECT @@port" 2>&1)
rc=$?
echo "# tls = verify, host 127.0.0.2: $out"
check "an address not in the certificate: an ERR (rc $rc)" [ $rc -eq 1 ]
check "that ERR names the mismatch" grep -qi "mismatch" <<<"$out"
check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"
itest_done
