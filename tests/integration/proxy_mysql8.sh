#!/usr/bin/env bash
# proxy_mysql8.sh - the 6450 proxy in front of MySQL 8.4 backends. No MySQL
# server can be installed here: the backends are the scripted MySQL 8.4
# server mysql8_backend.py (a writer and a replica on loopback ports), which
# logs the path of each login and every statement. Shown:
# - caching_sha2_password towards the backends: with an empty cache the
#   proxy's login does full authentication with the RSA exchange (no TLS);
#   once the server cached the user, fast authentication; with backend
#   `tls = on` (the sandbox test CA's certificate) full authentication sends
#   the password inside TLS; PyMySQL and the mariadb CLI log in through 6450
#   and read and write;
# - a user with only a password_hash in its [user:] section: the proxy
#   cannot answer caching_sha2_password for it, the client gets a clean ERR
#   1251 that says why, the session and the daemon go on;
# - the controller follows the MySQL servers: super_read_only and SHOW
#   REPLICA STATUS (db1 writer, db2 reader);
# - the proxy under ASan/UBSan when asan-bins were built.
. "$(dirname "$0")/lib.sh"
itest_init proxy_mysql8
if [ "$ITEST_BUILD" = "${ITEST_BUILD%/asan}" ] &&
	nm "$ITEST_BUILD/asan/mysteerd" 2>/dev/null | grep -q __asan_report; then
	MYSTEERD=$ITEST_BUILD/asan/mysteerd MYSTEERCTL=$ITEST_BUILD/asan/mysteerctl
fi
echo "# daemon: $MYSTEERD"
HERE=$(cd "$(dirname "$0")" && pwd)
PP=6450
PY=/usr/bin/python3
UUID1=3e11fa47-71ca-11e1-9e33-c80aa9429562
UUID2=8f2a9c1e-0b7d-11ef-a5a1-0242ac120002
TLS=$("$SANDBOX" certs) || { echo "not ok - sandbox.sh certs"; exit 1; }
L1=$T/db1.jsonl L2=$T/db2.jsonl
hashy=$($PY -c "import hashlib; print('*' + hashlib.sha1(hashlib.sha1(b'hashy').digest()).hexdigest().upper())")

# the scripted servers: db1 the writer, db2 its replica
M1= M2=
backends_start() {
	itest_bg $PY "$HERE/mysql8_backend.py" --port $P1 --log "$L1" --uuid $UUID1 --server-id 1 \
		--user app:app --user hashy:hashy --trust mysteer \
		--tls-cert "$TLS/server-cert.pem" --tls-key "$TLS/server-key.pem"
	M1=$!
	itest_bg $PY "$HERE/mysql8_backend.py" --port $P2 --log "$L2" --uuid $UUID2 --server-id 2 \
		--replica-of 127.0.0.1:$P1 --user app:app --user hashy:hashy --trust mysteer \
		--tls-cert "$TLS/server-cert.pem" --tls-key "$TLS/server-key.pem"
	M2=$!
	wait_until 20 bash -c "grep -q listening '$L1' && grep -q listening '$L2'" >/dev/null ||
		{ echo "not ok - the scripted servers did not start"; exit 1; }
}
backends_start

