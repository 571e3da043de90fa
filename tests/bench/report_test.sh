#!/usr/bin/env bash
# report_test.sh - checks the arithmetic and verdicts of tests/bench/report.awk
# and that plot.gp draws from its output, on a fixed CSV: `make bench` is only
# run in quick mode by CI and its figures are never asserted, so a wrong median,
# a ratio taken across rounds or a PASS for a path that was not built would
# otherwise go unnoticed. No servers, no namespaces: pure text in, text out.
set -u
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d /tmp/bench-report-test.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0

check() { # description, then a command that must succeed
	local what=$1
	shift
	if "$@"; then echo "ok - $what"; else echo "not ok - $what"; fails=$((fails + 1)); fi
}
row() { grep -F -- "$1" "$tmp/report.md"; }
has() { row "$1" | grep -qF -- "$2"; }

cat >"$tmp/raw.csv" <<'EOF'
round,path,workload,threads,metric,value
# mode=full
# elapsed_s=480
# nproc=2
0,relay,all,0,status,not_built
# not_built_relay=connect | refused
0,proxy,all,0,status,failed
1,direct,ps8,8,qps,1000
2,direct,ps8,8,qps,2000
3,direct,ps8,8,qps,1000
1,steer,ps8,8,qps,990
2,steer,ps8,8,qps,1000
3,steer,ps8,8,qps,980
1,lookup,ps8,8,qps,900
2,lookup,ps8,8,qps,1900
3,lookup,ps8,8,qps,900
1,haproxy,ps8,8,qps,500
2,haproxy,ps8,8,qps,1000
3,haproxy,ps8,8,qps,490
1,direct,conn4,4,conns_per_s,100
2,direct,conn4,4,conns_per_s,100
1,steer,conn4,4,conns_per_s,96
2,steer,conn4,4,conns_per_s,94
1,direct,conn4,4,conn_p50_us,400
1,steer,conn4,4,conn_p50_us,420
1,direct,ps1,1,lat_p99_ms,0.100
1,steer,ps1,1,lat_p99_ms,0.130
0,classifier:mysteer,oltp,1,stmts_per_s,3100000
0,classifier:pcre2,oltp,1,stmts_per_s,1000000
0,classifier:ratio,oltp,1,stmts_per_s,3.1
0,classifier:mysteer,long,1,mb_per_s,140
0,classifier:pcre2,long,1,mb_per_s,100
0,classifier:mysteer-classify,file-200k,1,stmts_per_s,17000000
0,classifier:regex-classify,file-200k,1,stmts_per_s,9000000
EOF

gawk -v csvname=raw.csv -v datdir="$tmp" -f tests/bench/report.awk "$tmp/raw.csv" >"$tmp/report.md"
check "report.awk exits 0" test $? -eq 0

# Per-round ratios: steer 0.99, 0.50, 0.98 -> median 0.98 (a ratio of medians
# would say 1000/1000 = 1.00, hiding the bad round).
check "steer ratio is the median of per-round ratios" has "| steer | 990 |" "0.98× (0.50–0.99)"
check "steer ps8 QPS ratio is a reference row now, above 0.97" has "connect steering, oltp_point_select" "| reference (above 0.97× direct) |"
check "lookup ps8 reference below 0.97 at 0.90" has "sk_lookup handoff, oltp_point_select" "| reference (below 0.97× direct) |"
check "relay cost target says not built" has "relay: router CPU per point select" "| not built |"
check "failed proxy path says failed, not PASS" has "6450 proxy: router CPU per point select" "| failed |"
check "proxy idle RSS row is not a verdict" has "idle clients" "| failed |"
check "conns/s target: median of 0.96, 0.94 is 0.95 -> PASS" has "new connections/s" "0.95× direct"
check "classifier OLTP 3.1x -> PASS" has "statements/s, OLTP mix" "| PASS |"
check "classifier target compares implementations of the same mix" has "statements/s, OLTP mix" "mysteer 3.10 M vs pcre2 1.00 M"
check "classifier long 1.4x -> MISS" has "MB/s, long mix" "| MISS |"
check "classify-bench's ratio line is not a table row" bash -c "! grep -q '| oltp | ratio |' '$tmp/report.md'"
check "full run of 480 s meets the 600 s target" has "full run ≤ 600 s" "| PASS |"
check "no issue numbers in the generated tables" bash -c "! grep -q '| #[0-9]' '$tmp/report.md'"
check "a '|' in a reason does not break the table" has "| relay |" "connect / refused"
check "relay target without a relay says not built, also the loopback reference" \
	has "relay vs HAProxy on loopback" "| not built |"
