#!/usr/bin/env bash
# dns.sh - a backend whose host is a name follows the name's changes (issue 2):
# looked up again on a period and after a failed connect, off the event loop;
# a new address is logged once and used by the probe, the maps and the proxy;
# a name that stops resolving keeps the last good address and warns once.
# Every lookup runs off the loop, the first one too: with a DNS server that
# never answers, add, reload, start, status and the other backends' probes
# do not wait for it.
#
# The name lives in /etc/hosts: lib.sh runs this script in its own mount
# namespace (unshare --mount --propagation private), so a temp file is
# bind-mounted over /etc/hosts here only; the host's file is never written.
# The sandbox servers listen on 127.0.0.2 too (SANDBOX_BIND), so
# 127.0.0.2:PORT reaches the same server.
export SANDBOX_BASE_PORT=${SANDBOX_BASE_PORT:-5306}
export SANDBOX_BIND=127.0.0.2
. "$(dirname "$0")/lib.sh"
itest_init dns

NAME=mysteer-test-db
PERIOD_MS=500 # MYSTEER_TEST_RESOLVE_MS: the re-resolve period (30 s by default)
INTERVAL=200
export ITEST_INTERVAL_MS=$INTERVAL ITEST_TIMEOUT_MS=500
# a period and a probe, three times over (slack for 2 loaded cores)
FOLLOW_DEADLINE_S=$(((PERIOD_MS + INTERVAL * 3) * 3 / 1000 + 1))

bfield() { status_json | json_get "[b['$2'] for b in d['backends'] if b['name']=='$1'][0]"; }
addr_is() { test "$(bfield "$1" address)" = "$2"; }
up_writer() { test "$(ctl_writer)" = "$1" && test "$(bfield "$1" state)" = up; }
log_count() { grep -c -- "$1" "$T/mysteerd.log"; }

# The test's own hosts file, rewritten in place (the bind mount follows the
# inode, so never replace it with mv).
HOSTS=$T/hosts
hosts_map() { # address, or nothing: the name does not resolve
	grep -v -- "$NAME" /etc/hosts >"$T/hosts.new" 2>/dev/null
	[ -n "${1:-}" ] && echo "$1 $NAME" >>"$T/hosts.new"
	cat "$T/hosts.new" >"$HOSTS"
}
cp /etc/hosts "$HOSTS" || { echo "not ok - copy /etc/hosts"; exit 1; }
check "the mount namespace is private to the test" \
	test "$(readlink /proc/self/ns/mnt)" != "$(readlink /proc/1/ns/mnt)"
