#!/usr/bin/env bash
# steer_reload.sh - reloads that reorder, add and remove [route:] sections
# and change the VIPs while connects run through both kernel paths: connect4
# (clients in the test's cgroup) and sk_lookup (clients outside it, in the
# same network namespace). No connect lands on a wrong route and none fails;
# the writer's held connections stay open; a route added by reload answers
# with the named error while it has no target, and a removed route's error
# listeners close. sk_lookup steers only the VIPs: another local address on a
# service port reaches whatever listens there.
. "$(dirname "$0")/lib.sh"
itest_init steer_reload

PEER=$ITEST_BUILD/tests/peer_check
[ -n "$ITEST_CGROUP" ] || { echo "not ok - no cgroup2 mount"; exit 1; }
# Local addresses of the test's own namespace (on its own lo).
VIP1=10.212.0.1 VIP2=10.212.0.2 OTHER=10.212.0.3
for a in $VIP1 $VIP2 $OTHER; do ip addr add "$a/32" dev lo || { echo "not ok - address $a"; exit 1; }; done

incg() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$ITEST_CGROUP" "$@"; }
writer_is() { [ "$(ctl_writer)" = "$1" ]; }
readers_are() { [ "$(ctl_readers)" = "$1" ]; }
quiet() { "$@" >/dev/null; }
# "port P" of one connection (connect path with incg, sk_lookup without), or
# the client's error line.
land() { "$@" 2>&1 | awk '$1 == "port" {print $2; exit} $1 == "error" {print; exit}'; }

# A plain listener on every address of 6446: what a connection to a local
# address that is not a VIP reaches. It answers with a MySQL error naming
# itself, so the client shows where it landed.
cat >"$T/plain.py" <<'PY'
import socket, struct
msg = b"plain listener on 6446"
body = b"\xff" + struct.pack("<H", 1105) + b"#HY000" + msg
pkt = struct.pack("<I", len(body))[:3] + b"\x00" + body
s = socket.create_server(("0.0.0.0", 6446), reuse_port=False)
while True:
    c, _ = s.accept()
    try:
        c.sendall(pkt)
    finally:
        c.close()
PY
python3 "$T/plain.py" &
ITEST_PIDS+=($!)
wait_until 5 bash -c "echo >/dev/tcp/$OTHER/6446" >/dev/null

# Two configurations. B reorders the routes, removes ro2, adds rw2 and rw3
# (more routes than A had), and moves the second VIP.
write_conf() { # file routes vips
	local f=$1
	shift
	ITEST_STEER_EXTRA="vip = $2
lookup = on
local_handoff = on" itest_write_config "$f"
	# Replace the helper's routes by ours.
	python3 - "$f" "$1" <<'PY'
import re, sys
f, routes = sys.argv[1], sys.argv[2]
s = open(f).read()
s = re.sub(r"\[route:rw\]\nport = 6446\nrole = writer\n\[route:ro\]\nport = 6447\nrole = reader\n\[route:split\]\nport = 6450\nrole = split\n", "", s)
out = ""
for r in routes.split():
    name, port, role = r.split(":")
    out += "[route:%s]\nport = %s\nrole = %s\n" % (name, port, role)
open(f, "w").write(s + "\n" + out)
PY
}
ITEST_LOG_LEVEL=debug # the publisher's wait for readers is logged at debug
write_conf "$T/conf.A" "rw:6446:writer ro:6447:reader ro2:6449:reader split:6450:split" \
	"127.0.0.1, $VIP1"
write_conf "$T/conf.B" \
	"split:6450:split ro:6447:reader rw:6446:writer rw2:6448:writer rw3:6451:writer" \
	"127.0.0.1, $VIP2"
conf_a() { cp "$T/conf.A" "$T/mysteer.conf"; }
conf_b() { cp "$T/conf.B" "$T/mysteer.conf"; }

itest_sandbox_up
conf_a
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 10 writer_is db1 >/dev/null
ms=$(wait_until 10 readers_are "db2 db3")
measured "topology db1 + readers db2 db3 in ${ms} ms"

