"""What the TypeScript code gives for the same inputs: the reference the
Python compilers' tests compare with, byte for byte and message for message.

`run_ts(jobs)` hands a list of jobs to ts_reference.ts in one node process
(starting node with tsx takes about a second, so a test module asks for all
it needs at once) and returns one result per job: {"ok": True, "value": ...}
or {"ok": False, "code", "message", "details"}. Bytes travel as
{"$hex": "..."}; `to_ts` / `from_ts` convert.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from typing import Any

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(REPO, "python", "tests", "ts_reference.ts")


def to_ts(value: Any) -> Any:
    """A Python value as JSON for the TypeScript side: bytes as {"$hex"}."""
    if isinstance(value, (bytes, bytearray)):
        return {"$hex": bytes(value).hex()}
    if isinstance(value, dict):
        return {k: to_ts(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_ts(v) for v in value]
    return value


def from_ts(value: Any) -> Any:
    """The TypeScript side's JSON as Python values: {"$hex"} as bytes."""
    if isinstance(value, dict):
        if set(value) == {"$hex"}:
            return bytes.fromhex(value["$hex"])
        return {k: from_ts(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_ts(v) for v in value]
    return value


def run_ts(jobs: list[dict[str, Any]], timeout_s: float = 300) -> list[dict[str, Any]]:
    """Runs `jobs` through the TypeScript code; skips the calling test when
    node or the repository's node_modules (tsx, msgpackr) are not here."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the TypeScript reference cannot run")
    if not os.path.isdir(os.path.join(REPO, "node_modules", "tsx")):
        pytest.skip(f"{REPO}/node_modules has no tsx: run npm ci for the TypeScript reference")
    with tempfile.TemporaryDirectory(prefix="kfarm-ts-ref-") as tmp:
        out = os.path.join(tmp, "out.json")
        proc = subprocess.run(
            [node, "--import", "tsx", SCRIPT, out],
            cwd=REPO,
            input=json.dumps(to_ts(jobs)).encode(),
            capture_output=True,
            timeout=timeout_s,
        )
        if proc.returncode != 0 or not os.path.exists(out):
            raise AssertionError(f"ts_reference.ts failed (exit {proc.returncode}):\n{proc.stderr.decode(errors='replace')}")
        with open(out, encoding="utf-8") as f:
            results = json.load(f)
    assert len(results) == len(jobs), (len(results), len(jobs))
    return [from_ts(r) for r in results]


def ts_value(result: dict[str, Any]) -> Any:
    """A result's value, failing the test with the TypeScript error when there is none."""
    assert result["ok"], f"the TypeScript side failed: [{result['code']}] {result['message']}"
    return result["value"]
