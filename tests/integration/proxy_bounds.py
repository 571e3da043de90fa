#!/usr/bin/env python3
"""proxy_bounds.py - clients that try to make the 6450 proxy grow without
bound or hold its resources, for proxy_bounds.sh. One kind a call:

  flood PORT PID SECONDS      a logged-in client pipelines COM_PING and
                              5-byte COM_STMT_EXECUTE packets without
                              reading; the daemon's RSS is sampled; then
                              every answer must come, in order
  history PORT PID N KB       N statements SET @vI = '<KB KB literal>' in one
                              session; the daemon's RSS is sampled; every
                              value must still read back whole
  idle PORT SECONDS           a logged-in client sends nothing: it must get
                              ERR 1159 and a close within SECONDS
  trickle PORT SECONDS        a logged-in client sends a packet a byte at a
                              time: ERR 1159 and a close within SECONDS
  toobig PORT                 a packet of 16 MiB + 1 byte: ERR 1153
  buffers PORT MB             two clients each hold MB MiB of a packet they
                              never finish; a third one's query of MB MiB
                              gets ERR 1041 then; after they go it runs
  silent PORT N               N connections that never log in, then a real
                              login and query must succeed
  admin SOCKET N IDLE_S CTL... N silent connections to the admin socket:
                              CTL status must answer, the daemon must hold
                              at most 64 of them and none after IDLE_S x3
  login PORT USER PASSWORD    prints the answer to a login: ok or ERR code
  session PORT USER PASSWORD  logs in, prints 'ready', then runs each line
                              of stdin as a query and prints ok/err/rows
  authtime PORT N             N logins each of an unknown user and of a
                              known user with a wrong password: prints the
                              median time of each (measured, never judged)

Each prints what it measured as 'measured: ...' lines and its findings as
'# ' lines; the exit code is the number of unexpected outcomes.
"""
import hashlib
import os
import resource
import select
import socket
import struct
import sys
import time

errors = 0


def bad(what):
    global errors
    errors += 1
    print('# unexpected: %s' % what)


def read_packet(s):
    hdr = b''
    while len(hdr) < 4:
        d = s.recv(4 - len(hdr))
        if not d:
            raise EOFError
        hdr += d
    n = hdr[0] | hdr[1] << 8 | hdr[2] << 16
    p = b''
    while len(p) < n:
        d = s.recv(min(n - len(p), 1 << 20))
        if not d:
            raise EOFError
        p += d
    return n, p


def pkt(body, seq=0):
    return struct.pack('<I', len(body))[:3] + bytes([seq]) + body


def err_code(p):
    return struct.unpack('<H', p[1:3])[0] if p[:1] == b'\xff' else None


def scramble_reply(scramble, password):
    if not password:
        return b''
    s1 = hashlib.sha1(password.encode()).digest()
    h = hashlib.sha1(scramble + hashlib.sha1(s1).digest()).digest()
    return bytes(a ^ b for a, b in zip(s1, h))


def connect_login(port, user='app', password='app', timeout=10):
    """Returns (socket, first packet of the login's answer)."""
    s = socket.create_connection(('127.0.0.1', port), timeout=timeout)
    _, p = read_packet(s)
    if p[:1] == b'\xff':
        return s, p
    i = p.index(b'\0', 1)
    scramble = p[i + 5:i + 13] + p[i + 13 + 1 + 2 + 1 + 2 + 2 + 1 + 10:][:12]
    auth = scramble_reply(scramble, password)
    caps = 0x0200 | 0x8000 | 0x10000 | 0x20000 | 0x80000 | 1 | 4  # EOF packets kept
    s.sendall(pkt(struct.pack('<IIB', caps, 1 << 30, 33) + b'\0' * 23 + user.encode() + b'\0' +
                  bytes([len(auth)]) + auth + b'mysql_native_password\0', 1))
    _, p = read_packet(s)
    return s, p


def login(port, user='app', password='app'):
    s, p = connect_login(port, user, password)
    if p[:1] != b'\x00':
        raise ConnectionError('login of %r answered %r' % (user, p[:80]))
    return s


