"""The result of a time evaluation: TVM's BenchmarkResult shape (host-sdk/benchmark-result.ts)."""
from __future__ import annotations

import math
import statistics
from typing import Mapping, Sequence


class BenchmarkResult:
    """Every repeat plus its summary, in seconds per call: `results` (one per
    repeat), `mean`, `median`, `min`, `max`, `std` (population, numpy's np.std
    as TVM's), `number` (calls per repeat after min_repeat_ms growth) and
    `conditions` (what the board said about itself: clocks, model, …)."""

    def __init__(self, results: Sequence[float], number: int, conditions: Mapping[str, str] | None = None):
        self.results: tuple[float, ...] = tuple(float(r) for r in results)
        self.number = int(number)
        self.conditions: dict[str, str] = dict(conditions or {})
        n = len(self.results)
        self.mean = statistics.fmean(self.results) if n else math.nan
        self.median = statistics.median(self.results) if n else math.nan
        self.min = min(self.results) if n else math.nan
        self.max = max(self.results) if n else math.nan
        self.std = statistics.pstdev(self.results, self.mean) if n else math.nan

    def __str__(self) -> str:
        """TVM's layout: "Execution time summary:" then mean / median / max / min / std in ms."""
        ms = lambda s: f"{s * 1e3:12.4f}"  # noqa: E731
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
            f"std={self.std}, number={self.number}, results={self.results})"
        )
