#!/usr/bin/env bash
# proxy_fair.sh - waits for a backend at its pool_max_per_backend cap are
# first come, first served over all the proxy's workers, not only within
# one. Under mysteerd with workers = 2, pool_max_per_backend = 2,
# pool_min_idle = 0, one reader (db2), a 3 s wait bound
# (pool_wait_timeout_ms) and the debug log (which names the worker of
# each client port): 14 sessions, 12 placed on worker 0 and 2 on worker 1
# (proxy_fair, libmysqlclient, reconnects until SO_REUSEPORT's hash gives
# that split), each send 25 times SELECT SLEEP(0.05) at once. A clean read
# hands its connection back at once, so the sessions take turns on db2's 2
# slots. (A write keeps the writer connection until a statement goes
# elsewhere: not a queue.) In one queue a statement waits for the other
# sessions' turns, 14 / 2 x 50 ms: no ERR 1040, 99% of statements take
# under 1.5 times that, and the sessions of both workers wait alike.
# (Before, each worker's waiters took about half of the freed connections
# whatever their number: worker 1's ran at once, worker 0's waited about
# twice the fair turn.) Run with BUILD=<asan build> for the ASan daemon.
. "$(dirname "$0")/lib.sh"
itest_init proxy_fair
itest_sandbox_up

PP=6450
CAP=2
BOUND_MS=${FAIR_BOUND_MS:-3000}
SESSIONS=${FAIR_SESSIONS:-14}
N0=${FAIR_N0:-12} # of them on worker 0, the rest on worker 1
STMTS=${FAIR_STMTS:-25}
SLEEP_MS=50
SLEEP_S=0.05
# one queue: a statement waits for the others' turns, SESSIONS / CAP
# statements of SLEEP_MS each, its own included
FAIR_MS=$((SESSIONS * SLEEP_MS / CAP))
ITEST_LOG_LEVEL=debug ITEST_BACKENDS="1 2" ITEST_PROXY_EXTRA="workers = 2
pool_min_idle = 0
pool_max_per_backend = $CAP
pool_wait_timeout_ms = $BOUND_MS" itest_write_config "$T/mysteer.conf"
ITEST_LOG_LEVEL=debug itest_daemon_start "$T/mysteer.conf" || {
	itest_done
	exit 1
}

db2() { status_json | json_get "d['pool']['db2']['$1']"; }
wait_until 15 bash -c "[ \"\$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B -e 'SELECT @@port' 2>/dev/null)\" != '' ]" >/dev/null
Q="SELECT SLEEP($SLEEP_S)"
wait_until 15 bash -c "[ \"\$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B -e 'SELECT @@port' 2>/dev/null)\" = $P2 ]" >/dev/null
check_eq "reads go to db2, the only reader" "$P2" "$(sql $PP 'SELECT @@port')"
w0=$(db2 waits) t0=$(db2 wait_timeouts)

"$ITEST_BUILD/tests/proxy_fair" $PP app app $SESSIONS $STMTS "$Q" "$T/mysteerd.log" $N0 \
	>"$T/fair.out" 2>"$T/fair.err"
rc=$?
sed 's/^/# /' "$T/fair.out" "$T/fair.err"
read -r ok e1040 other max p50 p99 < <(awk '/^total:/{for (i = 1; i < NF; i++) v[$i] = $(i + 1);
	print v["ok"], v["err1040"], v["other"], v["max_ms"], v["p50_ms"], v["p99_ms"]}' "$T/fair.out")
hit=$(awk '/^session/{for (i = 1; i < NF; i++) if ($i == "err1040" && $(i + 1) > 0) n++} END{print n + 0}' "$T/fair.out")
# per worker: mean and longest statement time
read -r m0 x0 m1 x1 < <(awk '/^worker/{m[$2 + 0] = $8; x[$2 + 0] = $10} END{print m[0] + 0, x[0] + 0, m[1] + 0, x[1] + 0}' "$T/fair.out")
w1=$(db2 waits) t1=$(db2 wait_timeouts)
measured "$SESSIONS sessions ($N0 on worker 0, $((SESSIONS - N0)) on worker 1) x $STMTS SELECT SLEEP($SLEEP_S), cap $CAP, bound $BOUND_MS ms, fair turn $FAIR_MS ms: ok $ok, ERR 1040 $e1040 (in $hit sessions), other errors $other; statement time max $max ms, p50 $p50 ms, p99 $p99 ms; worker 0 mean $m0 max $x0 ms, worker 1 mean $m1 max $x1 ms; waits +$((w1 - w0)), wait_timeouts +$((t1 - t0))"
check_eq "proxy_fair ran to the end" 0 "$rc"
check_eq "every statement answered" "$((SESSIONS * STMTS)) 0" "$ok $other"
check_eq "no wait ran out (ERR 1040), the bound being ~8 queue lengths" 0 "$e1040"
check_eq "wait_timeouts did not move" 0 $((t1 - t0))
check "sessions had to wait (the cap was reached: waits +$((w1 - w0)))" [ $((w1 - w0)) -gt 0 ]
# Before, each worker's waiters got about half the connections whatever
# their number: worker 1's 2 sessions ran at once, worker 0's 12 waited
# about twice the fair turn. The 99th percentile, not the longest: that
# is the longest but 3 of 350, and one scheduling stall of a loaded
# machine does not make a queue unfair.
check "99% of statements took under 1.5 fair turns (p99 $p99 ms, max $max ms, turn $FAIR_MS ms)" [ "${p99:-$BOUND_MS}" -lt $((FAIR_MS * 3 / 2)) ]
check "both workers' sessions waited alike (mean $m0 and $m1 ms: within 30%)" \
	[ $((m0 * 10)) -ge $((m1 * 7)) -a $((m1 * 10)) -ge $((m0 * 7)) ]
check "status open never above max" [ "$(db2 open)" -le $CAP ]
check_eq "nobody waits now" 0 "$(db2 waiting)"
check "a read through 6450 goes through after the waits" sql $PP "SELECT 1"
# no slot lost: the cap's 2 connections serve 2 sessions at once again
s0=$(date +%s%3N)
sql $PP "SELECT SLEEP(1)" >/dev/null &
sp=$!
sql $PP "SELECT SLEEP(1)" >/dev/null
wait "$sp"
both=$(($(date +%s%3N) - s0))
measured "2 reads of SLEEP(1) at once after the run: $both ms"
check "both slots serve again: 2 x SLEEP(1) at once took $both ms" [ "$both" -lt 1900 ]
check "mysteerd still runs" kill -0 "$ITEST_DAEMON_PID"
itest_daemon_stop
check "no sanitizer report in the daemon's log" bash -c "! grep -i 'sanitizer\|runtime error' '$T/mysteerd.log'"
[ -n "${FAIR_KEEP_LOG:-}" ] && cp "$T/mysteerd.log" "$FAIR_KEEP_LOG"
itest_done