def answer(s):
    """One answer to its end (no CLIENT_DEPRECATE_EOF): 'ok', 'err CODE' or
    the rows, as a list of lists of bytes (one text column read a row)."""
    n, p = read_packet(s)
    if p[:1] == b'\x00':
        return 'ok'
    if p[:1] == b'\xff':
        return 'err %d' % err_code(p)
    for _ in range(p[0]):
        read_packet(s)
    read_packet(s)  # EOF after the columns
    rows = []
    while True:
        n, p = read_packet(s)
        if p[:1] == b'\xff':
            return 'err %d' % err_code(p)
        if p[:1] == b'\xfe' and n < 9:
            return rows
        row, off = [], 0
        while off < len(p):
            ln = p[off]
            if ln == 0xfb:
                row.append(None)
                off += 1
                continue
            if ln < 251:
                off += 1
            elif ln == 0xfc:
                ln = struct.unpack('<H', p[off + 1:off + 3])[0]
                off += 3
            elif ln == 0xfd:
                ln = int.from_bytes(p[off + 1:off + 4], 'little')
                off += 4
            else:
                ln = struct.unpack('<Q', p[off + 1:off + 9])[0]
                off += 9
            row.append(p[off:off + ln])
            off += ln
        rows.append(row)


def query(s, sql):
    s.sendall(pkt(b'\x03' + sql))
    return answer(s)


def is_eof(n, p):
    """An EOF packet (n: its length), not a row that starts with 0xfe."""
    return p[:1] == b'\xfe' and n < 9


def prepare(s, sql):
    """The statement id, or 'err CODE'."""
    s.sendall(pkt(b'\x16' + sql))
    _, p = read_packet(s)
    if p[:1] == b'\xff':
        return 'err %d' % err_code(p)
    sid, ncols, nparams = struct.unpack('<IHH', p[1:9])
    for count in (nparams, ncols):
        if count:
            for _ in range(count):
                read_packet(s)
            read_packet(s)  # EOF
    return sid


def execute(s, sid, cursor=False):
    """'err CODE', or (columns, status flags of the EOF after them, rows)."""
    s.sendall(pkt(b'\x17' + struct.pack('<IBI', sid, 1 if cursor else 0, 1)))
    n, p = read_packet(s)
    if p[:1] == b'\xff':
        return 'err %d' % err_code(p)
    if p[:1] == b'\x00':
        return (0, 0, 0)
    ncols = p[0]
    for _ in range(ncols):
        read_packet(s)
    n, p = read_packet(s)
    status = struct.unpack('<H', p[3:5])[0] if is_eof(n, p) else 0
    rows = 0
    if not status & 0x40:  # no cursor: the rows follow
        while True:
            n, p = read_packet(s)
            if p[:1] == b'\xff':
                return 'err %d' % err_code(p)
            if is_eof(n, p):
                break
            rows += 1
    return (ncols, status, rows)


def fetch(s, sid, nrows):
    """'err CODE', or the number of rows."""
    s.sendall(pkt(b'\x1c' + struct.pack('<II', sid, nrows)))
    rows = 0
    while True:
        n, p = read_packet(s)
        if p[:1] == b'\xff':
            return 'err %d' % err_code(p)
        if is_eof(n, p):
            return rows
        rows += 1


def rss_kb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def closed_with(s, timeout):
    """Reads until the proxy closes: the first packet's ERR code (or None
    when the close came without one), the seconds it took, or raises
    socket.timeout past timeout."""
    s.settimeout(timeout)
    t0 = time.time()
    code = None
    try:
        _, p = read_packet(s)
        code = err_code(p)
        while s.recv(65536):
            pass
    except (EOFError, ConnectionResetError):
        pass
    return code, time.time() - t0


