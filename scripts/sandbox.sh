#!/usr/bin/env bash
# sandbox.sh - three local MariaDB servers with GTID replication, for `make run`,
# the integration tests and the benchmarks.
#
#   sandbox.sh up | down | status | kill PORT | start PORT | promote PORT | rejoin PORT
#
# SANDBOX_SEMISYNC=1 turns on MariaDB's built-in semi-synchronous replication
# on every server (wait point AFTER_SYNC, so a commit is acknowledged to the
# client only once a replica has it; falls back to asynchronous after
# SANDBOX_SEMISYNC_TIMEOUT_MS, default 5000, without a replica's ack).
# SANDBOX_BINLOG_FORMAT (e.g. ROW) sets binlog_format (default: the server's).
# `rejoin PORT` makes a server that is not the primary (a killed old primary,
# a fenced one after `promote`) a replica of the current primary again: it
# replicates from its own position when that is part of the primary's
# history, else it is rebuilt from a dump of the primary.
#
# Primary on SANDBOX_BASE_PORT (3306), replicas on +1 and +2. Every instance
# starts read_only=1; only `up` (for the primary) and `promote` clear it, as a
# failover tool would. Data lives in SANDBOX_DIR; `down` stops the servers of
# this SANDBOX_DIR by PID (never by name: other sandboxes may run) and removes
# the data unless SANDBOX_KEEP=1. Each server runs in a session of its own
# unless SANDBOX_SETSID=0 (see start_server). The servers listen on 127.0.0.1
# and ::1, and on the addresses in SANDBOX_BIND (a comma-separated list, for a
# test's own veth address), never on every interface; SANDBOX_LOOPBACK=127.0.0.1
# makes them IPv4-only.
#
# `up` also makes a test CA and certificates with openssl into $DIR/tls (never
# committed; `certs` makes them alone): ca.pem, server-cert.pem and
# server-key.pem (for localhost and 127.0.0.1, ::1), client-cert.pem and
# client-key.pem, all signed by ca.pem; EC P-256 keys, valid for 30 days.
# SANDBOX_TLS=1 starts the servers with that CA and server certificate
# (ssl_ca, ssl_cert, ssl_key): they offer TLS (and `REQUIRE SSL` accounts
# work). Off by default, since the mariadb CLI then uses TLS on its own.
# SANDBOX_PROXY_NETWORKS (e.g. 127.0.0.0/8) sets the servers'
# proxy_protocol_networks: connections from there may start with a PROXY
# header (the relay's and 6450's with [backend:NAME] proxy_protocol = on);
# without one they are taken as usual.
#
# The first `up` on a machine initializes one template data directory (users
# and grants included) and every later `up` copies it, which turns the three
# mariadb-install-db runs into a file copy.
set -euo pipefail

BASE=${SANDBOX_BASE_PORT:-3306}
DIR=${SANDBOX_DIR:-/var/tmp/mysteer-sandbox}
TEMPLATE_ROOT=${SANDBOX_TEMPLATE_DIR:-/var/tmp/mysteer-sandbox-template}
PORTS=("$BASE" $((BASE + 1)) $((BASE + 2)))
# Loopback only, never every interface of the host: its users (app/app,
# mysteer/mysteer, haproxy without password) are for the sandbox alone. A
# test that needs its own veth address adds it (comma-separated).
# SANDBOX_LOOPBACK replaces the loopback pair (127.0.0.1: IPv4-only servers).
BIND=${SANDBOX_LOOPBACK:-127.0.0.1,::1}${SANDBOX_BIND:+,$SANDBOX_BIND}
MARIADBD=${MARIADBD:-$(command -v mariadbd || echo /usr/sbin/mariadbd)}

die() { echo "sandbox: $*" >&2; exit 1; }
log() { echo "sandbox: $*" >&2; }

[ -x "$MARIADBD" ] || die "mariadbd not found (run scripts/install-deps.sh)"

inst_dir() { echo "$DIR/$1"; }
sock() { echo "$DIR/$1/mysqld.sock"; }
pidfile() { echo "$DIR/$1/mysqld.pid"; }

is_sandbox_port() {
	local p
	for p in "${PORTS[@]}"; do [ "$p" = "$1" ] && return 0; done
	return 1
}

