"""How a session reaches its board: its Session stream at the tracker and its
lane (host-sdk/frame-channel.ts; docs/architecture.md, "One session lifecycle").

The Session stream's first message is the grant and its last the end; it
lives as long as the lease. The lane carries the frames: that same stream
(grpc route), or a socket to the board's worker (direct) or through the
tracker's data port (relay).

| host side    | meaning                                                          |
|--------------|------------------------------------------------------------------|
| `requesting` | the Session stream waits in the key's queue                      |
| `opening`    | granted; the lane is being opened (auto: direct, then relay)     |
| `open`       | frames flow                                                      |
| `closing`    | the lane closed without the worker's clean end: the tracker's end (why) is awaited (twice its grace, + 1 s) |
| `draining`   | the tracker's end came while the lane was open: what the worker sent first is read to the lane's close (≤ LANE_DRAIN_S) |
| `closed`     | the worker's clean end and the lane's close, or the tracker's end, arrived (or the grace passed): `on_close` ran once |

Threads: one reads the Session stream (and, on the grpc lane, its frames)
and hands them to the multiplexer. A socket lane is read by the callers
themselves: whoever waits for a reply reads frames until it has its own,
settling the others' on the way (one reads at a time; the others wait their
turn). A reply then costs no hand-over between threads, which on a busy
machine was a third of a small call's time. Callers send from their own threads.
"""
from __future__ import annotations

import collections
import dataclasses
import threading
import time
from typing import Callable, Optional, Sequence

import grpc

from ._contract import LANE_DRAIN_MS, SESSION_END_GRACE_MS
from .credentials import ClientSecurity
from .enums import ROUTE
from .errors import FarmError, grpc_farm_code
from .frames import decode_end, decode_grant, encode_lane_hello, is_end_frame, is_grant_frame
from .lane import LaneSocket, dial_lane
from .protos import session_pb2

SESSION_METHOD = "/farm.v1.HostService/Session"
#: How long a lane is read after the tracker's end came, for frames the worker sent before it ended (contract.json LANE_DRAIN_MS).
LANE_DRAIN_S = LANE_DRAIN_MS / 1000
#: Frames queued for the grpc lane before a sender waits: its back-pressure.
_OUTBOX_FRAMES = 8

FrameHandler = Callable[[bytes], None]
CloseHandler = Callable[[Optional[FarmError]], None]


def connection_failed(err: FarmError) -> bool:
    """An UNAVAILABLE that gRPC made up (no farm code): no connection to the
    tracker, or one that broke under the call, rather than the tracker's own
    answer, which always carries a farm code."""
    cause = err.__cause__
    return err.code == "UNAVAILABLE" and isinstance(cause, grpc.RpcError) and grpc_farm_code(cause) is None


def split_host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