mount --bind "$HOSTS" /etc/hosts || { echo "not ok - bind-mount the test's hosts file"; exit 1; }
hosts_map 127.0.0.1
# One long-lived process, as the daemon is: glibc's files backend must read
# the file again on every getaddrinfo() (no cache in the process).
reread=$(python3 - "$NAME" "$HOSTS" <<'PY'
import socket, sys
name, hosts = sys.argv[1], sys.argv[2]
def addr():
    return socket.getaddrinfo(name, None, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
first = addr()
text = open(hosts).read().replace("127.0.0.1 " + name, "127.0.0.2 " + name)
with open(hosts, "w") as f:  # in place: the bind mount follows the inode
    f.write(text)
print(first, addr())
PY
)
check_eq "glibc reads the bind-mounted hosts file, again on each getaddrinfo" \
	"127.0.0.1 127.0.0.2" "$reread"
check "no nscd caches hosts here" test ! -S /var/run/nscd/socket
hosts_map 127.0.0.1

itest_sandbox_up
ITEST_BACKENDS= itest_write_config "$T/mysteer.conf" - <<CONF

[backend:db1]
host = $NAME
port = $P1
priority = 100
[backend:db2]
host = 127.0.0.1
port = $P2
priority = 200
CONF

# --- a name changes: followed on the period -----------------------------------
MYSTEER_TEST_RESOLVE_MS=$PERIOD_MS itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 15 up_writer db1 >/dev/null
check "db1 ($NAME) up and the writer" up_writer db1
check_eq "status: host is the name" "$NAME" "$(bfield db1 host)"
check_eq "status: address is what it resolved to" 127.0.0.1 "$(bfield db1 address)"
check_eq "status: a numeric host has its address too" 127.0.0.1 "$(bfield db2 address)"
id0=$(bfield db1 id)

hosts_map 127.0.0.2
ms=$(wait_until "$FOLLOW_DEADLINE_S" addr_is db1 127.0.0.2)
check "db1 moved to 127.0.0.2 within ${FOLLOW_DEADLINE_S} s (${ms} ms)" addr_is db1 127.0.0.2
measured "follow a changed name on the ${PERIOD_MS} ms period: ${ms} ms"
check_eq "one change line" 1 \
	"$(log_count "db1 address 127.0.0.1 -> 127.0.0.2 (host $NAME)")"
check "a moved backend gets a new id, as a reload with a changed host" \
	test "$(bfield db1 id)" != "$id0"
ms=$(wait_until 10 up_writer db1)
check "db1 probed at the new address: up and the writer again (${ms} ms)" up_writer db1
measured "writer back after the move: ${ms} ms"
check "the status table shows the name and its address" \
	sh -c "'$MYSTEERCTL' --socket '$T/admin.sock' status | grep -q '$NAME:$P1 (127.0.0.2)'"
"$MYSTEERCTL" -c "$T/mysteer.conf" maps >"$T/maps" 2>&1
check "the maps steer to 127.0.0.2:$P1" grep -q "127.0.0.2:$P1" "$T/maps"
check "the maps no longer hold 127.0.0.1:$P1" sh -c "! grep -q '127.0.0.1:$P1' '$T/maps'"
check_eq "the 6450 proxy writes through the moved writer" 1 \
	"$(sql 6450 "CREATE DATABASE IF NOT EXISTS dnst; SELECT 1" 2>&1 | tail -n 1)"
check_eq "6446 (relay/handoff) reaches the moved writer" "$P1" "$(sql 6446 "SELECT @@port" 2>&1)"

# --- several records, the current one among them: no move ---------------------
grep -v -- "$NAME" /etc/hosts >"$T/hosts.new"
printf '127.0.0.3 %s\n127.0.0.2 %s\n' "$NAME" "$NAME" >>"$T/hosts.new"
cat "$T/hosts.new" >"$HOSTS"
check_eq "getaddrinfo gives both records" "127.0.0.3 127.0.0.2" \
	"$(python3 -c "import socket; print(' '.join(a[4][0] for a in socket.getaddrinfo('$NAME', None, socket.AF_INET, socket.SOCK_STREAM)))")"
sleep $((PERIOD_MS * 4 / 1000 + 1))
check_eq "the current address is still one of the name's: kept" 127.0.0.2 "$(bfield db1 address)"
check_eq "and no change line" 0 "$(log_count "db1 address 127.0.0.2 ->")"

# --- the name stops resolving: last good address kept, one warning ------------
hosts_map ""
sleep $((PERIOD_MS * 8 / 1000 + 1)) # eight periods or more
check_eq "an unresolvable name keeps the last good address" 127.0.0.2 "$(bfield db1 address)"
check "db1 still up and the writer" up_writer db1
n=$(log_count "db1: cannot resolve $NAME")
check_eq "one warning for the failure streak, not one per period" 1 "$n"
measured "warnings over $((PERIOD_MS * 8 / 1000 + 1)) s of failed lookups: $n"
hosts_map 127.0.0.2
log_again() { grep -q -- "db1: $NAME resolves again" "$T/mysteerd.log"; }
wait_until "$FOLLOW_DEADLINE_S" log_again >/dev/null
check "the end of the streak is logged" log_again
hosts_map ""
warned_twice() { test "$(log_count "db1: cannot resolve $NAME")" -ge 2; }
wait_until "$FOLLOW_DEADLINE_S" warned_twice >/dev/null
sleep $((PERIOD_MS * 4 / 1000 + 1))
check_eq "a new streak warns again, once" 2 "$(log_count "db1: cannot resolve $NAME")"
itest_daemon_stop TERM

# --- a failed connect looks the name up at once (no period) -------------------
# 10.99.99.1 has no route in the test's network namespace: connects fail at once.
hosts_map 10.99.99.1
MYSTEER_TEST_RESOLVE_MS=600000 itest_daemon_start "$T/mysteer.conf" || exit 1
db1_down() { test "$(bfield db1 state)" = down; }
wait_until 10 db1_down >/dev/null
check_eq "db1 at an unreachable address is down" down "$(bfield db1 state)"
check_eq "status: address 10.99.99.1" 10.99.99.1 "$(bfield db1 address)"
hosts_map 127.0.0.1
ms=$(wait_until "$FOLLOW_DEADLINE_S" addr_is db1 127.0.0.1)
check "a failed probe finds the new address with no period (${ms} ms)" addr_is db1 127.0.0.1
measured "follow a changed name after a failed connect: ${ms} ms"
check "the change line" grep -q "db1 address 10.99.99.1 -> 127.0.0.1 (host $NAME)" \
	"$T/mysteerd.log"
ms=$(wait_until 10 up_writer db1)
check "db1 up and the writer at the new address (${ms} ms)" up_writer db1

# --- a name that does not resolve when it is added ---------------------------
# Not probed while it has no address (libmysqlclient would look the name up on
# the daemon's loop, stalling every probe); found by the lookups off the loop.
NAME3=mysteer-test-db3
check "add db3 by a name that does not resolve" ctl add db3 "$NAME3:$P3" priority=300
db3_down() { test "$(bfield db3 state)" = down; }
wait_until 10 db3_down >/dev/null
check_eq "db3 without an address is down" down "$(bfield db3 state)"
check_eq "status: no address" None "$(bfield db3 address)"
check "its error says the name does not resolve, not a connect error" \
	sh -c "'$MYSTEERCTL' --socket '$T/admin.sock' --json status | grep -q 'cannot resolve $NAME3 (not probed until it does)'"
echo "127.0.0.1 $NAME3" >>"$HOSTS"
db3_up() { test "$(bfield db3 state)" = up && addr_is db3 127.0.0.1; }
ms=$(wait_until "$FOLLOW_DEADLINE_S" db3_up)
check "db3 up at 127.0.0.1 once the name resolves (${ms} ms)" db3_up
measured "a name added unresolved: up ${ms} ms after it resolves"
check "db1 stayed the writer meanwhile" up_writer db1

# --- a backend removed while its lookup may be in flight ------------------------
hosts_map 10.99.99.1
sleep 1
sed -i "/^\[backend:db1\]/,/^priority = 100/d" "$T/mysteer.conf"
check "reload removes db1 (lookups possibly in flight)" ctl reload
sleep 2
check "the daemon is still alive" kill -0 "$ITEST_DAEMON_PID"
check_eq "db1 is gone" "['db2', 'db3']" "$(status_json | json_get "[b['name'] for b in d['backends']]")"


# --- a slow DNS server: no lookup on the event loop, the first one neither -----
# resolv.conf (bind-mounted, in this mount namespace only) points to a UDP
# socket on 127.0.0.1:53 of this network namespace that is bound but never
# read: no ICMP port unreachable, so glibc waits its whole timeout (6 s, one
# attempt). The names below are not in the hosts file, so `files dns` asks it.
SLOW_S=6
printf 'nameserver 127.0.0.1\noptions timeout:%s attempts:1\n' "$SLOW_S" >"$T/resolv.conf"
itest_bg python3 -c "
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('127.0.0.1', 53))
open('$T/mute-dns.ready', 'w').close()
time.sleep(3600)"
wait_until 5 test -e "$T/mute-dns.ready" >/dev/null
mount --bind "$T/resolv.conf" /etc/resolv.conf ||
	{ echo "not ok - bind-mount the test's resolv.conf"; exit 1; }
