#!/usr/bin/env bash
# profile.sh - CPU, context switches and syscalls per query (or per
# connection) of every process on a bench path, for docs/BENCHMARKS.md's
# hand-written profile sections. Runs inside a paused bench (the processes
# and ports are bench.sh's):
#
#   BENCH_PAUSE=1 BENCH_PATHS=proxy BENCH_WORKLOADS=ps8 BENCH_ROUNDS=1 make bench
#   # bench.sh prints "paused (pid P): touch SCRATCH/go to continue"; then
#   nsenter -t P -n -m -- env SCRATCH=SCRATCH BUILD=$PWD/build \
#       tests/bench/profile.sh LABEL PORT ps8|conn4 SECONDS [stat|record|none]
#   # (clients of the relay namespace: add
#   #  nsenter --net=/run/netns/mysteer-bench-relay-P -- after the first nsenter)
#
# ps8 is sysbench oltp_point_select on 8 threads, conn4 is connrate on 4
# threads, against 127.0.0.1:PORT. Before and after the run it reads utime,
# stime and (non)voluntary context switches of every thread of mysteerd (both
# daemons), HAProxy (both) and the three mariadbd from /proc, and a few
# SHOW GLOBAL STATUS counters of each server; the client's CPU is perf stat
# task-clock of the client command. Meanwhile, on the main mysteerd (or on
# PROFILE_TARGET: relay_mysteerd, haproxy or haproxy_veth): `stat`
# counts context switches and syscalls by type (perf stat with syscall
# tracepoints), `record` samples stacks (perf record -e cpu-clock -g; read
# it with tests/bench/perf_cats.awk). Results in $PROFILE_OUT/LABEL (default
# /tmp/mysteer-profile), and a per-operation summary on stdout. It starts
# only the client and perf, and waits for both.
set -u
[ $# -ge 4 ] || { sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//;$d'; exit 2; }
label=$1 port=$2 kind=$3 secs=$4 mode=${5:-stat}
: "${SCRATCH:?SCRATCH: scratch dir of the paused bench}" "${BUILD:?BUILD: the build dir}"
out=${PROFILE_OUT:-/tmp/mysteer-profile}/$label
mkdir -p "$out" || exit 1

# PIDs by their config file in the run's unique scratch dir (looked up, never
# signalled).
pid_of() { pgrep -f -- "$1" | head -n 1; }
DPID=$(pid_of "$SCRATCH/mysteerd/mysteer.conf")
RPID=$(pid_of "$SCRATCH/mysteerd-relay/mysteer.conf")
HPID=$(pid_of "$SCRATCH/haproxy.cfg")
HVPID=$(pid_of "$SCRATCH/haproxy-veth.cfg")
procs=("mysteerd:$DPID" "relay_mysteerd:$RPID" "haproxy:$HPID" "haproxy_veth:$HVPID")
for p in 3306 3307 3308; do procs+=("mariadbd$p:$(cat "$SCRATCH/sandbox/$p/mysqld.pid" 2>/dev/null)"); done
target=${PROFILE_TARGET:-mysteerd}
TPID=
for e in "${procs[@]}"; do [ "${e%%:*}" = "$target" ] && TPID=${e#*:}; done
[ -n "$TPID" ] || { echo "profile: no running $target" >&2; exit 1; }

ctx_switches() { # pid -> voluntary nonvoluntary, summed over its threads
	cat /proc/"$1"/task/*/status 2>/dev/null |
		awk '/^voluntary_ctxt/ {v += $2} /^nonvoluntary_ctxt/ {n += $2} END {print v + 0, n + 0}'
}

snap() { # file
	local e name pid
	{
		for e in "${procs[@]}"; do
			name=${e%%:*} pid=${e#*:}
			[ -n "$pid" ] && [ -d "/proc/$pid" ] || continue
			# utime stime of the whole process; context switches summed over threads
			echo "$name $(awk '{print $14, $15}' "/proc/$pid/stat") $(ctx_switches "$pid")"
		done
		echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
		for p in 3306 3307 3308; do
			mariadb --no-defaults -uroot -S "$SCRATCH/sandbox/$p/mysqld.sock" -N -B -e \
				"SHOW GLOBAL STATUS WHERE Variable_name IN ('Connections','Queries','Com_select','Com_stmt_execute')" |
				sed "s/^/status$p /"
		done
	} >"$1"
}

if [ "$kind" = ps8 ]; then
	cmd=(sysbench oltp_point_select --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port"
		--mysql-user=app --mysql-password=app --mysql-db=sbtest --tables=4 --table-size=10000
		--threads=8 --time="$secs" --percentile=99 --report-interval=0 --rand-type=uniform run)
else
	cmd=("$BUILD/connrate" -h 127.0.0.1 -P "$port" -t 4 -s "$secs")
fi
events=task-clock,context-switches,cpu-migrations,raw_syscalls:sys_enter
for s in recvfrom sendto recvmsg sendmsg read write splice epoll_wait epoll_ctl accept4 close connect socket setsockopt \
	getsockopt futex getrandom fcntl; do
	events=$events,syscalls:sys_enter_$s
done

snap "$out/before"
perf stat -x, -e task-clock -o "$out/client.cpu" -- "${cmd[@]}" >"$out/client.out" 2>&1 &
cpid=$!
sleep 0.5
case "$mode" in
stat) perf stat -e "$events" -p "$TPID" -o "$out/perfstat.txt" -- sleep $((secs - 1)) ;;
record) perf record -e cpu-clock -F 4000 -g -p "$TPID" -o "$out/perf.data" -- sleep $((secs - 1)) 2>"$out/record.err" ;;
esac
wait $cpid
snap "$out/after"

n=$(awk '/queries:/ {print $2} /^connrate / {for (i = 2; i <= NF; i++) {split($i, kv, "="); if (kv[1] == "conns") print kv[2]}}' "$out/client.out")
[ -n "$n" ] && [ "$n" -gt 0 ] || { echo "profile: the client failed, see $out/client.out" >&2; exit 1; }
ccpu=$(awk -F, '/task-clock/ {print $1}' "$out/client.cpu")
{
	echo "== $label: $kind on port $port, $secs s: $n operations ($(awk -v n="$n" -v s="$secs" 'BEGIN {printf "%.0f", n / s}')/s)"
	awk -v c="$ccpu" -v n="$n" 'BEGIN {printf "  %-15s cpu=%5.2fs = %6.1f us/op\n", "client", c / 1000, c * 1000 / n}'
	# ticks are 1/100 s
	paste "$out/before" "$out/after" | awk -v n="$n" '
		$1 == "load" {print "  load average before:", $2, $3, $4, " after:", $6, $7, $8; next}
		$1 ~ /^status/ {if ($6 - $3) printf "  %s %-16s +%d = %.3f/op\n", $1, $2, $6 - $3, ($6 - $3) / n; next}
		{c = ($7 + $8) - ($2 + $3)
		 if (c < 2) next # idle during the run
		 printf "  %-15s cpu=%5.2fs (user %4.2f sys %4.2f) = %6.1f us/op, ctx switches vol %d invol %d = %.2f/op\n",
			$1, c / 100, ($7 - $2) / 100, ($8 - $3) / 100, c * 10000 / n, $9 - $4, $10 - $5, ($9 - $4 + $10 - $5) / n}'
	if [ -f "$out/perfstat.txt" ]; then
		# perf stat covered secs-1 s of the run: per op at the run's mean rate
		awk -v n="$n" -v s="$secs" -v t="$target" '$2 ~ /^(raw_syscalls|syscalls|context-switches)/ {
			gsub(/,/, "", $1); r = $1 / (n / s * (s - 1))
			if (r >= 0.005) printf "  %s %-32s %.2f/op\n", t, $2, r}' "$out/perfstat.txt"
	fi
} | tee "$out/summary.txt"
