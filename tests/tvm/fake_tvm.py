"""A protocol-level TVM tracker client and RPC server, written for the tests
from the protocol description (docs/tvm-tracker.md, "TVM's protocol"), with
the standard library only: what kernelfarm's TVM port
(tracker/tvm/) must serve as TVM's own tracker would.

* TrackerConn: a tracker connection (the magic, then int32-length JSON frames).
* FakeRpcServer: TVM's rpc_server in tracker mode (docs/tvm-tracker.md §3): UPDATE_INFO,
  PUT with a fresh match key, GET_PENDING_MATCHKEYS every poll period while
  it waits, a new key at the 4th poll out, the client handshake checked against
  its key (MISMATCH otherwise), one session at a time, a new PUT after each.
* rpc_connect: a TVM client's connect() handshake (docs/tvm-tracker.md §4).
* text_summary: query_rpc_tracker's output (docs/tvm-tracker.md §4, v0.18).
"""

import json
import random
import select
import socket
import struct
import threading
import time

TRACKER_MAGIC = 0x2F271
RPC_MAGIC = 0xFF271
RPC_CODE_SUCCESS = RPC_MAGIC + 0
RPC_CODE_MISMATCH = RPC_MAGIC + 2

FAIL, SUCCESS, PING, STOP, PUT, REQUEST, UPDATE_INFO, SUMMARY, GET_PENDING_MATCHKEYS = -1, 0, 1, 2, 3, 4, 5, 6, 7


def recv_exact(sock, n):
    """n bytes, or EOFError when the peer closes first."""
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("connection closed after %d of %d bytes" % (len(data), n))
        data += chunk
    return data


def send_frame(sock, value):
    body = json.dumps(value).encode("utf-8")
    sock.sendall(struct.pack("<i", len(body)) + body)


def recv_frame(sock):
    (n,) = struct.unpack("<i", recv_exact(sock, 4))
    return json.loads(recv_exact(sock, n).decode("utf-8"))


