#!/usr/bin/env python3
# mysql8_backend.py - a scripted MySQL 8.4 server, enough to drive the 6450
# proxy and the probe where no MySQL server can be installed. It speaks what
# the MySQL manual documents (client/server protocol, caching_sha2_password,
# session-state tracking of GTIDs), not what a real server does in every
# corner:
# - handshake v10, version 8.4.x, CLIENT_SESSION_TRACK, CLIENT_PLUGIN_AUTH,
#   CLIENT_DEPRECATE_EOF, CLIENT_SSL when --tls-cert is given; default plugin
#   caching_sha2_password;
# - accounts (--user NAME:PASSWORD[:PLUGIN], plugin caching_sha2_password by
#   default): a client answering with another plugin than the account's gets
#   an AuthSwitchRequest, as MySQL sends; caching_sha2_password does fast
#   authentication against this server's own cache (0x01 0x03, then OK),
#   else full authentication (0x01 0x04): the password in clear over TLS, or
#   without TLS the RSA exchange (0x02 asks for the public key, 0x01 + PEM
#   answers, the password XOR nonce comes RSA-OAEP encrypted). SIGUSR1 empties
#   the cache (as FLUSH PRIVILEGES does). --trust USER: any answer logs in
#   (the probe's monitoring user, whatever plugin its library picks);
#   SIGUSR2 closes every connection but the trusted users' (clients log in
#   anew, the probe's connection stays);
# - statements: SELECT 1, @@server_id, @@port, @@version, @@version_comment,
#   @@read_only, @@super_read_only, LAST_INSERT_ID(),
#   WAIT_FOR_EXECUTED_GTID_SET(...) (answers 0), SHOW REPLICA STATUS (one row
#   with --replica-of), SET (session_track_gtids is followed), INSERT / UPDATE
#   / DELETE / REPLACE / CREATE / DROP (each makes the next GTID uuid:n and an
#   OK that carries it with session_track_gtids = OWN_GTID), the probe's and
#   the routine table's information_schema reads (no rows); other statements
#   get ERR 1064 as an unknown syntax would;
# - every login's path and every statement go to --log as JSON lines:
#   {"ev": "auth", "user": ..., "path": "fast" | "full-tls" | "full-rsa" |
#   "native" | "trusted" | "empty" | "denied" | "switch"} and
#   {"ev": "query", "sql": ..., "conn": N}.
import argparse
import hashlib
import json
import os
import re
import signal
import socket
import ssl
import struct
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mysqlwire as mw  # noqa: E402

from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import padding, rsa  # noqa: E402

SHA2 = "caching_sha2_password"
NATIVE = "mysql_native_password"

CAP_LONG_PASSWORD = 1
CAP_FOUND_ROWS = 2
CAP_LONG_FLAG = 4
CAP_CONNECT_WITH_DB = 8
CAP_LOCAL_FILES = 0x80
CAP_PROTOCOL_41 = 0x200
CAP_TRANSACTIONS = 0x2000
CAP_MULTI_STATEMENTS = 1 << 16
CAP_MULTI_RESULTS = 1 << 17
CAP_PS_MULTI_RESULTS = 1 << 18
CAP_CONNECT_ATTRS = 1 << 20
CAP_PLUGIN_AUTH_LENENC = 1 << 21
CAP_SESSION_TRACK = 1 << 23
CAP_DEPRECATE_EOF = 1 << 24

SST_AUTOCOMMIT = 2
SST_STATE_CHANGED = 0x4000
TRACK_GTIDS = 3


def lenenc_int(n):
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + struct.pack("<H", n)
    if n < 1 << 24:
        return b"\xfd" + struct.pack("<I", n)[:3]
    return b"\xfe" + struct.pack("<Q", n)


def lenenc_str(s):
    if isinstance(s, str):
        s = s.encode()
    return lenenc_int(len(s)) + s


def read_lenenc(p, i):
    c = p[i]
    if c < 251:
        return c, i + 1
    if c == 0xFC:
        return struct.unpack_from("<H", p, i + 1)[0], i + 3
    if c == 0xFD:
        return p[i + 1] | p[i + 2] << 8 | p[i + 3] << 16, i + 4
    return struct.unpack_from("<Q", p, i + 1)[0], i + 9


def sha256(*parts):
    h = hashlib.sha256()
    for x in parts:
        h.update(x)
    return h.digest()


def xor(a, b):
    return bytes(x ^ y for x, y in zip(a, b))


