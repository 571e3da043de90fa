#!/usr/bin/env bash
# metrics.sh - the metrics endpoint (metrics_listen) against a real mysteerd,
# sandbox and Prometheus server: /live, /ready (503 with the reason while no
# writer is known), /metrics passes `promtool check metrics` and carries the
# same figures as `mysteerctl status --json`; a Prometheus started on a free
# loopback port of the test's netns scrapes every second while traffic flows
# through the kernel paths (cgroup connect, sk_lookup handoff, the relay:
# each one's series by backend, route and path present and rising) and
# the 6450 proxy, and its HTTP API shows the series that must exist and
# rates that are not zero. A bad metrics_listen and a taken port are one-line
# errors. Runs in its own namespaces (lib.sh).
. "$(dirname "$0")/lib.sh"
itest_init metrics

for tool in prometheus promtool curl; do
	command -v $tool >/dev/null || { echo "not ok - $tool missing (scripts/install-deps.sh)"; exit 1; }
done

M=127.0.0.1:9470
# Debian's python3 directly: a python3 shim (pyenv) costs seconds a call on a
# loaded machine, and the Prometheus polls below call it often.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
http_code() { curl -s -o "$T/body" -w '%{http_code}' --max-time 10 "http://$M$1"; }
# A free loopback port of this netns.
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# --- bad config: one line, non-zero, nothing started ------------------------
itest_write_config "$T/bad.conf"
sed -i 's/^\[mysteerd\]$/[mysteerd]\nmetrics_listen = localhost:http/' "$T/bad.conf"
"$MYSTEERD" -c "$T/bad.conf" -f >"$T/bad.log" 2>&1
check_eq "a bad metrics_listen: exit 2" 2 "$?"
check "a bad metrics_listen: one line naming file, line and key" \
	grep -qE "bad.conf:2: metrics_listen: bad address \"localhost:http\"" "$T/bad.log"

itest_sandbox_up

# --- a taken port: the daemon says so and exits -----------------------------
$PY -c 'import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1",9470)); s.listen(); time.sleep(60)' &
holder=$!
ITEST_PIDS+=($holder)
wait_until 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/9470" >/dev/null
itest_write_config "$T/taken.conf"
timeout 30 "$MYSTEERD" -c "$T/taken.conf" -f >"$T/taken.log" 2>&1
rc=$?
check "metrics_listen on a taken port: the daemon exits non-zero ($rc)" [ $rc != 0 -a $rc != 124 ]
check "and says why" grep -q "metrics_listen 127.0.0.1:9470: Address already in use" "$T/taken.log"
kill "$holder"
wait "$holder" 2>/dev/null
ITEST_PIDS=()

# --- the daemon with the endpoint on its default address ---------------------
itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
check "the log names the endpoint" grep -q "metrics on http://127.0.0.1:9470/metrics" "$T/mysteerd.log"
check_eq "/live: 200" 200 "$(http_code /live)"
ms=$(wait_until 15 test "$(http_code /ready)" = 200)
check "/ready: 200 once a writer is known (${ms} ms)" test "$(http_code /ready)" = 200
check_eq "an unknown path: 404" 404 "$(http_code /nope)"
check_eq "POST /metrics: 405" 405 "$(curl -s -o /dev/null -w '%{http_code}' -X POST --max-time 10 "http://$M/metrics")"

# No writer: db1 disabled, db2 and db3 are read_only.
ctl disable db1 >/dev/null
ms=$(wait_until 15 test "$(http_code /ready)" = 503)
check "/ready: 503 without a writer (${ms} ms)" test "$(http_code /ready)" = 503
check_eq "/ready says why" "not ready: no writer known" "$(cat "$T/body")"
check_eq "/live stays 200" 200 "$(http_code /live)"
ctl enable db1 >/dev/null
ms=$(wait_until 15 test "$(http_code /ready)" = 200)
check "/ready: 200 again with db1 back (${ms} ms)" test "$(http_code /ready)" = 200

