#!/usr/bin/env bash
# proxy_protocol.sh - [backend:NAME] proxy_protocol = on: the relay and the
# 6450 proxy start each new backend connection with a PROXY v2 header, so
# servers with proxy_protocol_networks (SANDBOX_PROXY_NETWORKS) see the
# client's own address. Clients bind 127.0.0.5 / 127.0.0.6 (mariadb
# --bind-address); the router's own connections come from 127.0.0.1.
# - through the relay (6446, local_handoff = off) and through 6450, USER()
#   names the client's address, and an account only for 'hb'@'127.0.0.5'
#   logs in from there;
# - 6450 pools per client address: a session from 127.0.0.6 never gets a
#   connection opened for 127.0.0.5 (USER() alternates with the client);
# - hb from 127.0.0.6 gets the server's clean ERR 1045;
# - a connection without a header (the probe, a direct client) still works.
. "$(dirname "$0")/lib.sh"
itest_init proxy_protocol
export SANDBOX_PROXY_NETWORKS=127.0.0.0/8,::1/128
itest_sandbox_up

check_eq "the servers take PROXY headers from loopback" "127.0.0.0/8,::1/128" \
	"$(sql_root $P1 "SELECT @@proxy_protocol_networks")"
sql_root $P1 "CREATE USER 'hb'@'127.0.0.5' IDENTIFIED BY 'hb'; GRANT SELECT ON *.* TO 'hb'@'127.0.0.5'"
for p in $P2 $P3; do
	wait_until 20 bash -c "[ \"\$(mariadb --no-defaults -uroot -S '$SANDBOX_DIR/$p/mysqld.sock' -N -B \
		-e \"SELECT COUNT(*) FROM mysql.user WHERE user = 'hb'\")\" = 1 ]" >/dev/null ||
		echo "# hb not replicated to $p"
done
# q FROM PORT USER QUERY: PyMySQL from that local address (the mariadb CLI
# cannot choose one); prints the first row tab-separated, or the error
q() {
	timeout 30 /usr/bin/python3 - "$@" <<'PY'
import sys, pymysql
src, port, user, query = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    c = pymysql.connect(host="127.0.0.1", port=port, user=user, password=user,
                        bind_address=src, connect_timeout=10)
    cur = c.cursor()
    cur.execute(query)
    row = cur.fetchone()
    print("\t".join(str(v) for v in row))
    c.close()
except pymysql.err.MySQLError as e:
    print("ERROR %s %s" % (e.args[0], e.args[1] if len(e.args) > 1 else ""))
    sys.exit(1)
PY
}
check_eq "a direct connection from 127.0.0.5 without a header works" "hb@127.0.0.5" \
	"$(q 127.0.0.5 $P1 hb "SELECT USER()")"

ITEST_BACKEND_EXTRA="proxy_protocol = on" ITEST_STEER_EXTRA="lookup = on
local_handoff = off" itest_write_config "$T/mysteer.conf" - <<EOT
[user:hb]
password = hb
EOT
itest_daemon_start "$T/mysteer.conf" || exit 1
wait_until 30 test "$(ctl_writer)" = db1 >/dev/null
wait_until 30 test "$(ctl_readers)" = "db2 db3" >/dev/null
for b in db1 db2 db3; do
	check_eq "the probe (no header) keeps $b up" up "$(ctl_state $b)"
done

# --- the relay ------------------------------------------------------------------
before=$(status_json | json_get "d['lookup']['relay_accepted']")
check_eq "relay: USER() names the client's address" "app@127.0.0.5" \
	"$(q 127.0.0.5 6446 app "SELECT USER()")"
check_eq "relay: from 127.0.0.6 too" "app@127.0.0.6" "$(q 127.0.0.6 6446 app "SELECT USER()")"
check_eq "relay: the host-based account 'hb'@'127.0.0.5' logs in" "hb@127.0.0.5 $P1" \
	"$(q 127.0.0.5 6446 hb "SELECT USER(), @@port" | tr '\t' ' ')"
host=$(q 127.0.0.5 6446 app "SELECT host FROM information_schema.processlist WHERE id = CONNECTION_ID()")
echo "# relay: processlist host: $host"
check "relay: the processlist shows 127.0.0.5 ($host)" grep -q "^127.0.0.5:" <<<"$host"
after=$(status_json | json_get "d['lookup']['relay_accepted']")
check "relay: those went through the relay ($before -> $after)" [ "$((after - before))" -ge 4 ]

# --- 6450 -----------------------------------------------------------------------
check_eq "6450: USER() names the client's address" "app@127.0.0.5" \
	"$(q 127.0.0.5 6450 app "SELECT USER()")"
seq=""
for from in 127.0.0.6 127.0.0.5 127.0.0.6 127.0.0.5; do
	seq+="$(q $from 6450 app "SELECT USER()") "
done
check_eq "6450: pooled connections stay with their client's address" \
	"app@127.0.0.6 app@127.0.0.5 app@127.0.0.6 app@127.0.0.5 " "$seq"
check_eq "6450: the host-based account 'hb'@'127.0.0.5' reads" "hb@127.0.0.5" \
	"$(q 127.0.0.5 6450 hb "SELECT USER()")"
out=$(q 127.0.0.6 6450 hb "SELECT USER()" 2>&1)
rc=$?
echo "# 6450: hb from 127.0.0.6: $out"
check "6450: hb from 127.0.0.6 gets the server's ERR 1045 (rc $rc)" grep -q "ERROR 1045" <<<"$out"
check "mysteerd is still running" kill -0 "$ITEST_DAEMON_PID"
itest_done
