# lib.sh - shared setup for integration tests. Source it first thing:
#
#   . "$(dirname "$0")/lib.sh"
#   itest_init controller          # re-execs the script in its own namespaces
#   itest_sandbox_up               # three MariaDB servers inside
#   itest_write_config "$T/mysteer.conf" - <<EOF ... EOF   (sections to append)
#   itest_daemon_start "$T/mysteer.conf"
#   check "3306 is the writer" [ "$(ctl_writer_port)" = 3306 ]
#   itest_done                     # prints the summary, exits 1 on failures
#
# Isolation (docs/ARCHITECTURE.md, last section): the script re-runs
# itself under `unshare --net --mount`, so servers, daemon, sk_lookup and test
# traffic live in a network namespace made for this test, and a private bpffs
# is mounted at /sys/fs/bpf in a private mount namespace. A child cgroup is
# made for the test ($ITEST_CGROUP) and removed at exit. Every process
# started through these helpers is stopped by PID at exit, whatever happens.

ITEST_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ITEST_BUILD=${BUILD:-$ITEST_ROOT/build}
case "$ITEST_BUILD" in /*) ;; *) ITEST_BUILD=$ITEST_ROOT/$ITEST_BUILD ;; esac
MYSTEERD=$ITEST_BUILD/mysteerd
MYSTEERCTL=$ITEST_BUILD/mysteerctl
SANDBOX=$ITEST_ROOT/scripts/sandbox.sh

ITEST_PASSED=0
ITEST_FAILED=0
ITEST_PIDS=()
ITEST_DAEMON_PID=

itest_init() { # name
	ITEST_NAME=$1
	if [ "${ITEST_IN_NS:-}" != "$ITEST_NAME" ]; then
		[ "$(id -u)" -eq 0 ] || { echo "not ok - $ITEST_NAME needs root"; exit 1; }
		export ITEST_IN_NS=$ITEST_NAME
		exec unshare --net --mount --propagation private -- bash "$0"
	fi
	set -u
	ip link set lo up
	# A private bpffs: pins made by this test vanish with its mount namespace.
	mount -t bpf bpf /sys/fs/bpf || { echo "not ok - mount bpffs"; exit 1; }
	T=$(mktemp -d "/tmp/mysteer-itest-$ITEST_NAME.XXXXXX")
	export T
	# Binaries of an ASan/UBSan build (BUILD=<tree>/asan) write any report
	# to $T/sanitizer.* and stop at the first one; itest_cleanup fails the
	# test when such a file exists. Uninstrumented binaries ignore these.
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}halt_on_error=1:abort_on_error=1:detect_leaks=1:log_path=$T/sanitizer"
	export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$T/sanitizer"
	export SANDBOX_DIR=$T/sandbox
	export SANDBOX_BASE_PORT=${SANDBOX_BASE_PORT:-3306}
	P1=$SANDBOX_BASE_PORT P2=$((SANDBOX_BASE_PORT + 1)) P3=$((SANDBOX_BASE_PORT + 2))
	ITEST_CGROUP=
	local cg2
	cg2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
	if [ -n "$cg2" ]; then
		ITEST_CGROUP=$cg2/mysteer-itest-$ITEST_NAME-$$
		mkdir -p "$ITEST_CGROUP"
	fi
	export ITEST_CGROUP
	trap itest_cleanup EXIT
	trap 'exit 130' INT TERM
	echo "# $ITEST_NAME: scratch $T, netns $(readlink /proc/self/ns/net), cgroup ${ITEST_CGROUP:-none}"
}

itest_cleanup() {
	local rc=$? pid
	set +e
	[ -n "$ITEST_DAEMON_PID" ] && itest_daemon_stop TERM >/dev/null 2>&1
	for pid in "${ITEST_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	"$SANDBOX" down >/dev/null 2>&1
	# After every process stopped: leak reports are written at exit.
	itest_sanitizer_check || rc=1
	if [ -n "${ITEST_CGROUP:-}" ] && [ -d "$ITEST_CGROUP" ]; then
		# Anything still inside goes back to the parent before rmdir.
		local parent
		parent=$(dirname "$ITEST_CGROUP")
		for pid in $(cat "$ITEST_CGROUP/cgroup.procs" 2>/dev/null); do
			echo "$pid" >"$parent/cgroup.procs" 2>/dev/null
		done
		rmdir "$ITEST_CGROUP" 2>/dev/null
	fi
	if [ "${ITEST_KEEP:-0}" = 1 ]; then echo "# kept $T"; else rm -rf "$T"; fi
	exit $rc
}

# Prints the sanitizer reports written so far (ASan, LSan, UBSan: see
# itest_init) and returns 1 if there is any.
itest_sanitizer_check() {
	local f found=0
	for f in "$T"/sanitizer.*; do
		[ -e "$f" ] || continue
		found=1
		echo "not ok - sanitizer report $(basename "$f")"
		sed 's/^/# /' "$f" | head -n 60
	done
	[ $found -eq 0 ]
}

# --- TAP-ish reporting -------------------------------------------------------

check() { # description command...
	local desc=$1
	shift
	if "$@"; then
		ITEST_PASSED=$((ITEST_PASSED + 1)); echo "ok - $desc"
	else
		ITEST_FAILED=$((ITEST_FAILED + 1)); echo "not ok - $desc"
	fi
}

check_eq() { # description expected actual
	if [ "$2" = "$3" ]; then
		ITEST_PASSED=$((ITEST_PASSED + 1)); echo "ok - $1"
	else
		ITEST_FAILED=$((ITEST_FAILED + 1)); echo "not ok - $1 (expected '$2', got '$3')"
	fi
}

measured() { echo "measured: $*"; }

itest_done() {
	echo "# $ITEST_NAME: $ITEST_PASSED passed, $ITEST_FAILED failed"
	[ "$ITEST_FAILED" -eq 0 ]
	exit $?
}

# Polls "command..." every 50 ms until it succeeds or timeout_s passes.
# Prints the elapsed milliseconds; returns 1 on timeout.
wait_until() { # timeout_s command...
	local timeout_ms=$(($1 * 1000)) start now
	shift
	start=$(date +%s%3N)
	while :; do
		if "$@" >/dev/null 2>&1; then
			now=$(date +%s%3N); echo $((now - start)); return 0
		fi
		now=$(date +%s%3N)
		[ $((now - start)) -ge "$timeout_ms" ] && { echo $((now - start)); return 1; }
		sleep 0.05
	done
}

# --- sandbox and SQL -----------------------------------------------------------

itest_sandbox_up() {
	"$SANDBOX" up || { echo "not ok - sandbox up"; exit 1; }
}

sb() { "$SANDBOX" "$@"; }

# sql PORT QUERY [user] [password] [host]: one query over TCP, batch output.
sql() {
	mariadb --no-defaults -h "${5:-127.0.0.1}" -P "$1" -u "${3:-app}" -p"${4:-app}" \
		--connect-timeout=5 -N -B -e "$2"
}

# Root over the instance's UNIX socket (for test setup only).
sql_root() { # port query
	mariadb --no-defaults -uroot -S "$SANDBOX_DIR/$1/mysqld.sock" -N -B -e "$2"
}

# Where writes land, seen from the servers themselves rather than from an
# error 1290 (which app_admin never gets): writes_mark records each server's
# Com_insert and its binlog GTID state; writes_delta PORT prints the inserts
# that server ran since; local_writes PORT prints the transactions that
# server wrote to its binlog on its own since (a replica's own server_id,
# @@server_id = its port, in @@gtid_binlog_state), so 0 on every replica
# means no write ran there.
declare -A WRITES_COM WRITES_GTID
writes_mark() {
	local p
	for p in $P1 $P2 $P3; do
		WRITES_COM[$p]=$(sql_root "$p" "SHOW GLOBAL STATUS LIKE 'Com_insert'" | awk '{print $2}')
		WRITES_GTID[$p]=$(own_gtid_seq "$p")
	done
}
own_gtid_seq() { # port: the seq_no of the last GTID this server made itself, or 0
	local sid state
	sid=$(sql_root "$1" "SELECT @@server_id") || return 1
	state=$(sql_root "$1" "SELECT @@gtid_binlog_state") || return 1
	tr ',' '\n' <<<"$state" | awk -F- -v sid="$sid" '$2 == sid {s = $3} END {print s + 0}'
}
writes_delta() { # port
	echo $(($(sql_root "$1" "SHOW GLOBAL STATUS LIKE 'Com_insert'" | awk '{print $2}') - ${WRITES_COM[$1]}))
}
local_writes() { # port
	echo $(($(own_gtid_seq "$1") - ${WRITES_GTID[$1]}))
}

# --- daemon --------------------------------------------------------------------

# Writes a config for the daemon of this test: [mysteerd] pointing into $T,
# [steer] cgroup = the test's own cgroup, the sandbox backends, then whatever
# the caller gives on stdin (extra sections; a later [probe] etc. is not
# allowed twice, so pass probe/steer keys through the variables below).
#   ITEST_PROBE_EXTRA, ITEST_STEER_EXTRA, ITEST_PROXY_EXTRA: lines added to those sections
#   ITEST_APP_ADMIN=1: app_admin (READ_ONLY ADMIN: a replica accepts its
#     writes) is a 6450 user too
#   ITEST_BACKENDS: which sandbox servers become backends db1..db3 (default
#     "1 2 3", priorities 100, 200, 300; empty: none)
#   ITEST_BACKEND_EXTRA: lines added to each of those [backend:dbN] sections
itest_write_config() { # file [-: append stdin]
	local f=$1
	cat >"$f" <<CONF
[mysteerd]
admin_socket = $T/admin.sock
state_file = $T/state
bpffs_dir = /sys/fs/bpf/mysteer
log_level = ${ITEST_LOG_LEVEL:-info}

[probe]
interval_ms = ${ITEST_INTERVAL_MS:-200}
timeout_ms = ${ITEST_TIMEOUT_MS:-500}
user = mysteer
password = mysteer
${ITEST_PROBE_EXTRA:-}

[steer]
cgroup = ${ITEST_CGROUP}
${ITEST_STEER_EXTRA:-}

[proxy]
${ITEST_PROXY_EXTRA:-}

[route:rw]
port = 6446
role = writer
[route:ro]
port = 6447
role = reader
[route:split]
port = 6450
role = split

[user:app]
password = app
${ITEST_APP_ADMIN:+
[user:app_admin]
password = app_admin}
CONF
	local i port
	for i in ${ITEST_BACKENDS-1 2 3}; do
		port=P$i
		printf '\n[backend:db%s]\nhost = 127.0.0.1\nport = %s\npriority = %s\n' \
			"$i" "${!port}" $((i * 100)) >>"$f"
		[ -n "${ITEST_BACKEND_EXTRA:-}" ] && printf '%s\n' "$ITEST_BACKEND_EXTRA" >>"$f"
	done
	[ "${2:-}" = - ] && cat >>"$f"
	chmod 600 "$f"
}

ctl() { "$MYSTEERCTL" --socket "$T/admin.sock" "$@"; }
# Sets [steer] reader_policy in a config written by itest_write_config
# (random: the default, the line goes) and reloads the running daemon.
itest_reader_policy() { # file policy
	sed -i '/^reader_policy = /d' "$1" || return 1
	if [ "$2" != random ]; then
		sed -i "s/^\[steer\]\$/[steer]\nreader_policy = $2/" "$1" || return 1
	fi
	ctl reload
}

# Starts mysteerd in the foreground (background job), log in $T/mysteerd.log,
# and waits until its admin socket answers.
itest_daemon_start() { # config [extra args]
	local conf=$1
	shift
	"$MYSTEERD" -c "$conf" -f "$@" >>"$T/mysteerd.log" 2>&1 &
	ITEST_DAEMON_PID=$!
	# 30 s: a daemon on a loaded 2-core machine was seen taking 13 s to start.
	if ! wait_until 30 ctl status >/dev/null; then
		echo "not ok - mysteerd did not answer on its admin socket"
		tail -n 30 "$T/mysteerd.log"
		return 1
	fi
}

# Checks that a proxy_run started by the test still runs, stops it with
# SIGTERM (so that an ASan build writes its leak report into the log), and
# checks a clean exit and no sanitizer report in its log. Empties ITEST_PIDS.
itest_proxy_stop() { # pid log
	check "the proxy is still running" kill -0 "$1"
	kill -TERM "$1"
	wait "$1"
	check "the proxy stopped cleanly (exit 0)" [ $? -eq 0 ]
	ITEST_PIDS=()
	check "no sanitizer report in the proxy's log" bash -c "! grep -i 'sanitizer\|runtime error' '$2'"
}

itest_daemon_stop() { # [signal]
	local sig=${1:-TERM} pid=$ITEST_DAEMON_PID i
	[ -n "$pid" ] || return 0
	kill -s "$sig" "$pid" 2>/dev/null
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	ITEST_DAEMON_RC=$?
	ITEST_DAEMON_PID=
}

# Runs a command in the background and stops it at exit.
itest_bg() { "$@" & ITEST_PIDS+=($!); }

# Status JSON queries (json via python3's json module, always present).
status_json() { ctl --json status; }
json_get() { # python-expression-on-d
	python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"
}
ctl_writer() { status_json | json_get 'd["writer"]'; }
# role of a backend: writer|reader|none
ctl_role() { status_json | json_get "[b['role'] for b in d['backends'] if b['name']=='$1'][0]"; }
ctl_state() { status_json | json_get "[b['state'] for b in d['backends'] if b['name']=='$1'][0]"; }
ctl_readers() { status_json | json_get "' '.join(sorted(b['name'] for b in d['backends'] if b['role']=='reader'))"; }
