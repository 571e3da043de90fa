#!/usr/bin/env bash
# exposure.sh - what mysteerd exposes: 6450 listens on the [proxy] bind
# addresses alone (default loopback: another local address of the host is
# refused; a listed one works, and then loopback is refused).
. "$(dirname "$0")/lib.sh"
itest_init exposure

# A local address of the test's own namespace that is not loopback, as a
# host's LAN address would be.
LAN=10.213.0.1
ip addr add "$LAN/32" dev lo || { echo "not ok - address $LAN"; exit 1; }

itest_sandbox_up

# The 6450 listening sockets, "ADDR:PORT" a line.
listeners_6450() { ss -Hltn 'sport = :6450' | awk '{print $4}' | sort -u | tr '\n' ' '; }

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

itest_done
