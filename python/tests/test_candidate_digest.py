"""The candidate digest (docs/measure.md, "Resuming a batch: the candidate
digest") from Python equals the TypeScript SDK's (host-sdk/measure/candidate-digest.ts),
byte for byte, for candidates of every kind of argument, numbers JSON writes
differently in the two languages, unicode, nesting, launches and timing
options: a batch started from one SDK resumes from the other only if it does.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from candidates import describe
from farm import REPO, run_ts
from kernelfarm import Candidate, FarmError, Input, Output, RandomInput
from kernelfarm.candidate_digest import candidate_digest, canonical_json
from modules import VADD_FUNCTIONS, VADD_SOURCE, build_cpu

DIGESTS = REPO / "python" / "tests" / "ts" / "candidate_digests.ts"

SOURCE = {"source": "void k(float* a) { a[0] = 1; }", "flags": ["-O2"], "functions": {"k": ["float32* a"]}}
ALL_DEFAULTS = {
    "number": 10,
    "repeat": 3,
    "min_repeat_ms": 0,
    "cooldown_interval_ms": 0,
    "repeats_to_cooldown": 1,
    "limit_zero_time_iterations": 100,
    "target_rse": 0,
    "budget_ms": 0,
    "flush_l2": False,
    "graph": False,
    "flush_cpu_cache": False,
}


def every_arg_kind() -> list:
    strided = np.arange(20, dtype=np.uint8)[::2]  # not contiguous: the board gets its values in order
    big_endian = np.arange(6, dtype=">f8").reshape(2, 3)
    return [
        Input(np.arange(8, dtype=np.float32) * 0.1),
        Input(np.arange(12, dtype=np.int64).reshape(3, 4) - 6),
        Input(strided),
        Input(big_endian),
        RandomInput((8,), "float32", seed=1),
        RandomInput((2, 4), "int32", seed=2, low=-5, high=5),
        RandomInput((8,), "float32", seed=3, low=-4.0, high=4, integers=True),
        Output((8,), "float32"),
        Output((3,), "float64", np.array([0.5, -0.0, 1e-300])),
        8,
        0.5,
        -3,
        1e-5,
    ]


def cases(vadd) -> list[tuple[str, Candidate, dict, dict]]:
    """(name, Python candidate, its measure() options, the same in TypeScript's names)."""
    return [
        ("every kind of argument", Candidate(None, "k", every_arg_kind(), atol=1e-5, rtol=0.1, definition=SOURCE), {}, {}),
        ("a built module, no definition", Candidate(vadd, "vadd", [Input(np.ones(4, np.float32)), Output((4,), "float32"), 4]), {}, {}),
        (
            "floats JSON writes differently",
            Candidate(
                None,
                "k",
                [0.1, 1e-5, 5e-324, 1e300, -2.5, 2**53 - 1, 2**53, 2**53 + 1, 2.0**60],
                definition={
                    "eps": 1e-5,
                    "tenth": 0.1,
                    "third": 1 / 3,
                    "tiny": 5e-324,
                    "big": 1.7976931348623157e308,
                    "safe": 2**53 - 1,
                    "unsafe": 2**53,
                    "above": 2**53 + 2,
                    "neg": -1e-7,
                    "e21": 1e21,
                },
            ),
            {},
            {},
        ),
        ("1.0 and 1", Candidate(None, "k", [1.0, 2], atol=1.0, definition={"x": 1.0, "y": [2.0, 3], "z": -7.0}), {}, {}),
        ("negative zero", Candidate(None, "k", [-0.0], atol=-0.0, definition={"z": -0.0, "l": [-0.0, 0.0]}), {}, {}),
        (
            "unicode, escapes, None",
            Candidate(
                None,
                "k",
                [],
                definition={
                    "source": '// héllo ✓ 😀 \u0001\u001f\u007f "q" \\ \n\t\r\b\f \u2028 </script>',
                    "ключ": "значение",
                    "é": 1,
                    "Z": 2,
                    "a": 3,
                    "\U0001F600": "astral key",
                    "\uff61": "BMP key above the surrogates",
                    "dropped": None,
                    "kept": [None, True, False],
                    "lone": "\ud800 alone",
                },
            ),
            {},
            {},
        ),
        (
            "nested definitions",
            Candidate(
                None,
                "k",
                [],
                definition={
                    "opts": {"tile": [16, 8, {"unroll": 4, "vec": 2.5}], "b": {"c": {"d": [[], {}, [[1.5]]]}}},
                    "empty": "",
                    "list": [(1, 2)],
                },
            ),
            {},
            {},
        ),
        (
            "launch with missing dimensions",
            Candidate(None, "k", [], launch={"grid": 4, "block": (8, 2)}, definition=SOURCE),
            {},
            {"launch": {"grid": 4, "block": [8, 2]}},
        ),
        (
            "launch in full",
            Candidate(None, "k", [], launch={"grid": (1, 2, 3), "block": [32], "shared_mem_bytes": 1024}, definition=SOURCE),
            {},
            {"launch": {"grid": [1, 2, 3], "block": 32, "sharedMemBytes": 1024}},
        ),
        ("default timing", Candidate(None, "k", [], definition=SOURCE), {}, {}),
        (
            "default timing, written out",
            Candidate(None, "k", [], definition=SOURCE),
            {"time_evaluator": ALL_DEFAULTS, "timeout": 10},
            {
                "timeEvaluator": {
                    "number": 10,
                    "repeat": 3,
                    "minRepeatMs": 0,
                    "cooldownMs": 0,
                    "repeatsToCooldown": 1,
                    "limitZeroTimeIterations": 100,
                    "targetRse": 0,
                    "budgetMs": 0,
                    "flushL2": False,
                    "graph": False,
                    "flushCpuCache": False,
                },
                "timeoutMs": 10000,
            },
        ),
        (
            "every timing option",
            Candidate(None, "k", [], definition=SOURCE),
            {
                "time_evaluator": {
                    "number": 5,
                    "repeat": 2,
                    "min_repeat_ms": 12.5,
                    "cooldown_interval_ms": 3,
                    "repeats_to_cooldown": 2,
                    "limit_zero_time_iterations": 50,
                    "target_rse": 0.01,
                    "budget_ms": 2000,
                    "flush_l2": True,
                    "graph": True,
                    "flush_cpu_cache": True,
                },
                "timeout": 2.5,
            },
            {
                "timeEvaluator": {
                    "number": 5,
                    "repeat": 2,
                    "minRepeatMs": 12.5,
                    "cooldownMs": 3,
                    "repeatsToCooldown": 2,
                    "limitZeroTimeIterations": 50,
                    "targetRse": 0.01,
                    "budgetMs": 2000,
                    "flushL2": True,
                    "graph": True,
                    "flushCpuCache": True,
                },
                "timeoutMs": 2500,
            },
        ),
        ("a timeout in fractions of a millisecond", Candidate(None, "k", [], definition=SOURCE), {"timeout": 0.0126}, {"timeoutMs": 13}),
    ]


@pytest.fixture(scope="module")
def vadd():
    return build_cpu(VADD_SOURCE, VADD_FUNCTIONS)


def test_python_digests_equal_typescript_digests(vadd):
    all_cases = cases(vadd)
    ts = run_ts(DIGESTS, [], stdin=json.dumps([describe(c, **typescript) for _, c, _, typescript in all_cases]))
    assert ts.returncode == 0, ts.stderr
    want = json.loads(ts.stdout)
    assert len(want) == len(all_cases)
    for (name, c, options, _), w in zip(all_cases, want):
        if c.definition is not None:
            assert canonical_json(c.definition) == w["definition"], f"{name}: the canonical JSON of the definition differs"
        got = candidate_digest(c, options.get("time_evaluator"), options.get("timeout"))
        assert got == w["digest"], f"{name}: Python {got}, TypeScript {w['digest']}"


def test_what_the_digest_covers(vadd):
    base = Candidate(None, "k", [Input(np.ones(4, np.float32)), 4], definition=SOURCE)
    digest = candidate_digest(base)
    assert len(digest) == 64 and int(digest, 16) >= 0
    same = [
        Candidate(None, "k", [Input(np.ones(4, np.float32)), 4.0], definition={**SOURCE}, id="another id", reference=lambda ins: []),
    ]
    for c in same:
        assert candidate_digest(c) == digest, "the id and the reference function are not covered; 4.0 is 4"
    assert (
        candidate_digest(base, dict(ALL_DEFAULTS), 10) == digest == candidate_digest(base, {"number": None}, None)
    ), "defaults written out or left out"
    different = [
        Candidate(None, "k", [Input(np.ones(4, np.float32)), 4], definition={**SOURCE, "source": SOURCE["source"] + " "}),
        Candidate(None, "k2", [Input(np.ones(4, np.float32)), 4], definition=SOURCE),
        Candidate(None, "k", [Input(np.ones(4, np.float64)), 4], definition=SOURCE),
        Candidate(None, "k", [Input(np.full(4, 2, np.float32)), 4], definition=SOURCE),
        Candidate(None, "k", [Input(np.ones((2, 2), np.float32)), 4], definition=SOURCE),
        Candidate(None, "k", [Input(np.ones(4, np.float32)), 5], definition=SOURCE),
        Candidate(None, "k", [Input(np.ones(4, np.float32)), 4], atol=1e-6, definition=SOURCE),
        Candidate(None, "k", [Input(np.ones(4, np.float32)), 4], launch={"grid": 1, "block": 1}, definition=SOURCE),
        Candidate(vadd, "k", [Input(np.ones(4, np.float32)), 4]),
    ]
    digests = {candidate_digest(c) for c in different}
    assert len(digests) == len(different) and digest not in digests
    assert candidate_digest(base, {"repeat": 4}) != digest
    assert candidate_digest(base, {"flush_l2": True}) != digest
    assert candidate_digest(base, None, 5) != digest


@pytest.mark.parametrize(
    "candidate, message",
    [
        (Candidate(None, "k", [], definition={"x": float("nan")}), "candidate digest: nan has no canonical form; use a finite number"),
        (Candidate(None, "k", [], definition={1: "x"}), "candidate digest: an object key is a int (1); JSON keys are strings"),
        (
            Candidate(None, "k", [], definition={"s": {1, 2}}),
            "candidate digest: a set has no canonical form (a definition must be JSON data)",
        ),
        (
            Candidate(lambda: None, "k", []),
            "candidate k: its module is a function and it gives no definition: the digest is the built module's "
            "(build it first, or give the candidate a definition)",
        ),
        (
            Candidate(None, "k", [], launch={"grid": 1, "block": 1, "sharedMemBytes": 4}, definition=SOURCE),
            "candidate k: launch has 'sharedMemBytes'; its keys are grid, block, shared_mem_bytes",
        ),
        (
            Candidate(None, "k", [], launch={"grid": 0, "block": 1}, definition=SOURCE),
            "candidate k: launch grid is 0, expected 1 to 3 positive integers",
        ),
    ],
)
def test_what_has_no_digest_is_refused(candidate, message):
    with pytest.raises(FarmError) as e:
        candidate_digest(candidate)
    assert (e.value.code, e.value.message) == ("INVALID_ARGUMENT", message)


def test_canonical_json():
    assert (
        canonical_json({"b": 1.0, "a": [None, -0.0, 0.1], "c": None, "d": "é\n"})
        == '{"a":[null,0,"f64:3fb999999999999a"],"b":1,"d":"é\\n"}'
    )
    assert canonical_json(2**53) == '"f64:4340000000000000"' and canonical_json(2**53 - 1) == "9007199254740991"
    assert canonical_json(np.float32(0.5)) == '"f64:3fe0000000000000"' and canonical_json(np.int64(-3)) == "-3"
    assert canonical_json(np.array([1, 2])) == "[1,2]" and canonical_json((True, np.bool_(False))) == "[true,false]"
    assert canonical_json("\ud83d\ude00") == '"😀"' and canonical_json("\udc00") == '"\\udc00"'