class Server:
    def __init__(self, args):
        self.args = args
        self.accounts = {}
        for u in args.user:
            f = u.split(":")
            self.accounts[f[0]] = (f[1], f[2] if len(f) > 2 else SHA2)
        self.cache = {}  # user -> SHA256(SHA256(password))
        self.lock = threading.Lock()
        self.gtid_n = 0
        self.conn_id = 100
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.pem = self.key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        self.tls = None
        if args.tls_cert:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(args.tls_cert, args.tls_key)
        self.logf = open(args.log, "a", buffering=1)
        self.conns = set()

    def log(self, **ev):
        with self.lock:
            self.logf.write(json.dumps(ev) + "\n")

    def flush_cache(self, *_):
        with self.lock:
            self.cache.clear()
        self.log(ev="cache", what="flushed")

    def drop_all(self, *_):
        with self.lock:
            socks = [c.sock for c in self.conns if c.user not in self.args.trust]
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.log(ev="dropped", n=len(socks))

    def next_gtid(self):
        with self.lock:
            self.gtid_n += 1
            return "%s:%d" % (self.args.uuid, self.gtid_n)


class Conn:
    def __init__(self, srv, sock):
        self.srv = srv
        self.sock = sock
        self.seq = 0
        self.caps = 0
        self.track_gtids = False
        self.tls = False
        self.user = None
        with srv.lock:
            srv.conn_id += 1
            self.id = srv.conn_id

    def send(self, payload):
        mw.send_packet(self.sock, self.seq, payload)
        self.seq = (self.seq + 1) & 0xFF

    def recv(self):
        seq, p = mw.read_packet(self.sock)
        self.seq = (seq + 1) & 0xFF
        return p

    def ok(self, affected=0, gtid=None):
        status = SST_AUTOCOMMIT
        p = b"\x00" + lenenc_int(affected) + lenenc_int(0)
        state = b""
        if gtid and self.track_gtids and self.caps & CAP_SESSION_TRACK:
            status |= SST_STATE_CHANGED
            entry = b"\x00" + lenenc_str(gtid)
            state = bytes([TRACK_GTIDS]) + lenenc_str(entry)
        p += struct.pack("<HH", status, 0)
        if self.caps & CAP_SESSION_TRACK:
            p += lenenc_str(b"")
            if state:
                p += lenenc_str(state)
        self.send(p)

    def err(self, code, state, msg):
        self.send(b"\xff" + struct.pack("<H", code) + b"#" + state.encode() + msg.encode())

    def eof(self):
        self.send(b"\xfe" + struct.pack("<HH", 0, SST_AUTOCOMMIT))

    def result(self, names, rows):
        self.send(lenenc_int(len(names)))
        for n in names:
            self.send(
                lenenc_str("def") + lenenc_str("") + lenenc_str("") + lenenc_str("")
                + lenenc_str(n) + lenenc_str(n) + b"\x0c" + struct.pack("<HIBHB", 33, 255, 253, 0, 0)
                + b"\x00\x00"
            )
        if not self.caps & CAP_DEPRECATE_EOF:
            self.eof()
        for r in rows:
            self.send(b"".join(b"\xfb" if v is None else lenenc_str(str(v)) for v in r))
        if self.caps & CAP_DEPRECATE_EOF:
            self.send(b"\xfe" + lenenc_int(0) + lenenc_int(0) + struct.pack("<HH", SST_AUTOCOMMIT, 0))
        else:
            self.eof()

    # ---- login ----
    def handshake(self, nonce):
        a = self.srv.args
        caps = (CAP_LONG_PASSWORD | CAP_FOUND_ROWS | CAP_LONG_FLAG | CAP_CONNECT_WITH_DB
                | CAP_LOCAL_FILES | CAP_PROTOCOL_41 | CAP_TRANSACTIONS | mw.CAP_SECURE_CONNECTION
                | CAP_MULTI_STATEMENTS | CAP_MULTI_RESULTS | CAP_PS_MULTI_RESULTS
                | mw.CAP_PLUGIN_AUTH | CAP_CONNECT_ATTRS | CAP_PLUGIN_AUTH_LENENC
                | CAP_SESSION_TRACK | CAP_DEPRECATE_EOF)
        if self.srv.tls:
            caps |= mw.CAP_SSL
        p = (b"\x0a" + a.version.encode() + b"\x00" + struct.pack("<I", self.id) + nonce[:8]
             + b"\x00" + struct.pack("<HBHH", caps & 0xFFFF, 255, SST_AUTOCOMMIT, caps >> 16)
             + bytes([21]) + b"\x00" * 10 + nonce[8:] + b"\x00" + SHA2.encode() + b"\x00")
        self.send(p)
        return caps

    def parse_response(self, p):
        caps = struct.unpack_from("<I", p, 0)[0]
        i = 32
        j = p.index(b"\x00", i)
        user = p[i:j].decode()
        i = j + 1
        if caps & CAP_PLUGIN_AUTH_LENENC:
            n, i = read_lenenc(p, i)
        else:
            n, i = p[i], i + 1
        auth = p[i:i + n]
        i += n
        if caps & CAP_CONNECT_WITH_DB and i < len(p):
            j = p.index(b"\x00", i)
            i = j + 1
        plugin = NATIVE
        if caps & mw.CAP_PLUGIN_AUTH and i < len(p):
            j = p.index(b"\x00", i) if b"\x00" in p[i:] else len(p)
            plugin = p[i:j].decode()
        return caps, user, auth, plugin

    def login(self):
        srv = self.srv
        nonce = bytes(b % 94 + 33 for b in os.urandom(20))  # printable, as MySQL's
        self.handshake(nonce)
        p = self.recv()
        if len(p) == 32 and struct.unpack_from("<I", p, 0)[0] & mw.CAP_SSL and srv.tls:
            self.sock = srv.tls.wrap_socket(self.sock, server_side=True)
            self.tls = True
            p = self.recv()
        self.caps, user, auth, plugin = self.parse_response(p)
        self.user = user
        if user in srv.args.trust:
            srv.log(ev="auth", user=user, path="trusted", plugin=plugin)
            if plugin == SHA2 and auth:
                self.send(b"\x01\x03")  # fast authentication, as if cached
            self.ok()
            return True
        acct = srv.accounts.get(user)
        want = acct[1] if acct else SHA2
        if plugin != want:
            srv.log(ev="auth", user=user, path="switch", plugin=plugin, to=want)
            self.send(b"\xfe" + want.encode() + b"\x00" + nonce + b"\x00")
            auth = self.recv()
        pw = acct[0].encode() if acct else None
        if want == NATIVE:
            s1 = hashlib.sha1(pw or b"").digest()
            good = acct and auth == xor(s1, hashlib.sha1(nonce + hashlib.sha1(s1).digest()).digest())
            return self.done(user, good, "native", acct)
        if len(auth) == 0 or auth == b"\x00":
            return self.done(user, acct and pw == b"", "empty", acct)
        with srv.lock:
            d2 = srv.cache.get(user)
        if d2 is not None:
            s1 = xor(auth, sha256(d2, nonce))
            if sha256(s1) == d2:
                self.send(b"\x01\x03")
                return self.done(user, True, "fast", acct)
        self.send(b"\x01\x04")
        p = self.recv()
        path = "full-tls"
        if not self.tls:
            path = "full-rsa"
            if p == b"\x02":
                self.send(b"\x01" + srv.pem)
                p = self.recv()
            try:
                clear = srv.key.decrypt(p, padding.OAEP(mgf=padding.MGF1(hashes.SHA1()),
                                                       algorithm=hashes.SHA1(), label=None))
            except ValueError:
                srv.log(ev="auth", user=user, path="denied", why="not RSA-OAEP with our key")
                self.err(1045, "28000", "Access denied for user '%s' (using password: YES)" % user)
                return False
            p = xor(clear, (nonce * 64)[:len(clear)])
        given = p.split(b"\x00")[0]
        good = acct is not None and given == pw
        if good:
            with srv.lock:
                srv.cache[user] = sha256(sha256(pw))
        return self.done(user, good, path, acct)

    def done(self, user, good, path, acct):
        if not good:
            self.srv.log(ev="auth", user=user, path="denied", tried=path)
            self.err(1045, "28000", "Access denied for user '%s' (using password: YES)" % user)
            return False
        self.srv.log(ev="auth", user=user, path=path)
        self.ok()
        return True

    # ---- statements ----
    def query(self, sql):
        srv, a = self.srv, self.srv.args
        self.srv.log(ev="query", sql=sql, conn=self.id)
        q = sql.strip().rstrip(";").strip()
        ql = q.lower()
        var = {"@@server_id": a.server_id, "@@port": a.port, "@@version": a.version,
               "@@version_comment": "MySQL Community Server - GPL (mysteer scripted)",
               "@@read_only": int(a.replica_of is not None),
               "@@super_read_only": int(a.replica_of is not None),
               "last_insert_id()": 0, "1": 1, "connection_id()": self.id,
               "@@global.gtid_executed": "%s:1-%d" % (a.uuid, srv.gtid_n) if srv.gtid_n else ""}
        m = re.match(r"select\s+(.*?)(\s+limit\s+1)?$", ql, re.S)
        if m and " from " not in ql:
            items = [x.strip() for x in m.group(1).split(",")]
            if all(x in var for x in items):
                self.result(items, [[var[x] for x in items]])
                return
            if ql.startswith("select wait_for_executed_gtid_set("):
                self.result(["w"], [[0]])
                return
        if ql.startswith("select") and "information_schema" in ql:
            cols = re.match(r"select\s+(.*?)\s+from", ql, re.S).group(1).split(",")
            rows = [["0"] + [None] * (len(cols) - 1)] if "count(" in cols[0] else []
            self.result([c.strip() for c in cols], rows)
            return
        if ql == "show replica status":
            names = ["Replica_IO_State", "Source_Host", "Source_Port", "Replica_IO_Running",
                     "Replica_SQL_Running", "Seconds_Behind_Source", "Executed_Gtid_Set"]
            rows = []
            if a.replica_of:
                h, _, port = a.replica_of.partition(":")
                rows = [["Waiting for source to send event", h, port, "Yes", "Yes", 0, ""]]
            self.result(names, rows)
            return
        if ql.startswith("set "):
            m = re.search(r"session_track_gtids\s*=\s*'?(\w+)", ql)
            if m:
                self.track_gtids = m.group(1) in ("own_gtid", "all_gtids")
            self.ok()
            return
        if re.match(r"(insert|update|delete|replace|create|drop)\b", ql):
            if a.replica_of:
                self.err(1290, "HY000", "The MySQL server is running with the --super-read-only "
                         "option so it cannot execute this statement")
                return
            self.ok(1, srv.next_gtid())
            return
        if ql in ("begin", "commit", "rollback", "start transaction", "do 1"):
            self.ok()
            return
        self.err(1064, "42000", "You have an error in your SQL syntax (scripted MySQL 8.4: "
                 "statement not known here) near '%s'" % q[:60])

    def serve(self):
        if not self.login():
            return
        while True:
            self.seq = 0
            try:
                p = self.recv()
            except (EOFError, OSError):
                return
            cmd = p[:1]
            if cmd == b"\x01":
                return
            if cmd == b"\x03":
                self.query(p[1:].decode(errors="replace"))
            elif cmd in (b"\x0e", b"\x02"):
                self.ok()
            elif cmd == b"\x1f":
                self.track_gtids = False
                self.srv.log(ev="reset", conn=self.id)
                self.ok()
            else:
                self.srv.log(ev="unknown-command", cmd=p[:1].hex(), conn=self.id)
                self.err(1047, "08S01", "Unknown command (scripted MySQL 8.4)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--log", required=True)
    ap.add_argument("--uuid", required=True)
    ap.add_argument("--server-id", type=int, default=1)
    ap.add_argument("--version", default="8.4.3")
    ap.add_argument("--replica-of", help="HOST:PORT: a replica (read-only, SHOW REPLICA STATUS)")
    ap.add_argument("--user", action="append", default=[], help="NAME:PASSWORD[:PLUGIN]")
    ap.add_argument("--trust", action="append", default=[], help="a user any answer logs in")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    args = ap.parse_args()
    srv = Server(args)
    signal.signal(signal.SIGUSR1, srv.flush_cache)
    signal.signal(signal.SIGUSR2, srv.drop_all)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((args.host, args.port))
    ls.listen(64)
    srv.log(ev="listening", port=args.port)

    def run(sock):
        c = Conn(srv, sock)
        with srv.lock:
            srv.conns.add(c)
        try:
            c.serve()
        except (EOFError, OSError, ValueError, IndexError, struct.error) as e:
            srv.log(ev="conn-error", conn=c.id, error=str(e))
        finally:
            with srv.lock:
                srv.conns.discard(c)
            try:
                c.sock.close()
            except OSError:
                pass

    while True:
        try:
            s, _ = ls.accept()
        except InterruptedError:
            continue
        threading.Thread(target=run, args=(s,), daemon=True).start()


if __name__ == "__main__":
    main()
