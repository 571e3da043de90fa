#!/usr/bin/python3
# proxy_kill.py - CONNECTION_ID() and KILL through the 6450 proxy, with
# PyMySQL, for proxy_kill.sh:
#
#   proxy_kill.py PORT WRITER_PORT        the whole test
#   proxy_kill.py PORT WRITER_PORT any    app_admin is in kill_any_user:
#                                         its KILLs of app's sessions
#   proxy_kill.py PORT WRITER_PORT wait   pool_max_per_backend = 1: KILL
#                                         QUERY of a statement waiting for
#                                         the writer's only connection
#
# Prints "ok - ..." / "not ok - ..." and "measured: ..." lines; exits 1 when
# a check failed.
import sys
import threading
import time

import pymysql
from pymysql.constants import CLIENT

PORT = int(sys.argv[1])
failed = False


def check(ok, what):
    global failed
    print("%s - %s" % ("ok" if ok else "not ok", what), flush=True)
    failed |= not ok


def conn(user="app", multi=False):
    return pymysql.connect(host="127.0.0.1", port=PORT, user=user, password=user,
                           connect_timeout=10, autocommit=True,
                           client_flag=CLIENT.MULTI_STATEMENTS if multi else 0)


def one(c, sql):
    with c.cursor() as cur:
        cur.execute(sql)
        return cur.fetchone(), cur.description


def err_code(f):
    try:
        f()
    except pymysql.err.MySQLError as e:
        return e.args[0]
    return 0


class Runner(threading.Thread):
    """Runs one statement on c in a thread: its error code (0: none) and how
    long it took."""

    def __init__(self, c, sql):
        super().__init__(daemon=True)
        self.c, self.sql, self.code, self.secs = c, sql, None, None

    def run(self):
        t0 = time.monotonic()
        self.code = err_code(lambda: one(self.c, self.sql))
        self.secs = time.monotonic() - t0


def running(runner):
    time.sleep(1.5)  # the statement is on its backend by then
    return runner.is_alive()


if len(sys.argv) > 3 and sys.argv[3] == "any":
    a = conn()
    hid = a.thread_id()
    adm = conn("app_admin")
    r = Runner(a, "SELECT SLEEP(30)")
    r.start()
    check(running(r), "app's SLEEP(30) runs")
    code = err_code(lambda: one(adm, "KILL QUERY %d" % hid))
    check(code == 0, "app_admin (kill_any_user): KILL QUERY of app's session is OK (%s)" % code)
    r.join(20)
    check(r.code == 1317, "app's statement gets 1317 (%s)" % r.code)
    check(one(a, "SELECT 1")[0][0] == 1, "app's session goes on")
    check(err_code(lambda: one(adm, "KILL %d" % hid)) == 0, "app_admin: KILL of app's session")
    time.sleep(0.5)
    check(err_code(lambda: one(a, "SELECT 1")) in (2006, 2013), "app's session is over")
    b = conn()
    check(err_code(lambda: one(b, "KILL %d" % adm.thread_id())) == 1095,
          "app (not in kill_any_user) still may not kill app_admin's: 1095")
    sys.exit(1 if failed else 0)

if len(sys.argv) > 3 and sys.argv[3] == "wait":
    a, b, k = conn(), conn(), conn()
    one(a, "BEGIN")
    one(a, "INSERT INTO t.k VALUES (1)")  # a holds the writer's only connection
    r = Runner(b, "INSERT INTO t.k VALUES (2)")
    r.start()
    check(running(r), "b's INSERT waits for the writer's connection")
    t0 = time.monotonic()
    code = err_code(lambda: one(k, "KILL QUERY %d" % b.thread_id()))
    check(code == 0, "KILL QUERY of b: OK (%s)" % code)
    r.join(20)
    print("measured: KILL QUERY of a waiting statement: it ended %.2f s after the KILL"
          % (time.monotonic() - t0), flush=True)
    check(r.code == 1317, "b's waiting INSERT gets 1317 (%s), before pool_wait_timeout_ms"
          % r.code)
    one(a, "COMMIT")
    a.close()  # its connection goes back (after a write it stays until the next statement)
    code = err_code(lambda: one(b, "INSERT INTO t.k VALUES (2)"))
    check(code == 0, "b's session goes on: its INSERT runs once the connection is free (%s)"
          % code)
    sys.exit(1 if failed else 0)

# --- CONNECTION_ID() ----------------------------------------------------------
a = conn()
hid = a.thread_id()
row, desc = one(a, "SELECT CONNECTION_ID()")
check(row[0] == hid, "SELECT CONNECTION_ID() = the handshake's id (%s, %s)" % (row[0], hid))
check(desc[0][0] == "CONNECTION_ID()", "its column is named CONNECTION_ID() (%s)" % desc[0][0])
ids = [hid]
others = [conn() for _ in range(7)]
for o in others:
    ids.append(one(o, "select connection_id()")[0][0])
    check(ids[-1] == o.thread_id(), "another session: its own id %s" % ids[-1])
check(len(set(ids)) == len(ids), "8 sessions over 2 workers: 8 different ids %s" % ids)
for o in others:
    o.close()
row, desc = one(a, "SELECT CONNECTION_ID() AS id, 1 + 1 AS two")
check(row == (hid, 2) and desc[0][0] == "id", "with an alias, among other items")
row, _ = one(a, "SELECT CONCAT('id=', CONNECTION_ID()), 'CONNECTION_ID()', `x`.n FROM "
             "(SELECT CONNECTION_ID ( ) AS n) x")
