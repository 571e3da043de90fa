#!/usr/bin/env bash
# bench.sh - `make bench`: what each way of reaching the servers costs, side by
# side in one run, against the same servers.
#
# Paths: direct (client -> server port), haproxy (Debian's HAProxy 2.6, TCP
# mode, the L4 balancer people use today), haproxy_veth (the same HAProxy
# placed where the relay's mysteerd runs: second namespace, backends across
# the veth pair, client in that namespace; the like-for-like baseline of the
# relay) and every mysteer path that exists when the bench runs: steer
# (cgroup connect4), lookup (sk_lookup local handoff), relay (sk_lookup to
# mysteerd's relay, local_handoff = off), proxy (the 6450 protocol proxy) and
# proxy_tls (the same proxy with sysbench's clients on TLS, --mysql-ssl=on:
# the cost of TLS side by side; sysbench workloads only, ps8 alone in
# BENCH_QUICK, since connrate speaks no TLS).
# A path whose mysteerd part does not work is reported "not built", never
# measured through something else.
#
# Everything runs in a network and mount namespace of its own (servers,
# routers, clients), so fixed ports never clash with other sandboxes; all that
# it starts is stopped by PID on exit, also on failure and Ctrl-C.
#
# Method: warm-up, then R rounds; in each round every workload runs on every
# path in turn (A B C A B C ...), so drift hits all paths alike. Reported:
# medians, min-max, and each path's ratio to `direct` of the same round.
# With the 6450 path: the cost of a /metrics scrape each second under ps8
# (measure_scrape_cost: 2 x 6 s quick, 2 x 15 s full), a row of the targets.
#
# Output: bench/results/<date>.csv (raw), the generated section of
# docs/BENCHMARKS.md and docs/bench-{qps,latency}.png. BENCH_QUICK=1 (CI) is a
# short smoke run and writes only under $BUILD/bench, never over the
# committed full-run docs. Exit status is non-zero only when the harness
# itself fails; a missed performance target is a MISS row, not a failure.
#
# Environment: BUILD (build dir, default build), BENCH_QUICK=1, BENCH_ROUNDS,
# BENCH_TIME (seconds per sysbench run), BENCH_KEEP=1 (keep the scratch dir),
# BENCH_OUT (where the quick run writes), BENCH_LOG_LEVEL (mysteerd's),
# BENCH_PAUSE=1 (wait after setup, to inspect it), BENCH_PATHS (paths to
# measure besides direct, e.g. "haproxy haproxy_veth relay"), BENCH_WORKLOADS
# (e.g. "ps8"). A focused run (BENCH_PATHS/BENCH_WORKLOADS set) is written
# like a quick one, never over the committed full-run docs.
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
QUICK=${BENCH_QUICK:-0}

die() {
	echo "bench: $*" >&2
	exit 1
}
say() { echo "bench: $*" >&2; }

# Re-run inside a private network + mount namespace: fixed ports (3306...,
# 6446, 16446) are ours there, and the bpffs we mount disappears with it.
if [ -z "${BENCH_INNER:-}" ]; then
	[ "$(id -u)" -eq 0 ] || die "must run as root (namespaces, cgroups, eBPF)"
	export BENCH_INNER=1 BUILD
	exec unshare --net --mount --propagation private -- "$0" "$@"
fi

START_TS=$(date +%s)
STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
SCRATCH=$(mktemp -d /tmp/mysteer-bench.XXXXXX) || die "mktemp failed"
export SANDBOX_DIR=$SCRATCH/sandbox
export SANDBOX_BASE_PORT=3306
WRITER=3306
RELAY_NS=mysteer-bench-relay-$$
CGROUP=""
RELAY_CGROUP=""
PIDS=()
# The process that carries a path's traffic in userspace (HAProxy, mysteerd),
# whose CPU time a run is charged: none for direct.
declare -A ROUTER_PID=()
# Each router's CPU time per second with no traffic (mysteerd's probes,
# HAProxy's health checks), in ns: taken off the runs, so that what is
# charged to the queries is what they cost.
declare -A IDLE_NS_PER_S=()
CLK_TCK=$(getconf CLK_TCK)

if [ "$QUICK" = 1 ]; then
	ROUNDS=${BENCH_ROUNDS:-1}
	TIME=${BENCH_TIME:-2}
	CONN_TIME=1
	TABLES=2 ROWS=2000
	WORKLOADS=${BENCH_WORKLOADS:-ps8 ps1 conn4}
	OUT=${BENCH_OUT:-$BUILD/bench}
	IDLE_CONNS=1000
else
	# More short rounds rather than few long ones: the noise on a shared
	# machine comes in bursts, and the median of per-round ratios absorbs it.
	ROUNDS=${BENCH_ROUNDS:-4}
	TIME=${BENCH_TIME:-3}
	CONN_TIME=2
	TABLES=4 ROWS=10000
	WORKLOADS=${BENCH_WORKLOADS:-ps8 ro8 ps1 conn4 rw8}
	OUT=""
	IDLE_CONNS=10000
fi
ALL_PATHS="haproxy haproxy_veth steer lookup relay proxy proxy_tls"
PATHS=${BENCH_PATHS:-$ALL_PATHS}
# A partial run (some paths or workloads only) must not replace the full
# run's tables: it publishes the way the quick run does (under $BUILD/bench
# unless BENCH_OUT says otherwise) and skips the classifier.
PARTIAL=0
MODE=$([ "$QUICK" = 1 ] && echo quick || echo full)
if [ -n "${BENCH_PATHS:-}${BENCH_WORKLOADS:-}" ]; then
	PARTIAL=1
	MODE=partial
	OUT=${BENCH_OUT:-$BUILD/bench}
	IDLE_CONNS=1000
fi
for p in $PATHS; do
	case " $ALL_PATHS " in *" $p "*) ;; *) die "BENCH_PATHS: unknown path '$p' (known: $ALL_PATHS)" ;; esac
done
for w in $WORKLOADS; do
	case "$w" in ps8 | ro8 | ps1 | conn4 | rw8) ;; *) die "BENCH_WORKLOADS: unknown workload '$w'" ;; esac
done
CSV=$SCRATCH/raw.csv

# ---------------------------------------------------------------- cleanup

