#!/usr/bin/env bash
# proxy_auth.sh - caching_sha2_password for clients of the 6450 proxy
# ([proxy] default_auth_plugin, rsa_private_key, rsa_public_key), with real
# clients against the sandbox:
# - default_auth_plugin = caching_sha2_password: `mariadb
#   --default-auth=caching_sha2_password` over TLS (full authentication, the
#   password in clear inside TLS, then fast authentication from the cache)
#   and without TLS (the RSA exchange, the key asked from the proxy);
#   `mariadb` with its default plugin is switched to caching_sha2_password;
#   reads go to a replica and a write lands on the writer;
# - a wrong password: ERR 1045, through every path;
# - a client answering with mysql_native_password is switched (AuthSwitch);
# - PyMySQL: RSA with the key asked for and with server_public_key, TLS,
#   wrong passwords;
# - a user with only a password_hash is switched to mysql_native_password;
# - malformed packets in each step: a clean ERR, the daemon goes on;
# - a reload empties the cache (full authentication again); without RSA
#   keys, a plain-text sha2 login is refused with ERR 1045 and a log line;
# - default_auth_plugin = mysql_native_password: a client asking for
#   caching_sha2_password is switched to mysql_native_password;
# - a backend account with another plugin (ed25519) switches the proxy's
#   login: ERR 1251 naming the plugin, at once, for a read and a write.
. "$(dirname "$0")/lib.sh"
itest_init proxy_auth
# The ASan/UBSan daemon when `make asan-bins` built it (`make test` does):
# the malformed packets below then run under the sanitizers.
if [ "$ITEST_BUILD" = "${ITEST_BUILD%/asan}" ] &&
	nm "$ITEST_BUILD/asan/mysteerd" 2>/dev/null | grep -q __asan_report; then
	MYSTEERD=$ITEST_BUILD/asan/mysteerd MYSTEERCTL=$ITEST_BUILD/asan/mysteerctl
fi
echo "# daemon: $MYSTEERD"
itest_sandbox_up

PP=6450
TLS=$SANDBOX_DIR/tls
CA=$TLS/ca.pem
HERE=$(dirname "$0")
LOG=$T/mysteerd.log
cp "$TLS/server-cert.pem" "$TLS/server-key.pem" "$T/"
# the RSA pair is made here, as a deployment makes it (not committed)
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/rsa-priv.pem" 2>/dev/null &&
	openssl pkey -in "$T/rsa-priv.pem" -pubout -out "$T/rsa-pub.pem" 2>/dev/null
check "openssl made an RSA key pair" test -s "$T/rsa-pub.pem"
# app_admin has only a password_hash (its password is app_admin)
hash=$(python3 -c "import hashlib; print('*' + hashlib.sha1(hashlib.sha1(b'app_admin').digest()).hexdigest().upper())")
ITEST_LOG_LEVEL=debug ITEST_PROXY_EXTRA="workers = 2
handshake_timeout_ms = 60000
default_auth_plugin = caching_sha2_password
rsa_private_key = $T/rsa-priv.pem
rsa_public_key = $T/rsa-pub.pem
tls_cert = $T/server-cert.pem
tls_key = $T/server-key.pem" itest_write_config "$T/mysteer.conf" - <<EOF

[user:app_admin]
password_hash = $hash
EOF
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 20 bash -c "[ \"\$('$MYSTEERCTL' --socket '$T/admin.sock' --json status |
	python3 -c 'import json,sys; print(json.load(sys.stdin)[\"writer\"])')\" = db1 ]" >/dev/null ||
	{ echo "not ok - no writer"; tail -n 20 "$LOG"; exit 1; }

# m [user [password [mariadb options...]]] -e QUERY: through 6450
m() {
	local u=${1:-app} p=${2:-app}
	shift 2
	mariadb --no-defaults -h127.0.0.1 -P$PP -u"$u" -p"$p" --connect-timeout=10 -N -B "$@"
}
SHA2=--default-auth=caching_sha2_password
TLSOPT=(--ssl --ssl-ca="$CA" --ssl-verify-server-cert)
# logins LINE: how many login lines of the log say LINE, since the mark
mark_log() { MARK=$(wc -l <"$LOG"); }
logins() { tail -n +$((MARK + 1)) "$LOG" | grep -c "logged in: $1"; }

wait_until 20 m app app --skip-ssl -e "SELECT 1" >/dev/null

