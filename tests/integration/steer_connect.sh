#!/usr/bin/env bash
# steer_connect.sh - client-side eBPF steering (connect4/6 + getpeername,
# sockops, close-on-demote, restart without a gap) with real MySQL clients
# in a cgroup and network namespace made for this test (lib.sh).
. "$(dirname "$0")/lib.sh"
itest_init steer_connect

PEER=$ITEST_BUILD/tests/peer_check
[ -n "$ITEST_CGROUP" ] || { echo "not ok - no cgroup2 mount"; exit 1; }

# Runs a command inside the test's steered cgroup.
incg() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$ITEST_CGROUP" "$@"; }
writer_is() { [ "$(ctl_writer)" = "$1" ]; }
quiet() { "$@" >/dev/null; }
readers_are() { [ "$(ctl_readers)" = "$1" ]; }
port_of() { incg "$PEER" count "$1" "$2" 1 | awk '$1 == "port" {print $2}'; }
attached() { bpftool cgroup show "$ITEST_CGROUP" 2>/dev/null | grep -cE 'connect|getpeername|sock_ops'; }

itest_sandbox_up
# A long probe interval, so that a dead reader is found by the sockops
# failure report (and the immediate re-probe), not by the next probe.
ITEST_INTERVAL_MS=1000 ITEST_STEER_EXTRA="vip = 127.0.0.1, ::1
lookup = off" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 writer_is db1 >/dev/null
wait_until 10 readers_are "db2 db3" >/dev/null

check "programs attached to the test cgroup" [ "$(attached)" -ge 5 ]
check_eq "6446 lands on the writer" "$P1" "$(port_of 127.0.0.1 6446)"
out=$(incg "$PEER" count 127.0.0.1 6446 1)
check_eq "getpeername shows the VIP" "peer 127.0.0.1:6446" "$(echo "$out" | grep '^peer')"
check_eq "6446 over IPv6 ::1 lands on the writer" "$P1" "$(port_of ::1 6446)"
out6=$(incg "$PEER" count ::1 6446 1)
check_eq "getpeername over IPv6 shows the VIP" "peer ::1:6446" "$(echo "$out6" | grep '^peer')"
check_eq "an unrelated port is untouched" "$P2" "$(port_of 127.0.0.1 "$P2")"
check_eq "outside the cgroup nothing is steered" "" \
	"$("$PEER" count 127.0.0.1 6446 1 | awk '$1 == "port" {print $2}')"

# Equal weights: each reader within +-60 of its half (sd of a 1000-draw
# binomial is 16, so the bound is 3.8 sd: a wrong split fails 1 run in
# 7,000; at 3 sd it was 1 in 400).
dist=$(incg "$PEER" count 127.0.0.1 6447 1000)
measured "1000 connections to 6447, weights 1:1: $(echo $dist)"
n2=$(echo "$dist" | awk -v p="$P2" '$1 == "port" && $2 == p {print $3}')
n3=$(echo "$dist" | awk -v p="$P3" '$1 == "port" && $2 == p {print $3}')
check "6447 weights 1:1: db2 gets 500 +- 60 (got ${n2:-0})" [ "${n2:-0}" -ge 440 -a "${n2:-0}" -le 560 ]
check "6447 weights 1:1: db3 gets 500 +- 60 (got ${n3:-0})" [ "${n3:-0}" -ge 440 -a "${n3:-0}" -le 560 ]
check "6447: no error, none on the writer" [ "$(echo "$dist" | grep -c "port $P1 ")" = 0 -a \
	"$(echo "$dist" | awk '$1 == "errors" {print $2}')" = 0 ]

