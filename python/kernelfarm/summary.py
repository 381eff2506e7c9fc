"""The farm's state as Python objects: what `TrackerClient.summary()` returns
and what `Session.board` is (farm.v1.SummaryReply and BoardInfo, protos/farm/v1).

Frozen dataclasses with the messages' field names, so code written against
the protobuf reads the same (`summary.boards[0].labels["arch"]`); maps are
dicts and repeated fields lists. `HealthChange.from_` is the wire's `from`,
a Python keyword. tests/test_summary_types.py holds each class to its
message: a field added to the contract fails it until it is added here.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from .enums import BOARD_HEALTH, BOARD_KIND, BOARD_STATE, LANE


@dataclasses.dataclass(frozen=True)
class HealthChange:
    """One move of a board's health (healthy | suspect | quarantined)."""

    at_ms: float
    from_: str
    to: str
    reason: str


@dataclasses.dataclass(frozen=True)
class CanaryTiming:
    """One timed canary run of a board, as the tracker received it."""

    at_ms: float
    kernel_ns: float


@dataclasses.dataclass(frozen=True)
class CudaLaunchLimits:
    """What a CUDA board's GPU allows one kernel launch, as its driver reports it (dimensions as (x, y, z))."""

    max_threads_per_block: int
    max_block: tuple[int, ...]
    max_grid: tuple[int, ...]
    max_shared_per_block: int
    max_shared_per_block_optin: int
    max_registers_per_block: int
    warp_size: int


@dataclasses.dataclass(frozen=True)
class BoardInfo:
    """A board as the tracker knows it; `id` is "<agent name>/<board name>".
    `health_history` and `canary_timings` are filled only when
    `summary(health_history=True)` asks."""

    id: str
    key: str
    #: One of the kinds agents serve (cpu, cuda, vta-sim, vta, tvm), or tvm-rpc: a stock TVM server's board.
    kind: str
    labels: dict[str, str]
    capabilities: dict[str, str]
    agent_id: str
    agent_name: str
    state: str
    session_id: str
    client_id: str
    health: str
    health_reason: str
    last_error: str
    drained: bool
    last_canary: str
    last_canary_at_ms: float
    session_lane: str
    drain_reason: str
    health_history: list[HealthChange]
    canary_ns: float
    canary_baseline_ns: float
    canary_baseline_runs: int
    canary_drift: float
    canary_timings: list[CanaryTiming]
    #: A CUDA board's launch limits; None on other kinds of boards.
    cuda_limits: Optional[CudaLaunchLimits]


@dataclasses.dataclass(frozen=True)
class QueueInfo:
    """A key's queue: its boards (`total`, `free`) and the requests waiting (`pending`)."""

    key: str
    total: int
    free: int
    pending: int


@dataclasses.dataclass(frozen=True)
class AgentInfo:
    """An attached agent: `boards` is how many it serves."""

    id: str
    name: str
    peer: str
    attached_at_ms: float
    boards: int


@dataclasses.dataclass(frozen=True)
class FarmSummary:
    """The farm's state (TVM's query_rpc_tracker)."""

    queues: list[QueueInfo]
    boards: list[BoardInfo]
    agents: list[AgentInfo]
    tracker_version: str
    uptime_ms: float


def board_info(m: Any) -> BoardInfo:
    """A farm.v1.BoardInfo message as a BoardInfo, its enums by name ("free"); a value this SDK does not know is a PROTOCOL_ERROR."""
    what = f"the tracker's board {m.id}"
    return BoardInfo(
        id=m.id,
        key=m.key,
        kind=BOARD_KIND.from_wire(m.kind, what, "PROTOCOL_ERROR"),
        labels=dict(m.labels),
        capabilities=dict(m.capabilities),
        agent_id=m.agent_id,
        agent_name=m.agent_name,
        state=BOARD_STATE.from_wire(m.state, what, "PROTOCOL_ERROR"),
        session_id=m.session_id,
        client_id=m.client_id,
        health=BOARD_HEALTH.from_wire(m.health, what, "PROTOCOL_ERROR"),
        health_reason=m.health_reason,
        last_error=m.last_error,
        drained=m.drained,
        last_canary=m.last_canary,
        last_canary_at_ms=m.last_canary_at_ms,
        session_lane=LANE.from_wire(m.session_lane, what, "PROTOCOL_ERROR"),
        drain_reason=m.drain_reason,
        health_history=[
            HealthChange(
                h.at_ms,
                BOARD_HEALTH.from_wire(getattr(h, "from"), what, "PROTOCOL_ERROR"),
                BOARD_HEALTH.from_wire(h.to, what, "PROTOCOL_ERROR"),
                h.reason,
            )
            for h in m.health_history
        ],
        canary_ns=m.canary_ns,
        canary_baseline_ns=m.canary_baseline_ns,
        canary_baseline_runs=m.canary_baseline_runs,
        canary_drift=m.canary_drift,
        canary_timings=[CanaryTiming(c.at_ms, c.kernel_ns) for c in m.canary_timings],
        cuda_limits=cuda_limits(m.cuda_limits) if m.HasField("cuda_limits") else None,
    )


def cuda_limits(m: Any) -> CudaLaunchLimits:
    """A farm.v1.CudaLaunchLimits message as a CudaLaunchLimits."""
    return CudaLaunchLimits(
        max_threads_per_block=m.max_threads_per_block,
        max_block=tuple(m.max_block),
        max_grid=tuple(m.max_grid),
        max_shared_per_block=m.max_shared_per_block,
        max_shared_per_block_optin=m.max_shared_per_block_optin,
        max_registers_per_block=m.max_registers_per_block,
        warp_size=m.warp_size,
    )


def farm_summary(m: Any) -> FarmSummary:
    """A farm.v1.SummaryReply message as a FarmSummary."""
    return FarmSummary(
        queues=[QueueInfo(q.key, q.total, q.free, q.pending) for q in m.queues],
        boards=[board_info(b) for b in m.boards],
        agents=[AgentInfo(a.id, a.name, a.peer, a.attached_at_ms, a.boards) for a in m.agents],
        tracker_version=m.tracker_version,
        uptime_ms=m.uptime_ms,
    )
