#!/usr/bin/env bash
# node_clients.sh - Node.js with mysql2 (from the npm registry, pinned by
# tests/clients/node/package-lock.json, installed by scripts/install-deps.sh
# with npm ci) through the 6450 proxy: a pool, query and prepared execute,
# transactions, changeUser (COM_CHANGE_USER), TLS verified with the
# sandbox's CA, CONNECTION_ID() and
# KILL QUERY, LOAD DATA LOCAL INFILE with infileStreamFactory
# (tests/clients/node/clients.js); every write counted on the writer, none
# of its own on a replica. Then with [proxy] default_auth_plugin =
# caching_sha2_password (reload): mysql2 logs in with a full authentication
# by the RSA exchange, then from the cache, and over TLS.
. "$(dirname "$0")/lib.sh"
itest_init node_clients
NODE_DIR=$ITEST_ROOT/tests/clients/node
[ -d "$NODE_DIR/node_modules/mysql2" ] ||
	{ echo "not ok - mysql2 not installed in $NODE_DIR (scripts/install-deps.sh runs npm ci)"; exit 1; }
itest_sandbox_up

PP=6450
TLS=$SANDBOX_DIR/tls
CA=$TLS/ca.pem
cp "$TLS/server-cert.pem" "$TLS/server-key.pem" "$T/"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/rsa-priv.pem" 2>/dev/null &&
	openssl pkey -in "$T/rsa-priv.pem" -pubout -out "$T/rsa-pub.pem" 2>/dev/null
check "openssl made an RSA key pair" test -s "$T/rsa-pub.pem"
ITEST_APP_ADMIN=1
ITEST_LOG_LEVEL=debug ITEST_PROXY_EXTRA="workers = 2
rsa_private_key = $T/rsa-priv.pem
rsa_public_key = $T/rsa-pub.pem
tls_cert = $T/server-cert.pem
tls_key = $T/server-key.pem" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 20 bash -c "[ \"\$('$MYSTEERCTL' --socket '$T/admin.sock' --json status |
	python3 -c 'import json,sys; print(json.load(sys.stdin)[\"writer\"])')\" = db1 ]" >/dev/null ||
	{ echo "not ok - no writer"; tail -n 20 "$T/mysteerd.log"; exit 1; }
wait_until 20 sql $PP "SELECT 1" >/dev/null

sql_root $P1 "CREATE DATABASE IF NOT EXISTS t; CREATE TABLE t.node (id INT PRIMARY KEY, v VARCHAR(100))"
seq 101 1100 | awk '{print $1 ",csv " $1}' >"$T/node.csv"
wait_until 20 sql_root $P2 "SELECT 1 FROM t.node" >/dev/null
wait_until 20 sql_root $P3 "SELECT 1 FROM t.node" >/dev/null
echo "# node $(node --version), mysql2 $(node -p "require('$NODE_DIR/node_modules/mysql2/package.json').version")"
writes_mark
(cd "$NODE_DIR" && node clients.js $PP $P1 "$CA" "$T/node.csv") >"$T/node.out" 2>&1
rc=$?
cat "$T/node.out"
check "clients.js: every check passed" [ $rc -eq 0 ]
check "clients.js ran to the end" grep -q "node_clients: done" "$T/node.out"
check_eq "its rows on the writer: ids 1 2 4 5 6 and 1000 of the file" 1005 \
	"$(sql_root $P1 "SELECT COUNT(*) FROM t.node")"
check_eq "the rolled back row is not there" 0 "$(sql_root $P1 "SELECT COUNT(*) FROM t.node WHERE id = 3")"
check_eq "no write of its own on replica $P2" 0 "$(local_writes $P2)"
check_eq "no write of its own on replica $P3" 0 "$(local_writes $P3)"

# --- caching_sha2_password ------------------------------------------------------------
sed -i 's/^\[proxy\]$/[proxy]\ndefault_auth_plugin = caching_sha2_password/' "$T/mysteer.conf"
check "reload with default_auth_plugin = caching_sha2_password (the cache empty)" ctl reload
mark=$(wc -l <"$T/mysteerd.log")
(cd "$NODE_DIR" && node clients.js $PP $P1 "$CA" sha2) >"$T/sha2.out" 2>&1
rc=$?
cat "$T/sha2.out"
check "clients.js sha2: every check passed" [ $rc -eq 0 ]
logins() { tail -n +$((mark + 1)) "$T/mysteerd.log" | grep -c "'app'@'127.0.0.1' logged in: $1"; }
check_eq "the first: a full authentication with RSA" 1 \
	"$(logins "caching_sha2_password, full authentication with RSA$")"
check_eq "the next ones: fast authentication (without TLS, then over TLS)" 2 \
	"$(logins "caching_sha2_password, fast authentication")"
check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"
itest_done
