#!/usr/bin/env bash
# run.sh - the chaos harness: real writers and readers on every path of
# mysteerd while the cluster fails over, then a verdict from the write ledger
# and the servers (verdict.py).
#
# It runs in the namespaces of lib.sh (its own netns, private bpffs, a child
# cgroup), with a sandbox started with SANDBOX_SEMISYNC=1 and
# SANDBOX_BINLOG_FORMAT=ROW. Two phases, each with its own mysteerd:
#   handoff: connect steering (clients in the test cgroup, 6446 and 6447),
#            sk_lookup with local handoff (clients in a second netns behind a
#            veth pair, 6446), and the 6450 proxy (autocommit writes,
#            transactions, prepared statements, reads);
#   relay:   the same with local_handoff = off, so the second netns's 6446
#            connections go through the relay.
# In each phase the faults of CHAOS_FAULTS run CHAOS_REPEAT times each, in
# order, with CHAOS_GAP_S seconds between; with CHAOS_MINUTES set, faults
# are drawn at random (seeded by CHAOS_SEED, printed) with random gaps for
# that many minutes a phase instead.
#
# Faults: kill_promote (SIGKILL of the primary, then `sandbox.sh promote` of
# a replica; the old primary rejoins afterwards), switchover (`promote` with
# the old primary up: it is fenced read_only first), replica_restart
# (SIGKILL of a replica, then start), daemon_kill (SIGKILL of mysteerd,
# then start), drain (mysteerctl drain of a reader, then enable),
# replica_lag (a replica's SQL thread stopped beyond max_replication_lag_s),
# daemon_term_keep (SIGTERM with keep_on_exit = on, then start), disable
# (mysteerctl disable of a reader, then enable), replica_hang (a replica
# SIGSTOPped: it stops answering without refusing, until mysteerd marks it
# down, then SIGCONT), partition (the primary SIGSTOPped, a replica
# promoted, then the old primary resumes still writable for 3 s before it is
# fenced: writes it runs then are on a non-writer).
#
# Env: CHAOS_OUT (results dir, default $T/out: ledger-*.csv, events.csv,
# rows.tsv, mysteerd logs, results.json), CHAOS_PHASES (handoff relay),
# CHAOS_FAULTS (all phases) or CHAOS_FAULTS_handoff / CHAOS_FAULTS_relay
# (FAULT or FAULT:N for N repetitions instead of CHAOS_REPEAT),
# CHAOS_REPEAT (1), CHAOS_GAP_S (3), CHAOS_MINUTES, CHAOS_SEED,
# CHAOS_PAUSE_MS (client pause between statements, 30), CHAOS_ASAN=1 (the
# daemon of the ASan/UBSan build), CHAOS_KNOWN (invariants that fail
# because of a known bug: reported, not failed; see verdict.py),
# SANDBOX_SEMISYNC (1; 0 measures what asynchronous replication loses),
# CHAOS_STEER_EXTRA (lines added to [steer], e.g. close_on_demote = off),
# CHAOS_CLIENT_TIMEOUT_S (3: the clients' connect/read/write timeout; longer
# than a partition, so that connections to a frozen primary outlive it).
. "$(dirname "$0")/../integration/lib.sh"
export SANDBOX_SEMISYNC=${SANDBOX_SEMISYNC:-1} SANDBOX_BINLOG_FORMAT=ROW
export SANDBOX_SEMISYNC_TIMEOUT_MS=${SANDBOX_SEMISYNC_TIMEOUT_MS:-2000}
itest_init chaos

CLIENT=${CHAOS_CLIENT:-$ITEST_BUILD/chaos-client}
if [ "${CHAOS_ASAN:-0}" = 1 ]; then
	# The daemon of the ASan/UBSan build (make asan-bins): a sanitizer report
	# fails the run (lib.sh); the load client stays the plain build.
	MYSTEERD=$ITEST_BUILD/asan/mysteerd MYSTEERCTL=$ITEST_BUILD/asan/mysteerctl
	nm "$MYSTEERD" 2>/dev/null | grep -q __asan_report ||
		{ echo "not ok - no ASan build of mysteerd at $MYSTEERD (make asan-bins)"; exit 1; }