# A login through 6450 and one with a wrong password: accepted twice, one refused.
mariadb --no-defaults -h127.0.0.1 -P6450 -uapp -papp -N -B -e 'SELECT 1' >/dev/null 2>&1
mariadb --no-defaults -h127.0.0.1 -P6450 -uapp -pwrong -N -B -e 'SELECT 1' >/dev/null 2>&1
# One connection to the writer route through each kernel path of this config:
# cgroup connect (a client in the steered cgroup), sk_lookup handoff (one
# outside it, to the VIP; db1 is local).
ctl exec -- mariadb --no-defaults -h 127.0.0.1 -P 6446 -u app -papp -N -B -e 'SELECT 1' >/dev/null 2>&1
sql 6446 'SELECT 1' >/dev/null 2>&1
# Prepared statements through 6450 (libmysqlclient's binary protocol).
sql 6450 'CREATE DATABASE IF NOT EXISTS t' >/dev/null 2>&1
"$ITEST_BUILD/tests/proxy_ps" 6450 >"$T/ps.out" 2>&1
check "proxy_ps ran through 6450" grep -q "usable after the closes" "$T/ps.out"
curl -s --max-time 10 "http://$M/metrics" >"$T/metrics.txt"
accepted=$(awk '$1 == "mysteer_proxy_client_connections_total" {print $2}' "$T/metrics.txt")
check "mysteer_proxy_client_connections_total counts both logins ($accepted)" [ "${accepted:-0}" -ge 2 ]
check "mysteer_proxy_client_refused_total counts the wrong password" \
	grep -qE '^mysteer_proxy_client_refused_total\{reason="access_denied"\} [1-9]' "$T/metrics.txt"
prepares=$(awk '$1 ~ /^mysteer_proxy_prepares_total[{]/ {s += $2} END {print s + 0}' "$T/metrics.txt")
check "mysteer_proxy_prepares_total counts the statements prepared on the backends ($prepares)" \
	[ "$prepares" -gt 0 ]
promtool check metrics <"$T/metrics.txt" >"$T/promtool.out" 2>&1
check "promtool check metrics passes" [ $? = 0 ]
sed 's/^/# promtool: /' "$T/promtool.out" | head -n 20
for series in 'mysteer_backend_state{backend="db1",state="up"} 1' \
	'mysteer_backend_role{backend="db1",role="writer"} 1' \
	'mysteer_backend_role{backend="db2",role="reader"} 1' \
	'mysteer_backend_admin_state{backend="db1",state="enabled"} 1' \
	'mysteer_writer_known 1' \
	'mysteer_config_last_reload_successful 1' \
	'mysteer_backend_probe_duration_seconds_bucket{backend="db2",le="+Inf"}' \
	'mysteer_backend_replication_lag_seconds{backend="db3"}' \
	'mysteer_writer_changes_total{reason="elected"}' \
	'mysteer_writer_changes_total{reason="disabled"} 1' \
	'mysteer_writer_changes_total{reason="elected"} 2' \
	'mysteer_build_info{version=' \
	'process_cpu_seconds_total' \
	'process_open_fds' \
	'mysteer_kernel_steered_connections_total{backend="db1",route="rw",path="connect"} 1' \
	'mysteer_kernel_steered_connections_total{backend="db1",route="rw",path="lookup"} 1' \
	'mysteer_kernel_active_connections{backend="db1",route="rw",path="connect"} 0' \
	'mysteer_kernel_connect_failures_total{backend="db1",route="rw",path="connect"} 0' \
	'mysteer_kernel_closed_on_demote_total{backend="db1",route="rw",path="lookup"} 0' \
	'mysteer_relay_bytes_total{direction="to_client"}' \
	'mysteer_pool_opened_total{backend="db1"}' \
	'mysteer_proxy_added_seconds_count{backend="' \
	'mysteer_proxy_prepared_statements{backend="db1"}' \
	'mysteer_proxy_client_connections'; do
	check "/metrics has $series" grep -qF "$series" "$T/metrics.txt"
done

