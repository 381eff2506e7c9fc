"""pytest setup for the Python SDK: the stubs (re)generated from protos/ first,
then a real farm — a tracker and an agent with two CPU boards, a VTA
simulator and a VTA board on the device model, started as processes on loopback — shared by the tests, and
stopped at the end.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

PYTHON = Path(__file__).resolve().parents[1]

# The stubs are build output: make (or refresh) them before anything imports the package.
_spec = importlib.util.spec_from_file_location("kernelfarm_build_stubs", PYTHON / "kernelfarm" / "_build_stubs.py")
_build_stubs = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(_build_stubs)  # type: ignore[union-attr]
_build_stubs.generate()
sys.path.insert(0, str(PYTHON))

import kernelfarm  # noqa: E402
from farm import NODE, REPO, AgentProcess, TrackerProcess, wait_for_free_boards  # noqa: E402
from modules import VADD_FUNCTIONS, VADD_SOURCE, build_cpu  # noqa: E402

#: The shared farm's boards.
CPU_BOARDS = ["cpu:key=cpu,name=c0", "cpu:key=cpu,name=c1"]
VTA_BOARDS = ["vta-sim:key=vta,name=v0", "vta:model:key=fpga,name=f0"]


def pytest_collection_modifyitems(config, items):
    if NODE and (REPO / "node_modules" / "tsx").is_dir():
        return
    why = "node is not installed" if not NODE else "node_modules has no tsx (run npm ci)"
    for item in items:
        item.add_marker(pytest.mark.skip(reason=f"{why}: these tests start the real tracker and agents"))


@pytest.fixture(scope="session")
def farm():
    """A tracker and one agent serving two CPU boards (key cpu), a VTA simulator (key vta)
    and a VTA board on the device model (key fpga)."""
    tracker = TrackerProcess()
    agent = None
    try:
        agent = AgentProcess(tracker.address, CPU_BOARDS + VTA_BOARDS)
        yield tracker
    finally:
        if agent:
            agent.stop()
        tracker.stop()


@pytest.fixture(scope="session")
def tracker(farm):
    """A client of the shared farm, once its boards are free."""
    with kernelfarm.connect_tracker(farm.address) as client:
        wait_for_free_boards(client, len(CPU_BOARDS) + len(VTA_BOARDS))
        yield client


@pytest.fixture(scope="session")
def vadd_module():
    return build_cpu(VADD_SOURCE, VADD_FUNCTIONS)


@pytest.fixture
def remote(tracker):
    """A session on a CPU board, closed after the test."""
    with tracker.request("cpu") as s:
        yield s
