#!/usr/bin/env bash
# lookup_demote.sh - close-on-demote for the connections sk_lookup steers on
# the router host: a client of 6446 (IPv4 and IPv6) handed over to the
# writer's own listener, then one carried by the relay (local_handoff = off),
# holds its connection across a promote; its next statement fails (the
# server's side was destroyed, or the relay ended the pair), and its
# reconnect lands on the new writer. The clients are not in the steered
# cgroup, so only sk_lookup sees them.
. "$(dirname "$0")/lib.sh"
itest_init lookup_demote

PEER=$ITEST_BUILD/tests/peer_check
itest_sandbox_up
ITEST_STEER_EXTRA="lookup = on
local_handoff = on" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
writer_is() { test "$(ctl_writer)" = "$1"; }
wait_until 10 writer_is db1 >/dev/null
wait_until 10 test "$(ctl_readers)" = "db2 db3" >/dev/null

# hold NAME HOST: a connection to HOST:6446 held until $T/go-NAME exists.
holds=()
hold() {
	rm -f "$T/go-$1"
	"$PEER" hold "$2" 6446 "$T/go-$1" >"$T/hold-$1.out" 2>&1 &
	holds+=($!)
	ITEST_PIDS+=($!)
	wait_until 10 grep -q '^before' "$T/hold-$1.out" >/dev/null
}
release() { # names...
	local n p
	for n in "$@"; do touch "$T/go-$n"; done
	for p in "${holds[@]}"; do wait "$p" 2>/dev/null; done
	holds=()
}
# check_closed NAME LABEL OLD NEW: started on OLD, closed, reconnect on NEW.
check_closed() {
	local f=$T/hold-$1.out
	check_eq "$2: the held connection started on the writer" "before $3" "$(grep '^before' "$f")"
	check "$2: its next statement failed ($(grep -m1 '^after' "$f"))" grep -q '^after-error' "$f"
	check_eq "$2: its reconnect lands on the new writer" "reconnect $4" "$(grep '^reconnect' "$f")"
}

# --- local handoff
hold ho4 127.0.0.1
hold ho6 ::1
check_eq "handoff: nothing went through the relay" 0 \
	"$(status_json | json_get "d['lookup']['relay_accepted']")"
check "handoff: the writer's listener was taken" \
	[ "$(status_json | json_get "d['lookup']['handoffs']")" -ge 1 ]
sb promote "$P2" >/dev/null
ms=$(wait_until 15 writer_is db2)
measured "writer db1 -> db2 seen in ${ms} ms"
wait_until 10 grep -q 'close_on_demote: closed [1-9]' "$T/mysteerd.log" >/dev/null
release ho4 ho6
check_closed ho4 "handoff over IPv4" "$P1" "$P2"
check_closed ho6 "handoff over IPv6" "$P1" "$P2"
line=$(grep 'close_on_demote: closed [1-9]' "$T/mysteerd.log" | tail -n 1)
check "the iterator closed the handed-over connections (${line#* info: })" \
	grep -q 'closed [2-9]' <<<"$line"

# --- the relay
itest_daemon_stop TERM
sed -i 's/^local_handoff = on/local_handoff = off/' "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 writer_is db2 >/dev/null
wait_until 10 test "$(ctl_readers)" = "db1 db3" >/dev/null
hold re4 127.0.0.1
hold re6 ::1
check "relay: the held connections went through the relay" \
	[ "$(status_json | json_get "d['lookup']['relay_active']")" -ge 2 ]
sb promote "$P3" >/dev/null
ms=$(wait_until 15 writer_is db3)
measured "writer db2 -> db3 seen in ${ms} ms"
wait_until 10 grep -q 'relay: closed' "$T/mysteerd.log" >/dev/null
release re4 re6
check_closed re4 "relay over IPv4" "$P2" "$P3"
check_closed re6 "relay over IPv6" "$P2" "$P3"
check "the relay logged the close of its pairs" grep -q 'relay: closed [1-9]' "$T/mysteerd.log"

itest_daemon_stop TERM
itest_done
