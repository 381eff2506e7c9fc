"""The precision a time evaluation reached: the median's relative standard
error, by the formula the board stops on and the TypeScript SDK reports
(domain/precision.ts): √(π/2) · 1.4826 · MAD / √n over the median — the
standard error of a sample median, with σ estimated from the median absolute
deviation so that one disturbed repeat does not dominate it."""
from __future__ import annotations

import math
import statistics
from typing import Sequence

#: 1.4826 × MAD estimates σ for normal samples.
_MAD_TO_SIGMA = 1.4826


def median_rse(samples: Sequence[float]) -> float:
    """The median's relative standard error of `samples`; inf with fewer than two or a zero median."""
    n = len(samples)
    if n < 2:
        return math.inf
    median = statistics.median(samples)
    mad = statistics.median(abs(x - median) for x in samples)
    if mad == 0:
        return 0.0
    return math.sqrt(math.pi / 2) * _MAD_TO_SIGMA * mad / math.sqrt(n) / median if median > 0 else math.inf
