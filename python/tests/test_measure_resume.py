"""A results file is a tuning run's memory (docs/measure.md, "Resuming a
batch"): every line carries its candidate's digest; a line is reused only for
the candidate of the same id and digest, and only when its outcome is final;
anything else is measured again, and the new line says why (`measuredAgain`).
A torn last line is cut off before the next record, which stays readable.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest

import kernelfarm
from kernelfarm import Candidate, FarmError, Input, Output
from kernelfarm.candidate_digest import candidate_digest
from kernelfarm.results_file import ResultsFile
from modules import VADD_FUNCTIONS, VADD_SOURCE, build_cpu

N = 256
FAST = {"number": 1, "repeat": 1}
BROKEN = "void broken( { }"


def reference(inputs):
    return [inputs[0] + inputs[1]]


def vadd_args() -> list:
    return [Input(np.arange(N, dtype=np.float32)), Input(np.full(N, 0.5, np.float32)), Output((N,), "float32"), N]


def vadd(cid: str, module: Any, definition: Optional[Any] = None) -> Candidate:
    return Candidate(module, "vadd", vadd_args(), id=cid, reference=reference, definition=definition)


class Builds:
    """Module functions that count how often they ran (a resumed batch builds only what it must)."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}

    def of(self, source: str, functions: Any = VADD_FUNCTIONS):
        def build():
            self.count[source] = self.count.get(source, 0) + 1
            return build_cpu(source, functions)

        return build


def run(tracker, candidates: list[Candidate], path: Path) -> tuple[list[kernelfarm.MeasureResult], list[str]]:
    """A batch on the shared farm's cpu boards; also what it measured (on_result), by id."""
    seen: list[kernelfarm.MeasureResult] = []
    results = kernelfarm.measure(
        tracker, candidates, key="cpu", results_file=str(path), time_evaluator=FAST, on_result=seen.append, progress=False
    )
    return results, sorted(r.id for r in seen)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_line_carries_its_digest_and_a_rerun_measures_nothing(tracker, vadd_module, tmp_path):
    path = tmp_path / "run.jsonl"
    builds = Builds()
    candidates = [
        vadd("built", vadd_module),
        vadd("defined", vadd_module, {"source": "vadd.c", "flags": []}),
        vadd("function", builds.of(VADD_SOURCE)),
        Candidate(builds.of(BROKEN, {"broken": []}), "broken", [], id="broken"),
        Candidate(builds.of(BROKEN + " ", {"broken": []}), "broken", [], id="broken-defined", definition={"source": BROKEN}),
    ]
    first, measured = run(tracker, candidates, path)
    assert [r.outcome for r in first] == ["OK", "OK", "OK", "COMPILE_ERROR", "COMPILE_ERROR"]
    assert measured == sorted(c.id for c in candidates)
    want = {
        "built": candidate_digest(candidates[0], FAST),
        "defined": candidate_digest(candidates[1], FAST),
        # The digest of what the function built (a bundle is the same bytes every time it is built).
        "function": candidate_digest(vadd("function", build_cpu(VADD_SOURCE, VADD_FUNCTIONS)), FAST),
        "broken-defined": candidate_digest(candidates[4], FAST),
    }
    assert {line["id"]: line.get("digest") for line in lines(path)} == {
        **want,
        "broken": None,
    }, "a module that did not build, without a definition, has no digest"
    assert want["built"] == want["function"] != want["defined"]
    assert builds.count == {VADD_SOURCE: 1, BROKEN: 1, BROKEN + " ": 1}

    again, measured = run(tracker, candidates, path)
    # The function without a definition is built to learn its digest, and reused; the compile error without a digest is built again.
    assert builds.count == {VADD_SOURCE: 2, BROKEN: 2, BROKEN + " ": 1}
    assert measured == ["broken"]
    assert again[3].measured_again == "the earlier line has no digest" and again[3].outcome == "COMPILE_ERROR"
    for r0, r1 in zip(first[:3] + first[4:], again[:3] + again[4:]):
        assert (r1.index, r1.id, r1.outcome, r1.timing, r1.digest, r1.measured_again) == (
            r0.index,
            r0.id,
            r0.outcome,
            r0.timing,
            r0.digest,
            None,
        )
    written = lines(path)
    assert len(written) == 6 and sorted(line["id"] for line in written[:5]) == sorted(c.id for c in candidates)
    assert written[-1] == {**written[-1], "id": "broken", "measuredAgain": "the earlier line has no digest"} and "digest" not in written[-1]


def test_a_torn_last_line_is_cut_off_and_the_next_record_is_readable(tracker, vadd_module, tmp_path):
    path = tmp_path / "torn.jsonl"
    d = {"source": "vadd"}
    run(tracker, [vadd("t0", vadd_module, d), vadd("t1", vadd_module, d)], path)
    whole = path.read_text()
    # A crash mid-write: part of a third record, no newline.
    path.write_text(whole + '{"index": 2, "id": "t2", "outcome": "OK", "attem')
    results, measured = run(tracker, [vadd(f"t{i}", vadd_module, d) for i in range(3)], path)
    assert measured == ["t2"] and [r.outcome for r in results] == ["OK"] * 3
    assert results[2].measured_again is None, "a torn line is no line"
    text = path.read_text()
    # The first run's lines are in the order its candidates finished, on boards that run side by side; the resumed run
    # keeps them as they were (`whole`) and adds t2's.
    ids = [line["id"] for line in lines(path)]
    assert text.startswith(whole) and text.endswith("\n") and sorted(ids[:2]) == ["t0", "t1"] and ids[2:] == ["t2"], ids
    assert lines(path)[2]["digest"] == results[2].digest

    # A whole record without its newline is torn too: it may be the start of a longer line.
    path.write_text(text[:-1])
    assert list(ResultsFile(path).read()) == ids[:2], "in the order the first run's candidates finished"
    results, measured = run(tracker, [vadd(f"t{i}", vadd_module, d) for i in range(3)], path)
    assert measured == ["t2"] and [line["id"] for line in lines(path)] == ids, ids


