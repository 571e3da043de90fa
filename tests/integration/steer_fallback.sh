#!/usr/bin/env bash
# steer_fallback.sh - kernels older than this one, made up with the test
# knob MYSTEER_TEST_NO_FEATURE: without the bpf_sock_destroy kfunc (before
# 6.5) close-on-demote lists the sockets with an iterator and destroys them
# with sock_diag SOCK_DESTROY: a connect-steered client and one handed over by
# sk_lookup, held across a promote, are closed and reconnect to the new
# writer. Without sock_diag too, and without sk_lookup, the daemon still
# starts, runs connect steering, and says what is off and why (log, status).
# Without the getpeername hooks (before 5.8) connect4 alone steers, and the
# application sees the server's address as its peer.
. "$(dirname "$0")/lib.sh"
itest_init steer_fallback

PEER=$ITEST_BUILD/tests/peer_check
incg() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$ITEST_CGROUP" "$@"; }
writer_is() { [ "$(ctl_writer)" = "$1" ]; }
itest_sandbox_up
ITEST_STEER_EXTRA="lookup = on
local_handoff = on" itest_write_config "$T/mysteer.conf"
export MYSTEER_TEST_NO_FEATURE=sock_destroy
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 writer_is db1 >/dev/null
check "the start line says close_on_demote runs by sock_diag, and why" \
	grep -q 'kernel features: connect4/getpeername on; close_on_demote by sock_diag SOCK_DESTROY (bpf_sock_destroy: off by MYSTEER_TEST_NO_FEATURE)' "$T/mysteerd.log"
by=$(status_json | json_get "d.get('close_on_demote', '')")
check "status says it too ($by)" grep -q '^by sock_diag SOCK_DESTROY' <<<"$by"

rm -f "$T/go"
incg "$PEER" hold 127.0.0.1 6446 "$T/go" >"$T/cg.out" 2>&1 &
ITEST_PIDS+=($!)
p1=$!
"$PEER" hold 127.0.0.1 6446 "$T/go" >"$T/ho.out" 2>&1 &
ITEST_PIDS+=($!)
p2=$!
wait_until 10 grep -q '^before' "$T/cg.out" >/dev/null
wait_until 10 grep -q '^before' "$T/ho.out" >/dev/null
sb promote "$P2" >/dev/null
wait_until 15 writer_is db2 >/dev/null
wait_until 10 grep -q 'close_on_demote: closed [1-9].*(sock_diag)' "$T/mysteerd.log" >/dev/null
touch "$T/go"
wait "$p1" "$p2" 2>/dev/null
for k in cg ho; do
	label=$([ $k = cg ] && echo "connect-steered" || echo "handed over")
	check_eq "$label: started on the old writer" "before $P1" "$(grep '^before' "$T/$k.out")"
	check "$label: closed by sock_diag ($(grep -m1 '^after' "$T/$k.out"))" grep -q '^after-error' "$T/$k.out"
	check_eq "$label: its reconnect lands on the new writer" "reconnect $P2" "$(grep '^reconnect' "$T/$k.out")"
done
line=$(grep 'close_on_demote: closed [1-9].*(sock_diag)' "$T/mysteerd.log" | tail -n 1)
measured "${line#* info: }"
check "the daemon logged the closes by sock_diag" [ -n "$line" ]
closed=$(status_json | json_get "sum(s['value'] for s in d['metrics']['mysteer_kernel_closed_on_demote_total']['series'] if s['labels']['backend'] == 'db1')")
check "mysteer_kernel_closed_on_demote_total counts db1's sock_diag closes ($closed)" [ "${closed%.*}" -ge 2 ]

# --- nothing to close with, and no sk_lookup: it starts and says so.
itest_daemon_stop TERM
export MYSTEER_TEST_NO_FEATURE=sock_destroy,sock_diag,sk_lookup
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 writer_is db2 >/dev/null
check "close_on_demote off: the start line says why" \
	grep -q 'close_on_demote off (bpf_sock_destroy: off by MYSTEER_TEST_NO_FEATURE; sock_diag SOCK_DESTROY' "$T/mysteerd.log"
check "sk_lookup off: the daemon says so" \
	grep -q 'kernel features: sk_lookup off (off by MYSTEER_TEST_NO_FEATURE)' "$T/mysteerd.log"
off=$(status_json | json_get "d.get('sk_lookup_off', '')")
check_eq "status says sk_lookup is off and why" "off by MYSTEER_TEST_NO_FEATURE" "$off"
check_eq "connect steering still runs" "port $P2 1" "$(incg "$PEER" count 127.0.0.1 6446 1 | grep '^port')"

# --- no getpeername hooks (before 5.8): connect4 alone steers.
peer_of_6446() { incg python3 -c '
import socket; s = socket.create_connection(("127.0.0.1", 6446), timeout=5)
print("%s:%d" % s.getpeername())'; }
check_eq "with the hooks, the application's peer is the VIP" "127.0.0.1:6446" "$(peer_of_6446)"
# SIGKILL leaves its links pinned, as a crash or a kernel downgrade would.
itest_daemon_stop KILL
export MYSTEER_TEST_NO_FEATURE=getpeername
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 writer_is db2 >/dev/null
check "getpeername off: the daemon says so and what it means" \
	grep -q "kernel features: getpeername off (off by MYSTEER_TEST_NO_FEATURE): applications see the server's address" "$T/mysteerd.log"
check "the start line names connect4 alone" grep -q 'kernel features: connect4 on, getpeername off;' "$T/mysteerd.log"
check "the earlier run's pinned getpeername links are removed" grep -q 'steer: removed pinned .*getpeer' "$T/mysteerd.log"
off=$(status_json | json_get "d.get('getpeername_off', '')")
check_eq "status says getpeername is off and why" "off by MYSTEER_TEST_NO_FEATURE" "$off"
check_eq "connect steering runs with connect4 alone" "port $P2 1" "$(incg "$PEER" count 127.0.0.1 6446 1 | grep '^port')"
check_eq "and the application's peer is the server itself" "127.0.0.1:$P2" "$(peer_of_6446)"
itest_daemon_stop TERM
itest_done
