#!/usr/bin/env bash
# tests/mtr/run.sh - MariaDB's own mysql-test cases (Debian `mariadb-test`,
# suite `main`), each run twice on one sandbox: straight to the primary and
# through mysteerd's 6450 proxy, as the sandbox's `app` user (no `READ_ONLY
# ADMIN`). Writes a per-case table (pass, fail, skip or timeout for each way)
# and the cases that fail only through 6450; exits 1 when such a case is not
# listed in tests/mtr/known.txt (the differences docs/PROXY.md explains).
#
# Why `mariadb-test` per case and not `mariadb-test-run --extern`: the perl
# driver wants to check and restore the server around every case with
# privileges `app` lacks, and starts work (var dir, check-testcase
# connections) that doubles the run time; one `mariadb-test` process per case
# is what the driver runs anyway, with the same environment variables, and a
# per-case `timeout` stops a hung statement without stopping the run.
#
# Environment:
#   MTR_CASES    file of case names, one a line (default tests/mtr/cases.txt)
#   MTR_OUT      report directory (default $BUILD/mtr, i.e. build/mtr)
#   MTR_TIMEOUT  seconds a case may run each way (default 120)
#   MTR_NAME     name of the run in the report and the scratch dir (default mtr)
#   MTR_SYNC_S   seconds the replicas get to catch up before a run through 6450 (30)
#   BUILD        the build tree whose mysteerd serves 6450 (default build)
# The run happens in the test's own network namespace (tests/integration/lib.sh).
# The whole script is one block, read before it runs: editing the file while
# a run goes on does not change that run.
{
. "$(dirname "$0")/../integration/lib.sh"
itest_init "${MTR_NAME:-mtr}"

MTD=/usr/share/mysql/mysql-test
CASES=${MTR_CASES:-$ITEST_ROOT/tests/mtr/cases.txt}
KNOWN=$ITEST_ROOT/tests/mtr/known.txt
OUT=$(realpath -m "${MTR_OUT:-$ITEST_BUILD/mtr}")
NAME=${MTR_NAME:-mtr}
LOGS=$OUT/$NAME-log
TIMEOUT=${MTR_TIMEOUT:-120}
PP=6450

[ -x /usr/bin/mariadb-test ] && [ -d "$MTD/main" ] || {
	echo "not ok - mariadb-test is not installed (scripts/install-deps.sh installs it)"
	exit 1
}
[ -r "$CASES" ] || { echo "not ok - no case list $CASES"; exit 1; }
mkdir -p "$OUT" || exit 1

# The server settings mariadb-test-run gives its servers
# (include/default_mysqld.cnf) that the cases' results assume and that can be
# set at run time, on all three servers, before the proxy opens a connection.
# A replica's applier thread takes the global values when it starts: it is
# restarted, so that a table created without ENGINE is MyISAM there too.
MTR_GLOBALS="SET GLOBAL default_storage_engine = MyISAM, GLOBAL character_set_server = latin1,
	GLOBAL collation_server = latin1_swedish_ci, GLOBAL log_bin_trust_function_creators = 1,
	GLOBAL use_stat_tables = PREFERABLY, GLOBAL histogram_type = JSON_HB,
	GLOBAL binlog_direct_non_transactional_updates = 1, GLOBAL max_heap_table_size = 1048576,
	GLOBAL sort_buffer_size = 262144, GLOBAL key_buffer_size = 1048576"
ITEST_LOG_LEVEL=${MTR_LOG_LEVEL:-info} ITEST_PROXY_EXTRA="workers = 2" itest_write_config "$T/mysteer.conf"

# A fresh sandbox with those settings and mysteerd serving 6450.
setup() {
	local port
	for port in $P1 $P2 $P3; do
		sql_root $port "$MTR_GLOBALS" || { echo "# server settings on $port failed"; return 1; }
	done
	for port in $P2 $P3; do
		sql_root $port "STOP SLAVE SQL_THREAD; START SLAVE SQL_THREAD" ||
			{ echo "# applier restart on $port failed"; return 1; }
	done
	# The schema mariadb-test-run keeps for itself: cases call
	# mtr.add_suppression() for server log lines they expect.
	mariadb --no-defaults -uroot -S "$SANDBOX_DIR/$P1/mysqld.sock" <<-'SQL' || { echo "# mtr schema failed"; return 1; }
		CREATE DATABASE mtr;
		CREATE TABLE mtr.test_suppressions (pattern VARCHAR(255)) ENGINE=MyISAM;
		CREATE PROCEDURE mtr.add_suppression(pattern VARCHAR(255))
			INSERT INTO mtr.test_suppressions (pattern) VALUES (pattern);
	SQL
	itest_daemon_start "$T/mysteer.conf" || return 1
	wait_until 20 bash -c "[ \"\$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B -e 'SELECT 1' 2>/dev/null)\" = 1 ]" >/dev/null ||
		{ echo "# 6450 does not answer"; return 1; }
}

# A case that stopped replication (the sandbox's replicas are not what
# mariadb-test-run has: a statement may fail there only) would spoil every
# case after it: the sandbox is made again.
rebuild() { # case
	local port
	for port in $P1 $P2 $P3; do # the servers' own account of what happened
		cp "$SANDBOX_DIR/$port/mysqld.err" "$LOGS/$1.server-$port.err" 2>/dev/null
	done
	itest_daemon_stop TERM
	sb down >/dev/null 2>&1
	sb up >/dev/null || return 1
	setup
}

itest_sandbox_up
setup || { echo "not ok - sandbox and mysteerd for the cases"; exit 1; }

# Schemas the cases may leave behind are dropped between runs, on the
# primary (the drops replicate), so that each run starts from the same empty
# `test` schema.
KEEP_DBS="'mysql','information_schema','performance_schema','sys','sbtest','mysteer_test','mtr'"
reset_schemas() {
	local dbs d
	dbs=$(sql_root $P1 "SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT IN ($KEEP_DBS)")
	for d in $dbs; do
		sql_root $P1 "DROP DATABASE \`$d\`" || echo "# could not drop $d"
	done
	sql_root $P1 "CREATE DATABASE test"
}

# Before a run through 6450 the replicas are given up to MTR_SYNC_S seconds
# to apply what came before (row events on tables without keys can keep a
# replica busy for a minute). The proxy stays right without it (its
# read-your-writes, and no reads on a replica lagging past
# max_replication_lag_s), only slower: the run goes on after the bound.
replicas_caught_up() {
	local gtid p
	gtid=$(sql_root $P1 "SELECT @@gtid_binlog_pos")
	for p in $P2 $P3; do
		[ "$(sql_root $p "SELECT MASTER_GTID_WAIT('$gtid', ${MTR_SYNC_S:-30})")" = 0 ] || return 1
	done
}

# Both replicas' replication threads run.
replication_ok() {
	local p st
	for p in $P2 $P3; do
		st=$(mariadb --no-defaults -uroot -S "$SANDBOX_DIR/$p/mysqld.sock" -e "SHOW SLAVE STATUS\G") || return 1
		grep -q "Slave_SQL_Running: Yes" <<<"$st" && grep -q "Slave_IO_Running: Yes" <<<"$st" || return 1
	done
}

# run_case NAME PORT TAG: prints pass|fail|skip|timeout and leaves the
# case's output in $LOGS/NAME.TAG.log (and its .reject when it failed).
run_case() {
	local c=$1 port=$2 tag=$3 rc log=$LOGS/$1.$3.log
	local var=$T/var-$tag
	rm -rf "$var" && mkdir -p "$var/tmp" "$var/log" || return 1
	# from the suite's directory, as mariadb-test-run runs it: `--require`
	# names its files relative to it
	cd "$MTD" || return 1
	MYSQL_TEST_DIR=$MTD MYSQLTEST_VARDIR=$var MYSQL_TMP_DIR=$var/tmp \
		MYSQL_CHARSETSDIR=/usr/share/mysql/charsets MYSQL_SHAREDIR=/usr/share/mysql \
		MASTER_MYPORT=$port MASTER_MYSOCK=/nonexistent MYSQL_TEST_LOGIN_FILE=/nonexistent \
		MYSQL="mariadb --no-defaults -h127.0.0.1 -P$port -uapp -papp" \
		timeout -k 5 "$TIMEOUT" mariadb-test --no-defaults --protocol=tcp --host=127.0.0.1 \
		--port="$port" --user=app --password=app --database=test --basedir="$MTD/" --suite-dir="$MTD/main/" \
		--test-file="$MTD/main/$c.test" --result-file="$MTD/main/$c.result" \
		--tmpdir="$var/tmp" --logdir="$var/log" --character-sets-dir=/usr/share/mysql/charsets \
		--max-connect-retries=3 </dev/null >"$log" 2>&1
	rc=$?
	cp "$var/log/$c.reject" "$LOGS/$c.$tag.reject" 2>/dev/null
	case $rc in
	0) echo pass ;;
	62) echo skip ;;
	124 | 137) echo timeout ;;
	*) echo fail ;;
	esac
}

