"""A lane: the session protocol's frames over a socket (runtime/lane.ts). Each
frame is a 4-byte big-endian length and the encoded frame; the connecting
side (the host) sends a LaneHello first, with the connection, and the other
side answers one LaneWelcome: empty, or why not.
"""
from __future__ import annotations

import socket
import ssl
import struct
import threading
from typing import Optional, Sequence

from ._contract import HELLO_TIMEOUT_MS
from .credentials import ClientSecurity, connect_socket
from .errors import FarmError
from .frames import MAX_MESSAGE_BYTES, decode_lane_welcome

_HEADER = struct.Struct(">I")
#: Frames up to this size go as one send with their header; larger ones as header and parts.
_COPY_LIMIT = 64 << 10
#: How long a connection may take to welcome the host (HELLO_TIMEOUT_MS, declared in contract.json).
HELLO_TIMEOUT_S = HELLO_TIMEOUT_MS / 1000
#: A welcome is an error at most: anything larger is not one.
_MAX_HELLO_BYTES = 4096
_READ_BUFFER = 256 << 10


def framed(frame: bytes) -> bytes:
    """One frame as it travels: its length, then its bytes."""
    return _HEADER.pack(len(frame)) + frame


class LaneSocket:
    """The framing on one socket. Sends come from any thread (one frame at a
    time, under a lock); frames are read by one thread, the channel's reader."""

    def __init__(self, sock: socket.socket, what: str):
        self.sock = sock
        self.what = what
        self._reader = sock.makefile("rb", buffering=_READ_BUFFER)
        self._send_lock = threading.Lock()

    def send_parts(self, parts: Sequence[bytes | memoryview]) -> None:
        """Sends one frame given as parts (frames.chunk_frame_parts); OSError when the socket broke."""
        length = sum(len(p) for p in parts)
        header = _HEADER.pack(length)
        with self._send_lock:
            if length <= _COPY_LIMIT:
                self.sock.sendall(header + b"".join(parts))
            elif len(parts) > 1 and len(parts[0]) <= _COPY_LIMIT:
                # A chunk frame: its small head with the header, then the chunk's bytes as they are.
                self.sock.sendall(header + bytes(parts[0]))
                for p in parts[1:]:
                    self.sock.sendall(p)
            else:
                self.sock.sendall(header)
                for p in parts:
                    self.sock.sendall(p)

    def read_frame(self, limit: int = MAX_MESSAGE_BYTES) -> Optional[bytes]:
        """The next frame; None when the lane is over (the other side closed it, or this one did)."""
        if self._reader.closed:
            return None
        header = self._reader.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return None
        (length,) = _HEADER.unpack(header)
        if length > limit:
            raise FarmError("PROTOCOL_ERROR", f"{self.what}: a frame of {length} bytes is over the limit of {limit}")
        frame = self._reader.read(length)
        return frame if len(frame) == length else None

    def end(self) -> None:
        """No more frames from this side. (A TLS socket gets no half-close: Python's
        SSLSocket.shutdown drops its TLS state; the lane's close follows the worker's end.)"""
        if isinstance(self.sock, ssl.SSLSocket):
            return
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self) -> None:
        """Drops the connection; a reader blocked on it wakes with the end of the lane."""
        try:
            # The plain socket's shutdown, also for TLS: it wakes a blocked read (close() alone would not).
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)
        except OSError:
            pass
        # The socket's descriptor closes with the last of the socket and its reader (makefile() holds it open).
        self._reader.close()
        self.sock.close()


def dial_lane(
    host: str, port: int, security: ClientSecurity, timeout_s: float, what: str, kind: str, session_id: str, hello: bytes
) -> LaneSocket:
    """Connects one lane with its hello sent at once and waits for the welcome:
    the refusal as its FarmError, or UNAVAILABLE / TIMEOUT naming the lane."""
    sock = connect_socket(host, port, security, timeout_s, what, framed(hello))
    lane = LaneSocket(sock, f"the {kind} lane of session {session_id}")
    try:
        try:
            welcome = lane.read_frame(_MAX_HELLO_BYTES)
        except socket.timeout:
            raise FarmError("TIMEOUT", f"no welcome within {round(timeout_s * 1000)} ms") from None
        except OSError as err:
            raise FarmError.from_exception(err) from err
        if welcome is None:
            raise FarmError("UNAVAILABLE", f"{lane.what}: closed before its welcome")
        refused = decode_lane_welcome(welcome)
        if refused:
            raise refused
    except FarmError as err:
        lane.close()
        raise err.with_message(f"{what} at {host}:{port}: {err.message}")
    sock.settimeout(None)
    return lane
