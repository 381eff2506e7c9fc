"""summary() and Session.board hand out Python objects (kernelfarm/summary.py),
each class the mirror of its farm.v1 message: the same fields, in the
message's order, and every value carried over — so a field added to the
contract fails here until the SDK carries it too."""
from __future__ import annotations

import dataclasses
import typing

import numpy as np
import pytest

import kernelfarm
from kernelfarm.protos import common_pb2, host_pb2
from kernelfarm.summary import board_info, farm_summary

MIRRORS = [
    (kernelfarm.FarmSummary, host_pb2.SummaryReply),
    (kernelfarm.QueueInfo, host_pb2.QueueInfo),
    (kernelfarm.AgentInfo, host_pb2.AgentInfo),
    (kernelfarm.BoardInfo, common_pb2.BoardInfo),
    (kernelfarm.HealthChange, common_pb2.HealthChange),
    (kernelfarm.CanaryTiming, common_pb2.CanaryTiming),
    (kernelfarm.CudaLaunchLimits, common_pb2.CudaLaunchLimits),
]


@pytest.mark.parametrize("cls, message", MIRRORS, ids=[m[1].DESCRIPTOR.name for m in MIRRORS])
def test_each_class_has_its_message_fields(cls, message):
    # `from` is a Python keyword: the attribute is from_.
    wire = [f.name for f in message.DESCRIPTOR.fields]
    assert [f.name.rstrip("_") for f in dataclasses.fields(cls)] == wire


def test_every_value_is_carried_over_as_a_python_value():
    board = common_pb2.BoardInfo(
        id="a1/c0", key="cpu", kind=common_pb2.BOARD_KIND_CPU, labels={"arch": "x86_64"}, capabilities={"cores": "2"},
        agent_id="ag", agent_name="a1",
        state=common_pb2.BOARD_STATE_BUSY, session_id="s1", client_id="me", health=common_pb2.BOARD_HEALTH_SUSPECT,
        health_reason="slow canary", last_error="TIMEOUT", drained=True, last_canary="passed: vadd", last_canary_at_ms=1.5,
        session_lane=common_pb2.LANE_DIRECT, drain_reason="drained by alice",
        canary_ns=120.0, canary_baseline_ns=100.0, canary_baseline_runs=5, canary_drift=1.2,
    )  # fmt: skip
    board.health_history.add(at_ms=2.0, to=common_pb2.BOARD_HEALTH_SUSPECT, reason="slow canary")
    setattr(board.health_history[0], "from", common_pb2.BOARD_HEALTH_HEALTHY)
    board.canary_timings.add(at_ms=3.0, kernel_ns=120.0)
    board.cuda_limits.CopyFrom(
        common_pb2.CudaLaunchLimits(max_threads_per_block=1024, max_block=[1024, 1024, 64], max_grid=[7, 8, 9], warp_size=32)
    )
    reply = host_pb2.SummaryReply(tracker_version="1.2.3", uptime_ms=42.0)
    reply.boards.append(board)
    reply.queues.add(key="cpu", total=2, free=1, pending=3)
    reply.agents.add(id="ag", name="a1", peer="127.0.0.1:5", attached_at_ms=7.0, boards=2)

    s = farm_summary(reply)
    assert s == kernelfarm.FarmSummary(
        queues=[kernelfarm.QueueInfo("cpu", 2, 1, 3)],
        boards=[board_info(board)],
        agents=[kernelfarm.AgentInfo("ag", "a1", "127.0.0.1:5", 7.0, 2)],
        tracker_version="1.2.3",
        uptime_ms=42.0,
    )
    b = s.boards[0]
    enums = ("kind", "state", "session_lane", "health")
    for f in common_pb2.BoardInfo.DESCRIPTOR.fields:
        if f.name not in ("labels", "capabilities", "health_history", "canary_timings", "cuda_limits", *enums):
            assert getattr(b, f.name) == getattr(board, f.name), f.name
    # Enums by the names users see, as the TypeScript SDK gives them (protos/enums.ts).
    assert (b.kind, b.state, b.session_lane, b.health) == ("cpu", "busy", "direct", "suspect")
    assert type(b.labels) is dict and b.labels == {"arch": "x86_64"} and b.capabilities == {"cores": "2"}
    assert b.health_history == [kernelfarm.HealthChange(at_ms=2.0, from_="healthy", to="suspect", reason="slow canary")]
    assert b.canary_timings == [kernelfarm.CanaryTiming(at_ms=3.0, kernel_ns=120.0)]
    assert b.cuda_limits == kernelfarm.CudaLaunchLimits(1024, (1024, 1024, 64), (7, 8, 9), 0, 0, 0, 32)
    assert board_info(common_pb2.BoardInfo(id="a1/cpu0")).cuda_limits is None, "no limits on another kind of board"
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.state = "free"  # type: ignore[misc]


def _fields_of_their_declared_types(obj) -> list[str]:
    """The fields of a summary object (and of those it holds) whose value is not of the type declared for it,
    by `type(...) is`: an integer field holding 3.0 compares equal to 3, and would pass an `==`."""
    wrong = []
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        value, declared = getattr(obj, f.name), hints[f.name]
        if declared in (int, float, str, bool) and type(value) is not declared:
            wrong.append(f"{type(obj).__name__}.{f.name} = {value!r}, not {declared.__name__}")
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if dataclasses.is_dataclass(item):
                wrong += _fields_of_their_declared_types(item)
    return wrong


def test_a_real_farms_summary_is_python_objects_with_integers_as_int(tracker):
    s = tracker.summary()
    assert type(s) is kernelfarm.FarmSummary, "not the protobuf message"
    assert s.boards and s.queues and s.agents
    assert _fields_of_their_declared_types(s) == []
    assert type(s.queues[0].total) is int and type(s.agents[0].boards) is int


def test_a_boards_counters_that_count_are_ints(remote, vadd_module):
    """The counters travel as doubles: a count came back as 3.0."""
    remote.upload(vadd_module)
    vadd = remote.load_module(vadd_module.name)["vadd"]
    a, b, c = (remote.array(np.ones(4, np.float32)) for _ in range(3))
    for _ in range(3):
        vadd(a, b, c, 4)
    counters = remote.stats().counters
    assert counters["calls"] == 3 and counters["arrays"] == 3 and counters["array_bytes"] == 48
    counts = ("calls", "call_ns_total", "array_bytes", "arrays", "modules", "uploads_reused", "upload_bytes_reused")
    assert {k: type(counters[k]) for k in counts} == {k: int for k in counts}
    assert all(type(v) in (int, float) for v in counters.values())
