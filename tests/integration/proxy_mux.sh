#!/usr/bin/env bash
# proxy_mux.sh - multiplexing on 6450 under mysteerd: sessions that are
# connected but between statements hold no backend connection, so 20 clients
# held open need far fewer backend connections than 20; and a session whose
# state lives on its connection keeps it (temporary table, @v assigned by
# query, an open transaction, SHOW WARNINGS and ROW_COUNT() right after the
# statement they ask about) while other sessions come and go on the same
# backends; LAST_INSERT_ID() follows the session without keeping anything;
# reader_policy = least_conn spreads long-lived sessions evenly.
. "$(dirname "$0")/lib.sh"
itest_init proxy_mux
itest_sandbox_up

PP=6450
# pool_min_idle = 0: every backend connection counted below was opened for a
# client, none kept warm in advance.
ITEST_PROXY_EXTRA="workers = 2
pool_min_idle = 0
pool_idle_timeout_ms = 2000" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || { itest_done; exit 1; }

# top -H and perf tell the workers apart by name (workers = 2 above).
comms=$(cat /proc/"$ITEST_DAEMON_PID"/task/*/comm | sort | tr '\n' ' ')
check "the proxy's 2 workers are threads named mysteer-proxy0/1 ($comms)" \
	test "$(grep -ow 'mysteer-proxy[0-9]*' <<<"$comms" | tr '\n' ' ')" = "mysteer-proxy0 mysteer-proxy1 "

p() { mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=5 -N -B -e "$1"; }
apps() { sql_root "$1" "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER='app'"; }
replica_apps() { echo $(($(apps $P2) + $(apps $P3))); }
proxy_fig() { status_json | json_get "d['proxy']['$1']"; }
pool_fig() { status_json | json_get "sum(v['$1'] for v in d.get('pool', {}).values())"; }
# held OUT PAUSE STATEMENT...: one client session that sends each statement,
# then waits PAUSE seconds, connected all along (the mariadb client runs each
# statement as its line arrives on stdin; -n: its output too).
held() {
	local out=$1 pause=$2 q
	shift 2
	for q in "$@"; do
		echo "$q;"
		sleep "$pause"
	done | mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=5 -N -B -n \
		>"$out" 2>&1
}

# in_use_after OUT PAUSE STATEMENT...: runs them PAUSE s apart in one session
# (held) and prints the connections in use just after its first output
# appeared, while the session waits between two statements.
in_use_after() {
	local out=$1 pause=$2 hp u
	shift 2
	held "$out" "$pause" "$@" &
	hp=$!
	wait_until 8 bash -c "[ -s $out ]" >/dev/null
	sleep 0.5
	u=$(pool_fig in_use)
	wait "$hp"
	echo "$u"
}

wait_until 15 bash -c "[ \"\$(mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B -e 'SELECT @@port' 2>/dev/null)\" != '' ]" >/dev/null
p "CREATE DATABASE IF NOT EXISTS mux; CREATE TABLE IF NOT EXISTS mux.k (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(32)); CREATE TABLE IF NOT EXISTS mux.u (a INT); INSERT INTO mux.u VALUES (1), (2), (3)"
sleep 0.5

# --- an idle session holds nothing ------------------------------------------
held "$T/idle.out" 3 "SELECT @@port" &
hp=$!
wait_until 5 bash -c "[ -s $T/idle.out ]" >/dev/null
sleep 0.3
clients=$(proxy_fig clients) in_use=$(pool_fig in_use)
measured "one session connected between reads: clients $clients, backend connections in use $in_use"
check_eq "a connected session between reads holds no backend connection" "1 0" "$clients $in_use"
wait "$hp"

in_use=$(in_use_after "$T/tmp.out" 3 "CREATE TEMPORARY TABLE mux.tmp (a INT)" "SELECT COUNT(*) FROM mux.tmp")
measured "one session with a temporary table between statements: in use $in_use"
check_eq "a session with a temporary table keeps its writer connection" 1 "$in_use"

# --- 20 clients held open, a few reads each with pauses ----------------------
# Each client sends 12 reads 1 s apart (12 s connected). Their first
# statements come together with their logins (20 client processes starting at
# once, slower on a busy machine), which opens more connections; those idle out
# after pool_idle_timeout_ms (2 s), so the figures are sampled from 5 s on, and
# only while at least 18 clients are connected (an ASan build is slower).
before=$(replica_apps)
pids=()
for i in $(seq 1 20); do
	held "$T/c$i.out" 1 "SELECT $i, @@port" "SELECT COUNT(*) FROM mux.u" "SELECT $i" \
		"SELECT COUNT(*) FROM mux.k" "SELECT $i" "SELECT 1" "SELECT $i" "SELECT 2" \
		"SELECT $i" "SELECT 3" "SELECT $i" "SELECT 4" &
	pids+=($!)
	sleep 0.05
done
pls=() bes=() ins=()
sleep 4
# As many samples as fit while at least 18 clients are connected: each is
# the connections in use at that moment; one client between statements
# holds none, so a moment with fewer in use than half of the connected
# clients shows the multiplexing (without it every connected client holds
# one). How many were needed at most is a figure, not a check: a machine
# busy with other work delays the proxy, statements then arrive together and
# briefly need more connections.
for s in $(seq 1 60); do
	c=$(proxy_fig clients)
	[ "$c" -ge 18 ] || break
	ins+=("$(pool_fig in_use)")
	bes+=("$(proxy_fig backend_connections)") pls+=("$(replica_apps)")
done
samples=${#pls[@]}
# max, median and min of the samples
stat() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[NR], v[int((NR+1)/2)], v[1]}'; }
read -r max_pl med_pl _ < <(stat "${pls[@]:-0}")
read -r max_be med_be _ < <(stat "${bes[@]:-0}")
read -r max_in _ min_in < <(stat "${ins[@]:-99}")
fails=0
for pid in "${pids[@]}"; do wait "$pid" || fails=$((fails + 1)); done
rows=$(cat "$T"/c*.out | wc -l)
measured "20 clients held open, 12 reads each 1 s apart, $samples samples with 18-20 of them connected: backend connections in use at least $min_in, at most $max_in; app connections in the 2 replicas' processlists at most $max_pl, median $med_pl (before: $before), backend connections of the proxy (writer included) at most $max_be, median $med_be; in all reused $(pool_fig reused), opened $(pool_fig opened), parked clean $(pool_fig clean), reset $(pool_fig resets)"
check_eq "20 held-open clients all got their 12 answers" "0 240" "$fails $rows"
check "sampled while the 20 clients were connected ($samples samples)" [ "$samples" -ge 2 ]
check "18-20 connected clients between reads held fewer than 9 connections at some moment (least $min_in in use)" [ "$min_in" -lt 9 ]

# --- a connection that ran only clean reads skips COM_RESET_CONNECTION ---------
r0=$(pool_fig resets) k0=$(pool_fig clean)
for i in $(seq 1 30); do p "SELECT 1" >/dev/null; done
r1=$(pool_fig resets) k1=$(pool_fig clean)
measured "30 connect/SELECT 1/close sessions: parked without a reset +$((k1 - k0)), with one +$((r1 - r0)); opened $(pool_fig opened) in all"
check_eq "connect/SELECT 1/close sessions send no COM_RESET_CONNECTION" 0 $((r1 - r0))
check "each of their connections went back to the pool clean ($((k1 - k0)))" [ $((k1 - k0)) -ge 30 ]
# A clean connection keeps its login schema: a session that asked for none
# must not get one, a session that asked for another gets its own.
for i in 1 2 3; do
	mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B mux -e "SELECT 1" >/dev/null
done
dbs=$(for i in 1 2 3 4 5; do p "SELECT DATABASE()"; done | sort -u | tr '\n' ' ')
check_eq "a session without a schema never gets a pooled connection's schema" "NULL " "$dbs"
dbs=$(for i in 1 2 3; do mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp -N -B mysql -e "SELECT DATABASE()"; done | sort -u | tr '\n' ' ')
check_eq "a session with a schema gets its own on a pooled connection" "mysql " "$dbs"

# --- a write that left no state skips COM_RESET_CONNECTION too -----------------
# The writer reports no session-state change for a plain INSERT or a committed
# transaction, so the connection goes back as it is, with its prepared
# statements; the next session must still see LAST_INSERT_ID() = 0 and no
# warnings of the one before. Connect/statement/close, one at a time: the
# writer's idle connection is the one the next session takes.
r0=$(pool_fig resets) k0=$(pool_fig clean)
for i in $(seq 1 10); do
	p "INSERT INTO mux.k (v) VALUES ('nr$i')"
	p "BEGIN; INSERT INTO mux.k (v) VALUES ('nt$i'); UPDATE mux.u SET a = a; COMMIT"
done
r1=$(pool_fig resets) k1=$(pool_fig clean)
measured "20 sessions of a write (10 INSERTs, 10 transactions): parked without a reset +$((k1 - k0)), with one +$((r1 - r0))"
check "writes and committed transactions went back to the pool without a reset ($((r1 - r0)) resets)" \
	[ $((r1 - r0)) -le 2 -a $((k1 - k0)) -ge 18 ]
lids=$(for i in 1 2 3 4 5; do p "SELECT LAST_INSERT_ID(), @@port"; done | sort -u | tr '\n' ' ')
check_eq "a new session on such a connection has LAST_INSERT_ID() 0, not the last insert's" "0	$P1 " "$lids"
out=$(p "INSERT INTO mux.k (v) VALUES ('lid-next'); SELECT LAST_INSERT_ID() = (SELECT MAX(id) FROM mux.k)")
check_eq "and a session that inserts still gets its own" 1 "$out"
# A write that left a warning is reset: the next session on the writer must
# not see it (the warning is real: the writer shows it to a direct client).
out=$(sql $P1 "INSERT IGNORE INTO mux.k (id, v) VALUES (1, 'dup'); SHOW WARNINGS" | wc -l)
check_eq "INSERT IGNORE of a duplicate leaves a warning (direct)" 1 "$out"
r0=$(pool_fig resets)
p "INSERT IGNORE INTO mux.k (id, v) VALUES (1, 'dup')"
sleep 0.3
check "the connection of a write with a warning was reset" [ $(($(pool_fig resets) - r0)) -ge 1 ]
out=$(p "/* mysteer:writer */ SHOW WARNINGS" | wc -l)
check_eq "its warning does not reach the next session on the writer" 0 "$out"

# --- state that lives on a connection is kept ---------------------------------
# Other sessions keep the backends busy meanwhile, so a connection handed back
# to the pool would be taken (and reset) by one of them.
noise() { for i in $(seq 1 40); do p "SELECT COUNT(*) FROM mux.u; INSERT INTO mux.k (v) VALUES ('noise')" >/dev/null 2>&1; done; }
noise &
n1=$!
noise &
n2=$!
held "$T/s_tmp.out" 0.3 "CREATE TEMPORARY TABLE mux.t1 (a INT)" "INSERT INTO mux.t1 VALUES (7)" \
	"SELECT 1" "SELECT a FROM mux.t1" &
a=$!
held "$T/s_var.out" 0.3 "SELECT @v := 42" "SELECT 1" "SELECT COUNT(*) FROM mux.u" "SELECT @v" &
b=$!
held "$T/s_set.out" 0.3 "SET @w = 5" "SELECT 1" "SELECT @w" &
c=$!
held "$T/s_trx.out" 0.3 "BEGIN" "INSERT INTO mux.k (v) VALUES ('trx')" "SELECT 1" \
	"SELECT COUNT(*) FROM mux.k WHERE v = 'trx'" "ROLLBACK" "SELECT COUNT(*) FROM mux.k WHERE v = 'trx'" &
d=$!
held "$T/s_lid.out" 0.3 "INSERT INTO mux.k (v) VALUES ('lid1')" \
	"SELECT LAST_INSERT_ID() = (SELECT id FROM mux.k WHERE v = 'lid1')" \
	"INSERT INTO mux.k (v) VALUES ('lid2')" "SELECT COUNT(*) FROM mux.u" \
	"SELECT LAST_INSERT_ID() = (SELECT id FROM mux.k WHERE v = 'lid2')" &
e=$!
held "$T/s_warn.out" 0.3 "SELECT CAST('1x' AS UNSIGNED)" "SHOW COUNT(*) WARNINGS" &
f=$!
held "$T/s_rc.out" 0.3 "UPDATE mux.u SET a = a + 10" "SELECT ROW_COUNT()" \
	"DELETE FROM mux.k WHERE v = 'none'" "SELECT ROW_COUNT()" &
g=$!
held "$T/s_lock.out" 0.3 "SELECT GET_LOCK('mux_lock', 0)" "SELECT 1" \
	"SELECT IS_USED_LOCK('mux_lock') IS NOT NULL" "SELECT RELEASE_LOCK('mux_lock')" &
h=$!
held "$T/s_ac.out" 0.3 "SET autocommit = 0" "INSERT INTO mux.u VALUES (100)" "SELECT 1" \
	"SELECT COUNT(*) FROM mux.u WHERE a = 100" "ROLLBACK" "SELECT COUNT(*) FROM mux.u WHERE a = 100" &
i=$!
for pid in $a $b $c $d $e $f $g $h $i $n1 $n2; do wait "$pid"; done
check_eq "a temporary table is usable after other statements and pauses" "1 7" "$(tr '\n' ' ' <"$T/s_tmp.out" | sed 's/ $//')"
check_eq "@v assigned by a query is visible later" "42 1 3 42" "$(tr '\n' ' ' <"$T/s_var.out" | sed 's/ $//')"
check_eq "SET @w is replayed on whatever connection runs the next statement" "1 5" "$(tr '\n' ' ' <"$T/s_set.out" | sed 's/ $//')"
check_eq "an open transaction keeps its connection (sees its insert, rollback drops it)" "1 1 0" "$(tr '\n' ' ' <"$T/s_trx.out" | sed 's/ $//')"
check_eq "LAST_INSERT_ID() is the session's insert's id, also after a read" "1 3 1" "$(tr '\n' ' ' <"$T/s_lid.out" | sed 's/ $//')"
check_eq "SHOW WARNINGS reads the previous statement's warnings" "1 1" "$(tr '\n' ' ' <"$T/s_warn.out" | sed 's/ $//')"
check_eq "ROW_COUNT() reads the previous statement's count" "3 0" "$(tr '\n' ' ' <"$T/s_rc.out" | sed 's/ $//')"
check_eq "a named lock stays with its session" "1 1 1 1" "$(tr '\n' ' ' <"$T/s_lock.out" | sed 's/ $//')"
check_eq "autocommit = 0 keeps the connection until the rollback" "1 1 0" "$(tr '\n' ' ' <"$T/s_ac.out" | sed 's/ $//')"

# --- LAST_INSERT_ID() does not keep the connection ---------------------------
# The proxy asks the insert's connection for LAST_INSERT_ID() when the session
# would hand it back, and sets it again (SET last_insert_id) on the writer
# connection the session takes later: the value outlives the connection.
p "CREATE TABLE mux.seq (n INT); INSERT INTO mux.seq VALUES (500); CREATE TABLE mux.li (a INT)"
in_use=$(in_use_after "$T/lid_idle.out" 3 "INSERT INTO mux.k (v) VALUES ('lidA')" \
	"SELECT COUNT(*) FROM mux.u" "SELECT LAST_INSERT_ID() = (SELECT id FROM mux.k WHERE v = 'lidA')")
measured "one session after an insert and a read, between statements: in use $in_use"
check_eq "a session that inserted holds no connection once it reads elsewhere" 0 "$in_use"
check_eq "its LAST_INSERT_ID() is still the insert's id" "3 1" "$(tr '\n' ' ' <"$T/lid_idle.out" | sed 's/ $//')"

# 20 sessions that each inserted once and read, then wait 10 s connected:
# between statements they hold no connection (without multiplexing each
# would keep its writer connection to the end), and LAST_INSERT_ID() is
# still each one's own.
pids=""
for i in $(seq 1 20); do
	{
		echo "INSERT INTO mux.k (v) VALUES ('many$i');"
		echo "SELECT COUNT(*) FROM mux.u;"
		sleep 10
		echo "SELECT LAST_INSERT_ID() = (SELECT id FROM mux.k WHERE v = 'many$i');"
	} | mariadb --no-defaults -h127.0.0.1 -P$PP -uapp -papp --connect-timeout=5 -N -B -n \
		>"$T/many_$i.out" 2>&1 &
	pids="$pids $!"
done
all_read() { [ "$(cat "$T"/many_*.out 2>/dev/null | wc -l)" -ge 20 ]; }
idle_20() { [ "$(proxy_fig clients)" -ge 20 ] && [ "$(pool_fig in_use)" -eq 0 ]; }
t_read=$(wait_until 15 all_read)
t_idle=$(wait_until 5 idle_20)
idle_ok=$?
end_note="$(pool_fig in_use) in use, $(proxy_fig clients) clients at the end of the wait"
for pid in $pids; do wait "$pid"; done
good=$(cat "$T"/many_*.out | grep -c '^1$')
measured "20 sessions after one insert and one read each: all read after $t_read ms, none in use $t_idle ms later ($end_note); LAST_INSERT_ID() right in $good of 20"
check "20 connected sessions that inserted hold no connection between statements" [ "$idle_ok" -eq 0 ]
check_eq "each of them still reads its own insert's id" 20 "$good"

noise &
n1=$!
noise &
n2=$!
# explicit id into the AUTO_INCREMENT column: the OK packet says 900000,
# LAST_INSERT_ID() stays the generated one; LAST_INSERT_ID(expr) in an
# UPDATE sets it; each read in between lets the writer connection go.
held "$T/lid_more.out" 0.3 "INSERT INTO mux.k (v) VALUES ('lidB')" "SELECT COUNT(*) FROM mux.u" \
	"INSERT INTO mux.k (id, v) VALUES (900000, 'explicit')" "SELECT COUNT(*) FROM mux.u" \
	"SELECT LAST_INSERT_ID() = (SELECT id FROM mux.k WHERE v = 'lidB')" \
	"UPDATE mux.seq SET n = LAST_INSERT_ID(n + 1)" "SELECT COUNT(*) FROM mux.u" \
	"SELECT LAST_INSERT_ID()" "SELECT COUNT(*) FROM mux.u" "SELECT LAST_INSERT_ID(7) + 0" \
	"SELECT COUNT(*) FROM mux.u" "SELECT LAST_INSERT_ID()" &
a=$!
held "$T/lid_other.out" 0.3 "SELECT LAST_INSERT_ID()" "INSERT INTO mux.k (v) VALUES ('lidC')" \
	"SELECT COUNT(*) FROM mux.u" "SELECT COUNT(*) FROM mux.u" \
	"INSERT INTO mux.li VALUES (LAST_INSERT_ID())" \
	"SELECT COUNT(*) FROM mux.li WHERE a = (SELECT id FROM mux.k WHERE v = 'lidC')" &
b=$!
for pid in $a $b $n1 $n2; do wait "$pid"; done
check_eq "LAST_INSERT_ID() across reads: explicit ids leave it, LAST_INSERT_ID(expr) sets it" \
	"3 3 1 3 501 3 7 3 7" "$(tr '\n' ' ' <"$T/lid_more.out" | sed 's/ $//')"
check_eq "another session's LAST_INSERT_ID() is its own, also inside a later insert" \
	"0 3 3 1" "$(tr '\n' ' ' <"$T/lid_other.out" | sed 's/ $//')"

# --- a CALL keeps its connection only when the procedure may leave state ----
# The routine table marks a procedure tracked when its body names no named
# lock, sequence, dynamic SQL or other routine: what it leaves, the server's
# session tracking reports, so after a CALL of it the session need not keep
# the connection. A procedure taking a named lock still keeps it.
sql_root $P1 "CREATE TABLE mux.pk (id INT AUTO_INCREMENT PRIMARY KEY, v CHAR(1));
CREATE PROCEDURE mux.p_plain() INSERT INTO mux.pk (v) VALUES ('p');
CREATE PROCEDURE mux.p_lock() DO GET_LOCK('muxp', 0);
GRANT EXECUTE ON mux.* TO 'app'@'%'"
wait_until 10 grep -q "routines: [0-9]* loaded.*([1-9][0-9]* procedures tracked)" "$T/mysteerd.log" >/dev/null
sleep 1 # the loader's next pass sees both procedures (one signature per pass)
sed -n 's/^.*\(routines: .*\)$/# \1/p' "$T/mysteerd.log" | tail -n 1
in_plain=$(in_use_after "$T/call_plain.out" 1.5 "USE mux" "CALL p_plain()" "SELECT COUNT(*) FROM mux.u" \
	"SELECT LAST_INSERT_ID() = (SELECT MAX(id) FROM mux.pk)")
in_lock=$(in_use_after "$T/call_lock.out" 1.5 "USE mux" "CALL p_lock()" "SELECT COUNT(*) FROM mux.u" \
	"SELECT RELEASE_LOCK('muxp')")
measured "between statements after a CALL and a read: in use $in_plain (tracked procedure), $in_lock (procedure with GET_LOCK)"
check_eq "after a CALL of a tracked procedure the session holds no connection" 0 "$in_plain"
check_eq "its insert's LAST_INSERT_ID() is still there" "3 1" "$(tr '\n' ' ' <"$T/call_plain.out" | sed 's/ $//')"
check_eq "after a CALL that took a named lock the session keeps its connection" 1 "$in_lock"
check_eq "and the lock is still the session's" "3 1" "$(tr '\n' ' ' <"$T/call_lock.out" | sed 's/ $//')"

# --- a session history is matched, not reset and replayed --------------------
# A connection that had only a session's SETs replayed goes back to the pool
# without a reset and serves the next session with the same history (and
# login schema) as it is. Three sessions read @@time_zone 12 times, 0.2 s
# apart, at once: two with their own SET time_zone, one with none. Each must
# always see its own; their parks cost no reset and no replay.
setopts() { echo $(($(sql_root $P2 "SHOW GLOBAL STATUS LIKE 'Com_set_option'" | cut -f2) + \
	$(sql_root $P3 "SHOW GLOBAL STATUS LIKE 'Com_set_option'" | cut -f2))); }
r0=$(pool_fig resets) k0=$(pool_fig clean) s0=$(setopts)
tz_reads=()
for i in $(seq 1 12); do tz_reads+=("SELECT @@time_zone"); done
held "$T/tz1.out" 0.2 "SET time_zone = '+01:00'" "${tz_reads[@]}" &
a=$!
held "$T/tz2.out" 0.2 "SET time_zone = '+02:00'" "${tz_reads[@]}" &
b=$!
held "$T/tz0.out" 0.2 "${tz_reads[@]}" &
c=$!
wait "$a" "$b" "$c"
r1=$(pool_fig resets) k1=$(pool_fig clean) s1=$(setopts)
measured "3 sessions x 12 reads of @@time_zone (2 with their own SET): resets +$((r1 - r0)), parked without reset +$((k1 - k0)), SETs run on the replicas +$((s1 - s0)) (a replay per read would be about 24)"
check_eq "a session with SET time_zone = '+01:00' always reads its own" "+01:00 x12" \
	"$(sort "$T/tz1.out" | uniq -c | awk '{print $2 " x" $1}')"
check_eq "a session with SET time_zone = '+02:00' always reads its own" "+02:00 x12" \
	"$(sort "$T/tz2.out" | uniq -c | awk '{print $2 " x" $1}')"
check_eq "a session without a SET never reads another session's time zone" "SYSTEM x12" \
	"$(sort "$T/tz0.out" | uniq -c | awk '{print $2 " x" $1}')"
check "their reads parked without a reset (at most 2 resets for 36 reads)" [ $((r1 - r0)) -le 2 ]
check "the SETs were not replayed for every read (at most 8 run on the replicas)" [ $((s1 - s0)) -le 8 ]

# --- the pool stays clean ------------------------------------------------------
leaks=0
for i in $(seq 1 10); do
	out=$(p "SELECT @v IS NULL AND @w IS NULL; SELECT a FROM mux.t1" 2>&1 | tr '\n' ' ')
	case "$out" in "1 "*"mux.t1' doesn't exist"*) ;; *) leaks=$((leaks + 1)); echo "# leak: $out" ;; esac