stop_pid() { # pid: TERM, then KILL after 5 s
	local pid=$1 i
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

# Our cgroups hold only clients we started (an interrupted sysbench may still
# run): stop them by PID, then remove the cgroup.
empty_cgroup() { # path
	local pid i
	for i in $(seq 1 30); do
		[ -s "$1/cgroup.procs" ] || break
		while read -r pid; do kill -TERM "$pid" 2>/dev/null; done <"$1/cgroup.procs"
		sleep 0.1
	done
	rmdir "$1" 2>/dev/null || say "could not remove cgroup $1"
}

stray_pids() {
	local d
	for d in /proc/[0-9]*; do
		[ "${d#/proc/}" = $$ ] && continue
		tr '\0' ' ' 2>/dev/null <"$d/cmdline" | grep -qF -- "$SCRATCH/" && echo "${d#/proc/}"
	done
}

cleanup() {
	local rc=$? i cg pid
	trap - EXIT INT TERM
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${PIDS[$i]}"; done
	"$ROOT/scripts/sandbox.sh" down >/dev/null 2>&1 || say "sandbox down failed ($SANDBOX_DIR)"
	# Safety net: anything still running with our scratch dir on its command
	# line is ours (the dir name is unique to this run).
	for pid in $(stray_pids); do
		say "stopping stray process $pid: $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | cut -c1-80)"
		stop_pid "$pid"
	done
	for cg in "$CGROUP" "$RELAY_CGROUP"; do
		[ -n "$cg" ] && [ -d "$cg" ] && empty_cgroup "$cg"
	done
	ip netns del "$RELAY_NS" 2>/dev/null
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		say "scratch kept: $SCRATCH"
	else
		rm -rf "$SCRATCH"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'say interrupted; exit 130' INT TERM

# ---------------------------------------------------------------- helpers

csv() { # round path workload threads metric value
	echo "$1,$2,$3,$4,$5,$6" >>"$CSV"
}

meta() { # key value
	echo "# $1=$2" >>"$CSV"
}

sql_root() { # port query
	mariadb --no-defaults -uroot -S "$SANDBOX_DIR/$1/mysqld.sock" -N -B -e "$2"
}

# ---------------------------------------------------------------- cost

# CPU time of a process, all its threads, in ns: the first field of each
# thread's schedstat (time on a CPU), exact where /proc/PID/stat counts
# 10 ms ticks. Threads come and go rarely in a router (the relay's and the
# proxy's workers live as long as the daemon); 0 for no process.
cpu_ns() { # pid
	[ -n "$1" ] || { echo 0; return; }
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'
}

# Measures each router's idle CPU rate (IDLE_NS_PER_S) over a quiet spell.
measure_idle_cpu() {
	local path pid secs=2 t0 t1 c0 c1
	[ "$QUICK" = 1 ] && secs=1
	declare -A start_ns=() start_t=()
	for path in "${!ROUTER_PID[@]}"; do
		pid=${ROUTER_PID[$path]}
		[ -n "${start_ns[$pid]:-}" ] && continue
		start_ns[$pid]=$(cpu_ns "$pid") start_t[$pid]=$(date +%s%N)
	done
	sleep "$secs"
	for path in "${!ROUTER_PID[@]}"; do
		pid=${ROUTER_PID[$path]}
		c1=$(cpu_ns "$pid") t1=$(date +%s%N)
		c0=${start_ns[$pid]} t0=${start_t[$pid]}
		IDLE_NS_PER_S[$path]=$(awk -v c="$((c1 - c0))" -v t="$((t1 - t0))" 'BEGIN {printf "%.0f", (t > 0 ? c * 1e9 / t : 0)}')
		meta "idle_cpu_$path" "$(awk -v r="${IDLE_NS_PER_S[$path]}" 'BEGIN {printf "%.2f%% of a core", r / 1e7}')"
	done
}

# Busy time of the whole machine in ns (every core; idle and iowait left out).
machine_ns() {
	awk -v hz="$CLK_TCK" '$1 == "cpu" {printf "%.0f\n", ($2 + $3 + $4 + $7 + $8 + $9) * 1e9 / hz; exit}' /proc/stat
}

# perf stat of the router over one run, in the full run only: context
# switches, system calls (the raw_syscalls tracepoint) and task clock
# always, cycles and instructions where the machine has hardware counters
# (this kind of VM has none: perf says "not supported", and the CSV then has
# no such rows; the callgrind step below counts instructions instead).
PERF_EVENTS=task-clock,context-switches,cpu-migrations,raw_syscalls:sys_enter,cycles,instructions
perf_start() { # pid outfile
	PERF_PID=
	[ "$QUICK" = 1 ] || [ -z "$1" ] || ! command -v perf >/dev/null && return 0
	perf stat -x, -e "$PERF_EVENTS" -p "$1" -o "$2" >/dev/null 2>&1 &
	PERF_PID=$!
}
perf_stop() { # outfile: sets PERF_LINES, "event value" a line
	PERF_LINES=
	[ -n "$PERF_PID" ] || return 0
	kill -INT "$PERF_PID" 2>/dev/null
	wait "$PERF_PID" 2>/dev/null
	PERF_LINES=$(awk -F, '$1 ~ /^[0-9.]+$/ {print $3, $1}' "$1")
}

# The run's cost, as CSV rows: router and machine CPU per unit (query or
# connection) in µs, and perf's counts per unit.
cost_rows() { # round path workload threads unit count r0 r1 m0 m1 perf_lines wall_ns
	local round=$1 path=$2 wl=$3 thr=$4 unit=$5 n=$6 r0=$7 r1=$8 m0=$9 m1=${10} perf=${11} wall=${12}
	local idle=${IDLE_NS_PER_S[$path]:-0}
	awk -v n="$n" 'BEGIN {exit !(n > 0)}' || return 0
	# the router's CPU net of what it spends idle over the same time
	csv "$round" "$path" "$wl" "$thr" "router_us_per_$unit" \
		"$(awk -v a="$r0" -v b="$r1" -v n="$n" -v i="$idle" -v w="$wall" 'BEGIN {printf "%.2f", (b - a - i * w / 1e9) / 1000 / n}')"
	csv "$round" "$path" "$wl" "$thr" "machine_us_per_$unit" \
		"$(awk -v a="$m0" -v b="$m1" -v n="$n" 'BEGIN {printf "%.2f", (b - a) / 1000 / n}')"
	[ -n "$perf" ] || return 0
	while read -r ev val; do
		[ -n "$ev" ] || continue
		[ "$ev" = raw_syscalls:sys_enter ] && ev=syscalls
		csv "$round" "$path" "$wl" "$thr" "router_${ev//-/_}_per_$unit" \
			"$(awk -v v="$val" -v n="$n" 'BEGIN {printf "%.3f", v / n}')"
	done <<<"$perf"
}

# nsenter, not `ip netns exec`: the latter remounts /sys, which would hide
# our bpffs and the cgroup2 mount from the relay's mysteerd.
in_relay_ns() {
	nsenter --net="/run/netns/$RELAY_NS" -- "$@"
}

# Runs a command as a client of a path: in the steered cgroup, in the relay
# namespace, or plainly.
client() { # path cmd...
	local path=$1
	shift
	case "$path" in
	steer) (echo "$BASHPID" >"$CGROUP/cgroup.procs" && exec "$@") ;;
	relay | haproxy_veth) in_relay_ns "$@" ;;
	*) "$@" ;;
	esac
}

