#!/usr/bin/env bash
# proxy_pool.sh - the 6450 proxy's pool figures under mysteerd: `mysteerctl
# status` (table and --json) shows per backend the idle and in-use pooled
# connections, how many were opened and how many sessions reused one; and
# pool_min_idle keeps warm connections of users with a plain password.
. "$(dirname "$0")/lib.sh"
itest_init proxy_pool
itest_sandbox_up

PP=6450
p() { mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=5 -N -B -e "$1"; }
pool() { status_json | json_get "sum(v['$1'] for v in d.get('pool', {}).values())"; }

ITEST_PROXY_EXTRA="workers = 2
pool_min_idle = 2
pool_idle_timeout_ms = 1000" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || { itest_done; exit 1; }

# pool_min_idle = 2: before any client, each usable backend holds 2 idle
# connections of app (the only user with a plain password).
apps() { sql_root "$1" "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER='app'"; }
wait_until 10 bash -c "[ \$($MYSTEERCTL --socket $T/admin.sock --json status | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(v[\"idle\"] for v in d.get(\"pool\",{}).values()))') -ge 6 ]" >/dev/null
measured "warm before any client: app sessions on $P1/$P2/$P3: $(apps $P1)/$(apps $P2)/$(apps $P3), pool idle $(pool idle)"
for port in $P1 $P2 $P3; do
	check_eq "pool_min_idle: 2 warm app connections on $port before any client" 2 "$(apps $port)"
done
# Warm connections serve nobody: a backend's "active" and "steered" (what
# least_conn and operators read) stay 0 until a client takes one.
check_eq "warm pool connections are not counted as active" 0 \
	"$(status_json | json_get "sum(b['active'] for b in d['backends'])")"
check_eq "warm pool connections are not counted as steered" 0 \
	"$(status_json | json_get "sum(b['steered'] for b in d['backends'])")"
wait_until 15 bash -c "[ \"\$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B -e 'SELECT @@port' 2>/dev/null)\" != '' ]" >/dev/null

# A session holding its connections: in_use counts them. The statement
# outlasts the wait, so that a loaded machine still sees it running.
mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B \
	-e "DO 1; SELECT SLEEP(15)" >/dev/null 2>&1 &
cpid=$!
wait_until 14 bash -c "[ \$($MYSTEERCTL --socket $T/admin.sock --json status | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(v[\"in_use\"] for v in d.get(\"pool\",{}).values()))') -gt 0 ]" >/dev/null
in_use=$(pool in_use)
measured "pool while a session runs: in_use $in_use, idle $(pool idle)"
check "a running session shows in_use > 0" [ "$in_use" -gt 0 ]
wait "$cpid"

for i in $(seq 1 10); do p "SELECT 1" >/dev/null; done
sleep 0.3
idle=$(pool idle) opened=$(pool opened) reused=$(pool reused)
measured "pool after 11 sessions: idle $idle, in_use $(pool in_use), opened $opened, reused $reused"
check "ended sessions leave idle pooled connections" [ "$idle" -gt 0 ]
check "later sessions reuse pooled connections" [ "$reused" -ge 6 ]
check "fewer connections opened than sessions served" [ "$opened" -lt 17 ]
# The idle timeout (1 s) closes nothing at or below the minimum.
sleep 1.5
for port in $P1 $P2 $P3; do
	check "pool_idle_timeout_ms keeps the 2 warm connections on $port ($(apps $port))" [ "$(apps $port)" -ge 2 ]
done
out=$(ctl status)
echo "$out" | sed -n '/^POOL/,$p' | sed 's/^/# /'
check "mysteerctl status prints a pool section" grep -q "^POOL *IDLE *IN_USE *OPENED *REUSED" <<<"$out"
# The table against the JSON of the same moment: the idle timeout may have
# closed a connection above the minimum since $idle was read.
table_idle_matches() {
	local out json
	out=$(ctl status) json=$(pool idle)
	echo "$out" | awk -v want="$json" '/^POOL/{f=1;next} f&&NF==11{s+=$2} END{exit !(s==want)}'
}
check "the pool section has a row per backend with the idle count" wait_until 5 table_idle_matches
itest_daemon_stop

# A user the backends refuse (none of them knows "stale"): its warm logins
# back off per backend (250 ms, doubling up to 10 s) instead of coming back
# every sweep (250 ms) from every worker, about 48 a backend in 6 s.
denied() { sql_root "$1" "SHOW GLOBAL STATUS LIKE 'Access_denied_errors'" | awk '{print $2}'; }
declare -A denied0
for port in $P1 $P2 $P3; do denied0[$port]=$(denied "$port"); done
ITEST_PROXY_EXTRA="workers = 2
pool_min_idle = 2" itest_write_config "$T/stale.conf" - <<'CONF'
[user:stale]
password = not-on-the-backends
CONF
itest_daemon_start "$T/stale.conf" || { itest_done; exit 1; }
sleep 6
for port in $P1 $P2 $P3; do
	n=$(($(denied "$port") - ${denied0[$port]}))
	measured "refused warm logins of stale on $port in 6 s: $n"
	check "warm logins refused by $port back off ($n in 6 s, at most 20)" [ "$n" -ge 1 -a "$n" -le 20 ]
	check_eq "app's warm connections on $port are not held back by stale's" 2 "$(apps $port)"
done
check "the log says the warm logins pause" grep -q "warm logins of stale to db1 pause for" "$T/mysteerd.log"
check "stale's password is not in the log" bash -c "! grep -q not-on-the-backends $T/mysteerd.log"
itest_daemon_stop
itest_done
