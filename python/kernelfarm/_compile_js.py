"""Python values seen the way the TypeScript compilers see them.

The host compilers must give the same CUDA cache keys and messages as their
TypeScript twins, whose values are JavaScript values: a number has no
int/float distinction (``2.0`` is the integer 2), a record orders
integer-like keys first, and a message quotes a value with
``JSON.stringify``. These helpers answer those questions for Python values,
in one place, so the validation, the cache key and the error messages agree
with each other and with Node. (The bundle's bytes need none of this: they
are protobuf, bundle.proto's canonical encoding.)
"""
from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Mapping
from typing import Any, Iterable

#: Stands for a key that a record lacks (JavaScript's `undefined`).
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()

# A canonical array index: "0", "7", "4294967294"; not "07", "-1" or "1.0".
_INDEX_KEY = re.compile(r"0|[1-9][0-9]*")
_MAX_INDEX = 2**32 - 2


def is_number(value: Any) -> bool:
    """A JavaScript number: ints and floats (numpy's too), never a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_integer(value: Any) -> bool:
    """`Number.isInteger(value)`: an int, or a float with an integral value."""
    if not is_number(value):
        return False
    if isinstance(value, numbers.Integral):
        return True
    return math.isfinite(value) and float(value).is_integer()


def _js_key_order(keys: Iterable[str]) -> list[str]:
    """A record's keys in JavaScript property order: integer-like keys
    ascending, then the others as inserted (what `for…in` and JSON.stringify see)."""
    keys = list(keys)
    indices = sorted((k for k in keys if _INDEX_KEY.fullmatch(k) and int(k) <= _MAX_INDEX), key=int)
    taken = set(indices)
    return indices + [k for k in keys if k not in taken]


def _plain(value: Any) -> Any:
    """`value` as JSON.stringify would see it: integral floats as ints, tuples as lists."""
    if isinstance(value, Mapping):
        items = {str(k): v for k, v in value.items()}
        return {k: _plain(items[k]) for k in _js_key_order(items)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if is_number(value):
        if not math.isfinite(value):
            return None  # JSON.stringify(NaN) is "null"
        return int(value) if is_integer(value) else float(value)
    return value


def js_json(value: Any) -> str:
    """`JSON.stringify(value)` for the values messages quote; MISSING is
    "undefined" (as a template literal shows it). Values JSON cannot hold
    (bytes, objects) are shown with repr: messages only."""
    if value is MISSING:
        return "undefined"
    try:
        return json.dumps(_plain(value), ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


def canonical_json(value: Any) -> str:
    """protos' cache canonical JSON (host-sdk/cuda/cache.ts): records with keys
    sorted by UTF-16 code unit, MISSING entries left out, no spaces."""
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    if isinstance(value, Mapping):
        entries = sorted(((k, v) for k, v in value.items() if v is not MISSING), key=lambda kv: kv[0].encode("utf-16-be"))
        return "{" + ",".join(f"{js_json(k)}:{canonical_json(v)}" for k, v in entries) + "}"
    return "null" if value is MISSING else js_json(value)
