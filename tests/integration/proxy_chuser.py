#!/usr/bin/python3
# proxy_chuser.py - malformed COM_CHANGE_USER packets for proxy_chuser.sh:
# a session of app logs in (mysql_native_password, by hand), then sends
# COM_CHANGE_USER packets cut short or too long, and one for an unknown
# user: each gets a clean ERR (1835 malformed, 1045 refused) and the
# session goes on as app (SELECT CURRENT_USER() answers app@%).
#
#   proxy_chuser.py PORT
#
# Prints "ok - ..." / "not ok - ..."; exits 1 when one failed.
import hashlib
import os
import socket
import struct
import sys

from mysqlwire import (CAP_LONG_PASSWORD, CAP_PLUGIN_AUTH, CAP_PROTOCOL_41, CAP_SECURE_CONNECTION,
                      CAP_SSL, check, exit_status, read_packet, recv_exact, send_packet)

CAPS = CAP_LONG_PASSWORD | CAP_PROTOCOL_41 | CAP_SECURE_CONNECTION | CAP_PLUGIN_AUTH


def native(pw, scramble):
    s1 = hashlib.sha1(pw).digest()
    h = hashlib.sha1(scramble + hashlib.sha1(s1).digest()).digest()
    return bytes(a ^ b for a, b in zip(s1, h))


def login(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    _, hs = read_packet(s)
    p = hs.index(b"\0", 1) + 1 + 4
    scramble = hs[p:p + 8]
    p += 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10
    scramble += hs[p:p + 12]
    auth = native(b"app", scramble)
    send_packet(s, 1, struct.pack("<IIB23x", CAPS, 1 << 24, 45) + b"app\0" +
                bytes([len(auth)]) + auth + b"mysql_native_password\0")
    _, pkt = read_packet(s)
    if pkt[:1] == b"\xfe":  # switched (default_auth_plugin)
        send_packet(s, 3, native(b"app", scramble))
        _, pkt = read_packet(s)
    check(pkt[:1] == b"\x00", "app logs in by hand")
    return s, scramble


def current_user(s):
    send_packet(s, 0, b"\x03SELECT CURRENT_USER()")
    row = None
    while True:
        _, pkt = read_packet(s)
        if pkt[:1] == b"\xff":
            return "ERR %d" % struct.unpack("<H", pkt[1:3])[0]
        if pkt[:1] == b"\xfe" and len(pkt) < 9 and row is not None:
            return row
        if pkt[:1] not in (b"\x01", b"\x03", b"\xfe") and row is None and pkt[0] < 0xfb:
            row = pkt[1:1 + pkt[0]].decode()


def main():
    port = int(sys.argv[1])
    s, scramble = login(port)
    cases = [
        ("a bare 0x11", b"\x11", 1835),
        ("a user without its NUL", b"\x11app", 1835),
        ("an auth length past the end", b"\x11app\0" + bytes([200]) + b"xx", 1835),
        ("a 300-byte user name", b"\x11" + b"u" * 300 + b"\0\0\0", 1835),
        ("an unknown user", b"\x11nosuch\0" + bytes([20]) + os.urandom(20) + b"\0", 1045),
        ("app with a wrong reply", b"\x11app\0" + bytes([20]) + os.urandom(20) + b"t\0", 1045),
    ]
    for what, payload, code in cases:
        send_packet(s, 0, payload)
        try:
            _, pkt = read_packet(s)
        except (EOFError, OSError) as e:
            check(False, "%s: closed without ERR (%r)" % (what, e))
            return
        if pkt[:1] == b"\xfe":  # switched to the user's plugin: answer garbage
            send_packet(s, 3, os.urandom(32))
            _, pkt = read_packet(s)
            if pkt == b"\x01\x04":  # caching_sha2_password asks for the password
                send_packet(s, 5, b"x" * 5)
                _, pkt = read_packet(s)
        got = struct.unpack("<H", pkt[1:3])[0] if pkt[:1] == b"\xff" else None
        check(got == code, "COM_CHANGE_USER with %s: ERR %d (got %r)" % (what, code, pkt[:30]))
        cu = current_user(s)
        check(cu == "app@%", "the session goes on as app (%s)" % cu)
    s.close()


if __name__ == "__main__":
    main()
    sys.exit(exit_status())
