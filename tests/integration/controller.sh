#!/usr/bin/env bash
# controller.sh - mysteerd's topology against real servers (issue 2): initial
# roles, a replica killed and restarted, a black-holed backend that must not
# delay the others, replication lag beyond max_replication_lag_s, failover
# with promote under both writer policies, the sticky writer, and admin
# changes surviving a restart. One sandbox, reset with `down; up` (a file
# copy) where a case leaves the cluster changed. Runs in its own namespaces.
# A non-default base port, as issue 2 asks: nothing may assume 3306.
export SANDBOX_BASE_PORT=${SANDBOX_BASE_PORT:-4306}
. "$(dirname "$0")/lib.sh"
itest_init controller

INTERVAL=200 TIMEOUT=500 FALL=2
export ITEST_INTERVAL_MS=$INTERVAL ITEST_TIMEOUT_MS=$TIMEOUT
export ITEST_PROBE_EXTRA="max_replication_lag_s = 2"
# fall x interval + timeout, three times over (slack for 2 loaded cores)
DOWN_DEADLINE_S=$(((FALL * INTERVAL + TIMEOUT) * 3 / 1000 + 1))

bfield() { status_json | json_get "[b['$2'] for b in d['backends'] if b['name']=='$1'][0]"; }
state_is() { test "$(bfield "$1" state)" = "$2"; }
writer_is() { test "$(ctl_writer)" = "$1"; }
role_is() { test "$(bfield "$1" role)" = "$2"; }
topology_is() { test "$(ctl_writer)" = "$1" && test "$(ctl_readers)" = "$2"; }
ro_targets() { status_json | json_get "','.join([r['targets'] for r in d['routes'] if r['name']=='ro'][0])"; }
log_has() { grep -q -- "$1" "$T/mysteerd.log"; }

# SIGKILL a server directly, so that the time measured is the daemon's, not
# sandbox.sh's (which also waits for the process to go).
kill_server() { # port
	kill -KILL "$(cat "$SANDBOX_DIR/$1/mysqld.pid")"
}

fresh_sandbox() {
	sb down >/dev/null 2>&1
	itest_sandbox_up >/dev/null 2>&1
}

restart_daemon() { # config [fresh: forget the writer and demotions of the last cluster]
	itest_daemon_stop TERM
	[ "${2:-}" = fresh ] && rm -f "$T/state"
	itest_daemon_start "$1"
}

itest_sandbox_up
itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1

# --- initial topology ---------------------------------------------------------
ms=$(wait_until 15 topology_is db1 "db2 db3")
check "db1 ($P1) writer, db2 db3 ($P2 $P3) readers after ${ms} ms" topology_is db1 "db2 db3"
check "status has lag_s 0-ish for readers" test "$(bfield db2 lag_s)" != None
check "status has cgroup and bpffs_dir" \
	test "$(status_json | json_get "bool(d['cgroup']) and d['bpffs_dir']=='/sys/fs/bpf/mysteer'")" = True
check "log: writer none -> db1" log_has "writer none -> db1"

# --- a replica killed and started again ----------------------------------------
t0=$(date +%s%3N)
kill_server "$P2"
ms=$(wait_until "$DOWN_DEADLINE_S" state_is db2 down)
check "kill $P2: db2 down within ${DOWN_DEADLINE_S}s" state_is db2 down
measured "kill replica -> down: $(($(date +%s%3N) - t0)) ms (poll $ms ms, interval $INTERVAL, timeout $TIMEOUT, fall $FALL)"
check_eq "db2 out of the readers" "db3" "$(ctl_readers)"
check "log: db2 up -> down with a reason" grep -qE "db2 up -> down: .+" "$T/mysteerd.log"
check "log: db2 reader -> none" log_has "db2 reader -> none"
sb start "$P2" >/dev/null 2>&1
ms=$(wait_until 15 role_is db2 reader)
check "start $P2: db2 reader again (${ms} ms)" role_is db2 reader

# --- a black-holed backend does not delay the others -----------------------------
# A listener that accepts TCP and never says a word (the handshake never comes).
BH_PORT=$((P1 + 50))
itest_bg python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $BH_PORT)); s.listen(128)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
"
# Added only once it listens: a refused connect would be logged as the
# reason instead of the timeout this part is about.
bh_listens() { ss -Hltn "sport = :$BH_PORT" | grep -q LISTEN; }
wait_until 10 bh_listens >/dev/null
check "the black hole listens" bh_listens
check "add a black-holed backend" ctl add bh "127.0.0.1:$BH_PORT" priority=50
ms=$(wait_until 10 state_is bh down)
check "black hole goes down (${ms} ms)" state_is bh down
check "black hole reason names the timeout" grep -qE "bh .* -> down: no answer within $TIMEOUT ms" "$T/mysteerd.log"
t0=$(date +%s%3N)
kill_server "$P3"
ms=$(wait_until "$DOWN_DEADLINE_S" state_is db3 down)
check "with a black hole present, kill $P3: db3 down within ${DOWN_DEADLINE_S}s" state_is db3 down
measured "kill replica -> down with a black-holed backend probed alongside: $(($(date +%s%3N) - t0)) ms"
check "writer db1 unaffected by the black hole" test "$(ctl_writer)" = db1
sb start "$P3" >/dev/null 2>&1
wait_until 15 role_is db3 reader >/dev/null
check "db3 reader again" role_is db3 reader
check "remove the black hole" ctl remove bh
check "status without bh" test "$(status_json | json_get "len(d['backends'])")" = 3

