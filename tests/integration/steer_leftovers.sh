#!/usr/bin/env bash
# steer_leftovers.sh - what a mysteerd leaves behind, and who may touch it:
# one daemon a bpffs_dir (a second one is refused, naming the first one's
# pid), one a cgroup; a daemon started on another bpffs_dir after a SIGKILL
# removes the old programs from the test's cgroup and netns instead of
# running behind them; lookup = off removes a pinned sk_lookup link of an
# earlier run; maps of another ABI are replaced; a SIGTERM leaves nothing
# pinned; `mysteerctl detach` removes everything, daemon running or not.
# Everything in the test's own cgroup, netns and bpffs (lib.sh).
. "$(dirname "$0")/lib.sh"
itest_init steer_leftovers

PEER=$ITEST_BUILD/tests/peer_check
[ -n "$ITEST_CGROUP" ] || { echo "not ok - no cgroup2 mount"; exit 1; }
NETNS_INO=$(stat -L -c %i /proc/self/ns/net)

incg() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$ITEST_CGROUP" "$@"; }
writer_is() { [ "$(ctl_writer)" = "$1" ]; }
quiet() { "$@" >/dev/null; }
# mysteer programs attached to the test cgroup
attached() { bpftool cgroup show "$ITEST_CGROUP" 2>/dev/null | grep -cE 'ms_(connect|getpeername|sockops)'; }
# sk_lookup links on the test netns
lookup_links() {
	bpftool link show 2>/dev/null | awk -v ino="$NETNS_INO" '
		/^[0-9]+: netns/ {n = 1; next}
		/^[0-9]+:/ {n = 0}
		n && /netns_ino/ {for (i = 1; i <= NF; i++) if ($i == "netns_ino" && $(i+1) == ino) c++}
		END {print c + 0}'
}
land() { "$@" 2>&1 | awk '$1 == "port" {print $2; exit} $1 == "error" {print; exit}'; }
# A second daemon in the foreground: its exit code, its log in $2.
second() { # config log
	timeout 30 "$MYSTEERD" -c "$1" -f >"$2" 2>&1
	echo $?
}
# A config like $T/mysteer.conf with its own admin socket and state file,
# and bpffs_dir $3 (for a second daemon beside the test's).
variant() { # name file bpffs_dir
	sed -e "s|^admin_socket = .*|admin_socket = $T/$1.sock|" \
		-e "s|^state_file = .*|state_file = $T/$1.state|" \
		-e "s|^bpffs_dir = .*|bpffs_dir = $3|" "$T/mysteer.conf" >"$2"
	chmod 600 "$2"
}

itest_sandbox_up
itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 writer_is db1 >/dev/null
first=$ITEST_DAEMON_PID
check_eq "5 mysteer programs on the test cgroup" 5 "$(attached)"
check_eq "one sk_lookup link on the test netns" 1 "$(lookup_links)"

# --- one daemon a bpffs_dir: a second one on the same directory is refused.
variant second "$T/second.conf" /sys/fs/bpf/mysteer
rc=$(second "$T/second.conf" "$T/second.log")
echo "# $(grep -m1 'error' "$T/second.log")"
check "a second daemon on the same bpffs_dir exits non-zero ($rc)" [ "$rc" != 0 -a "$rc" != 124 ]
check "it names the first daemon's pid ($first)" \
	grep -q "bpffs_dir /sys/fs/bpf/mysteer is in use by pid $first (mysteerd)" "$T/second.log"
# ... and one a cgroup: another bpffs_dir on the same cgroup is refused too.
variant third "$T/third.conf" /sys/fs/bpf/other
rc=$(second "$T/third.conf" "$T/third.log")
echo "# $(grep -m1 'error' "$T/third.log")"
check "a second daemon on the same cgroup exits non-zero ($rc)" [ "$rc" != 0 -a "$rc" != 124 ]
check "it names the running daemon's pid" \
	grep -q "of mysteerd pid $first is attached to this cgroup" "$T/third.log"
check_eq "the first daemon still steers: 6446 lands on the writer" "$P1" \
	"$(land incg "$PEER" count 127.0.0.1 6446 1)"
check_eq "still 5 programs on the cgroup" 5 "$(attached)"

# --- SIGKILL, a failover while no daemon runs, and a daemon on another
# bpffs_dir: the old programs (pinned under the old directory, with the old
# writer in their maps) must not run ahead of the new ones.
sed "s|^bpffs_dir = .*|bpffs_dir = /sys/fs/bpf/other|" "$T/mysteer.conf" >"$T/other.conf"
itest_daemon_stop KILL
sb promote "$P2" >/dev/null
check_eq "after SIGKILL the old programs stay attached" "5 1" "$(attached) $(lookup_links)"
itest_daemon_start "$T/other.conf" || exit 1
ms=$(wait_until 15 writer_is db2)
measured "daemon on /sys/fs/bpf/other: writer db2 in ${ms} ms"
check_eq "the old programs were removed: 5 on the cgroup, 1 sk_lookup link" "5 1" \
	"$(attached) $(lookup_links)"