class SessionStream:
    """HostService.Session: the request travels in its metadata; the grant is its
    first message. Frames written here (the grpc lane) travel as opaque bytes."""

    def __init__(self, channel: grpc.Channel, metadata: list[tuple[str, str | bytes]]):
        self._cv = threading.Condition()
        self._outbox: collections.deque[bytes] = collections.deque()
        self._writes_ended = False
        self._terminated = False
        # Until a lane channel takes the stream over, what arrives after the grant is kept here.
        self._early: list[tuple[str, object]] = []
        self._handlers: Optional[tuple[FrameHandler, Callable[[Optional[FarmError]], None]]] = None
        self._first: Optional[tuple[str, object]] = None
        self._first_arrived = threading.Event()
        #: When the tracker said the request waits in its queue (its response headers), monotonic seconds.
        self.queued_at: Optional[float] = None
        # Identity serializers: each message is one encoded frame, never parsed on the way.
        self._call = channel.stream_stream(SESSION_METHOD)(self._requests(), metadata=metadata)
        threading.Thread(target=self._read, name="kernelfarm-session-stream", daemon=True).start()

    def _requests(self):
        while True:
            with self._cv:
                while not self._outbox and not self._writes_ended and not self._terminated:
                    self._cv.wait()
                if not self._outbox:
                    return
                frame = self._outbox.popleft()
                self._cv.notify_all()
            yield frame

    def _read(self) -> None:
        status: Optional[FarmError] = None
        try:
            # The tracker sends its response headers once the request waits in the queue (tracker/tracker.ts).
            self._call.initial_metadata()
            if not self._call.done():
                self.queued_at = time.monotonic()
            for message in self._call:
                self._deliver("message", message)
        except grpc.RpcError as err:
            status = FarmError.from_exception(err)
        except Exception as err:  # noqa: BLE001 - a bug must still end the session, not hang it
            status = FarmError.from_exception(err)
        with self._cv:
            self._terminated = True
            self._cv.notify_all()
        self._deliver("status", status)

    def _deliver(self, kind: str, value: object) -> None:
        with self._cv:
            if self._first is None:
                self._first = (kind, value)
                self._first_arrived.set()
                return
            handlers = self._handlers
            if handlers is None:
                self._early.append((kind, value))
                return
        self._dispatch(handlers, kind, value)

    @staticmethod
    def _dispatch(handlers, kind: str, value: object) -> None:
        on_message, on_status = handlers
        if kind == "message":
            on_message(value)
        else:
            on_status(value)

    def await_grant(self, timeout_s: Optional[float]) -> session_pb2.Grant:
        """The grant; the request's refusal or deadline arrives as the stream's status instead."""
        if not self._first_arrived.wait(timeout_s):
            self.cancel()
            raise FarmError("DEADLINE_EXCEEDED", f"the tracker gave no grant nor refusal within {round((timeout_s or 0) * 1000)} ms")
        kind, value = self._first  # type: ignore[misc]
        if kind == "status":
            raise value if isinstance(value, BaseException) else FarmError(
                "PROTOCOL_ERROR", "the tracker ended a Session stream without a grant"
            )
        if not is_grant_frame(value):  # type: ignore[arg-type]
            self.cancel()
            raise FarmError("PROTOCOL_ERROR", "the tracker's first message on a Session stream was not a grant")
        return decode_grant(value)  # type: ignore[arg-type]

    def take_over(self, on_message: FrameHandler, on_status: Callable[[Optional[FarmError]], None]) -> None:
        """From now on, messages and the status go to these (what came early first)."""
        with self._cv:
            early, self._early = self._early, []
            self._handlers = (on_message, on_status)
        for kind, value in early:
            self._dispatch((on_message, on_status), kind, value)

    def early_end(self) -> Optional[FarmError]:
        """Why the stream broke before a channel took it over (the lease ended while its lane opened), if it did."""
        with self._cv:
            return next((v for kind, v in self._early if kind == "status" and v is not None), None)  # type: ignore[misc]

    def write(self, frame: bytes) -> None:
        """Queues one frame, waiting while the outbox is full; dropped once the stream is over (its end says why)."""
        with self._cv:
            while len(self._outbox) >= _OUTBOX_FRAMES and not self._terminated and not self._writes_ended:
                self._cv.wait()
            if self._terminated or self._writes_ended:
                return
            self._outbox.append(frame)
            self._cv.notify_all()

    def end_writes(self) -> None:
        """No more frames from this side (the tracker's still come)."""
        with self._cv:
            self._writes_ended = True
            self._cv.notify_all()

    def cancel(self) -> None:
        self._call.cancel()


class FrameChannel:
    """What both lanes share: the Session stream, whose end is the session's end."""

    def __init__(self, stream: SessionStream, tracker: str):
        self.stream = stream
        self._tracker = tracker
        self._lock = threading.Lock()
        self._closed = False
        self._on_frame: FrameHandler = lambda frame: None
        self._on_close: CloseHandler = lambda reason: None

    def start(self, on_frame: FrameHandler, on_close: CloseHandler) -> None:
        self._on_frame = on_frame
        self._on_close = on_close
        self.stream.take_over(self._on_stream_message, self._on_stream_status)

    def wait(self, event: threading.Event) -> None:
        """Returns once `event` is set: a reply settled, or the channel closed (which settles every reply)."""
        event.wait()

    def _on_stream_message(self, frame: bytes) -> None:
        raise NotImplementedError

    def _on_stream_status(self, err: Optional[FarmError]) -> None:
        self.close(self._broken(err) if err else None)

    def _broken(self, err: FarmError) -> FarmError:
        """The Session stream's end, saying so when the tracker went away: the session cannot outlive its lease."""
        if not connection_failed(err):
            return err
        return err.with_message(
            f"the tracker at {self._tracker} went away ({err.message}) and its lease on this board with it: "
            "the board's agent ends the session too. Request a new session; a restarted tracker takes requests as soon as it listens"
        )

    def close(self, reason: Optional[FarmError]) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._release()
        self._on_close(reason)

    def _release(self) -> None:
        """Frees what the lane holds once the session is over."""

    def send_parts(self, parts: Sequence[bytes | memoryview]) -> None:
        raise NotImplementedError

    def end(self) -> None:
        """No more frames from this side."""
        raise NotImplementedError

    def abort(self) -> None:
        """Drops the session now."""
        self.stream.cancel()
        self.close(FarmError("CANCELLED", "the session was dropped by this host"))


