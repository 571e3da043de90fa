#!/usr/bin/env bash
# ctl.sh - mysteerctl against a real mysteerd and sandbox: the status table
# and JSON, every change command, their survival across a restart and a
# reload, reset, the exit-code contract, exec into the steered cgroup,
# version, uptime, each backend's last change and traffic rates,
# backend ids reused (and a 6450 least_conn session's count across that),
# and maps with the daemon down. Runs in its own namespaces (lib.sh).
. "$(dirname "$0")/lib.sh"
itest_init ctl

itest_sandbox_up
itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1

# A backend field from the status JSON: bfield NAME KEY
bfield() { status_json | json_get "[b['$2'] for b in d['backends'] if b['name']=='$1'][0]"; }
names() { status_json | json_get "' '.join(b['name'] for b in d['backends'])"; }
# Predicates for wait_until: evaluated on every poll (a "$(...)" argument
# would be evaluated once, before the first).
state_is() { test "$(bfield "$1" state)" = "$2"; }
names_are() { test "$(names)" = "$1"; }
topology_is() { test "$(ctl_writer)" = "$1" && test "$(ctl_readers)" = "$2"; }

ms=$(wait_until 15 topology_is db1 "db2 db3")
check "db1 writer, db2 db3 readers (${ms} ms)" topology_is db1 "db2 db3"
# Runs mysteerctl, keeps stderr in $T/err, prints the exit code.
rc_of() { ctl "$@" >"$T/out" 2>"$T/err"; echo $?; }

# --- status ---------------------------------------------------------------------
ctl status >"$T/table"
check "status table has the header" grep -q '^NAME  *ADDRESS  *ROLE  *STATE  *PRIO  *WEIGHT  *LAG  *PROBE  *AGE  *ACTIVE  *STEERED  *FAILS$' "$T/table"
check "status table: db1 writer up" grep -qE "^db1  +127\.0\.0\.1:$P1  +writer  +up  +100 " "$T/table"
check "status table: db2 reader" grep -qE "^db2  +127\.0\.0\.1:$P2  +reader  +up " "$T/table"
check "status table lists the routes" grep -qE '^rw  +6446  +writer  +db1$' "$T/table"
check "status table: ro route targets the readers" grep -qE '^ro  +6447  +reader  +db2,db3$' "$T/table"
json=$(ctl status --json)
check_eq "status --json is one line" 1 "$(printf '%s\n' "$json" | wc -l)"
check_eq "status --json has writer, backends, routes and no ok" "db1 3 3 False" \
	"$(echo "$json" | json_get "d['writer'], len(d['backends']), len(d['routes']), 'ok' in d" | tr -d "(),'")"

# --- status: version, uptime, last changes, traffic rates ----------------------
check "status --json has a version" [ -n "$(status_json | json_get "d['version']")" ]
check "status --json has an uptime" python3 -c "import sys; assert $(status_json | json_get "d['uptime_s']") >= 0"
check "the status table starts with the version and uptime" grep -qE '^mysteerd .+, up [0-9]+' "$T/table"
db1_change=$(status_json | json_get "[b['last_change']['what'] for b in d['backends'] if b['name']=='db1'][0]")
check "db1's last change: it became the writer ($db1_change)" grep -q -- '-> writer' <<<"$db1_change"
ctl drain db2 >/dev/null
check_eq "drain db2 is db2's last change" "enabled -> drained (an operator)" \
	"$(status_json | json_get "[b['last_change']['what'] for b in d['backends'] if b['name']=='db2'][0]")"
ctl status >"$T/table2"
check "the table shows it with its age" grep -qE '^db2 .* [0-9]+s ago: enabled -> drained \(an operator\)$' "$T/table2"
ctl enable db2 >/dev/null
# Traffic: connections steered to 6446 (db1), 6450 statements, one an error.
for i in $(seq 1 20); do
	ctl exec -- mariadb --no-defaults -h127.0.0.1 -P6446 -uapp -papp -N -B -e 'SELECT 1' >/dev/null 2>&1