check_eq "A: connect path, $VIP1:6446 lands on the writer" "$P1" "$(land incg "$PEER" count $VIP1 6446 1)"
check_eq "A: sk_lookup, $VIP1:6446 lands on the writer" "$P1" "$(land "$PEER" count $VIP1 6446 1)"
check_eq "A: sk_lookup, 127.0.0.1:6449 (ro2) lands on a reader" 1 \
	"$(land "$PEER" count 127.0.0.1 6449 1 | grep -cxE "$P2|$P3")"
# Only the VIPs: another local address of the namespace on 6446 is not
# steered by either path; it reaches the plain listener there.
check "A: sk_lookup leaves $OTHER:6446 (not a VIP) to its own listener" \
	grep -q 'plain listener on 6446' <<<"$(land "$PEER" count $OTHER 6446 1)"
check "A: connect path leaves $OTHER:6446 alone too" \
	grep -q 'plain listener on 6446' <<<"$(land incg "$PEER" count $OTHER 6446 1)"

# --- connections held across every reload: the writer's (connect-steered,
# marked) and one handed over by sk_lookup.
rm -f "$T/go"
incg "$PEER" hold 127.0.0.1 6446 "$T/go" >"$T/hold-c.out" 2>&1 &
hold_c=$!
"$PEER" hold 127.0.0.1 6446 "$T/go" >"$T/hold-l.out" 2>&1 &
hold_l=$!
ITEST_PIDS+=($hold_c $hold_l)
wait_until 10 grep -q '^before' "$T/hold-c.out" >/dev/null
wait_until 10 grep -q '^before' "$T/hold-l.out" >/dev/null

# --- streams of new connections through both paths to rw and ro (in both
# configurations), while A and B alternate.
N=400
incg "$PEER" count 127.0.0.1 6446 $N 5 >"$T/s-c-rw.out" 2>&1 &
s1=$!
incg "$PEER" count 127.0.0.1 6447 $N 5 >"$T/s-c-ro.out" 2>&1 &
s2=$!
"$PEER" count 127.0.0.1 6446 $N 5 >"$T/s-l-rw.out" 2>&1 &
s3=$!
"$PEER" count 127.0.0.1 6447 $N 5 >"$T/s-l-ro.out" 2>&1 &
s4=$!
ITEST_PIDS+=($s1 $s2 $s3 $s4)
reloads=0 t0=$(date +%s%3N) slowest=0
for i in $(seq 1 31); do
	if [ $((i % 2)) = 1 ]; then conf_b; else conf_a; fi
	t1=$(date +%s%3N)
	ctl reload >/dev/null && reloads=$((reloads + 1))
	t1=$(($(date +%s%3N) - t1))
	[ $t1 -gt $slowest ] && slowest=$t1
	sleep 0.1
done
measured "$reloads reloads A<->B in $(($(date +%s%3N) - t0)) ms while the streams ran (slowest reload ${slowest} ms)"
check_eq "every reload was accepted" 31 "$reloads"
wait $s1 $s2 $s3 $s4
for s in c-rw c-ro l-rw l-ro; do measured "stream $s: $(echo $(cat "$T/s-$s.out"))"; done
check_eq "connect path, 6446: every connection on the writer, none failed" \
	"port $P1 $N errors 0" "$(grep -E '^(port|errors)' "$T/s-c-rw.out" | tr '\n' ' ' | sed 's/ $//')"
check_eq "sk_lookup, 6446: every connection on the writer, none failed" \
	"port $P1 $N errors 0" "$(grep -E '^(port|errors)' "$T/s-l-rw.out" | tr '\n' ' ' | sed 's/ $//')"
ro_ok() { # file: only readers, all N, no error
	awk -v n=$N -v p2="$P2" -v p3="$P3" '
		$1 == "port" {if ($2 != p2 && $2 != p3) bad = 1; sum += $3}
		$1 == "errors" {err = $2}
		END {exit !(bad == 0 && sum == n && err == 0)}' "$1"
}
check "connect path, 6447: every connection on a reader, none failed" ro_ok "$T/s-c-ro.out"
check "sk_lookup, 6447: every connection on a reader, none failed" ro_ok "$T/s-l-ro.out"

touch "$T/go"
wait $hold_c $hold_l
check_eq "the writer's connect-steered connection held across the reloads stays open" \
	"after $P1" "$(grep '^after' "$T/hold-c.out")"
check_eq "the connection handed over by sk_lookup stays open too" \
	"after $P1" "$(grep '^after' "$T/hold-l.out")"
