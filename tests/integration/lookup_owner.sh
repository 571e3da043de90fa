#!/usr/bin/env bash
# lookup_owner.sh - local handoff takes only the server's own listener: next
# to IPv4-only servers (SANDBOX_LOOPBACK=127.0.0.1), another user (nobody) listens
# on [::]:PORT with IPV6_V6ONLY. 6446's IPv6 clients must never reach that
# listener: they are relayed to the server, and the daemon says why once.
export SANDBOX_LOOPBACK=127.0.0.1
. "$(dirname "$0")/lib.sh"
itest_init lookup_owner

itest_sandbox_up
check "the writer has no IPv6 listener of its own" \
	bash -c "! ss -ltnH | grep -q '\[::\]:$P1 '"
# The foreign listener: prints one line per connection it accepts.
# (the system's python: a python3 under /root is not nobody's to run)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" -u -c '
import socket, sys
s = socket.socket(socket.AF_INET6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s.bind(("::", int(sys.argv[1])))
s.listen(16)
print("listening", flush=True)
while True:
    c, a = s.accept()
    print("accepted", a[0], flush=True)
    c.close()' "$P1" >"$T/foreign.out" 2>&1 &
ITEST_PIDS+=($!)
wait_until 10 grep -q listening "$T/foreign.out" >/dev/null
check "the foreign listener is up on [::]:$P1" grep -q listening "$T/foreign.out"

ITEST_STEER_EXTRA="lookup = on
local_handoff = on" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 test "$(ctl_writer)" = db1 >/dev/null
check_eq "IPv4: 6446 lands on the writer by handoff" "$P1" "$(sql 6446 'SELECT @@port')"
wait_until 10 grep -q "db1: IPv6 clients relayed" "$T/mysteerd.log" >/dev/null
for i in 1 2 3; do
	out=$(sql 6446 'SELECT @@port' app app ::1 2>&1)
	check_eq "IPv6 client $i of 6446 reaches the writer (through the relay)" "$P1" "$out"
done
check_eq "the foreign listener accepted nothing" 0 "$(grep -c '^accepted' "$T/foreign.out")"
check "the daemon said whose listener it left alone" \
	grep -q "db1: \[::\]:$P1 belongs to uid 65534, not to the server's uid 0: not taken" "$T/mysteerd.log"
check_eq "it said so once" 1 "$(grep -c "db1: \[::\]:$P1 belongs to uid" "$T/mysteerd.log")"

itest_daemon_stop TERM
itest_done
