"""The numeric options of the SDK's APIs, checked against the one table of their
limits (protos/farm/v1/contract.json "optionLimits", generated as
_contract.OPTION_LIMITS; protos/option-limits.ts checks the same table with the
same words for TypeScript). A value outside it is refused before anything is
sent: on the wire a negative `repeat` would become 4294967295 as a uint32.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Union

import numpy as np

from ._contract import OPTION_LIMITS, OptionLimit
from .errors import FarmError


def _number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def describe_limit(limit: OptionLimit) -> str:
    """ "an integer in [1, 4294967295]", "a number in [0, 1)", "a number of seconds in [0.001, 4294967.295]": what `limit` takes."""
    close = ")" if limit.max_exclusive else "]"
    if limit.unit == "s":
        return f"a number of seconds in [{_number(limit.min / 1000)}, {_number(limit.max / 1000)}{close}"
    return f"{'an integer' if limit.integer else 'a number'} in [{_number(limit.min)}, {_number(limit.max)}{close}"


def _fits(limit: OptionLimit, value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return False
    if limit.integer and limit.unit != "s" and not isinstance(value, (int, np.integer)):
        return False
    try:
        # Seconds compare as the milliseconds that travel (a float holds every integer up to 2**53 exactly; a larger one is out of range).
        v = float(value) * (1000 if limit.unit == "s" else 1)
    except OverflowError:
        return False  # an int beyond any float
    if not math.isfinite(v):
        return False
    return bool(limit.min <= v and (v < limit.max if limit.max_exclusive else v <= limit.max))


def check_option(api: str, option: str, value: Any) -> Union[int, float]:
    """`value` of `api`'s `option` as the wire carries it (seconds as whole milliseconds), or INVALID_ARGUMENT
    naming the option, the value and the range."""
    limit = OPTION_LIMITS[api][option]
    if not _fits(limit, value):
        raise FarmError(
            "INVALID_ARGUMENT",
            f"{api} {option} must be {describe_limit(limit)} ({limit.doc}), got {value!r}",
            {"option": f"{api}.{option}"},
        )
    if limit.unit == "s":
        return int(max(limit.min, round(float(value) * 1000)))
    return int(value) if limit.integer else float(value)