closed=$(grep -c 'close_on_demote: closed [1-9]' "$T/mysteerd.log")
check_eq "no close_on_demote ran for the reloads" 0 "$closed"

# --- B is live now (the 31st reload): the VIP moved, ro2 went, rw2 and rw3 came.
check_eq "B: connect path, $VIP2:6446 lands on the writer" "$P1" "$(land incg "$PEER" count $VIP2 6446 1)"
check_eq "B: sk_lookup, $VIP2:6446 lands on the writer" "$P1" "$(land "$PEER" count $VIP2 6446 1)"
check "B: sk_lookup leaves $VIP1:6446 (no longer a VIP) to its own listener" \
	grep -q 'plain listener on 6446' <<<"$(land "$PEER" count $VIP1 6446 1)"
check "B: connect path leaves $VIP1:6446 alone" \
	grep -q 'plain listener on 6446' <<<"$(land incg "$PEER" count $VIP1 6446 1)"
out="$(land incg "$PEER" count 127.0.0.1 6449 1) / $(land "$PEER" count 127.0.0.1 6449 1)"
echo "# 6449 after ro2 went: $out"
check "B: 6449 (ro2 removed) is steered by neither path" [ "$(grep -cE "(^| )($P1|$P2|$P3)( |$)" <<<"$out")" = 0 ]
check_eq "B: connect path, 6448 (rw2 added) lands on the writer" "$P1" "$(land incg "$PEER" count 127.0.0.1 6448 1)"
check_eq "B: sk_lookup, 6451 (rw3 added) lands on the writer" "$P1" "$(land "$PEER" count 127.0.0.1 6451 1)"
"$MYSTEERCTL" -c "$T/mysteer.conf" --json maps >"$T/maps-b.json"
ids=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join("%s=%d" % (r["name"], r["id"]) for r in sorted(d["routes"], key=lambda r: r["id"])))' "$T/maps-b.json")
measured "route ids in B: $ids"
check "route ids follow the names (rw 0, ro 1 as in A; rw2, rw3 new)" \
	grep -q '^rw=0 ro=1 ' <<<"$ids"

# --- no writer: the routes added by reload answer with their named error.
sb kill "$P1" >/dev/null
wait_until 10 writer_is None >/dev/null
for r in rw2:6448 rw3:6451; do
	out=$(incg "$PEER" count 127.0.0.1 "${r#*:}" 1)
	check "connect path: ${r%:*} (added by reload) gives its named error" \
		grep -q "error 1105 mysteer: route ${r%:*} has no writer" <<<"$out"
	out=$("$PEER" count 127.0.0.1 "${r#*:}" 1)
	check "sk_lookup: ${r%:*} (added by reload) gives its named error" \
		grep -q "error 1105 mysteer: route ${r%:*} has no writer" <<<"$out"
done
errl3=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([r["error_listener"] for r in d["routes"] if r["name"] == "rw3"][0].rsplit(":", 1)[1])' "$T/maps-b.json")
check "rw3's error listener (port $errl3) listens" [ -n "$(ss -Hltn "sport = :$errl3")" ]

# --- back to A: rw2 and rw3 go, and so do their error listeners.
conf_a
ctl reload >/dev/null
# closed once no program can pick it any more: after the wait for readers
closed() { [ -z "$(ss -Hltn "sport = :$errl3")" ]; }
ms=$(wait_until 10 closed)
check "A again: rw3's error listener (port $errl3) is closed (${ms} ms after the reload)" closed
# (the publish may wait for the previous flip's readers: functional deadline)
unsteered() { out=$(land incg "$PEER" count 127.0.0.1 6451 1) && [ -n "$out" ] && ! grep -q "route rw3" <<<"$out"; }
wait_until 10 unsteered >/dev/null
check "A again: 6451 is no longer steered ($out)" unsteered
check "the daemon logged the removal" grep -q 'route rw3 removed' "$T/mysteerd.log"
us=$(grep -o 'retired [0-9]* us ago has no readers' "$T/mysteerd.log" | awk '{print $2}' | sort -n | tr '\n' ' ')
measured "a retired generation free of readers (flip to end of the wait), us, sorted: $us"

itest_daemon_stop TERM
check_eq "after SIGTERM nothing is pinned" "" "$(ls /sys/fs/bpf/mysteer 2>/dev/null)"
itest_done
