#!/usr/bin/env bash
# controller_figures.sh - the controller's figures for the closing note, logged
# as `measured:` lines: time from SIGKILL of a replica to its `down` log line
# (median of 10, at the default interval), and the daemon's CPU while probing
# 3 backends and 100 backends (the same three servers, under 100 names) for
# 10 s at interval_ms = 200. Functional checks only; speed is judged by eye.
# A non-default base port, as issue 2 asks: nothing may assume 3306.
export SANDBOX_BASE_PORT=${SANDBOX_BASE_PORT:-4306}
. "$(dirname "$0")/lib.sh"
itest_init controller_figures

export ITEST_INTERVAL_MS=200 ITEST_TIMEOUT_MS=500
CPU_SECONDS=${FIGURES_CPU_SECONDS:-10}
RUNS=${FIGURES_KILL_RUNS:-10}

bfield() { status_json | json_get "[b['$2'] for b in d['backends'] if b['name']=='$1'][0]"; }
state_is() { test "$(bfield "$1" state)" = "$2"; }
role_is() { test "$(bfield "$1" role)" = "$2"; }
all_up() { test "$(status_json | json_get "all(b['health']=='up' for b in d['backends'])")" = True; }

# CPU ticks (utime + stime) of a process.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# Milliseconds since the epoch of the last log line matching a pattern.
log_ms() { # pattern
	local ts
	ts=$(grep -- "$1" "$T/mysteerd.log" | tail -n 1 | cut -c1-23)
	[ -n "$ts" ] || return 1
	echo $(($(date -d "$ts" +%s%3N)))
}

cpu_figure() { # label
	local hz t0 t1 ms
	hz=$(getconf CLK_TCK)
	t0=$(cpu_ticks "$ITEST_DAEMON_PID")
	sleep "$CPU_SECONDS"
	t1=$(cpu_ticks "$ITEST_DAEMON_PID")
	ms=$(((t1 - t0) * 1000 / hz))
	measured "daemon CPU probing $1 for ${CPU_SECONDS}s at 200 ms: ${ms} ms" \
		"($(awk -v m="$ms" -v s="$CPU_SECONDS" 'BEGIN {printf "%.2f", m / (s * 10)}')% of one core)"
}

itest_sandbox_up
itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 15 all_up >/dev/null
check "three backends up" all_up

# --- kill -> down, median of RUNS --------------------------------------------------
times=()
for i in $(seq 1 "$RUNS"); do
	pid=$(cat "$SANDBOX_DIR/$P2/mysqld.pid")
	before=$(grep -c "db2 up -> down" "$T/mysteerd.log")
	t0=$(date +%s%3N)
	kill -KILL "$pid"
	wait_until 5 state_is db2 down >/dev/null
	if [ "$(grep -c "db2 up -> down" "$T/mysteerd.log")" -gt "$before" ]; then
		times+=($(($(log_ms "db2 up -> down") - t0)))
	fi
	# Its pid file is left behind by SIGKILL; start removes the stale one.
	sb start "$P2" >/dev/null 2>&1
	wait_until 20 role_is db2 reader >/dev/null
done
check_eq "every kill gave one down line" "$RUNS" "${#times[@]}"
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2] + a[NR/2+1]) / 2)}')
measured "kill -> down line, median of ${#times[@]}: ${median} ms (all: ${times[*]}; interval 200, timeout 500, fall 2)"
check "median within fall x interval + timeout, 3x slack" test "$median" -le 2700

# --- CPU: 3 backends ------------------------------------------------------------------
wait_until 15 all_up >/dev/null
cpu_figure "3 backends"

# --- CPU: 100 backends ------------------------------------------------------------------
itest_daemon_stop TERM
rm -f "$T/state"
{
	for i in $(seq 1 100); do
		printf '[backend:b%d]\nhost = 127.0.0.1\nport = %d\npriority = %d\n' \
			"$i" $((P1 + (i - 1) % 3)) $((100 + i))
	done
} | ITEST_BACKENDS= itest_write_config "$T/many.conf" -
itest_daemon_start "$T/many.conf" || exit 1
ms=$(wait_until 30 all_up)
check "100 backends all up (${ms} ms)" all_up
check_eq "100 backends: b1 writer" b1 "$(ctl_writer)"
check "shared addresses were warned about" grep -q "\"b1\" and \"b4\" are at one address" "$T/mysteerd.log"
cpu_figure "100 backends"

itest_done
