#!/usr/bin/env python3
"""asan_hostile.py - hostile clients for asan_daemon.sh, one kind a call.

  asan_hostile.py proxy PORT       16 MB headers then close, 0-length
                                   packets, pipelined commands, closes in
                                   the middle of a large result
  asan_hostile.py storm N PORT...  N connections to each port opened at
                                   once and closed at once (some with RST)
  asan_hostile.py admin SOCKET     random bytes, overlong lines and garbage
                                   JSON to the admin socket

Each prints what it did as '# ' lines and one summary line
'KIND: ... errors 0'; the exit code is the number of unexpected outcomes
(a hang, an answer missing, a wrong answer).
"""
import json
import os
import random
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_chaos import login, read_packet, write_packet  # noqa: E402

errors = 0


def bad(what):
    global errors
    errors += 1
    print('# unexpected: %s' % what)


def rst_close(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    s.close()


def answer(s):
    """Reads one answer to its end: 'ok', 'err' or 'rows'. login() asks for
    CLIENT_DEPRECATE_EOF: a result set is the column count, the columns, the
    rows, then an OK led by 0xfe (no EOF after the columns)."""
    n, p = read_packet(s)
    if p[:1] == b'\x00':
        return 'ok'
    if p[:1] == b'\xff':
        return 'err'
    for _ in range(p[0]):  # fewer than 251 columns here
        read_packet(s)
    while True:
        n, p = read_packet(s)
        if p[:1] == b'\xff':
            return 'err'
        if p[:1] == b'\xfe' and n < 0xffffff:
            return 'rows'


def query(s, sql):
    write_packet(s, 0, b'\x03' + sql)
    return answer(s)


def greeting(port):
    s = socket.create_connection(('127.0.0.1', port), timeout=10)
    read_packet(s)
    return s


def proxy(port):
    cases = 0
    # -- a packet header announcing 16 MB, then the client goes: in the
    # handshake, after login, with part of the payload, and with a whole 16 MB
    # fragment (its continuation never comes)
    for stage in ('handshake', 'idle', 'idle-partial', 'idle-whole-fragment'):
        s = greeting(port) if stage == 'handshake' else login(port)
        s.sendall(b'\xff\xff\xff\x00' if stage != 'handshake' else b'\xff\xff\xff\x01')
        if stage == 'idle-partial':
            s.sendall(b'\x03SELECT ' + b'1' * 100000)
        if stage == 'idle-whole-fragment':
            s.sendall(b'\x03' + b' ' * (0xffffff - 1))
        (rst_close if stage.endswith('partial') else socket.socket.close)(s)
        cases += 1
    # -- a header announcing 16 MB - 1 bytes (a last fragment), a few of them,
    # then the client goes
    s = login(port)
    s.sendall(b'\xfe\xff\xff\x00\x03SELECT ')
    s.close()
    cases += 1
    # -- 0-length packets: as the handshake response, as a command, twice in
    # a row followed by a query in the same write
    s = greeting(port)
    write_packet(s, 1, b'')
    try:
        n, p = read_packet(s)
        if p[:1] != b'\xff':
            bad('0-length handshake response answered %r' % p[:8])
    except (EOFError, ConnectionError, socket.timeout):
        pass  # closed: fine
    s.close()
    s = login(port)
    s.sendall(b'\x00\x00\x00\x00' + b'\x00\x00\x00\x00' + b'\x09\x00\x00\x00\x03SELECT 7')
    got = [answer(s) for _ in range(3)]
    if got != ['err', 'err', 'rows']:
        bad('0-length commands then SELECT 7: %s' % got)
    if query(s, b'SELECT 1') != 'rows':
        bad('session unusable after 0-length commands')
    s.close()
    cases += 3
    # -- pipelined commands, sent at once without waiting for answers
    s = login(port)
    batch = b''
    expect = []
    for i in range(200):
        k = i % 7
        if k == 0:
            body, e = b'\x03SELECT %d' % i, 'rows'
        elif k == 1:
            body, e = b'\x0e', 'ok'  # COM_PING
        elif k == 2:
            body, e = b'\x03SET @v%d = %d' % (i, i), 'ok'
        elif k == 3:
            body, e = b'\x03SELECT * FROM nowhere.none', 'err'
        elif k == 4:
            body, e = b'\x03INSERT INTO hostile.t (v) VALUES (%d)' % i, 'ok'
        elif k == 5:
            body, e = b'\x1d' + os.urandom(5), 'err'  # COM_DAEMON: refused
        else:
            body, e = b'\x03SELECT @@port, @v%d' % (i - 4), 'rows'
        batch += struct.pack('<I', len(body))[:3] + b'\x00' + body
        expect.append(e)
    s.sendall(batch)
    got = [answer(s) for _ in expect]
    if got != expect:
        bad('pipelined: %d of %d answers differ' % (sum(a != b for a, b in zip(got, expect)),
                                                  len(expect)))
    if query(s, b'SELECT 1') != 'rows':
        bad('session unusable after the pipeline')
    s.close()
    cases += 1
    # pipelined, then COM_QUIT in the middle, then more; and pipelined then
    # gone before any answer
    s = login(port)
    s.sendall(b''.join(struct.pack('<I', len(b))[:3] + b'\x00' + b for b in
                       [b'\x03SELECT 1', b'\x03DO SLEEP(0.2)', b'\x01', b'\x03SELECT 2',
                        b'\x03SELECT 3']))
    got = [answer(s) for _ in range(2)]
    if got != ['rows', 'ok']:
        bad('pipelined with COM_QUIT: %s' % got)
    s.close()
    for kill in (socket.socket.close, rst_close):
        s = login(port)
        s.sendall(b''.join(b'\x10\x00\x00\x00\x03SELECT SLEEP(0.01)' for _ in range(50)))
        kill(s)
    cases += 3
    # -- a client that goes in the middle of a large result (32 MB): after a
    # few KB (close and RST), and one that stops reading for a while first
    big = b'SELECT REPEAT(\'x\', 65536) FROM hostile.seq_1_to_500'
    for how in ('close', 'rst', 'stall', 'writer-close'):
        s = login(port)
        sql = big if how != 'writer-close' else big.replace(b'SELECT', b'SELECT /* mysteer:writer */')
        write_packet(s, 0, b'\x03' + sql)
        got = 0
        while got < 200000:
            d = s.recv(65536)
            if not d or (got == 0 and d[4:5] == b'\xff'):
                bad('large result (%s): %r' % (how, d[:80]))
                break
            got += len(d)
        if how == 'stall':
            time.sleep(1.0)
        (rst_close if how == 'rst' else socket.socket.close)(s)
        cases += 1
    # a whole large result read to its end still works
    s = login(port)
    s.settimeout(30)
    if query(s, big) != 'rows':
        bad('large result not whole')
    s.close()
    cases += 1
    # -- in the middle of a transaction and of a prepared statement's answer
    s = login(port)
    query(s, b'BEGIN')
    query(s, b'INSERT INTO hostile.t (v) VALUES (-1)')
    write_packet(s, 0, b'\x16' + big)  # COM_STMT_PREPARE
    rst_close(s)
    cases += 1
    print('proxy: %d cases errors %d' % (cases, errors))


def storm(n, ports):
    opened = refused = 0
    for port in ports:
        socks = []
        for i in range(n):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect(('127.0.0.1', port))
            except BlockingIOError:
                pass
            except OSError:
                refused += 1
                s.close()
                continue
            socks.append(s)
        opened += len(socks)
        time.sleep(0.2)
        for i, s in enumerate(socks):
            if i % 3 == 0:
                try:
                    s.send(os.urandom(random.randint(1, 200)))
                except OSError:
                    pass
            if i % 2:
                rst_close(s)
            else:
                s.close()
    print('storm: %d connections opened and closed on %s, %d refused at once, errors %d' %
          (opened, ','.join(map(str, ports)), refused, errors))


def admin(path):
    sent = replied = 0

    def req(data, want_reply=True, close_early=False):
        nonlocal sent, replied
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(5)
        s.connect(path)
        try:
            s.sendall(data)
        except OSError:
            pass  # an overlong request: the daemon answered and closed
        sent += 1
        if close_early:
            s.close()
            return None
        out = b''
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                out += d
        except socket.timeout:
            bad('admin: no reply to %r' % data[:40])
        except ConnectionResetError:
            pass  # closed with our unread bytes: the reply came before
        s.close()
        if not want_reply:
            return out
        try:
            r = json.loads(out)
            replied += 1
            return r
        except ValueError:
            bad('admin: reply is not JSON for %r: %r' % (data[:40], out[:80]))
            return None

    def refused(data):
        r = req(data)
        if r is not None and r.get('ok') is not False:
            bad('admin: accepted %r' % data[:60])

    random.seed(7)
    for i in range(30):
        refused(bytes(random.randrange(256) for _ in range(random.randint(1, 300)))
                .replace(b'\n', b' ') + b'\n')
    for n in (4095, 4096, 5000, 100000):
        refused(b'x' * n + b'\n')
    refused(b'{"cmd":"status", "pad":"' + b'y' * 5000 + b'"}\n')
    refused(b'\n')
    refused(b'\x00\x00\x00\n')
    refused(b'{"cmd":"st\x00atus"}\n')
    refused(b'[' * 2000 + b']' * 2000 + b'\n')
    refused(b'{"a":' * 1000 + b'1' + b'}' * 1000 + b'\n')
    for r in [{}, {'cmd': 5}, {'cmd': None}, {'cmd': ['status']}, {'cmd': 'x' * 3000},
              {'cmd': 'add'}, {'cmd': 'add', 'name': 'h1'},
              {'cmd': 'add', 'name': 'h1', 'host': '127.0.0.1', 'port': 'abc'},
              {'cmd': 'add', 'name': 'h1', 'host': '127.0.0.1', 'port': 99999},
              {'cmd': 'add', 'name': 'h1', 'host': '127.0.0.1', 'port': -1},
              {'cmd': 'add', 'name': 'h1', 'host': '127.0.0.1', 'port': 2 ** 63},
              {'cmd': 'add', 'name': 'h1', 'host': '127.0.0.1', 'port': 3306.5},
              {'cmd': 'add', 'name': 'n' * 2000, 'host': '127.0.0.1', 'port': 3306},
              {'cmd': 'add', 'name': 'h1', 'host': 'h' * 2000, 'port': 3306},
              {'cmd': 'add', 'name': 'h1', 'host': '127.0.0.1', 'port': 3306, 'priority': -5},
              {'cmd': 'add', 'name': 'h1', 'host': '127.0.0.1', 'port': 3306, 'weight': 2 ** 40},
              {'cmd': 'set', 'name': 'db1'}, {'cmd': 'set', 'name': 'db1', 'priority': 1e300},
              {'cmd': 'set', 'name': 'db1', 'weight': 'x'}, {'cmd': 'set', 'name': 'nosuch', 'weight': 1},
              {'cmd': 'remove'}, {'cmd': 'remove', 'name': ''}, {'cmd': 'remove', 'name': 'nosuch'},
              {'cmd': 'drain', 'name': 7}, {'cmd': 'disable', 'name': 'z' * 3000},
              {'cmd': 'enable', 'name': '\u0000db1'}, {'cmd': 'frobnicate', 'name': 'db1'}]:
        refused(json.dumps(r).encode() + b'\n')
    # well-formed commands with odd but acceptable values, undone at once
    for r in [{'cmd': 'add', 'name': 'h\u00e9\u2603', 'host': '127.0.0.1', 'port': 1},
              {'cmd': 'remove', 'name': 'h\u00e9\u2603'},
              {'cmd': 'reset', 'name': 5}, {'cmd': 'status', 'extra': [1, {'a': None}]}]:
        req(json.dumps(r).encode() + b'\n')
    # two requests on one line / one connection: only the first is answered
    req(b'{"cmd":"status"}\n{"cmd":"reset"}\n')
    # a partial line, then gone; random bytes without a newline, then gone
    for i in range(20):
        req(b'{"cmd":"sta', close_early=True)
        req(os.urandom(random.randint(1, 8000)).replace(b'\n', b''), close_early=True)
    # many at once, none sending anything
    socks = []
    for i in range(60):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        socks.append(s)
    for s in socks:
        s.close()
    print('admin: %d requests, %d JSON replies, 60 silent connections, errors %d' %
          (sent, replied, errors))


def main():
    kind = sys.argv[1]
    if kind == 'proxy':
        proxy(int(sys.argv[2]))
    elif kind == 'storm':
        storm(int(sys.argv[2]), [int(p) for p in sys.argv[3:]])
    elif kind == 'admin':
        admin(sys.argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return min(errors, 100)


if __name__ == '__main__':
    sys.exit(main())
