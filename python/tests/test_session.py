"""A session through the Python SDK against real tracker and agent processes:
files, arrays of every dtype, a CPU kernel checked against numpy,
time_evaluator in TVM's shape, stats, and the session's end."""
from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

import kernelfarm
from kernelfarm import FarmError
from kernelfarm.dtypes import DTYPES
from farm import wait_for
from modules import build_cpu

MIB = 1 << 20


def test_files_upload_download_listdir_remove(remote, tmp_path):
    path = tmp_path / "weights.bin"
    # More than three chunks, not a multiple of one: the chunking shows in the bytes.
    payload = np.random.default_rng(1).integers(0, 256, 3 * MIB + 5, dtype=np.uint8).tobytes()
    path.write_bytes(payload)
    assert remote.upload(str(path)) == "weights.bin"
    assert remote.upload(b"hello", "hello.txt") == "hello.txt"
    assert remote.upload(memoryview(b"again"), name="renamed.txt") == "renamed.txt"
    assert sorted(remote.listdir()) == [("hello.txt", 5), ("renamed.txt", 5), ("weights.bin", len(payload))]
    got = remote.download("weights.bin")
    assert isinstance(got, bytearray)
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(payload).hexdigest()
    assert remote.download("hello.txt") == b"hello"
    remote.remove("hello.txt")
    assert [f.name for f in remote.listdir()] == ["renamed.txt", "weights.bin"]
    with pytest.raises(FarmError) as e:
        remote.download("hello.txt")
    assert e.value.code == "NOT_FOUND"


def test_dedupe_upload_is_taken_from_the_boards_store(tracker):
    payload = np.random.default_rng(2).integers(0, 256, 2 * MIB + 1, dtype=np.uint8).tobytes()
    with tracker.request("cpu") as s:
        s.upload(payload, "first.bin", dedupe=True)
        before = s.stats().counters.get("uploads_reused", 0)
        s.upload(payload, "second.bin", dedupe=True)
        assert s.stats().counters["uploads_reused"] == before + 1
        assert s.download("second.bin") == payload


def test_bytes_a_session_uploaded_are_not_sent_again_in_it_whatever_their_size_and_name(tracker, vadd_module):
    """One frame's bytes (here 100 KB and a module) were sent again: only more than one frame was asked for first."""
    small = np.random.default_rng(31).integers(0, 256, 100_000, dtype=np.uint8).tobytes()
    with tracker.request("cpu") as s:
        s.upload(small, "first.bin", dedupe=True)
        s.upload(vadd_module)
        assert (s.stats().counters["uploads_reused"], s.stats().counters["upload_bytes_reused"]) == (0, 0), "the first time they travel"
        s.upload(small, "again.bin", dedupe=True)
        s.upload(vadd_module, "vadd-again.kfm")
        counters = s.stats().counters
        assert (counters["uploads_reused"], counters["upload_bytes_reused"]) == (2, len(small) + len(vadd_module.bytes)), "taken, not sent"
        assert s.download("again.bin") == small
        assert s.load_module("vadd-again.kfm")["nop"]() is None
        # Other bytes of the same size are other bytes: sent.
        other = bytes(255 - b for b in small)
        s.upload(other, "again.bin", dedupe=True)
        assert s.stats().counters["uploads_reused"] == 2
        assert s.download("again.bin") == other


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_arrays_of_every_dtype_round_trip(remote, dtype):
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else np.finfo(dtype)
    x = np.linspace(max(info.min, -1e6), min(info.max, 1e6), 24).astype(dtype).reshape(2, 3, 4)
    a = remote.array(x)
    assert (a.shape, a.dtype, a.nbytes) == ((2, 3, 4), dtype, x.nbytes)
    got = a.numpy()
    assert got.dtype == np.dtype(dtype) and got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got, x)
    got[0, 0, 0] = 7  # a writable array of its own
    a.copyfrom(x[::-1].copy())
    np.testing.assert_array_equal(a.numpy(), x[::-1])


def test_non_contiguous_arrays_are_copied_in_row_major_order(remote, vadd_module):
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    for view in (base.T, base[::2, 1::3], base[:, 3]):
        assert not view.flags.c_contiguous
        a = remote.array(view)
        assert a.shape == view.shape
        np.testing.assert_array_equal(a.numpy(), view)
    # A kernel sees the values in the order numpy shows them.
    remote.upload(vadd_module)
    vadd = remote.load_module(vadd_module.name)["vadd"]
    t = base.T
    a, b, c = remote.array(t), remote.array(np.ones_like(t)), remote.empty(t.shape, "float32")
    vadd(a, b, c, t.size)
    np.testing.assert_array_equal(c.numpy(), t + 1)
    # Another byte order is converted the same way.
    big = np.arange(5, dtype=">i4")
    np.testing.assert_array_equal(remote.array(big).numpy(), [0, 1, 2, 3, 4])


