#!/usr/bin/env bash
# steer_lookup.sh - router-side steering with sk_lookup: a client in a second
# network namespace, joined to the test's router namespace by a veth pair
# (10.210.0.0/30, inside the test's namespaces only), reaches 6446/6447 of the
# router's veth addresses, its VIPs (another address of it is not steered).
# With local handoff the servers get the connections on their own
# listeners and see the client's veth address; a SIGKILL + restart of the
# daemon during a stream of new connections loses none. With
# local_handoff = off the relay carries a 50 MB result set and a 50 MB
# LOAD DATA LOCAL INFILE intact. SIGTERM leaves nothing attached.
. "$(dirname "$0")/lib.sh"
itest_init steer_lookup

PEER=$ITEST_BUILD/tests/peer_check
RTR=10.210.0.1 CLI=10.210.0.2 RTR6=fd00:210::1 CLI6=fd00:210::2

# --- the client namespace: a process holding a fresh netns, entered with
# nsenter (no /run/netns name that could clash with other tests).
unshare --net sleep 100000 &
CLIPID=$!
ITEST_PIDS+=($CLIPID)
sleep 0.2
incli() { nsenter -t "$CLIPID" -n "$@"; }
ip link add veth-rtr type veth peer name veth-cli netns "$CLIPID" || { echo "not ok - veth"; exit 1; }
ip addr add $RTR/30 dev veth-rtr && ip link set veth-rtr up
incli ip link set lo up
incli ip addr add $CLI/30 dev veth-cli && incli ip link set veth-cli up
ip addr add $RTR6/64 dev veth-rtr nodad
incli ip addr add $CLI6/64 dev veth-cli nodad

# sk_lookup links attached to this test's router netns.
NETNS_INO=$(stat -L -c %i /proc/self/ns/net)
lookup_links() {
	bpftool link show 2>/dev/null | awk -v ino="$NETNS_INO" '
		/^[0-9]+: netns/ {n = 1; next}
		/^[0-9]+:/ {n = 0}
		n && /netns_ino/ {for (i = 1; i <= NF; i++) if ($i == "netns_ino" && $(i+1) == ino) c++}
		END {print c + 0}'
}
cli_sql() { # port query [extra mariadb args]
	local port=$1 q=$2
	shift 2
	incli mariadb --no-defaults -h "${TO:-$RTR}" -P "$port" -u app -papp \
		--connect-timeout=5 -N -B "$@" -e "$q"
}

# The servers listen on loopback and, for the direct connections below, on
# the router's veth addresses.
export SANDBOX_BIND="$RTR,$RTR6"
itest_sandbox_up
check "the client namespace reaches the router over the veth" \
	incli timeout 5 bash -c "exec 3<>/dev/tcp/$RTR/$P1"
ITEST_STEER_EXTRA="vip = 127.0.0.1, $RTR, $RTR6
lookup = on
local_handoff = on" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 test "$(ctl_writer)" = db1 >/dev/null
ms=$(wait_until 10 test "$(ctl_readers)" = "db2 db3")
measured "topology db1 + readers db2 db3 in ${ms} ms"

check_eq "an sk_lookup link is attached to the router netns" 1 "$(lookup_links)"
check_eq "6446 from the client netns lands on the writer" "$P1" "$(cli_sql 6446 'SELECT @@port')"
host=$(cli_sql 6446 'SELECT host FROM information_schema.processlist WHERE id = CONNECTION_ID()')
check "local handoff: the server sees the client's veth address ($host)" [ "${host%:*}" = $CLI ]
dist=$(incli "$PEER" count $RTR 6447 100)
measured "100 connections to 6447 from the client netns: $(echo $dist)"
n2=$(echo "$dist" | awk -v p="$P2" '$1 == "port" && $2 == p {print $3}')
n3=$(echo "$dist" | awk -v p="$P3" '$1 == "port" && $2 == p {print $3}')
check "6447 spreads over both readers (db2 ${n2:-0}, db3 ${n3:-0})" \
	[ "${n2:-0}" -ge 25 -a "${n3:-0}" -ge 25 -a $((${n2:-0} + ${n3:-0})) = 100 ]
