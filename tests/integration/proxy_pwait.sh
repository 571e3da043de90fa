#!/usr/bin/env bash
# proxy_pwait.sh - pool_max_per_backend is a hard cap on the 6450 proxy's
# open connections to a backend, and a session that needs one more waits
# (first come, first served; proxy_fair.sh checks that over 2 workers) until
# a connection of that backend is parked or closed,
# at most pool_wait_timeout_ms (10 s by default; 6 s here), then gets ERR
# 1040 to that statement and goes
# on. Under mysteerd with workers = 1, pool_max_per_backend = 2 and
# pool_min_idle = 0: 4 clients holding transactions open never get more than
# 2 connections on the writer, 2 of them wait and then complete; a wait that
# runs out gives the client the ERR and its session still answers; a client
# that disconnects while waiting leaves the queue; `mysteerctl status` counts
# waiting, waits and wait_timeouts. Run with BUILD=<asan build> for the ASan
# daemon: the log is checked for sanitizer reports.
. "$(dirname "$0")/lib.sh"
itest_init proxy_pwait
itest_sandbox_up

PP=6450
CAP=2
BOUND_MS=6000
ITEST_PROXY_EXTRA="workers = 1
pool_min_idle = 0
pool_max_per_backend = $CAP
pool_wait_timeout_ms = $BOUND_MS" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || { itest_done; exit 1; }

p() { mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=5 -N -B -e "$1"; }
# app connections in the writer's processlist: the proxy's only (the test
# reads it as root over the socket, the probes log in as mysteer)
writer_apps() { sql_root $P1 "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER='app'"; }
db1() { status_json | json_get "d['pool']['db1']['$1']"; }
now_ms() { date +%s%3N; }
# client OUT PAUSE STATEMENT...: one session sending each statement, then
# waiting PAUSE seconds; --force: an ERR does not end it. Its start and end
# times (ms) go to OUT.start and OUT.end.
client() {
	local out=$1 pause=$2 q
	shift 2
	now_ms >"$out.start"
	for q in "$@"; do
		echo "$q;"
		sleep "$pause"
	done | mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=5 -N -B -n \
		--force >"$out" 2>&1
	local rc=$?
	now_ms >"$out.end"
	return $rc
}

wait_until 15 bash -c "[ \"\$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B -e 'SELECT @@port' 2>/dev/null)\" != '' ]" >/dev/null
p "CREATE DATABASE IF NOT EXISTS pw; CREATE TABLE IF NOT EXISTS pw.t (id INT AUTO_INCREMENT PRIMARY KEY, c INT)"
sleep 0.5
check_eq "status shows the cap of db1 (max)" $CAP "$(db1 max)"
w0=$(db1 waits)

# --- 4 transactions held open, cap 2: 2 run, 2 wait, all complete -----------
# Each client: BEGIN, INSERT, the server's time (ms) of its insert, then 3 s
# later its own row count and COMMIT. Two of them get the writer's 2
# connections and hold them (transaction open) for 3 s; the other two wait at
# BEGIN until a COMMIT hands a connection back.
HOLD=3
pids=()
for i in 1 2 3 4; do
	client "$T/a$i.out" 0 "BEGIN" "INSERT INTO pw.t (c) VALUES ($i)" \
		"SELECT ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000)" "DO SLEEP($HOLD)" \
		"SELECT COUNT(*) FROM pw.t WHERE c = $i" "COMMIT" &
	pids+=($!)
done
pl=() waiting=() opens=()
sleep 0.5
for s in $(seq 1 8); do
	pl+=("$(writer_apps)") waiting+=("$(db1 waiting)") opens+=("$(db1 open)")
	sleep 0.25
