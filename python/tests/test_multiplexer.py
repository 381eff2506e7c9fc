"""The request multiplexer (multiplexer.py) without a farm: a channel that
records what is sent and hands the multiplexer the board's frames when told."""
from __future__ import annotations

import threading
from typing import Callable, Optional, Sequence

from kernelfarm import FarmError
from kernelfarm.multiplexer import Multiplexer
from kernelfarm.protos import session_pb2


class RecordingChannel:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def start(self, on_frame: Callable[[bytes], None], on_close: Callable[[Optional[FarmError]], None]) -> None:
        self.on_frame = on_frame
        self.on_close = on_close

    def wait(self, event: threading.Event) -> None:
        event.wait(5)

    def send_parts(self, parts: Sequence[bytes | memoryview]) -> None:
        self.sent.append(b"".join(bytes(p) for p in parts))


def refusal(frame_id: int) -> bytes:
    f = session_pb2.BoardFrame()
    f.id = frame_id
    f.error.code = "TOO_LARGE"
    f.error.message = "the board refused the upload"
    return f.SerializeToString()


def test_a_chunked_send_refused_while_the_next_piece_was_being_made_sends_no_more_pieces():
    channel = RecordingChannel()
    mux = Multiplexer(channel, "s1")  # type: ignore[arg-type]
    heads: list[int] = []

    def head(offset: int, done: bool) -> bytes:
        heads.append(offset)
        if offset > 0:
            # The board's refusal of the first piece arrives while the second is made (hashed, say).
            channel.on_frame(refusal(1))
        return session_pb2.Upload(name="big.bin").SerializeToString()

    data = memoryview(bytes(3 << 20))
    pending = mux.send_chunked(data, "upload", head)
    assert len(heads) == 2
    assert len(channel.sent) == 1, "no piece goes out after the refusal"
    try:
        pending.result()
        raise AssertionError("the refusal must fail the request")
    except FarmError as err:
        assert err.code == "TOO_LARGE"