def test_a_file_that_is_all_torn_is_cut_to_nothing(tracker, vadd_module, tmp_path):
    path = tmp_path / "fragment.jsonl"
    path.write_text('{"id": "only", "outco')
    results, measured = run(tracker, [vadd("only", vadd_module, {"source": "vadd"})], path)
    assert measured == ["only"] and [line["id"] for line in lines(path)] == ["only"]


def test_a_candidate_whose_source_changed_under_the_same_id_is_measured_again(tracker, vadd_module, tmp_path):
    path = tmp_path / "changed.jsonl"
    builds = Builds()
    # Tuned: the same sums, backwards (a comment alone would build the same bundle, and so the same digest).
    changed_source = VADD_SOURCE.replace("for (int32_t i = 0; i < n; i++) c[i]", "for (int32_t i = n - 1; i >= 0; i--) c[i]")
    assert changed_source != VADD_SOURCE
    before = [vadd("defined", vadd_module, {"source": "v1"}), vadd("function", builds.of(VADD_SOURCE))]
    first, _ = run(tracker, before, path)
    after = [vadd("defined", vadd_module, {"source": "v2"}), vadd("function", builds.of(changed_source))]
    again, measured = run(tracker, after, path)
    assert measured == ["defined", "function"] and [r.outcome for r in again] == ["OK", "OK"]
    for r0, r1 in zip(first, again):
        assert r1.digest != r0.digest
        assert r1.measured_again == f"its definition changed (digest {r0.digest[:12]} → {r1.digest[:12]})"
    last = {line["id"]: line for line in lines(path)}
    assert {i: (line["digest"], line["measuredAgain"]) for i, line in last.items()} == {r.id: (r.digest, r.measured_again) for r in again}
    # The new lines are the ones a third run keeps.
    _, measured = run(tracker, after, path)
    assert measured == []


def test_other_timing_options_are_another_definition(tracker, vadd_module, tmp_path):
    path = tmp_path / "timing.jsonl"
    c = vadd("v", vadd_module, {"source": "vadd"})
    run(tracker, [c], path)
    r = kernelfarm.measure(tracker, [c], key="cpu", results_file=str(path), time_evaluator={"number": 2, "repeat": 1}, progress=False)[0]
    assert r.measured_again is not None and r.measured_again.startswith("its definition changed (digest ") and r.timing["number"] == 2


def test_infra_error_and_lines_without_a_digest_are_measured_again(tracker, vadd_module, tmp_path):
    path = tmp_path / "old.jsonl"
    d = {"source": "vadd"}
    candidates = [vadd("infra", vadd_module, d), vadd("old", vadd_module, d), vadd("kept", vadd_module, d)]
    digest = candidate_digest(candidates[0], FAST)
    path.write_text(
        "".join(
            json.dumps(line) + "\n"
            for line in [
                {
                    "index": 0,
                    "id": "infra",
                    "outcome": "INFRA_ERROR",
                    "attempts": 2,
                    "message": "AGENT_LOST: board a/c0 was lost",
                    "digest": digest,
                },
                {
                    "index": 1,
                    "id": "old",
                    "outcome": "OK",
                    "attempts": 1,
                    "timing": {"results": [1.0], "mean": 1.0, "number": 1},
                },  # an SDK before digests
                {"index": 2, "id": "kept", "outcome": "WRONG_ANSWER", "attempts": 1, "message": "an earlier answer", "digest": digest},
                "not JSON at all",
                {"index": 9, "id": "unknown-outcome", "outcome": "MAYBE", "attempts": 1},
            ]
        )
    )
    results, measured = run(tracker, candidates, path)
    assert measured == ["infra", "old"]
    assert [(r.outcome, r.measured_again) for r in results] == [
        ("OK", "the earlier result was INFRA_ERROR, which is never final"),
        ("OK", "the earlier line has no digest"),
        ("WRONG_ANSWER", None),
    ]
    assert results[2].message == "an earlier answer", "a final line of the same digest is the result, whatever its outcome"
    _, measured = run(tracker, candidates, path)
    assert measured == []


def test_a_module_that_no_longer_builds_is_measured_again(tracker, tmp_path):
    path = tmp_path / "unbuilt.jsonl"
    builds = Builds()
    run(tracker, [vadd("v", builds.of(VADD_SOURCE))], path)
    results, measured = run(tracker, [vadd("v", builds.of(BROKEN, {"broken": []}))], path)
    assert measured == ["v"]
    r = results[0]
    assert (r.outcome, r.digest, r.measured_again) == ("COMPILE_ERROR", None, "its module could not be built to compare its digest")
    assert lines(path)[-1]["measuredAgain"] == "its module could not be built to compare its digest" and "digest" not in lines(path)[-1]


def test_a_results_file_that_cannot_be_written_is_refused_before_anything_runs(tracker, vadd_module, tmp_path):
    for bad in (tmp_path, tmp_path / "missing" / "run.jsonl"):
        with pytest.raises(FarmError) as e:
            run(tracker, [vadd("v", vadd_module)], bad)
        assert e.value.code == "INVALID_ARGUMENT" and e.value.message == (
            f"measure: results_file {bad} cannot be written (is it a folder, or is its folder missing or read-only?): "
            "give a path in a folder this process may write"
        )