check "the daemon said it removed them" \
	grep -q 'removed link .*(ms_connect4) that an earlier mysteerd left' "$T/mysteerd.log"
check_eq "connect path: 6446 lands on the new writer" "$P2" "$(land incg "$PEER" count 127.0.0.1 6446 1)"
check_eq "sk_lookup: 6446 lands on the new writer" "$P2" "$(land "$PEER" count 127.0.0.1 6446 1)"
check "the old directory's pins are not its business" test -e /sys/fs/bpf/mysteer/route_sel

# --- lookup = off after a run with lookup = on left its pinned link.
itest_daemon_stop KILL
check_eq "after SIGKILL the sk_lookup link stays" 1 "$(lookup_links)"
sed -i 's/^\[steer\]$/[steer]\nlookup = off/' "$T/other.conf"
itest_daemon_start "$T/other.conf" || exit 1
wait_until 10 writer_is db2 >/dev/null
check_eq "lookup = off: the earlier sk_lookup link is removed" 0 "$(lookup_links)"
check "and unpinned" test ! -e /sys/fs/bpf/other/link_sk_lookup
check_eq "connect steering goes on: 6446 lands on the writer" "$P2" \
	"$(land incg "$PEER" count 127.0.0.1 6446 1)"
itest_daemon_stop TERM
check_eq "SIGTERM leaves nothing pinned under the bpffs_dir" "" "$(ls /sys/fs/bpf/other 2>/dev/null)"
check_eq "and nothing attached" "0 0" "$(attached) $(lookup_links)"

# --- a map of another ABI pinned under bpffs_dir (an older mysteerd's):
# replaced, not a failed start.
mkdir -p /sys/fs/bpf/mysteer
rm -f /sys/fs/bpf/mysteer/services
bpftool map create /sys/fs/bpf/mysteer/services type hash key 4 value 4 entries 8 name services
itest_daemon_start "$T/mysteer.conf" || exit 1
ms=$(wait_until 15 writer_is db2)
check "with a stale pinned map the daemon starts and decides (${ms} ms)" writer_is db2
check "it said it replaced the map" grep -q 'pinned map services is of another ABI' "$T/mysteerd.log"
check_eq "6446 lands on the writer" "$P2" "$(land incg "$PEER" count 127.0.0.1 6446 1)"

# --- mysteerctl detach, daemon down (SIGKILL): everything goes.
itest_daemon_stop KILL
check_eq "after SIGKILL programs stay" "5 1" "$(attached) $(lookup_links)"
out=$("$MYSTEERCTL" -c "$T/mysteer.conf" detach 2>&1)
rc=$?
echo "# $out"
check "detach with the daemon down exits 0 ($rc)" [ $rc = 0 ]
check_eq "no program on the cgroup, no sk_lookup link" "0 0" "$(attached) $(lookup_links)"
check_eq "nothing pinned" "" "$(ls /sys/fs/bpf/mysteer 2>/dev/null)"

# --- mysteerctl detach with the daemon running: everything goes, and the
# daemon is named.
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 writer_is db2 >/dev/null
check_eq "a new daemon attached again" "5 1" "$(attached) $(lookup_links)"
out=$("$MYSTEERCTL" -c "$T/mysteer.conf" detach 2>&1)
rc=$?
echo "# $out"
check "detach with the daemon running exits 0 ($rc)" [ $rc = 0 ]
check "it names the running daemon" grep -q "mysteerd pid $ITEST_DAEMON_PID still runs" <<<"$out"
check_eq "no program on the cgroup, no sk_lookup link" "0 0" "$(attached) $(lookup_links)"
check_eq "nothing pinned" "" "$(ls /sys/fs/bpf/mysteer 2>/dev/null)"
out=$(land incg "$PEER" count 127.0.0.1 6446 1)
check "6446 is not steered any more ($out)" grep -q '^error' <<<"$out"
out=$("$MYSTEERCTL" -c "$T/mysteer.conf" --json detach 2>&1)
echo "# $out"
check "a second detach finds nothing and exits 0" \
	grep -q '"unpinned":0,"links_detached":0' <<<"$out"
itest_daemon_stop TERM
check_eq "the daemon then stops cleanly" 0 "$ITEST_DAEMON_RC"
itest_done