class StreamChannel(FrameChannel):
    """The grpc lane: frames ride the Session stream itself, after the grant."""

    def _on_stream_message(self, frame: bytes) -> None:
        if is_end_frame(frame):
            self.close(decode_end(frame))
        else:
            self._on_frame(frame)

    def send_parts(self, parts: Sequence[bytes | memoryview]) -> None:
        self.stream.write(b"".join(parts))

    def end(self) -> None:
        self.stream.end_writes()


_NO_END = object()


class LaneChannel(FrameChannel):
    """A socket lane (direct or relay). The lane carries the frames and, on a
    clean close, the worker's end frame; the Session stream carries the
    tracker's end, which says the lease is over (and why, when the lane just
    broke). A lane that closes first waits the grace for it."""

    def __init__(self, stream: SessionStream, tracker: str, lane: LaneSocket, kind: str, grace_s: float):
        super().__init__(stream, tracker)
        self.lane = lane
        self.kind = kind
        self._grace_s = grace_s
        self._lane_end: object = _NO_END
        self._tracker_end: object = _NO_END
        self._lane_over = False
        self._grace: Optional[threading.Timer] = None
        # One caller reads at a time (the leader); the others wait on the condition for their reply or their turn.
        self._reading = threading.Lock()
        self._turn = threading.Condition()
        self._waiting = 0

    def _on_stream_message(self, frame: bytes) -> None:
        if not is_end_frame(frame):
            return
        end = decode_end(frame)
        with self._lock:
            draining = not self._lane_over and not self._closed
            if draining:
                # The lane and the Session stream are two connections: the end of a worker that crashed can overtake
                # the answer it sent just before, not yet read here. That answer belongs to its request: the callers
                # waiting read the lane to its close (the worker is gone, or its agent ends it) before the end.
                self._tracker_end = end
                self._grace = threading.Timer(LANE_DRAIN_S, self.close, (end,))
                self._grace.daemon = True
                self._grace.start()
        if not draining:
            self.close(end)

    def _on_stream_status(self, err: Optional[FarmError]) -> None:
        # While the lane drains, the status that follows the tracker's end changes nothing: the end said why.
        with self._lock:
            draining = self._tracker_end is not _NO_END
        if not draining:
            super()._on_stream_status(err)

    def wait(self, event: threading.Event) -> None:
        while not event.is_set():
            if self._reading.acquire(blocking=False):
                try:
                    while not event.is_set() and not self._lane_over:
                        self._read_one()
                finally:
                    self._reading.release()
                    # A waiter counts itself before it checks whether someone reads: none is missed here.
                    if self._waiting:
                        with self._turn:
                            self._turn.notify_all()
                # The lane is over: the close (the tracker's end, or the grace) settles what is left.
                event.wait()
                return
            with self._turn:
                self._waiting += 1
                try:
                    while not event.is_set() and self._reading.locked():
                        self._turn.wait()
                finally:
                    self._waiting -= 1

    def _read_one(self) -> None:
        """Reads and hands on one frame, or takes note of the lane's end."""
        try:
            frame = self.lane.read_frame()
            err: Optional[FarmError] = None
        except FarmError as e:
            frame, err = None, e
        except OSError as e:
            frame, err = None, FarmError("UNAVAILABLE", f"{self.lane.what}: {e}")
        except ValueError:
            frame, err = None, None  # this side closed the lane under the read: the session's close says why
        if frame is None:
            with self._lock:  # against the tracker's end: either it sees the lane over, or this sees the end
                self._lane_over = True
            self._lane_closed(err)
        elif is_end_frame(frame):
            self._lane_end = decode_end(frame)
        else:
            self._on_frame(frame)
        if self._waiting:
            with self._turn:
                self._turn.notify_all()

    def _lane_closed(self, err: Optional[FarmError]) -> None:
        # The worker ended the lane with its clean end: the session is over, and the host knows how.
        if self._lane_end is None:
            self.close(None)
            return
        if self._tracker_end is not _NO_END:
            self.close(self._tracker_end)  # type: ignore[arg-type]
            return

        def settle() -> None:
            # A reachable tracker settles every end within its grace: silence past twice that means this host
            # cannot hear the tracker, which is no fault of the kernel.
            lost = err or FarmError(
                "UNAVAILABLE",
                f"the session's {self.kind} lane closed and the tracker did not say why within {round(self._grace_s * 1000)} ms: "
                "it may be unreachable from this host (a network partition?)",
            )
            self.close(lost if self._lane_end is _NO_END else self._lane_end)  # type: ignore[arg-type]

        with self._lock:
            if self._closed:
                return
            self._grace = threading.Timer(self._grace_s, settle)
            self._grace.daemon = True
            self._grace.start()

    def close(self, reason: Optional[FarmError]) -> None:
        super().close(reason)
        # Whoever waits for its turn to read learns that there is nothing more to read.
        with self._turn:
            self._turn.notify_all()

    def send_parts(self, parts: Sequence[bytes | memoryview]) -> None:
        self.lane.send_parts(parts)

    def end(self) -> None:
        self.lane.end()

    def _release(self) -> None:
        if self._grace:
            self._grace.cancel()
        self.lane.close()
        # The lease is over: nothing more goes on the stream.
        self.stream.end_writes()