# status --json renders the same registry: same families, same label sets.
status_json >"$T/status.json"
$PY - "$T/status.json" "$T/metrics.txt" >"$T/cmp.out" 2>&1 <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))["metrics"]
text = open(sys.argv[2]).read()
fams = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
missing = fams ^ set(d)
assert not missing, "families in one and not the other: %s" % sorted(missing)
for name in ("mysteer_backend_role", "mysteer_kernel_steered_connections_total"):
    a = sorted(tuple(sorted(s["labels"].items())) for s in d[name]["series"])
    b = sorted(tuple(sorted(re.findall(r'(\w+)="([^"]*)"', m)))
               for m in re.findall(r"^%s\{([^}]*)\}" % name, text, re.M))
    assert a == b, (name, a, b)
assert d["mysteer_backend_role"]["type"] == "gauge"
print("same %d families" % len(fams))
PY
check "status --json \"metrics\" has the families and label sets of /metrics ($(tail -n1 "$T/cmp.out"))" \
	grep -q '^same ' "$T/cmp.out"

# --- Prometheus scrapes it while traffic flows ---------------------------------
PP=$(free_port)
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: mysteer
    static_configs:
      - targets: ['$M']
EOF
promtool check config "$T/prometheus.yml" >/dev/null 2>&1
check "promtool check config passes on the test's config" [ $? = 0 ]
itest_bg prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom" \
	--web.listen-address="127.0.0.1:$PP" --log.level=warn >"$T/prometheus.log" 2>&1
PROM=http://127.0.0.1:$PP
ms=$(wait_until 60 curl -sf --max-time 2 "$PROM/-/ready")
check "Prometheus is ready on 127.0.0.1:$PP (${ms} ms)" curl -sf --max-time 2 "$PROM/-/ready"
# The value of an instant query's first sample, or nothing.
promq() {
	curl -s --max-time 10 -G "$PROM/api/v1/query" --data-urlencode "query=$1" |
		$PY -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}
# True when the query has a sample > 0.
prom_pos() { v=$(promq "$1"); [ -n "$v" ] && $PY -c "import sys; sys.exit(0 if float('$v') > 0 else 1)"; }
up_is_1() { test "$(promq 'up{job="mysteer"}')" = 1; }
ms=$(wait_until 60 up_is_1)
check "Prometheus scrapes mysteerd: up == 1 (${ms} ms)" up_is_1

# Traffic for ~8 s through each path: cgroup connect (exec into the steered
# cgroup), sk_lookup (a client outside it to the VIP), the 6450 proxy.
traffic() { # seconds
	local end=$((SECONDS + $1))
	while [ $SECONDS -lt $end ]; do
		ctl exec -- mariadb --no-defaults -h 127.0.0.1 -P 6447 -u app -papp -N -B -e 'SELECT 1' >/dev/null 2>&1
		sql 6446 'SELECT 1' >/dev/null 2>&1
		sql 6450 'SELECT @@port' >/dev/null 2>&1
		sql 6450 'SELECT 1; SELECT 2' >/dev/null 2>&1
	done
}
itest_bg traffic 120
TRAFFIC=$!
sleep 3
for q in 'sum(rate(mysteer_kernel_steered_connections_total[20s]))' \
	'sum(rate(mysteer_kernel_steered_connections_total{backend="db1",route="rw",path="lookup"}[20s]))' \
	'sum(rate(mysteer_kernel_steered_connections_total{route="ro",path="connect"}[20s]))' \
	'rate(process_cpu_seconds_total[20s])' \
	'rate(mysteer_proxy_statements_total{decision="read"}[20s])' \
	'sum(rate(mysteer_proxy_backend_statements_total[20s]))' \
	'sum(rate(mysteer_proxy_statement_duration_seconds_count[20s]))' \
	'sum(rate(mysteer_proxy_added_seconds_count[20s]))' \
	'sum(rate(mysteer_backend_probe_duration_seconds_count[20s]))'; do
	ms=$(wait_until 20 prom_pos "$q")
	check "Prometheus: $q > 0 ($(promq "$q"), ${ms} ms)" prom_pos "$q"
