"""Exponential backoff with full jitter, for waiting out a farm that went away
(docs/measure.md, "Infrastructure failures: waited out, not recorded"): the
n-th wait is uniform in [0, min(cap, first · 2ⁿ)), so that hosts that lost
the same tracker do not come back in step."""
from __future__ import annotations

import random
from typing import Callable

FIRST_S = 0.25
CAP_S = 8.0


class Backoff:
    def __init__(self, first: float = FIRST_S, cap: float = CAP_S, uniform: Callable[[], float] = random.random):
        self.first, self.cap = first, cap
        self._uniform = uniform
        self._n = 0

    def next(self) -> float:
        """The next wait, in seconds."""
        ceiling = min(self.cap, self.first * 2 ** min(self._n, 30))
        self._n += 1
        return self._uniform() * ceiling

    def reset(self) -> None:
        """After a success: the next failure waits little again."""
        self._n = 0