path_port() { # path -> the rw port a client of that path connects to
	case "$1" in
	direct) echo $WRITER ;;
	haproxy | haproxy_veth) echo 16446 ;;
	steer | lookup | relay) echo 6446 ;;
	proxy | proxy_tls) echo 6450 ;;
	esac
}

ask() { # path port query -> first column of the answer
	client "$1" mariadb --no-defaults -h127.0.0.1 -P"$2" -uapp -papp -N -B \
		--connect-timeout=3 -e "$3" 2>/dev/null
}

wait_port() { # port [ns-path]: until something accepts TCP on 127.0.0.1:port
	local i
	for i in $(seq 1 100); do
		client "${2:-direct}" bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# Replicas must have applied everything before a read is timed, or their SQL
# threads compete with the measurement for the same two cores.
catch_up() {
	local pos p
	pos=$(sql_root $WRITER "SELECT @@gtid_binlog_pos") || return 1
	[ -n "$pos" ] || return 0
	for p in 3307 3308; do
		sql_root $p "SELECT MASTER_GTID_WAIT('$pos', 60)" >/dev/null || return 1
	done
}

# ---------------------------------------------------------------- setup

setup_netns() {
	ip link set lo up || die "cannot bring up lo"
	# Connect storms leave sockets in TIME_WAIT; these sysctls belong to our
	# namespace only. Ephemeral ports stay above every fixed port we use.
	sysctl -qw net.ipv4.ip_local_port_range="20000 65000" || true
	sysctl -qw net.ipv4.tcp_tw_reuse=1 || true
	ulimit -n 65536 2>/dev/null || ulimit -n 20000 2>/dev/null || true
}

setup_sandbox() {
	say "starting the sandbox servers ($SANDBOX_DIR)"
	"$ROOT/scripts/sandbox.sh" up || die "sandbox.sh up failed"
	say "preparing sysbench tables ($TABLES tables x $ROWS rows)"
	sysbench oltp_common --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$WRITER \
		--mysql-user=app --mysql-password=app --mysql-db=sbtest --tables=$TABLES \
		--table-size=$ROWS --threads=$TABLES prepare >"$SCRATCH/prepare.log" 2>&1 ||
		{ tail -n 20 "$SCRATCH/prepare.log" >&2; die "sysbench prepare failed"; }
	catch_up || die "replicas did not catch up after prepare"
}

write_haproxy_conf() { # file backend_host
	cat >"$1" <<-EOF
		# generated by scripts/bench.sh: the L4 baseline, TCP mode
		global
		    maxconn 9000
		    nbthread 2
		defaults
		    mode tcp
		    timeout connect 5s
		    timeout client 1h
		    timeout server 1h
		    option dontlognull
		frontend rw
		    bind 127.0.0.1:16446
		    default_backend writer
		frontend ro
		    bind 127.0.0.1:16447
		    default_backend readers
		backend writer
		    option mysql-check user haproxy post-41
		    server db1 $2:3306 check inter 1s
		backend readers
		    balance roundrobin
		    option mysql-check user haproxy post-41
		    server db2 $2:3307 check inter 1s
		    server db3 $2:3308 check inter 1s
	EOF
	haproxy -c -q -f "$1" || die "haproxy rejected its config ($1)"
}

# The read-only frontend is not measured (all L4 paths use the writer), but a
# config that does not balance the replicas would be a wrong baseline.
check_haproxy_ro() { # path
	local i got
	for i in $(seq 1 30); do
		got=$(ask "$1" 16447 "SELECT @@port")
		case "$got" in 3307 | 3308) return 0 ;; esac
		sleep 0.2
	done
	say "warning: $1's read-only frontend answered '${got:-nothing}', not a replica"
}

setup_haproxy() {
	local cfg=$SCRATCH/haproxy.cfg
	write_haproxy_conf "$cfg" 127.0.0.1
	haproxy -db -f "$cfg" >"$SCRATCH/haproxy.log" 2>&1 &
	PIDS+=($!)
	ROUTER_PID[haproxy]=$!
	wait_port 16446 || die "haproxy does not listen (log: $SCRATCH/haproxy.log)"
	check_haproxy_ro haproxy
}

# The relay's namespace: a second network namespace linked to ours by a veth
# pair (10.231.0.1 here, 10.231.0.2 there), so that the servers are remote to
# what runs in it, as a relay's backends are. The relay mysteerd and the
# haproxy_veth baseline both sit in it, and their clients run in it too.
RELAY_NET=0
setup_relay_ns() {
	ip netns add "$RELAY_NS" || return 0
	ip link add mbr0 type veth peer name mbr1 netns "$RELAY_NS" || return 0
	ip addr add 10.231.0.1/30 dev mbr0 && ip link set mbr0 up || return 0
	in_relay_ns sh -c 'ip link set lo up && ip addr add 10.231.0.2/30 dev mbr1 &&
		ip link set mbr1 up && sysctl -qw net.ipv4.ip_local_port_range="20000 65000" &&
		sysctl -qw net.ipv4.tcp_tw_reuse=1' || return 0
	RELAY_NET=1
}

# HAProxy exactly where the relay's mysteerd is: same namespace, same veth
# hops to the same servers, clients connecting to 127.0.0.1 in that namespace
# as the relay's do. Same config as the loopback one but for the server
# address, so relay / haproxy_veth compares the two relays and nothing else.
HAPROXY_VETH=0
setup_haproxy_veth() {
	local cfg=$SCRATCH/haproxy-veth.cfg
	[ $RELAY_NET = 1 ] || return 0
	write_haproxy_conf "$cfg" 10.231.0.1
	# nsenter execs haproxy: $! is HAProxy's PID, stopped by cleanup.
	nsenter --net="/run/netns/$RELAY_NS" -- haproxy -db -f "$cfg" \
		>"$SCRATCH/haproxy-veth.log" 2>&1 &
	PIDS+=($!)
	ROUTER_PID[haproxy_veth]=$!
	if wait_port 16446 haproxy_veth; then
		HAPROXY_VETH=1
		check_haproxy_ro haproxy_veth
	else
		say "haproxy in the relay namespace does not listen (log: $SCRATCH/haproxy-veth.log)"
	fi
}

write_daemon_conf() { # file dir cgroup local_handoff backend_host
	cat >"$1" <<-EOF
		# generated by scripts/bench.sh
		[mysteerd]
		admin_socket = $2/admin.sock
		state_file = $2/state
		bpffs_dir = /sys/fs/bpf/$(basename "$2")
		log_level = ${BENCH_LOG_LEVEL:-warn}
		[probe]
		interval_ms = 200
		user = mysteer
		password = mysteer
		[steer]
		vip = 127.0.0.1
		cgroup = $3
		lookup = on
		local_handoff = $4
		[route:rw]
		port = 6446
		role = writer
		[route:ro]
		port = 6447
		role = reader
		[route:split]
		port = 6450
		role = split
		[backend:db1]
		host = $5
		port = 3306
		priority = 100
		[backend:db2]
		host = $5
		port = 3307
		priority = 200
		[backend:db3]
		host = $5
		port = 3308
		priority = 300
		[user:app]
		password = app
		[proxy]
		tls_cert = $SANDBOX_DIR/tls/server-cert.pem
		tls_key = $SANDBOX_DIR/tls/server-key.pem
	EOF
}

