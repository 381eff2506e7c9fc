"""The result of a time evaluation: TVM's BenchmarkResult shape (host-sdk/benchmark-result.ts)."""
from __future__ import annotations

import math
import statistics
from typing import Mapping, Optional, Sequence

from .precision import median_rse


def throttled_of(conditions: Optional[Mapping[str, str]]) -> Optional[bool]:
    """Whether a result's conditions say it was timed while the GPU was
    throttled (domain/throttle.ts throttledOf): True ("yes: …"), False
    ("no"), None where the board cannot tell or does not say."""
    t = (conditions or {}).get("throttled")
    if t == "no":
        return False
    if t is not None and t.startswith("yes"):
        return True
    return None


class BenchmarkResult:
    """Every repeat plus its summary, in seconds per call: `results` (one per
    repeat), `mean`, `median`, `min`, `max`, `std` (population, numpy's np.std
    as TVM's), `number` (calls per repeat after min_repeat_ms growth),
    `conditions` (what the board said about itself: clocks, model, …), `rse`
    (the median's relative standard error: the precision reached),
    `stopped_by` (with a precision target: "precision", "budget" or
    "max_repeats"; else "repeat") and `throttled` (whether a GPU board says
    it was throttled while it timed; None where the board does not say)."""

    def __init__(self, results: Sequence[float], number: int, conditions: Mapping[str, str] | None = None, stopped_by: str = "repeat"):
        self.results: tuple[float, ...] = tuple(float(r) for r in results)
        self.number = int(number)
        self.conditions: dict[str, str] = dict(conditions or {})
        self.stopped_by = stopped_by
        self.rse = median_rse(self.results)
        self.throttled = throttled_of(self.conditions)
        n = len(self.results)
        self.mean = statistics.fmean(self.results) if n else math.nan
        self.median = statistics.median(self.results) if n else math.nan
        self.min = min(self.results) if n else math.nan
        self.max = max(self.results) if n else math.nan
        self.std = statistics.pstdev(self.results, self.mean) if n else math.nan

    def __str__(self) -> str:
        """TVM's layout: "Execution time summary:" then mean / median / max / min / std in ms."""

        def ms(s: float) -> str:
            return f"{s * 1e3:12.4f}"

        return "\n".join(
            [
                "Execution time summary:",
                " mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)  ",
                f"{ms(self.mean)} {ms(self.median)} {ms(self.max)} {ms(self.min)} {ms(self.std)}",
            ]
        )

    def __repr__(self) -> str:
        return (
            f"BenchmarkResult(min={self.min}, mean={self.mean}, median={self.median}, max={self.max}, "
            f"std={self.std}, rse={self.rse}, stopped_by={self.stopped_by!r}, number={self.number}, results={self.results})"
        )
