#!/usr/bin/env bash
# daemon_service.sh - mysteerd as a service: a detached start returns only
# once the daemon runs (exit 0, pid file) or failed (exit 1 with the reason
# on stderr, not only in syslog); the systemd notifications (READY=1,
# RELOADING=1 then READY=1 around SIGHUP, STOPPING=1) on a real
# NOTIFY_SOCKET; the unit file passes `systemd-analyze verify` as `make
# install` writes it; `make uninstall` removes what install wrote. No
# sandbox: a daemon whose only backend is down still runs. Its log, as
# log_format = json, parses line by line.
. "$(dirname "$0")/lib.sh"
itest_init daemon_service

ITEST_BACKENDS=1 itest_write_config "$T/ok.conf"
sed -i "s#^state_file = .*#&\npid_file = $T/mysteerd.pid#" "$T/ok.conf"

# --- a detached start that works ------------------------------------------------
"$MYSTEERD" -c "$T/ok.conf" 2>"$T/start.err"
rc=$?
check_eq "detached start exits 0 once the daemon runs" 0 "$rc"
pid=$(cat "$T/mysteerd.pid" 2>/dev/null)
check "the pid file names a running mysteerd" \
	bash -c "[ -n '$pid' ] && grep -qx mysteerd /proc/$pid/comm"
# No wait: when the parent returned, the daemon already answered.
answers() { ctl status >/dev/null; }
check "the admin socket answers as soon as the start returned" answers
stopped() { ! kill -0 "$pid" 2>/dev/null; }
kill -TERM "$pid"
ms=$(wait_until 15 stopped)
check "SIGTERM stops it (${ms} ms)" stopped
check "the pid file is removed at exit" [ ! -e "$T/mysteerd.pid" ]

# --- a detached start that fails ------------------------------------------------
ITEST_BACKENDS=1 itest_write_config "$T/bad.conf"
mkdir -p "$T/notbpf"
sed -i "s#^bpffs_dir = .*#bpffs_dir = $T/notbpf#" "$T/bad.conf"
"$MYSTEERD" -c "$T/bad.conf" 2>"$T/bad.err"
rc=$?
check_eq "a start that fails exits 1" 1 "$rc"
check "its parent prints why (bpffs_dir is not bpffs)" grep -q '^mysteerd: .*not on a bpf filesystem' "$T/bad.err"
measured "failed start said: $(head -c 300 "$T/bad.err")"
none_left() {
	local p
	for p in $(pgrep -x mysteerd); do
		grep -q bad.conf "/proc/$p/cmdline" 2>/dev/null && return 1
	done
	return 0
}
check "no daemon was left behind" none_left

# --- systemd notifications ----------------------------------------------------------
python3 - "$T/notify" "$T/notes" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        msg = s.recv(4096).decode()
        out.write(msg.replace("\n", " ") + "\n")
PY
ITEST_PIDS+=($!)
ms=$(wait_until 60 test -S "$T/notify")
check "the notification listener is up (${ms} ms)" test -S "$T/notify"
# This daemon also logs as JSON: every line must parse on its own.
sed 's/^log_level = .*/&\nlog_format = json/' "$T/ok.conf" >"$T/json.conf"
chmod 600 "$T/json.conf"
NOTIFY_SOCKET=$T/notify itest_daemon_start "$T/json.conf" || exit 1
notes() { grep -c "$1" "$T/notes" 2>/dev/null; }
has() { [ "$(notes "$1")" -ge "$2" ]; }
ms=$(wait_until 10 has READY=1 1)
check "READY=1 once steering runs (${ms} ms)" has READY=1 1
kill -HUP "$ITEST_DAEMON_PID"
ms=$(wait_until 10 has READY=1 2)
check "SIGHUP: RELOADING=1 with MONOTONIC_USEC, then READY=1 again (${ms} ms)" \
	bash -c "grep -q 'RELOADING=1 MONOTONIC_USEC=[0-9]' '$T/notes' && [ \$(grep -c READY=1 '$T/notes') -ge 2 ]"
itest_daemon_stop TERM
check "STOPPING=1 at stop" has STOPPING=1 1
measured "notifications: $(tr '\n' '|' <"$T/notes")"
json_log_ok() {
	python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    d = json.loads(line)
    assert set(d) == {"ts", "level", "msg"}, d
    n += 1
assert n >= 3, n
print("measured: %d JSON log lines, e.g. %s" % (n, line.strip()[:160]))
' "$T/mysteerd.log"
}
check "log_format = json: every line of the log is one JSON object" json_log_ok

# --- the unit as make install writes it ---------------------------------------------
make -s -C "$ITEST_ROOT" install DESTDIR="$T/root">"$T/install.log" 2>&1
check_eq "make install DESTDIR=... succeeds" 0 "$?"
unit=$T/root/usr/local/lib/systemd/system/mysteerd.service
check "the unit's paths are filled in" bash -c "! grep -q @ '$unit'"
# verify checks that ExecStart exists: point it at the DESTDIR copy.
sed "s#/usr/local/sbin/mysteerd#$T/root/usr/local/sbin/mysteerd#" "$unit" >"$T/mysteerd.service"
systemd-analyze verify "$T/mysteerd.service" >"$T/verify.log" 2>&1
check_eq "systemd-analyze verify passes" 0 "$?"
sed 's/^/# /' "$T/verify.log" | head -n 10
check "the installed mysteerd runs" bash -c "'$T/root/usr/local/sbin/mysteerd' -h >/dev/null"
make -s -C "$ITEST_ROOT" uninstall DESTDIR="$T/root">>"$T/install.log" 2>&1
check_eq "make uninstall leaves no file" 0 "$(find "$T/root" -type f | wc -l)"

itest_done
