"""Python candidates described in JSON for the TypeScript side
(python/tests/ts/candidates.ts): arrays as the bytes a board holds, base64;
the rest as the TypeScript SDK names it. The launch, timing and timeout are
not translated here — a test writes them in TypeScript's names itself, so
that the Python SDK's own mapping is what is tested."""
from __future__ import annotations

import base64
from typing import Any

import numpy as np

from kernelfarm import Candidate, Input, Output, RandomInput


def array_description(a: np.ndarray) -> dict[str, Any]:
    wire = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
    return {"dtype": wire.dtype.name, "base64": base64.b64encode(wire.tobytes()).decode(), "shape": list(wire.shape)}


def describe(c: Candidate, **typescript: Any) -> dict[str, Any]:
    """`c` as candidates.ts reads it; `typescript`: launch, timeEvaluator, timeoutMs, in the TypeScript SDK's names."""
    args: list[dict[str, Any]] = []
    for a in c.args:
        if isinstance(a, Input):
            args.append({"input": array_description(a.array)})
        elif isinstance(a, RandomInput):
            fill = {"seed": a.seed, "low": a.low, "high": a.high, "integers": a.integers}
            args.append({"random": {k: v for k, v in fill.items() if v is not None}, "shape": list(a.shape), "dtype": a.dtype})
        elif isinstance(a, Output):
            args.append(
                {
                    "output": {"shape": list(a.shape), "dtype": a.dtype},
                    **({"expect": array_description(a.expect)} if a.expect is not None else {}),
                }
            )
        else:
            args.append({"scalar": a})
    d: dict[str, Any] = {"function": c.function, "args": args, "atol": c.atol, "rtol": c.rtol, **typescript}
    if c.id is not None:
        d["id"] = c.id
    if c.definition is not None:
        d["definition"] = c.definition
    else:
        d["moduleDigest"] = c.module.digest
    return d
