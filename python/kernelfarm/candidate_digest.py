"""The candidate digest (docs/measure.md, "Resuming a batch: the candidate
digest"; host-sdk/measure/candidate-digest.ts): SHA-256 of the canonical JSON of what
defines a candidate's result. A results file's line is reused only for the
candidate with the same id *and* digest, so new source under an old id, other
inputs or other timing options are measured again instead of inheriting a
stale answer.

Both SDKs compute it byte for byte alike, so a batch started from one resumes
from the other: Python's names are mapped onto the spec's (time_evaluator's
options, `timeout` in seconds as `timeoutMs`, launch's `shared_mem_bytes`),
and numbers that are not integers are written as their IEEE-754 bits, which
the two languages cannot print differently.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import struct
from typing import Any, Mapping, Optional

import numpy as np
from numpy.typing import NDArray

from .candidate import Candidate, Input, Output, RandomInput, is_built
from .dtypes import dtype_name, shape_of, wire_array
from .errors import FarmError
from .session import _launch, _timeout_ms

DIGEST_VERSION = 1
#: measure()'s per-candidate timeout on the board, in seconds (the spec's timeoutMs default, 10000).
DEFAULT_TIMEOUT_S = 10.0
#: The timing options a digest covers, by the spec's (TypeScript's) names, with measure()'s defaults.
TIMING_DEFAULTS: Mapping[str, Any] = {
    "number": 10,
    "repeat": 3,
    "minRepeatMs": 0,
    "cooldownMs": 0,
    "repeatsToCooldown": 1,
    "limitZeroTimeIterations": 100,
    "targetRse": 0,
    "budgetMs": 0,
    "flushL2": False,
    "graph": False,
    "flushCpuCache": False,
}
#: time_evaluator's option (Python) → its name in the digest.
TIME_EVALUATOR_NAMES: Mapping[str, str] = {
    "number": "number",
    "repeat": "repeat",
    "min_repeat_ms": "minRepeatMs",
    "cooldown_interval_ms": "cooldownMs",
    "repeats_to_cooldown": "repeatsToCooldown",
    "limit_zero_time_iterations": "limitZeroTimeIterations",
    "target_rse": "targetRse",
    "budget_ms": "budgetMs",
    "flush_l2": "flushL2",
    "graph": "graph",
    "flush_cpu_cache": "flushCpuCache",
}
_BOOLEAN_OPTIONS = frozenset({"flushL2", "graph", "flushCpuCache"})
_LAUNCH_KEYS = ("grid", "block", "shared_mem_bytes")
#: Integers below this (in magnitude) are written as integers; JavaScript numbers carry them exactly.
_SAFE = 2**53
#: Deeper nesting is refused rather than overflowing the stack (a definition that contains itself, say).
MAX_DEPTH = 200
_SURROGATE = re.compile("[\ud800-\udfff]")


def canonical_json(value: Any) -> str:
    """JSON that Python and TypeScript write byte for byte alike (canonicalJson
    of host-sdk/measure/candidate-digest.ts): object keys sorted (as JavaScript sorts
    them: by UTF-16 code units), no whitespace, keys whose value is None left
    out, an integral number below 2^53 as an integer (`1.0` is `1`, `-0.0`
    is `0`), any other finite number as the string "f64:" and its 16
    hex digits (IEEE-754, big-endian), strings as JSON.stringify writes them.
    INVALID_ARGUMENT for what JSON cannot hold (NaN, infinities, other
    objects)."""
    out: list[str] = []
    _write(value, out, 0)
    return "".join(out)


def _write(value: Any, out: list[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise FarmError("INVALID_ARGUMENT", f"candidate digest: data nested deeper than {MAX_DEPTH} levels (does it contain itself?)")
    if value is None:
        out.append("null")
    elif isinstance(value, (bool, np.bool_)):
        out.append("true" if value else "false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, (int, float, np.integer, np.floating)):
        out.append(_number(value))
    elif isinstance(value, Mapping):
        entries = []
        for k, v in value.items():
            if not isinstance(k, str):
                raise FarmError(
                    "INVALID_ARGUMENT", f"candidate digest: an object key is a {type(k).__name__} ({k!r}); JSON keys are strings"
                )
            if v is not None:
                entries.append((k, v))
        entries.sort(key=lambda e: e[0].encode("utf-16-be", "surrogatepass"))
        out.append("{")
        for n, (k, v) in enumerate(entries):
            if n:
                out.append(",")
            out.append(_string(k))
            out.append(":")
            _write(v, out, depth + 1)
        out.append("}")
    elif isinstance(value, (list, tuple, np.ndarray)):
        items = value.tolist() if isinstance(value, np.ndarray) else value
        out.append("[")
        for n, v in enumerate(items):
            if n:
                out.append(",")
            _write(v, out, depth + 1)
        out.append("]")
    else:
        raise FarmError(
            "INVALID_ARGUMENT", f"candidate digest: a {type(value).__name__} has no canonical form (a definition must be JSON data)"
        )


def _number(x: Any) -> str:
    if isinstance(x, (int, np.integer)):
        i = int(x)
        if -_SAFE < i < _SAFE:
            return str(i)
        try:
            f = float(i)  # as a JavaScript number holds it
        except OverflowError:
            raise FarmError("INVALID_ARGUMENT", f"candidate digest: {i} is beyond what a JSON number (a double) holds") from None
    else:
        f = float(x)
    if not math.isfinite(f):
        raise FarmError("INVALID_ARGUMENT", f"candidate digest: {f} has no canonical form; use a finite number")
    if f.is_integer() and abs(f) < _SAFE:
        return str(int(f))  # -0.0 is 0, as in JavaScript
    return '"f64:' + struct.pack(">d", f).hex() + '"'


def _string(s: str) -> str:
    out = json.dumps(s, ensure_ascii=False)
    if _SURROGATE.search(out):
        # A pair of surrogates is one character to JavaScript (written as such); a lone one is escaped.
        out = out.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        out = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return out


def timing_doc(time_evaluator: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """Every time-evaluator option by the spec's name, measure()'s defaults filled in (None is the default)."""
    timing = dict(TIMING_DEFAULTS)
    for k, v in (time_evaluator or {}).items():
        name = TIME_EVALUATOR_NAMES.get(k)
        if name is None:
            raise FarmError(
                "INVALID_ARGUMENT", f"measure: unknown time_evaluator option(s) {k}; options: {', '.join(sorted(TIME_EVALUATOR_NAMES))}"
            )
        if v is not None:
            timing[name] = bool(v) if name in _BOOLEAN_OPTIONS else v
    return timing


def timeout_ms(timeout: Optional[float]) -> int:
    """measure()'s `timeout` (seconds; None: 10) as the board gets it, in whole milliseconds."""
    return _timeout_ms(DEFAULT_TIMEOUT_S if timeout is None else timeout, "measure")


