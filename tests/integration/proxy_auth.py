#!/usr/bin/python3
# proxy_auth.py - caching_sha2_password clients of the 6450 proxy for
# proxy_auth.sh:
#
#   proxy_auth.py pymysql PORT CA PUBKEY   PyMySQL: without TLS (it asks for
#                                          the RSA public key), with the key
#                                          given (server_public_key), over
#                                          TLS, and a wrong password (1045)
#   proxy_auth.py hostile PORT             by hand: malformed packets in each
#                                          step of caching_sha2_password, each
#                                          a clean ERR; then a good RSA login
#                                          made by hand
#
# Prints "ok - ..." / "not ok - ..." lines; exits 1 when one failed.
import hashlib
import os
import socket
import struct
import sys

from mysqlwire import (CAP_LONG_PASSWORD, CAP_PLUGIN_AUTH, CAP_PROTOCOL_41, CAP_SECURE_CONNECTION,
                      CAP_SSL, check, exit_status, read_packet, recv_exact, send_packet)


# ---- PyMySQL ----------------------------------------------------------------


def pymysql_cases(port, ca, pubkey):
    import pymysql

    def login(what, **kw):
        args = dict(host="127.0.0.1", port=port, user="app", password="app",
                    connect_timeout=10, read_timeout=20)
        args.update(kw)
        try:
            c = pymysql.connect(**args)
            with c.cursor() as cur:
                cur.execute("SELECT CURRENT_USER(), @@port")
                row = cur.fetchone()
            plugin = c._auth_plugin_name
            c.close()
            print("# %s: %s, plugin %s" % (what, row, plugin))
            return row, plugin
        except Exception as e:  # noqa: BLE001 - reported
            print("# %s: %r" % (what, e))
            return e, None

    row, plugin = login("PyMySQL without TLS, RSA key asked for")
    check(isinstance(row, tuple) and row[0].startswith("app@"),
          "PyMySQL logs in without TLS with caching_sha2_password (RSA key from the proxy)")
    check(plugin == "caching_sha2_password", "PyMySQL used caching_sha2_password")

    with open(pubkey, "rb") as f:
        key = f.read()
    row, _ = login("PyMySQL with server_public_key", server_public_key=key)
    check(isinstance(row, tuple), "PyMySQL with the public key given logs in")

    row, _ = login("PyMySQL over TLS", ssl_ca=ca, ssl_verify_cert=True,
                   ssl_verify_identity=True)
    check(isinstance(row, tuple), "PyMySQL over TLS logs in")

    e, _ = login("PyMySQL wrong password", password="wrong")
    check(isinstance(e, pymysql.err.OperationalError) and e.args[0] == 1045,
          "PyMySQL with a wrong password gets ERR 1045")
    e, _ = login("PyMySQL wrong password over TLS", password="wrong", ssl_ca=ca,
                 ssl_verify_cert=True)
    check(isinstance(e, pymysql.err.OperationalError) and e.args[0] == 1045,
          "PyMySQL with a wrong password over TLS gets ERR 1045")


# ---- by hand ------------------------------------------------------------------

CAPS = CAP_LONG_PASSWORD | CAP_PROTOCOL_41 | CAP_SECURE_CONNECTION | CAP_PLUGIN_AUTH


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    _, hs = read_packet(s)
    # v10: version NUL, id(4), scramble 8, filler, caps, charset, status,
    # caps hi, auth len, reserved 10, scramble rest, plugin
    p = hs.index(b"\0", 1) + 1 + 4
    scramble = hs[p:p + 8]
    p += 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10
    scramble += hs[p:p + 12]
    plugin = hs[p + 13:].rstrip(b"\0").decode()
    return s, scramble, plugin


def response(user, auth, plugin):
    return (struct.pack("<IIB23x", CAPS, 1 << 24, 45) + user.encode() + b"\0" +
            bytes([len(auth)]) + auth + plugin.encode() + b"\0")


def sha2_scramble(pw, scramble):
    d1 = hashlib.sha256(pw).digest()
    d2 = hashlib.sha256(d1).digest()
    h = hashlib.sha256(d2 + scramble).digest()
    return bytes(a ^ b for a, b in zip(d1, h))


def err_code(pkt):
    return struct.unpack("<H", pkt[1:3])[0] if pkt[:1] == b"\xff" else None


def to_full_auth(port, user="app"):
    """A connection in full authentication (after 0x01 0x04), or a reason."""
    s, scramble, plugin = connect(port)
    send_packet(s, 1, response(user, os.urandom(32), "caching_sha2_password"))
    seq, pkt = read_packet(s)
    return s, scramble, plugin, seq, pkt


def expect_err(s, what, code=1045):
    try:
        _, pkt = read_packet(s)
        got = err_code(pkt)
        check(got == code, "%s: ERR %s (got %r)" % (what, code, pkt[:40]))
    except (EOFError, OSError) as e:
        check(False, "%s: closed without ERR (%r)" % (what, e))
    finally:
        s.close()