# Weights 1:3 (set at runtime): db3's share 750, bound +-70 (5 sd of 13.7).
ctl set db3 weight=3 >/dev/null
total4() { "$MYSTEERCTL" -c "$T/mysteer.conf" --json maps | grep -q '"total_weight":4'; }
check "weight change published into the maps" quiet wait_until 5 total4
start=$(date +%s%3N)
dist=$(incg "$PEER" count 127.0.0.1 6447 1000)
measured "1000 connections to 6447, weights 1:3, in $(( $(date +%s%3N) - start )) ms: $(echo $dist)"
n3=$(echo "$dist" | awk -v p="$P3" '$1 == "port" && $2 == p {print $3}')
check "6447 weights 1:3: db3 gets 750 +- 70 (got ${n3:-0})" [ "${n3:-0}" -ge 680 -a "${n3:-0}" -le 820 ]

# --- reader_policy = least_conn (reload): held connections spread evenly
# over the readers whatever their weights, from sockops' active counts.
itest_reader_policy "$T/mysteer.conf" least_conn >/dev/null
rm -f "$T/go-lc"
lc_pids=()
for i in 1 2 3 4 5 6 7 8; do
	incg "$PEER" hold 127.0.0.1 6447 "$T/go-lc" >"$T/lc$i.out" 2>&1 &
	lc_pids+=($!)
	ITEST_PIDS+=($!)
	wait_until 10 grep -q '^before' "$T/lc$i.out" >/dev/null
done
act() { status_json | json_get "[b['active'] for b in d['backends'] if b['name']=='$1'][0]"; }
check "reload set least_conn in the maps" \
	bash -c '"$0" -c "$1" --json maps | grep -q "\"reader_policy\":\"least_conn\""' "$MYSTEERCTL" "$T/mysteer.conf"
check_eq "least_conn: 8 held connections, 4 on db2 (weight 1)" 4 "$(act db2)"
check_eq "least_conn: 4 on db3 (weight 3)" 4 "$(act db3)"
touch "$T/go-lc"
for p in "${lc_pids[@]}"; do wait "$p" 2>/dev/null; done
itest_reader_policy "$T/mysteer.conf" random >/dev/null

# --- an IPv6 backend: db5 is db3's server over ::1. IPv6 clients reach it;
# IPv4 clients of the same route are given an IPv4 target instead.
ctl add db5 "::1:$P3" weight=2 >/dev/null || ctl add db5 "[::1]:$P3" weight=2 >/dev/null
check "db5 (::1) becomes a reader" quiet wait_until 10 readers_are "db2 db3 db5"
steered5() { status_json | json_get "[b['steered'] for b in d['backends'] if b['name']=='db5'][0]"; }
s0=$(steered5)
out6=$(incg "$PEER" count ::1 6447 100)
check "IPv6 clients: 100 connections to [::1]:6447 without error" grep -q '^errors 0$' <<<"$out6"
s1=$(steered5)
check "IPv6 clients reach the IPv6 backend ($((s1 - s0)) of 100)" [ $((s1 - s0)) -gt 0 ]
out4=$(incg "$PEER" count 127.0.0.1 6447 100)
check "IPv4 clients: 100 connections without error, none to the IPv6 backend" \
	[ "$(grep '^errors' <<<"$out4")" = "errors 0" -a "$(steered5)" = "$s1" ]
ctl remove db5 >/dev/null
wait_until 10 readers_are "db2 db3" >/dev/null

# --- connect-failure feedback: db4 is db3 behind a forwarder whose listener
# we close while the daemon's kept-open probe connection goes on working, so
# only steered clients see the failure (refused connect -> sockops -> ring
# buffer -> immediate re-probe).
P4=$((SANDBOX_BASE_PORT + 10))
cat >"$T/fwd.py" <<'PY'
import os, signal, socket, sys, threading
lst = socket.create_server(("127.0.0.1", int(sys.argv[1])))
def pipe(a, b):
    try:
        while (d := a.recv(65536)):
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
def closelst(*_):
    os.close(lst.detach())
