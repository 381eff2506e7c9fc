"""measure() loses nothing when the farm fails under it (docs/measure.md,
"Infrastructure failures: waited out, not recorded"; issue 28): a batch with
a results file while its agent is killed with SIGKILL and restarted, then its
tracker (with --state-dir, on the same port), finishes with every candidate
measured exactly once and no INFRA_ERROR. A farm that stays away past
`infra_deadline` makes INFRA_ERROR a result — which a rerun measures again.
Refusals no wait heals stop the batch at once.

Each test starts its own tracker and agent, as processes: these tests kill them.
"""
from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import kernelfarm
from farm import AgentProcess, TrackerProcess, wait_for, wait_for_free_boards
from kernelfarm import Candidate, FarmError, Output
from kernelfarm.backoff import Backoff
from modules import build_cpu

#: ~10 ms a call on this machine's cores: a candidate (2 checks, 5 × 3 timed calls) takes ~150 ms on its board.
BUSY_SOURCE = """
#include <stdint.h>
void busy(float* out, int32_t n, int32_t iters) {
  volatile uint32_t x = 0;
  for (int32_t k = 0; k < iters; k++) x += (uint32_t)k;
  for (int32_t i = 0; i < n; i++) out[i] = (float)i;
}
"""
BUSY_FUNCTIONS = {"busy": ["float32* out", "int32 n", "int32 iters"]}
BOARDS = ["cpu:key=fault,name=f0", "cpu:key=fault,name=f1"]
N = 64


@pytest.fixture(scope="module")
def busy_module():
    return build_cpu(BUSY_SOURCE, BUSY_FUNCTIONS)


def busy(cid: str, module, iters: int) -> Candidate:
    return Candidate(
        module, "busy", [Output((N,), "float32", np.arange(N, dtype=np.float32)), N, iters], id=cid, definition={"kernel": "busy"}
    )


