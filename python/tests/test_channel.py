"""The host's side of a socket lane's end (channel.py's `draining`): a real
socket pair for the lane; the Session stream, which grpc makes in the farm, is
a stand-in that delivers the tracker's end frame when told."""
from __future__ import annotations

import socket
import threading

from kernelfarm import FarmError
from kernelfarm.channel import LaneChannel
from kernelfarm.lane import LaneSocket, framed
from kernelfarm.protos import session_pb2


class TrackerStream:
    """Hands the channel the tracker's messages on the Session stream."""

    def take_over(self, on_message, on_status) -> None:
        self.on_message = on_message
        self.on_status = on_status

    def end_writes(self) -> None:
        pass

    def cancel(self) -> None:
        pass


def end_frame(code: str, message: str) -> bytes:
    f = session_pb2.BoardFrame()
    f.end.reason.code = code
    f.end.reason.message = message
    return f.SerializeToString()


def test_the_answers_a_worker_sent_before_it_crashed_are_read_even_when_the_tracker_s_end_overtakes_them():
    host, worker = socket.socketpair()
    stream = TrackerStream()
    channel = LaneChannel(stream, "127.0.0.1:1", LaneSocket(host, "a test lane"), "direct", 5.0)
    seen: list[str] = []
    closed = threading.Event()

    def on_close(reason) -> None:
        seen.append(f"end {reason.code if reason else None}")
        closed.set()

    channel.start(lambda frame: seen.append(f"frame {bytes(frame).decode()}"), on_close)
    # The worker's answer waits in this host's socket, unread, when the tracker says the worker crashed.
    worker.sendall(framed(b"answer"))
    worker.close()
    stream.on_message(end_frame("RUNTIME_CRASH", "the session worker died"))
    # As the tracker does, the stream's status follows the end frame: it must not cut the drain short.
    stream.on_status(FarmError("RUNTIME_CRASH", "the session worker died"))
    channel.wait(closed)
    assert seen == ["frame answer", "end RUNTIME_CRASH"]


def test_a_lane_that_stays_open_after_the_tracker_s_end_is_closed_after_the_drain_with_the_tracker_s_reason():
    host, worker = socket.socketpair()
    stream = TrackerStream()
    channel = LaneChannel(stream, "127.0.0.1:1", LaneSocket(host, "a test lane"), "direct", 5.0)
    reasons = []
    closed = threading.Event()
    channel.start(lambda frame: None, lambda reason: (reasons.append(reason), closed.set()))
    stream.on_message(end_frame("TIMEOUT", "the session's time is up"))
    assert closed.wait(5.0)
    assert [r.code for r in reasons] == ["TIMEOUT"]
    worker.close()
