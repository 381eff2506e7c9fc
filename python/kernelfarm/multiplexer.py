"""The request multiplexer under a Session (host-sdk/multiplexer.ts): many
requests in flight on one FrameChannel, each reply matched to its request by
id. Chunked replies (downloads, array reads) are assembled here; chunked
sends (uploads, array writes) go out under one id, paced by the lane's
back-pressure (a blocking socket send, or the grpc lane's bounded outbox).
Once the channel closes, every waiting request fails with the reason and so
does every later one.

States: open → ended (`end_reason` says why; a clean end is SESSION_CLOSED).
Nothing reopens.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from .channel import FrameChannel
from .errors import FarmError
from .frames import CHUNK_BYTES, chunk_frame_parts, decode_board_frame, error_of
from .protos import session_pb2


class Pending:
    """One request's reply, once it comes: `result()` waits for it."""

    __slots__ = ("_event", "_wait", "_frame", "_error", "data")

    def __init__(self, wait: Callable[[threading.Event], None]) -> None:
        self._event = threading.Event()
        self._wait = wait
        self._frame: Optional[session_pb2.BoardFrame] = None
        self._error: Optional[FarmError] = None
        #: Assembled chunked data (download, array read).
        self.data: Optional[bytearray] = None

    @property
    def done(self) -> bool:
        return self._event.is_set()

    def _settle(self, frame: Optional[session_pb2.BoardFrame], error: Optional[FarmError]) -> None:
        self._frame, self._error = frame, error
        self._event.set()

    def result(self) -> session_pb2.BoardFrame:
        """The reply; its error (a fresh FarmError, raised here) otherwise."""
        self._wait(self._event)
        if self._error is not None:
            e = self._error
            raise FarmError(e.code, e.message, e.details)
        return self._frame


class Multiplexer:
    def __init__(self, channel: FrameChannel, session_id: str):
        self._channel = channel
        self._session_id = session_id
        self._lock = threading.Lock()
        self._next_id = 1
        self._waiting: dict[int, Pending] = {}
        self._reason: Optional[FarmError] = None
        #: Set once the channel has closed, cleanly or not.
        self.ended = threading.Event()
        channel.start(self._on_frame, self._on_close)

    @property
    def end_reason(self) -> Optional[FarmError]:
        return self._reason

    def _check_open(self) -> None:
        e = self._reason
        if e is None:
            return
        if e.code == "SESSION_CLOSED":
            raise FarmError("SESSION_CLOSED", e.message)
        # The end's details hold for every later request too (a lost device context stays lost).
        raise FarmError(e.code, f"session {self._session_id} has ended: {e.message}", e.details)

    def _expect(self) -> tuple[int, Pending]:
        pending = Pending(self._channel.wait)
        with self._lock:
            ended = self._reason is not None
            frame_id = self._next_id
            self._next_id += 1
            if not ended:
                self._waiting[frame_id] = pending
        if ended:
            self._check_open()
        return frame_id, pending

    def _send(self, parts) -> None:
        try:
            self._channel.send_parts(parts)
        except OSError:
            # The lane broke: its close follows (with the tracker's word on why) and fails this request.
            pass

    def submit(self, **op: Any) -> Pending:
        """Sends one request (HostFrame fields, e.g. `listdir=ListDir()`) without waiting for its reply."""
        frame = session_pb2.HostFrame(**op)
        frame_id, pending = self._expect()
        frame.id = frame_id
        self._send([frame.SerializeToString()])
        return pending

    def request(self, **op: Any) -> session_pb2.BoardFrame:
        """One request, one reply."""
        return self.submit(**op).result()

    def send_chunked(self, data: memoryview, op: str, head: Callable[[int, bool], bytes]) -> Pending:
        """Sends `data` in chunks under one request id: `op` is the HostFrame field
        (upload, array_write), `head(offset, done)` the encoded inner message
        without its data. One reply, after the last chunk."""
        frame_id, pending = self._expect()
        offset = 0
        while True:
            end = min(len(data), offset + CHUNK_BYTES)
            done = end == len(data)
            inner = head(offset, done)
            # Stop early when the board already answered (it refused the transfer) or the session ended, also while
            # `head` ran (it may hash): no piece goes out after the refusal.
            if pending.done:
                return pending
            self._send(chunk_frame_parts(frame_id, op, inner, data[offset:end]))
            offset = end
            if done:
                return pending

    def fetch_chunked(self, **op: Any) -> bytearray:
        """A request whose reply comes in chunks: the assembled bytes."""
        pending = self.submit(**op)
        pending.result()
        return pending.data if pending.data is not None else bytearray()

    def end(self) -> None:
        """No more frames from this side; the board's end of the channel follows."""
        self._channel.end()

    def wait_ended(self) -> None:
        """Returns once the channel has closed (reading the lane to its end, where the lane is read by its callers)."""
        self._channel.wait(self.ended)

    def abort(self) -> None:
        self._channel.abort()

    def _on_frame(self, raw: bytes) -> None:
        try:
            frame = decode_board_frame(raw)
        except Exception as err:  # noqa: BLE001 - whatever the decoder says, the frame breaks the protocol
            self._on_close(FarmError("PROTOCOL_ERROR", f"the board sent an undecodable frame: {err}"))
            self._channel.abort()
            return
        with self._lock:
            pending = self._waiting.get(frame.id)
            if pending is None:
                return
            kind = frame.WhichOneof("result")
            if kind == "data":
                d = frame.data
                if pending.data is None:
                    pending.data = bytearray(int(d.total_bytes))
                pending.data[int(d.offset) : int(d.offset) + len(d.data)] = d.data
                if not d.done:
                    return
            del self._waiting[frame.id]
        if kind == "error":
            pending._settle(None, error_of(frame.error))
        else:
            pending._settle(frame, None)

    def _on_close(self, reason: Optional[FarmError]) -> None:
        with self._lock:
            if self._reason is not None:
                return
            self._reason = reason or FarmError("SESSION_CLOSED", f"session {self._session_id} is closed")
            waiting, self._waiting = self._waiting, {}
        for pending in waiting.values():
            pending._settle(None, self._reason)
        self.ended.set()
