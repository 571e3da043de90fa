#!/usr/bin/env bash
# proxy_ab.sh - one side of an A/B run of the 6450 proxy, for the hand-written
# sections of docs/BENCHMARKS.md: a sandbox and a mysteerd of their own (the
# integration tests' lib.sh: private network and mount namespaces, stopped at
# exit), sysbench on 8 threads through 6450, and per round the QPS, the p99
# of an event and the CPU (clock ticks) of every mysteerd thread that used
# more than 0.2 s, by thread name, and how many sessions read from each
# backend halfway through. Run it alternately with the settings to
# compare; it asserts nothing.
#
#   AB_PROXY_EXTRA   lines for [proxy] (e.g. "workers = 1")
#   AB_STEER_EXTRA   lines for [steer] (e.g. "reader_policy = least_conn")
#   AB_NICE          renice every mysteerd thread to this after start
#   AB_CTL           a mysteerctl command to run first (e.g. "disable db3")
#   AB_WORKLOAD      oltp_read_only (default, with --skip_trx=on) or oltp_point_select
#   AB_ROUNDS, AB_SECS   rounds (default 3) of AB_SECS seconds (default 4)
#
#   BUILD=build tests/bench/proxy_ab.sh; AB_PROXY_EXTRA="workers = 1" BUILD=build tests/bench/proxy_ab.sh
. "$(dirname "$0")/../integration/lib.sh"
itest_init proxy_ab
itest_sandbox_up
ITEST_LOG_LEVEL=warn ITEST_PROXY_EXTRA="${AB_PROXY_EXTRA:-}" ITEST_STEER_EXTRA="${AB_STEER_EXTRA:-}" \
	itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1

sb_args=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-user=app --mysql-password=app
	--mysql-db=sbtest --tables=4 --table-size=10000)
sql "$P1" "CREATE DATABASE IF NOT EXISTS sbtest" || exit 1
sysbench oltp_read_only "${sb_args[@]}" --mysql-port="$P1" prepare >/dev/null || exit 1
wait_until 10 test "$(sql "$P3" 'SELECT COUNT(*) FROM sbtest.sbtest4')" = 10000 >/dev/null
if [ -n "${AB_CTL:-}" ]; then
	# shellcheck disable=SC2086 # a mysteerctl command line, split on purpose
	ctl $AB_CTL || exit 1
	sleep 1
fi
if [ -n "${AB_NICE:-}" ]; then
	for t in /proc/"$ITEST_DAEMON_PID"/task/*; do renice -n "$AB_NICE" -p "${t##*/}" >/dev/null; done
fi

threads_cpu() { # "name ticks" of every mysteerd thread, by tid
	local t
	for t in /proc/"$ITEST_DAEMON_PID"/task/*; do
		echo "${t##*/} $(cat "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"
	done | sort
}
for r in $(seq "${AB_ROUNDS:-3}"); do
	threads_cpu >"$T/before"
	# sessions reading from each backend, halfway through the run
	(sleep $((${AB_SECS:-4} / 2)) && ctl --json status >"$T/mid.json") &
	mid=$!
	out=$(sysbench "${AB_WORKLOAD:-oltp_read_only}" "${sb_args[@]}" --mysql-port=6450 --threads=8 \
		--time="${AB_SECS:-4}" --percentile=99 --report-interval=0 --rand-type=uniform \
		--skip_trx=on run 2>&1)
	threads_cpu >"$T/after"
	qps=$(awk '/queries:/ {gsub(/\(/, "", $3); print $3}' <<<"$out")
	p99=$(awk '/99th percentile:/ {print $3}' <<<"$out")
	cpu=$(join "$T/before" "$T/after" | awk '$5 - $3 > 20 {printf "%s=%d ", $2, $5 - $3}')
	wait "$mid"
	readers=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))["pool"]
print("/".join(str(d[n]["readers"]) for n in sorted(d)))' "$T/mid.json")
	echo "round $r qps=$qps p99_ms=$p99 readers(db1/db2/db3)=$readers thread_ticks: $cpu"
done
itest_done
