# mysqlwire.py - what the hand-written protocol tests (proxy_auth.py,
# proxy_chuser.py, proxy_tls.py) share: capability bits, reading and writing
# one MySQL packet, and the "ok - ..." / "not ok - ..." report with its
# exit status.
import struct

CAP_LONG_PASSWORD = 1
CAP_PROTOCOL_41 = 1 << 9
CAP_SSL = 1 << 11
CAP_SECURE_CONNECTION = 1 << 15
CAP_PLUGIN_AUTH = 1 << 19

_failed = False


def check(ok, what):
    global _failed
    print("%s - %s" % ("ok" if ok else "not ok", what), flush=True)
    _failed |= not ok


def exit_status():
    return 1 if _failed else 0


def recv_exact(sock, n):
    out = b""
    while len(out) < n:
        d = sock.recv(n - len(out))
        if not d:
            raise EOFError("closed")
        out += d
    return out


def read_packet(sock):
    hdr = recv_exact(sock, 4)
    return hdr[3], recv_exact(sock, hdr[0] | hdr[1] << 8 | hdr[2] << 16)


def send_packet(sock, seq, payload):
    sock.sendall(struct.pack("<I", len(payload))[:3] + bytes([seq & 0xFF]) + payload)
