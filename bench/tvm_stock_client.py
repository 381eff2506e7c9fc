"""Apache TVM's own client for `npm run bench -- tvm-stock` (bench/tvm-stock.ts):
stock `tvm.rpc.connect_tracker(...).request(key)`, timed here. The only change
ever made to TVM is the TCP_NODELAY cells' option on the client's tracker
sockets (see `_connect`), to show where the stock client's time goes.

    python3 bench/tvm_stock_client.py latency HOST PORT KEY WARMUP RUNS
    python3 bench/tvm_stock_client.py loop HOST PORT KEY SERVERS SECONDS

`latency` waits, untimed, until KEY's server is free before each request,
then times request(KEY) up to the returned session having answered one
remote call, in four cells: a kept TrackerSession (TVM's usual) and a fresh
connect_tracker per request (autotvm's habit), each with the stock client and
with TCP_NODELAY. It prints one JSON line: each cell's milliseconds.

`loop` waits until KEY's SERVERS servers are free, prints "ready", waits for a
line on stdin (so that the orchestrator starts every loop at once), then for
SECONDS requests KEY, makes one call and closes the session, over and over on
one kept TrackerSession. It prints one JSON line: sessions done and seconds.
"""

import json
import socket
import sys
import time

from tvm import rpc
from tvm.rpc import base

_stock_connect_with_retry = base.connect_with_retry

#: Whether the client's new tracker sockets get TCP_NODELAY (the patched cells).
NODELAY = False


def _connect(addr, *args, **kwargs):
    # TrackerSession looks base.connect_with_retry up at each connect, so this
    # wrapper is the only way its socket is made; the session's own socket is
    # TVM's C++ runtime's, untouched.
    sock = _stock_connect_with_retry(addr, *args, **kwargs)
    if NODELAY:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


base.connect_with_retry = _connect


class FreeWatch:
    """Polls the tracker's SUMMARY on a connection of its own, untimed, with
    TCP_NODELAY so that polling does not wait 44 ms per reply."""

    def __init__(self, host, port):
        self._tracker = rpc.connect_tracker(host, port)
        self._tracker._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def wait(self, key, n, timeout_s=60.0):
        deadline = time.monotonic() + timeout_s
        while True:
            free = self._tracker.summary()["queue_info"].get(key, {}).get("free", 0)
            if free >= n:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{n} server(s) of key {key!r} not free within {timeout_s:g} s (free: {free})")
            time.sleep(0.001)


def one_session(tracker, key):
    """request(key) → one remote call; the session closes when it is dropped, on return."""
    session = tracker.request(key, session_timeout=60)
    if not session.cpu(0).exist:
        raise RuntimeError("the remote CPU device does not exist")


def timed_request(host, port, key, kept):
    """Milliseconds from request(key) (after connect_tracker for a fresh connection) to one remote call done."""
    if kept is not None:
        t0 = time.perf_counter()
        one_session(kept, key)
        return (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    tracker = rpc.connect_tracker(host, port)
    one_session(tracker, key)
    ms = (time.perf_counter() - t0) * 1e3
    tracker.close()
    return ms


def latency(host, port, key, warmup, runs):
    global NODELAY
    watch = FreeWatch(host, port)
    cells = {}
    for nodelay in (False, True):
        NODELAY = nodelay
        for fresh in (False, True):
            kept = None if fresh else rpc.connect_tracker(host, port)
            times = []
            for i in range(warmup + runs):
                watch.wait(key, 1)
                ms = timed_request(host, port, key, kept)
                if i >= warmup:
                    times.append(ms)
            if kept is not None:
                kept.close()
            cells[("fresh" if fresh else "kept") + ("_nodelay" if nodelay else "")] = times
    print(json.dumps(cells), flush=True)


def loop(host, port, key, servers, seconds):
    FreeWatch(host, port).wait(key, servers)
    tracker = rpc.connect_tracker(host, port)
    print("ready", flush=True)
    sys.stdin.readline()
    t0 = time.perf_counter()
    deadline = t0 + seconds
    sessions = 0
    while time.perf_counter() < deadline:
        one_session(tracker, key)
        sessions += 1
    print(json.dumps({"sessions": sessions, "seconds": time.perf_counter() - t0}), flush=True)


def main(argv):
    mode, host, port, key = argv[1], argv[2], int(argv[3]), argv[4]
    if mode == "latency":
        latency(host, port, key, int(argv[5]), int(argv[6]))
    elif mode == "loop":
        loop(host, port, key, int(argv[5]), float(argv[6]))
    else:
        raise SystemExit(f"unknown mode {mode!r}: latency or loop")


if __name__ == "__main__":
    main(sys.argv)