# Root over the instance's own UNIX socket (unix_socket auth as root).
sql() { # port query
	mariadb --no-defaults -uroot -S "$(sock "$1")" -N -B -e "$2"
}

# "Field: value" lines of SHOW SLAVE STATUS (empty when not a replica).
slave_status() { # port
	mariadb --no-defaults -uroot -S "$(sock "$1")" -e "SHOW SLAVE STATUS\G"
}

server_pid() { # port -> pid if that server runs
	local pf pid
	pf=$(pidfile "$1")
	[ -f "$pf" ] || return 1
	pid=$(cat "$pf" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	# Guard against a recycled PID: it must be a mariadbd with our datadir.
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--datadir=$(inst_dir "$1")/data" ||
		return 1
	echo "$pid"
}

is_up() { server_pid "$1" >/dev/null && sql "$1" "SELECT 1" >/dev/null 2>&1; }

mariadb_version() { "$MARIADBD" --version | awk '{print $3}'; }

# The template: a bootstrapped data dir with the sandbox's users and grants and
# no binary log history, so the three copies start with identical, empty GTID
# state.
# TEMPLATE_REV changes with the users and grants below, so that a template
# made by an older sandbox.sh is not used.
TEMPLATE_REV=2
make_template() {
	local tdir="$TEMPLATE_ROOT/$(mariadb_version)-r$TEMPLATE_REV"
	if [ -f "$tdir/ready" ]; then echo "$tdir"; return; fi
	mkdir -p "$TEMPLATE_ROOT"
	(
		flock 9
		[ -f "$tdir/ready" ] && exit 0
		rm -rf "$tdir"
		mkdir -p "$tdir"
		mariadb-install-db --no-defaults --user=root --datadir="$tdir/data" \
			--auth-root-authentication-method=socket --skip-test-db \
			>"$tdir/install.log" 2>&1 || { cat "$tdir/install.log" >&2; exit 1; }
		local s="$tdir/boot.sock"
		"$MARIADBD" --no-defaults --user=root --datadir="$tdir/data" --socket="$s" \
			--skip-networking --skip-log-bin --pid-file="$tdir/boot.pid" \
			--log-error="$tdir/boot.err" &
		local pid=$! i
		for i in $(seq 1 300); do
			mariadb --no-defaults -uroot -S "$s" -e "SELECT 1" >/dev/null 2>&1 && break
			kill -0 $pid 2>/dev/null || { cat "$tdir/boot.err" >&2; exit 1; }
			sleep 0.1
		done
		mariadb --no-defaults -uroot -S "$s" <<-'SQL' || { kill $pid; exit 1; }
			SET sql_log_bin = 0;
			-- anonymous accounts shadow user@'%' logins from 127.0.0.1
			DELETE FROM mysql.global_priv WHERE User = '';
			FLUSH PRIVILEGES;
			CREATE USER 'app'@'%' IDENTIFIED BY 'app';
			GRANT ALL PRIVILEGES ON *.* TO 'app'@'%';
			-- a write wrongly sent to a replica must fail with 1290
			REVOKE READ_ONLY ADMIN ON *.* FROM 'app'@'%';
			-- a DBA-like account: a replica accepts its writes (READ_ONLY
			-- ADMIN), so a write sent to a replica shows as a row there
			CREATE USER 'app_admin'@'%' IDENTIFIED BY 'app_admin';
			GRANT ALL PRIVILEGES ON *.* TO 'app_admin'@'%';
			CREATE USER 'mysteer'@'%' IDENTIFIED BY 'mysteer';
			GRANT SLAVE MONITOR, PROCESS ON *.* TO 'mysteer'@'%';
			GRANT SELECT ON mysql.proc TO 'mysteer'@'%';
			CREATE USER 'repl'@'%' IDENTIFIED BY 'repl';
			GRANT REPLICATION SLAVE ON *.* TO 'repl'@'%';
			CREATE USER 'haproxy'@'%';
			CREATE DATABASE IF NOT EXISTS sbtest;
			CREATE DATABASE IF NOT EXISTS mysteer_test;
		SQL
		kill $pid
		for i in $(seq 1 300); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
		rm -f "$tdir/data/"*.pid
		touch "$tdir/ready"
	) 9>"$TEMPLATE_ROOT/.lock"
	echo "$tdir"
}

start_server() { # port
	local p=$1 d
	d=$(inst_dir "$p")
	if server_pid "$p" >/dev/null; then return 0; fi
	[ -d "$d/data" ] || die "no data for $p in $DIR (run: sandbox.sh up)"
	rm -f "$(pidfile "$p")" "$(sock "$p")"
	# read_only=1 always: only `up` (primary) and `promote` clear it.
	# A session of its own (setsid) by default; SANDBOX_SETSID=0 keeps the
	# caller's. With the kernel's autogroup scheduling every session is a
	# group with an equal share of the CPU, so this decides whether the
	# servers are scheduled apart from the clients and routers beside them
	# (docs/BENCHMARKS.md, "6450 proxy: the oltp_read_only tail").
	local launcher=(setsid) extra=()
	[ "${SANDBOX_SETSID:-1}" = 0 ] && launcher=()
	if [ "${SANDBOX_SEMISYNC:-0}" = 1 ]; then
		extra+=(--rpl-semi-sync-master-enabled=1 --rpl-semi-sync-slave-enabled=1
			--rpl-semi-sync-master-wait-point=AFTER_SYNC
			--rpl-semi-sync-master-timeout="${SANDBOX_SEMISYNC_TIMEOUT_MS:-5000}")
	fi
	[ -n "${SANDBOX_BINLOG_FORMAT:-}" ] && extra+=(--binlog-format="$SANDBOX_BINLOG_FORMAT")
	[ -n "${SANDBOX_PROXY_NETWORKS:-}" ] && extra+=(--proxy-protocol-networks="$SANDBOX_PROXY_NETWORKS")
	if [ "${SANDBOX_TLS:-0}" = 1 ]; then
		extra+=(--ssl-ca="$DIR/tls/ca.pem" --ssl-cert="$DIR/tls/server-cert.pem"
			--ssl-key="$DIR/tls/server-key.pem")
	fi
	"${launcher[@]}" "$MARIADBD" --no-defaults --user=root \
		--datadir="$d/data" --socket="$(sock "$p")" --pid-file="$(pidfile "$p")" \
		--log-error="$d/mysqld.err" --port="$p" --bind-address="$BIND" \
		--server-id="$p" --log-bin="$d/data/binlog" --log-slave-updates=1 \
		--gtid-strict-mode=1 --read-only=1 --skip-name-resolve \
		--max-allowed-packet=1G --local-infile=1 --max-connections=2000 \
		--innodb-buffer-pool-size=128M --innodb-log-file-size=48M \
		--innodb-flush-log-at-trx-commit=2 --sync-binlog=0 \
		--performance-schema=0 --relay-log="$d/data/relay" \
		--slave-net-timeout=5 "${extra[@]}" \
		</dev/null >/dev/null 2>&1 &
	local i
	for i in $(seq 1 300); do
		if sql "$p" "SELECT 1" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	tail -n 20 "$d/mysqld.err" >&2 || true
	die "server $p did not start (log: $d/mysqld.err)"
}

stop_server() { # port [signal]
	local p=$1 sig=${2:-TERM} pid i
	pid=$(server_pid "$p") || return 0
	kill -s "$sig" "$pid" 2>/dev/null || true
	for i in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || { rm -f "$(pidfile "$p")"; return 0; }
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	sleep 0.2
	rm -f "$(pidfile "$p")"
}

primary() { cat "$DIR/primary" 2>/dev/null || echo "$BASE"; }

point_replica() { # replica_port primary_port
	sql "$1" "STOP SLAVE; CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$2,
		MASTER_USER='repl', MASTER_PASSWORD='repl', MASTER_USE_GTID=slave_pos,
		MASTER_CONNECT_RETRY=1; START SLAVE;"
}

replication_running() { # port
	local st
	st=$(slave_status "$1" 2>/dev/null) || return 1
	grep -q 'Slave_IO_Running: Yes' <<<"$st" && grep -q 'Slave_SQL_Running: Yes' <<<"$st"
}

wait_replication() { # port
	local i
	for i in $(seq 1 300); do
		replication_running "$1" && return 0
		sleep 0.1
	done
	slave_status "$1" >&2 || true
	die "replication on $1 did not start"
}

# The test CA and certificates (see the header); kept while they exist.
make_certs() {
	local d=$DIR/tls ext
	[ -s "$d/client-cert.pem" ] && return 0
	command -v openssl >/dev/null || die "openssl not found (run scripts/install-deps.sh)"
	mkdir -p "$d"
	(
		set -e
		cd "$d"
		umask 077
		openssl ecparam -name prime256v1 -genkey -noout -out ca-key.pem
		openssl req -x509 -new -key ca-key.pem -days 30 -subj "/CN=mysteer sandbox CA" \
			-addext "basicConstraints=critical,CA:TRUE" \
			-addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.pem
		for who in server client; do
			openssl ecparam -name prime256v1 -genkey -noout -out "$who-key.pem"
			openssl req -new -key "$who-key.pem" -subj "/CN=mysteer sandbox $who" \
				-out "$who.csr"
			if [ "$who" = server ]; then
				ext="subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1
extendedKeyUsage=serverAuth"
			else
				ext="extendedKeyUsage=clientAuth"
			fi
			openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca-key.pem \
				-CAcreateserial -days 30 -extfile <(echo "$ext") -out "$who-cert.pem"
			rm -f "$who.csr"
		done
		chmod 644 ca.pem server-cert.pem client-cert.pem
	) >"$d/openssl.log" 2>&1 || { cat "$d/openssl.log" >&2; die "making the test certificates failed"; }
}

cmd_up() {
	mkdir -p "$DIR"
	make_certs
	local p fresh=0 tdir
	if [ ! -d "$(inst_dir "${PORTS[0]}")/data" ]; then
		fresh=1
		tdir=$(make_template)
		for p in "${PORTS[@]}"; do
			mkdir -p "$(inst_dir "$p")"
			cp -a "$tdir/data" "$(inst_dir "$p")/data"
		done
		echo "${PORTS[0]}" >"$DIR/primary"
	fi
	for p in "${PORTS[@]}"; do start_server "$p"; done
	local prim
	prim=$(primary)
	if [ $fresh -eq 1 ]; then
		for p in "${PORTS[@]}"; do
			[ "$p" = "$prim" ] && continue
			point_replica "$p" "$prim"
		done
	fi
	sql "$prim" "SET GLOBAL read_only = 0"
	for p in "${PORTS[@]}"; do
		[ "$p" = "$prim" ] && continue
		wait_replication "$p"
	done
	log "up: primary $prim, replicas $(for p in "${PORTS[@]}"; do [ "$p" = "$prim" ] || printf '%s ' "$p"; done)(data: $DIR)"
}

cmd_down() {
	local p pid
	# Signal all three first so their shutdowns overlap.
	for p in "${PORTS[@]}"; do
		pid=$(server_pid "$p") && kill -TERM "$pid" 2>/dev/null || true
	done
	for p in "${PORTS[@]}"; do stop_server "$p"; done
	if [ "${SANDBOX_KEEP:-0}" != 1 ] && [ -d "$DIR" ]; then
		rm -rf "$DIR"
	fi
}

cmd_status() {
	local p prim state ro repl lag st
	prim=$(primary)
	printf '%-6s %-6s %-10s %-9s %-12s %s\n' PORT STATE ROLE READ_ONLY REPLICATION LAG
	for p in "${PORTS[@]}"; do
		if is_up "$p"; then
			state=up
			ro=$(sql "$p" "SELECT @@read_only")
			st=$(slave_status "$p")
			if [ -z "$st" ]; then repl=-; lag=-
			else
				repl="$(awk '/Slave_IO_Running:/{i=$2} /Slave_SQL_Running:/{s=$2} END{print i"/"s}' <<<"$st")"
				lag=$(awk '/Seconds_Behind_Master:/{print $2}' <<<"$st")
			fi
		else state=down; ro=-; repl=-; lag=-; fi
		local role=standalone
		[ "$repl" != - ] && role=replica
		[ "$p" = "$prim" ] && role=primary
		printf '%-6s %-6s %-10s %-9s %-12s %s\n' "$p" "$state" "$role" "$ro" "$repl" "$lag"
	done
}

cmd_promote() { # port
	local new=$1 old p pos
	old=$(primary)
	[ "$new" = "$old" ] && { log "$new is already the primary"; return 0; }
	is_up "$new" || die "cannot promote $new: it is down"
	if is_up "$old"; then
		# Fence the old primary first, then let the new one apply all it sent.
		sql "$old" "SET GLOBAL read_only = 1"
		pos=$(sql "$old" "SELECT @@gtid_binlog_pos")
		if [ -n "$pos" ]; then
			sql "$new" "SELECT MASTER_GTID_WAIT('$pos', 10)" >/dev/null || true
		fi
	fi
	sql "$new" "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0"
	echo "$new" >"$DIR/primary"
	for p in "${PORTS[@]}"; do
		[ "$p" = "$new" ] || [ "$p" = "$old" ] && continue
		is_up "$p" || continue
		point_replica "$p" "$new"
	done
	log "promoted $new (old primary $old$(is_up "$old" && echo ", now read_only" || echo ", down"))"
}

# True when replication on PORT runs without an error for a moment.
replication_healthy() { # port
	local st
	st=$(slave_status "$1" 2>/dev/null) || return 1
	grep -q 'Slave_IO_Running: Yes' <<<"$st" && grep -q 'Slave_SQL_Running: Yes' <<<"$st" &&
		grep -q 'Last_IO_Errno: 0' <<<"$st" && grep -q 'Last_SQL_Errno: 0' <<<"$st"
}

# Rebuilds PORT from the template and a dump of the primary's databases.
reclone() { # port primary
	local p=$1 prim=$2 tdir dbs
	stop_server "$p" KILL # its data goes anyway
	tdir=$(make_template)
	rm -rf "$(inst_dir "$p")/data"
	cp -a "$tdir/data" "$(inst_dir "$p")/data"
	start_server "$p"
	dbs=$(sql "$prim" "SELECT schema_name FROM information_schema.schemata WHERE schema_name
		NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')")
	# shellcheck disable=SC2086
	{ echo "SET sql_log_bin = 0;"
	  mariadb-dump --no-defaults -uroot -S "$(sock "$prim")" --gtid --master-data=1 \
		--single-transaction --databases $dbs; } | mariadb --no-defaults -uroot -S "$(sock "$p")" ||
		die "rejoin $p: loading the primary's dump failed"
	point_replica "$p" "$prim"
}

cmd_rejoin() { # port
	local p=$1 prim i
	prim=$(primary)
	[ "$p" = "$prim" ] && die "$p is the primary"
	start_server "$p"
	sql "$p" "SET GLOBAL read_only = 1"
	sql "$p" "STOP SLAVE; CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$prim,
		MASTER_USER='repl', MASTER_PASSWORD='repl', MASTER_USE_GTID=current_pos,
		MASTER_CONNECT_RETRY=1; START SLAVE;"
	# Healthy for 1 s in a row within 10 s: it follows the primary.
	local ok=0
	for i in $(seq 1 100); do
		if replication_healthy "$p"; then ok=$((ok + 1)); else ok=0; fi
		[ $ok -ge 10 ] && break
		sleep 0.1
	done
	if [ $ok -ge 10 ]; then
		log "rejoined $p as a replica of $prim"
		return 0
	fi
	log "rejoin $p: its history is not the primary's ($(slave_status "$p" |
		awk -F': ' '/Last_(IO|SQL)_Error:/ && $2 != "" {print $2; exit}')); rebuilding it"
	reclone "$p" "$prim"
	wait_replication "$p"
	log "rejoined $p as a replica of $prim (rebuilt)"
}

usage() {
	echo "usage: sandbox.sh up|down|status|certs|kill PORT|start PORT|promote PORT|rejoin PORT" >&2
	exit 2
}

need_port() {
	[ -n "${1:-}" ] || usage
	is_sandbox_port "$1" || die "$1 is not a sandbox port (${PORTS[*]})"
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
certs) mkdir -p "$DIR"; make_certs; echo "$DIR/tls" ;;
kill) need_port "${2:-}"; stop_server "$2" KILL; log "killed $2" ;;
start) need_port "${2:-}"; start_server "$2"; log "started $2" ;;
promote) need_port "${2:-}"; cmd_promote "$2" ;;
rejoin) need_port "${2:-}"; cmd_rejoin "$2" ;;
*) usage ;;
esac
