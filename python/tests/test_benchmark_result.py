"""BenchmarkResult's precision and throttle flag read as the TypeScript SDK
reads them (domain/precision.ts, domain/throttle.ts): the same samples give
the same rse, the same conditions the same flag."""
from __future__ import annotations

import math

import pytest

from kernelfarm import BenchmarkResult
from kernelfarm.benchmark_result import throttled_of
from kernelfarm.precision import median_rse
from ts_reference import run_ts, ts_value

SAMPLES = [
    [1.0, 2.0, 3.0, 4.0, 100.0],
    [1e-6, 1.02e-6, 0.99e-6, 1.01e-6, 5e-6, 1e-6, 0.98e-6, 1.03e-6, 1e-6, 1e-6],
    [2.0, 2.0, 2.0],
    [1.0, 2.0],
    [0.0, 0.0, 1.0],
    [3.0],
    [],
]
CONDITIONS = [
    {"throttled": "no"},
    {"throttled": "yes: sw power cap, power violation 1.3 ms"},
    {"throttled": "unknown: no NVML on this host"},
    {"kind": "cpu"},
    {},
]


@pytest.fixture(scope="module")
def ts():
    results = run_ts([{"op": "medianRse", "samples": s} for s in SAMPLES] + [{"op": "throttledOf", "conditions": c} for c in CONDITIONS])
    return {"rse": results[: len(SAMPLES)], "throttled": results[len(SAMPLES) :]}


@pytest.mark.parametrize("index", range(len(SAMPLES)))
def test_median_rse_is_the_typescript_formula(ts, index):
    want = ts_value(ts["rse"][index])
    got = median_rse(SAMPLES[index])
    if want == "Infinity":
        assert got == math.inf
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=0)


@pytest.mark.parametrize("index", range(len(CONDITIONS)))
def test_throttled_reads_the_conditions_as_typescript_does(ts, index):
    assert throttled_of(CONDITIONS[index]) == ts_value(ts["throttled"][index])
    assert BenchmarkResult([1.0], 1, CONDITIONS[index]).throttled == throttled_of(CONDITIONS[index])


def test_a_result_without_a_target_stopped_by_its_repeats():
    r = BenchmarkResult([1.0, 1.1, 0.9], 5)
    assert (r.stopped_by, r.rse, r.throttled) == ("repeat", median_rse([1.0, 1.1, 0.9]), None)