done
# The part the proxy adds is a part of the statement's time: its sum is not
# more than the statements' (both are observed together, on the answer).
curl -s --max-time 10 "http://$M/metrics" >"$T/metrics2.txt"
sumre() { awk -v re="^$1[{]" '$1 ~ re {s += $NF} END {printf "%.6f\n", s}' "$T/metrics2.txt"; }
added=$(sumre mysteer_proxy_added_seconds_sum)
total=$(sumre mysteer_proxy_statement_duration_seconds_sum)
nadded=$(sumre mysteer_proxy_added_seconds_count)
check "the proxy's part ($added s over $nadded statements) is within the statements' time ($total s)" \
	$PY -c "import sys; sys.exit(0 if 0 < $added <= $total else 1)"
for qq in 0.5 0.99; do
	measured "6450 under the test's traffic: q$qq statement time $(promq "histogram_quantile($qq, sum by (le) (rate(mysteer_proxy_statement_duration_seconds_bucket[20s])))") s, of which the proxy adds $(promq "histogram_quantile($qq, sum by (le) (rate(mysteer_proxy_added_seconds_bucket[20s])))") s"
done
for q in 'mysteer_backend_up{backend="db1"}' 'mysteer_build_info' 'process_resident_memory_bytes' \
	'mysteer_backend_role{backend="db1",role="writer"}' \
	'mysteer_writer_changes_total{reason="disabled"}'; do
	check "Prometheus has the series $q" prom_pos "$q"
done
# The dashboard: valid JSON, its queries are the README's list, and
# Prometheus accepts each one.
$PY - "$ITEST_ROOT/etc/grafana/mysteer.json" "$ITEST_ROOT/README.md" >"$T/dash.out" 2>&1 <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p["targets"]]
readme = open(sys.argv[2]).read()
block = readme.split("## Metrics and health checks", 1)[1].split("```", 2)[1]
listed = [l.strip() for l in block.splitlines() if l.startswith("  ")]
assert exprs == listed, (exprs, listed)
for e in exprs:
    print(e)
PY
check "the dashboard is JSON and its queries are the README's ($(wc -l <"$T/dash.out") queries)" \
	[ "$(wc -l <"$T/dash.out")" -gt 10 ]
bad=0
while IFS= read -r q; do
	st=$(curl -s --max-time 10 -G "$PROM/api/v1/query" --data-urlencode "query=$q" |
		$PY -c 'import json,sys; print(json.load(sys.stdin)["status"])')
	[ "$st" = success ] || { echo "# Prometheus refused: $q"; bad=$((bad + 1)); }
done <"$T/dash.out"
check_eq "Prometheus accepts every dashboard query" 0 "$bad"
cpu=$(promq 'rate(process_cpu_seconds_total[20s])')
measured "mysteerd CPU while scraped every 1 s under the test's traffic: ${cpu} s/s"
kill "$TRAFFIC" 2>/dev/null
wait "$TRAFFIC" 2>/dev/null

# --- the relay path: local_handoff off, sk_lookup gives 6447 to the relay ------
itest_daemon_stop TERM
ITEST_STEER_EXTRA="local_handoff = off" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 15 test "$(http_code /ready)" = 200 >/dev/null
relay_traffic() {
	while :; do sql 6447 'SELECT REPEAT("x", 10000)' >/dev/null 2>&1; done
}
itest_bg relay_traffic
TRAFFIC=$!
sleep 3
for q in 'rate(mysteer_relay_connections_total[20s])' \
	'sum(rate(mysteer_kernel_steered_connections_total{route="ro",path="relay"}[20s]))' \
	'rate(mysteer_relay_bytes_total{direction="to_client"}[20s])' \
	'rate(mysteer_relay_bytes_total{direction="to_backend"}[20s])'; do
	ms=$(wait_until 20 prom_pos "$q")
	check "Prometheus: $q > 0 ($(promq "$q"), ${ms} ms)" prom_pos "$q"
done

kill "$TRAFFIC" 2>/dev/null
wait "$TRAFFIC" 2>/dev/null
itest_daemon_stop TERM
check_eq "mysteerd stopped cleanly (exit 0)" 0 "$ITEST_DAEMON_RC"
check "nothing listens on 9470 after the stop" bash -c '! (exec 3<>/dev/tcp/127.0.0.1/9470) 2>/dev/null'
itest_done
