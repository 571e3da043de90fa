#!/usr/bin/env bash
# privdrop.sh - [mysteerd] user: once set up, every thread of mysteerd runs as
# the system user mysteer (/proc/PID/task/*/status: Uid, CapEff holding only
# CAP_BPF, CAP_NET_ADMIN, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, NoNewPrivs),
# and what it does from
# then on still works: connect steering and sk_lookup follow a failover (map
# updates), close_on_demote closes a held connection, a restarted local
# server's listener is taken again (pidfd_getfd), the 6450 proxy serves, a
# reload re-reads the config and adds a route, and SIGTERM removes every pin.
. "$(dirname "$0")/lib.sh"
itest_init privdrop

PEER=$ITEST_BUILD/tests/peer_check
[ -n "$ITEST_CGROUP" ] || { echo "not ok - no cgroup2 mount"; exit 1; }
# The system user of the sandbox and the tests (install-deps.sh makes it too).
if ! getent passwd mysteer >/dev/null; then
	useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
		mysteer || { echo "not ok - useradd mysteer"; exit 1; }
fi
UID_M=$(id -u mysteer)

incg() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$ITEST_CGROUP" "$@"; }
port_of() { incg "$PEER" count "$1" "$2" 1 | awk '$1 == "port" {print $2}'; }
writer_is() { [ "$(ctl_writer)" = "$1" ]; }

itest_sandbox_up

# The daemon's own directory, as /var/lib/mysteer would be: the config (read
# again by reload) and the state file belong to mysteer. $T is root's: it
# may be passed through, not read.
chmod 711 "$T"
D=$T/mysteer
mkdir "$D"
itest_write_config "$D/mysteer.conf"
sed -i -e "s|^state_file = .*|state_file = $D/state|" \
	-e 's|^\[mysteerd\]$|[mysteerd]\nuser = mysteer|' "$D/mysteer.conf"
chown -R mysteer: "$D"
itest_daemon_start "$D/mysteer.conf" || exit 1
PID=$ITEST_DAEMON_PID
wait_until 20 writer_is db1 >/dev/null

# --- what the threads run with ------------------------------------------------------
# CAP_DAC_READ_SEARCH 2, CAP_NET_ADMIN 12, CAP_SYS_PTRACE 19, CAP_BPF 39
want_cap=$(printf '%016x' $(((1 << 2) | (1 << 12) | (1 << 19) | (1 << 39))))
status_of() { awk -v k="$2:" '$1 == k {$1 = ""; print substr($0, 2)}' "$1/status"; }
check_eq "Uid of the daemon: mysteer ($UID_M) in all four fields" \
	"$UID_M $UID_M $UID_M $UID_M" "$(status_of /proc/$PID Uid)"
check_eq "CapEff: CAP_BPF, CAP_NET_ADMIN, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH" "$want_cap" "$(status_of /proc/$PID CapEff)"
check_eq "CapPrm: the same" "$want_cap" "$(status_of /proc/$PID CapPrm)"
check_eq "NoNewPrivs" 1 "$(status_of /proc/$PID NoNewPrivs)"
bad=
n=0
for t in /proc/$PID/task/*; do
	n=$((n + 1))
	line="$(cat "$t/comm"): $(status_of "$t" Uid | cut -d' ' -f1) $(status_of "$t" CapEff) $(status_of "$t" NoNewPrivs)"
	[ "$line" = "$(cat "$t/comm"): $UID_M $want_cap 1" ] || bad="$bad [$line]"
done
echo "# $n threads"
check "every thread ($n) runs as mysteer with those capabilities alone${bad:+:$bad}" [ -z "$bad" ]
check "the log says so" grep -q "running as mysteer (uid $UID_M): capabilities CAP_BPF, CAP_NET_ADMIN, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH" "$T/mysteerd.log"

# --- and it still works ----------------------------------------------------------------
check_eq "connect4: 6446 lands on the writer" "$P1" "$(port_of 127.0.0.1 6446)"
check_eq "sk_lookup: 6446 lands on the writer" "$P1" "$(sql 6446 'SELECT @@port')"
r=$(sql 6447 'SELECT @@port')
check "sk_lookup: 6447 lands on a replica ($r)" [ "$r" = "$P2" -o "$r" = "$P3" ]
wait_until 20 sql 6450 'SELECT 1' >/dev/null
check_eq "6450 serves" "$P1" "$(sql 6450 'SELECT @@port FOR UPDATE')"

# a failover: the maps are written as mysteer, and close_on_demote's
# iterator closes a connection steered to the old writer, which stays up
incg mariadb --no-defaults -h 127.0.0.1 -P 6446 -u app -papp -N -B \
	-e 'SELECT @@port; SELECT SLEEP(60)' >"$T/held.out" 2>&1 &
held=$!
ITEST_PIDS+=($held)
wait_until 10 grep -q "$P1" "$T/held.out" >/dev/null
sb promote "$P2" >/dev/null
ms=$(wait_until 30 writer_is db2)
check "after a failover db2 is the writer (${ms} ms)" writer_is db2
gone() { ! kill -0 "$held" 2>/dev/null; }
ms=$(wait_until 30 gone)
check "close_on_demote: the connection held on the old writer is closed (${ms} ms)" gone
sed 's/^/# held: /' "$T/held.out"
check_eq "connect4: 6446 follows to the new writer" "$P2" "$(port_of 127.0.0.1 6446)"
check_eq "sk_lookup: 6446 follows too" "$P2" "$(sql 6446 'SELECT @@port')"
check_eq "6450 follows too" "$P2" "$(sql 6450 'SELECT @@port FOR UPDATE')"

# a local server restarts: its new listener is taken with pidfd_getfd
# (CAP_SYS_PTRACE) for the sk_lookup handoff
sb kill "$P3" >/dev/null
sb start "$P3" >/dev/null
has_db3() { [[ " $(ctl_readers) " == *" db3 "* ]]; }
wait_until 30 has_db3 >/dev/null
back() { "$PEER" count 127.0.0.1 6447 20 | grep -q "^port $P3 "; }
ms=$(wait_until 20 back)
check "after db3 restarts, sk_lookup hands 6447 to its new listener (${ms} ms)" back
n=$(grep -c 'lookup: db3: local handoff to the server' "$T/mysteerd.log")
check "db3's listener was taken again after the drop (handed off $n times)" [ "$n" -ge 2 ]

# a reload reads the config as mysteer and adds a route
printf '\n[route:rw2]\nport = 6448\nrole = writer\n' >>"$D/mysteer.conf"
out=$(ctl reload 2>&1)
check "reload as mysteer ($out)" [ $? -eq 0 ]
ok() { [ "$(port_of 127.0.0.1 6448)" = "$P2" ]; }
ms=$(wait_until 20 ok)
check "the route added by reload steers to the writer (${ms} ms)" ok
check_eq "sk_lookup on the added route too" "$P2" "$(sql 6448 'SELECT @@port')"
check "a runtime change is saved in the state file" ctl set db3 weight=2
check "the state file holds it" grep -q '"weight"' "$D/state"

check "nothing was refused for want of a privilege" \
	bash -c "! grep -Ei 'operation not permitted|permission denied|EPERM' '$T/mysteerd.log'"
grep -Ei 'operation not permitted|permission denied' "$T/mysteerd.log" | head -5 | sed 's/^/# /'

itest_daemon_stop TERM
check_eq "SIGTERM: the daemon exits 0" 0 "$ITEST_DAEMON_RC"
check_eq "SIGTERM: nothing is left pinned" "" "$(find /sys/fs/bpf/mysteer -mindepth 1 2>/dev/null | head -3)"

itest_done
