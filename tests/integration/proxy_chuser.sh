#!/usr/bin/env bash
# proxy_chuser.sh - COM_CHANGE_USER through the 6450 proxy, with
# libmysqlclient's mysql_change_user() (build/tests/proxy_chuser):
# - straight to the writer first, to learn what the server does after a
#   failed change (the proxy must do the same);
# - through 6450: the session of app (user variable, temporary table, open
#   transaction with an uncommitted row, prepared statement) becomes
#   app_admin's: CURRENT_USER(), the schema asked for, nothing of the old
#   session left, its uncommitted row rolled back on the writer; a write of
#   app_admin lands on the writer (and on no replica) recorded with
#   app_admin@%; a wrong password gets 1045; a change back to app works;
# - the same with default_auth_plugin = caching_sha2_password and a client
#   that logs in with it (RSA keys for the full authentication);
# - malformed COM_CHANGE_USER packets: a clean ERR, the daemon goes on.
. "$(dirname "$0")/lib.sh"
itest_init proxy_chuser
# The ASan/UBSan daemon when `make asan-bins` built it (`make test` does):
# the malformed packets below then run under the sanitizers.
if [ "$ITEST_BUILD" = "${ITEST_BUILD%/asan}" ] &&
	nm "$ITEST_BUILD/asan/mysteerd" 2>/dev/null | grep -q __asan_report; then
	MYSTEERD=$ITEST_BUILD/asan/mysteerd MYSTEERCTL=$ITEST_BUILD/asan/mysteerctl
fi
echo "# daemon: $MYSTEERD"
itest_sandbox_up

PP=6450
HERE=$(dirname "$0")
LOG=$T/mysteerd.log
CHUSER=$ITEST_BUILD/tests/proxy_chuser
check "proxy_chuser is built" test -x "$CHUSER"

reset_table() {
	sql_root $P1 "CREATE DATABASE IF NOT EXISTS t; DROP TABLE IF EXISTS t.chuser;
		CREATE TABLE t.chuser (id INT PRIMARY KEY, v VARCHAR(100))"
}

# --- the server itself ----------------------------------------------------------
reset_table
"$CHUSER" $P1 >"$T/direct.out" 2>&1
cat "$T/direct.out"
check "mysql_change_user straight to the server" grep -q "proxy_chuser: done" "$T/direct.out"
server_after=$(grep "^after a failed change:" "$T/direct.out")
echo "# the server, $server_after"

openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/rsa-priv.pem" 2>/dev/null &&
	openssl pkey -in "$T/rsa-priv.pem" -pubout -out "$T/rsa-pub.pem" 2>/dev/null
ITEST_APP_ADMIN=1 ITEST_LOG_LEVEL=debug ITEST_PROXY_EXTRA="workers = 2
rsa_private_key = $T/rsa-priv.pem
rsa_public_key = $T/rsa-pub.pem" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 20 bash -c "[ \"\$('$MYSTEERCTL' --socket '$T/admin.sock' --json status |
	python3 -c 'import json,sys; print(json.load(sys.stdin)[\"writer\"])')\" = db1 ]" >/dev/null ||
	{ echo "not ok - no writer"; tail -n 20 "$LOG"; exit 1; }
wait_until 20 mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -e "SELECT 1" >/dev/null

# through PORT [PLUGIN]: the helper through 6450, then the checks on the servers
through() {
	local what=$1 out=$T/proxy-$1.out
	shift
	reset_table
	writes_mark
	"$CHUSER" $PP "$@" >"$out" 2>&1
	cat "$out"
	check "$what: mysql_change_user through 6450" grep -q "proxy_chuser: done" "$out"
	check "$what: every check of the helper passed" bash -c "! grep -q '^not ok' '$out'"
	local after
	after=$(grep "^after a failed change:" "$out")
	echo "# 6450, $after"
	check_eq "$what: after a failed change, as the server" "$server_after" "$after"
	check_eq "$what: the uncommitted row of app is not on the writer" 0 \
		"$(sql_root $P1 "SELECT COUNT(*) FROM t.chuser WHERE id = 1")"
	check_eq "$what: the write of app_admin landed on the writer, as app_admin" "app_admin@%" \
		"$(sql_root $P1 "SELECT v FROM t.chuser WHERE id = 2")"
	check_eq "$what: no write ran on replica $P2" 0 "$(local_writes $P2)"
	check_eq "$what: no write ran on replica $P3" 0 "$(local_writes $P3)"
}

through native

# --- malformed packets ------------------------------------------------------------
/usr/bin/python3 "$HERE/proxy_chuser.py" $PP >"$T/hostile.out" 2>&1
rc=$?
cat "$T/hostile.out"
check "malformed COM_CHANGE_USER packets: clean ERRs" [ $rc -eq 0 ]
check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"
check_eq "a login works after them" 1 \
	"$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B -e 'SELECT 1')"

mark=$(wc -l <"$LOG")
sed -i 's/^\[proxy\]$/[proxy]\ndefault_auth_plugin = caching_sha2_password/' "$T/mysteer.conf"
check "reload with default_auth_plugin = caching_sha2_password" ctl reload
through sha2 caching_sha2_password
check "the change logged in with caching_sha2_password" \
	bash -c "tail -n +$((mark + 1)) '$LOG' | grep -q \"'app_admin'@'127.0.0.1' logged in: caching_sha2_password.*(COM_CHANGE_USER)\""
check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"


itest_daemon_stop TERM
check_eq "mysteerd stopped cleanly on SIGTERM" 0 "$ITEST_DAEMON_RC"
check "no sanitizer report (leaks included)" itest_sanitizer_check
itest_done