done
check_eq "no temporary table or variable leaks into other sessions" 0 "$leaks"
# --- reader_policy = least_conn: long-lived sessions spread evenly ------------
# A session keeps its reader for its life; with weighted random, 8 sessions
# often land 6/2 or worse. least_conn counts the sessions reading from each
# replica (the pool's "readers") and gives a new one the least loaded.
check "reload with reader_policy = least_conn" itest_reader_policy "$T/mysteer.conf" least_conn
for i in $(seq 1 8); do
	held "$T/lc$i.out" 4 "SELECT @@port" &
	lc_pids+=($!)
	wait_until 8 bash -c "[ -s $T/lc$i.out ]" >/dev/null
done
readers=$(status_json | json_get "' '.join(str(d['pool'][n]['readers']) for n in ('db2', 'db3'))")
measured "8 held sessions, sessions reading from db2 db3: $readers"
check_eq "least_conn: 8 sessions, 4 reading from each replica (status readers)" "4 4" "$readers"
check_eq "least_conn: the sessions' own @@port, 4 on each replica" "4 $P2 4 $P3" \
	"$(cat "$T"/lc?.out | sort | uniq -c | awk '{printf "%s%s %s", (NR > 1 ? " " : ""), $1, $2}')"
wait "${lc_pids[@]}"
readers_left() { status_json | json_get "d['pool']['db2']['readers'] + d['pool']['db3']['readers']"; }
no_readers_left() { [ "$(readers_left)" = 0 ]; }
wait_until 5 no_readers_left >/dev/null
check_eq "sessions that ended read from no replica any more" 0 "$(readers_left)"

check "mysteerd still runs" kill -0 "$ITEST_DAEMON_PID"
itest_daemon_stop
itest_done
