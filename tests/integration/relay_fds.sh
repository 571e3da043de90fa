#!/usr/bin/env bash
# relay_fds.sh - the relay within the open-files limit: mysteerd started with
# `ulimit -n 256` and without CAP_SYS_RESOURCE (so it cannot raise it) gets
# 500 relayed connections at once. The relay keeps to its share of the
# descriptors and pauses its accepts instead of spinning at EMFILE: the
# probes keep working (every backend stays up), the admin socket answers, the
# log stays short, and the relay serves again once the clients leave.
. "$(dirname "$0")/lib.sh"
itest_init relay_fds

itest_sandbox_up
ITEST_STEER_EXTRA="lookup = on
local_handoff = off" itest_write_config "$T/mysteer.conf"
(
	ulimit -n 256
	exec setpriv --bounding-set=-sys_resource -- "$MYSTEERD" -c "$T/mysteer.conf" -f
) >>"$T/mysteerd.log" 2>&1 &
ITEST_DAEMON_PID=$!
wait_until 10 ctl status >/dev/null || { echo "not ok - mysteerd did not answer"; tail -n 30 "$T/mysteerd.log"; exit 1; }
wait_until 10 test "$(ctl_writer)" = db1 >/dev/null
wait_until 10 test "$(ctl_readers)" = "db2 db3" >/dev/null
check_eq "the daemon runs with 256 open files" 256 \
	"$(awk '/Max open files/ {print $4}' /proc/"$ITEST_DAEMON_PID"/limits)"
check "it logged its open files limit" grep -q 'open files limit 256' "$T/mysteerd.log"

# 500 connections to 6447 and 6446 through the relay, held 4 s.
(
	ulimit -n 4096
	python3 - <<'PY'
import socket, time
socks = []
for i in range(500):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", 6447 if i % 2 else 6446))
    except BlockingIOError:
        pass
    socks.append(s)
time.sleep(4)
for s in socks:
    s.close()
PY
) &
clients=$!
ITEST_PIDS+=($clients)
sleep 2
states=$(status_json | json_get "' '.join(b['state'] for b in d['backends'])")
check_eq "with 500 relayed connections open every backend stays up" "up up up" "$states"
active=$(status_json | json_get "d['lookup']['relay_active']")
measured "relay pairs open with 500 clients waiting: $active"
check "the relay keeps within its share (${active} pairs < 128)" [ "${active:-999}" -lt 128 ]
wait "$clients"
sleep 1
states=$(status_json | json_get "' '.join(b['state'] for b in d['backends'])")
check_eq "after the clients left every backend is still up" "up up up" "$states"
lines=$(wc -l <"$T/mysteerd.log")
emfile=$(grep -c 'Too many open files\|descriptor budget' "$T/mysteerd.log")
measured "daemon log: $lines lines, $emfile about descriptors"
check "the log stays short ($emfile lines about descriptors)" [ "$emfile" -le 10 ]
check "no probe failed for want of descriptors" bash -c "! grep -q 'probe.*Too many open files' '$T/mysteerd.log'"
ms=$(wait_until 20 bash -c "[ \"\$(mariadb --no-defaults -h 127.0.0.1 -P 6446 -u app -papp --connect-timeout=5 -N -B -e 'SELECT @@port' 2>/dev/null)\" = $P1 ]")
check "6446 through the relay serves again (${ms} ms)" [ $? -eq 0 ]
itest_daemon_stop TERM
itest_done
