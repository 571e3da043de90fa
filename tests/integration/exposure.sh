#!/usr/bin/env bash
# exposure.sh - what mysteerd exposes: 6450 listens on the [proxy] bind
# addresses alone (default loopback: another local address of the host is
# refused; a listed one works, and then loopback is refused). No credential
# is built in: a config without the probe password does not start, and
# password_file works for the probe and the proxy's users, read again by a
# reload. The sandbox's servers listen on loopback alone.
. "$(dirname "$0")/lib.sh"
itest_init exposure

# A local address of the test's own namespace that is not loopback, as a
# host's LAN address would be.
LAN=10.213.0.1
ip addr add "$LAN/32" dev lo || { echo "not ok - address $LAN"; exit 1; }

itest_sandbox_up

# The 6450 listening sockets, "ADDR:PORT" a line.
refused() { ! sql "$@" >/dev/null 2>&1; }
listeners_6450() { ss -Hltn 'sport = :6450' | awk '{print $4}' | sort -u | tr '\n' ' '; }

# --- the sandbox's servers: loopback only -------------------------------------
for p in "$P1" "$P2" "$P3"; do
	check_eq "sandbox server $p listens on loopback alone" "127.0.0.1:$p [::1]:$p " \
		"$(ss -Hltn "sport = :$p" | awk '{print $4}' | sort -u | tr '\n' ' ')"
done
check "sandbox: $LAN:$P1 is refused" bash -c "! timeout 5 bash -c 'echo >/dev/tcp/$LAN/$P1' 2>/dev/null"

# --- 1. [proxy] bind, the default: loopback only -------------------------------
itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 20 sql 6450 'SELECT 1' >/dev/null
check_eq "default bind: 6450 answers on 127.0.0.1" 1 "$(sql 6450 'SELECT 1')"
check_eq "default bind: 6450 answers on ::1" 1 "$(sql 6450 'SELECT 1' app app ::1)"
check "default bind: 6450 refuses a connection to the local address $LAN" \
	bash -c "! timeout 5 bash -c 'echo >/dev/tcp/$LAN/6450' 2>/dev/null"
echo "# 6450 listeners: $(listeners_6450)"
check_eq "default bind: 6450 listens on 127.0.0.1 and [::1] alone" \
	"127.0.0.1:6450 [::1]:6450 " "$(listeners_6450)"
itest_daemon_stop

# --- a listed address works, and loopback then is refused ------------------------
ITEST_PROXY_EXTRA="bind = $LAN" itest_write_config "$T/lan.conf"
itest_daemon_start "$T/lan.conf" || exit 1
wait_until 20 sql 6450 'SELECT 1' app app "$LAN" >/dev/null
check_eq "bind = $LAN: 6450 answers there" 1 "$(sql 6450 'SELECT 1' app app "$LAN")"
check "bind = $LAN: 127.0.0.1:6450 is refused" bash -c "! timeout 5 bash -c 'echo >/dev/tcp/127.0.0.1/6450' 2>/dev/null"
check_eq "bind = $LAN: the one listener" "$LAN:6450 " "$(listeners_6450)"
itest_daemon_stop

# --- a bad bind: one line naming the key, nothing starts ---------------------------
ITEST_PROXY_EXTRA="bind = 127.0.0.1, example.com" itest_write_config "$T/bad.conf"
out=$("$MYSTEERD" -c "$T/bad.conf" -f 2>&1)
rc=$?
check "bind = example.com: exit 2 ($rc)" [ $rc -eq 2 ]
echo "# $out"
check_eq "bind = example.com: one line" 1 "$(printf '%s\n' "$out" | wc -l)"
check "bind = example.com: the line names file, line and key" \
	grep -q 'bad.conf:[0-9]*: bind: bad address "example.com"' <<<"$out"
# An address that is not this host's: the daemon says so and stops.
ITEST_PROXY_EXTRA="bind = 10.213.9.9" itest_write_config "$T/notlocal.conf"
out=$(timeout 30 "$MYSTEERD" -c "$T/notlocal.conf" -f 2>&1)
rc=$?
check "bind = an address not of this host: the daemon stops (exit $rc)" [ $rc -ne 0 ]
check "bind = an address not of this host: the error names it" \
	grep -q 'listen on \[10.213.9.9\]:6450 (\[proxy\] bind): Cannot assign requested address' <<<"$out"