def line_count(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_a_batch_survives_its_agent_and_its_tracker_killed_mid_batch(tmp_path, busy_module):
    state = tmp_path / "state"
    path = tmp_path / "faults.jsonl"
    tracker = TrackerProcess(["--state-dir", str(state)])
    agent = AgentProcess(tracker.address, BOARDS, ["--name", "faulty"])
    client = kernelfarm.connect_tracker(tracker.address)
    try:
        wait_for_free_boards(client, 2, "fault")
        candidates = [busy(f"c{i:02}", busy_module, 10_000_000 + i) for i in range(40)]
        ended: dict[str, object] = {}

        def batch() -> None:
            try:
                ended["results"] = kernelfarm.measure(
                    client,
                    candidates,
                    key="fault",
                    results_file=str(path),
                    time_evaluator={"number": 5, "repeat": 3},
                    progress=False,
                )
            except BaseException as err:  # noqa: BLE001 - reported by the assertion below
                ended["error"] = err

        t0 = time.monotonic()
        runner = threading.Thread(target=batch, name="measure-under-faults", daemon=True)
        runner.start()
        events = []

        wait_for("8 results in the file", lambda: line_count(path) >= 8, timeout=60)
        agent.stop(signal.SIGKILL)
        events.append(f"agent killed at {line_count(path)} lines, {time.monotonic() - t0:.1f} s")
        agent = AgentProcess(tracker.address, BOARDS, ["--name", "faulty"])
        events.append(f"agent back at {line_count(path)} lines, {time.monotonic() - t0:.1f} s")

        wait_for("20 results in the file", lambda: line_count(path) >= 20, timeout=60)
        tracker.stop(signal.SIGKILL)
        events.append(f"tracker killed at {line_count(path)} lines, {time.monotonic() - t0:.1f} s")
        tracker = TrackerProcess(["--state-dir", str(state)], port=tracker.port)
        events.append(f"tracker back at {line_count(path)} lines, {time.monotonic() - t0:.1f} s")

        runner.join(timeout=180)
        events.append(f"batch ended at {line_count(path)} lines, {time.monotonic() - t0:.1f} s")
        print("\n".join(events))
        assert not runner.is_alive(), "the batch did not end"
        assert "error" not in ended, ended.get("error")
        results = ended["results"]
        assert isinstance(results, list)
        print("attempts:", {r.id: r.attempts for r in results if r.attempts > 1})
        assert [r.id for r in results] == [c.id for c in candidates]
        assert [(r.id, r.outcome, r.message) for r in results if r.outcome != "OK"] == [], "every candidate OK, none INFRA_ERROR"
        written = [json.loads(line) for line in path.read_text().splitlines()]
        ids = [line["id"] for line in written]
        assert sorted(ids) == [c.id for c in candidates], "one line per candidate: none lost, none measured twice"
        assert all(
            line["outcome"] == "OK" and line["digest"] == r.digest for line, r in zip(sorted(written, key=lambda w: w["id"]), results)
        )
        assert any(r.attempts > 1 for r in results), "a session was lost under some candidate (else the faults tested nothing)"
    finally:
        client.close()
        agent.stop()
        tracker.stop()


def test_infra_error_after_infra_deadline_and_a_rerun_measures_it_again(tmp_path, busy_module):
    path = tmp_path / "outage.jsonl"
    tracker = TrackerProcess()
    client = kernelfarm.connect_tracker(tracker.address)
    agent = None
    try:
        tracker.stop(signal.SIGKILL)
        candidates = [busy(f"o{i}", busy_module, 1000) for i in range(3)]
        t0 = time.monotonic()
        results = kernelfarm.measure(client, candidates, key="fault", results_file=str(path), infra_deadline=1.0, progress=False)
        waited = time.monotonic() - t0
        assert 1.0 <= waited < 15, f"waited the outage out for infra_deadline, not more: {waited:.1f} s"
        for r in results:
            assert r.outcome == "INFRA_ERROR" and r.attempts == 0, r
            assert r.message.startswith(f"UNAVAILABLE: cannot reach the tracker at {tracker.address}: "), r.message
            assert r.message.endswith("(no session could be had for infra_deadline, 1 s)"), r.message
        assert [json.loads(line)["outcome"] for line in path.read_text().splitlines()] == ["INFRA_ERROR"] * 3

        # The farm is back: INFRA_ERROR is never final, so the rerun measures them all again.
        tracker = TrackerProcess(port=tracker.port)
        agent = AgentProcess(tracker.address, BOARDS)
        with kernelfarm.connect_tracker(tracker.address) as probe:
            wait_for_free_boards(probe, 2, "fault")
        # The same client: its channel comes back by itself.
        again = kernelfarm.measure(client, candidates, key="fault", results_file=str(path), progress=False)
        assert [(r.outcome, r.measured_again) for r in again] == [("OK", "the earlier result was INFRA_ERROR, which is never final")] * 3
    finally:
        client.close()
        if agent:
            agent.stop()
        tracker.stop()


def test_more_lost_sessions_than_retries_are_infra_error_and_a_rerun_measures_them_again(tmp_path, busy_module):
    path = tmp_path / "retries.jsonl"
    tracker = TrackerProcess()
    agent = AgentProcess(tracker.address, BOARDS, ["--name", "flaky"])
    client = kernelfarm.connect_tracker(tracker.address)
    try:
        wait_for_free_boards(client, 2, "fault")
        candidates = [busy(f"r{i:02}", busy_module, 10_000_000 + i) for i in range(12)]
        ended: dict[str, object] = {}

        def batch() -> None:
            ended["results"] = kernelfarm.measure(
                client,
                candidates,
                key="fault",
                results_file=str(path),
                retries=0,
                time_evaluator={"number": 5, "repeat": 3},
                progress=False,
            )

        runner = threading.Thread(target=batch, daemon=True)
        runner.start()
        wait_for("2 results in the file", lambda: line_count(path) >= 2, timeout=60)
        agent.stop(signal.SIGKILL)
        agent = AgentProcess(tracker.address, BOARDS, ["--name", "flaky"])
        runner.join(timeout=120)
        assert not runner.is_alive()
        results = ended["results"]
        assert isinstance(results, list)
        lost = [r for r in results if r.outcome == "INFRA_ERROR"]
        assert lost, "the candidates measured when the agent died lost their sessions"
        assert {r.outcome for r in results} == {"OK", "INFRA_ERROR"}
        for r in lost:
            assert r.attempts == 1 and r.board is not None
            assert r.message.startswith("AGENT_LOST: ") and r.message.endswith(
                "(1 session failed under this candidate; retries is 0)"
            ), r.message

        again = kernelfarm.measure(
            client, candidates, key="fault", results_file=str(path), time_evaluator={"number": 5, "repeat": 3}, progress=False
        )
        assert [r.outcome for r in again] == ["OK"] * len(candidates)
        assert {r.id: r.measured_again for r in again if r.measured_again} == {
            r.id: "the earlier result was INFRA_ERROR, which is never final" for r in lost
        }
    finally:
        client.close()
        agent.stop()
        tracker.stop()


def test_a_key_no_board_serves_is_refused_after_the_deadline(tracker, vadd_module):
    t0 = time.monotonic()
    with pytest.raises(FarmError) as e:
        kernelfarm.measure(tracker, [busy("k", vadd_module, 1)], key="no-such-key", deadline=0.5, progress=False)
    assert time.monotonic() - t0 >= 0.5
    assert (e.value.code, e.value.message) == (
        "NO_BOARD",
        'measure: no board serves key "no-such-key" (waited 0.5 s for one to attach); the farm serves keys cpu, fpga, vta',
    )


def test_backoff_is_exponential_with_full_jitter():
    top = Backoff(uniform=lambda: 1.0)
    assert [top.next() for _ in range(8)] == [0.25, 0.5, 1, 2, 4, 8, 8, 8]
    top.reset()
    assert top.next() == 0.25
    assert Backoff(uniform=lambda: 0.0).next() == 0.0
    waits = [Backoff().next() for _ in range(200)]
    assert all(0 <= w < 0.25 for w in waits) and len(set(waits)) > 100, "uniform in [0, 0.25) for the first wait"


RETRIES = "measure retries must be an integer in [0, 4294967295] (times a candidate is measured again after its session failed under it)"
INFRA = (
    "measure infra_deadline must be a number of seconds in [0, 4294967.295] "
    "(how long infrastructure failures are waited out before INFRA_ERROR)"
)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"retries": -1}, f"{RETRIES}, got -1"),
        ({"retries": 1.5}, f"{RETRIES}, got 1.5"),
        ({"infra_deadline": float("inf")}, f"{INFRA}, got inf"),
        ({"infra_deadline": "10m"}, f"{INFRA}, got '10m'"),
        ({"boards": 0}, "measure boards must be an integer in [1, 4294967295] (boards to use at most), got 0"),
        (
            {"deadline": -1},
            "measure deadline must be a number of seconds in [0, 4294967.295] (how long a session request waits for a free board, "
            "and a batch for its key), got -1",
        ),
    ],
)
def test_bad_infrastructure_options_are_refused(tracker, options, message):
    with pytest.raises(FarmError) as e:
        kernelfarm.measure(tracker, [], key="cpu", **options)
    assert (e.value.code, e.value.message) == ("INVALID_ARGUMENT", message)