fi
HERE=$ITEST_ROOT/tests/chaos
OUT=${CHAOS_OUT:-$T/out}
mkdir -p "$OUT"
rm -f "$OUT"/ledger*.csv "$OUT"/events.csv "$OUT"/rows*.tsv "$OUT"/mysteerd-*.log
PHASES=${CHAOS_PHASES:-handoff relay}
FAULTS=${CHAOS_FAULTS:-kill_promote switchover replica_restart daemon_kill}
REPEAT=${CHAOS_REPEAT:-1}
GAP_S=${CHAOS_GAP_S:-3}
PAUSE_MS=${CHAOS_PAUSE_MS:-30}
SEED=${CHAOS_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
RANDOM=$SEED
[ -n "${CHAOS_MINUTES:-}" ] && echo "# randomized: CHAOS_MINUTES=$CHAOS_MINUTES CHAOS_SEED=$SEED"
[ -n "$ITEST_CGROUP" ] || { echo "not ok - no cgroup2 mount"; exit 1; }
[ -x "$CLIENT" ] || { echo "not ok - no $CLIENT (make)"; exit 1; }
echo "# daemon: $MYSTEERD, results: $OUT"

RTR=10.211.0.1 CLI=10.211.0.2
unshare --net sleep 100000 &
CLIPID=$!
ITEST_PIDS+=($CLIPID)
sleep 0.2
incli() { nsenter -t "$CLIPID" -n "$@"; }
incg() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$ITEST_CGROUP" "$@"; }
ip link add veth-crtr type veth peer name veth-ccli netns "$CLIPID" || { echo "not ok - veth"; exit 1; }
ip addr add $RTR/30 dev veth-crtr && ip link set veth-crtr up
incli ip link set lo up
incli ip addr add $CLI/30 dev veth-ccli && incli ip link set veth-ccli up

NETNS_INO=$(stat -L -c %i /proc/self/ns/net)
lookup_links() { # sk_lookup links attached to this test's netns
	bpftool link show 2>/dev/null | awk -v ino="$NETNS_INO" '
		/^[0-9]+: netns/ {n = 1; next}
		/^[0-9]+:/ {n = 0}
		n && /netns_ino/ {for (i = 1; i <= NF; i++) if ($i == "netns_ino" && $(i+1) == ino) c++}
		END {print c + 0}'
}
now_us() { echo $(($(date +%s%6N))); }
event() { echo "$(now_us),$PHASE,$1,$2,$3" >>"$OUT/events.csv"; } # fault rep what
port_name() { echo "db$(($1 - SANDBOX_BASE_PORT + 1))"; }
name_port() { echo $((SANDBOX_BASE_PORT + ${1#db} - 1)); }
primary_port() { cat "$SANDBOX_DIR/primary"; }
writer_is() { [ "$(ctl_writer)" = "$1" ]; }
readers_are() { [ "$(ctl_readers)" = "$1" ]; }
replicas() { local p; for p in $P1 $P2 $P3; do [ "$p" = "$(primary_port)" ] || echo "$p"; done; }
all_readers() { echo $(for p in $(replicas); do port_name "$p"; done | sort); }
settle() { # waits for the writer and both readers as the sandbox has them
	local w
	w=$(port_name "$(primary_port)")
	wait_until 60 writer_is "$w" >/dev/null || echo "# settle: writer is not $w: $(ctl_writer)"
	wait_until 60 readers_are "$(all_readers)" >/dev/null ||
		echo "# settle: readers $(ctl_readers), expected $(all_readers)"
}

itest_sandbox_up
"$CLIENT" -P "$P1" --create || { echo "not ok - create chaos.w"; exit 1; }

LOADPIDS=() ALLLOAD=()
load() { # phase-offset path where(cg|cli|host) host port mode [extra args]
	local base=$1 path=$2 where=$3 host=$4 port=$5 mode=$6 run=()
	shift 6
	# The background job must be the client itself (exec all the way), so
	# that load_stop's SIGTERM reaches it and it writes its ledger out.
	case $where in
	cg) run=(bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$ITEST_CGROUP") ;;
	cli) run=(nsenter -t "$CLIPID" -n) ;;
	esac
	"${run[@]}" "$CLIENT" -h "$host" -P "$port" --path "$path" --mode "$mode" \
		--writer-base "$base" --pause-ms "$PAUSE_MS" --timeout-s "${CHAOS_CLIENT_TIMEOUT_S:-3}" --ledger "$OUT/ledger-$base.csv" "$@" \
		>>"$OUT/clients.out" 2>&1 &
	LOADPIDS+=($!)
	ALLLOAD+=($!)
	ITEST_PIDS+=($!)
}
load_start() { # phase index
	local o=$(($1 * 1000)) net=$2
	load $((o + 100)) cs cg 127.0.0.1 6446 persistent --writers 2 --readers 0
	load $((o + 150)) cs cg 127.0.0.1 6446 perstmt --writers 1 --readers 0
	load $((o + 200)) cs cg 127.0.0.1 6446 txn --writers 1 --readers 0
	load $((o + 250)) cs-ro cg 127.0.0.1 6447 persistent --writers 0 --readers 2
	load $((o + 300)) "$net" cli $RTR 6446 persistent --writers 2 --readers 0
	load $((o + 350)) "$net" cli $RTR 6446 txn --writers 1 --readers 0
	load $((o + 400)) split host 127.0.0.1 6450 persistent --writers 2 --readers 2
	load $((o + 450)) split host 127.0.0.1 6450 txn --writers 1 --readers 0
	load $((o + 500)) split host 127.0.0.1 6450 perstmt --ps --writers 1 --readers 0
}
load_stop() {
	local p
	for p in "${LOADPIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${LOADPIDS[@]}"; do wait "$p" 2>/dev/null; done
	LOADPIDS=()
}

# --- faults ------------------------------------------------------------------
f_kill_promote() {
	local old new
	old=$(primary_port)
	new=$(replicas | head -n 1)
	event kill_promote "$REP" start
	sb kill "$old" >/dev/null 2>&1
	sleep 0.5
	sb promote "$new" >/dev/null 2>&1 || echo "# promote $new failed"
	event kill_promote "$REP" "promoted:$(port_name "$new")"
	wait_until 30 writer_is "$(port_name "$new")" >/dev/null
	sleep 1
	sb rejoin "$old" >>"$OUT/sandbox.log" 2>&1 || echo "# rejoin $old failed"
	settle
	event kill_promote "$REP" end
}
f_switchover() {
	local old new
	old=$(primary_port)
	new=$(replicas | head -n 1)
	event switchover "$REP" start
	sb promote "$new" >/dev/null 2>&1 || echo "# promote $new failed"
	event switchover "$REP" "promoted:$(port_name "$new")"
	wait_until 30 writer_is "$(port_name "$new")" >/dev/null
	sleep 1
	sb rejoin "$old" >>"$OUT/sandbox.log" 2>&1 || echo "# rejoin $old failed"
	settle
	event switchover "$REP" end
}
f_replica_restart() {
	local r
	r=$(replicas | tail -n 1)
	event replica_restart "$REP" start
	sb kill "$r" >/dev/null 2>&1
	sleep 1
	sb start "$r" >/dev/null 2>&1 || echo "# start $r failed"
	settle
	event replica_restart "$REP" end
}
f_daemon_kill() {
	event daemon_kill "$REP" start
	itest_daemon_stop KILL
	check "$PHASE: mysteerd restarts after SIGKILL ($FAULT $REP)" itest_daemon_start "$CONF"
	settle
	event daemon_kill "$REP" end
}
f_drain() {
	local r
	r=$(port_name "$(replicas | tail -n 1)")
	event drain "$REP" start
	ctl drain "$r" >/dev/null
	sleep 2
	ctl enable "$r" >/dev/null
	settle
	event drain "$REP" end
}
f_replica_lag() {
	local r
	r=$(replicas | tail -n 1)
	event replica_lag "$REP" start
	sql_root "$r" "STOP SLAVE SQL_THREAD"
	sleep 4
	sql_root "$r" "START SLAVE SQL_THREAD"
	settle
	event replica_lag "$REP" end
}

f_daemon_term_keep() { # SIGTERM with keep_on_exit = on, then start
	event daemon_term_keep "$REP" start
	sed -i 's/^log_level = .*/&\nkeep_on_exit = on/' "$CONF"
	itest_daemon_stop TERM
	sed -i '/^keep_on_exit = on$/d' "$CONF"
	check "$PHASE: mysteerd restarts after SIGTERM with keep_on_exit ($REP)" itest_daemon_start "$CONF"
	settle
	event daemon_term_keep "$REP" end
}
f_disable() {
	local r
	r=$(port_name "$(replicas | tail -n 1)")
	event disable "$REP" start
	ctl disable "$r" >/dev/null
	sleep 2
	ctl enable "$r" >/dev/null
	settle
	event disable "$REP" end
}
mariadbd_pid() { cat "$SANDBOX_DIR/$1/mysqld.pid"; }
f_replica_hang() { # a replica that stops answering without refusing (SIGSTOP)
	local r pid
	r=$(replicas | tail -n 1)
	pid=$(mariadbd_pid "$r")
	event replica_hang "$REP" start
	kill -STOP "$pid"
	wait_until 20 test "$(ctl_state "$(port_name "$r")")" = down >/dev/null
	sleep 1
	kill -CONT "$pid"
	settle
	event replica_hang "$REP" end
}
# The primary stops answering (SIGSTOP: connections hang, nothing is
# refused), a replica is promoted as if the old one were dead, and then the
# old primary comes back, still writable, before anyone fences it: every
# write it runs after the promotion is a write on a non-writer. Its rows are
# dumped (rows-*.tsv) before it is fenced and rejoins.
f_partition() {
	local old new p pid
	old=$(primary_port)
	new=$(replicas | head -n 1)
	pid=$(mariadbd_pid "$old")
	event partition "$REP" start
	kill -STOP "$pid"
	wait_until 20 test "$(ctl_state "$(port_name "$old")")" = down >/dev/null
	sql_root "$new" "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0"
	echo "$new" >"$SANDBOX_DIR/primary"
	for p in $(replicas); do
		[ "$p" = "$old" ] && continue
		sql_root "$p" "STOP SLAVE; CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$new,
			MASTER_USER='repl', MASTER_PASSWORD='repl', MASTER_USE_GTID=slave_pos,
			MASTER_CONNECT_RETRY=1; START SLAVE"
	done
	event partition "$REP" "promoted:$(port_name "$new")"
	wait_until 30 writer_is "$(port_name "$new")" >/dev/null
	kill -CONT "$pid"
	event partition "$REP" "resumed:$(port_name "$old")"
	sleep 3
	sql_root "$old" "SET GLOBAL read_only = 1"
	# Commits waiting there for a semi-sync ack go on after its timeout.
	sleep $((SANDBOX_SEMISYNC_TIMEOUT_MS / 1000 + 1))
	dump_rows "$old" "$OUT/rows-$PHASE-partition-$REP.tsv"
	sb rejoin "$old" >>"$OUT/sandbox.log" 2>&1 || echo "# rejoin $old failed"
	settle
	event partition "$REP" end
}
dump_rows() { # port file
	sql_root "$1" "SELECT writer_id, seq, executed_on, t_client_send,
		CAST(UNIX_TIMESTAMP(t_server) * 1000000 AS SIGNED) FROM chaos.w" >"$2"
}

run_fault() { # fault
	FAULT=$1
	"f_$1"
	check "$PHASE: mysteerd alive after $1 $REP" kill -0 "$ITEST_DAEMON_PID"
}

# --- phases --------------------------------------------------------------------
i=0
for PHASE in $PHASES; do
	i=$((i + 1))
	CONF=$T/mysteer-$PHASE.conf
	handoff=on
	[ "$PHASE" = relay ] && handoff=off
	ITEST_INTERVAL_MS=200 ITEST_PROBE_EXTRA="max_replication_lag_s = 2" \
		ITEST_STEER_EXTRA="vip = 127.0.0.1, $RTR
lookup = on
local_handoff = $handoff
${CHAOS_STEER_EXTRA:-}" itest_write_config "$CONF"
	: >"$T/mysteerd.log"
	itest_daemon_start "$CONF" || exit 1
	settle
	net=lookup
	[ "$PHASE" = relay ] && net=relay
	event phase 0 start
	load_start "$i" "$net"
	sleep "$GAP_S"
	if [ -n "${CHAOS_MINUTES:-}" ]; then
		end=$(($(date +%s) + CHAOS_MINUTES * 60))
		read -r -a pool <<<"$FAULTS"
		REP=0
		while [ "$(date +%s)" -lt "$end" ]; do
			REP=$((REP + 1))
			f=${pool[RANDOM % ${#pool[@]}]}
			f=${f%%:*}
			echo "# $PHASE: fault $REP: $f"
			run_fault "$f"
			sleep $((RANDOM % (2 * GAP_S) + 1))
		done
	else
		pf=CHAOS_FAULTS_$PHASE
		for spec in ${!pf:-$FAULTS}; do
			f=${spec%%:*} n=$REPEAT
			[ "$f" != "$spec" ] && n=${spec#*:}
			for REP in $(seq 1 "$n"); do
				echo "# $PHASE: $f $REP"
				run_fault "$f"
				sleep "$GAP_S"
			done
		done
	fi
	load_stop
	event phase 0 end
	itest_daemon_stop TERM
	check_eq "$PHASE: mysteerd exits 0 on SIGTERM" 0 "$ITEST_DAEMON_RC"
	cp "$T/mysteerd.log" "$OUT/mysteerd-$PHASE.log"
	check_eq "$PHASE: nothing pinned after SIGTERM" "" "$(ls /sys/fs/bpf/mysteer 2>/dev/null)"
	check_eq "$PHASE: nothing attached to the test cgroup" "" \
		"$(bpftool cgroup show "$ITEST_CGROUP" 2>/dev/null | tail -n +2)"
	check_eq "$PHASE: no sk_lookup link left in the test's netns" 0 "$(lookup_links)"
done

# Every row, from the primary once the replicas have caught up.
prim=$(primary_port)
dump_rows "$prim" "$OUT/rows.tsv"
left=0
for p in "${ALLLOAD[@]}"; do kill -0 "$p" 2>/dev/null && left=$((left + 1)); done
check_eq "no load client left running" 0 "$left"
cat "$OUT/clients.out" | sed 's/^/# /'
python3 "$HERE/verdict.py" --out "$OUT" ${CHAOS_KNOWN:+--known "$CHAOS_KNOWN"} >"$OUT/verdict.txt"
rc=$?
cat "$OUT/verdict.txt"
check "verdict: every invariant holds (verdict.py)" [ $rc -eq 0 ]
[ -n "${CHAOS_MINUTES:-}" ] && echo "# replay with CHAOS_SEED=$SEED CHAOS_MINUTES=$CHAOS_MINUTES"
itest_done