signal.signal(signal.SIGUSR1, closelst)
while True:
    try:
        c, _ = lst.accept()
    except OSError:
        signal.pause(); continue
    u = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
    threading.Thread(target=pipe, args=(c, u), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
PY
python3 "$T/fwd.py" "$P4" "$P3" &
fwd=$!
ITEST_PIDS+=($fwd)
wait_until 5 bash -c "echo >/dev/tcp/127.0.0.1/$P4" >/dev/null
ctl add db4 "127.0.0.1:$P4" weight=4 >/dev/null
check "db4 (behind the forwarder) becomes a reader" quiet wait_until 10 readers_are "db2 db3 db4"
kill -USR1 "$fwd"
sleep 0.2
tfail=
for i in $(seq 1 100); do
	out=$(incg "$PEER" count 127.0.0.1 6447 1)
	if echo "$out" | grep -q '^error '; then tfail=$(date +%s%3N); break; fi
done
check "a steered connect to db4 was refused" [ -n "$tfail" ]
echo "# client saw: $(grep -m1 '^error ' <<<"$out")"
fails=$(status_json | json_get "[b['connect_failures'] for b in d['backends'] if b['name']=='db4'][0]")
check "sockops counted the connect failure of db4 (${fails})" [ "${fails:-0}" -ge 1 ]
ms=$(wait_until 3 grep -q 'steered connect to backend .* failed; probing it now' "$T/mysteerd.log")
check "the ring buffer report made the daemon re-probe at once" [ $? -eq 0 ]
measured "failure report -> re-probe logged within ${ms} ms of the client's error"
ctl remove db4 >/dev/null
kill "$fwd" 2>/dev/null
wait "$fwd" 2>/dev/null
wait_until 10 readers_are "db2 db3" >/dev/null

# --- a reader dies: measure until no new connection goes to it.
sb kill "$P3" >/dev/null
t0=$(date +%s%3N)
gone() { out=$(incg "$PEER" count 127.0.0.1 6447 20) && ! echo "$out" | grep -q "^port $P3 "; }
ms=$(wait_until 5 gone)
measured "dead reader out of 6447 ${ms} ms after the kill (interval_ms 1000)"
check "no new 6447 connection goes to the dead reader within 3 probe intervals" [ "$ms" -le 3000 ]
active=$(status_json | json_get "sum(b['active'] for b in d['backends'])")
check_eq "no steered connection is active now" 0 "$active"

# --- an idle 6446 connection held across a promote is closed; its reconnect
# lands on the new writer.
rm -f "$T/go"
incg "$PEER" hold 127.0.0.1 6446 "$T/go" >"$T/hold.out" 2>&1 &
hold=$!
ITEST_PIDS+=($hold)
wait_until 10 grep -q '^before' "$T/hold.out" >/dev/null
sb promote "$P2" >/dev/null
ms=$(wait_until 10 writer_is db2)
measured "writer db1 -> db2 seen by the daemon in ${ms} ms"
check_eq "6446 lands on the promoted replica" "$P2" "$(port_of 127.0.0.1 6446)"
touch "$T/go"
wait "$hold" 2>/dev/null
check_eq "the held connection started on the old writer" "before $P1" "$(grep '^before' "$T/hold.out")"
check "the held connection was closed by close_on_demote" grep -q '^after-error' "$T/hold.out"
check_eq "its reconnect lands on the new writer" "reconnect $P2" "$(grep '^reconnect' "$T/hold.out")"
line=$(grep 'close_on_demote: closed [1-9]' "$T/mysteerd.log" | tail -n 1)
check "the daemon logged the close of the held connection" [ -n "$line" ]
measured "${line#* info: }"

# --- SIGKILL and restart of the daemon in a stream of new connections.
incg "$PEER" count 127.0.0.1 6446 400 5 >"$T/stream.out" 2>&1 &
stream=$!
ITEST_PIDS+=($stream)
sleep 0.5
itest_daemon_stop KILL
check "after SIGKILL the programs stay attached" [ "$(attached)" -ge 5 ]
"$MYSTEERCTL" -c "$T/mysteer.conf" --json maps >"$T/maps.json" 2>&1
check "mysteerctl maps reads the pinned maps with the daemon down" \
	grep -q '"enabled":true' "$T/maps.json"
measured "mysteerctl maps (daemon down): $(head -c 400 "$T/maps.json")"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait "$stream"
measured "stream across SIGKILL + restart: $(echo $(cat "$T/stream.out"))"
check_eq "no connection of the stream was lost" "errors 0" "$(grep '^errors' "$T/stream.out")"
check "every connection of the stream reached the writer" [ "$(grep -c '^port' "$T/stream.out")" = 1 ] 
check "the restarted daemon adopted the pinned links" grep -q 'adopted pinned link_connect4' "$T/mysteerd.log"

# --- a failover while no daemon runs: the next daemon finds in the pinned
# maps what its predecessor steered to the old writer, and closes it.
rm -f "$T/go2"
incg "$PEER" hold 127.0.0.1 6446 "$T/go2" >"$T/hold2.out" 2>&1 &
hold=$!
ITEST_PIDS+=($hold)
wait_until 10 grep -q '^before' "$T/hold2.out" >/dev/null
# db1 was demoted by the promote above (failback = off): rejoined as a
# replica, it may become the writer again.
sb rejoin "$P1" >/dev/null 2>&1
rejoined() { [ "$(status_json | json_get "[b['demoted'] for b in d['backends'] if b['name']=='db1'][0]")" = False ]; }
check "db1 rejoined as a replica is no longer demoted" quiet wait_until 15 rejoined
itest_daemon_stop KILL
sb promote "$P1" >/dev/null
itest_daemon_start "$T/mysteer.conf" || exit 1
ms=$(wait_until 10 writer_is db1)
measured "restart after a failover while down: writer db1 in ${ms} ms"
wait_until 5 grep -q 'close_on_demote: closed [1-9]' <(tail -n 5 "$T/mysteerd.log") >/dev/null
touch "$T/go2"
wait "$hold" 2>/dev/null
check_eq "the connection held across the restart started on the old writer" "before $P2" \
	"$(grep '^before' "$T/hold2.out")"
check "the restarted daemon closed it (close_on_demote from the adopted maps)" \
	grep -q '^after-error' "$T/hold2.out"
check_eq "its reconnect lands on the new writer" "reconnect $P1" "$(grep '^reconnect' "$T/hold2.out")"

# --- the writer dies: 6446 answers with a MySQL error naming the reason.
sb kill "$P1" >/dev/null
wait_until 10 writer_is None >/dev/null
out=$(incg "$PEER" count 127.0.0.1 6446 1)
echo "# $out" | head -3
check "no writer: the client gets a named MySQL error" \
	grep -q 'error 1105 mysteer: route rw has no writer (.*db1 down' <<<"$out"

# --- SIGTERM: nothing may be left attached or pinned.
itest_daemon_stop TERM
check_eq "after SIGTERM no program is attached to the cgroup" 0 "$(attached)"
check_eq "after SIGTERM nothing is pinned" "" "$(ls /sys/fs/bpf/mysteer 2>/dev/null)"

# --- keep_on_exit = on: a clean stop leaves everything pinned and attached
# (upgrade); the next daemon adopts it, and its default SIGTERM removes it.
sed -i 's/^log_level = .*/&\nkeep_on_exit = on/' "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
itest_daemon_stop TERM
check "keep_on_exit: programs stay attached after SIGTERM" [ "$(attached)" -ge 5 ]
check "keep_on_exit: links and maps stay pinned" test -e /sys/fs/bpf/mysteer/link_connect4 -a \
	-e /sys/fs/bpf/mysteer/route_sel
sed -i '/^keep_on_exit = on$/d' "$T/mysteer.conf"
n0=$(grep -c 'adopted pinned link_connect4' "$T/mysteerd.log")
itest_daemon_start "$T/mysteer.conf" || exit 1
check "the next daemon adopted the kept links" \
	[ "$(grep -c 'adopted pinned link_connect4' "$T/mysteerd.log")" -gt "$n0" ]
itest_daemon_stop TERM
check_eq "then a default SIGTERM detaches everything" 0 "$(attached)"
check_eq "and unpins everything" "" "$(ls /sys/fs/bpf/mysteer 2>/dev/null)"

itest_done