# --- 2. no built-in credential; password_file --------------------------------------
itest_write_config "$T/nopw.conf"
sed -i '/^password = mysteer$/d' "$T/nopw.conf"
out=$("$MYSTEERD" -c "$T/nopw.conf" -f 2>&1)
rc=$?
echo "# $out"
check "no probe password: exit 2 ($rc)" [ $rc -eq 2 ]
check_eq "no probe password: one line" 1 "$(printf '%s\n' "$out" | wc -l)"
check "no probe password: the line names the key" \
	grep -q 'nopw.conf:[0-9]*: \[probe\] password: not set' <<<"$out"

# A monitoring account of its own, with a password found nowhere else, so
# that the log can be searched for it.
PROBE_PW=Pr0be-S3cret-7d1
for p in "$P1" "$P2" "$P3"; do
	sql_root "$p" "SET sql_log_bin=0; CREATE USER 'mon'@'%' IDENTIFIED BY '$PROBE_PW';
		GRANT SLAVE MONITOR, PROCESS ON *.* TO 'mon'@'%'; GRANT SELECT ON mysql.proc TO 'mon'@'%'"
done
printf '%s\n' "$PROBE_PW" >"$T/probe.pw"
printf 'app\n' >"$T/app.pw"
chmod 600 "$T/probe.pw" "$T/app.pw"
ITEST_LOG_LEVEL=debug itest_write_config "$T/pwfile.conf"
sed -i -e 's|^password = mysteer$|password_file = probe.pw|' -e 's|^user = mysteer$|user = mon|' \
	-e 's|^password = app$|password_file = app.pw|' "$T/pwfile.conf"
check "the config names no password itself" bash -c "! grep -q '^password = ' '$T/pwfile.conf'"
itest_daemon_start "$T/pwfile.conf" || exit 1
writer_is() { [ "$(ctl_writer)" = "$1" ]; }
check "password_file: the probes log in (db1 is the writer)" wait_until 20 writer_is db1
wait_until 20 sql 6450 'SELECT 1' >/dev/null
check_eq "password_file: app logs in through 6450" 1 "$(sql 6450 'SELECT 1')"
# A rotated password: the file changes, a reload reads it.
sql_root "$P1" "SET sql_log_bin=0; CREATE USER 'rot'@'%' IDENTIFIED BY 'old-pw'; GRANT SELECT ON *.* TO 'rot'@'%'"
for p in "$P2" "$P3"; do
	sql_root "$p" "SET sql_log_bin=0; CREATE USER 'rot'@'%' IDENTIFIED BY 'old-pw'; GRANT SELECT ON *.* TO 'rot'@'%'"
done
printf 'old-pw\n' >"$T/rot.pw"
chmod 600 "$T/rot.pw"
printf '\n[user:rot]\npassword_file = %s/rot.pw\n' "$T" >>"$T/pwfile.conf"
check "reload takes a user with password_file" ctl reload
check_eq "that user logs in with the file's password" 1 "$(sql 6450 'SELECT 1' rot old-pw)"
for p in "$P1" "$P2" "$P3"; do
	sql_root "$p" "SET sql_log_bin=0; ALTER USER 'rot'@'%' IDENTIFIED BY 'new-pw'"
done
printf 'new-pw\n' >"$T/rot.pw"
check "reload after the file changed" ctl reload
check "the old password is refused" refused 6450 'SELECT 1' rot old-pw
check_eq "the new one logs in" 1 "$(sql 6450 'SELECT 1' rot new-pw)"
rm -f "$T/rot.pw"
out=$(ctl reload 2>&1)
rc=$?
check "an unreadable password_file: reload refused ($out)" [ $rc -ne 0 ]
check "the reason names the key and the file" grep -q "password_file: cannot read $T/rot.pw" <<<"$out"
check_eq "the daemon runs on as it was" 1 "$(sql 6450 'SELECT 1')"
itest_daemon_stop
# --- 5. secrets are never logged (debug level, logins, refused logins, reloads)
sql 6450 'SELECT 1' rot wrong-pw >/dev/null 2>&1
secrets=("$PROBE_PW" old-pw new-pw)
for pw in "${secrets[@]}"; do
	# SHA1(password): what the proxy logs in to backends with
	s1=$(printf '%s' "$pw" | sha1sum | cut -d' ' -f1)
	check "the log (debug) holds neither the password $pw nor its SHA1" \
		bash -c "! grep -qiF -e '$pw' -e '$s1' '$T/mysteerd.log'"
done
measured "the log searched: $(wc -l <"$T/mysteerd.log") lines"

itest_done