mkdir -p "$LOGS" || exit 1
rm -f "$LOGS/"*
report=$OUT/$NAME-report.txt
: >"$report.tmp"
n=0 pd=0 pp=0 only=() unknown=() broken=() hung=()
start=$(date +%s)
while read -r c _; do
	case $c in '' | '#'*) continue ;; esac
	[ -f "$MTD/main/$c.test" ] || { echo "# no case main.$c"; continue; }
	n=$((n + 1))
	# A case during which replication stopped (or the primary went away)
	# ran on a sandbox that was not what it should be: run it once more on
	# a new one.
	for attempt in 1 2; do
		reset_schemas || echo "# could not reset the schemas before $c"
		t0=$(date +%s%3N)
		d=$(run_case "$c" $P1 direct)
		t1=$(date +%s%3N)
		reset_schemas || echo "# could not reset the schemas before $c through 6450"
		replicas_caught_up || echo "# replicas behind the primary before $c through 6450"
		t2=$(date +%s%3N)
		p=$(run_case "$c" $PP 6450)
		t3=$(date +%s%3N)
		replication_ok && break
		broken+=("$c")
		echo "# replication stopped during main.$c (attempt $attempt): sandbox made again"
		rebuild "$c" || { echo "not ok - sandbox rebuilt"; exit 1; }
	done
	[ "$d" = pass ] && pd=$((pd + 1))
	[ "$p" = pass ] && pp=$((pp + 1))
	printf '%-40s direct=%-7s 6450=%-7s %6d ms %6d ms\n' "main.$c" "$d" "$p" $((t1 - t0)) $((t3 - t2)) |
		tee -a "$report.tmp"
	[ "$p" = timeout ] && [ "$d" != timeout ] && hung+=("$c")
	if [ "$d" = pass ] && [ "$p" != pass ]; then
		only+=("$c")
		grep -qx "$c" <(sed 's/[[:space:]].*//' "$KNOWN" 2>/dev/null) || unknown+=("$c")
	fi
done <"$CASES"
elapsed=$(($(date +%s) - start))

{
	echo "# mysql-test main suite, $(mariadb-test --version | head -n 1)"
	echo "# cases: $n, direct to the primary: $pd pass, through 6450: $pp pass, ${elapsed} s"
	echo "# fail through 6450 only: ${only[*]:-none}"
	echo "# of those not in tests/mtr/known.txt: ${unknown[*]:-none}"
	echo "# timed out through 6450 only: ${hung[*]:-none}"
	echo "# replication broken after: ${broken[*]:-none}"
	cat "$report.tmp"
} >"$report"
rm -f "$report.tmp"
measured "cases $n, direct $pd/$n, 6450 $pp/$n, $elapsed s (report $report)"
echo "# fail through 6450 only: ${only[*]:-none}"
check "every case passed directly also passes through 6450, or docs/PROXY.md says why (${unknown[*]:-})" \
	[ ${#unknown[@]} -eq 0 ]
check "no case hung through 6450 (${MTR_TIMEOUT:-120} s each) unless it hung directly (${hung[*]:-})" \
	[ ${#hung[@]} -eq 0 ]
measured "replication stopped after: ${broken[*]:-none}"
itest_done
}