host=$(cli_sql 6447 'SELECT host FROM information_schema.processlist WHERE id = CONNECTION_ID()')
check "6447 by handoff too: the reader sees $CLI ($host)" [ "${host%:*}" = $CLI ]
# IPv6: mariadbd has a separate IPv6 listener ([::1]), handed over too.
check_eq "IPv6: 6446 from the client netns lands on the writer" "$P1" "$(TO=$RTR6 cli_sql 6446 'SELECT @@port')"
host=$(TO=$RTR6 cli_sql 6446 'SELECT host FROM information_schema.processlist WHERE id = CONNECTION_ID()')
check "IPv6 local handoff: the server sees $CLI6 ($host)" [ "${host%:*}" = "$CLI6" ]
steered=$(status_json | json_get "sum(b['steered'] for b in d['backends'])")
check "sk_lookup counts steered connections ($steered)" [ "${steered:-0}" -ge 102 ]
check "an unrelated port of the router is untouched (direct to db2)" \
	[ "$(cli_sql "$P2" 'SELECT @@port')" = "$P2" ]
# Only the VIPs: another address of the router on 6446 is not steered (and
# nothing listens there).
ip addr add 10.210.0.5/32 dev veth-rtr
incli ip route add 10.210.0.5/32 dev veth-cli
out=$(TO=10.210.0.5 cli_sql 6446 'SELECT @@port' 2>&1)
check "a router address that is not a VIP is not steered ($out)" \
	grep -q "Can't connect" <<<"$out"

# --- a backend restarting on its port: the handoff entry leaves with the
# old listener and the new one is taken within a probe interval or so.
sb kill "$P3" >/dev/null
sb start "$P3" >/dev/null
readers_are() { test "$(ctl_readers)" = "$1"; }
ms=$(wait_until 30 readers_are "db2 db3")
measured "db3 a reader again ${ms} ms after its restart"
back() { out=$(incli "$PEER" count $RTR 6447 20) && echo "$out" | grep -q "^port $P3 "; }
ms=$(wait_until 15 back)
check "after db3 restarts, 6447 reaches its new listener (${ms} ms after it was a reader again)" back

# --- SIGKILL + restart in the middle of a stream of new connections: the
# pinned link and the SOCKMAP (holding the servers' own sockets) go on.
incli "$PEER" count $RTR 6446 300 5 >"$T/stream.out" 2>&1 &
stream=$!
ITEST_PIDS+=($stream)
sleep 0.5
itest_daemon_stop KILL
check_eq "after SIGKILL the sk_lookup link stays attached" 1 "$(lookup_links)"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait "$stream"
measured "stream of 300 connections across SIGKILL + restart: $(echo $(cat "$T/stream.out"))"
check_eq "no connection of the stream was lost" "errors 0" "$(grep '^errors' "$T/stream.out")"
check_eq "every connection reached the writer" "port $P1 300" "$(grep '^port' "$T/stream.out")"
check "the restarted daemon adopted the pinned sk_lookup link" \
	grep -q 'adopted pinned link_sk_lookup' "$T/mysteerd.log"

# --- SIGTERM detaches; then the same through the relay.
itest_daemon_stop TERM
check_eq "after SIGTERM no sk_lookup link is left" 0 "$(lookup_links)"
check_eq "after SIGTERM nothing is pinned" "" "$(ls /sys/fs/bpf/mysteer 2>/dev/null)"