class TrackerConn:
    """One connection to a tracker, after the magic exchange."""

    def __init__(self, host, port, timeout=30.0, source=None):
        self.sock = socket.create_connection((host, port), timeout=timeout, source_address=(source, 0) if source else None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(struct.pack("<i", TRACKER_MAGIC))
        (magic,) = struct.unpack("<i", recv_exact(self.sock, 4))
        if magic != TRACKER_MAGIC:
            raise RuntimeError("%s:%d is not an RPC tracker (answered 0x%x)" % (host, port, magic))

    def call(self, request):
        send_frame(self.sock, request)
        return recv_frame(self.sock)

    def request(self, key, priority=1, user=""):
        """REQUEST: the reply, [0, [host, port, matchkey]] or [-1, reason]; blocks until it comes."""
        return self.call([REQUEST, key, user, priority])

    def send_request(self, key, priority=1, user=""):
        send_frame(self.sock, [REQUEST, key, user, priority])

    def recv(self):
        return recv_frame(self.sock)

    def summary(self):
        reply = self.call([SUMMARY])
        if reply[0] != SUCCESS:
            raise RuntimeError("Invalid return value %s" % (reply,))
        return reply[1]

    def close(self):
        self.sock.close()


def rpc_connect(host, port, matchkey, timeout=10.0):
    """A TVM client's handshake with an RPC server: the socket of the session, or RuntimeError on a refusal."""
    sock = socket.create_connection((host, port), timeout=timeout)
    key = ("client:" + matchkey).encode("utf-8")
    sock.sendall(struct.pack("<i", RPC_MAGIC) + struct.pack("<i", len(key)) + key)
    (code,) = struct.unpack("<i", recv_exact(sock, 4))
    if code == RPC_CODE_MISMATCH:
        sock.close()
        raise RuntimeError("cannot find server that matches key %s" % matchkey)
    if code != RPC_CODE_SUCCESS:
        sock.close()
        raise RuntimeError("%s:%d is not TVM RPC server" % (host, port))
    (n,) = struct.unpack("<i", recv_exact(sock, 4))
    remote_key = recv_exact(sock, n).decode("utf-8")
    return sock, remote_key


class FakeRpcServer:
    """TVM's rpc_server --tracker HOST:PORT --key KEY, at the protocol level, in a thread.

    A session is a connection whose handshake carried the current match key;
    it lasts until the client closes it (the server reads until EOF). Then
    the server puts itself back with a fresh key, as TVM's does.
    """

    def __init__(self, tracker, key, poll_s=2.0, custom_addr=None, send_addr=True):
        self.tracker = tracker
        self.key = key
        self.poll_s = poll_s
        self.custom_addr = custom_addr
        self.send_addr = send_addr
        self.listen = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listen.bind(("127.0.0.1", 0))
        self.listen.listen(1)
        self.port = self.listen.getsockname()[1]
        self.matchkey = None
        self.sessions = []  # the client keys of the sessions served, in order
        self.mismatches = 0
        self.dropped = 0  # openings without the RPC magic: dropped unanswered and unlogged, as TVM's server does
        self.misses = 0  # polls in a row that no longer listed its key; at 4 it gives the key up
        self.puts = 0
        self.frozen = threading.Event()
        self.stopped = threading.Event()
        self.error = None
        self.conn = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _new_key(self, used):
        while True:
            k = "%s:%s" % (self.key, random.random())
            if k not in used:
                return k

    def _put(self, used):
        self.matchkey = self._new_key(used)
        used.add(self.matchkey)
        send_frame(self.conn, [PUT, self.key, [self.port, self.matchkey], self.custom_addr])
        reply = recv_frame(self.conn)
        if reply != SUCCESS:
            raise RuntimeError("PUT answered %r" % (reply,))
        self.puts += 1

    def _run(self):
        try:
            self.conn = TrackerConn(*self.tracker).sock
            info = {"key": "server:" + self.key}
            if self.send_addr:
                info["addr"] = [self.custom_addr, self.port]
            send_frame(self.conn, [UPDATE_INFO, info])
            reply = recv_frame(self.conn)
            if reply != SUCCESS:
                raise RuntimeError("UPDATE_INFO answered %r" % (reply,))
            used = set()
            while not self.stopped.is_set():
                self._put(used)
                self.misses = 0
                while not self.stopped.is_set():
                    if self.frozen.is_set():
                        time.sleep(0.05)  # SIGSTOP, as the tracker sees it: no poll, no accept
                        continue
                    ready, _, _ = select.select([self.listen], [], [], self.poll_s)
                    if not ready:
                        send_frame(self.conn, [GET_PENDING_MATCHKEYS])
                        pending = recv_frame(self.conn)
                        self.misses = 0 if self.matchkey in pending else self.misses + 1
                        # TVM's rule (misses * 2 s > 4 s + 2 s: its ping period and unmatch timeout) in polls:
                        # the 4th poll that no longer lists the key gives it up.
                        if self.misses >= 4:
                            self._put(used)
                            self.misses = 0
                        continue
                    if self._accept():
                        break
        except Exception as err:  # noqa: BLE001 — kept for the test to assert on
            if not self.stopped.is_set():
                self.error = err

    def _accept(self):
        """One connection: True when a session was served (then a new PUT follows)."""
        client, _ = self.listen.accept()
        with client:
            client.settimeout(10)
            (magic,) = struct.unpack("<i", recv_exact(client, 4))
            if magic != RPC_MAGIC:
                self.dropped += 1
                return False
            (n,) = struct.unpack("<i", recv_exact(client, 4))
            words = recv_exact(client, n).decode("utf-8").split()
            if not words or words[0] != "client:" + self.matchkey:
                client.sendall(struct.pack("<i", RPC_CODE_MISMATCH))
                self.mismatches += 1
                return False
            server_key = ("server:" + self.key).encode("utf-8")
            client.sendall(struct.pack("<i", RPC_CODE_SUCCESS) + struct.pack("<i", len(server_key)) + server_key)
            self.sessions.append(words[0])
            client.settimeout(None)
            while client.recv(4096):
                pass
            return True

    def freeze(self):
        self.frozen.set()

    def stop(self):
        self.stopped.set()
        for s in (self.conn, self.listen):
            if not s:
                continue
            # shutdown() first: a close() alone leaves a socket that the server thread is blocked on open (no FIN).
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def text_summary(data):
    """The block query_rpc_tracker prints for a SUMMARY reply (docs/tvm-tracker.md §4, v0.18: addresses right-aligned)."""
    total = {}
    out = "Server List\n"
    out += "------------------------------\n"
    out += "server-address           key\n"
    out += "------------------------------\n"
    for item in sorted(data["server_info"], key=lambda x: x["key"]):
        out += "%21s    " % ":".join(map(str, item["addr"]))
        out += item["key"] + "\n"
        k = item["key"].split(":")[1]
        total[k] = total.get(k, 0) + 1
    out += "------------------------------\n"
    out += "\n"
    keys = sorted(data["queue_info"].keys())
    width = max(len(k) for k in keys) if keys else 0
    out += "Queue Status\n"
    title = "%s   total  free  pending\n" % "key".ljust(width)
    line = "-" * len(title) + "\n"
    out += line + title + line
    for k in keys:
        t = total.get(k, 0)
        free, pending = data["queue_info"][k]["free"], data["queue_info"][k]["pending"]
        if t or pending:
            out += "%s   %s  %s  %s\n" % (k.ljust(width), str(t).ljust(5), str(free).ljust(4), str(pending).ljust(7))
    out += line
    return out


def query_rpc_tracker_output(host, port):
    """What `python -m tvm.exec.query_rpc_tracker --host HOST --port PORT` prints."""
    conn = TrackerConn(host, port)
    try:
        block = text_summary(conn.summary())
    finally:
        conn.close()
    return "Tracker address %s:%d\n\n%s\n" % (host, port, block)