def test_empty_arrays_and_seeded_fills(remote):
    e = remote.empty((0,), "float64")
    assert e.nbytes == 0 and e.numpy().shape == (0,)
    for dtype, fill in (
        ("float32", kernelfarm.RandomFill(7)),
        ("int8", kernelfarm.RandomFill(9)),
        ("float64", kernelfarm.RandomFill(3, -5, 5, True)),
    ):
        r = remote.random((4, 250), dtype, fill.seed, fill.low, fill.high, fill.integers)
        want = kernelfarm.random_array(dtype, 1000, fill).reshape(4, 250)
        np.testing.assert_array_equal(r.numpy(), want)


def test_a_cpu_kernel_called_with_numpy_arrays(remote, vadd_module):
    assert remote.upload(vadd_module) == vadd_module.name
    mod = remote.load_module(vadd_module.name)
    assert mod.target == "cpu" and [f.name for f in mod.functions] == ["vadd", "scale", "nop"]
    n = 10_000
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    y = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    a, b, c = remote.array(x), remote.array(y), remote.empty(n, "float32")
    mod["vadd"](a, b, c, n)
    np.testing.assert_array_equal(c.numpy(), x + y)
    # Scalars: an integer and a float, numpy scalars too.
    mod.get_function("scale")(c, np.int32(n), np.float32(0.5))
    np.testing.assert_array_equal(c.numpy(), (x + y) * np.float32(0.5))
    mod["scale"](c, n, 2)  # an int for a float parameter
    np.testing.assert_array_equal(c.numpy(), x + y)


def loaded_vadd(remote, vadd_module, n):
    """The vadd module loaded on the board, with two inputs of ones and an output of `n` float32."""
    remote.upload(vadd_module)
    mod = remote.load_module(vadd_module.name)
    return mod, remote.array(np.ones(n, np.float32)), remote.array(np.ones(n, np.float32)), remote.empty(n, "float32")


def test_time_evaluator_returns_tvms_result_shape(remote, vadd_module):
    n = 4096
    mod, a, b, c = loaded_vadd(remote, vadd_module, n)
    r = mod.time_evaluator("vadd", number=20, repeat=4)(a, b, c, n)
    assert isinstance(r, kernelfarm.BenchmarkResult)
    assert len(r.results) == 4 and r.number == 20
    assert all(x > 0 for x in r.results)
    assert r.min <= r.median <= r.max and r.min <= r.mean <= r.max
    assert r.mean == pytest.approx(float(np.mean(r.results)))
    assert r.median == pytest.approx(float(np.median(r.results)))
    assert r.std == pytest.approx(float(np.std(r.results)))
    assert str(r).splitlines()[0] == "Execution time summary:"
    np.testing.assert_array_equal(c.numpy(), 2 * np.ones(n, np.float32))
    # Positional options in TVM's order after the name: number, repeat, min_repeat_ms, limit_zero_time_iterations, …
    positional = mod.time_evaluator("vadd", 3, 2, 0, 100)(a, b, c, n)
    assert (positional.number, len(positional.results)) == (3, 2)
    # min_repeat_ms grows `number`, and the grown number persists into the next evaluation (TVM's semantics).
    grow = mod.time_evaluator("nop", number=1, repeat=1, min_repeat_ms=20)
    first = grow()
    assert first.number > 1 and first.results[0] * first.number >= 0.020
    assert grow().number >= first.number


def test_time_evaluator_takes_a_precision_target(remote, vadd_module):
    n = 4096
    mod, a, b, c = loaded_vadd(remote, vadd_module, n)
    plain = mod.time_evaluator("vadd", number=3, repeat=2)(a, b, c, n)
    assert (plain.stopped_by, len(plain.results)) == ("repeat", 2)
    # A loose target is reached after the 10 repeats the board wants at least; a hopeless one runs until its budget ends.
    loose = mod.time_evaluator("vadd", number=3, repeat=3, target_rse=0.5, budget_ms=2000)(a, b, c, n)
    assert loose.stopped_by == "precision"
    assert loose.rse <= 0.5 and len(loose.results) >= 10
    hopeless = mod.time_evaluator("vadd", number=1, repeat=2, target_rse=1e-12, budget_ms=150)(a, b, c, n)
    assert hopeless.stopped_by == "budget"
    assert hopeless.rse > 1e-12 and len(hopeless.results) > 2
    for bad in (1, -0.1, math.nan, "0.1"):
        with pytest.raises(FarmError) as e:
            mod.time_evaluator("vadd", target_rse=bad)
        assert e.value.code == "INVALID_ARGUMENT" and e.value.message.startswith("time_evaluator target_rse must be a number in [0, 1)")
    with pytest.raises(FarmError) as e:
        mod.time_evaluator("vadd", target_rse=0.1, budget_ms=-1)
    assert e.value.message.startswith("time_evaluator budget_ms must be a number in [0, 4294967295]") and e.value.message.endswith("got -1")


