#!/usr/bin/env python3
"""Writes the seeds of fuzz_engine (tests/fuzz/seeds/engine): whole sessions
spelled in the target's input language (tests/fuzz/fuzz_engine.c). An input
is 2 bytes (little endian) giving the client stream's length, the client
stream, then the backends' stream (empty: they answer as a server would)."""
import os
import struct
import sys

SQL = ["SELECT 1", "SELECT * FROM t WHERE id = 1", "INSERT INTO t VALUES (1)",
       "UPDATE t SET a = 1", "DELETE FROM t", "BEGIN", "START TRANSACTION READ ONLY",
       "START TRANSACTION", "COMMIT", "ROLLBACK", "SET @a = 1", "SET NAMES utf8mb4",
       "SET autocommit = 0", "SET autocommit = 1", "SET SESSION TRANSACTION READ ONLY",
       "SET time_zone = '+00:00'", "SET GLOBAL max_connections = 100", "USE test",
       "CREATE TEMPORARY TABLE tt (a INT)", "SELECT GET_LOCK('l', 1)",
       "SELECT RELEASE_LOCK('l')", "LOCK TABLES t WRITE", "UNLOCK TABLES",
       "SELECT FOUND_ROWS()", "SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 1", "SHOW WARNINGS",
       "SELECT @@warning_count", "SELECT LAST_INSERT_ID()", "SELECT 1; SELECT 2",
       "INSERT INTO t VALUES (1); SELECT 1", "SELECT * FROM t FOR UPDATE", "CALL p()",
       "CREATE TABLE t2 (a INT)", "FLUSH STATUS", "SHOW STATUS", "XA START 'x'",
       "SELECT @v := 1", "PREPARE s FROM 'SELECT 1'", "EXECUTE s", "DEALLOCATE PREPARE s",
       "SELECT NOW()", "WITH c AS (SELECT 1) SELECT * FROM c", "SELECT * FROM t WHERE a = ?",
       "INSERT INTO t VALUES (?, ?)", "SET @b = ?", "SHOW TABLES", "KILL 1", ""]


def q(s):  # a COM_QUERY from the list
    return [0, SQL.index(s)]


def prep(s):
    return [5, SQL.index(s)]


def execute(stmt, flags=0, nparams=0, nulls=0, bound=1):
    out = [6, flags, nparams, stmt - 1]
    if nparams:
        out += [nulls, bound]
    return out


def fetch(stmt, rows=1):
    return [7, 0, stmt - 1, rows - 1]


def close_stmt(stmt):
    return [7, 1, stmt - 1]


def long_data(stmt, param, data):
    return [7, 3, stmt - 1, param, len(data)] + list(data)


def simple(k):  # 0 ping, 1 init_db, 2 reset, 3 field list, 4 statistics, 5 set option,
    return [8, k]  # 6 change user, 7 unknown, 8 quit, 9 empty, 10 sleep


def time_passes(step):  # 50 ms, 300 ms, 1.1 s, 5 s, 12 s, 61 s, 1 h, 8 h
    return [12, step]


def topo(k):  # 0 normal, 1 failover to r1, 2 readers down, 3 no writer
    return [14, k]


def pipelined(*sqls):
    return [11, len(sqls) - 2] + [SQL.index(s) for s in sqls]


def seed(cfg, login, caps, ops, backends=b""):
    client = bytes([cfg, login, caps] + [b for op in ops for b in op])
    return struct.pack("<H", len(client)) + client + bytes(backends)


