#!/usr/bin/env bash
# steer_ids.sh - backend ids survive a restart: after `mysteerctl remove` /
# `add` and a reordered [backend:] config, a SIGKILL and a restart of
# mysteerd, with 6446 connects running throughout by connect steering (a
# client in the steered cgroup) and by sk_lookup handoff (a client outside
# it), every connect lands on the writer; every backend keeps the id it had
# (the pinned maps and the sockets' marks keep meaning the same server); and
# sockops credits the connections held across the restart to the backend
# they are open to; a promote then closes the old writer's connection
# steered before the restart.
. "$(dirname "$0")/lib.sh"
itest_init steer_ids

PEER=$ITEST_BUILD/tests/peer_check
[ -n "$ITEST_CGROUP" ] || { echo "not ok - no cgroup2 mount"; exit 1; }
incg() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$ITEST_CGROUP" "$@"; }
writer_is() { [ "$(ctl_writer)" = "$1" ]; }
readers_are() { [ "$(ctl_readers)" = "$1" ]; }
ids() { status_json | json_get "' '.join(sorted('%s=%s' % (b['name'], b['id']) for b in d['backends']))"; }

itest_sandbox_up
ITEST_STEER_EXTRA="lookup = on
local_handoff = on" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 writer_is db1 >/dev/null
wait_until 10 readers_are "db2 db3" >/dev/null

# db3 removed and added again: a new id, past the config's.
ctl remove db3 >/dev/null
ctl add db3 "127.0.0.1:$P3" priority=300 >/dev/null
ms=$(wait_until 15 readers_are "db2 db3")
check "db3 removed and added is a reader again (${ms} ms)" readers_are "db2 db3"
before=$(ids)
echo "# ids before the restart: $before"
check_eq "handoff: 6446 lands on the writer" "port $P1 1" \
	"$("$PEER" count 127.0.0.1 6446 1 | grep '^port')"
check_eq "connect steering: 6446 lands on the writer" "port $P1 1" \
	"$(incg "$PEER" count 127.0.0.1 6446 1 | grep '^port')"

# Connections steered before the restart, held across it.
incg "$PEER" hold 127.0.0.1 6446 "$T/go" >"$T/hold-w.out" 2>&1 &
ITEST_PIDS+=($!)
hold_w=$!
hold_r=()
for i in 1 2 3 4 5 6; do
	incg "$PEER" hold 127.0.0.1 6447 "$T/go" >"$T/hold-r$i.out" 2>&1 &
	ITEST_PIDS+=($!)
	hold_r+=($!)
done
held() { [ "$(cat "$T"/hold-*.out 2>/dev/null | grep -c '^before')" = 7 ]; }
wait_until 15 held >/dev/null

# Streams of new connects to 6446 across the restart, by both paths.
"$PEER" count 127.0.0.1 6446 500 5 >"$T/s-lookup.out" 2>&1 &
s1=$!
ITEST_PIDS+=($s1)
incg "$PEER" count 127.0.0.1 6446 500 5 >"$T/s-connect.out" 2>&1 &
s2=$!
ITEST_PIDS+=($s2)
sleep 1
itest_daemon_stop KILL
# The same backends in another order: db3 first (config order no longer
# gives the ids).
ITEST_BACKENDS="3 2 1" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 15 readers_are "db2 db3" >/dev/null
wait "$s1" "$s2"
measured "6446 by sk_lookup across SIGKILL + restart: $(echo $(cat "$T/s-lookup.out"))"
measured "6446 by connect steering across SIGKILL + restart: $(echo $(cat "$T/s-connect.out"))"
for s in lookup connect; do
	check_eq "$s: every connect of the stream landed on the writer" "port $P1 500" \
		"$(grep '^port' "$T/s-$s.out" | tr '\n' ' ' | sed 's/ $//')"
	check_eq "$s: no connect of the stream failed" "errors 0" "$(grep '^errors' "$T/s-$s.out")"
done
check_eq "every backend kept its id across the restart" "$before" "$(ids)"
# sockops counts the held connections (marked before the restart) against
# the backend they are open to.
want="db1=1 db2=$(cat "$T"/hold-r*.out | grep -c "^before $P2") db3=$(cat "$T"/hold-r*.out | grep -c "^before $P3")"
active() { status_json | json_get "' '.join(sorted('%s=%s' % (b['name'], b['active']) for b in d['backends']))"; }
wait_until 10 test "$(active)" = "$want" >/dev/null
check_eq "active connections are credited to the backend they are open to" "$want" "$(active)"
check "the log says the ids were kept" grep -q 'backend id [0-9]*, as before the restart' \
	"$T/mysteerd.log"

# A promote: the old writer's connection steered before the restart is
# closed; a reader that becomes the writer keeps its read connections.
sb promote "$P2" >/dev/null
ms=$(wait_until 15 writer_is db2)
check "db2 is the writer after the promote (${ms} ms)" writer_is db2
touch "$T/go"
wait "$hold_w" "${hold_r[@]}" 2>/dev/null
check_eq "the held 6446 connection started on the old writer" "before $P1" \
	"$(grep '^before' "$T/hold-w.out")"
check "the old writer's connection steered before the restart was closed" \
	grep -q '^after-error' "$T/hold-w.out"
# The readers' connections may be closed too: the promote stops
# replication on both for a moment (no role, close_on_demote).
for i in 1 2 3 4 5 6; do
	echo "# 6447 hold $i: $(echo $(cat "$T/hold-r$i.out"))"
done

itest_daemon_stop TERM
itest_done