done
fails=0
for pid in "${pids[@]}"; do wait "$pid" || fails=$((fails + 1)); done
maxof() { printf '%s\n' "$@" | sort -n | tail -n 1; }
max_pl=$(maxof "${pl[@]}") max_wait=$(maxof "${waiting[@]}") max_open=$(maxof "${opens[@]}")
# when each client inserted: the server's time of its insert, from the first
# client's start (the holders' COMMITs come at least HOLD s after that)
t_start=$(cat "$T"/a?.out.start | sort -n | head -n 1)
lat=()
for i in 1 2 3 4; do
	ts=$(sed -n 1p "$T/a$i.out")
	case "$ts" in '' | *[!0-9]*) lat+=(-1) ;; *) lat+=($((ts - t_start))) ;; esac
done
sorted=$(printf '%s\n' "${lat[@]}" | sort -n | tr '\n' ' ')
read -r l1 l2 l3 l4 <<<"$sorted"
w1=$(db1 waits)
measured "4 held transactions, cap $CAP: app connections on the writer at most $max_pl (samples ${pl[*]}), status waiting at most $max_wait (samples ${waiting[*]}), open at most $max_open; ms from the first start to each insert: $sorted; waits +$((w1 - w0))"
check_eq "4 clients held open all completed" 0 "$fails"
for i in 1 2 3 4; do
	check_eq "client $i saw its own insert inside its transaction" "1" "$(sed -n 2p "$T/a$i.out")"
done
check_eq "all 4 rows are committed" 4 "$(sql_root $P1 "SELECT COUNT(*) FROM pw.t WHERE c BETWEEN 1 AND 4")"
check "the writer never had more than $CAP proxy connections (at most $max_pl)" [ "$max_pl" -le $CAP ]
check "the writer had $CAP proxy connections while they were held ($max_pl)" [ "$max_pl" -eq $CAP ]
check "status open never above max ($max_open)" [ "$max_open" -le $CAP ]
check "status showed waiting sessions while the transactions were held ($max_wait)" [ "$max_wait" -ge 1 ]
# Order, not speed (a loaded machine stretches every figure): the two that
# got connections inserted before either waiter, and a waiter inserted only
# once a holder had committed, HOLD s after that holder's insert.
check "two sessions ran at once ($l1 $l2 ms to their insert, before the waiters' $l3)" \
	[ "$l1" -ge 0 -a "$l2" -le "$l3" ]
check "the others waited for a holder's commit ($l3 $l4 ms, holders $l1 $l2 ms, hold ${HOLD} s)" \
	[ "$l3" -ge $((l1 + HOLD * 1000 - 300)) ]
check_eq "waits counted the 2 sessions that waited" 2 $((w1 - w0))
check_eq "nobody waits now" 0 "$(db1 waiting)"

# --- a wait that runs out: ERR to that statement, the session goes on ---------
# Two transactions hold the writer's connections for longer than the bound;
# a third session's INSERT waits BOUND_MS, gets ERR 1040 and never runs; the
# same session then answers reads. A fourth session disconnects while
# waiting: it leaves the queue.
LONG=$((BOUND_MS / 1000 + 5))
t0=$(db1 wait_timeouts)
hp=()
for i in 1 2; do
	client "$T/h$i.out" 0 "BEGIN" "INSERT INTO pw.t (c) VALUES (10$i)" "DO SLEEP($LONG)" "COMMIT" &
	hp+=($!)