def open_lane(
    grant: session_pb2.Grant, stream: SessionStream, tracker: str, security: ClientSecurity, direct_timeout_s: float
) -> tuple[FrameChannel, str, Optional[str]]:
    """Opens the lane the grant offers, falling back from direct to relay on the
    auto route: (channel, lane, why it fell back)."""
    # The tracker settles a lane's end within its grace and the end then travels here: twice that, and 1 s more.
    grace_s = (2 * (grant.end_grace_ms or SESSION_END_GRACE_MS) + 1000) / 1000
    route = ROUTE.from_wire(grant.route, "the tracker's grant", "PROTOCOL_ERROR")
    if route == "grpc":
        return StreamChannel(stream, tracker), "grpc", None
    note: Optional[str] = None
    if route in ("direct", "auto"):
        try:
            if not grant.direct_address:
                raise FarmError(
                    "UNAVAILABLE",
                    f"board {grant.board.id}'s agent serves no direct lane "
                    "(started with --no-direct, or with TLS to its tracker and no --data-tls-cert)",
                )
            lane = _dial_direct(grant, security, direct_timeout_s if route == "auto" else 10.0)
            return LaneChannel(stream, tracker, lane, "direct", grace_s), "direct", None
        except FarmError as err:
            if route == "direct":
                raise
            note = f"the direct lane to {grant.direct_address} failed ({err.message}); fell back to the tracker's relay"
    host, _ = split_host_port(tracker)
    hello = encode_lane_hello(grant.session_id, grant.ticket, security.token or "")
    lane = dial_lane(host, grant.relay_port, security, 10.0, "the tracker's data port (relay lane)", "relay", grant.session_id, hello)
    return LaneChannel(stream, tracker, lane, "relay", grace_s), "relay", note


def _dial_direct(grant: session_pb2.Grant, security: ClientSecurity, timeout_s: float) -> LaneSocket:
    """At the standby lane of the worker that takes the session, when the grant
    names one, else (or if that worker moved on) at the agent's data port."""
    # The direct lane is the agent's certificate, named by its own address; no token travels on it.
    lane_security = ClientSecurity(tls=dataclasses.replace(security.tls, server_name=None) if grant.lane_tls and security.tls else None)
    hello = encode_lane_hello(grant.session_id, grant.ticket)
    started = time.monotonic()

    def agent() -> LaneSocket:
        host, port = split_host_port(grant.direct_address)
        left = max(0.001, timeout_s - (time.monotonic() - started))
        return dial_lane(
            host, port, lane_security, left, f"the agent of board {grant.board.id} (direct lane)", "direct", grant.session_id, hello
        )

    if not grant.worker_address:
        return agent()
    host, port = split_host_port(grant.worker_address)
    try:
        return dial_lane(
            host,
            port,
            lane_security,
            timeout_s,
            f"the session worker of board {grant.board.id} (standby lane)",
            "direct",
            grant.session_id,
            hello,
        )
    except FarmError as err:
        if err.code not in ("UNAVAILABLE", "NOT_FOUND"):
            raise
        return agent()
