"""measure() from Python on the farm's CPU boards: one result per candidate with
the outcomes host-sdk/measure/ defines, and a results file that the
TypeScript measure() resumes from — and the other way round."""
from __future__ import annotations

import json

import numpy as np
import pytest

import kernelfarm
from candidates import describe
from farm import REPO, run_ts, wait_for_free_boards
from kernelfarm import Candidate, FarmError, Input, Measurer, Output, RandomInput
from kernelfarm.candidate_digest import candidate_digest
from modules import BAD_FUNCTIONS, BAD_SOURCE, build_cpu

MEASURE_BATCH = REPO / "python" / "tests" / "ts" / "measure_batch.ts"
N = 1000


def vadd_reference(inputs):
    x, y = inputs
    return [x + y]


def compiled(source: str, functions):
    """A module thunk as a tuner writes one: compile_cpu's refusal is the candidate's COMPILE_ERROR."""
    return lambda: build_cpu(source, functions)


@pytest.fixture(scope="module")
def bad_module():
    return build_cpu(BAD_SOURCE, BAD_FUNCTIONS)


def vadd_args(x=None, y=None, expect=None):
    x = np.arange(N, dtype=np.float32) if x is None else x
    y = np.full(N, 0.5, np.float32) if y is None else y
    return [Input(x), Input(y), Output((N,), "float32", expect), N]


def test_a_batch_gets_one_result_per_candidate_with_measure_ts_outcomes(tracker, vadd_module, bad_module, tmp_path):
    results_file = tmp_path / "tuning.jsonl"
    x = np.arange(N, dtype=np.float32)
    seeded = [RandomInput((N,), "float32", seed=1), RandomInput((N,), "float32", seed=2), Output((N,), "float32"), N]
    # Definitions: the TypeScript measure() resumes these below without building anything.
    vadd, bad = {"module": "vadd"}, {"module": "bad"}
    candidates = [
        Candidate(vadd_module, "vadd", vadd_args(), id="ok-host", reference=vadd_reference, definition=vadd),
        Candidate(vadd_module, "vadd", seeded, id="ok-seeded", reference=vadd_reference, definition=vadd),
        Candidate(vadd_module, "vadd", vadd_args(x=x, expect=x + 0.5), id="ok-expect", definition=vadd),
        Candidate(bad_module, "vadd_wrong", vadd_args(), id="wrong", reference=vadd_reference, definition=bad),
        Candidate(bad_module, "segv", [0], id="crash", definition=bad),
        Candidate(vadd_module, "vsub", vadd_args(), id="no-such-function", reference=vadd_reference, definition=vadd),
        Candidate(compiled("void broken( { }", {"broken": []}), "broken", [], id="compile", definition={"source": "void broken( { }"}),
        Candidate(bad_module, "spin", [], id="spin", definition=bad),
        Candidate(vadd_module, "vadd", vadd_args(), id="after-all", reference=vadd_reference, definition=vadd),
    ]
    seen = []
    time_evaluator = {"number": 5, "repeat": 2}
    results = kernelfarm.measure(
        tracker,
        candidates,
        key="cpu",
        results_file=str(results_file),
        timeout=2.0,
        time_evaluator=time_evaluator,
        on_result=seen.append,
        progress=False,
    )
    by_id = {r.id: r for r in results}
    assert [r.id for r in results] == [c.id for c in candidates] and [r.index for r in results] == list(range(len(candidates)))
    assert {i: by_id[i].outcome for i in by_id} == {
        "ok-host": "OK",
        "ok-seeded": "OK",
        "ok-expect": "OK",
        "wrong": "WRONG_ANSWER",
        "crash": "RUNTIME_ERROR",
        "no-such-function": "LOAD_ERROR",
        "compile": "COMPILE_ERROR",
        "spin": "TIMEOUT",
        "after-all": "OK",
    }
    ok = by_id["ok-host"]
    assert ok.attempts == 1 and ok.board.startswith(tracker.summary().agents[0].name + "/")
    assert len(ok.timing["results"]) == 2 and ok.timing["number"] == 5 and ok.timing["min"] <= ok.timing["median"] <= ok.timing["max"]
    assert ok.stats["calls"] >= 2 + 5 * 2, "checked before and after timing, timed number × repeat"
    assert "element 999" in by_id["wrong"].message
    assert by_id["crash"].message.startswith("RUNTIME_CRASH: ")
    assert by_id["no-such-function"].message.startswith("UNKNOWN_FUNCTION: module ") and "vsub" in by_id["no-such-function"].message
    assert by_id["compile"].message.startswith("COMPILE_ERROR: ") and by_id["compile"].attempts == 0
    assert by_id["spin"].message.startswith("TIMEOUT: ")
    boards = {b.id for b in tracker.summary().boards}
    assert by_id["crash"].board in boards and by_id["spin"].board in boards, "a crash and a hang name their board"
    assert by_id["compile"].board is None, "a compile error involved no board"
    assert sorted(r.id for r in seen) == sorted(c.id for c in candidates)
    lines = [json.loads(line) for line in results_file.read_text().splitlines()]
    assert sorted(line["id"] for line in lines) == sorted(c.id for c in candidates)
    # Every line carries its candidate's digest, the compile error's too (its definition stands for the module).
    digests = {c.id: candidate_digest(c, time_evaluator, 2.0) for c in candidates}
    assert {line["id"]: line["digest"] for line in lines} == digests == {r.id: r.digest for r in results}
    assert all("measuredAgain" not in line for line in lines)

    # The TypeScript measure() resumes from the Python file: every candidate comes from it (same id, same digest), none is built.
    batch = tmp_path / "batch.json"
    batch.write_text(
        json.dumps(
            {
                "options": {"timeEvaluator": {"number": 5, "repeat": 2}, "timeoutMs": 2000},
                "candidates": [describe(c) for c in candidates],
            }
        )
    )
    ts = run_ts(MEASURE_BATCH, ["resume", tracker.address, str(results_file), str(batch)])
    assert ts.returncode == 0, ts.stderr
    out = json.loads(ts.stdout)
    assert tuple(out["outcomes"]) == kernelfarm.MEASURE_OUTCOMES
    assert [(r["id"], r["outcome"], r.get("message"), r.get("timing"), r.get("digest")) for r in out["results"]] == [
        (r.id, r.outcome, r.message, r.timing, r.digest) for r in results
    ]
    assert len(results_file.read_text().splitlines()) == len(candidates), "the TypeScript batch measured nothing again"