SLOW=slow1.mysteer-test.invalid SLOW2=slow2.mysteer-test.invalid
lookup_ms=$(python3 - "$SLOW" <<'PY'
import socket, sys, time
t = time.monotonic()
try:
    socket.getaddrinfo(sys.argv[1], 3306, 0, socket.SOCK_STREAM)
except OSError:
    pass
print(int((time.monotonic() - t) * 1000))
PY
)
measured "a lookup of $SLOW with the mute DNS server: ${lookup_ms} ms"
check "a lookup of a name not in the hosts file is slow here (${lookup_ms} ms >= 2000)" \
	test "$lookup_ms" -ge 2000
ms_now() { date +%s%3N; }
bjson() { # name key (from the saved status $T/st.json)
	json_get "[b['$2'] for b in d['backends'] if b['name']=='$1'][0]" <"$T/st.json"
}
resolving() { # name host: unprobed, no address, health unknown, says why
	test "$(bjson "$1" address)" = None && test "$(bjson "$1" health)" = unknown &&
		bjson "$1" last_error | grep -q "^resolving $2"
}

# add: the command returns at once, the loop goes on during the lookup
t0=$(ms_now)
ctl add slow1 "$SLOW:$P3" priority=400 >/dev/null
rc=$? add_ms=$(($(ms_now) - t0))
check_eq "add slow1 by a name whose lookup is slow: done" 0 "$rc"
measured "mysteerctl add with a ${lookup_ms} ms lookup: ${add_ms} ms"
check "add returns within 1000 ms (${add_ms} ms), not after the lookup" test "$add_ms" -lt 1000
t0=$(ms_now)
status_json >"$T/st.json"
st_ms=$(($(ms_now) - t0))
measured "status during the lookup: ${st_ms} ms"
check "status answers during the lookup (${st_ms} ms)" test "$st_ms" -lt 1000
check "slow1: no address, health unknown, last_error 'resolving $SLOW'" resolving slow1 "$SLOW"
p0=$(bjson db2 last_probe_ms)
sleep 1
status_json >"$T/st.json"
p1=$(bjson db2 last_probe_ms)
measured "db2's last probe advanced by $((p1 - p0)) ms between two status calls (sleep 1 apart) during the slow lookup"
check "db2 is still probed every ${INTERVAL} ms during the lookup ($((p1 - p0)) ms later)" \
	test $((p1 - p0)) -ge $((INTERVAL * 2))