# auths FILE PATH: logins of app that took PATH
auths() { $PY -c "import json,sys
print(sum(1 for l in open(sys.argv[1]) for e in [json.loads(l)]
          if e['ev'] == 'auth' and e['user'] == 'app' and e['path'] == sys.argv[2]))" "$1" "$2"; }
# fresh: the servers forget their cache (or not: keep) and drop every
# connection, so that the proxy's next logins are new
fresh() {
	[ "${1:-}" = keep ] || kill -USR1 $M1 $M2
	kill -USR2 $M1 $M2
	sleep 1 # the proxy sees its pooled connections closed
}

start() { # BACKEND_EXTRA
	[ -n "$ITEST_DAEMON_PID" ] && itest_daemon_stop TERM
	ITEST_BACKENDS="1 2" ITEST_LOG_LEVEL=debug ITEST_BACKEND_EXTRA=$1 ITEST_TIMEOUT_MS=3000 \
		ITEST_PROXY_EXTRA="pool_min_idle = 0
read_your_writes = gtid" itest_write_config "$T/mysteer.conf" - <<-EOF

		[user:hashy]
		password_hash = $hashy
	EOF
	itest_daemon_start "$T/mysteer.conf" || exit 1
	wait_until 40 bash -c "[ \"\$('$MYSTEERCTL' --socket '$T/admin.sock' --json status |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[\"writer\"], sorted(b[\"role\"] for b in d[\"backends\"]))')\" = \"db1 ['reader', 'writer']\" ]" \
		>/dev/null || { echo "not ok - no writer and reader"; ctl status; tail -n 20 "$T/mysteerd.log"; exit 1; }
}

# py USER PASSWORD SQL...: through 6450 with PyMySQL, one session, each
# statement's first column printed
py() {
	timeout 60 $PY - "$@" <<-'EOF'
		import sys, pymysql
		user, pw = sys.argv[1], sys.argv[2]
		c = pymysql.connect(host="127.0.0.1", port=6450, user=user, password=pw,
		                    autocommit=True, connect_timeout=20, read_timeout=30)
		cur = c.cursor()
		for q in sys.argv[3:]:
		    cur.execute(q)
		    r = cur.fetchall()
		    print(r[0][0] if r else "-")
		c.close()
	EOF
}
q() { # USER PASSWORD SQL: the mariadb CLI through 6450
	timeout 60 mariadb --no-defaults -h127.0.0.1 -P$PP -u"$1" -p"$2" --skip-ssl \
		--connect-timeout=20 -N -B -e "$3"
}

start ""
check_eq "the controller: db1 (super_read_only 0, no replica status) is the writer" writer "$(ctl_role db1)"
check_eq "the controller: db2 (super_read_only 1, SHOW REPLICA STATUS) is a reader" reader "$(ctl_role db2)"
check "the probe asked db2 SHOW REPLICA STATUS" grep -q '"sql": "SHOW REPLICA STATUS"' "$L2"
check "the probe asked db1 for @@super_read_only" grep -q '@@super_read_only' "$L1"

# --- caching_sha2_password: full authentication with RSA, then fast ----------
fresh
start_ms=$(date +%s%3N)
out=$(py app app "SELECT @@server_id" "INSERT INTO t VALUES (1)" 2>&1)
measured "PyMySQL session (two logins with RSA full authentication) in $(($(date +%s%3N) - start_ms)) ms"
check_eq "PyMySQL through 6450: a read on db2, a write" "2
-" "$out"
check "db2: the proxy's login did full authentication with RSA" [ "$(auths "$L2" full-rsa)" -ge 1 ]
check "db1: the proxy's login did full authentication with RSA" [ "$(auths "$L1" full-rsa)" -ge 1 ]
check "db1 ran the INSERT" grep -q '"sql": "INSERT INTO t VALUES (1)"' "$L1"
fast0=$(auths "$L2" fast)
fresh keep
out=$(q app app "SELECT @@server_id" 2>&1)
check_eq "the mariadb CLI through 6450: a read on db2" 2 "$out"
check "db2: a new login is fast authentication from its cache ($fast0 -> $(auths "$L2" fast))" \
	[ "$(auths "$L2" fast)" -gt "$fast0" ]
out=$(q app app "INSERT INTO t VALUES (2); SELECT @@server_id" 2>&1)
check_eq "the mariadb CLI: a write then a read" 2 "$out"

# --- a user with only a password_hash ------------------------------------------
start_ms=$(date +%s%3N)
out=$(q hashy hashy "SELECT @@server_id" 2>&1)
rc=$?
measured "hash-only user refused in $(($(date +%s%3N) - start_ms)) ms"
echo "# hashy: $out"
check "hashy: an ERR, not a hang (rc $rc)" [ $rc -eq 1 ]
check "hashy: ERROR 1251 saying the [user:] section has only a password_hash" \
	grep -q "ERROR 1251 (08004).*caching_sha2_password for user 'hashy'.*only a password_hash" <<<"$out"
out=$(q hashy hashy "INSERT INTO t VALUES (3)" 2>&1)
check "hashy: a write gets the same ERR at once" grep -q "ERROR 1251" <<<"$out"
check "the log says the login was refused" grep -q "login refused: 1251" "$T/mysteerd.log"
check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"
check_eq "app still works" 2 "$(q app app "SELECT @@server_id")"

# --- full authentication inside TLS (tls = on) ----------------------------------
start "tls = verify
tls_ca = $TLS/ca.pem"
fresh
tls0=$(auths "$L1" full-tls)
out=$(py app app "INSERT INTO t VALUES (4)" "SELECT @@server_id" 2>&1)
want="-
2"
check_eq "tls = verify: PyMySQL writes and reads" "$want" "$out"
[ "$out" = "$want" ] || { tail -n 8 "$L1" "$L2"; tail -n 30 "$T/mysteerd.log"; }
check "db1: full authentication with the password inside TLS" [ "$(auths "$L1" full-tls)" -gt "$tls0" ]
check "db2: full authentication with the password inside TLS" [ "$(auths "$L2" full-tls)" -ge 1 ]
check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"
itest_done