def test_python_resumes_from_a_typescript_results_file(tracker, tmp_path):
    results_file = tmp_path / "from-ts.jsonl"
    ts = run_ts(MEASURE_BATCH, ["run", tracker.address, str(results_file)])
    assert ts.returncode == 0, ts.stderr
    written = {r["id"]: r for r in json.loads(ts.stdout)["results"]}
    assert {i: r["outcome"] for i, r in written.items()} == {"ts-ok": "OK", "ts-wrong": "WRONG_ANSWER", "ts-seeded": "OK"}
    assert all(len(r.get("digest", "")) == 64 for r in written.values()), "the TypeScript SDK writes each line's digest"

    def never_built():
        raise AssertionError("a candidate in the results file was built again")

    # The candidates measure_batch.ts measured, as Python writes them: the same definitions, arguments and timing.
    a, b = np.arange(N, dtype=np.float32), np.full(N, 0.5, np.float32)
    out = Output((N,), "float32")
    candidates = [
        Candidate(
            never_built,
            "vadd",
            [RandomInput((N,), "float32", seed=11), RandomInput((N,), "float32", seed=12), out, N],
            id="ts-seeded",
            reference=vadd_reference,
            definition={"kernel": "vadd"},
        ),
        Candidate(never_built, "vadd", [Input(a), Input(b), out, N], id="ts-ok", reference=vadd_reference, definition={"kernel": "vadd"}),
        Candidate(
            never_built,
            "vadd_wrong",
            [Input(a), Input(b), out, N],
            id="ts-wrong",
            reference=vadd_reference,
            definition={"kernel": "vadd_wrong"},
        ),
    ]
    seen = []
    results = kernelfarm.measure(
        tracker,
        candidates,
        key="cpu",
        results_file=str(results_file),
        time_evaluator={"number": 5, "repeat": 2},
        on_result=seen.append,
        progress=False,
    )
    assert [(r.index, r.id, r.outcome) for r in results] == [(0, "ts-seeded", "OK"), (1, "ts-ok", "OK"), (2, "ts-wrong", "WRONG_ANSWER")]
    assert seen == [], "nothing was measured again"
    for r in results:
        w = written[r.id]
        assert (r.timing, r.stats, r.board, r.attempts, r.message, r.digest) == (
            w.get("timing"),
            w.get("stats"),
            w.get("board"),
            w["attempts"],
            w.get("message"),
            w["digest"],
        )