check "p99 over direct in µs" has "| steer | – | – | 0.13 |" "+30 µs"

gnuplot -e "datdir='$tmp'; qps_png='$tmp/q.png'; lat_png='$tmp/l.png'" tests/bench/plot.gp 2>"$tmp/gp.err"
check "plot.gp draws both pictures" test -s "$tmp/q.png" -a -s "$tmp/l.png"
# A path without data for one group (as haproxy's latency here) only skips
# its bars with a warning; anything but a warning is a broken script.
grep -vi 'warning' "$tmp/gp.err" >"$tmp/gp.other"
check "plot.gp prints no errors" test ! -s "$tmp/gp.other"

# The relay's verdict is taken against haproxy_veth (HAProxy at the
# relay's place), the loopback HAProxy only gives a reference ratio.
cat >"$tmp/relay.csv" <<'EOF'
round,path,workload,threads,metric,value
# mode=partial
# elapsed_s=100
0,steer,all,0,status,skipped
1,direct,ps8,8,qps,1000
2,direct,ps8,8,qps,1000
1,haproxy,ps8,8,qps,500
2,haproxy,ps8,8,qps,500
1,haproxy_veth,ps8,8,qps,400
2,haproxy_veth,ps8,8,qps,500
1,relay,ps8,8,qps,520
2,relay,ps8,8,qps,610
1,haproxy_veth,ps8,8,router_us_per_q,50
2,haproxy_veth,ps8,8,router_us_per_q,40
1,relay,ps8,8,router_us_per_q,25
2,relay,ps8,8,router_us_per_q,30
1,direct,ps8,8,machine_us_per_q,100
2,direct,ps8,8,machine_us_per_q,100
1,relay,ps8,8,machine_us_per_q,150
2,relay,ps8,8,machine_us_per_q,170
1,relay,ps8,8,router_context_switches_per_q,0.5
2,relay,ps8,8,router_context_switches_per_q,0.7
EOF
gawk -v csvname=relay.csv -v datdir="$tmp" -f tests/bench/report.awk "$tmp/relay.csv" >"$tmp/report.md"
# per round vs haproxy_veth: 1.30, 1.22 -> 1.26 PASS; vs haproxy: 1.04, 1.22 -> 1.13
check "relay QPS reference against haproxy_veth" has "relay, oltp_point_select 8 thr vs HAProxy at the same place" "1.26× haproxy_veth (rounds 1.22–1.30) | reference (above 1.2× haproxy_veth) |"
check "relay vs loopback haproxy is a reference, no verdict" has "relay vs HAProxy on loopback" "1.13× haproxy (rounds 1.04–1.22) | reference (below 1.2× haproxy) |"
check "haproxy_veth has its table row" has "| haproxy_veth | 450 |" "0.45×"
# per round: 25/50 = 0.5, 30/40 = 0.75 -> 0.625 > 0.6: MISS
check "relay cost verdict per round against haproxy_veth" has "relay: router CPU per point select" "0.62× haproxy_veth (rounds 0.50–0.75; 27.5 µs against 45.0) | MISS |"
check "cost table: relay's router ratio against haproxy_veth, machine against direct" has "| relay | 27.5 |" "| 0.62× (0.50–0.75) | 160 | 150–170 | 1.60× (1.50–1.70) | 0.6 |"
check "cost table has the perf column it has data for, and only it" bash -c "grep -q 'router context_switches |' '$tmp/report.md' && ! grep -q 'router instructions' '$tmp/report.md'"
check "a path left out of a partial run says skipped" has "| steer |" "| skipped |"
check "a partial run gives no run-time verdict" has "| bench |" "partial run"
gnuplot -e "datdir='$tmp'; qps_png='$tmp/q2.png'; lat_png='$tmp/l2.png'; cost_png='$tmp/c2.png'" tests/bench/plot.gp 2>"$tmp/gp2.err"
check "plot.gp draws the haproxy_veth path" test -s "$tmp/q2.png"
check "plot.gp draws the cost picture" test -s "$tmp/c2.png"

[ $fails -eq 0 ] || { cat "$tmp/report.md"; cat "$tmp/gp.err"; }
exit $((fails > 0))