def flood(port, pid, seconds):
    """COM_PING and a 5-byte COM_STMT_EXECUTE (an unknown statement: ERR
    1243) pipelined without reading. The proxy answers both itself; without
    a bound on its output queue every answer stays in its memory."""
    s = login(port)
    idle = rss_kb(pid)
    unit = pkt(b'\x0e') + pkt(b'\x17' + struct.pack('<I', 7))
    chunk = unit * 4096
    s.setblocking(False)
    sent = 0
    peak = idle
    stop = time.time() + seconds
    while time.time() < stop:
        _, w, _ = select.select([], [s], [], 0.1)
        if w:
            try:
                sent += s.send(chunk[sent % len(unit):])  # the stream goes on whole
            except BlockingIOError:
                pass
        peak = max(peak, rss_kb(pid))
    # the last unit sent in part is finished while the answers are read
    # (the proxy may not read it before its answers are taken)
    pending = unit[sent % len(unit):] if sent % len(unit) else b''
    units = (sent + len(pending)) // len(unit)
    peak = max(peak, rss_kb(pid))
    print('measured: pipelined %d COM_PING + %d COM_STMT_EXECUTE (%.1f MB) in %.0f s without '
          'reading; daemon RSS idle %d KB, peak %d KB (+%d KB)' %
          (units, units, sent / 1e6, seconds, idle, peak, peak - idle))
    if peak - idle > 32 * 1024:
        bad('the daemon grew by %d KB (more than 32 MB) under the flood' % (peak - idle))
    buf = bytearray()
    off = 0
    oks = errs = 0
    give_up = time.time() + 120
    while oks + errs < 2 * units:
        if len(buf) - off < 4 or len(buf) - off < 4 + int.from_bytes(buf[off:off + 3], 'little'):
            if time.time() > give_up:
                bad('only %d of %d answers came in 120 s' % (oks + errs, 2 * units))
                return
            r, w, _ = select.select([s], [s] if pending else [], [], 1)
            if w:
                pending = pending[s.send(pending):]
            if not r:
                continue
            del buf[:off]
            off = 0
            d = s.recv(1 << 20)
            if not d:
                bad('closed after %d of %d answers' % (oks + errs, 2 * units))
                return
            buf += d
            continue
        n = int.from_bytes(buf[off:off + 3], 'little')
        want = 0x00 if (oks + errs) % 2 == 0 else 0xff
        if buf[off + 4] != want or (want == 0xff and buf[off + 5:off + 7] != b'\xdb\x04'):
            bad('answer %d: %r' % (oks + errs, bytes(buf[off + 4:off + 24])))
            return
        oks += want == 0
        errs += want == 0xff
        off += 4 + n
    print('# every answer came, in order: %d OK, %d ERR 1243' % (oks, errs))
    s.setblocking(True)
    s.settimeout(30)
    if query(s, b'SELECT 1') != [[b'1']]:
        bad('the session is unusable after the flood')
    s.close()


def history(port, pid, n, kb):
    s = login(port)
    query(s, b'SELECT 1')  # the session's connections exist before the idle figure
    idle = peak = rss_kb(pid)
    lit = b'v' * (kb * 1024)
    for i in range(n):
        r = query(s, b"SET @v%d = '%s'" % (i, lit))
        if r != 'ok':
            bad('SET @v%d: %s' % (i, r))
            return
        peak = max(peak, rss_kb(pid))
    print('measured: %d SET @vN of %d KB each in one session: daemon RSS idle %d KB, peak %d KB '
          '(+%d KB)' % (n, kb, idle, peak, peak - idle))
    if peak - idle > 32 * 1024:
        bad('the daemon grew by %d KB (more than 32 MB) keeping the history' % (peak - idle))
    r = query(s, b'SELECT LENGTH(@v0), LENGTH(@v%d), @@server_id' % (n - 1))
    if not isinstance(r, list) or r[0][:2] != [str(kb * 1024).encode()] * 2:
        bad('the first and last values read back as %r' % (r,))
    else:
        print('# @v0 and @v%d read back whole, on server %s' % (n - 1, r[0][2].decode()))
    print('server_id %s' % (r[0][2].decode() if isinstance(r, list) else '?'))
    s.close()


def idle(port, seconds):
    s = login(port)
    if query(s, b'SELECT 1') != [[b'1']]:
        bad('the session does not answer before going idle')
    try:
        code, took = closed_with(s, seconds)
    except socket.timeout:
        bad('an idle session is still open after %d s' % seconds)
        return
    print('measured: an idle session was closed after %.1f s with %s' %
          (took, 'ERR %d' % code if code else 'no ERR'))
    if code != 1159:
        bad('idle session closed with %r, not ERR 1159' % code)


