#!/usr/bin/python3
# proxy_pymysql.py - the 6450 proxy with a client that does not negotiate
# CLIENT_SESSION_TRACK: PyMySQL (Debian's python3-pymysql), as Go's, PHP's
# mysqlnd and other drivers do not either. The proxy logs in to backends
# with session tracking anyway (its own last_gtid and state changes), so:
# - read_your_writes = gtid holds for this client too: a read right after its
#   write sees it, on a replica (MASTER_GTID_WAIT), not on the writer as the
#   window fallback would send it;
# - every OK packet reaches it as the server would send it to this client:
#   the same info, warnings and insert id, no session state and no
#   SERVER_SESSION_STATE_CHANGED.
# Prints TAP-ish lines, "proxy_pymysql: done" at the end.
#
#   proxy_pymysql.py PROXY_PORT WRITER_PORT
import sys

import pymysql

CLIENT_SESSION_TRACK = 1 << 23
SERVER_SESSION_STATE_CHANGED = 1 << 14

port, writer = int(sys.argv[1]), int(sys.argv[2])
failed = False


def check(ok, what):
    global failed
    print("%s - pymysql: %s" % ("ok" if ok else "not ok", what), flush=True)
    failed |= not ok


conn = pymysql.connect(host="127.0.0.1", port=port, user="app", password="app",
                       database="t", autocommit=True)
cur = conn.cursor()
check(not conn.client_flag & CLIENT_SESSION_TRACK,
      "the client does not ask for CLIENT_SESSION_TRACK")
cur.execute("CREATE TABLE IF NOT EXISTS t.pym (id INT AUTO_INCREMENT PRIMARY KEY, "
            "v VARCHAR(20))")

seen = on_replica = flagged = 0
for i in range(20):
    cur.execute("INSERT INTO t.pym (v) VALUES (%s)", ("pym%d" % i,))
    flagged += bool(conn.server_status & SERVER_SESSION_STATE_CHANGED)
    cur.execute("SELECT COUNT(*), @@port FROM t.pym WHERE v = %s", ("pym%d" % i,))
    count, at = cur.fetchone()
    seen += count == 1
    on_replica += at != writer
print("measured: read-your-writes (gtid) without CLIENT_SESSION_TRACK: %d/20 reads saw "
      "the write just made, %d/20 on a replica" % (seen, on_replica), flush=True)
check(seen == 20, "every read right after a write sees it")
check(on_replica >= 15, "those reads run on replicas, after MASTER_GTID_WAIT (%d/20)"
      % on_replica)
check(flagged == 0, "no OK tells the client of session state changes (%d did)" % flagged)

cur.execute("INSERT INTO t.pym (v) VALUES ('id')")
rowid = cur.lastrowid
cur.execute("SELECT id FROM t.pym WHERE v = 'id'")
check(rowid > 0 and cur.fetchone()[0] == rowid, "the OK's insert id is the row's (%d)" % rowid)
cur.execute("UPDATE t.pym SET v = v WHERE v LIKE 'pym1%'")
msg = cur._result.message
direct = pymysql.connect(host="127.0.0.1", port=writer, user="app", password="app",
                         database="t", autocommit=True)
dcur = direct.cursor()
dcur.execute("UPDATE t.pym SET v = v WHERE v LIKE 'pym1%'")
check(msg == dcur._result.message and b"Rows matched: 11  Changed: 0" in msg,
      "the OK's info is what the writer sends this client directly: %r" % msg)
direct.close()
check(cur.rowcount == 0, "affected rows 0 (%d)" % cur.rowcount)
cur.execute("DO 1/0")
check(cur._result.warning_count == 1, "the OK's warning count (%d)" % cur._result.warning_count)
cur.execute("SHOW WARNINGS")
check([r[1] for r in cur.fetchall()] == [1365], "SHOW WARNINGS shows the division by 0")
cur.execute("SET @x = 41")
check(not conn.server_status & SERVER_SESSION_STATE_CHANGED,
      "a SET's OK has no state-change flag")
cur.execute("SELECT @x + 1")
check(cur.fetchone()[0] == 42, "the SET is replayed")
cur.execute("SELECT seq FROM seq_1_to_3")
check([r[0] for r in cur.fetchall()] == [1, 2, 3], "a result set ends where it should")
cur.execute("DROP TABLE t.pym")
conn.close()
print("proxy_pymysql: done", flush=True)
sys.exit(1 if failed else 0)