def launch_doc(launch: Optional[Mapping[str, Any]], where: str) -> Optional[dict[str, Any]]:
    """A launch configuration normalised as the digest has it: {grid: [x, y, z], block: [x, y, z], sharedMemBytes}."""
    if launch is None:
        return None
    if isinstance(launch, Mapping):
        unknown = [k for k in launch if k not in _LAUNCH_KEYS]
        if unknown:
            raise FarmError(
                "INVALID_ARGUMENT", f"{where}: launch has {', '.join(map(repr, unknown))}; its keys are {', '.join(_LAUNCH_KEYS)}"
            )
    try:
        proto = _launch(launch, where)
    except FarmError as err:
        raise FarmError("INVALID_ARGUMENT", err.message) from None
    assert proto is not None
    return {"grid": list(proto.grid), "block": list(proto.block), "sharedMemBytes": proto.shared_mem_bytes}


def _bytes_digest(a: NDArray[Any], what: str) -> str:
    wire = wire_array(a, what)
    return hashlib.sha256(wire.reshape(-1).view(np.uint8).data).hexdigest()


class _ArrayDigests:
    """SHA-256 of arrays' bytes, once per array object (a tuning batch shares its inputs between candidates)."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[NDArray[Any], str]] = {}

    def __call__(self, a: NDArray[Any], what: str) -> str:
        known = self._by_id.get(id(a))
        if known is None or known[0] is not a:
            known = self._by_id[id(a)] = (a, _bytes_digest(a, what))
        return known[1]


def _arg_doc(a: Any, what: str, digests: _ArrayDigests) -> dict[str, Any]:
    if isinstance(a, Input):
        wire = wire_array(a.array, what)
        return {"input": {"dtype": wire.dtype.name, "shape": list(wire.shape), "sha256": digests(a.array, what)}}
    if isinstance(a, RandomInput):
        return {
            "random": {
                "dtype": dtype_name(a.dtype, what),
                "shape": list(shape_of(a.shape, what)),
                "seed": a.seed,
                "low": a.low,
                "high": a.high,
                "integers": True if a.integers else None,
            }
        }
    if isinstance(a, Output):
        return {
            "output": {
                "dtype": dtype_name(a.dtype, what),
                "shape": list(shape_of(a.shape, what)),
                "expect": digests(a.expect, f"{what}'s expect") if a.expect is not None else None,
            }
        }
    return {"scalar": a}


class CandidateDoc:
    """What a candidate's digest is taken of, checked and prepared once: the
    module's part waits for the built module when the candidate gives no
    definition (`needs_module`)."""

    def __init__(
        self,
        c: Candidate,
        time_evaluator: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
        where: Optional[str] = None,
        _digests: Optional[_ArrayDigests] = None,
    ):
        where = where or f"candidate {c.id if c.id is not None else c.function}"
        digests = _digests or _ArrayDigests()
        self._doc: dict[str, Any] = {
            "v": DIGEST_VERSION,
            "module": {"definition": c.definition} if c.definition is not None else None,
            "function": c.function,
            "args": [_arg_doc(a, f"{where}: argument {i}", digests) for i, a in enumerate(c.args)],
            "atol": c.atol,
            "rtol": c.rtol,
            "launch": launch_doc(c.launch, where),
            "timing": timing_doc(time_evaluator),
            "timeoutMs": timeout_ms(timeout),
        }
        self.needs_module = c.definition is None
        self._where = where
        # Checked now, not when a line is compared: a definition that is not JSON data is refused before anything runs.
        self._canonical = canonical_json(self._doc) if not self.needs_module else None
        if self.needs_module:
            canonical_json({**self._doc, "module": "0" * 64})

    def digest(self, module: Any = None) -> str:
        """The digest (lowercase hex); `module`: the built module, needed when the candidate gives no definition."""
        if not self.needs_module:
            assert self._canonical is not None
            return hashlib.sha256(self._canonical.encode("utf-8")).hexdigest()
        if module is None or not is_built(module):
            raise FarmError(
                "INVALID_ARGUMENT",
                f"{self._where}: its module is a function and it gives no definition: the digest is the built module's "
                "(build it first, or give the candidate a definition)",
            )
        return digest_of({**self._doc, "module": module_digest(module)})


def module_digest(module: Any) -> str:
    """A built module's digest: its `.digest` (the bundle's SHA-256), else the SHA-256 of its bytes."""
    return getattr(module, "digest", None) or hashlib.sha256(module.bytes).hexdigest()


def digest_of(doc: Any) -> str:
    """SHA-256 (lowercase hex) of the UTF-8 canonical JSON of `doc`."""
    return hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()


def candidate_digest(c: Candidate, time_evaluator: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None) -> str:
    """The digest measure() writes on `c`'s results line (and compares on
    resume) for a batch with these `time_evaluator` options and `timeout`
    (seconds). `c.module` must be built unless `c.definition` is given."""
    return CandidateDoc(c, time_evaluator, timeout).digest(None if c.definition is not None else c.module)