# Waits until mysteerd reports a writer (the maps are then published).
wait_writer() { # dir [netns]
	local i out
	for i in $(seq 1 50); do
		if [ -n "${2:-}" ]; then
			out=$(in_relay_ns "$BUILD/mysteerctl" --socket "$1/admin.sock" --json status 2>/dev/null)
		else
			out=$("$BUILD/mysteerctl" --socket "$1/admin.sock" --json status 2>/dev/null)
		fi
		grep -q '"writer": *"db1"' <<<"$out" && return 0
		sleep 0.2
	done
	return 1
}

MAIN_DAEMON=0
RELAY_DAEMON=0

setup_mysteerd() {
	local d=$SCRATCH/mysteerd
	if [ ! -x "$BUILD/mysteerd" ] || [ ! -x "$BUILD/mysteerctl" ]; then
		say "mysteerd/mysteerctl not built: mysteer paths are reported not built"
		return 0
	fi
	mkdir -p /sys/fs/bpf
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || {
		say "cannot mount bpffs"
		return 0
	}
	local cg2
	cg2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
	if [ -n "$cg2" ]; then
		CGROUP=$cg2/mysteer-bench-$$
		mkdir "$CGROUP" || CGROUP=""
	fi
	mkdir -p "$d" "$SCRATCH/sbssl"
	# the proxy_tls path's client files (the sandbox's test CA)
	cp "$SANDBOX_DIR/tls/client-key.pem" "$SANDBOX_DIR/tls/client-cert.pem" "$SCRATCH/sbssl/" &&
		cp "$SANDBOX_DIR/tls/ca.pem" "$SCRATCH/sbssl/cacert.pem" ||
		say "no sandbox certificates: proxy_tls will not be built"
	write_daemon_conf "$d/mysteer.conf" "$d" "$CGROUP" on 127.0.0.1
	chmod 600 "$d/mysteer.conf"
	"$BUILD/mysteerd" -c "$d/mysteer.conf" -f >"$d/log" 2>&1 &
	PIDS+=($!)
	ROUTER_PID[steer]=$! ROUTER_PID[lookup]=$! ROUTER_PID[proxy]=$! ROUTER_PID[proxy_tls]=$!
	if wait_writer "$d"; then
		MAIN_DAEMON=1
	else
		say "mysteerd did not report a writer; its log ends:"
		tail -n 5 "$d/log" >&2
	fi
	setup_relay_daemon
}