done
{ for i in $(seq 1 50); do echo "SELECT 1;"; done; echo "SELECT * FROM no_such_table_here;"; } |
	mariadb --no-defaults -h127.0.0.1 -P6450 -uapp -papp -N -B --force >/dev/null 2>&1
# One status read sees every rate (the window moves between two reads).
traffic_seen() {
	status_json >"$T/rates.json"
	python3 - "$T/rates.json" <<'PY'
import json, sys
b = {x['name']: x['traffic'] or {} for x in json.load(open(sys.argv[1]))['backends']}
tot = lambda k: sum(t.get(k) or 0 for t in b.values())
ok = (b['db1'].get('connections_per_s') or 0) > 0 and tot('statements_per_s') > 0 \
    and tot('errors_per_s') > 0 and any(t.get('p99_ms') is not None for t in b.values())
sys.exit(0 if ok else 1)
PY
}
ms=$(wait_until 15 traffic_seen)
check "status shows db1's connections/s, statements/s, errors/s and a p99 (${ms} ms)" traffic_seen
measured "traffic: $(json_get "[(b['name'], b['traffic']) for b in d['backends']]" <"$T/rates.json")"
ctl status >"$T/table3"
check "the table has the traffic section" grep -q '^NAME  *CONN/S  *STMT/S  *ERR/S  *P99  *LAST CHANGE$' "$T/table3"

# --- exit codes -----------------------------------------------------------------
check_eq "unknown backend: exit 1" 1 "$(rc_of drain nosuch)"
check_eq "unknown backend: one line naming it" 'mysteerctl: unknown backend "nosuch"' "$(cat "$T/err")"
check_eq "usage error: exit 2" 2 "$(rc_of frobnicate)"
check "usage error prints the usage" grep -q '^usage: mysteerctl' "$T/err"
check_eq "bad value: exit 1" 1 "$(rc_of set db1 priority=-3)"
check_eq "bad value: one line" 1 "$(wc -l <"$T/err")"
"$MYSTEERCTL" --socket "$T/nope.sock" status >/dev/null 2>"$T/err"
check_eq "daemon not running: exit 1" 1 "$?"
check "daemon not running names the socket" grep -q "^mysteerctl: daemon not running ($T/nope.sock" "$T/err"
"$MYSTEERCTL" -c "$T/mysteer.conf" status >/dev/null 2>&1
check_eq "-c FILE finds the socket" 0 "$?"
MYSTEER_ADMIN_SOCKET=$T/admin.sock "$MYSTEERCTL" status >/dev/null 2>&1
check_eq "MYSTEER_ADMIN_SOCKET finds the socket" 0 "$?"

# --- changes --------------------------------------------------------------------
check_eq "add db4" 0 "$(rc_of add db4 "127.0.0.1:$P3" priority=400 weight=2)"
check_eq "add db4 twice: exit 1" 1 "$(rc_of add db4 "127.0.0.1:$P3")"
check_eq "add db4 twice: says it exists" 'mysteerctl: backend "db4" exists' "$(cat "$T/err")"
ms=$(wait_until 10 state_is db4 up)
check "db4 probed up (${ms} ms)" state_is db4 up
measured "add to up: ${ms} ms"
check_eq "db4 has its priority and weight" "400 2" "$(bfield db4 priority) $(bfield db4 weight)"
check_eq "set db3 weight=0" 0 "$(rc_of set db3 weight=0)"
check_eq "db3 weight is 0" 0 "$(bfield db3 weight)"
check_eq "drain db2" 0 "$(rc_of drain db2)"
check_eq "db2 drained" drained "$(bfield db2 state)"
check_eq "disable db2" 0 "$(rc_of disable db2)"
check_eq "db2 disabled" disabled "$(bfield db2 state)"
check "db2 is no reader when disabled" [ "$(bfield db2 role)" != reader ]
check_eq "remove db3" 0 "$(rc_of remove db3)"
check_eq "db3 gone" "db1 db2 db4" "$(names)"
check "state file holds the changes" python3 -c "
import json; d = json.load(open('$T/state'))
b = {x['name']: x for x in d['backends']}
assert b['db4']['added'] and b['db2']['admin'] == 'disabled' and b['db3']['removed']"
check "state file is mode 0600" [ "$(stat -c %a "$T/state")" = 600 ]

