#!/usr/bin/env bash
# cluster.sh - three mysteerd "hosts" sharing one decision through etcd
# (issue 20, docs/CLUSTER.md): one leader; the leader killed, another leads
# and the writer stays; a replica promoted, every host steers 6446 and 6450
# writes to it; a host cut from etcd fences its writes (6446 refused, 6450
# ERR naming why) while its reads go on and the others are untouched; it
# steers writes again when etcd is back; a host that starts without etcd
# starts fenced; one of three etcd members stopped changes nothing, two
# stopped fence every host's writes, and they resume once the members are
# back.
#
# The hosts and their etcd forwarders: cluster_lib.sh. etcd has three
# members on loopback. The times measured are logged; the deadlines are
# functional, with slack for a loaded machine.
export SANDBOX_BASE_PORT=${SANDBOX_BASE_PORT:-6306}
. "$(dirname "$0")/lib.sh"
itest_init cluster
. "$(dirname "$0")/etcd_lib.sh"

# etcd's raft timing for loopback (its default, 100 ms heartbeats and a 1 s
# election timeout, randomized up to 2 s, is about lease_ms itself: a lost
# etcd leader would make renewals fail for as long as fence_after_ms)
export ETCD_FLAGS="--heartbeat-interval 50 --election-timeout 500"
LEASE_MS=2000
FENCE_MS=2000
. "$(dirname "$0")/cluster_lib.sh"

itest_sandbox_up
sql_root "$P1" "CREATE DATABASE IF NOT EXISTS ct; CREATE TABLE IF NOT EXISTS ct.w (id INT AUTO_INCREMENT PRIMARY KEY, h INT)" ||
	{ echo "not ok - test table"; exit 1; }
etcd_up 3 || exit 1
for h in $HOSTS; do host_conf "$h"; fwd_start "$h"; done

# --- one leader, one decision ---------------------------------------------------
host_start 1 || exit 1
ms=$(wait_until 30 steers 1 db1)
check "host1 leads and steers writes to db1" steers 1 db1
measured "first host: lead and topology published in $ms ms after its admin socket answered"
check "host1 is the leader" is_leader 1
host_start 2 || exit 1
host_start 3 || exit 1
ms=$(wait_until 30 all_steer db1)
check "every host steers writes to db1" all_steer db1
measured "hosts 2, 3 steering by the cluster's topology in $ms ms"
check_eq "one leader" 1 "$(leaders)"
check_eq "every host sees host1 as leader" "host1 host1 host1" "$(cj 1 "c['leader']") $(cj 2 "c['leader']") $(cj 3 "c['leader']")"
e1=$(cj 1 "c['epoch']")
check_eq "one epoch on every host" "$e1 $e1 $e1" "$(cj 1 "c['epoch']") $(cj 2 "c['epoch']") $(cj 3 "c['epoch']")"
for h in $HOSTS; do
	check_eq "host$h: 6446 lands on db1" "$P1" "$(rw_port "$h")"
	check "host$h: a write through 6450" split "$h" "INSERT INTO ct.w (h) VALUES ($h)"
done
check "host2 logs that it follows host1" grep -q "cluster: leader host1" "$T/h2/log"

# --- the leader killed: another leads, the writer stays ---------------------------
n2=$(wc -l <"$T/h2/log") n3=$(wc -l <"$T/h3/log")
t0=$(date +%s%3N)
host_kill 1
ms=$(wait_until 30 one_leader_of 2 3)
check "host2 or host3 leads after host1 was killed" one_leader_of 2 3
nl=$(leader_host)
measured "new leader host$nl $(($(log_ms "$nl" "$([ "$nl" = 2 ] && echo "$n2" || echo "$n3")" 'this host leads') - t0)) ms after the leader was killed (its log; lease_ms $LEASE_MS; seen by polling after $ms ms)"
check "host2 still steers writes to db1" steers 2 db1
check "host3 still steers writes to db1" steers 3 db1
check_eq "the epoch did not move (same decision)" "$e1 $e1" "$(cj 2 "c['epoch']") $(cj 3 "c['epoch']")"
check_eq "no write fencing on host2, host3 meanwhile" "0 0" \
	"$(tail -n +$((n2 + 1)) "$T/h2/log" | grep -c 'writes fenced') $(tail -n +$((n3 + 1)) "$T/h3/log" | grep -c 'writes fenced')"