CAPS_FULL = 1 | 2  # session tracking, DEPRECATE_EOF
SEEDS = {
    "basic": seed(0, 0, CAPS_FULL, [q("SELECT 1"), q("INSERT INTO t VALUES (1)"),
                                    q("SELECT 1"), simple(8)]),
    "basic_old_client": seed(0, 0, 0, [q("SELECT 1"), q("INSERT INTO t VALUES (1)"),
                                       q("SELECT * FROM t WHERE id = 1")]),
    "transactions": seed(0, 0, CAPS_FULL, [
        q("BEGIN"), q("INSERT INTO t VALUES (1)"), q("SELECT 1"), q("COMMIT"),
        q("START TRANSACTION READ ONLY"), q("SELECT 1"), q("BEGIN"),
        q("INSERT INTO t VALUES (1)"), q("COMMIT"), q("SET autocommit = 0"),
        q("SELECT 1"), q("ROLLBACK"), q("SET autocommit = 1"), q("SELECT 1")]),
    "session_state": seed(0, 0, CAPS_FULL | 4 | 8, [
        q("SET @a = 1"), q("SET NAMES utf8mb4"), q("USE test"), q("SELECT 1"),
        q("SET time_zone = '+00:00'"), q("SELECT 1"), q("CREATE TEMPORARY TABLE tt (a INT)"),
        q("SELECT 1"), q("SELECT GET_LOCK('l', 1)"), q("SELECT RELEASE_LOCK('l')"),
        q("LOCK TABLES t WRITE"), q("UNLOCK TABLES"), simple(2), q("SELECT 1")]),
    "prepared": seed(0, 0, CAPS_FULL, [
        prep("SELECT * FROM t WHERE a = ?"), execute(1, 0, 1), execute(1, 1, 1),
        fetch(1, 2), prep("INSERT INTO t VALUES (?, ?)"), long_data(2, 0, b"abc"),
        execute(2, 0, 2, 2), close_stmt(1), execute(1), [7, 2, 1], q("SELECT 1"),
        prep("SET @b = ?"), execute(3, 0, 1), q("SELECT 1")]),
    "pool_wait": seed(1, 0, CAPS_FULL, [
        q("SELECT 1"), q("INSERT INTO t VALUES (1)"), q("SELECT 1"), time_passes(2),
        q("SELECT 1"), time_passes(4), q("SELECT * FROM t FOR UPDATE")]),
    "bounds": seed(2, 0, CAPS_FULL, [
        q("SET @a = 1"), q("SET NAMES utf8mb4"), q("SET time_zone = '+00:00'"),
        q("SELECT 1"), [9, 0, 200] + [0x03] + [0x41] * 199, time_passes(2),
        [10, 4, 0xff, 0xff, 0x00, 0x00], time_passes(1), time_passes(3)]),
    "warm_failover": seed(3, 0, CAPS_FULL, [
        time_passes(1), q("SELECT 1"), q("BEGIN"), q("INSERT INTO t VALUES (1)"), topo(1),
        q("COMMIT"), q("SELECT 1"), topo(2), q("SELECT 1"), topo(3), q("INSERT INTO t VALUES (1)"),
        topo(0), time_passes(5), q("SELECT 1")]),
    "login_wrong": seed(0, 1, CAPS_FULL, [q("SELECT 1")]),
    "login_unknown": seed(0, 2, 0, [q("SELECT 1")]),
    "login_hashed": seed(0, 3, CAPS_FULL, [q("SELECT 1"), q("INSERT INTO t VALUES (1)")]),
    "login_switch": seed(0, 4, CAPS_FULL | 16 | 32, [q("SELECT 1")]),
    "login_ssl": seed(0, 6, CAPS_FULL, []),
    "login_garbage": seed(0, 5, 0, [[20] + [0x41] * 20]),
    "multi": seed(0, 0, CAPS_FULL, [
        q("SELECT 1; SELECT 2"), q("INSERT INTO t VALUES (1); SELECT 1"), q("CALL p()"),
        q("SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 1"), q("SELECT FOUND_ROWS()"),
        q("INSERT INTO t VALUES (1)"), q("SELECT LAST_INSERT_ID()"), q("SHOW WARNINGS"),
        q("SELECT @@warning_count"), q("FLUSH STATUS"), q("SHOW STATUS"),
        q("SET GLOBAL max_connections = 100"), q("SELECT 1")]),
    "commands": seed(0, 0, CAPS_FULL, [
        simple(0), simple(1), simple(3), simple(4), simple(5), simple(7), simple(9),
        simple(10), simple(2), simple(0), simple(6) + [4, 1, 2, 3, 4]]),
    "pipelined": seed(0, 0, CAPS_FULL, [
        pipelined("SELECT 1", "INSERT INTO t VALUES (1)", "SELECT 1", "SET @a = 1"),
        pipelined("BEGIN", "SELECT 1"), q("COMMIT")]),
    # the backends: the first answer is an ERR, then a hang, then a close
    "backend_err": seed(0, 0, CAPS_FULL, [q("SELECT 1"), q("SELECT 1"), q("INSERT INTO t VALUES (1)")],
                        [0, 0, 0xc0, 0]),
    "backend_hang_close": seed(0, 0, CAPS_FULL, [q("SELECT 1"), [13, 0, 0], q("SELECT 1"),
                                                 [15, 1]], [0, 0, 0xc6]),
    "backend_close_mid": seed(0, 0, CAPS_FULL, [q("BEGIN"), q("INSERT INTO t VALUES (1)"),
                                                q("SELECT 1")], [0, 0, 0, 0xc5]),
    "backend_trickle": seed(0, 0, CAPS_FULL, [q("SELECT 1"), q("SELECT * FROM t WHERE id = 1"),
                                              prep("SELECT * FROM t WHERE a = ?")],
                            [0, 0, 0xc7, 1, 0xc7, 2, 0xc7, 3]),
    "backend_malformed": seed(0, 0, CAPS_FULL, [q("SELECT 1"), q("SELECT 1"), q("SELECT 1")],
                              [0, 0, 0xc3, 5, 0xfe, 1, 2, 3, 4, 0xc4, 3, 0x10, 0, 0, 0xca, 3]),
    "backend_login_refused": seed(0, 0, CAPS_FULL, [q("SELECT 1"), q("INSERT INTO t VALUES (1)")],
                                  [0, 10, 1, 12, 0]),
    "backend_mysql8": seed(0, 0, CAPS_FULL, [q("SELECT 1"), q("INSERT INTO t VALUES (1)"),
                                             prep("SELECT * FROM t WHERE a = ?"), execute(1, 0, 1)],
                           [1, 0, 0, 1, 0, 0, 0]),
    "backend_old": seed(0, 0, CAPS_FULL, [q("SELECT 1"), q("INSERT INTO t VALUES (1)"),
                                          q("SELECT 1")], [2, 0, 0, 3, 0, 0, 0]),
}

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "seeds", "engine")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