# --- replication lag beyond max_replication_lag_s --------------------------------
sql "$P1" "CREATE DATABASE IF NOT EXISTS ctltest; CREATE TABLE IF NOT EXISTS ctltest.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)"
sql_root "$P3" "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 30; START SLAVE"
# An idle primary shows no lag: keep writing.
(while :; do sql "$P1" "INSERT INTO ctltest.t (v) VALUES (1)" >/dev/null 2>&1; sleep 0.2; done) &
WRITER_PID=$!
ITEST_PIDS+=("$WRITER_PID")
# (STOP SLAVE itself briefly makes it "replication stopped": wait for the lag.)
lag_out() { grep -qE "db3 reader -> none: lag [0-9]+s > 2s" "$T/mysteerd.log"; }
ms=$(wait_until 30 lag_out)
check "MASTER_DELAY 30 > max lag 2: db3 leaves the readers, logged with its lag (${ms} ms)" lag_out
check "db3 has no role" role_is db3 none
check "db3 health stays up" state_is db3 up
check_eq "ro route: db2 only" "db2" "$(ro_targets)"
sql_root "$P3" "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 0; START SLAVE"
ms=$(wait_until 40 role_is db3 reader)
check "delay removed: db3 reader again (${ms} ms)" role_is db3 reader
kill "$WRITER_PID" 2>/dev/null
wait "$WRITER_PID" 2>/dev/null

# --- read_only policy: primary lost, no writer until promote ----------------------
sb kill "$P1" >/dev/null 2>&1
ms=$(wait_until "$DOWN_DEADLINE_S" state_is db1 down)
check "kill $P1: db1 down (${ms} ms)" state_is db1 down
sleep 1
check_eq "read_only policy: no writer while replicas are read_only" None "$(ctl_writer)"
check_eq "the read route still serves the readers" "db2,db3" "$(ro_targets)"
sb promote "$P2" >/dev/null 2>&1
ms=$(wait_until 10 topology_is db2 db3)
check "promote $P2: writer db2, reader db3 (${ms} ms)" topology_is db2 db3
check "log: writer none -> db2" log_has "writer none -> db2"

# --- sticky writer: the old primary comes back writable ----------------------------
sb start "$P1" >/dev/null 2>&1
wait_until 15 state_is db1 up >/dev/null
sql_root "$P1" "SET GLOBAL read_only = 0"
sleep 1.5
check_eq "old primary back and writable: writer stays db2" db2 "$(ctl_writer)"
check "old primary gets a warning, not the writes" log_has "db1 is writable but is not the writer"

# --- priority policy: writer follows priority at once -------------------------------
fresh_sandbox
ITEST_PROBE_EXTRA="max_replication_lag_s = 2
writer_policy = priority" itest_write_config "$T/prio.conf"
restart_daemon "$T/prio.conf" fresh
wait_until 15 topology_is db1 "db2 db3" >/dev/null
check "priority policy: db1 writer at start" topology_is db1 "db2 db3"
t0=$(date +%s%3N)
kill_server "$P1"
ms=$(wait_until "$DOWN_DEADLINE_S" writer_is db2)
check "priority policy: kill $P1 -> writer db2 at once (${ms} ms), read_only or not" \
	test "$(ctl_writer)" = db2
measured "priority policy failover (kill primary -> new writer): $(($(date +%s%3N) - t0)) ms"

# --- admin changes survive a restart ----------------------------------------------
fresh_sandbox
restart_daemon "$T/mysteer.conf" fresh
wait_until 15 topology_is db1 "db2 db3" >/dev/null
check "drain db3" ctl drain db3
check "disable db2" ctl disable db2
check "add db4" ctl add db4 "127.0.0.1:$P3" priority=400 weight=2
wait_until 10 state_is db4 up >/dev/null
check_eq "db3 drained" drained "$(bfield db3 state)"
check_eq "db2 disabled, no role" "disabled none" "$(bfield db2 state) $(bfield db2 role)"
check_eq "db4 reader" reader "$(bfield db4 role)"
check_eq "ro route: only db4 (db3 drained, db2 disabled)" db4 "$(ro_targets)"
restart_daemon "$T/mysteer.conf"
wait_until 15 state_is db4 up >/dev/null
check_eq "after restart: db3 drained" drained "$(bfield db3 state)"
check_eq "after restart: db2 disabled" disabled "$(bfield db2 state)"
check_eq "after restart: db4 kept with its weight" "2" "$(bfield db4 weight)"
check "enable db2" ctl enable db2
check "remove db4" ctl remove db4
wait_until 10 role_is db2 reader >/dev/null
check_eq "db2 reader again" reader "$(bfield db2 role)"
check_eq "db4 gone" 3 "$(status_json | json_get "len(d['backends'])")"
check "reset drops the drain" ctl reset
wait_until 5 state_is db3 up >/dev/null
check_eq "db3 up after reset" up "$(bfield db3 state)"