def test_a_measurer_keeps_its_sessions_between_batches(tracker, vadd_module):
    wait_for_free_boards(tracker, 2, "cpu")

    def sessions() -> dict[str, str]:
        return {b.id: b.session_id for b in tracker.summary(key="cpu").boards if b.state == "busy"}

    with Measurer(tracker, "cpu", time_evaluator={"number": 2, "repeat": 1}, progress=False) as m:
        first = m.measure([Candidate(vadd_module, "vadd", vadd_args(), id=f"a{i}", reference=vadd_reference) for i in range(4)])
        assert {r.outcome for r in first} == {"OK"}
        held = sessions()
        assert held, "the boards stay held between batches"
        second = m.measure(
            [Candidate(vadd_module, "vadd", vadd_args(), id=f"b{i}", reference=vadd_reference) for i in range(3)],
            time_evaluator={"number": 3, "repeat": 2},
        )
        assert [r.timing["number"] for r in second] == [3, 3, 3]
        assert {r.outcome for r in second} == {"OK"}
        # The same sessions served the second batch: not closed and opened again.
        assert held.items() <= sessions().items()
    wait_for_free_boards(tracker, 2, "cpu")


@pytest.mark.parametrize(
    "candidate, message",
    [
        (
            Candidate(None, "f", [Output((4,), "float32", np.zeros(4, np.float32))], reference=vadd_reference),
            "measure: candidate c0: argument 0 has an expect and the candidate a reference function: give one",
        ),
        (
            Candidate(None, "f", [Input(np.zeros(4, np.float32))], reference=vadd_reference),
            "measure: candidate c0: a reference function, but no output arguments to check",
        ),
        (
            Candidate(None, "f", [RandomInput((4,), "int8", seed=1, low=0, high=300)]),
            "measure: candidate c0: argument 0, a random int8 input: [0, 300] does not fit int8 ([-128, 127])",
        ),
        (Candidate(None, "f", ["four"]), "measure: candidate c0: argument 0 is a str; arguments are Input, RandomInput, Output or numbers"),
        (
            Candidate(None, "f", [Input(np.zeros(4, np.complex64))]),
            "measure: candidate c0: argument 0, an input: dtype complex64 is not supported; "
            "boards hold int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32, float64 "
            "(pass the real and imaginary parts as two float arrays)",
        ),
    ],
)
def test_candidates_that_cannot_be_measured_are_refused_before_anything_runs(tracker, candidate, message):
    with pytest.raises(FarmError) as e:
        kernelfarm.measure(tracker, [candidate], key="cpu")
    assert (e.value.code, e.value.message) == ("INVALID_ARGUMENT", message)


def test_bad_batches_and_reference_functions(tracker, vadd_module, tmp_path):
    dup = [Candidate(vadd_module, "vadd", [], id="x"), Candidate(vadd_module, "vadd", [], id="x")]
    with pytest.raises(FarmError) as e:
        kernelfarm.measure(tracker, dup, key="cpu")
    assert e.value.message == "measure: candidate ids must be unique"
    with pytest.raises(FarmError) as e:
        kernelfarm.measure(tracker, [], key="cpu", time_evaluator={"numbr": 3})
    assert (
        e.value.message
        == "measure: unknown time_evaluator option(s) numbr; options: budget_ms, cooldown_interval_ms, flush_cpu_cache, flush_l2, graph, "
        "limit_zero_time_iterations, min_repeat_ms, number, repeat, repeats_to_cooldown, target_rse"
    )

    def wrong_count(inputs):
        return []

    def throws(inputs):
        raise ValueError("my reference has a bug")

    for reference, message in (
        (wrong_count, "measure: the reference function of candidate c0 returned 0 array(s) for 1 output(s)"),
        (
            lambda inputs: [np.zeros(N, np.float64)],
            f"measure: the reference function of candidate c0 returned {N} float64 for output 0, which is {N} float32",
        ),
        (throws, "measure: the reference function of candidate c0 threw: my reference has a bug"),
    ):
        with pytest.raises(FarmError) as e:
            kernelfarm.measure(tracker, [Candidate(vadd_module, "vadd", vadd_args(), reference=reference)], key="cpu", progress=False)
        assert (e.value.code, e.value.message) == ("INVALID_ARGUMENT", message)
    # The boards went back after each refused batch.
    wait_for_free_boards(tracker, 2, "cpu")
