"""What answered where connect_tracker found no tracker's gRPC (host-sdk/wrong-port.ts):
the tracker's other ports answer too, in their own protocols — its HTTP side
(`--metrics-port`: /metrics, the live view) in HTTP/1.1, its TVM port
(`--tvm-port`) with TVM's tracker handshake. A user who copied the wrong port
from `kfarm tracker`'s output would otherwise be asked whether a tracker runs
there, which it does.
"""
from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Optional

#: TVM's RPC_TRACKER_MAGIC (tracker/tvm/wire.ts): a TVM tracker answers a client's with its own.
TVM_TRACKER_MAGIC = 0x2F271

_USE_GRPC_PORT = (
    'connect to the tracker\'s gRPC port instead: the one `kfarm tracker` prints as "listening on" (its --port, 9190 unless set)'
)


def wrong_port_hint(host: str, port: int, timeout_s: float = 1.0) -> Optional[str]:
    """The sentence that says what answered at host:port and which port to use, or None
    when it is neither a tracker's HTTP nor its TVM port (nothing answers, TLS, anything else)."""
    address = f"{host}:{port}"
    answers: dict[str, bytes] = {}
    # Both at once, each on its own connection: an HTTP server waits for a whole request line, a TVM tracker for its 4 bytes.
    probes = [
        threading.Thread(
            target=_exchange,
            args=(host, port, f"HEAD / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode(), 5, timeout_s, answers, "http"),
            daemon=True,
        ),
        threading.Thread(
            target=_exchange, args=(host, port, struct.pack("<i", TVM_TRACKER_MAGIC), 4, timeout_s, answers, "tvm"), daemon=True
        ),
    ]
    for t in probes:
        t.start()
    for t in probes:
        t.join(timeout_s + 1)
    if answers.get("http", b"")[:5] == b"HTTP/":
        return (
            f"{address} answered in HTTP/1.1, not gRPC: it is an HTTP port (the tracker's --metrics-port serves /metrics and the "
            f"live view there); {_USE_GRPC_PORT}"
        )
    tvm = answers.get("tvm", b"")
    if len(tvm) >= 4 and struct.unpack("<i", tvm[:4])[0] == TVM_TRACKER_MAGIC:
        return (
            f"{address} answered with TVM's tracker magic (0x{TVM_TRACKER_MAGIC:x}), not gRPC: it is a TVM tracker port (the "
            f"tracker's --tvm-port, for TVM's own clients: tvm.rpc.connect_tracker); {_USE_GRPC_PORT}"
        )
    return None


def _exchange(host: str, port: int, hello: bytes, want: int, timeout_s: float, answers: dict[str, bytes], name: str) -> None:
    """Sends `hello` and keeps the answer, up to `want` bytes, the peer's close or `timeout_s`, as answers[name]."""
    until = time.monotonic() + timeout_s
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.sendall(hello)
            got = b""
            while len(got) < want:
                s.settimeout(max(0.001, until - time.monotonic()))
                chunk = s.recv(want - len(got))
                if not chunk:
                    break
                got += chunk
            answers[name] = got
    except OSError:
        pass  # nothing answered, or not in time: no hint
