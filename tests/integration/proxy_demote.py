#!/usr/bin/env python3
"""proxy_demote.py - sessions of 6450 pinned to the writer when it is
demoted (proxy_correct.sh). Raw protocol, as app_admin (READ_ONLY ADMIN: the
old writer, read_only now, would still take its writes).

  proxy_demote.py PORT USER PASSWORD 'SHELL COMMAND THAT DEMOTES THE WRITER'

Each pinned session gets ERR 1927 naming what it held, whether it waits
(the ERR comes unasked) or sends its next write at once (the ERR answers
it, and the write never runs); then the proxy closes it. A session that
holds nothing goes on, with the new writer. The cases: an open transaction,
autocommit off, a temporary table, a named lock, a user variable assigned
by a query, LOCK TABLES, and a cursor opened on the writer. Prints "ok - ..." and
"not ok - ..." lines, "measured: ..." and "proxy_demote: done" at the end.
"""
import subprocess
import sys
import time

sys.path.insert(0, __import__('os').path.dirname(__file__))
from proxy_bounds import err_code, execute, login, pkt, prepare, query, read_packet  # noqa: E402

port, user, password, demote = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
failed = 0


def check(ok, what):
    global failed
    print('%s - %s' % ('ok' if ok else 'not ok', what))
    if not ok:
        failed += 1


# name: (statements that pin the session, words the ERR must contain, send
# a write at once after the demotion)
CASES = [
    ('open transaction', [b'BEGIN', b"INSERT INTO t.k (v) VALUES ('dm-trx')"],
     'open transaction', True),
    ('autocommit off', [b'SET autocommit = 0', b"INSERT INTO t.k (v) VALUES ('dm-ac')"],
     'autocommit off', False),
    ('temporary table', [b'CREATE TEMPORARY TABLE t.dm_tmp (a INT)'], 'temporary table', True),
    ('named lock', [b"SELECT GET_LOCK('dm', 0)"], 'named lock', False),
    ('user variable by query', [b'SELECT @dm := 1'], 'user variable assigned by a query', True),
    ('LOCK TABLES', [b'LOCK TABLES t.dm_lock WRITE'], 'LOCK TABLES', False),
]

sessions = []
for name, stmts, words, send in CASES:
    s = login(port, user, password)
    s.settimeout(30)
    res = [query(s, q) for q in stmts]
    check(all(not str(r).startswith('err') for r in res), '%s: pinned (%s)' % (name, res))
    sessions.append((name, s, words, send))
# a cursor on the writer (a writer hint: reads with a cursor go to a
# replica otherwise): its rows wait on the old writer's connection
s = login(port, user, password)
s.settimeout(30)
sid = prepare(s, b'SELECT /* mysteer:writer */ v FROM t.k')
r = execute(s, sid, cursor=True) if isinstance(sid, int) else sid
check(isinstance(r, tuple) and r[1] & 0x40, 'open cursor: pinned (%s)' % (r,))
sessions.append(('open cursor', s, 'open cursor', False))
plain = login(port, user, password)
plain.settimeout(30)
check(query(plain, b"INSERT INTO t.k (v) VALUES ('dm-plain-before')") == 'ok',
      'a session holding nothing wrote before the demotion')

t0 = time.time()
subprocess.run(demote, shell=True, check=False)
for name, s, words, send in sessions:
    if send:
        s.sendall(pkt(b"\x03INSERT INTO t.k (v) VALUES ('dm-after')"))
    try:
        _, p = read_packet(s)
    except Exception as e:  # noqa: BLE001
        p = b''
        print('# %s: %r' % (name, e))
    took = time.time() - t0
    msg = p[9:].decode(errors='replace') if p[:1] == b'\xff' else repr(p[:40])
    print('measured: %s (%s): ERR %s %.2f s after the demotion began: %s' %
          (name, 'next write sent' if send else 'idle', err_code(p), took, msg))
    check(err_code(p) == 1927, '%s: ERR 1927 (connection killed)' % name)
    check(words in msg and 'no longer the writer' in msg, '%s: the ERR names why' % name)
    check(took < 30, '%s: within the sweep after the demotion' % name)
    try:
        rest = s.recv(100)
    except Exception:  # noqa: BLE001
        rest = b''
    check(rest == b'', '%s: then the proxy closes the connection' % name)
    s.close()

r = query(plain, b"INSERT INTO t.k (v) VALUES ('dm-plain-after')")
check(r == 'ok', 'a session holding nothing goes on after the demotion (%s)' % r)
s = login(port, user, password)
r = query(s, b"INSERT INTO t.k (v) VALUES ('dm-new')")
check(r == 'ok', 'a new session writes (%s)' % r)
print('proxy_demote: done')
sys.exit(1 if failed else 0)