host_start 1 || exit 1
ms=$(wait_until 30 steers 1 db1)
check "host1 back, steering writes to db1" steers 1 db1
check_eq "host1 back as a follower" follower "$(cj 1 "c['role']")"
measured "restarted host1 steering by the topology in $ms ms"

# --- the leader stopped cleanly: its lease given back, another leads at once ------
lh=$(leader_host)
for h in $HOSTS; do skip[$h]=$(loglen "$h"); done
t0=$(date +%s%3N)
kill -TERM "${HPID[$lh]}"
wait "${HPID[$lh]}"
check "host$lh (leader) stopped cleanly" [ $? -eq 0 ]
HPID[$lh]=
check "host$lh gave its lease back" grep -q "cluster: lease .* given back: another host may lead now" "$T/h$lh/log"
rest=$(echo $HOSTS | tr ' ' '\n' | grep -vx "$lh" | tr '\n' ' ')
ms=$(wait_until 30 one_leader_of $rest)
check "another host leads after host$lh stopped" one_leader_of $rest
nl=$(for h in $rest; do is_leader "$h" && echo "$h"; done | head -n1)
measured "new leader host$nl $(($(log_ms "$nl" "${skip[$nl]}" 'this host leads') - t0)) ms after SIGTERM to the leader (its log)"
for h in $rest; do check "host$h still steers writes to db1" steers "$h" db1; done
host_start "$lh" || exit 1
wait_until 30 steers "$lh" db1 >/dev/null
check "host$lh back, steering writes to db1" steers "$lh" db1

# --- a replica promoted: every host follows the leader's decision -----------------
lh=$(leader_host)
for h in $HOSTS; do skip[$h]=$(loglen "$h"); done
t0=$(date +%s%3N)
sb promote "$P2" >/dev/null || { echo "not ok - promote $P2"; exit 1; }
ms=$(wait_until 30 all_steer db2)
check "every host steers writes to db2 after the promotion" all_steer db2
measured "all hosts on db2 $ms ms after sandbox promote returned (polling)"
seen=$(log_ms "$lh" "${skip[$lh]}" 'writer none -> db2')
for h in $HOSTS; do
	measured "host$h applied writer db2 $(($(log_ms "$h" "${skip[$h]}" 'cluster: topology epoch .* -> db2') - seen)) ms after the leader host$lh decided it (logs)"
done
for h in $HOSTS; do
	check_eq "host$h: 6446 lands on db2" "$P2" "$(rw_port "$h")"
done
e2=$(cj 2 "c['epoch']")
check "the epoch grew" [ "$e2" -gt "$e1" ]

# --- a host cut from etcd: fenced writes, reads go on -----------------------------
cut=
for h in $HOSTS; do is_leader "$h" || { cut=$h; break; }; done
others=$(echo $HOSTS | tr ' ' '\n' | grep -vx "$cut" | tr '\n' ' ')
sk=$(loglen "$cut")
t0=$(date +%s%3N)
fwd_signal "$cut" STOP
ms=$(wait_until 30 fenced "$cut")
check "host$cut (cut from etcd) fences writes" fenced "$cut"
measured "host$cut fenced $(($(log_ms "$cut" "$sk" 'writes fenced') - t0)) ms after the cut (its log; fence_after_ms $FENCE_MS)"
out=$(split "$cut" "INSERT INTO ct.w (h) VALUES (99)")
check "host$cut: a 6450 write gets an ERR naming the fence" grep -q "fenced" <<<"$out"
echo "# $out"
check "host$cut: a 6450 read goes on" split "$cut" "SELECT COUNT(*) FROM ct.w"
out=$(rw_port "$cut")
check "host$cut: 6446 does not reach a server" bash -c "[ '$out' != '$P2' ] && [ '$out' != '$P1' ]"
echo "# 6446 from host$cut: $out"
check "host$cut logs why it fences" grep -q "writes fenced on this host: etcd not heard" "$T/h$cut/log"
for h in $others; do
	check "host$h unaffected: steers writes to db2" steers "$h" db2
