"""The Python SDK and the TypeScript side agree on the wire: the frames each
side encodes and the other decodes (ends and grants recognised by
their first byte, chunk frames built without copying their data, the session
request), and the seeded generator, element for element. (The error codes
both take from protos/farm/v1/contract.json: test_contract.py.)"""
from __future__ import annotations

import json

import numpy as np
import pytest

from kernelfarm import RandomFill, random_array
from kernelfarm.frames import (
    chunk_frame_parts,
    decode_end,
    decode_grant,
    encode_session_request,
    is_end_frame,
    is_grant_frame,
)
from kernelfarm.enums import ROUTE
from kernelfarm.protos import session_pb2
from farm import REPO, run_ts

WIRE_FACTS = REPO / "python" / "tests" / "ts" / "wire_facts.ts"


def _chunk(op: str, frame_id: int, data: bytes) -> bytes:
    inner = (
        session_pb2.Upload(name="m.kfm", total_bytes=len(data), done=True, sha256="ab")
        if op == "upload"
        else session_pb2.ArrayWrite(array=3, offset=4096, done=False)
    )
    return b"".join(bytes(p) for p in chunk_frame_parts(frame_id, op, inner.SerializeToString(), memoryview(data)))


CHUNKS = [("upload", 300, bytes(range(256)) * 400), ("array_write", 1, b"\x01\x02\x03"), ("upload", 0, b"")]
REQUEST = encode_session_request("h100", 7, {"gpu": "h100", "rack": "a"}, 2500, "py-client", 60_000, "relay", "gpu-host/cuda1")


@pytest.fixture(scope="module")
def facts():
    run = run_ts(WIRE_FACTS, [], stdin="\n".join([_chunk(*c).hex() for c in CHUNKS] + ["sr:" + REQUEST.hex()]))
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_chunk_frames_without_a_copy_encode_as_protobuf_does(facts):
    for (op, frame_id, data), got in zip(CHUNKS, facts["decoded"]):
        inner = (
            session_pb2.Upload(name="m.kfm", total_bytes=len(data), done=True, sha256="ab", data=data)
            if op == "upload"
            else session_pb2.ArrayWrite(array=3, offset=4096, done=False, data=data)
        )
        # Field order differs (data goes last), the message does not.
        assert session_pb2.HostFrame.FromString(_chunk(op, frame_id, data)) == session_pb2.HostFrame(id=frame_id, **{op: inner})
        # And the TypeScript decoder reads the same frame.
        fields = (
            {"name": "m.kfm", "total_bytes": len(data), "done": True, "sha256": "ab"}
            if op == "upload"
            else {"array": 3, "offset": 4096, "done": False}
        )
        assert got == {"id": frame_id, "op": op, op: {**fields, "data": data.hex()}}


def test_the_session_request_reads_the_same_in_typescript(facts):
    assert facts["decoded"][-1] == {
        "key": "h100",
        "priority": 7,
        "labels": {"gpu": "h100", "rack": "a"},
        "deadline_ms": 2500,
        "client_id": "py-client",
        "session_timeout_ms": 60_000,
        "route": "relay",
        "board_id": "gpu-host/cuda1",
    }


def test_ends_and_grants_are_recognised_by_their_first_byte(facts):
    clean, crash, grant = (bytes.fromhex(facts[k]) for k in ("cleanEnd", "errorEnd", "grant"))
    assert is_end_frame(clean) and is_end_frame(crash) and not is_grant_frame(clean)
    assert decode_end(clean) is None
    err = decode_end(crash)
    assert (err.code, err.message, err.details) == ("RUNTIME_CRASH", "the worker died (SIGSEGV)", {"signal": "SIGSEGV"})
    assert is_grant_frame(grant) and not is_end_frame(grant)
    g = decode_grant(grant)
    assert (
        g.session_id,
        ROUTE.from_wire(g.route, "the grant"),
        g.ticket,
        g.direct_address,
        g.worker_address,
        g.relay_port,
        g.end_grace_ms,
    ) == (
        "s1-abc",
        "auto",
        "tkt",
        "127.0.0.1:5",
        "127.0.0.1:6",
        7,
        1000,
    )
    # A reply never starts with either byte, whatever its id.
    for frame_id in (0, 1, 127, 128, 300):
        reply = session_pb2.BoardFrame(id=frame_id, ok=session_pb2.Ok()).SerializeToString()
        assert not is_end_frame(reply) and not is_grant_frame(reply)


def test_the_seeded_generator_makes_the_typescript_values(facts):
    for case in facts["random"]:
        f = case["fill"]
        fill = RandomFill(f["seed"], f.get("low"), f.get("high"), f.get("integers", False))
        got = random_array(case["dtype"], case["n"], fill)
        assert got.dtype == np.dtype(case["dtype"])
        np.testing.assert_array_equal(got, np.array(case["values"], dtype=case["dtype"]), err_msg=str(case["fill"]))