def hostile(port):
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding

    s, scramble, plugin, seq, pkt = to_full_auth(port)
    check(plugin == "caching_sha2_password", "the handshake announces caching_sha2_password")
    check(seq == 2 and pkt == b"\x01\x04",
          "a wrong scramble reply: perform_full_authentication (0x01 0x04, seq 2)")
    send_packet(s, 3, b"\x07\x00garbage")
    expect_err(s, "a short garbage packet instead of the password")

    s, scramble, _, _, _ = to_full_auth(port)
    send_packet(s, 3, b"")
    expect_err(s, "an empty packet in full authentication")

    s, scramble, _, _, _ = to_full_auth(port)
    send_packet(s, 3, os.urandom(256))
    expect_err(s, "256 random bytes as the RSA-encrypted password")

    s, scramble, _, _, _ = to_full_auth(port)
    send_packet(s, 3, b"\x02")
    seq, pem = read_packet(s)
    check(seq == 4 and pem[:1] == b"\x01" and b"BEGIN PUBLIC KEY" in pem,
          "0x02 gets the PEM public key (AuthMoreData, seq 4)")
    send_packet(s, 5, b"\x02")
    expect_err(s, "asking for the key twice")

    s, scramble, _, _, _ = to_full_auth(port)
    send_packet(s, 3, b"\x02")
    _, pem = read_packet(s)
    send_packet(s, 5, b"x" * 70000)
    expect_err(s, "a 70000-byte packet as the encrypted password")

    # a handshake response cut short, and one with a huge auth length
    s, _, _ = connect(port)
    send_packet(s, 1, struct.pack("<I", CAPS)[:3])
    expect_err(s, "a cut handshake response", 1043)
    s, _, _ = connect(port)
    send_packet(s, 1, struct.pack("<IIB23x", CAPS, 1 << 24, 45) + b"app\0" + b"\xff" * 5)
    expect_err(s, "a handshake response with a bad auth length", 1043)

    # the RSA exchange done right by hand: wrong, then right password
    for pw, ok in ((b"wrong", False), (b"app", True)):
        s, scramble, _, _, _ = to_full_auth(port)
        send_packet(s, 3, b"\x02")
        _, pem = read_packet(s)
        key = serialization.load_pem_public_key(pem[1:])
        plain = bytes(b ^ scramble[i % len(scramble)] for i, b in enumerate(pw + b"\0"))
        enc = key.encrypt(plain, padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()),
                                              algorithm=hashes.SHA1(), label=None))
        send_packet(s, 5, enc)
        seq, pkt = read_packet(s)
        if ok:
            check(seq == 6 and pkt[:1] == b"\x00", "RSA by hand, right password: OK (seq 6)")
            # fast authentication now: the digest is cached
            s.close()
            s, scramble, _ = connect(port)
            send_packet(s, 1, response("app", sha2_scramble(b"app", scramble),
                                       "caching_sha2_password"))
            seq, pkt = read_packet(s)
            check(seq == 2 and pkt == b"\x01\x03", "then fast authentication: 0x01 0x03")
            seq, pkt = read_packet(s)
            check(seq == 3 and pkt[:1] == b"\x00", "and OK (seq 3)")
            # a wrong scramble for a cached user: full authentication, not a denial
            s.close()
            s, scramble, _ = connect(port)
            send_packet(s, 1, response("app", sha2_scramble(b"nope", scramble),
                                       "caching_sha2_password"))
            _, pkt = read_packet(s)
            check(pkt == b"\x01\x04", "a wrong scramble of a cached user: full authentication")
            # a client answering with mysql_native_password is switched
            s.close()
            s, scramble, _ = connect(port)
            send_packet(s, 1, response("app", os.urandom(20), "mysql_native_password"))
            seq, pkt = read_packet(s)
            check(seq == 2 and pkt == b"\xfecaching_sha2_password\0" + scramble + b"\0",
                  "a native reply: AuthSwitchRequest to caching_sha2_password, same scramble")
            send_packet(s, 3, sha2_scramble(b"app", scramble))
            seq, pkt = read_packet(s)
            check(seq == 4 and pkt == b"\x01\x03", "the switched client: fast authentication")
            seq, pkt = read_packet(s)
            check(seq == 5 and pkt[:1] == b"\x00", "and OK (seq 5)")
        else:
            check(err_code(pkt) == 1045, "RSA by hand, wrong password: ERR 1045")
        s.close()

    # figures only (no assertion): logins by hand, RSA full authentication
    # (reload-free: each one is full, the client does not use the cache)
    # against fast authentication from the cache
    import time

    def rsa_login():
        s, scramble, _, _, _ = to_full_auth(port)
        send_packet(s, 3, b"\x02")
        _, pem = read_packet(s)
        key = serialization.load_pem_public_key(pem[1:])
        plain = bytes(b ^ scramble[i % len(scramble)] for i, b in enumerate(b"app\0"))
        send_packet(s, 5, key.encrypt(plain, padding.OAEP(
            mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None)))
        _, pkt = read_packet(s)
        s.close()
        return pkt[:1] == b"\x00"

    def fast_login():
        s, scramble, _ = connect(port)
        send_packet(s, 1, response("app", sha2_scramble(b"app", scramble),
                                   "caching_sha2_password"))
        read_packet(s)
        _, pkt = read_packet(s)
        s.close()
        return pkt[:1] == b"\x00"

    for name, fn in (("RSA full authentication", rsa_login), ("fast authentication", fast_login)):
        t0 = time.monotonic()
        ok = sum(fn() for _ in range(20))
        ms = (time.monotonic() - t0) * 1000 / 20
        print("measured: 20 logins by hand, %s: %.2f ms each (%d OK)" % (name, ms, ok), flush=True)


def main():
    if sys.argv[1] == "pymysql":
        pymysql_cases(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "hostile":
        hostile(int(sys.argv[2]))
    sys.exit(exit_status())


if __name__ == "__main__":
    main()