sed -i 's/^local_handoff = on/local_handoff = off/' "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 test "$(ctl_writer)" = db1 >/dev/null
wait_until 10 test "$(ctl_readers)" = "db2 db3" >/dev/null
check_eq "relay: 6446 lands on the writer" "$P1" "$(cli_sql 6446 'SELECT @@port')"
host=$(cli_sql 6446 'SELECT host FROM information_schema.processlist WHERE id = CONNECTION_ID()')
check "relay: the server sees the relay's address ($host)" [ "${host%:*}" = 127.0.0.1 ]
check_eq "relay over IPv6: 6446 lands on the writer" "$P1" "$(TO=$RTR6 cli_sql 6446 'SELECT @@port')"
check "relay: 6447 lands on a reader" \
	grep -qxE "$P2|$P3" <<<"$(cli_sql 6447 'SELECT @@port')"
comms=$(cat /proc/"$ITEST_DAEMON_PID"/task/*/comm | sort | tr '\n' ' ')
check "relay: its thread is named mysteer-relay0 ($comms)" grep -qw mysteer-relay0 <<<"$comms"

# 50 MB result set: 51200 rows of ~1 KB, generated on the writer.
sql "$P1" "CREATE DATABASE IF NOT EXISTS lt; DROP TABLE IF EXISTS lt.t, lt.t2;
	CREATE TABLE lt.t (id INT PRIMARY KEY, v VARCHAR(1024));
	CREATE TABLE lt.t2 (id INT PRIMARY KEY, v VARCHAR(1024)); USE lt;
	INSERT INTO lt.t SELECT seq, REPEAT(MD5(seq), 32) FROM seq_1_to_51200"
direct=$(sql "$P1" 'SELECT * FROM lt.t ORDER BY id' | md5sum)
t0=$(date +%s%3N)
relayed=$(cli_sql 6446 'SELECT * FROM lt.t ORDER BY id' --quick | md5sum)
t1=$(date +%s%3N)
size=$(cli_sql 6446 'SELECT * FROM lt.t ORDER BY id' --quick | wc -c)
measured "50 MB result set ($size bytes of text) through the relay in $((t1 - t0)) ms"
check "relay: the 50 MB result set is intact (md5 of the rows)" [ "$direct" = "$relayed" -a "$size" -ge 50000000 ]

sql "$P1" 'SELECT * FROM lt.t ORDER BY id' >"$T/load.tsv"
t0=$(date +%s%3N)
cli_sql 6446 "LOAD DATA LOCAL INFILE '$T/load.tsv' INTO TABLE lt.t2" --local-infile=1
rc=$?
t1=$(date +%s%3N)
measured "50 MB LOAD DATA LOCAL INFILE through the relay in $((t1 - t0)) ms (rc $rc)"
loaded=$(sql "$P1" 'SELECT * FROM lt.t2 ORDER BY id' | md5sum)
check "relay: the 50 MB LOAD DATA LOCAL INFILE is intact" [ "$rc" = 0 -a "$loaded" = "$(md5sum <"$T/load.tsv")" \
	-a "$(stat -c %s "$T/load.tsv")" -ge 50000000 ]
acc=$(status_json | json_get "d['lookup']['relay_accepted']")
check "status shows the relay's accepted connections ($acc)" [ "${acc:-0}" -ge 5 ]
measured "relay mode $(status_json | json_get "d['lookup']['relay_mode']")"

# --- no writer: the route's error listener answers through sk_lookup.
sb kill "$P1" >/dev/null
wait_until 10 test "$(ctl_writer)" = None >/dev/null
out=$(cli_sql 6446 'SELECT @@port' 2>&1)
echo "# $out" | head -2
check "no writer: the client in the other netns gets the named MySQL error" \
	grep -q 'mysteer: route rw has no writer' <<<"$out"
out=$(TO=$RTR6 cli_sql 6446 'SELECT @@port' 2>&1)
check "no writer, over IPv6: the named MySQL error too" \
	grep -q 'mysteer: route rw has no writer' <<<"$out"

itest_daemon_stop TERM
check_eq "after the relay run's SIGTERM no sk_lookup link is left" 0 "$(lookup_links)"
ip link del veth-rtr 2>/dev/null
itest_done