done
wait_until 10 bash -c "[ \$($MYSTEERCTL --socket $T/admin.sock --json status | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[\"pool\"][\"db1\"][\"in_use\"])') -ge $CAP ]" >/dev/null
client "$T/to.out" 0 "INSERT INTO pw.t (c) VALUES (99)" "SELECT 1" "SELECT 2 + 2" &
tp=$!
wait_until 5 bash -c "[ \$($MYSTEERCTL --socket $T/admin.sock --json status | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[\"pool\"][\"db1\"][\"waiting\"])') -ge 1 ]" >/dev/null
# the disconnecting one: killed (its socket closed by the kernel) while it waits
{
	echo "INSERT INTO pw.t (c) VALUES (97);"
	sleep 2
} | mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B -n >"$T/gone.out" 2>&1 &
gp=$!
wait_until 5 bash -c "[ \$($MYSTEERCTL --socket $T/admin.sock --json status | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[\"pool\"][\"db1\"][\"waiting\"])') -ge 2 ]" >/dev/null
waiting2=$(db1 waiting)
kill -KILL "$gp"
wait "$gp" 2>/dev/null
ms=$(wait_until 5 bash -c "[ \$($MYSTEERCTL --socket $T/admin.sock --json status | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[\"pool\"][\"db1\"][\"waiting\"])') -eq 1 ]")
left=$?
measured "a second waiter killed while waiting: waiting $waiting2 before, 1 again after $ms ms"
check_eq "two sessions waited at once" 2 "$waiting2"
check "a client that disconnects while waiting leaves the queue" [ "$left" -eq 0 ]
wait "$tp"
err="ERROR 1040 (HY000) at line 1: mysteer: no connection to db1 free within $BOUND_MS ms (pool_max_per_backend = $CAP)"
waited=$(($(cat "$T/to.out.end") - $(cat "$T/to.out.start")))
t1=$(db1 wait_timeouts)
measured "a wait past the bound: the client's session lasted $waited ms (bound $BOUND_MS ms); wait_timeouts +$((t1 - t0)); its output: $(grep -v -- '^-*$' "$T/to.out" | tr '\n' '|')"
check_eq "the timed-out statement got the ERR naming the backend, the bound and the cap" 1 "$(grep -cFx "$err" "$T/to.out")"
check_eq "then the same session answered SELECT 1 and SELECT 2 + 2" "1 4" "$(tail -n 2 "$T/to.out" | tr '\n' ' ' | sed 's/ $//')"
check "the wait lasted the bound ($waited ms)" [ "$waited" -ge $((BOUND_MS - 300)) -a "$waited" -lt $((BOUND_MS * 3)) ]
# the daemon's own account of that wait: it ends at the bound, not at the
# 250 ms sweep after it (the worker's epoll sleeps until the oldest wait's end)
dwait=$(sed -n 's/.*a session of app waited \([0-9]*\) ms for db1: ERR.*/\1/p' "$T/mysteerd.log" | tail -n 1)
measured "the daemon ended that wait after ${dwait:-?} ms (bound $BOUND_MS ms)"
check "the daemon ended the wait at its bound, not before ($dwait ms)" \
	[ "${dwait:-0}" -ge $BOUND_MS -a "${dwait:-0}" -lt $((BOUND_MS * 3)) ]
check_eq "wait_timeouts counted it" 1 $((t1 - t0))
fails=0
for pid in "${hp[@]}"; do wait "$pid" || fails=$((fails + 1)); done
check_eq "the holding transactions committed" "0 2" "$fails $(sql_root $P1 "SELECT COUNT(*) FROM pw.t WHERE c IN (101, 102)")"
check_eq "neither the timed-out INSERT nor the abandoned one ran" 0 "$(sql_root $P1 "SELECT COUNT(*) FROM pw.t WHERE c IN (97, 99)")"
check_eq "nobody waits now" 0 "$(db1 waiting)"
check_eq "waits counted the timed-out and the abandoned session" 2 $(($(db1 waits) - w1))

out=$(ctl status)
echo "$out" | sed -n '/^POOL/,$p' | sed 's/^/# /'
check "mysteerctl status prints OPEN MAX WAITING WAITS TIMEOUTS READERS in the POOL table" \
	grep -q "^POOL *IDLE *IN_USE *OPENED *REUSED *OPEN *MAX *WAITING *WAITS *TIMEOUTS *READERS" <<<"$out"
check "the db1 row shows max $CAP and 1 timeout" \
	bash -c "echo \"\$1\" | awk '/^POOL/{f=1;next} f&&\$1==\"db1\"{n=1; ok=(\$7==$CAP && \$10==1)} END{exit !(n&&ok)}'" _ "$out"
check "a write through 6450 goes through after the waits" p "INSERT INTO pw.t (c) VALUES (5)"
check "mysteerd still runs" kill -0 "$ITEST_DAEMON_PID"
itest_daemon_stop
check "no sanitizer report in the daemon's log" bash -c "! grep -i 'sanitizer\|runtime error' '$T/mysteerd.log'"
itest_done