check "1 s later slow1 is still unknown, not down: a lookup is no failed probe" \
	resolving slow1 "$SLOW"
slow1_down() {
	status_json >"$T/st.json"
	test "$(bjson slow1 state)" = down && bjson slow1 last_error | grep -q "^cannot resolve $SLOW"
}
ms=$(wait_until $((SLOW_S * 3)) slow1_down)
check "once the lookup failed slow1 is down: 'cannot resolve $SLOW' (${ms} ms)" slow1_down
measured "slow1 down after its first lookup failed: ${ms} ms after the first status"
sleep $((SLOW_S + 1))
check_eq "one warning for slow1's failed lookups" 1 "$(log_count "slow1: cannot resolve $SLOW")"
check_eq "no log line a skipped probe" 0 "$(log_count "resolving $SLOW")"
check "remove slow1" ctl remove slow1
itest_daemon_stop TERM

# start: the admin socket and the other backends do not wait for the lookup
ITEST_BACKENDS="1 2" itest_write_config "$T/slow.conf" - <<CONF
[backend:slow1]
host = $SLOW
port = $P3
priority = 300
CONF
rm -f "$T/state"
t0=$(ms_now)
itest_daemon_start "$T/slow.conf" || exit 1
admin_ms=$(($(ms_now) - t0))
measured "start with slow1 in the config: admin socket answers after ${admin_ms} ms"
up_and_slow1_resolving() {
	status_json >"$T/st.json" && test "$(json_get 'd["writer"]' <"$T/st.json")" = db1 &&
		test "$(bjson db1 state)" = up && test "$(bjson db2 state)" = up
}
ms=$(wait_until 10 up_and_slow1_resolving)
up_ms=$(($(ms_now) - t0))
check "db1 up and the writer, db2 up, after start (${up_ms} ms)" up_and_slow1_resolving
measured "start with slow1 in the config: db1 and db2 up ${up_ms} ms after launch"
check "... while slow1's first lookup still runs (it takes ${lookup_ms} ms)" \
	resolving slow1 "$SLOW"
check "the admin socket answered before the lookup could end (${admin_ms} < ${lookup_ms} ms)" \
	test "$admin_ms" -lt "$lookup_ms"

# reload with a new backend named by a slow name
cat >>"$T/slow.conf" <<CONF
[backend:slow2]
host = $SLOW2
port = $P3
priority = 400
CONF
t0=$(ms_now)
ctl reload >/dev/null
rc=$? reload_ms=$(($(ms_now) - t0))
check_eq "reload adding slow2: done" 0 "$rc"
measured "reload adding a name with a ${lookup_ms} ms lookup: ${reload_ms} ms"
check "reload returns within 1000 ms (${reload_ms} ms)" test "$reload_ms" -lt 1000
status_json >"$T/st.json"
check "slow2 is resolving after the reload" resolving slow2 "$SLOW2"
check "db1 still the writer" test "$(json_get 'd["writer"]' <"$T/st.json")" = db1
itest_daemon_stop TERM