# The relay path needs local_handoff = off and its own sk_lookup, so a second
# mysteerd runs in the relay namespace (setup_relay_ns): the servers are
# remote to it, as a relay's backends are.
setup_relay_daemon() {
	local d=$SCRATCH/mysteerd-relay
	[ $RELAY_NET = 1 ] || return 0
	mkdir -p "$d"
	# Its own (empty) cgroup too: the daemon publishes its routes only with
	# steering on, and the relay path must be the full daemon, not a subset.
	if [ -n "$CGROUP" ]; then
		RELAY_CGROUP=${CGROUP%/*}/mysteer-bench-relay-$$
		mkdir "$RELAY_CGROUP" || RELAY_CGROUP=""
	fi
	write_daemon_conf "$d/mysteer.conf" "$d" "$RELAY_CGROUP" off 10.231.0.1
	chmod 600 "$d/mysteer.conf"
	# nsenter itself, not a shell function, in the background: it execs
	# mysteerd, so $! is the daemon's PID and cleanup stops the daemon.
	nsenter --net="/run/netns/$RELAY_NS" -- "$BUILD/mysteerd" -c "$d/mysteer.conf" -f \
		>"$d/log" 2>&1 &
	PIDS+=($!)
	ROUTER_PID[relay]=$!
	if wait_writer "$d" "$RELAY_NS"; then
		RELAY_DAEMON=1
	else
		say "relay mysteerd did not report a writer; its log ends:"
		tail -n 5 "$d/log" >&2
	fi
}

# ---------------------------------------------------------------- path checks

# Counts established sockets whose local port is $1 [owned by process $2]
# (the server side of a connection that sk_lookup handed to a listener keeps
# the service port, so its owner tells a handoff from a userspace relay).
sockets_on() { # port [process name] [path whose namespace to look in]
	client "${3:-direct}" ss -tnpH state established "( sport = :$1 )" 2>/dev/null |
		grep -c -- "${2:+\"$2\"}"
}

# A path is measured only when it demonstrably works the way it claims:
# the query lands on the writer, and for steer/lookup the kernel (not a
# proxy or the other program) did it.
check_path() { # path -> 0 when usable; prints the reason otherwise
	local path=$1 port got held n m
	port=$(path_port "$path")
	case "$path" in
	steer | lookup | proxy | proxy_tls) [ $MAIN_DAEMON = 1 ] || { echo "mysteerd not running"; return 1; } ;;
	relay) [ $RELAY_DAEMON = 1 ] || { echo "relay mysteerd not running"; return 1; } ;;
	haproxy_veth) [ $HAPROXY_VETH = 1 ] || { echo "no HAProxy in the relay namespace"; return 1; } ;;
	esac
	[ "$path" = steer ] && [ -z "$CGROUP" ] && { echo "no cgroup"; return 1; }
	if [ "$path" = proxy_tls ]; then
		# the client's TLS session to 6450, the server's certificate verified
		got=$(mariadb --no-defaults -h127.0.0.1 -P"$port" -uapp -papp --connect-timeout=3 \
			--ssl --ssl-ca="$SANDBOX_DIR/tls/ca.pem" --ssl-verify-server-cert -e status 2>&1 |
			awk -F'\t+' '/^SSL:/ {print $2}')
		grep -q "Cipher in use" <<<"$got" && [ -s "$SCRATCH/sbssl/cacert.pem" ] && return 0
		echo "no TLS session through $port ('${got:-no answer}')"
		return 1
	fi
	if [ "$path" = proxy ]; then
		got=$(ask "$path" "$port" "SELECT @@port")
		case "$got" in 3306 | 3307 | 3308) return 0 ;; esac
		echo "SELECT @@port through $port gave '${got:-no answer}'"
		return 1
	fi
	# Hold one connection open while looking at the sockets.
	client "$path" mariadb --no-defaults -h127.0.0.1 -P"$port" -uapp -papp -N -B \
		--connect-timeout=3 -e "SELECT @@port; SELECT SLEEP(1)" >"$SCRATCH/check.out" 2>&1 &
	held=$!
	sleep 0.5
	case "$path" in
	steer) n=$(sockets_on "$port") ;;
	lookup) n=$(sockets_on "$port" mariadbd) ;;
	relay) n=$(sockets_on "$port" mysteerd relay) ;;
	haproxy_veth)
		# HAProxy's client side in the relay namespace, and its server side
		# across the veth pair (a query, not a health check: 3306 is held).
		n=$(sockets_on "$port" haproxy haproxy_veth)
		m=$(in_relay_ns ss -tnpH state established "( dst 10.231.0.1 and dport = :$WRITER )" 2>/dev/null |
			grep -c '"haproxy"')
		;;
	esac
	wait $held
	got=$(head -n 1 "$SCRATCH/check.out")
	[ "$got" = $WRITER ] || {
		echo "SELECT @@port through $port gave '${got:-no answer}'"
		return 1
	}
	case "$path" in
	steer) [ "$n" -eq 0 ] || {
		echo "connection reached port $port (not rewritten at connect)"
		return 1
	} ;;
	lookup) [ "$n" -gt 0 ] || {
		echo "no mariadbd socket on port $port (not an sk_lookup handoff)"
		return 1
	} ;;
	relay) [ "$n" -gt 0 ] || {
		echo "no mysteerd socket on port $port (not relayed)"
		return 1
	} ;;
	haproxy_veth) [ "$n" -gt 0 ] && [ "$m" -gt 0 ] || {
		echo "no haproxy socket on $port in the relay namespace ($n) or to 10.231.0.1:$WRITER ($m)"
		return 1
	} ;;
	esac
	return 0
}

# ---------------------------------------------------------------- workloads

# Prints "qps tps avg_ms p99_ms errors queries" of one sysbench run.
run_sysbench() { # path test threads seconds [extra args]
	local path=$1 test=$2 threads=$3 secs=$4 port out dir=. ssl=()
	shift 4
	port=$(path_port "$path")
	# sysbench 1.0's --mysql-ssl=on takes client-key.pem, client-cert.pem
	# and cacert.pem from its working directory
	[ "$path" = proxy_tls ] && dir=$SCRATCH/sbssl ssl=(--mysql-ssl=on)
	out=$(cd "$dir" && client "$path" sysbench "$test" --db-driver=mysql --mysql-host=127.0.0.1 \
		--mysql-port="$port" --mysql-user=app --mysql-password=app --mysql-db=sbtest \
		--tables=$TABLES --table-size=$ROWS --threads="$threads" --time="$secs" \
		--percentile=99 --report-interval=0 --rand-type=uniform "${ssl[@]}" "$@" run 2>&1)
	local rc=$?
	echo "$out" >>"$SCRATCH/sysbench.log"
	[ $rc -eq 0 ] || return 1
	awk '/queries:/ {n = $2; gsub(/\(/, "", $3); q = $3}
	     /transactions:/ {gsub(/\(/, "", $3); t = $3}
	     /ignored errors:/ {e = $3}
	     /avg:/ {a = $2}
	     /99th percentile:/ {p = $3}
	     END {if (q == "") exit 1; printf "%s %s %s %s %s %s\n", q, t, a, p, e + 0, n}' <<<"$out"
}

# Prints "rate p50_us p99_us errors conns" of one connrate run.
run_connrate() { # path threads seconds
	local out port
	port=$(path_port "$1")
	out=$(client "$1" "$BUILD/connrate" -h 127.0.0.1 -P "$port" -t "$2" -s "$3" 2>&1)
	echo "$out" >>"$SCRATCH/connrate.log"
	awk '/^connrate / {for (i = 2; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}
	     printf "%s %s %s %s %s\n", v["rate"], v["p50_us"], v["p99_us"], v["errors"], v["conns"]; ok = 1}
	     END {exit !ok}' <<<"$out"
}

# One measurement: runs workload $2 on path $1, writes CSV rows, prints the
# progress line. Fails only when the tool itself failed.
measure() { # path workload round
	local path=$1 wl=$2 round=$3 r extra=() r0 r1 m0 m1 w0 w1 perf router
	router=${ROUTER_PID[$path]:-}
	perf_start "$router" "$SCRATCH/perf.out"
	r0=$(cpu_ns "$router") m0=$(machine_ns) w0=$(date +%s%N)
	case "$wl" in
	ps8 | ps1 | ro8 | rw8)
		local test threads=8
		case "$wl" in
		ps8) test=oltp_point_select ;;
		ps1) test=oltp_point_select threads=1 ;;
		ro8) test=oltp_read_only extra=(--skip_trx=on) ;;
		rw8) test=oltp_read_write ;;
		esac
		r=$(run_sysbench "$path" $test $threads "$TIME" "${extra[@]}")
		local rc=$?
		r1=$(cpu_ns "$router") m1=$(machine_ns) w1=$(date +%s%N)
		perf_stop "$SCRATCH/perf.out"
		perf=$PERF_LINES
		[ $rc -eq 0 ] || {
			say "round $round path=$path workload=$wl FAILED (see sysbench.log)"
			csv "$round" "$path" "$wl" $threads status failed
			return 1
		}
		read -r qps tps avg p99 err nq <<<"$r"
		csv "$round" "$path" "$wl" $threads qps "$qps"
		cost_rows "$round" "$path" "$wl" $threads q "$nq" "$r0" "$r1" "$m0" "$m1" "$perf" $((w1 - w0))
		csv "$round" "$path" "$wl" $threads tps "$tps"
		csv "$round" "$path" "$wl" $threads lat_avg_ms "$avg"
		csv "$round" "$path" "$wl" $threads lat_p99_ms "$p99"
		csv "$round" "$path" "$wl" $threads errors "$err"
		printf 'bench: round %s %-12s %-5s qps=%-10s avg_ms=%-6s p99_ms=%-6s errors=%s router_us/q=%s\n' \
			"$round" "$path" "$wl" "$qps" "$avg" "$p99" "$err" \
			"$(awk -v a="$r0" -v b="$r1" -v n="$nq" -v i="${IDLE_NS_PER_S[$path]:-0}" -v w=$((w1 - w0)) \
				'BEGIN {printf "%.1f", (n > 0 ? (b - a - i * w / 1e9) / 1000 / n : 0)}')"
		[ "$wl" = rw8 ] && { catch_up || say "replicas slow to catch up"; }
		;;
	conn4)
		r=$(run_connrate "$path" 4 "$CONN_TIME")
		local rc=$?
		r1=$(cpu_ns "$router") m1=$(machine_ns) w1=$(date +%s%N)
		perf_stop "$SCRATCH/perf.out"
		perf=$PERF_LINES
		[ $rc -eq 0 ] || {
			say "round $round path=$path workload=$wl FAILED (see connrate.log)"
			csv "$round" "$path" "$wl" 4 status failed
			return 1
		}
		read -r rate p50 p99 err nc <<<"$r"
		csv "$round" "$path" "$wl" 4 conns_per_s "$rate"
		cost_rows "$round" "$path" "$wl" 4 conn "$nc" "$r0" "$r1" "$m0" "$m1" "$perf" $((w1 - w0))
		csv "$round" "$path" "$wl" 4 conn_p50_us "$p50"
		csv "$round" "$path" "$wl" 4 conn_p99_us "$p99"
		csv "$round" "$path" "$wl" 4 errors "$err"
		printf 'bench: round %s %-12s %-5s conns/s=%-9s p50_us=%-6s p99_us=%-6s errors=%s\n' \
			"$round" "$path" "$wl" "$rate" "$p50" "$p99" "$err"
		;;
	esac
	return 0
}

# CPU ns of the threads of a process that have one of these names (comm).
threads_cpu_ns() { # pid name...
	local pid=$1 t
	shift
	for t in /proc/"$pid"/task/*; do
		local c
		c=$(cat "$t/comm" 2>/dev/null) || continue
		for n in "$@"; do
			[ "$c" = "$n" ] && cut -d' ' -f1 "$t/schedstat" 2>/dev/null
		done
	done | awk '{s += $1} END {printf "%.0f\n", s}'
}

# The cost of a Prometheus scrape under load (issue 19): the 6450 proxy
# carries ps8 twice for SECS, without and then with a GET /metrics each
# second. A scrape is rendered on mysteerd's loop thread (comm mysteerd) and
# served by libmicrohttpd's (MHD-single); the proxy's workers carry the
# queries. So the scrape's cost is what those two threads spend more per
# second with scraping, divided by the scrapes; the whole process's CPU with
# and without is reported beside it (that one moves with the load's noise).
measure_scrape_cost() { # pid
	local pid=$1 secs=$([ "$QUICK" = 1 ] && echo 6 || echo 15) url=http://127.0.0.1:9470/metrics
	local mode sb n p0 p1 s0 s1 w0 w1 wall_on us
	declare -A proc=() serv=() scrapes=()
	curl -sf -o /dev/null --max-time 5 "$url" || {
		say "scrape cost: no /metrics on $url"
		return 1
	}
	for mode in off on; do
		p0=$(cpu_ns "$pid") s0=$(threads_cpu_ns "$pid" mysteerd MHD-single) w0=$(date +%s%N)
		run_sysbench proxy oltp_point_select 8 "$secs" >/dev/null &
		sb=$!
		n=0
		if [ $mode = on ]; then
			while kill -0 $sb 2>/dev/null; do
				curl -sf -o /dev/null --max-time 5 "$url" && n=$((n + 1))
				sleep 1
			done
		fi
		wait $sb || {
			say "scrape cost: sysbench failed (see sysbench.log)"
			return 1
		}
		p1=$(cpu_ns "$pid") s1=$(threads_cpu_ns "$pid" mysteerd MHD-single) w1=$(date +%s%N)
		proc[$mode]=$(awk -v c=$((p1 - p0)) -v w=$((w1 - w0)) 'BEGIN {printf "%.0f", c * 1e9 / w}')
		serv[$mode]=$(awk -v c=$((s1 - s0)) -v w=$((w1 - w0)) 'BEGIN {printf "%.0f", c * 1e9 / w}')
		scrapes[$mode]=$n
		[ $mode = on ] && wall_on=$((w1 - w0))
	done
	[ "${scrapes[on]}" -gt 0 ] || {
		say "scrape cost: no scrape answered"
		return 1
	}
	# (extra ns/s of the serving threads) x seconds / scrapes
	us=$(awk -v a="${serv[off]}" -v b="${serv[on]}" -v w="$wall_on" -v n="${scrapes[on]}" \
		'BEGIN {d = (b - a) * (w / 1e9) / n / 1000; printf "%.0f", d < 0 ? 0 : d}')
	meta scrape_secs "$secs"
	meta scrape_count "${scrapes[on]}"
	meta scrape_us_per_scrape "$us"
	meta scrape_pct_core_at_1s "$(awk -v u="$us" 'BEGIN {printf "%.3f", u / 1e4}')"
	meta scrape_cpu_without "$(awk -v r="${proc[off]}" 'BEGIN {printf "%.1f%% of a core", r / 1e7}')"
	meta scrape_cpu_with "$(awk -v r="${proc[on]}" 'BEGIN {printf "%.1f%% of a core", r / 1e7}')"
	say "scrape cost: $us us of CPU per /metrics scrape under ps8 load (${scrapes[on]} scrapes in $((wall_on / 1000000000)) s; $(awk -v u="$us" 'BEGIN {printf "%.3f", u / 1e4}')% of a core at 1 s); mysteerd $(awk -v r="${proc[off]}" 'BEGIN {printf "%.1f", r / 1e7}')% of a core without scraping, $(awk -v r="${proc[on]}" 'BEGIN {printf "%.1f", r / 1e7}')% with"
}

# 10,000 idle clients on 6450 (issue 6): the daemon's RSS while they are open.
measure_idle_rss() {
	local pid=$1 fifo=$SCRATCH/idle.fifo holder line rss
	mkfifo "$fifo" || return 1
	"$BUILD/connrate" -h 127.0.0.1 -P 6450 -i "$IDLE_CONNS" <"$fifo" >"$SCRATCH/idle.out" 2>&1 &
	holder=$!
	PIDS+=($holder)
	exec 7>"$fifo"
	for _ in $(seq 1 600); do
		grep -q '^idle ' "$SCRATCH/idle.out" && break
		kill -0 $holder 2>/dev/null || break
		sleep 0.1
	done
	line=$(grep '^idle ' "$SCRATCH/idle.out")
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
	exec 7>&-
	wait $holder 2>/dev/null
	[ -n "$line" ] && [ -n "$rss" ] || return 1
	local open=${line#idle open=}
	open=${open%% *}
	csv 0 proxy idle 1 idle_conns "$open"
	csv 0 proxy idle 1 rss_mb "$(awk -v k="$rss" 'BEGIN {printf "%.1f", k / 1024}')"
	say "idle: $open client connections open on 6450, mysteerd RSS $((rss / 1024)) MB"
}

run_classifier() {
	local cb=$BUILD/classify-bench args=()
	if [ ! -x "$cb" ]; then
		say "classify-bench not built"
		csv 0 classifier all 1 status not_built
		return 0
	fi
	if [ $PARTIAL = 1 ]; then
		csv 0 classifier all 1 status skipped
		return 0
	fi
	[ "$QUICK" = 1 ] && args=(--quick)
	"$cb" "${args[@]}" >"$SCRATCH/classify.out" 2>"$SCRATCH/classify.err" || {
		say "classify-bench failed (exit $?)"
		tail -n 5 "$SCRATCH/classify.err" >&2
		csv 0 classifier all 1 status failed
		return 0
	}
	# classifier,<mix>,<impl>,<stmts_per_s>,<mb_per_s>
	awk -F, '$1 == "classifier" && NF >= 5 {
		printf "0,classifier:%s,%s,1,stmts_per_s,%s\n", $3, $2, $4
		printf "0,classifier:%s,%s,1,mb_per_s,%s\n", $3, $2, $5
		printf "bench: classifier %-10s %-10s stmts/s=%s MB/s=%s\n", $2, $3, $4, $5 > "/dev/stderr"
	}' "$SCRATCH/classify.out" >>"$CSV"
	run_classifier_process
}

# The whole mysteer-classify process against a small PCRE2 program applying the
# regex rules, both reading the same file of sysbench statements (issue 4):
# best of several runs, so start-up and I/O count for both alike.
run_classifier_process() {
	local cb=$BUILD/classify-bench ours=$BUILD/mysteer-classify theirs=$BUILD/regex-classify
	local n=200000 reps=5 file=$SCRATCH/statements.sql impl bin best t0 t1 bytes
	[ -x "$ours" ] && [ -x "$theirs" ] || { say "mysteer-classify/regex-classify not built"; return 0; }
	[ "$QUICK" = 1 ] && reps=2
	"$cb" --write-file "$file" "$n" >/dev/null 2>&1 || { say "classify-bench --write-file failed"; return 0; }
	bytes=$(stat -c %s "$file")
	for impl in mysteer-classify regex-classify; do
		bin=$ours
		[ "$impl" = regex-classify ] && bin=$theirs
		best=
		for _ in $(seq 1 "$reps"); do
			t0=$(date +%s%N)
			"$bin" <"$file" >/dev/null || { say "$impl failed on $file"; return 0; }
			t1=$(date +%s%N)
			if [ -z "$best" ] || [ $((t1 - t0)) -lt "$best" ]; then best=$((t1 - t0)); fi
		done
		awk -v n="$n" -v b="$bytes" -v ns="$best" -v impl="$impl" 'BEGIN {
			printf "0,classifier:%s,file-200k,1,stmts_per_s,%.0f\n", impl, n / (ns / 1e9)
			printf "0,classifier:%s,file-200k,1,mb_per_s,%.1f\n", impl, b / 1e6 / (ns / 1e9)
			printf "bench: classifier process %-16s %d statements in %.1f ms\n", impl, n, ns / 1e6 > "/dev/stderr"
		}' >>"$CSV"
	done
}


# ---------------------------------------------------------------- instructions

# Instructions per query of the userspace routers, counted by callgrind
# (valgrind): exact and repeatable whatever else the machine does, where
# this VM's perf has no hardware counters. Each router runs alone under
# callgrind with one thread on a port of its own: HAProxy (nbthread 1) and
# the 6450 engine (build/tests/proxy_run, workers = 1, nothing kept warm).
# A run of N1 and one of N2 single-thread point selects; (Ir(N2) - Ir(N1)) /
# (N2 - N1) leaves start-up and the login out. Full run only (BENCH_INSTR=1
# asks for it in any run).
INSTR_N1=300 INSTR_N2=1300
callgrind_ir() { # outfile -> total instructions
	awk '/^(summary|totals):/ {print $2; exit}' "$1"
}

# Runs "$@" under callgrind, waits for PORT, runs N point selects through it
# and prints the instructions the whole run took.
instr_run() { # tag port n cmd...
	local tag=$1 port=$2 n=$3 vpid out=$SCRATCH/callgrind.$1.$3
	shift 3
	valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >"$SCRATCH/valgrind.$tag.$n.log" 2>&1 &
	vpid=$!
	PIDS+=($vpid)
	for _ in $(seq 1 300); do
		bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null && break
		sleep 0.1
	done
	sysbench oltp_point_select --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" \
		--mysql-user=app --mysql-password=app --mysql-db=sbtest --tables=$TABLES \
		--table-size=$ROWS --threads=1 --events="$n" --time=0 --rand-type=uniform run \
		>>"$SCRATCH/sysbench-instr.log" 2>&1 || say "instructions: sysbench through $tag failed"
	kill -TERM $vpid 2>/dev/null
	wait $vpid 2>/dev/null
	[ -s "$out" ] && callgrind_ir "$out"
}

measure_instructions() {
	local want=${BENCH_INSTR:-$([ "$MODE" = full ] && echo 1 || echo 0)} ir1 ir2 tag
	[ "$want" = 1 ] || return 0
	command -v valgrind >/dev/null || { say "instructions: no valgrind"; return 0; }
	local hcfg=$SCRATCH/haproxy-instr.cfg pcfg=$SCRATCH/proxy-instr.conf
	write_haproxy_conf "$hcfg" 127.0.0.1
	sed -i 's/nbthread 2/nbthread 1/; s/127.0.0.1:16446/127.0.0.1:26446/; s/127.0.0.1:16447/127.0.0.1:26447/' "$hcfg"
	if [ -x "$BUILD/tests/proxy_run" ]; then
		write_daemon_conf "$pcfg" "$SCRATCH/proxy-instr" "" on 127.0.0.1
		sed -i 's/^port = 6450$/port = 26450/; s/^\[proxy\]$//' "$pcfg"
		printf '[proxy]\nworkers = 1\npool_min_idle = 0\n' >>"$pcfg"
		chmod 600 "$pcfg"
	fi
	for tag in haproxy proxy; do
		local cmd=() port
		case $tag in
		haproxy) cmd=(haproxy -db -f "$hcfg") port=26446 ;;
		proxy)
			[ -x "$BUILD/tests/proxy_run" ] || continue
			cmd=("$BUILD/tests/proxy_run" -c "$pcfg" -w db1 -r db2,db3) port=26450
			;;
		esac
		ir1=$(instr_run $tag $port $INSTR_N1 "${cmd[@]}")
		ir2=$(instr_run $tag $port $INSTR_N2 "${cmd[@]}")
		if [ -z "$ir1" ] || [ -z "$ir2" ]; then
			say "instructions: $tag not measured (logs: $SCRATCH/valgrind.$tag.*)"
			continue
		fi
		csv 0 "$tag" ps1 1 router_instructions_per_q \
			"$(awk -v a="$ir1" -v b="$ir2" -v n=$((INSTR_N2 - INSTR_N1)) 'BEGIN {printf "%.0f", (b - a) / n}')"
		say "instructions: $tag $(awk -v a="$ir1" -v b="$ir2" -v n=$((INSTR_N2 - INSTR_N1)) 'BEGIN {printf "%.0f", (b - a) / n}') per point select (callgrind, $INSTR_N1 and $INSTR_N2 queries)"
	done
}

# ---------------------------------------------------------------- main

main() {
	local p why path wl round
	setup_netns
	echo "round,path,workload,threads,metric,value" >"$CSV"
	meta date "$STAMP"
	meta mode "$MODE"
	meta nproc "$(nproc)"
	meta kernel "$(uname -r)"
	meta cpu "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
	meta loadavg_start "$(cut -d' ' -f1-3 /proc/loadavg)"
	meta shared_cores "client, servers and routers all share these $(nproc) cores"
	meta mariadb "$(mariadbd --version 2>/dev/null | awk '{print $3}')"
	meta haproxy "$(haproxy -v | awk 'NR == 1 {print $3}')"
	meta sysbench "$(sysbench --version | awk '{print $2}')"
	meta rounds "$ROUNDS"
	meta seconds_per_run "$TIME"
	meta tables "$TABLES tables x $ROWS rows"
	meta git "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo -dirty)"

	[ -x "$BUILD/connrate" ] || die "$BUILD/connrate missing (run make)"
	if awk '{exit !($1 > 1.0)}' /proc/loadavg; then
		say "warning: load average $(cut -d' ' -f1 /proc/loadavg): something else runs, figures will be noisy"
	fi
	# the relay's namespace first: the servers listen on its veth address
	# (10.231.0.1) besides loopback, and that address must exist by then
	setup_relay_ns
	[ "$RELAY_NET" = 1 ] && export SANDBOX_BIND=10.231.0.1
	setup_sandbox
	setup_haproxy
	setup_haproxy_veth
	setup_mysteerd

	# BENCH_PAUSE=1: stop here so the setup can be inspected from inside
	# (nsenter -t <bench pid> -n -m); touch the named file to go on.
	if [ -n "${BENCH_PAUSE:-}" ]; then
		say "paused (pid $$): touch $SCRATCH/go to continue"
		while [ ! -e "$SCRATCH/go" ]; do sleep 1; done
	fi

	local paths=(direct)
	for p in $ALL_PATHS; do
		if [[ " $PATHS " != *" $p "* ]]; then
			csv 0 "$p" all 0 status skipped
			continue
		fi
		if why=$(check_path "$p"); then
			paths+=("$p")
		else
			say "path $p: not built ($why)"
			csv 0 "$p" all 0 status not_built
			meta "not_built_$p" "$why"
		fi
	done
	say "paths measured: ${paths[*]}; workloads: $WORKLOADS; rounds: $ROUNDS"

	# Warm-up: buffer pools, HAProxy and proxy pools. A path that cannot run
	# sysbench at all is dropped and reported, the harness goes on.
	say "warm-up"
	local ok=()
	for path in "${paths[@]}"; do
		if run_sysbench "$path" oltp_point_select 8 1 >/dev/null; then
			ok+=("$path")
		else
			[ "$path" = direct ] && die "warm-up on direct failed (log: $SCRATCH/sysbench.log)"
			say "path $path: warm-up failed, not measured"
			tail -n 5 "$SCRATCH/sysbench.log" >&2
			csv 0 "$path" all 0 status failed
			meta "not_built_$path" "sysbench warm-up failed"
		fi
	done
	paths=("${ok[@]}")
	measure_idle_cpu

	for round in $(seq 1 "$ROUNDS"); do
		meta "loadavg_round_$round" "$(cut -d' ' -f1-3 /proc/loadavg)"
		for wl in $WORKLOADS; do
			for path in "${paths[@]}"; do
				if [ "$path" = proxy_tls ]; then
					[ "$wl" = conn4 ] && continue # connrate speaks no TLS
					[ "$QUICK" = 1 ] && [ "$wl" != ps8 ] && continue
				fi
				measure "$path" "$wl" "$round"
			done
		done
	done

	measure_instructions
	if [[ " ${paths[*]} " == *" proxy "* ]]; then
		measure_scrape_cost "$(pgrep_daemon)" || say "scrape cost not measured"
		measure_idle_rss "$(pgrep_daemon)" || say "idle-connection RSS not measured"
	fi
	run_classifier

	meta loadavg_end "$(cut -d' ' -f1-3 /proc/loadavg)"
	meta elapsed_s "$(($(date +%s) - START_TS))"
	publish
}

# PID of the main mysteerd: the first one we started.
pgrep_daemon() {
	local pid
	for pid in "${PIDS[@]}"; do
		tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "$SCRATCH/mysteerd/" && {
			echo "$pid"
			return
		}
	done
}

publish() {
	local csv_out md_out qps_png lat_png cost_png report
	if [ "$MODE" != full ]; then
		mkdir -p "$OUT" || die "cannot create $OUT"
		csv_out=$OUT/$STAMP-$MODE.csv
		md_out=$OUT/BENCHMARKS-$MODE.md
		qps_png=$OUT/bench-qps.png
		lat_png=$OUT/bench-latency.png
		cost_png=$OUT/bench-cost.png
	else
		mkdir -p "$ROOT/bench/results" || die "cannot create bench/results"
		csv_out=$ROOT/bench/results/$STAMP.csv
		md_out=$ROOT/docs/BENCHMARKS.md
		qps_png=$ROOT/docs/bench-qps.png
		lat_png=$ROOT/docs/bench-latency.png
		cost_png=$ROOT/docs/bench-cost.png
	fi
	cp "$CSV" "$csv_out" || die "cannot write $csv_out"
	report=$SCRATCH/report.md
	gawk -v csvname="${csv_out#"$ROOT"/}" -f "$ROOT/tests/bench/report.awk" \
		-v datdir="$SCRATCH" "$CSV" >"$report" || die "report generation failed"
	gnuplot -e "datdir='$SCRATCH'; qps_png='$qps_png'; lat_png='$lat_png'; cost_png='$cost_png'" \
		"$ROOT/tests/bench/plot.gp" 2>"$SCRATCH/gnuplot.err" ||
		{ cat "$SCRATCH/gnuplot.err" >&2; die "gnuplot failed"; }
	splice_report "$report" "$md_out"
	say "raw: $csv_out"
	say "report: $md_out; plots: $qps_png $lat_png $cost_png"
	sed -n '/^## Results/,/^## How to reproduce/p' "$report" | head -n -1
}

# Replaces the generated part of BENCHMARKS.md (between the markers) and
# keeps every section other helpers wrote around it.
splice_report() { # report target
	local begin='<!-- bench.sh: generated, begin -->' end='<!-- bench.sh: generated, end -->'
	local tmp=$2.tmp.$$
	if [ ! -f "$2" ] || ! grep -qF "$begin" "$2"; then
		{
			[ -f "$2" ] && cat "$2" && echo
			[ -f "$2" ] || printf '# Benchmarks\n\n'
			echo "$begin"
			cat "$1"
			echo "$end"
		} >"$tmp"
	else
		awk -v b="$begin" -v e="$end" -v rep="$1" '
			$0 == b {print; while ((getline l < rep) > 0) print l; skip = 1; next}
			$0 == e {skip = 0}
			!skip {print}' "$2" >"$tmp"
	fi
	mv "$tmp" "$2"
}

main "$@"
