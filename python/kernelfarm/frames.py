"""Encode and decode the session protocol's frames (protos/farm/v1/session.proto),
as protos/frames.ts does: the host SDK is one of the two places that ever
look inside a frame; the tracker relays the encoded bytes untouched.
"""
from __future__ import annotations

from typing import Optional, Sequence

from ._contract import CHUNK_BYTES, MAX_MESSAGE_BYTES, SPLIT_MIN_BYTES  # noqa: F401 - the SDK's modules take the frame sizes from here
from .enums import ROUTE
from .errors import FarmError
from .protos import common_pb2, host_pb2, session_pb2

#: Below this, one buffer is cheaper than two sends (protos/frames.ts).

# A BoardFrame with `grant` (field 12) or `end` (field 13) and no request id
# starts with that field's tag; every reply starts with its id's tag (field 1),
# or, for id 0, with `error`'s (field 2): the first byte tells them apart.
_GRANT_TAG = (12 << 3) | 2
_END_TAG = (13 << 3) | 2

#: HostFrame field numbers of the chunked requests; each one's `data` is its field 3.
_CHUNK_FIELDS = {"upload": 2, "array_write": 8}


def is_grant_frame(frame: bytes) -> bool:
    return len(frame) > 0 and frame[0] == _GRANT_TAG


def is_end_frame(frame: bytes) -> bool:
    return len(frame) > 0 and frame[0] == _END_TAG


def decode_board_frame(frame: bytes) -> session_pb2.BoardFrame:
    out = session_pb2.BoardFrame()
    out.ParseFromString(frame)
    return out


def decode_grant(frame: bytes) -> session_pb2.Grant:
    """The grant a frame carries; a route this SDK does not know (a newer tracker's) is a PROTOCOL_ERROR."""
    f = decode_board_frame(frame)
    if not f.HasField("grant"):
        raise FarmError("PROTOCOL_ERROR", "not a grant frame")
    ROUTE.from_wire(f.grant.route, "the tracker's grant", "PROTOCOL_ERROR")
    return f.grant


def error_of(e: common_pb2.Error) -> FarmError:
    return FarmError.from_wire(e.code, e.message, e.details_json)


def decode_end(frame: bytes) -> Optional[FarmError]:
    """The reason an end frame carries; None for a clean close."""
    f = decode_board_frame(frame)
    if not f.HasField("end"):
        raise FarmError("PROTOCOL_ERROR", "not an end frame")
    return error_of(f.end.reason) if f.end.HasField("reason") else None


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def chunk_frame_parts(frame_id: int, op: str, head: bytes, data: memoryview) -> Sequence[bytes | memoryview]:
    """A chunk HostFrame (upload or array_write) as parts whose concatenation is
    its encoding: the encoded frame without its data, then the data itself, so
    a megabyte goes to the socket without being copied into a protobuf buffer.
    `head` is the inner message (Upload, ArrayWrite) encoded without `data`.
    Protobuf reads fields in any order: `data` goes last."""
    data_tag = bytes([(3 << 3) | 2]) + _varint(len(data))
    inner_len = len(head) + len(data_tag) + len(data)
    frame_head = (
        (bytes([(1 << 3) | 0]) + _varint(frame_id) if frame_id else b"") + bytes([(_CHUNK_FIELDS[op] << 3) | 2]) + _varint(inner_len)
    )
    if len(data) < SPLIT_MIN_BYTES:
        return [frame_head + head + data_tag + bytes(data)]
    return [frame_head + head + data_tag, data]


def encode_session_request(
    key: str,
    priority: int,
    labels: dict[str, str],
    deadline_ms: int,
    client_id: str,
    session_timeout_ms: int,
    route: str,
    board_id: str = "",
) -> bytes:
    return host_pb2.SessionRequest(
        key=key,
        priority=priority,
        labels=labels,
        deadline_ms=deadline_ms,
        client_id=client_id,
        session_timeout_ms=session_timeout_ms,
        route=ROUTE.to_wire(route),
        board_id=board_id,
    ).SerializeToString()


def encode_lane_hello(session_id: str, ticket: str, token: str = "") -> bytes:
    return session_pb2.LaneHello(session_id=session_id, ticket=ticket, role=session_pb2.LANE_ROLE_HOST, token=token).SerializeToString()


def decode_lane_welcome(frame: bytes) -> Optional[FarmError]:
    """The refusal a LaneWelcome carries, or None: the lane is open."""
    w = session_pb2.LaneWelcome()
    w.ParseFromString(frame)
    return error_of(w.error) if w.HasField("error") else None
