"""measure()'s results file (docs/measure.md, "resultsFile" and "Resuming a
batch"): one JSON line per finished candidate, appended as it finishes, read
on start so that a resumed batch measures only what has no line it can trust.

A line is the candidate's for reuse only when its digest equals the
candidate's and its outcome is final (not INFRA_ERROR); `remeasure_reason()`
says why not, in the words the new line's `measuredAgain` carries. A crash
mid-write leaves a last line without its newline: reading ignores it, and the
first append cuts it off so the next record starts on a line of its own.
"""
from __future__ import annotations

import json
import os
import threading
from typing import Any, Optional

from ._contract import MEASURE_OUTCOMES as OUTCOMES
from .errors import FarmError

#: `measuredAgain` on the new line, per reason (the spec's words).
AGAIN_INFRA = "the earlier result was INFRA_ERROR, which is never final"
AGAIN_NO_DIGEST = "the earlier line has no digest"
#: A module given as a function without a definition that no longer builds: there is no digest to compare.
AGAIN_UNBUILT = "its module could not be built to compare its digest"


def again_changed(old: str, new: str) -> str:
    """`measuredAgain` for a line of another digest."""
    return f"its definition changed (digest {old[:12]} → {new[:12]})"


def remeasure_reason(line: dict[str, Any], digest: Optional[str]) -> Optional[str]:
    """Why `line` is not reused for a candidate of `digest` (None: it is reused;
    `digest` None: the candidate's module did not build, so it has none)."""
    if line.get("outcome") == "INFRA_ERROR":
        return AGAIN_INFRA
    old = line.get("digest")
    if not isinstance(old, str) or not old:
        return AGAIN_NO_DIGEST
    if digest is None:
        return AGAIN_UNBUILT
    if old != digest:
        return again_changed(old, digest)
    return None


class ResultsFile:
    """One results file: read() its lines, append() records (thread-safe)."""

    def __init__(self, path: "str | os.PathLike[str]"):
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._repaired = False

    def check_writable(self) -> None:
        """Refuses, before anything runs, a file the batch could not append to."""
        target = self.path if os.path.exists(self.path) else os.path.dirname(os.path.abspath(self.path))
        if os.path.isdir(self.path) or not os.path.isdir(os.path.dirname(os.path.abspath(self.path))) or not os.access(target, os.W_OK):
            raise FarmError(
                "INVALID_ARGUMENT",
                f"measure: results_file {self.path} cannot be written (is it a folder, or is its folder missing or read-only?): "
                "give a path in a folder this process may write",
            )

    def read(self) -> dict[str, dict[str, Any]]:
        """The last complete line per candidate id. Lines that are not JSON
        records of a known outcome are skipped; a last line without its newline
        (torn by a crash) is not a line."""
        out: dict[str, dict[str, Any]] = {}
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return out
        lines = data.split(b"\n")
        for raw in lines[:-1]:  # the part after the last newline is torn, or empty
            try:
                r = json.loads(raw.decode("utf-8"))
            except ValueError:
                continue
            if isinstance(r, dict) and isinstance(r.get("id"), str) and r.get("outcome") in OUTCOMES:
                out[r["id"]] = r
        return out

    def append(self, line: str) -> None:
        """Appends one record (`line`: its JSON, no newline); the first append cuts off a torn last line."""
        with self._lock:
            if not self._repaired:
                self._cut_torn_tail()
                self._repaired = True
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line + "\n")

    def _cut_torn_tail(self) -> None:
        try:
            f = open(self.path, "r+b")
        except FileNotFoundError:
            return
        with f:
            end = f.seek(0, os.SEEK_END)
            if end == 0:
                return
            f.seek(end - 1)
            if f.read(1) == b"\n":
                return
            # Back to the last newline, a block at a time.
            pos = end
            keep = 0
            while pos > 0:
                start = max(0, pos - 65536)
                f.seek(start)
                block = f.read(pos - start)
                nl = block.rfind(b"\n")
                if nl >= 0:
                    keep = start + nl + 1
                    break
                pos = start
            f.truncate(keep)
