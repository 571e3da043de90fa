#!/usr/bin/env python3
"""proxy_chaos.py - random and malformed commands through the 6450 proxy.

Logs in as app/app, then sends five commands a session, each a random
command byte with random arguments (or a real statement, or a plausible
statement id), and reads each answer to its end. Every answer must come
(no hang) and the proxy must stay up. Prints one line: sessions, answers,
timeouts, closed sessions. Usage: proxy_chaos.py PORT SEED SESSIONS
"""
import hashlib
import os
import random
import socket
import struct
import sys


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


def write_packet(s, seq, p):
    s.sendall(struct.pack('<I', len(p))[:3] + bytes([seq]) + p)


def login(port):
    s = socket.create_connection(('127.0.0.1', port))
    s.settimeout(5)
    _, p = read_packet(s)
    i = p.index(b'\0', 1)
    scramble = p[i + 5:i + 13] + p[i + 13 + 1 + 2 + 1 + 2 + 2 + 1 + 10:][:12]
    s1 = hashlib.sha1(b'app').digest()
    h = hashlib.sha1(scramble + hashlib.sha1(s1).digest()).digest()
    auth = bytes(a ^ b for a, b in zip(s1, h))
    caps = 0x0200 | 0x8000 | 0x10000 | 0x20000 | 0x80000 | (1 << 24) | (1 << 23) | 1 | 4
    write_packet(s, 1, struct.pack('<IIB', caps, 1 << 30, 33) + b'\0' * 23 + b'app\0' +
                 bytes([20]) + auth + b'mysql_native_password\0')
    read_packet(s)
    return s


def main():
    port, seed, sessions = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    random.seed(seed)
    cmds = [0x00, 0x02, 0x03, 0x04, 0x05, 0x09, 0x0e, 0x11, 0x16, 0x17, 0x18, 0x19, 0x1a,
            0x1b, 0x1c, 0x1f, 0xff]
    sql = [b'SELECT 1', b'BEGIN', b'SET @a=1', b'SELECT @@port', b'COMMIT', b'SELECT 1; SELECT 2',
           b'START TRANSACTION READ ONLY', b'SELECT * FROM nowhere', b"SELECT 'unterminated"]
    answers = timeouts = closed = 0
    for _ in range(sessions):
        try:
            s = login(port)
            for _ in range(5):
                c = random.choice(cmds)
                body = os.urandom(random.randint(0, 40))
                if c == 0x03 and random.random() < 0.5:
                    body = random.choice(sql)
                if c in (0x17, 0x18, 0x19, 0x1a, 0x1c) and random.random() < 0.5:
                    body = struct.pack('<I', random.randint(0, 3)) + body
                write_packet(s, 0, bytes([c]) + body)
                if c in (0x18, 0x19):
                    continue  # no answer, by the protocol
                try:
                    while True:
                        n, p = read_packet(s)
                        if c == 0x09 or p[:1] in (b'\x00', b'\xff') or (p[:1] == b'\xfe' and n < 9):
                            break
                    answers += 1
                except socket.timeout:
                    timeouts += 1
                    break
            s.close()
        except (EOFError, ConnectionError):
            closed += 1
    print('sessions %d answers %d timeouts %d closed %d' % (sessions, answers, timeouts, closed))
    return 1 if timeouts else 0


if __name__ == '__main__':
    sys.exit(main())
