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
port_of() { incg "$PEER" count "$1" "$2" 1 | awk '$1 == "port" {print $2}'; }
attached() { bpftool cgroup show "$ITEST_CGROUP" 2>/dev/null | grep -cE 'connect|getpeername|sock_ops'; }

itest_sandbox_up
# db3 counts three times db2 in the reader split.
ITEST_STEER_EXTRA="vip = 127.0.0.1, ::1
lookup = off" itest_write_config "$T/mysteer.conf"
sed -i "/^port = $P3/a weight = 3" "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 test "$(ctl_writer)" = db1 >/dev/null
wait_until 10 test "$(ctl_readers)" = "db2 db3" >/dev/null

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

start=$(date +%s%3N)
dist=$(incg "$PEER" count 127.0.0.1 6447 1000)
measured "1000 connections to 6447 in $(( $(date +%s%3N) - start )) ms: $(echo $dist)"
n2=$(echo "$dist" | awk -v p="$P2" '$1 == "port" && $2 == p {print $3}')
n3=$(echo "$dist" | awk -v p="$P3" '$1 == "port" && $2 == p {print $3}')
check "6447: db2 gets 250 +- 10% of 1000 (got ${n2:-0})" [ "${n2:-0}" -ge 225 -a "${n2:-0}" -le 275 ]
check "6447: db3 gets 750 +- 10% of 1000 (got ${n3:-0})" [ "${n3:-0}" -ge 675 -a "${n3:-0}" -le 825 ]
check "6447: no error, none on the writer" [ "$(echo "$dist" | grep -c "port $P1 ")" = 0 -a \
	"$(echo "$dist" | awk '$1 == "errors" {print $2}')" = 0 ]

itest_done