# --- survive a restart and a reload ----------------------------------------------
itest_daemon_stop TERM
itest_daemon_start "$T/mysteer.conf" || exit 1
check_eq "after restart: db3 still removed" "db1 db2 db4" "$(names)"
check_eq "after restart: db2 still disabled" disabled "$(bfield db2 state)"
check_eq "after restart: db4 kept its priority" 400 "$(bfield db4 priority)"
check_eq "reload" 0 "$(rc_of reload)"
check_eq "after reload: changes kept" "db1 db2 db4 disabled" "$(names) $(bfield db2 state)"

# --- reset ------------------------------------------------------------------------
check_eq "reset db2" 0 "$(rc_of reset db2)"
ms=$(wait_until 10 state_is db2 up)
check "db2 enabled again by reset (${ms} ms)" state_is db2 up
check_eq "reset" 0 "$(rc_of reset)"
ms=$(wait_until 10 names_are "db1 db2 db3")
check_eq "reset: back to the config (${ms} ms)" "db1 db2 db3" "$(names)"
check_eq "reset: db3 weight from the config again" 1 "$(bfield db3 weight)"

# --- exec -----------------------------------------------------------------------------
cg=${ITEST_CGROUP#$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)}
check_eq "exec runs the command in the steered cgroup" "0::$cg" \
	"$(ctl exec -- cat /proc/self/cgroup | grep '^0::')"
check_eq "exec of a missing command: exit 1" 1 "$(rc_of exec -- /nonexistent/cmd)"

# --- backend ids: reused, and said when none is free -----------------------------
# The maps and the 6450 pool hold 256 ids. An id given back (remove, a
# changed address) goes to a new backend once MYSTEER_TEST_ID_REUSE_MS passed
# and nothing holds it. First with a wait longer than the test: add/remove
# pairs use every id up, and the daemon must say what that means.
pair() { ctl add "$1" "127.0.0.1:$P3" >/dev/null 2>&1 && ctl remove "$1" >/dev/null 2>&1; }
log_since() { tail -n +"$((mark + 1))" "$T/mysteerd.log"; }
itest_daemon_stop TERM
mark=$(wc -l <"$T/mysteerd.log")
export MYSTEER_TEST_ID_REUSE_MS=600000
itest_daemon_start "$T/mysteer.conf" || exit 1
nofree() { log_since | grep -q "db9: no backend id is free"; }
n=0
while ! nofree && [ $n -lt 300 ]; do
	pair db9 || break
	n=$((n + 1))
done
measured "ids used up after $n add/remove pairs (reuse after 600 s)"
check_eq "the 253 fresh ids used once, the 254th add finds none free" 254 "$n"
check "no free id is logged as such" nofree
check "the daemon still answers after that" ctl status

# Then with a short wait: ids come back, the one given back longest ago
# first, and what the maps count for it starts again from zero.
itest_daemon_stop TERM
mark=$(wc -l <"$T/mysteerd.log")
export MYSTEER_TEST_ID_REUSE_MS=300
itest_daemon_start "$T/mysteer.conf" || exit 1
unset MYSTEER_TEST_ID_REUSE_MS
wait_until 15 topology_is db1 "db2 db3" >/dev/null
maps_field() { # ID KEY
	"$MYSTEERCTL" -c "$T/mysteer.conf" --json maps |
		json_get "[b['$2'] for b in d['backends'] if b['id']==$1][0]"
}
ro_port() { ctl exec -- mariadb --no-defaults -h127.0.0.1 -P6447 -uapp -papp -N -B \
	-e 'SELECT @@port' 2>/dev/null; }
ctl set db2 weight=0 >/dev/null && ctl set db3 weight=0 >/dev/null
ctl add db9 "127.0.0.1:$P3" >/dev/null
wait_until 15 topology_is db1 "db2 db3 db9" >/dev/null
for i in 1 2 3; do ro_port >/dev/null; done
id9=$("$MYSTEERCTL" -c "$T/mysteer.conf" --json maps | json_get "max(b['id'] for b in d['backends'])")
check_eq "db9 (newest, id $id9) counted the 3 connections steered to it" 3 "$(maps_field "$id9" steered)"
# A 6450 session under least_conn reads from db9 and stays open, idle,
# across the reuse: it counts on db9's id until then, not on the new
# backend that gets the id after (it was counted there before), and once
# it reads from the new one and ends, the count goes back to 0, not -1.
itest_reader_policy "$T/mysteer.conf" least_conn >/dev/null
pool_readers() { status_json | json_get "d['pool'].get('db9', {}).get('readers')"; }
readers_are() { [ "$(pool_readers)" = "$1" ]; }
mkfifo "$T/lc.in"
mariadb --no-defaults -h127.0.0.1 -P6450 -uapp -papp -N -B -n <"$T/lc.in" >"$T/lc.out" 2>&1 &
lc_pid=$!
exec 9>"$T/lc.in"
echo "SELECT @@port;" >&9
wait_until 10 bash -c "[ -s $T/lc.out ]" >/dev/null
check_eq "a 6450 session reads from db9 (the only reader with weight)" "$P3" "$(head -n 1 "$T/lc.out")"
check_eq "and counts on db9 (status readers)" 1 "$(pool_readers)"
ctl remove db9 >/dev/null
n=0
while [ $n -lt 300 ]; do
	ctl add db9 "127.0.0.1:$P3" >/dev/null 2>&1 || break
	log_since | grep -q "db9: backend id [0-9]* (given back" && break
	ctl remove db9 >/dev/null 2>&1 || break
	n=$((n + 1))
done
reused=$(log_since | sed -n 's/^.*db9: backend id \([0-9]*\) (given back.*$/\1/p' | head -n 1)
measured "an id came back after $n add/remove pairs: id $reused"
check "an id is reused once the fresh ones are used up" [ -n "$reused" ]
check_eq "the id given back longest ago first: db9's first one" "$id9" "$reused"
check_eq "no id ran out with reuse" 0 "$(log_since | grep -c 'no backend id is free')"
wait_until 15 topology_is db1 "db2 db3 db9" >/dev/null
check_eq "the reused id's maps entry is db9's address" "127.0.0.1:$P3" "$(maps_field "$reused" address)"
check_eq "its steered count starts again from zero" 0 "$(maps_field "$reused" steered)"
check_eq "a 6447 connection is steered to it" "$P3" "$(ro_port)"
check_eq "and counted there" 1 "$(maps_field "$reused" steered)"
check_eq "the session idle since db9's first id does not count on the new db9" 0 "$(pool_readers)"
echo "SELECT @@port;" >&9
wait_until 10 bash -c "[ \$(wc -l <$T/lc.out) -ge 2 ]" >/dev/null
check_eq "its next read goes to the new db9" "$P3" "$(sed -n 2p "$T/lc.out")"
check_eq "and counts there once" 1 "$(pool_readers)"
exec 9>&-
wait "$lc_pid"
wait_until 5 readers_are 0 >/dev/null
check_eq "the session ended: the new db9 counts 0 readers, not -1" 0 "$(pool_readers)"
itest_reader_policy "$T/mysteer.conf" random >/dev/null
check "the daemon still answers" ctl status
ctl remove db9 >/dev/null
ctl reset db2 >/dev/null && ctl reset db3 >/dev/null

# --- maps with the daemon down --------------------------------------------------------
# SIGKILL leaves the pins in place, as a crashed daemon would.
itest_daemon_stop KILL
"$MYSTEERCTL" -c "$T/mysteer.conf" maps >"$T/maps" 2>"$T/err"
check_eq "maps with the daemon down: exit 0" 0 "$?"
check "maps printed something" [ -s "$T/maps" ]
"$MYSTEERCTL" -c "$T/mysteer.conf" --json maps >"$T/maps.json" 2>"$T/err"
check "maps --json is JSON" python3 -c "import json; json.load(open('$T/maps.json'))"
rm -rf /sys/fs/bpf/mysteer
check_eq "maps with nothing pinned: exit 1" 1 "$(rc_of maps)"

itest_done
