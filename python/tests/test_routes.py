"""Every route the TypeScript SDK takes — auto (the worker's standby lane, then
the agent's port, relay as the fallback), direct, relay, grpc — from Python:
the same bytes, calls and ends on each, and many requests in flight at once."""
from __future__ import annotations

import os
import re
import socket
import threading
import time

import numpy as np
import pytest

import kernelfarm
from kernelfarm import FarmError
from farm import AgentProcess, wait_for, wait_for_free_boards
from modules import BAD_FUNCTIONS, BAD_SOURCE, build_cpu

LANES = ["direct", "relay", "grpc"]


@pytest.fixture(scope="module")
def bad_module():
    return build_cpu(BAD_SOURCE, BAD_FUNCTIONS)


@pytest.mark.parametrize("route", ["auto", *LANES])
def test_each_route_carries_files_arrays_and_calls(tracker, vadd_module, route):
    payload = np.random.default_rng(5).integers(0, 256, 3 * (1 << 20) + 5, dtype=np.uint8).tobytes()
    with tracker.request("cpu", route=route) as s:
        assert s.lane == ("direct" if route == "auto" else route)
        assert s.lane_note is None
        s.upload(payload, "p.bin")
        assert s.download("p.bin") == payload, f"{route}: the bytes came back intact"
        s.upload(vadd_module)
        vadd = s.load_module(vadd_module.name)["vadd"]
        n = 300_000  # arrays of more than one chunk each way
        x = np.arange(n, dtype=np.float32)
        a, b, c = s.array(x), s.array(np.full(n, 0.25, np.float32)), s.empty(n, "float32")
        vadd(a, b, c, n)
        np.testing.assert_array_equal(c.numpy(), x + 0.25)
        assert s.stats().counters["calls"] == 1


def test_the_route_comes_from_kfarm_route(tracker, monkeypatch):
    monkeypatch.setenv("KFARM_ROUTE", "relay")
    with tracker.request("cpu") as s:
        assert s.lane == "relay"
    monkeypatch.setenv("KFARM_ROUTE", "carrier-pigeon")
    with pytest.raises(FarmError) as e:
        tracker.request("cpu")
    assert e.value.code == "INVALID_ARGUMENT"
    assert e.value.message == "request(): route must be one of auto, direct, relay, grpc, got 'carrier-pigeon'"


@pytest.mark.parametrize("lane", LANES)
def test_many_requests_in_flight_from_many_threads(tracker, vadd_module, lane):
    with tracker.request("cpu", route=lane) as s:
        s.upload(vadd_module)
        vadd = s.load_module(vadd_module.name)["vadd"]
        failures: list[BaseException] = []

        def work(seed: int) -> None:
            try:
                rng = np.random.default_rng(seed)
                for _ in range(10):
                    n = int(rng.integers(1, 70_000))
                    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
                    a, b, c = s.array(x), s.array(y), s.empty(n, "float32")
                    vadd(a, b, c, n)
                    np.testing.assert_array_equal(c.numpy(), x + y)
                    for arr in (a, b, c):
                        arr.free()
            except BaseException as err:  # noqa: BLE001 - reported by the test
                failures.append(err)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not failures, failures[0]
        assert s.stats().counters["calls"] == 60


@pytest.mark.parametrize("lane", LANES)
def test_a_crash_ends_the_session_with_the_code_the_typescript_sdk_sees(tracker, bad_module, lane):
    s = tracker.request("cpu", route=lane)
    try:
        s.upload(bad_module)
        segv = s.load_module(bad_module.name)["segv"]
        with pytest.raises(FarmError) as e:
            segv(0)
        assert e.value.code == "RUNTIME_CRASH", e.value
        assert s.is_closed and s.closed_reason.code == "RUNTIME_CRASH"
        with pytest.raises(FarmError) as later:
            s.listdir()
        assert later.value.code == "RUNTIME_CRASH" and f"session {s.id} has ended" in later.value.message
    finally:
        s.close()