# --- mariadb, caching_sha2_password ----------------------------------------------
# a reload empties the cache: the first login below is a full authentication
check "reload (the cache starts empty)" ctl reload
mark_log
check_eq "mariadb $SHA2 over TLS: CURRENT_USER()" "app@%" \
	"$(m app app "$SHA2" "${TLSOPT[@]}" -e 'SELECT CURRENT_USER()')"
check_eq "it was a full authentication inside TLS" 1 \
	"$(logins "caching_sha2_password, full authentication (TLS)")"
mark_log
check_eq "again: CURRENT_USER()" "app@%" \
	"$(m app app "$SHA2" "${TLSOPT[@]}" -e 'SELECT CURRENT_USER()')"
check_eq "now a fast authentication (the cache)" 1 \
	"$(logins "caching_sha2_password, fast authentication (TLS)")"
mark_log
check_eq "mariadb $SHA2 without TLS (fast, cached)" "app@%" \
	"$(m app app "$SHA2" --skip-ssl -e 'SELECT CURRENT_USER()')"
check_eq "fast authentication without TLS" 1 \
	"$(logins "caching_sha2_password, fast authentication$")"

check "reload (the cache empties)" ctl reload
mark_log
check_eq "mariadb $SHA2 without TLS after the reload: the RSA exchange" "app@%" \
	"$(m app app "$SHA2" --skip-ssl -e 'SELECT CURRENT_USER()')"
check_eq "a full authentication with RSA" 1 \
	"$(logins "caching_sha2_password, full authentication with RSA$")"

mark_log
check_eq "mariadb with its default plugin logs in" "app@%" \
	"$(m app app --skip-ssl -e 'SELECT CURRENT_USER()')"
# libmariadb answers with the plugin the handshake announces (a client
# answering with mysql_native_password is switched: proxy_auth.py hostile)
check_eq "with caching_sha2_password, the one announced" 1 \
	"$(logins "caching_sha2_password, fast authentication$")"
port=$(m app app "$SHA2" --skip-ssl -e "SELECT @@port")
check "a read of a sha2 session goes to a replica ($port)" [ "$port" = $P2 -o "$port" = $P3 ]
sql_root $P1 "CREATE DATABASE IF NOT EXISTS t; CREATE TABLE IF NOT EXISTS t.auth (id INT PRIMARY KEY, v VARCHAR(20))"
writes_mark
m app app "$SHA2" --skip-ssl -e "INSERT INTO t.auth VALUES (1, 'sha2')"
check_eq "a write of a sha2 session landed on the writer" sha2 \
	"$(sql_root $P1 "SELECT v FROM t.auth WHERE id = 1")"
check_eq "no write ran on replica $P2" 0 "$(local_writes $P2)"
check_eq "no write ran on replica $P3" 0 "$(local_writes $P3)"