check(row == ("id=%d" % hid, "CONNECTION_ID()", hid),
      "inside expressions and a derived table, not inside a string: %s" % (row,))
one(a, "CREATE DATABASE IF NOT EXISTS t")
one(a, "CREATE TABLE IF NOT EXISTS t.k (cid BIGINT)")
one(a, "INSERT INTO t.k VALUES (CONNECTION_ID())")
row, _ = one(a, "SELECT COUNT(*) FROM t.k WHERE cid = CONNECTION_ID()")
check(row[0] == 1, "written by an INSERT, read back by a WHERE")
# the same type as the server's own CONNECTION_ID() (INT(10) UNSIGNED NOT
# NULL): a table made from it gets the column a server would make
with a.cursor() as cur:
    cur.execute("SELECT CONNECTION_ID()")
    f = cur._result.fields[0]
check((f.type_code, f.length, f.flags & 0x21) == (3, 10, 0x21),
      "its column: type LONG, length 10, NOT NULL and UNSIGNED (%s, %s, %#x)"
      % (f.type_code, f.length, f.flags))
one(a, "CREATE TABLE t.cid AS SELECT CONCAT(CONNECTION_ID()) AS c, CONNECTION_ID() AS n")
row, _ = one(a, "SHOW CREATE TABLE t.cid")
check("`c` varchar(10)" in row[1] and "`n` int(10) unsigned NOT NULL" in row[1],
      "CREATE TABLE ... AS SELECT makes the columns a server makes: %s" % row[1].replace("\n", " "))
one(a, "DROP TABLE t.cid")

# --- KILL QUERY ---------------------------------------------------------------
b = conn()
for where, pre in (("a read (on a replica)", None), ("in a transaction (on the writer)", "BEGIN")):
    if pre:
        one(a, pre)
    r = Runner(a, "SELECT SLEEP(30)")
    r.start()
    check(running(r), "A's SLEEP(30) runs, %s" % where)
    t0 = time.monotonic()
    code = err_code(lambda: one(b, "KILL QUERY %d" % hid))
    check(code == 0, "B (same user): KILL QUERY %d is OK (%s)" % (hid, code))
    r.join(20)
    print("measured: KILL QUERY %s: A's statement ended %.2f s after the KILL (%.2f s in all)"
          % (where, time.monotonic() - t0, r.secs or -1), flush=True)
    check(r.code == 1317, "A gets ERROR 1317 (query interrupted): %s" % r.code)
    check(r.secs is not None and r.secs < 20, "within seconds, not after its 30 s")
    row, _ = one(a, "SELECT CONNECTION_ID(), 1")
    check(row == (hid, 1), "A's session still works, with its id")
    if pre:
        one(a, "COMMIT")

# --- refused, unknown, unsupported forms ---------------------------------------
adm = conn("app_admin")
check(err_code(lambda: one(adm, "KILL QUERY %d" % hid)) == 1095,
      "another user's KILL QUERY: ERROR 1095 (not owner)")
check(err_code(lambda: one(adm, "KILL %d" % hid)) == 1095,
      "another user's KILL: ERROR 1095")
check(one(a, "SELECT 1")[0][0] == 1, "A was not killed")
check(err_code(lambda: one(b, "KILL 4000000000")) == 1094, "unknown id: ERROR 1094")
check(err_code(lambda: one(b, "KILL QUERY 999999")) == 1094, "unknown id (QUERY): ERROR 1094")
check(err_code(lambda: one(b, "KILL USER app")) == 1235, "KILL USER: ERROR 1235")
m = conn(multi=True)
check(err_code(lambda: one(m, "SELECT 1; KILL %d" % hid)) == 1235,
      "KILL inside a multi-statement: ERROR 1235, nothing killed")
check(one(a, "SELECT 1")[0][0] == 1, "A still works")
check(err_code(lambda: one(b, "/* x */ kill  soft query %d ;" % hid)) == 0,
      "KILL SOFT QUERY with a comment of an idle session: OK")

# --- KILL CONNECTION ---------------------------------------------------------------
r = Runner(a, "SELECT SLEEP(30)")
r.start()
check(running(r), "A's SLEEP(30) runs")
t0 = time.monotonic()
code = err_code(lambda: one(b, "KILL CONNECTION %d" % hid))
check(code == 0, "B: KILL CONNECTION %d is OK (%s)" % (hid, code))
r.join(20)
print("measured: KILL CONNECTION: A's statement ended %.2f s after the KILL"
      % (time.monotonic() - t0), flush=True)
check(r.code in (1927, 2013), "A gets ERROR 1927 (connection killed): %s" % r.code)
check(err_code(lambda: one(a, "SELECT 1")) in (2006, 2013, 0) and not a.open,
      "A's session is over")
check(err_code(lambda: one(b, "KILL %d" % hid)) == 1094, "its id is unknown now: ERROR 1094")
idle = conn()
iid = idle.thread_id()
check(err_code(lambda: one(b, "KILL %d" % iid)) == 0, "KILL of an idle session: OK")
time.sleep(0.5)
check(err_code(lambda: one(idle, "SELECT 1")) in (2006, 2013), "the idle session is over")
s = conn()
check(err_code(lambda: one(s, "KILL CONNECTION_ID()")) == 1927,
      "KILL CONNECTION_ID(): the session kills itself (ERROR 1927)")
check(one(b, "SELECT 1")[0][0] == 1, "B still works")
sys.exit(1 if failed else 0)