def test_a_call_past_its_timeout_ends_the_session_with_timeout(tracker, bad_module):
    with tracker.request("cpu") as s:
        s.upload(bad_module)
        spin = s.load_module(bad_module.name)["spin"]
        with pytest.raises(FarmError) as e:
            spin(timeout=0.5)
        assert e.value.code == "TIMEOUT" and "spin" in e.value.message


@pytest.fixture(scope="module")
def odd_boards(farm, tracker):
    """Boards whose direct lane cannot work: an agent serving none (key nodirect),
    one advertising a port that refuses (refused), one advertising a port that
    accepts and never answers (holed)."""
    hole = socket.create_server(("127.0.0.1", 0))
    agents = []
    try:
        agents.append(AgentProcess(farm.address, ["cpu:key=nodirect"], ["--no-direct", "--name", "nodirect-agent"]))
        agents.append(AgentProcess(farm.address, ["cpu:key=refused"], ["--data-advertise", "127.0.0.1:1", "--name", "refused-agent"]))
        agents.append(
            AgentProcess(
                farm.address, ["cpu:key=holed"], ["--data-advertise", f"127.0.0.1:{hole.getsockname()[1]}", "--name", "holed-agent"]
            )
        )
        for key in ("nodirect", "refused", "holed"):
            wait_for_free_boards(tracker, 1, key)
        yield
    finally:
        for a in agents:
            a.stop()
        hole.close()


def test_auto_takes_the_relay_from_an_agent_without_a_direct_lane(tracker, odd_boards):
    with tracker.request("nodirect") as s:
        # The tracker knows there is no direct lane: it grants the relay itself.
        assert (s.lane, s.lane_note) == ("relay", None)
        assert s.listdir() == []
    with pytest.raises(FarmError) as e:
        tracker.request("nodirect", route="direct")
    assert e.value.code == "UNAVAILABLE" and "serves no direct lane" in e.value.message
    # The refused request gave its board back at once.
    wait_for_free_boards(tracker, 1, "nodirect")
    with tracker.request("nodirect", route="grpc") as s:
        assert s.lane == "grpc"


def test_auto_falls_back_to_the_relay_when_the_direct_address_refuses(tracker, odd_boards):
    with tracker.request("refused") as s:
        assert s.lane == "relay"
        assert re.search(r"direct lane to 127\.0\.0\.1:1 failed .*fell back to the tracker's relay", s.lane_note), s.lane_note
        s.listdir()


def test_auto_falls_back_within_its_bound_when_the_direct_address_black_holes(tracker, odd_boards):
    t0 = time.monotonic()
    with tracker.request("holed", direct_timeout=0.3) as s:
        took = time.monotonic() - t0
        assert s.lane == "relay"
        assert re.search(r"no welcome within|did not answer within", s.lane_note), s.lane_note
        assert took < 3, f"the fallback took {took:.1f} s"
        s.listdir()


def test_sessions_on_every_board_at_once(tracker):
    sessions = [tracker.request("cpu"), tracker.request("cpu"), tracker.request("vta")]
    try:
        assert len({s.board.id for s in sessions}) == 3
        for s in sessions:
            s.upload(s.id.encode(), "id.txt")
        for s in sessions:
            assert s.download("id.txt") == s.id.encode()
    finally:
        for s in sessions:
            s.close()
    assert isinstance(sessions[0], kernelfarm.Session)


def test_sessions_leave_no_threads_or_sockets_behind(tracker):
    def open_sockets() -> int:
        return len(os.listdir(f"/proc/{os.getpid()}/fd"))

    with tracker.request("cpu") as warm:  # whatever a first session starts once (gRPC's own threads) is started
        warm.listdir()
    threads, fds = threading.active_count(), open_sockets()
    for _ in range(3):
        for lane in LANES:
            with tracker.request("cpu", route=lane) as s:
                s.upload(b"x", "x")
    wait_for("the sessions' threads to end", lambda: threading.active_count() <= threads, timeout=10)
    wait_for("the sessions' sockets to close", lambda: open_sockets() <= fds, timeout=10)