# --- reload: from the file, a bad file refused, SIGHUP ------------------------------
cp "$T/mysteer.conf" "$T/mysteer.conf.orig"
# db5 by host name: "localhost" would make libmysqlclient use its Unix
# socket (none here); the probe must go over TCP to the address that is steered to.
printf '[backend:db5]\nhost = localhost\nport = %d\npriority = 500\n' "$P2" >>"$T/mysteer.conf"
check "reload picks up a backend added to the file" ctl reload
wait_until 10 state_is db5 up >/dev/null
check_eq "db5 (host = localhost) up after reload: probed over TCP" up "$(bfield db5 state)"
echo "bogus_key = 1" >>"$T/mysteer.conf"
ctl reload >/dev/null 2>"$T/err"
check_eq "a bad file is refused: exit 1" 1 "$?"
check "the refusal names file, line and key" grep -qE "mysteer.conf:[0-9]+: .*bogus_key" "$T/err"
check_eq "the running config stays (db5 still there)" up "$(bfield db5 state)"
cp "$T/mysteer.conf.orig" "$T/mysteer.conf"
kill -HUP "$ITEST_DAEMON_PID"
names_are() { test "$(status_json | json_get "' '.join(b['name'] for b in d['backends'])")" = "$1"; }
wait_until 10 names_are "db1 db2 db3" >/dev/null
check "SIGHUP reloads: db5 gone again" names_are "db1 db2 db3"
check "daemon still runs after SIGHUP" kill -0 "$ITEST_DAEMON_PID"

# --- reload with new probe credentials: the kept monitoring connections are
# replaced (a wrong password is refused at once, though they stay logged in
# as before), and the backends keep their ids and counters. A refused probe
# is a misconfiguration, not a server down: the backends keep their state
# (6446 is not emptied over a password) and say why.
ids() { status_json | json_get "' '.join(str(b['id']) for b in d['backends'])"; }
ids0=$(ids)
refused() { bfield db2 last_error | grep -q "misconfigured, last state kept: .*Access denied for user 'mysteer'"; }
sed -i 's/^password = mysteer$/password = wrong-on-purpose/' "$T/mysteer.conf"
check "reload takes a new probe password" ctl reload
ms=$(wait_until 10 refused)
check "the new (wrong) password is used and refused: db2 says why (${ms} ms)" refused
sleep 1
check_eq "a refused probe keeps the state: db2 up, db1 the writer" "up db1" "$(bfield db2 state) $(ctl_writer)"
check "the log names the fix" grep -q "db2: the probe is refused (.*Access denied.*check \[probe\] user, password" "$T/mysteerd.log"
sed -i 's/^password = wrong-on-purpose$/password = mysteer/' "$T/mysteer.conf"
check "reload takes the right password again" ctl reload
wait_until 10 test -z "$(bfield db2 last_error)" >/dev/null
check_eq "db2 up, its probe accepted again" "up " "$(bfield db2 state) $(bfield db2 last_error)"
check_eq "backends keep their ids across a credentials change" "$ids0" "$(ids)"

check_eq "admin socket mode 0600, owner root" "600 root" "$(stat -c '%a %U' "$T/admin.sock")"
itest_daemon_stop TERM
check "socket removed at exit" test ! -e "$T/admin.sock"

# --- admin_group, and running as a daemon (no -f) --------------------------------
sed -e "s|^admin_socket = .*|admin_socket = $T/sub/admin.sock\nadmin_group = daemon|" \
	"$T/mysteer.conf" >"$T/daemon.conf"
chmod 600 "$T/daemon.conf"
"$MYSTEERD" -c "$T/daemon.conf"
check_eq "without -f mysteerd detaches and its parent exits 0" 0 "$?"
sock_up() { "$MYSTEERCTL" --socket "$T/sub/admin.sock" status >/dev/null 2>&1; }
wait_until 10 sock_up >/dev/null
check "the detached daemon answers (socket dir created)" sock_up
check_eq "admin_group: socket 0660, group daemon" "660 daemon" "$(stat -c '%a %G' "$T/sub/admin.sock")"
dpid=$(for p in /proc/[0-9]*; do
	tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q "^$MYSTEERD -c $T/daemon.conf" && basename "$p"
done | head -n 1)
check "found the detached daemon's pid" test -n "$dpid"
if [ -n "$dpid" ]; then
	ITEST_PIDS+=("$dpid") # stopped at exit whatever happens below
	kill -TERM "$dpid"
	gone() { ! kill -0 "$dpid" 2>/dev/null; }
	wait_until 10 gone >/dev/null
	check "the detached daemon stops on SIGTERM" gone
fi

itest_done