def test_stats_count_calls_and_clear(remote, vadd_module):
    remote.upload(vadd_module)
    nop = remote.load_module(vadd_module.name)["nop"]
    remote.clear_stats()
    for _ in range(5):
        nop()
    stats = remote.stats()
    assert stats.counters["calls"] == 5
    assert stats.info["kind"] == "cpu"
    remote.clear_stats()
    assert remote.stats().counters["calls"] == 0


PRINT_SOURCE = r"""
#include <stdint.h>
#include <stdio.h>
void shout(int32_t k) {
  printf("tenant says %d\n\n{\"level\":60}\n\xff\n", k);
  fprintf(stderr, "tenant stderr %d\n", k);
}
"""


def test_output_is_what_the_sessions_kernels_printed_and_no_other_sessions(tracker):
    module = build_cpu(PRINT_SOURCE, {"shout": ["int32 k"]})
    with tracker.request("cpu") as s:
        assert s.output() == ""
        s.upload(module)
        s.load_module(module.name)["shout"](5)
        out = s.output()
        assert 'tenant says 5\n\n{"level":60}\n\ufffd\n' in out and "tenant stderr 5\n" in out
        board = s.board.id
    wait_for(f"board {board} free again", lambda: any(b.id == board and b.state == "free" for b in tracker.summary().boards))
    with tracker.request("cpu", board=board) as nxt:
        assert nxt.output() == ""


def test_a_closed_session_refuses_later_calls_and_its_board_returns(tracker, vadd_module):
    with tracker.request("cpu") as s:
        assert s.lane in kernelfarm.ROUTES and not s.is_closed
        s.upload(vadd_module)
        mod = s.load_module(vadd_module.name)
        board = s.board.id
    assert s.is_closed and s.closed_reason.code == "SESSION_CLOSED"
    for later in (s.listdir, lambda: mod["nop"](), lambda: s.upload(b"x", "x")):
        with pytest.raises(FarmError) as e:
            later()
        assert e.value.code == "SESSION_CLOSED"
    s.close()  # twice is fine
    wait_for(f"board {board} free again", lambda: any(b.id == board and b.state == "free" for b in tracker.summary().boards))


def test_the_session_timeout_ends_the_session_with_its_code(tracker):
    s = tracker.request("cpu", session_timeout=0.5)
    wait_for("the lease to end", lambda: s.is_closed, timeout=10)
    assert s.closed_reason.code == "SESSION_TIMEOUT"
    with pytest.raises(FarmError) as e:
        s.listdir()
    assert e.value.code == "SESSION_TIMEOUT" and f"session {s.id} has ended" in e.value.message
    s.close()


def test_summary_lists_queues_boards_and_agents(tracker):
    s = tracker.summary()
    assert {(q.key, q.total) for q in s.queues} >= {("cpu", 2), ("vta", 1), ("fpga", 1)}
    assert {b.kind for b in s.boards} == {"cpu", "vta-sim", "vta"}
    assert len(s.agents) == 1 and s.tracker_version
    only = tracker.summary(key="vta")
    assert [b.key for b in only.boards] == ["vta"]
    # Python objects, not the wire's messages: a dataclass per item, dicts for maps, lists for repeated fields.
    assert type(s) is kernelfarm.FarmSummary and type(s.boards) is list
    board = next(b for b in s.boards if b.key == "cpu")
    assert type(board) is kernelfarm.BoardInfo and type(board.labels) is dict and type(board.capabilities) is dict
    assert board.agent_name == s.agents[0].name and board.id.startswith(board.agent_name + "/")
    assert type(s.agents[0]) is kernelfarm.AgentInfo and type(s.queues[0]) is kernelfarm.QueueInfo
    assert s.agents[0].boards == 4 and s.uptime_ms > 0
    with tracker.request("cpu") as remote:
        assert type(remote.board) is kernelfarm.BoardInfo and remote.board.key == "cpu" and remote.board.state == "busy"
