"""Element types of remote arrays and scalar parameters (protos/dtype.ts), as numpy dtypes."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .bundle import DTYPES as DTYPE_NAMES
from .errors import FarmError

#: The dtypes boards hold, by their wire name; all little-endian, as the boards store them.
DTYPES: dict[str, np.dtype] = {name: np.dtype(name).newbyteorder("<") for name in DTYPE_NAMES}

#: [min, max] of the integer dtypes that the wire carries exactly (the 64-bit ones: the safe integers of JavaScript).
_SAFE = 2**53 - 1
INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-_SAFE, _SAFE),
    "uint64": (0, _SAFE),
}

_ADVICE = {
    "float16": "convert it with .astype(np.float32)",
    "bool": "convert it with .astype(np.uint8)",
    "complex": "pass the real and imaginary parts as two float arrays",
}


def dtype_name(dtype: Any, what: str) -> str:
    """The wire name of a numpy dtype (or dtype name) boards support; BAD_ARGUMENTS naming it otherwise."""
    try:
        d = np.dtype(dtype)
    except TypeError:
        raise FarmError("BAD_ARGUMENTS", f"{what}: {dtype!r} is not a dtype; boards hold {', '.join(DTYPES)}") from None
    name = d.name if d.kind != "c" else "complex"
    if d.kind in "iuf" and d.name in DTYPES:
        return d.name
    hint = _ADVICE.get(name, "")
    raise FarmError(
        "BAD_ARGUMENTS",
        f"{what}: dtype {d.name} is not supported; boards hold {', '.join(DTYPES)}{f' ({hint})' if hint else ''}",
    )


def wire_array(value: Any, what: str) -> np.ndarray:
    """`value` as the bytes a board holds: a C-contiguous, little-endian numpy array
    of a supported dtype. Non-contiguous arrays (slices, transposes) and other
    byte orders are copied into that form, as numpy's own `tobytes()` would."""
    if not isinstance(value, np.ndarray):
        raise FarmError(
            "BAD_ARGUMENTS",
            f"{what} must be a numpy array, got {type(value).__name__}: np.asarray(value, dtype=np.float32) makes one"
            f" (dtypes boards hold: {', '.join(DTYPES)})",
        )
    name = dtype_name(value.dtype, what)
    return np.ascontiguousarray(value, dtype=DTYPES[name])


def shape_of(shape: Any, what: str) -> tuple[int, ...]:
    """A shape as dimensions travel (uint32 each); BAD_ARGUMENTS for anything else."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise FarmError("BAD_ARGUMENTS", f"{what}: shape must be a tuple of integers, got {shape!r}") from None
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or not 0 <= d <= 0xFFFF_FFFF:
            raise FarmError(
                "BAD_ARGUMENTS", f"{what}: shape {list(dims)}: {d!r} is not a dimension (integers 0 … 4294967295; split a larger one)"
            )
    return tuple(int(d) for d in dims)


def integer_range(dtype: str) -> Optional[tuple[int, int]]:
    return INTEGER_RANGES.get(dtype)
