"""Bad input from Python gets a FarmError with a stable code and a message that
names the problem — dtypes numpy has and boards do not, shapes, argument
counts, names — and nothing else breaks: the session, the tracker and the
agent go on working."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest

import kernelfarm
from kernelfarm import FarmError
from kernelfarm._contract import OPTION_LIMITS
from kernelfarm.option_limits import describe_limit
from modules import BAD_FUNCTIONS, BAD_SOURCE, build_cpu


def refused(code: str, fn, *args, **kwargs) -> str:
    """Calls fn, which must fail with a FarmError of `code`; returns its message."""
    with pytest.raises(FarmError) as e:
        fn(*args, **kwargs)
    assert e.value.code == code, e.value
    return e.value.message


@pytest.fixture
def loaded(remote, vadd_module):
    remote.upload(vadd_module)
    return remote.load_module(vadd_module.name)


@pytest.mark.parametrize(
    "value, names",
    [
        (
            np.zeros(4, np.complex64),
            "dtype complex64 is not supported; boards hold int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32, float64 "
            "(pass the real and imaginary parts as two float arrays)",
        ),
        (
            np.zeros(4, np.float16),
            "dtype float16 is not supported; boards hold int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32, float64 "
            "(convert it with .astype(np.float32))",
        ),
        (
            np.zeros(4, bool),
            "dtype bool is not supported; boards hold int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32, float64 "
            "(convert it with .astype(np.uint8))",
        ),
        (
            np.array([{}, 1], dtype=object),
            "dtype object is not supported; boards hold int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32, float64",
        ),
        (
            np.array(["a", "b"]),
            "dtype str32 is not supported; boards hold int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32, float64",
        ),
    ],
)
def test_arrays_of_dtypes_boards_do_not_hold(remote, value, names):
    assert refused("BAD_ARGUMENTS", remote.array, value) == f"array(): {names}"


def test_arrays_that_are_not_numpy_arrays_or_have_bad_shapes(remote):
    assert refused("BAD_ARGUMENTS", remote.array, [1.0, 2.0]) == (
        "array() must be a numpy array, got list: np.asarray(value, dtype=np.float32) makes one"
        " (dtypes boards hold: int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32, float64)"
    )
    assert (
        refused("BAD_ARGUMENTS", remote.empty, (2, -1))
        == "empty(): shape [2, -1]: -1 is not a dimension (integers 0 … 4294967295; split a larger one)"
    )
    assert "is not a dimension" in refused("BAD_ARGUMENTS", remote.empty, (2**33,))
    assert "is not a dimension" in refused("BAD_ARGUMENTS", remote.empty, (1.5,))
    assert (
        refused("BAD_ARGUMENTS", remote.empty, "abc")
        == "empty(): shape ['a', 'b', 'c']: 'a' is not a dimension (integers 0 … 4294967295; split a larger one)"
    )
    assert refused("BAD_ARGUMENTS", remote.empty, 3, "complex128").startswith("empty(): dtype complex128 is not supported")
    assert (
        refused("BAD_ARGUMENTS", remote.empty, 3, "float8")
        == "empty(): 'float8' is not a dtype; boards hold int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32, float64"
    )


def test_copyfrom_and_fill_check_what_they_are_given(remote):
    a = remote.empty((2, 3), "float32")
    assert refused("BAD_ARGUMENTS", a.copyfrom, np.zeros((2, 3))) == (
        f"copyfrom: array {a.id} ([2, 3] float32) holds float32, got float64 (convert it with .astype(np.float32))"
    )
    assert (
        refused("BAD_ARGUMENTS", a.copyfrom, np.zeros(6, np.float32))
        == f"copyfrom: array {a.id} ([2, 3] float32) has shape [2, 3], got [6]"
    )
    assert refused("BAD_ARGUMENTS", a.fill, -1) == f"fill: array {a.id} ([2, 3] float32): the seed must be an integer in [0, 2^32), got -1"
    i8 = remote.empty(4, "int8")
    assert refused("BAD_ARGUMENTS", i8.fill, 1, 0, 300) == f"fill: array {i8.id} ([4] int8): [0, 300] does not fit int8 ([-128, 127])"
    assert (
        refused("BAD_ARGUMENTS", a.fill, 1, 2.0, 1.0) == f"fill: array {a.id} ([2, 3] float32): the range [2.0, 1.0] is empty or not finite"
    )


def test_calls_with_wrong_arguments(remote, loaded):
    n = 8
    a, b, c = remote.array(np.ones(n, np.float32)), remote.array(np.ones(n, np.float32)), remote.empty(n, "float32")
    vadd = loaded["vadd"]
    sig = "vadd(float32* a, float32* b, float32* c, int32 n)"
    assert refused("BAD_ARGUMENTS", vadd, a, b, c) == f"{sig} takes 4 argument(s), got 3"
    assert refused("BAD_ARGUMENTS", vadd, a, b, c, n, n) == f"{sig} takes 4 argument(s), got 5"
    assert refused("BAD_ARGUMENTS", vadd, np.ones(n, np.float32), b, c, n) == (
        "argument 0 of vadd is a numpy array: the board cannot read host memory; pass remote.array(x) (a RemoteArray) instead"
    )
    ints = remote.array(np.ones(n, np.int32))
    assert refused("BAD_ARGUMENTS", vadd, ints, b, c, n) == f"argument 0 (a) of {sig} must be a float32 array, got int32"
    assert refused("BAD_ARGUMENTS", vadd, a, b, 3, n) == f"argument 2 (c) of {sig} must be a float32 array, got a scalar"
    assert refused("BAD_ARGUMENTS", vadd, a, b, c, c) == f"argument 3 (n) of {sig} must be a int32 scalar, got an array"
    assert refused("BAD_ARGUMENTS", vadd, a, b, c, 2.5) == f"argument 3 (n) of {sig} must be an integer, got 2.5"
    assert (
        refused("BAD_ARGUMENTS", vadd, a, b, c, 2**40)
        == f"argument 3 (n) of {sig} must be a int32 in [-2147483648, 2147483647], got {2**40}"
    )
    assert refused("BAD_ARGUMENTS", vadd, a, b, c, 2**70) == f"argument 3 of vadd is {2**70}, outside the 64-bit integers a call carries"
    assert refused("BAD_ARGUMENTS", vadd, a, b, c, "8") == "argument 3 of vadd must be a RemoteArray or a number, got str"
    assert (
        refused("INVALID_ARGUMENT", vadd, a, b, c, n, timeout=0)
        == "call timeout must be a number of seconds in [0.001, 4294967.295] (the call's timeout on the board), got 0"
    )
    assert refused("UNKNOWN_FUNCTION", lambda: loaded["vsub"]) == f'module {loaded.id} has no function "vsub"; it has: vadd, scale, nop'
    assert refused("UNKNOWN_FUNCTION", loaded.time_evaluator, "vsub").startswith(f'module {loaded.id} has no function "vsub"')
    # Every numeric option, from the one table both SDKs check (contract.json "optionLimits"): refused when the
    # evaluator is made, before anything is sent, naming the option, the value and the range.
    for bad, what in (
        (0, "number must be an integer in [1, 4294967295] (calls per repeat), got 0"),
        (-1, "number must be an integer in [1, 4294967295] (calls per repeat), got -1"),
    ):
        assert refused("INVALID_ARGUMENT", loaded.time_evaluator, "vadd", number=bad) == f"time_evaluator {what}"
    assert (
        refused("INVALID_ARGUMENT", loaded.time_evaluator, "vadd", repeat=-1)
        == "time_evaluator repeat must be an integer in [1, 4294967295] (repeats, each one result), got -1"
    )
    assert (
        refused("INVALID_ARGUMENT", loaded.time_evaluator, "vadd", min_repeat_ms=math.nan)
        == "time_evaluator min_repeat_ms must be a number in [0, 4294967295] (grow number until one repeat lasts this long), got nan"
    )
    for option, limit in OPTION_LIMITS["time_evaluator"].items():
        for bad in (limit.min / (1000 if limit.unit == "s" else 1) - 1, limit.max + 1 if limit.unit != "s" else 1e10, math.inf, "1"):
            expected = f"time_evaluator {option} must be {describe_limit(limit)} ({limit.doc}), got {bad!r}"
            assert refused("INVALID_ARGUMENT", loaded.time_evaluator, "vadd", **{option: bad}) == expected
    # The session served every refusal and still computes.
    vadd(a, b, c, n)
    np.testing.assert_array_equal(c.numpy(), np.full(n, 2, np.float32))


def test_a_fixed_shape_parameter_refuses_other_shapes(remote):
    mod = build_cpu(BAD_SOURCE, BAD_FUNCTIONS)
    remote.upload(mod)
    sum16 = remote.load_module(mod.name)["sum16"]
    m = np.arange(16, dtype=np.int32)
    out = remote.empty(1, "int32")
    sig = "sum16(int32* m, int32* out)"
    assert refused("BAD_ARGUMENTS", sum16, remote.array(m), out) == f"argument 0 (m) of {sig} must have shape [4, 4], got [16]"
    assert (
        refused("BAD_ARGUMENTS", sum16, remote.array(m.reshape(2, 8)), out) == f"argument 0 (m) of {sig} must have shape [4, 4], got [2, 8]"
    )
    sum16(remote.array(m.reshape(4, 4)), out)
    assert out.numpy().tolist() == [120]
    # A transposed (non-contiguous) view of the right shape is copied in numpy's order.
    sum16(remote.array(m.reshape(4, 4).T), out)
    assert out.numpy().tolist() == [120]


def test_names_files_and_modules(remote, tmp_path):
    for name in ("", "../escape", "a/b", "."):
        assert refused("INVALID_NAME", remote.upload, b"x", name)
    assert refused("INVALID_ARGUMENT", remote.upload, b"x") == "upload(bytes) needs a name"
    assert refused("INVALID_ARGUMENT", remote.upload, 42) == "upload takes a path, bytes or a compiled module (.bytes and .name), got int"
    missing = tmp_path / "missing.kfm"
    assert refused("NOT_FOUND", remote.upload, str(missing)) == f"upload: cannot read {missing}: No such file or directory"
    assert refused("NOT_FOUND", remote.download, "nothing.bin")
    assert refused("NOT_FOUND", remote.load_module, "nothing.kfm")
    remote.upload(b"this is not a bundle", "junk.kfm")
    assert refused("BAD_BUNDLE", remote.load_module, "junk.kfm")
    assert [f.name for f in remote.listdir()] == ["junk.kfm"]


def test_requests_with_bad_options(tracker):
    assert (
        refused("INVALID_ARGUMENT", tracker.request, "cpu", route="fast")
        == "request(): route must be one of auto, direct, relay, grpc, got 'fast'"
    )
    assert (
        refused("INVALID_ARGUMENT", tracker.request, "cpu", priority="high")
        == "request priority must be an integer in [-2147483648, 2147483647] (larger is served first), got 'high'"
    )
    assert (
        refused("INVALID_ARGUMENT", tracker.request, "cpu", deadline=-1)
        == "request deadline must be a number of seconds in [0, 4294967.295] "
        "(the longest wait for a board of the key, queued or attaching), got -1"
    )
    assert refused("INVALID_ARGUMENT", tracker.request, "cpu", session_timeout=math.nan).startswith("request session_timeout must be")
    assert (
        refused("INVALID_ARGUMENT", tracker.request, "cpu", labels={"n": 1})
        == "request(): labels must map strings to strings, got {'n': 1}"
    )
    assert refused("INVALID_ARGUMENT", tracker.request, 7) == "request(): key must be a string, got int"
    assert refused("NO_BOARD", tracker.request, "tpu")


def test_connect_tracker_with_bad_timeouts(farm):
    assert (
        refused("INVALID_ARGUMENT", kernelfarm.connect_tracker, farm.address, connect_timeout=0)
        == "connect_tracker connect_timeout must be a number of seconds in [0.001, 4294967.295] "
        "(how long connecting to the tracker may take), got 0"
    )
    assert refused("INVALID_ARGUMENT", kernelfarm.connect_tracker, farm.address, rpc_timeout=-1).startswith(
        "connect_tracker rpc_timeout must be a number of seconds in [0.001, "
    )


def test_connect_tracker_without_an_address_dials_kfarm_tracker_and_says_so(farm, monkeypatch):
    monkeypatch.setenv("KFARM_TRACKER", farm.address)
    client = kernelfarm.connect_tracker()
    try:
        assert client.address == farm.address
        assert client.summary().tracker_version, "a summary from the tracker at KFARM_TRACKER"
    finally:
        client.close()
    monkeypatch.setenv("KFARM_TRACKER", "127.0.0.1:1")
    message = refused("UNAVAILABLE", kernelfarm.connect_tracker, connect_timeout=0.5)
    assert "127.0.0.1:1" in message and message.endswith("(the address 127.0.0.1:1 is KFARM_TRACKER's value)"), message


def test_a_closed_client_and_its_sessions(farm):
    client = kernelfarm.connect_tracker(farm.address)
    s = client.request("cpu")
    client.close()
    for call in (client.summary, lambda: client.request("cpu")):
        assert refused("CANCELLED", call) == f"this client of the tracker at {farm.address} is closed: connect_tracker() again"
    # Its session went with its connection.
    assert refused("CANCELLED", s.listdir)
    s.close()


def test_arrays_belong_to_their_session(tracker, vadd_module):
    with tracker.request("cpu") as s1, tracker.request("cpu") as s2:
        s1.upload(vadd_module)
        nop_args = s2.array(np.ones(2, np.float32))
        vadd = s1.load_module(vadd_module.name)["vadd"]
        a = s1.array(np.ones(2, np.float32))
        assert "an array of another session" in refused("BAD_ARGUMENTS", vadd, nop_args, a, a, 2)


def test_the_farm_works_after_all_of_it(tracker, vadd_module):
    with tracker.request("cpu") as s:
        s.upload(vadd_module)
        vadd = s.load_module(vadd_module.name)["vadd"]
        a = s.array(np.arange(4, dtype=np.float32))
        c = s.empty(4, "float32")
        vadd(a, a, c, 4)
        assert c.numpy().tolist() == [0, 2, 4, 6]
    assert {b.health for b in tracker.summary().boards} == {"healthy"}


def test_a_hung_kernel_ends_within_its_session_with_a_timeout_that_says_why(tracker):
    """Issue 31, item 11: the board's default is 60 s, but a call never waits past what its session has left."""
    mod = build_cpu(BAD_SOURCE, BAD_FUNCTIONS)
    with tracker.request("cpu", session_timeout=4) as s:
        s.upload(mod)
        spin = s.load_module(mod.name)["spin"]
        t0 = time.monotonic()
        with pytest.raises(FarmError) as e:
            spin()
        took = time.monotonic() - t0
    assert e.value.code == "TIMEOUT", e.value.message
    assert "all its session had left: its sessionTimeoutMs of 4000 ms" in e.value.message
    assert "session_timeout= in Python" in e.value.message
    assert took < 4, f"ended within the session's 4 s, well before the board's 60 s default: {took:.1f} s"