done
sk=$(loglen "$cut")
t0=$(date +%s%3N)
fwd_signal "$cut" CONT
ms=$(wait_until 30 steers "$cut" db2)
check "host$cut steers writes to db2 again once etcd is back" steers "$cut" db2
measured "host$cut resumed $(($(log_ms "$cut" "$sk" 'writes steered again') - t0)) ms after etcd came back (its log)"
check "host$cut: a write through 6450 again" split "$cut" "INSERT INTO ct.w (h) VALUES ($cut)"

# --- a host that starts without etcd starts fenced --------------------------------
host_kill "$cut"
fwd_signal "$cut" STOP
host_start "$cut" || exit 1
check "host$cut started without etcd: fenced" fenced "$cut"
why=$(cj "$cut" "c['fence_reason']")
check "... and says why" grep -q "no lease from etcd yet" <<<"$why"
echo "# $why"
has_reader() { [ -n "$(hctl "$1" --json status | json_get "[b['name'] for b in d['backends'] if b['role']=='reader']")" ] && hctl "$1" --json status | json_get "[b['name'] for b in d['backends'] if b['role']=='reader']" | grep -q db; }
wait_until 20 has_reader "$cut" >/dev/null
check "host$cut: reads through 6450 while fenced" split "$cut" "SELECT 1"
fwd_signal "$cut" CONT
ms=$(wait_until 30 steers "$cut" db2)
check "host$cut steers writes to db2 once etcd answers" steers "$cut" db2
measured "host$cut (started without etcd) steering writes $ms ms after etcd came back"

# --- etcd members stopped ------------------------------------------------------
no_fence_since() { # skip: no host logged a fence since its line skip[h]
	local h
	for h in $HOSTS; do
		[ "$(tail -n +$((skip[$h] + 1)) "$T/h$h/log" | grep -c 'writes fenced')" = 0 ] || return 1
	done
}
all_fenced() { local h; for h in $HOSTS; do fenced "$h" || return 1; done; }
for h in $HOSTS; do skip[$h]=$(loglen "$h"); done
el=$(etcd_leader) || el=1
m1=$((el % 3 + 1)) m2=$(((el + 1) % 3 + 1))
etcd_stop "$m1"
sleep $((LEASE_MS * 3 / 1000))
check "one etcd member of three stopped (m$m1, not the raft leader): every host still steers writes to db2" all_steer db2
check "... and none fenced its writes meanwhile" no_fence_since
check_eq "... one leader" 1 "$(leaders)"
for h in $HOSTS; do skip[$h]=$(loglen "$h"); done
t0=$(date +%s%3N)
etcd_stop "$m2"
ms=$(wait_until 30 all_fenced)
check "two etcd members of three stopped: every host fences writes" all_fenced
for h in $HOSTS; do
	measured "host$h fenced $(($(log_ms "$h" "${skip[$h]}" 'writes fenced') - t0)) ms after the second member stopped (its log)"
done
check "... a 6450 read still goes on" split 2 "SELECT 1"
for h in $HOSTS; do skip[$h]=$(loglen "$h"); done
t0=$(date +%s%3N)
etcd_start "$m1"
etcd_start "$m2"
ms=$(wait_until 60 all_steer db2)
check "members back: every host steers writes to db2 again" all_steer db2
for h in $HOSTS; do
	measured "host$h steering writes $(($(log_ms "$h" "${skip[$h]}" 'writes steered again') - t0)) ms after the members were started again (its log)"
done
check_eq "... one leader" 1 "$(leaders)"
check "host2: a write through 6450 again" split 2 "INSERT INTO ct.w (h) VALUES (2)"

for h in $HOSTS; do
	check "host$h: no crash" kill -0 "${HPID[$h]}"
done
met() { # host metric: its value in status --json
	hctl "$1" --json status | json_get "[s['value'] for s in d['metrics']['$2']['series']][0]" 2>/dev/null
}
lh=$(leader_host)
check_eq "metrics: the leader says so" 1 "$(met "$lh" mysteer_cluster_leader | cut -d. -f1)"
check_eq "metrics: no host fenced now" "0 0 0" "$(for h in $HOSTS; do met "$h" mysteer_cluster_fenced | cut -d. -f1; done | tr '\n' ' ' | sed 's/ $//')"
check "metrics: fences counted on host$cut" [ "$(met "$cut" mysteer_cluster_fences_total | cut -d. -f1)" -ge 1 ]
hctl "$(leader_host)" status | sed 's/^/# /' | head -n 4
itest_done
