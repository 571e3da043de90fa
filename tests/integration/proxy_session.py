#!/usr/bin/env python3
"""proxy_session.py - protocol details of a 6450 session (proxy_correct.sh),
raw protocol:
- COM_RESET_CONNECTION drops the session's prepared statements: an EXECUTE
  of one prepared before gets ERR 1243, as from a server.
- A cursor opened by an EXECUTE on a replica, then a write and a SET (run on
  the writer, recorded in the session's history): the COM_STMT_FETCH that
  follows gets its rows (the history is not replayed on the cursor's
  connection first, which would close the statement).
- A cursor, then a read on its connection (the session history replayed
  there first) or a SET run there: the FETCH still gets its rows, and the
  statement executes again after.
- A user whose configured password is empty logs in with an empty reply.

  proxy_session.py PORT USER PASSWORD EMPTY_PASSWORD_USER

Prints "ok - ..." / "not ok - ..." lines and "proxy_session: done".
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from proxy_bounds import (connect_login, err_code, execute, fetch, login, pkt,  # noqa: E402
                          prepare, query, read_packet)

port, user, password, empty_user = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
failed = 0


def check(ok, what):
    global failed
    print('%s - %s' % ('ok' if ok else 'not ok', what))
    if not ok:
        failed += 1


# --- COM_RESET_CONNECTION ---------------------------------------------------
s = login(port, user, password)
s.settimeout(30)
sid = prepare(s, b'SELECT 1')
check(isinstance(sid, int), 'a statement is prepared (%s)' % sid)
r = execute(s, sid)
check(isinstance(r, tuple) and r[2] == 1, 'and executes (%s)' % (r,))
s.sendall(pkt(b'\x1f'))
_, p = read_packet(s)
check(p[:1] == b'\x00', 'COM_RESET_CONNECTION: OK')
r = execute(s, sid)
check(r == 'err 1243', 'after it, the statement is gone: EXECUTE gets ERR 1243 (%s)' % (r,))
check(query(s, b'SELECT 1') == [[b'1']], 'and the session goes on')
s.close()

# --- a cursor, then the history grows elsewhere --------------------------------
s = login(port, user, password)
s.settimeout(30)
sid = prepare(s, b'SELECT id FROM t.k ORDER BY id LIMIT 5')
r = execute(s, sid, cursor=True)
check(isinstance(r, tuple) and r[1] & 0x40, 'an EXECUTE opens a cursor (%s)' % (r,))
port_of = query(s, b'SELECT @@port')
check(query(s, b"INSERT INTO t.k (v) VALUES ('cursor-write')") == 'ok', 'a write after it')
check(query(s, b'SET @after_cursor = 1') == 'ok', 'a SET after it (the history grows)')
r = fetch(s, sid, 2)
check(r == 2, 'COM_STMT_FETCH then gets rows of the cursor (%s)' % (r,))
r = fetch(s, sid, 10)
check(r == 3, 'and the rest of them (%s)' % (r,))
check(query(s, b'SELECT @after_cursor') == [[b'1']], 'the SET holds there too')
print('# reads ran on %s' % port_of)
s.close()

# --- a cursor, then statements on its own connection ------------------------------
# A server keeps a cursor open across other statements of its connection:
# the history replayed there before a read, and a SET run there, must not
# close the cursor's statement.
s = login(port, user, password)
s.settimeout(30)
sid = prepare(s, b'SELECT id FROM t.k ORDER BY id LIMIT 5')
r = execute(s, sid, cursor=True)
check(isinstance(r, tuple) and r[1] & 0x40, 'a second cursor opens (%s)' % (r,))
check(query(s, b"INSERT INTO t.k (v) VALUES ('cursor-write-2')") == 'ok', 'a write after it')
check(query(s, b'SET @c2 = 2') == 'ok', 'a SET on the writer (the history grows)')
r = query(s, b'SELECT @c2, @@port')
check(isinstance(r, list) and r[0][0] == b'2',
      'a read on the cursor\'s connection, the history replayed there first (%s)' % (r,))
r = fetch(s, sid, 10)
check(r == 5, 'COM_STMT_FETCH after that read gets the cursor\'s rows (%s)' % (r,))
r = execute(s, sid, cursor=True)
check(isinstance(r, tuple) and r[1] & 0x40, 'the statement opens a cursor again (%s)' % (r,))
check(query(s, b'SET @c3 = 3') == 'ok', 'a SET on the cursor\'s connection')
r = fetch(s, sid, 10)
check(r == 5, 'COM_STMT_FETCH after that SET gets the cursor\'s rows (%s)' % (r,))
r = execute(s, sid)
check(isinstance(r, tuple) and r[2] == 5, 'and the statement executes again after both (%s)' % (r,))
check(query(s, b'SELECT @c2, @c3') == [[b'2', b'3']], 'both SETs hold')
s.close()

# --- an empty password ------------------------------------------------------------
s, p = connect_login(port, empty_user, '')
check(p[:1] == b'\x00', '%s (empty password) logs in with an empty reply (%r)' % (empty_user, p[:60]))
if p[:1] == b'\x00':
    s.settimeout(30)
    r = query(s, b'SELECT CURRENT_USER()')
    check(isinstance(r, list) and r[0][0].startswith(empty_user.encode()),
          'and its statements run on a backend as that user (%s)' % (r,))
s.close()
s, p = connect_login(port, empty_user, 'notempty')
check(err_code(p) == 1045, 'with a password it is refused (1045)')
s.close()
s, p = connect_login(port, user, '')
check(err_code(p) == 1045, 'an empty reply for a user with a password is refused (1045)')
s.close()

print('proxy_session: done')
sys.exit(1 if failed else 0)