# --- slow lookups do not hold up a name the hosts file answers ------------------
# Three names only the mute DNS server could answer are being looked up (6 s
# each); a backend added then by a name of the hosts file resolves and comes up
# at once: the lookups run on a small pool of threads (up to 4), not one after
# the other on one thread (where it waited >= 6 s for slow1 alone).
FAST=mysteer-test-fast SLOW3=slow3.mysteer-test.invalid
SLOWS=("" "$SLOW" "$SLOW2" "$SLOW3") # slowN is ${SLOWS[N]}
FAST_DEADLINE_MS=3000 # well under SLOW_S; a lookup there and rise = 2 probes
echo "127.0.0.1 $FAST" >>"$HOSTS"
fast_ms=$(python3 - "$FAST" <<'PY'
import socket, sys, time
t = time.monotonic()
socket.getaddrinfo(sys.argv[1], 3306, 0, socket.SOCK_STREAM)
print(int((time.monotonic() - t) * 1000))
PY
)
measured "a lookup of $FAST (hosts file) with the mute DNS server: ${fast_ms} ms"
check "a name of the hosts file resolves at once here (${fast_ms} ms < 1000)" \
	test "${fast_ms:-99999}" -lt 1000
ITEST_BACKENDS="1 2" itest_write_config "$T/pool.conf"
rm -f "$T/state"
log0=$(wc -l <"$T/mysteerd.log") # this daemon's lines only: slow1 was used above
log_count_now() { tail -n +"$((log0 + 1))" "$T/mysteerd.log" | grep -c -- "$1"; }
itest_daemon_start "$T/pool.conf" || exit 1
wait_until 10 up_writer db1 >/dev/null
t_slow=$(ms_now)
for n in 1 2 3; do
	host=${SLOWS[n]}
	check "add slow$n ($host) while the other slow lookups run" \
		ctl add "slow$n" "$host:$P3" priority=$((400 + n))
done
sleep 0.3
t0=$(ms_now)
check "add fast1 ($FAST, in the hosts file) behind three slow lookups" \
	ctl add fast1 "$FAST:$P3" priority=500
fast_up() {
	status_json >"$T/st.json" && test "$(bjson fast1 state)" = up &&
		test "$(bjson fast1 address)" = 127.0.0.1
}
wait_until $((SLOW_S * 5)) fast_up >/dev/null
fast_up_ms=$(($(ms_now) - t0)) since_slow_ms=$(($(ms_now) - t_slow))
measured "fast1 up ${fast_up_ms} ms after its add, with 3 lookups of ${lookup_ms} ms started ${since_slow_ms} ms before it came up"
check "fast1 up at 127.0.0.1 within ${FAST_DEADLINE_MS} ms of its add (${fast_up_ms} ms), not after the slow lookups" \
	test "$fast_up_ms" -lt "$FAST_DEADLINE_MS"
for n in 1 2 3; do
	host=${SLOWS[n]}
	check "slow$n still resolving when fast1 came up" resolving "slow$n" "$host"
done
check "db1 still the writer" up_writer db1
# No result lost: every slow lookup answers (fails), each name goes down.
slows_down() {
	status_json >"$T/st.json" || return 1
	local n host
	for n in 1 2 3; do
		host=${SLOWS[n]}
		test "$(bjson "slow$n" state)" = down || return 1
		bjson "slow$n" last_error | grep -q "^cannot resolve $host" || return 1
	done
}
ms=$(wait_until $((SLOW_S * 3)) slows_down)
check "slow1, slow2 and slow3 all down: 'cannot resolve' (${ms} ms)" slows_down
measured "slow1..3 down ${ms} ms after fast1 came up"
for n in 1 2 3; do
	host=${SLOWS[n]}
	check_eq "one warning for slow$n" 1 "$(log_count_now "slow$n: cannot resolve $host")"
done
check "fast1 still up" test "$(bjson fast1 state)" = up
# Stopped while the slow names are looked up again (once a second after a
# failed probe, each stuck 6 s): every stuck thread is left behind, detached.
t0=$(ms_now)
itest_daemon_stop TERM
stop_ms=$(($(ms_now) - t0))
measured "SIGTERM with 3 lookups stuck: stopped in ${stop_ms} ms"
check_eq "the daemon exits 0 on SIGTERM with lookups stuck" 0 "$ITEST_DAEMON_RC"
check "... within 3000 ms (${stop_ms} ms), not after the lookups" test "$stop_ms" -lt 3000
umount /etc/resolv.conf

itest_done
