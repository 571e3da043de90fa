#!/usr/bin/env python3
"""asan_hostile.py - hostile clients for asan_daemon.sh, one kind a call.

  asan_hostile.py proxy PORT       16 MB headers then close, 0-length
                                   packets, pipelined commands, closes in
                                   the middle of a large result
  asan_hostile.py relay PORT...     through the L4 relay: resets and stalls in
                                   a large result, a half-closed client
  asan_hostile.py storm N PORT...  N connections to each port opened at
                                   once and closed at once (some with RST)
  asan_hostile.py admin SOCKET     random bytes, overlong lines and garbage
                                   JSON to the admin socket
  asan_hostile.py mix PORT SECONDS SEED CTL...
                                   6 threads of sessions sending random
                                   pipelines (statements, prepared statement
                                   commands, raw commands) and going at random
                                   points, while CTL (a mysteerctl command
                                   line) drains, disables and reloads

Each prints what it did as '# ' lines and one summary line
'KIND: ... errors 0'; the exit code is the number of unexpected outcomes
(a hang, an answer missing, a wrong answer).
"""
import json
import os
import random
import select
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
        if stage == 'handshake':  # refused at once: no 16 MB is kept before login
            try:
                n, p = read_packet(s)
                if p[:3] != b'\xff\x81\x04':
                    bad('16 MB header before login answered %r' % p[:20])
            except (EOFError, ConnectionError, socket.timeout) as e:
                bad('16 MB header before login: no ERR 1153 (%s)' % e)
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
    # -- COM_PING and 5-byte COM_STMT_EXECUTE pipelined for 2 s without
    # reading (the proxy stops taking commands past 1 MB of answers), then
    # every answer read; and the same client gone without reading
    for read_all in (True, False):
        s = login(port)
        unit = pkt(b'\x0e') + pkt(b'\x17\x07\x00\x00\x00')
        s.setblocking(False)
        sent, stop = 0, time.time() + 2
        while time.time() < stop:
            try:
                sent += s.send((unit * 4096)[sent % len(unit):])  # the stream goes on whole
            except BlockingIOError:
                time.sleep(0.01)
        if not read_all:
            rst_close(s)
            continue
        # the last unit sent in part is finished while the answers are read
        pending = unit[sent % len(unit):] if sent % len(unit) else b''
        want = 2 * ((sent + len(pending)) // len(unit))
        got, buf, give_up = 0, b'', time.time() + 120
        while got < want and time.time() < give_up:
            r, w, _ = select.select([s], [s] if pending else [], [], 1)
            if w:
                pending = pending[s.send(pending):]
            if not r:
                continue
            d = s.recv(1 << 20)
            if not d:
                break
            buf += d
            off = 0
            while len(buf) - off >= 4:
                n = int.from_bytes(buf[off:off + 3], 'little')
                if len(buf) - off < 4 + n:
                    break
                if buf[off + 4:off + 5] != (b'\x00' if got % 2 == 0 else b'\xff'):
                    bad('pipelined ping/execute: answer %d is %r' % (got, buf[off + 4:off + 16]))
                    got = want
                    break
                got += 1
                off += 4 + n
            buf = buf[off:]
        if got < want:
            bad('pipelined ping/execute: %d of %d answers' % (got, want))
        s.close()
        cases += 1
    # -- a packet trickling in a byte at a time: ERR 1159 after
    # client_packet_timeout_ms, then the end of the stream
    s = login(port)
    data = pkt(b'\x03SELECT ' + b'1' * 100)
    s.settimeout(0.2)
    code = None
    for i in range(len(data)):
        try:
            s.sendall(data[i:i + 1])
            n, p = read_packet(s)
            code = struct.unpack('<H', p[1:3])[0] if p[:1] == b'\xff' else p[:8]
            break
        except socket.timeout:
            continue
        except (EOFError, ConnectionError) as e:
            code = 'closed (%s)' % e
            break
    if code != 1159:
        bad('trickled packet: %r, not ERR 1159' % (code,))
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


def relay(ports):
    """Through the L4 relay (to a real server): a client that resets in the
    middle of a large result, one that stalls then goes, one that half-closes
    after its query and reads the answer to its end."""
    big = b'SELECT REPEAT(\'x\', 65536) FROM hostile.seq_1_to_500'
    cases = 0
    for port in ports:
        for how in ('rst', 'stall', 'half-close'):
            s = login(port)
            write_packet(s, 0, b'\x03' + big)
            if how == 'half-close':
                s.shutdown(socket.SHUT_WR)
                s.settimeout(30)
                got = 0
                while True:
                    d = s.recv(1 << 20)
                    if not d:
                        break
                    got += len(d)
                if got < 500 * 65536:
                    bad('relay %d: half-closed client got %d bytes' % (port, got))
                s.close()
            else:
                s.recv(65536)
                if how == 'stall':
                    time.sleep(0.5)
                rst_close(s)
            cases += 1
    print('relay: %d cases errors %d' % (cases, errors))


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


def pkt(body, seq=0):
    return struct.pack('<I', len(body))[:3] + bytes([seq]) + body


MIX_SQL = [b'SELECT 1', b'SELECT @@port', b'BEGIN', b'COMMIT', b'ROLLBACK',
           b'START TRANSACTION READ ONLY', b'SET @a = 1', b'SET autocommit = 0',
           b'SET autocommit = 1', b'SET time_zone = \'+01:00\'', b'USE hostile',
           b'INSERT INTO hostile.t (v) VALUES (5)', b'SELECT LAST_INSERT_ID()',
           b'SELECT FOUND_ROWS()', b'SHOW WARNINGS', b'DO SLEEP(0.05)',
           b'CREATE TEMPORARY TABLE IF NOT EXISTS hostile.tmp (a INT)',
           b'SELECT GET_LOCK(\'l\', 0)', b'SELECT RELEASE_LOCK(\'l\')',
           b'SELECT REPEAT(\'y\', 300000) FROM hostile.seq_1_to_20',
           b'SELECT SQL_CALC_FOUND_ROWS 1', b'SELECT 1; SELECT 2', b'SELECT * FROM nowhere',
           b'SET SESSION session_track_system_variables = \'*\'', b'LOCK TABLES hostile.t READ',
           b'UNLOCK TABLES', b'SELECT \'unterminated', b'/* mysteer:writer */ SELECT 1']


def mix_session(port, rnd):
    """One session: a random pipeline of statements, prepared statement
    commands (real and made up ids) and raw commands, some answers read,
    then a close, a reset or a COM_QUIT at a random point."""
    s = login(port)
    ids = [1, 2, 0, 0xffffffff]
    out = []
    for _ in range(rnd.randint(1, 25)):
        k = rnd.random()
        if k < 0.45:
            out.append(pkt(b'\x03' + rnd.choice(MIX_SQL)))
        elif k < 0.55:
            out.append(pkt(b'\x16' + rnd.choice([b'SELECT ?, ?', b'INSERT INTO hostile.t (v) VALUES (?)',
                                                 b'SELECT ? FROM hostile.seq_1_to_100', b'BAD ?'])))
        elif k < 0.75:
            sid = struct.pack('<I', rnd.choice(ids))
            c = rnd.choice([0x17, 0x17, 0x18, 0x19, 0x1a, 0x1c])
            body = bytes([c]) + sid
            if c == 0x17:
                body += b'\x00\x01\x00\x00\x00'
                nb = rnd.choice([0, 1, 2])
                body += os.urandom(nb) + rnd.choice([b'', b'\x01' + os.urandom(rnd.randint(0, 12)), b'\x00'])
                body += os.urandom(rnd.randint(0, 30))
            elif c == 0x18:
                body += struct.pack('<H', rnd.randint(0, 3)) + os.urandom(rnd.randint(0, 5000))
            out.append(pkt(body))
        elif k < 0.85:
            out.append(pkt(bytes([rnd.choice([0x00, 0x02, 0x04, 0x05, 0x09, 0x0e, 0x11, 0x1b,
                                               0x1f, 0x1d, 0xff])]) + os.urandom(rnd.randint(0, 20))))
        elif k < 0.9:
            out.append(pkt(b''))
        else:
            out.append(pkt(os.urandom(rnd.randint(1, 50)), rnd.randint(0, 255)))
    data = b''.join(out)
    end = rnd.random()
    try:
        if end < 0.3:
            s.sendall(data)
            rst_close(s)
            return 'rst'
        if end < 0.4:
            s.sendall(data[:rnd.randint(0, len(data))])
            s.close()
            return 'cut'
        s.sendall(data)
        s.settimeout(0.5)  # answers read until the proxy is quiet or closes
        deadline = time.time() + 5
        while time.time() < deadline:
            if not s.recv(1 << 20):
                break
        s.close()
        return 'read'
    except (socket.timeout, ConnectionError, OSError):
        s.close()
        return 'read'


def mix(port, seconds, seed, ctl):
    import subprocess
    import threading
    counts = {}
    lock = threading.Lock()
    stop = time.time() + seconds

    def worker(i):
        rnd = random.Random(seed * 100 + i)
        while time.time() < stop:
            try:
                r = mix_session(port, rnd)
            except (EOFError, ConnectionError, socket.timeout, OSError):
                r = 'refused'
            with lock:
                counts[r] = counts.get(r, 0) + 1

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    changes = 0
    rnd = random.Random(seed)
    while ctl and time.time() < stop:  # the topology moves under the sessions
        cmd = rnd.choice([['drain', 'db2'], ['enable', 'db2'], ['disable', 'db3'], ['enable', 'db3'],
                          ['set', 'db2', 'weight=0'], ['set', 'db2', 'weight=1'], ['reload']])
        subprocess.run(ctl + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        changes += 1
        time.sleep(0.3)
    for t in ts:
        t.join()
    for cmd in (['enable', 'db2'], ['enable', 'db3'], ['reset']) if ctl else ():
        subprocess.run(ctl + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print('mix: %d sessions (%s), %d topology changes, errors %d' %
          (sum(counts.values()), ' '.join('%s %d' % kv for kv in sorted(counts.items())),
           changes, errors))


def main():
    kind = sys.argv[1]
    if kind == 'proxy':
        proxy(int(sys.argv[2]))
    elif kind == 'relay':
        relay([int(p) for p in sys.argv[2:]])
    elif kind == 'storm':
        storm(int(sys.argv[2]), [int(p) for p in sys.argv[3:]])
    elif kind == 'admin':
        admin(sys.argv[2])
    elif kind == 'mix':
        mix(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return min(errors, 100)


if __name__ == '__main__':
    sys.exit(main())