def trickle(port, seconds):
    s = login(port)
    body = b'\x03SELECT ' + b'1' * 200
    data = pkt(body)
    t0 = time.time()
    for i in range(len(data)):
        try:
            s.sendall(data[i:i + 1])
        except OSError:
            break
        r, _, _ = select.select([s], [], [], 0.25)
        if r or time.time() - t0 > seconds:
            break
    try:
        code, _ = closed_with(s, max(1, seconds - (time.time() - t0)))
    except socket.timeout:
        bad('a packet trickling in a byte every 0.25 s is still read after %d s' % seconds)
        return
    print('measured: a packet sent a byte every 0.25 s was cut after %.1f s with %s' %
          (time.time() - t0, 'ERR %d' % code if code else 'no ERR'))
    if code != 1159:
        bad('trickling packet closed with %r, not ERR 1159' % code)


def toobig(port):
    """A whole first fragment (16 MiB - 1 bytes) and the header of a second
    one of 2 bytes: the packet is past 16 MiB before its last bytes come."""
    s = login(port)
    s.sendall(b'\xff\xff\xff\x00' + b'\x03SELECT ' + b'1' * (0xffffff - 8) + b'\x02\x00\x00\x01')
    try:
        code, _ = closed_with(s, 10)
    except socket.timeout:
        bad('a packet of 16 MiB + 1 byte is read on')
        return
    print('# a packet of 16 MiB + 1 byte: %s' % ('ERR %d' % code if code else 'closed'))
    if code != 1153:
        bad('a packet of 16 MiB + 1 byte: %r, not ERR 1153' % code)


def buffers(port, mb):
    """Two clients hold mb MiB each of a packet they do not finish; a third
    sends a whole query of the same size: past max_client_buffer_bytes it
    gets ERR 1041, and once the two went, the same query runs."""
    size = mb << 20
    sql = b"SELECT LENGTH('" + b'x' * (size - 40) + b"')"
    holders = []
    for i in range(2):
        h = login(port)
        h.sendall(pkt(b'\x03' + sql)[:size - 4096])
        holders.append(h)
    time.sleep(1)
    c = login(port)
    c.settimeout(30)
    try:
        c.sendall(pkt(b'\x03' + sql))
        _, p = read_packet(c)
        code = err_code(p)
    except (EOFError, ConnectionError) as e:
        code = 'closed (%s)' % e
    print('# a third %d MiB query while two clients hold %d MiB each: %s' %
          (mb, mb, 'ERR %s' % code if code else 'answered'))
    if code != 1041:
        bad('the third query: %r, not ERR 1041' % code)
    small = login(port)
    if query(small, b'SELECT 1') != [[b'1']]:
        bad('a small query failed while the buffers are full')
    small.close()
    for h in holders:
        h.close()
    time.sleep(0.5)
    c = login(port)
    c.settimeout(30)
    r = query(c, sql)
    if r != [[str(size - 40).encode()]]:
        bad('the %d MiB query once the others went: %r' % (mb, r if isinstance(r, str) else '?'))
    else:
        print('# the same query once they went: answered')


def silent(port, n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(hard, n + 100), max(hard, n + 100)))
    socks = []
    for i in range(n):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(('127.0.0.1', port))
        except BlockingIOError:
            pass
        socks.append(s)
    time.sleep(1)
    t0 = time.time()
    try:
        s, p = connect_login(port)
        ans = 'ok' if p[:1] == b'\x00' else 'ERR %s' % err_code(p)
        if ans == 'ok':
            r = query(s, b'SELECT 1')
            ans = 'ok, SELECT 1 answered' if r == [[b'1']] else 'ok, SELECT 1 got %r' % (r,)
        s.close()
    except (OSError, EOFError) as e:
        ans = 'failed (%s)' % e
    took = time.time() - t0
    told = 0  # greeted, then told ERR 1040 and closed to make room
    for s in socks:
        try:
            told += b'\xff\x10\x04' in s.recv(1 << 16)
        except OSError:
            pass
    print('measured: a real login after %d silent connections: %s in %.2f s; %d of the silent '
          'ones were told ERR 1040 and closed to make room' % (n, ans, took, told))
    if not ans.startswith('ok, SELECT 1 answered'):
        bad('the real login after %d silent connections: %s' % (n, ans))
    for s in socks:
        s.close()


