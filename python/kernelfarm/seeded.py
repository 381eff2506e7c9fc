"""Seeded inputs: the generator boards fill arrays with (domain/random.ts), so a
host computes its references from the same bytes the board generated and no
input crosses the network.

Element i of seed s is drawn from h = mix(i · 0x9E3779B1 + mix(s ⊕ 0x85EBCA6B))
in 32-bit arithmetic, mix being Wellons' lowbias32. Floating point types take
low + (h >> 8) / 2^24 · (high − low), computed in float64 and stored in the
array's type; integer types, and floating point ones with `integers`, take
low + ⌊h / 2^32 · (high − low + 1)⌋, in [low, high].
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import numpy as np
from numpy.typing import NDArray

from .dtypes import DTYPES, integer_range


class RandomFill(NamedTuple):
    """A seeded fill: `seed` in [0, 2^32); floating point: [low, high), default
    [-1, 1); integers: [low, high] inclusive, default [-128, 127] (signed) or
    [0, 255]; `integers`: floating point types take whole numbers instead."""

    seed: int
    low: Optional[float] = None
    high: Optional[float] = None
    integers: bool = False


def fill_range(dtype: str, fill: RandomFill) -> tuple[float, float]:
    """The range used for `dtype` when `fill` gives none."""
    r = integer_range(dtype)
    signed = r is not None and r[0] < 0
    low = fill.low if fill.low is not None else (-1 if r is None else -128 if signed else 0)
    high = fill.high if fill.high is not None else (1 if r is None else 127 if signed else 255)
    return low, high


def _is_int(x: float) -> bool:
    return isinstance(x, (int, np.integer)) or (isinstance(x, float) and x.is_integer())


def fill_problem(dtype: str, fill: RandomFill) -> Optional[str]:
    """What is wrong with `fill` for `dtype`, or None (domain/random.ts fillProblem)."""
    if not isinstance(fill.seed, (int, np.integer)) or isinstance(fill.seed, bool) or not 0 <= fill.seed <= 0xFFFFFFFF:
        return f"the seed must be an integer in [0, 2^32), got {fill.seed!r}"
    low, high = fill_range(dtype, fill)
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        return f"the range [{low}, {high}] is empty or not finite"
    r = integer_range(dtype)
    if r is None and not fill.integers:
        return None
    if not (_is_int(low) and _is_int(high) and abs(low) <= 2**53 - 1 and abs(high) <= 2**53 - 1):
        return f"an integer range needs integer bounds, got [{low}, {high}]"
    if r is not None and (low < r[0] or high > r[1]):
        return f"[{low:g}, {high:g}] does not fit {dtype} ([{r[0]}, {r[1]}])"
    return None


def _mix(x: NDArray[Any]) -> NDArray[Any]:
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def random_array(dtype: str, count: int, fill: RandomFill) -> NDArray[Any]:
    """`count` elements of `dtype` from `fill`'s generator, as the board makes them."""
    problem = fill_problem(dtype, fill)
    if problem:
        raise ValueError(f"random {dtype} input: {problem}")
    low, high = fill_range(dtype, fill)
    key = _mix(np.array([(fill.seed ^ 0x85EBCA6B) & 0xFFFFFFFF], dtype=np.uint32))[0]
    with np.errstate(over="ignore"):
        i = np.arange(count, dtype=np.uint32)
        h = _mix(i * np.uint32(0x9E3779B1) + key)
    if integer_range(dtype) is None and not fill.integers:
        values = low + (h >> np.uint32(8)).astype(np.float64) * ((high - low) / 2**24)
    else:
        values = low + np.floor(h.astype(np.float64) / 2**32 * (high - low + 1))
    return values.astype(DTYPES[dtype])
