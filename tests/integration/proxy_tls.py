#!/usr/bin/python3
# proxy_tls.py - TLS clients of the 6450 proxy for proxy_tls.sh:
#
#   proxy_tls.py pymysql PORT CA       PyMySQL with ssl (CA and host name
#                                      verified): a read, the TLS version
#   proxy_tls.py garbage PORT          an SSLRequest, then bytes that are no
#                                      TLS ClientHello: the proxy must close
#   proxy_tls.py slow PORT CA SECONDS  the TLS handshake by hand, its first
#                                      flight trickled over SECONDS, then a
#                                      native password login over TLS
#
# Prints "ok - ..." / "not ok - ..." lines; exits 1 when one failed.
import hashlib
import socket
import ssl
import struct
import sys
import time

from mysqlwire import (CAP_LONG_PASSWORD, CAP_PLUGIN_AUTH, CAP_PROTOCOL_41, CAP_SECURE_CONNECTION,
                      CAP_SSL, check, exit_status, read_packet, recv_exact, send_packet)

CAPS = CAP_LONG_PASSWORD | CAP_PROTOCOL_41 | CAP_SSL | CAP_SECURE_CONNECTION | CAP_PLUGIN_AUTH


def packet(seq, payload):
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


def greeting(sock):
    """The server's handshake: (capabilities, scramble)."""
    _, p = read_packet(sock)
    i = p.index(b"\0", 1) + 1 + 4
    scramble = p[i:i + 8]
    i += 9
    caps = struct.unpack("<H", p[i:i + 2])[0]
    i += 5
    caps |= struct.unpack("<H", p[i:i + 2])[0] << 16
    i += 2 + 1 + 10
    scramble += p[i:i + 12]
    return caps, scramble


def ssl_request():
    return struct.pack("<IIB", CAPS, 1 << 24, 45) + b"\0" * 23


def native(password, scramble):
    s1 = hashlib.sha1(password).digest()
    s2 = hashlib.sha1(scramble + hashlib.sha1(s1).digest()).digest()
    return bytes(a ^ b for a, b in zip(s1, s2))


def run_pymysql(port, ca):
    import pymysql

    c = pymysql.connect(host="127.0.0.1", port=port, user="app", password="app",
                        ssl_ca=ca, ssl_verify_cert=True, ssl_verify_identity=True,
                        connect_timeout=10)
    cur = c.cursor()
    cur.execute("SELECT 1")
    check(cur.fetchone()[0] == 1, "pymysql: SELECT 1 over TLS")
    version = c._sock.version() if hasattr(c._sock, "version") else None
    check(version in ("TLSv1.2", "TLSv1.3"), "pymysql: the socket is TLS (%s)" % version)
    cur.execute("SELECT @@port")
    print("# pymysql: a read served by port %s" % cur.fetchone()[0])
    c.close()


def run_garbage(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    caps, _ = greeting(s)
    check(caps & CAP_SSL, "garbage: the handshake offers CLIENT_SSL")
    s.sendall(packet(1, ssl_request()))
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 8)
    closed = False
    start = time.monotonic()
    try:
        while time.monotonic() - start < 10:
            if not s.recv(4096):
                closed = True
                break
    except (ConnectionResetError, socket.timeout) as e:
        closed = isinstance(e, ConnectionResetError)
    check(closed, "garbage: the proxy closed a connection that sent no TLS ClientHello")
    s.close()


def run_slow(port, ca, seconds):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    caps, scramble = greeting(s)
    s.sendall(packet(1, ssl_request()))
    ctx = ssl.create_default_context(cafile=ca)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(inc, out, server_hostname="localhost")
    first = True

    def pump(trickle):
        data = out.read()
        if not trickle:
            s.sendall(data)
            return
        step = max(1, len(data) // 12)
        for i in range(0, len(data), step):
            s.sendall(data[i:i + step])
            time.sleep(seconds / 12.0)

    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            pump(first)
            if first:
                print("# slow: first flight trickled", flush=True)
            first = False
            d = s.recv(65536)
            if not d:
                raise EOFError("closed during the handshake")
            inc.write(d)
    pump(False)
    check(True, "slow: the trickled TLS handshake completed (%s)" % tls.version())

    def tls_read_packet():
        buf = b""
        while True:
            try:
                buf += tls.read(65536)
            except ssl.SSLWantReadError:
                d = s.recv(65536)
                if not d:
                    raise EOFError("closed")
                inc.write(d)
                continue
            if len(buf) >= 4:
                n = buf[0] | buf[1] << 8 | buf[2] << 16
                if len(buf) >= 4 + n:
                    return buf[3], buf[4:4 + n]

    auth = native(b"app", scramble)
    resp = (struct.pack("<IIB", CAPS, 1 << 24, 45) + b"\0" * 23 + b"app\0" +
            bytes([len(auth)]) + auth + b"mysql_native_password\0")
    tls.write(packet(2, resp))
    pump(False)
    seq, p = tls_read_packet()
    check(p[:1] == b"\0" and seq == 3, "slow: logged in over TLS (seq %d, first byte %r)" %
          (seq, p[:1]))
    tls.write(packet(0, b"\x01"))  # COM_QUIT
    pump(False)
    s.close()


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    try:
        if mode == "pymysql":
            run_pymysql(port, sys.argv[3])
        elif mode == "garbage":
            run_garbage(port)
        elif mode == "slow":
            run_slow(port, sys.argv[3], float(sys.argv[4]))
        else:
            print("usage: proxy_tls.py pymysql|garbage|slow PORT [CA [SECONDS]]")
            sys.exit(2)
    except Exception as e:  # a failure is a test result, not a traceback
        check(False, "%s: %s: %s" % (mode, type(e).__name__, e))
    sys.exit(exit_status())


main()
