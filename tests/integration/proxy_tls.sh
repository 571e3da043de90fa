#!/usr/bin/env bash
# proxy_tls.sh - TLS from clients to the 6450 proxy ([proxy] tls_cert,
# tls_key, tls_ca, require_secure_transport), with the sandbox's test CA:
# - `mariadb --ssl --ssl-verify-server-cert` logs in over TLS (the client
#   reports a cipher), reads go to a replica, a write lands on the writer
#   (and on no replica), SHOW STATUS LIKE 'Ssl_cipher' is answered;
# - PyMySQL with ssl (CA and host name verified);
# - a client that sends garbage after its SSLRequest is closed, others go on;
# - a TLS client trickling its handshake stalls nobody on its worker (one
#   worker): another client's queries finish while it is still trickling,
#   and it logs in afterwards;
# - require_secure_transport = on (by mysteerctl reload): a plain login gets
#   ERR 3159, a TLS one still works; a reload with a bad certificate is
#   refused with a one-line error and TLS keeps working.
. "$(dirname "$0")/lib.sh"
itest_init proxy_tls
itest_sandbox_up

PP=6450
TLS=$SANDBOX_DIR/tls
CA=$TLS/ca.pem
HERE=$(dirname "$0")
check "the sandbox made a test CA and certificates" \
	test -s "$CA" -a -s "$TLS/server-cert.pem" -a -s "$TLS/server-key.pem"
cp "$TLS/server-cert.pem" "$TLS/server-key.pem" "$T/"
ITEST_APP_ADMIN=1
ITEST_PROXY_EXTRA="workers = 1
handshake_timeout_ms = 60000
tls_cert = $T/server-cert.pem
tls_key = $T/server-key.pem
tls_ca = $CA" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 20 bash -c "[ \"\$('$MYSTEERCTL' --socket '$T/admin.sock' --json status |
	python3 -c 'import json,sys; print(json.load(sys.stdin)[\"writer\"])')\" = db1 ]" >/dev/null ||
	{ echo "not ok - no writer"; tail -n 20 "$T/mysteerd.log"; exit 1; }

# lacks PATTERN FILE: FILE has no line matching PATTERN
lacks() { ! grep -q "$1" "$2"; }
# tq QUERY [user]: through 6450 over TLS, the server's certificate verified
tq() {
	local u=${2:-app}
	mariadb --no-defaults -h127.0.0.1 -P$PP -u"$u" -p"$u" --connect-timeout=10 \
		--ssl --ssl-ca="$CA" --ssl-verify-server-cert -N -B -e "$1"
}
# pq QUERY: through 6450 in plain text
pq() {
	mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=10 --skip-ssl \
		-N -B -e "$1"
}

# --- mariadb CLI over TLS ---------------------------------------------------
wait_until 20 tq "SELECT 1" >/dev/null
check_eq "mariadb --ssl --ssl-verify-server-cert: SELECT 1 through 6450" 1 "$(tq 'SELECT 1')"
cipher=$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=10 --ssl \
	--ssl-ca="$CA" --ssl-verify-server-cert -e status 2>&1 | awk -F'\t+' '/^SSL:/ {print $2}')
echo "# client side: SSL: $cipher"
check "the client reports a TLS cipher in use" grep -q "Cipher in use is" <<<"$cipher"
port=$(tq "SELECT @@port")
check "a read over TLS goes to a replica ($port)" [ "$port" = $P2 -o "$port" = $P3 ]
ssl_row=$(tq "SHOW STATUS LIKE 'Ssl_cipher'")
echo "# SHOW STATUS LIKE 'Ssl_cipher' through 6450: '$ssl_row'"
check "SHOW STATUS LIKE 'Ssl_cipher' is answered" grep -q "^Ssl_cipher" <<<"$ssl_row"
tq "CREATE DATABASE IF NOT EXISTS t; CREATE TABLE IF NOT EXISTS t.tls (id INT PRIMARY KEY, v VARCHAR(20))" app_admin
writes_mark
tq "INSERT INTO t.tls VALUES (1, 'over tls')" app_admin
check_eq "the write over TLS landed on the writer" "over tls" \
	"$(sql_root $P1 "SELECT v FROM t.tls WHERE id = 1")"
check_eq "no write ran on replica $P2" 0 "$(local_writes $P2)"
check_eq "no write ran on replica $P3" 0 "$(local_writes $P3)"
check_eq "a plain-text login still works (require_secure_transport = off)" 1 "$(pq 'SELECT 1')"

# --- PyMySQL ------------------------------------------------------------------
/usr/bin/python3 "$HERE/proxy_tls.py" pymysql $PP "$CA" >"$T/py.out" 2>&1
rc=$?
cat "$T/py.out"
check "PyMySQL with ssl through 6450" [ $rc -eq 0 ]

# --- garbage instead of a ClientHello -------------------------------------------
/usr/bin/python3 "$HERE/proxy_tls.py" garbage $PP >"$T/garbage.out" 2>&1
cat "$T/garbage.out"
check "the garbage client was closed" lacks "^not ok" "$T/garbage.out"
check_eq "another TLS client is served after it" 1 "$(tq 'SELECT 1')"

# --- a slow TLS handshake stalls nobody ---------------------------------------
/usr/bin/python3 "$HERE/proxy_tls.py" slow $PP "$CA" 8 >"$T/slow.out" 2>&1 &
SLOW=$!
ITEST_PIDS+=("$SLOW")
# while it trickles (8 s): another client's queries over TLS, on the same
# (only) worker
sleep 1
start=$(date +%s%3N)
ok=0
for i in 1 2 3; do [ "$(tq 'SELECT 1')" = 1 ] && ok=$((ok + 1)); done
elapsed=$(($(date +%s%3N) - start))
measured "3 TLS logins and queries while a handshake trickles: $elapsed ms"
check_eq "3 queries of another client answered" 3 "$ok"
check "they finished while the slow handshake was still trickling" \
	lacks "first flight trickled" "$T/slow.out"
wait "$SLOW"
rc=$?
ITEST_PIDS=()
cat "$T/slow.out"
check "the slow TLS client logged in afterwards" [ $rc -eq 0 ]

# --- require_secure_transport ---------------------------------------------------
sed -i 's/^\[proxy\]$/[proxy]\nrequire_secure_transport = on/' "$T/mysteer.conf"
check "reload with require_secure_transport = on" ctl reload
out=$(pq "SELECT 1" 2>&1)
echo "# plain login: $out"
check "a plain-text login gets ERROR 3159" grep -q "ERROR 3159" <<<"$out"
check "with the server's message" grep -q "insecure transport are prohibited" <<<"$out"
check_eq "a TLS login still works" 1 "$(tq 'SELECT 1')"

# --- a bad certificate on reload ------------------------------------------------
echo "not a certificate" >"$T/server-cert.pem"
out=$(ctl reload 2>&1)
rc=$?
echo "# reload: $out"
check "reload with a bad tls_cert is refused" [ $rc -ne 0 ]
check "with a one-line error naming tls_cert" \
	bash -c "[ $(wc -l <<<"$out") -eq 1 ] && grep -q tls_cert <<<'$out'"
check_eq "TLS still works with the certificate loaded before" 1 "$(tq 'SELECT 1')"

check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"
itest_done