# --- wrong passwords ------------------------------------------------------------
for how in "over TLS:${TLSOPT[*]}" "without TLS:--skip-ssl"; do
	out=$(m app wrong "$SHA2" ${how#*:} -e "SELECT 1" 2>&1)
	echo "# wrong password ${how%%:*}: $out"
	check "a wrong password ${how%%:*} (cached user): ERROR 1045" grep -q "ERROR 1045" <<<"$out"
	out=$(m nosuch wrong "$SHA2" ${how#*:} -e "SELECT 1" 2>&1)
	check "an unknown user ${how%%:*}: ERROR 1045" grep -q "ERROR 1045" <<<"$out"
done

# --- PyMySQL ----------------------------------------------------------------------
check "reload (the cache empties)" ctl reload
/usr/bin/python3 "$HERE/proxy_auth.py" pymysql $PP "$CA" "$T/rsa-pub.pem" >"$T/py.out" 2>&1
rc=$?
cat "$T/py.out"
check "PyMySQL caching_sha2_password through 6450" [ $rc -eq 0 ]

# --- a user with only a password_hash -----------------------------------------------
mark_log
check_eq "app_admin (password_hash only) with $SHA2 logs in" "app_admin@%" \
	"$(m app_admin app_admin "$SHA2" --skip-ssl -e 'SELECT CURRENT_USER()')"
check "it was switched to mysql_native_password" \
	grep -q "'app_admin'@'127.0.0.1' answered with caching_sha2_password: switched to mysql_native_password" "$LOG"
check_eq "and logged in with mysql_native_password" 1 "$(logins "mysql_native_password$")"
out=$(m app_admin wrong "$SHA2" --skip-ssl -e "SELECT 1" 2>&1)
check "app_admin with a wrong password: ERROR 1045" grep -q "ERROR 1045" <<<"$out"

# --- malformed packets ------------------------------------------------------------------
check "reload (the cache empties)" ctl reload
/usr/bin/python3 "$HERE/proxy_auth.py" hostile $PP >"$T/hostile.out" 2>&1
rc=$?
cat "$T/hostile.out"
check "malformed caching_sha2_password packets: clean ERRs" [ $rc -eq 0 ]
check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"
check_eq "a login works after them" "app@%" \
	"$(m app app "$SHA2" --skip-ssl -e 'SELECT CURRENT_USER()')"

# --- no RSA keys ----------------------------------------------------------------------------
sed -i '/^rsa_p.*_key = /d' "$T/mysteer.conf"
check "reload without the RSA keys" ctl reload
out=$(m app app "$SHA2" --skip-ssl -e "SELECT 1" 2>&1)
echo "# without RSA keys, no TLS: $out"
# the proxy answers the key request with ERR 1045; libmariadb reports it as
# its own 2061
check "a plain-text sha2 login without RSA keys: ERROR 1045 or 2061" \
	grep -q "ERROR 1045\|ERROR 2061" <<<"$out"
check "the log says why" grep -q "caching_sha2_password without TLS needs \[proxy\] rsa_private_key" "$LOG"
check_eq "over TLS it still works" "app@%" \
	"$(m app app "$SHA2" "${TLSOPT[@]}" -e 'SELECT CURRENT_USER()')"

# --- default_auth_plugin = mysql_native_password ------------------------------------------
sed -i 's/^default_auth_plugin = .*/default_auth_plugin = mysql_native_password/' "$T/mysteer.conf"
check "reload with default_auth_plugin = mysql_native_password" ctl reload
mark_log
check_eq "mariadb $SHA2 against the native default logs in" "app@%" \
	"$(m app app "$SHA2" --skip-ssl -e 'SELECT CURRENT_USER()')"
check "it was switched to mysql_native_password" \
	grep -q "'app'@'127.0.0.1' answered with caching_sha2_password: switched to mysql_native_password" "$LOG"
check_eq "mariadb with its default plugin logs in" "app@%" \
	"$(m app app --skip-ssl -e 'SELECT CURRENT_USER()')"
check_eq "both with mysql_native_password" 2 "$(logins "mysql_native_password$")"
out=$(m app wrong --skip-ssl -e "SELECT 1" 2>&1)
check "a wrong password: ERROR 1045" grep -q "ERROR 1045" <<<"$out"

# --- a backend account with another plugin ---------------------------------------------
# The proxy logs in to the backends with mysql_native_password only; an
# account with another plugin (here MariaDB's ed25519; a MySQL 8 account with
# caching_sha2_password alike) makes the server switch the login: the
# statement gets ERR 1251 naming the backend and the plugin, at once (a write
# does not wait for another writer as for a lost one), and the daemon goes on.
for port in $P1 $P2 $P3; do
	sql_root "$port" "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'ed25519'" |
		grep -q 1 || sql_root "$port" "INSTALL SONAME 'auth_ed25519'"
	sql_root "$port" "SET sql_log_bin = 0; CREATE USER 'edu'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('edu');
		GRANT ALL ON *.* TO 'edu'@'%'"
done
printf '\n[user:edu]\npassword = edu\n' >>"$T/mysteer.conf"
check "reload with user edu" ctl reload
for q in "SELECT 1" "CREATE TABLE IF NOT EXISTS test.edu_t (a INT)"; do
	start=$(date +%s%N)
	out=$(timeout 30 mariadb --no-defaults -h127.0.0.1 -P$PP -uedu -pedu --skip-ssl -N -B -e "$q" 2>&1)
	measured "edu '$q': answered in $((($(date +%s%N) - start) / 1000000)) ms: $(grep -m1 ERROR <<<"$out")"
	check "edu '$q': ERROR 1251 naming the plugin" \
		grep -q "ERROR 1251 (08004).*asks for client_ed25519 for user 'edu'.*caching_sha2_password only" <<<"$out"
done
check_eq "edu's write did not run" 0 "$(sql_root "$P1" "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME = 'edu_t'")"
check "the log names it" grep -q "login refused: 1251 mysteer: backend db[123] asks for client_ed25519" "$LOG"
check_eq "app still logs in" "app@%" "$(m app app --skip-ssl -e 'SELECT CURRENT_USER()')"

check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"
itest_daemon_stop TERM
check_eq "mysteerd stopped cleanly on SIGTERM" 0 "$ITEST_DAEMON_RC"
check "no sanitizer report (leaks included)" itest_sanitizer_check
itest_done