def admin_conns(path):
    """The daemon's accepted connections of the admin socket: connected
    sockets bound to its path (/proc/net/unix, St 03)."""
    n = 0
    with open('/proc/net/unix') as f:
        next(f)
        for line in f:
            cols = line.split()
            n += len(cols) >= 8 and cols[5] == '03' and cols[7] == path
    return n


def admin(path, n, idle_s, ctl):
    """n silent connections to the admin socket; `ctl status` must answer
    while they are open; the daemon must not hold more than its cap of them,
    and none once idle_s (x3) has passed."""
    import subprocess
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(hard, n + 100), max(hard, n + 100)))
    socks = []
    for i in range(n):
        s = socket.socket(socket.AF_UNIX)
        s.setblocking(False)
        try:
            s.connect(path)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as e:
            print('# admin connection %d: %s' % (i, e))
            s.close()
            continue
        socks.append(s)
    time.sleep(0.5)
    held = admin_conns(path)
    t0 = time.time()
    r = subprocess.run(ctl + ['status'], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=60)
    took = time.time() - t0
    print('measured: with %d silent admin connections open the daemon holds %d; '
          'mysteerctl status answered in %.2f s (exit %d)' % (len(socks), held, took,
                                                             r.returncode))
    if r.returncode != 0:
        bad('mysteerctl status with %d silent admin connections: exit %d %s' %
            (len(socks), r.returncode, r.stderr.decode().strip()))
    if held > 64:
        bad('the daemon holds %d silent admin connections (more than 64)' % held)
    t0 = time.time()
    while admin_conns(path) > 0 and time.time() - t0 < 3 * idle_s:
        time.sleep(0.2)
    left = admin_conns(path)
    print('measured: %d silent admin connections left after %.1f s' % (left, time.time() - t0))
    if left:
        bad('%d silent admin connections still held after %.0f s' % (left, 3 * idle_s))
    for s in socks:
        s.close()


def login_answer(port, user, password):
    try:
        s, p = connect_login(port, user, password)
    except (OSError, EOFError) as e:
        print('failed %s' % e)
        return
    print('ok' if p[:1] == b'\x00' else 'ERR %d' % err_code(p))
    s.close()


def session(port, user, password):
    s = login(port, user, password)
    print('ready', flush=True)
    for line in sys.stdin:
        r = query(s, line.strip().encode())
        print(r if isinstance(r, str) else 'rows %s' % b' '.join(b'|'.join(
            v or b'NULL' for v in row) for row in r).decode(), flush=True)


def authtime(port, n):
    times = {'unknown user': [], 'wrong password': []}
    for i in range(n):
        for kind, user in (('unknown user', 'nosuchuser'), ('wrong password', 'app')):
            t0 = time.perf_counter()
            s, p = connect_login(port, user, 'wrong')
            times[kind].append(time.perf_counter() - t0)
            if err_code(p) != 1045:
                bad('%s: %r instead of ERR 1045' % (kind, p[:40]))
            s.close()
    med = {k: sorted(v)[len(v) // 2] * 1e3 for k, v in times.items()}
    print('measured: median login refusal over %d tries: unknown user %.3f ms, known user with '
          'a wrong password %.3f ms' % (n, med['unknown user'], med['wrong password']))


def main():
    kind = sys.argv[1]
    port = int(sys.argv[2]) if kind != 'admin' else 0
    args = sys.argv[3:]
    if kind == 'flood':
        flood(port, int(args[0]), float(args[1]))
    elif kind == 'history':
        history(port, int(args[0]), int(args[1]), int(args[2]))
    elif kind == 'idle':
        idle(port, float(args[0]))
    elif kind == 'trickle':
        trickle(port, float(args[0]))
    elif kind == 'toobig':
        toobig(port)
    elif kind == 'buffers':
        buffers(port, int(args[0]))
    elif kind == 'silent':
        silent(port, int(args[0]))
    elif kind == 'admin':
        admin(sys.argv[2], int(args[0]), float(args[1]), args[2:])
        return min(errors, 100)
    elif kind == 'login':
        login_answer(port, args[0], args[1])
    elif kind == 'session':
        session(port, args[0], args[1])
    elif kind == 'authtime':
        authtime(port, int(args[0]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return min(errors, 100)


if __name__ == '__main__':
    sys.exit(main())
