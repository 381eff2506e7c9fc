"""measure(): the farm as a measurement service for auto-tuners (host-sdk/measure/,
docs/measure.md). Many candidates, one result each — never fewer — with a
closed set of outcomes (autotvm's MeasureErrorNo): compiled on the host in
parallel, measured on every matching board at once with one session per
board for the whole batch, checked against a reference before and after
timing with poisoned outputs, results appended as JSON lines — the same
lines the TypeScript measure() writes and reads — so a restarted batch skips
what is done, whichever SDK ran it. A line is reused only for the candidate
it describes (the same id and candidate digest, candidate_digest.py) and only
when its outcome is final (results_file.py).

Infrastructure failures are waited out, not recorded: a candidate whose
session was lost goes back to the queue and its board loop asks the tracker
for a session again, with backoff (backoff.py) while the tracker is
unreachable or has no board of the key. INFRA_ERROR becomes a result only
after `infra_deadline`, or after more than `retries` sessions failed under
the candidate.

Each board's session runs in a thread of its own; `on_result` is called
from those threads (and from a compile thread for a module that did not
build), one result at a time.
"""
from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import functools
import json
import math
import numbers
import os
import sys
import threading
import time
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np
from numpy.typing import NDArray

from .backoff import Backoff
from .candidate import Arg, Candidate, Input, Output, RandomInput, ReferenceFn, is_built
from .candidate_digest import DEFAULT_TIMEOUT_S, CandidateDoc, _ArrayDigests, candidate_digest, canonical_json, module_digest
from .dtypes import dtype_name, shape_of, wire_array
from .errors import FarmError
from .protos import session_pb2
from ._contract import DEFAULT_INFRA_DEADLINE_MS, MEASURE_OUTCOMES as OUTCOMES
from ._contract import DEFAULT_RETRIES as _DEFAULT_RETRIES
from .results_file import ResultsFile, remeasure_reason
from .seeded import fill_problem, fill_range, random_array
from ._contract import OPTION_LIMITS
from .option_limits import check_option
from .session import RemoteArray, RemoteModule, Session, TimeOptions, measured
from .tracker_client import TrackerClient

__all__ = [
    "Arg",
    "Candidate",
    "DEFAULT_INFRA_DEADLINE_S",
    "DEFAULT_RETRIES",
    "FATAL_CODES",
    "Input",
    "MEASURE_OUTCOMES",
    "MeasureResult",
    "Measurer",
    "Output",
    "RandomInput",
    "ReferenceFn",
    "candidate_digest",
    "canonical_json",
    "measure",
    "read_results",
]

# INVALID_CONFIG: a launch the board cannot run (block size, registers, shared memory), refused by its launch check.
MEASURE_OUTCOMES = OUTCOMES
#: Sessions that may fail under one candidate before it is INFRA_ERROR is `retries`; this many by default (contract.json).
DEFAULT_RETRIES: int = _DEFAULT_RETRIES
#: Seconds an infrastructure failure is waited out before INFRA_ERROR is recorded (a tracker or agent restart fits).
DEFAULT_INFRA_DEADLINE_S = DEFAULT_INFRA_DEADLINE_MS / 1000
#: Refusals that no wait heals (a token refused, a request malformed): the batch stops with them at once.
FATAL_CODES = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED", "INVALID_ARGUMENT"})
#: Results-file fields whose JSON name is not the attribute's.
_JSON_NAMES = {"measured_again": "measuredAgain"}
_PY_NAMES = {v: k for k, v in _JSON_NAMES.items()}


@dataclasses.dataclass
class MeasureResult:
    """One candidate's result; its JSON line has the TypeScript SDK's fields.

    `timing`: {"results", "mean", "median", "min", "max", "std", "number"} in
    seconds per call, with "rse" (the precision reached, where finite) and,
    with a precision target, "stoppedBy"; `stats`: the board's counters for
    this candidate alone; `throttled`: whether a GPU board says it was
    throttled while it timed (absent where the board does not say);
    `attempts`: sessions it took (more than 1 after a lost session).
    `digest`: its candidate digest (docs/measure.md, "Resuming a batch";
    absent only for a module given as a function, without a definition, that
    did not build); `measured_again` (`measuredAgain` in the file): why an
    earlier line of its id was not reused. `measurements` and `flagged` come
    from the TypeScript SDK's re-measure option, kept when its lines are read."""

    index: int
    id: str
    outcome: str
    attempts: int
    message: Optional[str] = None
    timing: Optional[dict[str, Any]] = None
    stats: Optional[dict[str, Union[int, float]]] = None
    board: Optional[str] = None
    conditions: Optional[dict[str, str]] = None
    throttled: Optional[bool] = None
    measurements: Optional[int] = None
    flagged: Optional[bool] = None
    digest: Optional[str] = None
    measured_again: Optional[str] = None

    def to_json(self) -> str:
        return json.dumps({_JSON_NAMES.get(k, k): v for k, v in dataclasses.asdict(self).items() if v is not None}, allow_nan=False)

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> "MeasureResult":
        fields = {f.name for f in dataclasses.fields(cls)}
        got = {_PY_NAMES.get(k, k): v for k, v in record.items()}
        known: dict[str, Any] = {"index": 0, "attempts": 0, **{k: v for k, v in got.items() if k in fields}}
        return cls(**known)


def read_results(path: Optional[str]) -> dict[str, MeasureResult]:
    """Results already in a results file, by candidate id (the last line per id; a torn last line is not a line)."""
    if not path:
        return {}
    return {cid: MeasureResult.from_json(line) for cid, line in ResultsFile(path).read().items()}


def _outcome_of(err: BaseException) -> tuple[str, str, bool]:
    """(outcome, message, whether the session is lost) for a board's or kernel's failure."""
    e = FarmError.from_exception(err)
    message = f"{e.code}: {e.message}"
    if e.code in ("COMPILE_ERROR", "TOOLCHAIN_MISSING"):
        return "COMPILE_ERROR", message, False
    if e.code in ("BAD_BUNDLE", "TARGET_MISMATCH", "LOAD_ERROR", "UNKNOWN_FUNCTION"):
        return "LOAD_ERROR", message, False
    if e.code == "TIMEOUT":
        return "TIMEOUT", message, True
    if e.code == "RUNTIME_CRASH":
        return "RUNTIME_ERROR", message, True
    if e.code == "DEVICE_ERROR":
        # A sticky device error loses the context: the session can do nothing more.
        return "RUNTIME_ERROR", message, e.details.get("sticky") is True
    if e.code == "LAUNCH_ERROR":
        return "INVALID_CONFIG", message, False
    if e.code in ("RUNTIME_ERROR", "BAD_ARGUMENTS", "OUT_OF_MEMORY", "TOO_LARGE"):
        return "RUNTIME_ERROR", message, False
    return "INFRA_ERROR", message, True


def _finite(x: float) -> Optional[float]:
    return x if math.isfinite(x) else None


def _check_args(c: Candidate, cid: str) -> None:
    """A candidate that cannot be measured as written (the script's bug): refused before anything runs."""

    def refuse(what: str) -> FarmError:
        return FarmError("INVALID_ARGUMENT", f"measure: candidate {cid}: {what}")

    outputs = 0
    for i, a in enumerate(c.args):
        try:
            if isinstance(a, Input):
                wire_array(a.array, f"argument {i}, an input")
            elif isinstance(a, RandomInput):
                dtype_name(a.dtype, f"argument {i}, a random input")
                shape_of(a.shape, f"argument {i}, a random input")
                problem = fill_problem(np.dtype(a.dtype).name, a.fill)
                if problem:
                    raise refuse(f"argument {i}, a random {a.dtype} input: {problem}")
            elif isinstance(a, Output):
                dtype_name(a.dtype, f"argument {i}, an output")
                shape_of(a.shape, f"argument {i}, an output")
                outputs += 1
                if a.expect is not None and c.reference is not None:
                    raise refuse(f"argument {i} has an expect and the candidate a reference function: give one")
            elif not isinstance(a, numbers.Real) or isinstance(a, bool):
                raise refuse(f"argument {i} is a {type(a).__name__}; arguments are Input, RandomInput, Output or numbers")
        except FarmError as err:
            raise err if err.code == "INVALID_ARGUMENT" else refuse(err.message) from None
    if c.reference is not None and outputs == 0:
        raise refuse("a reference function, but no output arguments to check")
    if is_built(c.module) and not (hasattr(c.module, "bytes") and hasattr(c.module, "name")):
        raise refuse(
            f"its module is a {type(c.module).__name__}; "
            "give a built module (.bytes, .name, as compile_cpu returns) or a function that builds one"
        )


class _References:
    """Each reference function's outputs, per distinct inputs, computed once a batch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._memo: dict[tuple[Any, ...], concurrent.futures.Future[Any]] = {}
        # Host inputs by identity, kept alive so an id is never reused within the batch.
        self._host_inputs: dict[int, NDArray[Any]] = {}
        self._seeded: dict[tuple[Any, ...], NDArray[Any]] = {}

    def expected(self, c: Candidate, cid: str) -> list[Optional[NDArray[Any]]]:
        """The expected contents per argument (None: not a checked output)."""
        if c.reference is None:
            return [a.expect if isinstance(a, Output) else None for a in c.args]
        inputs: list[NDArray[Any]] = []
        keys: list[tuple[Any, ...]] = []
        with self._lock:
            for a in c.args:
                if isinstance(a, Input):
                    self._host_inputs[id(a.array)] = a.array
                    inputs.append(a.array)
                    keys.append(("h", id(a.array)))
                elif isinstance(a, RandomInput):
                    dtype = np.dtype(a.dtype).name
                    low, high = fill_range(dtype, a.fill)
                    key = ("r", dtype, tuple(a.shape), a.seed, low, high, a.integers)
                    if key not in self._seeded:
                        self._seeded[key] = random_array(dtype, int(np.prod(a.shape, dtype=np.int64)), a.fill).reshape(tuple(a.shape))
                    inputs.append(self._seeded[key])
                    keys.append(key)
            memo_key = (id(c.reference), tuple(keys))
            future = self._memo.get(memo_key)
            owner = future is None
            if future is None:
                future = self._memo[memo_key] = concurrent.futures.Future()
        if owner:
            try:
                future.set_result(c.reference(inputs))
            except BaseException as err:  # noqa: BLE001 - handed to every candidate that shares it
                future.set_exception(err)
        try:
            got = future.result()
        except Exception as err:
            raise FarmError("INVALID_ARGUMENT", f"measure: the reference function of candidate {cid} threw: {err}") from err
        outputs = [a for a in c.args if isinstance(a, Output)]
        if not isinstance(got, (list, tuple)) or len(got) != len(outputs):
            n = len(got) if isinstance(got, (list, tuple)) else type(got).__name__
            raise FarmError(
                "INVALID_ARGUMENT", f"measure: the reference function of candidate {cid} returned {n} array(s) for {len(outputs)} output(s)"
            )
        for k, (o, r) in enumerate(zip(outputs, got)):
            want = int(np.prod(o.shape, dtype=np.int64))
            if not isinstance(r, np.ndarray) or r.dtype != np.dtype(o.dtype) or r.size != want:
                what = f"{r.size} {r.dtype}" if isinstance(r, np.ndarray) else type(r).__name__
                raise FarmError(
                    "INVALID_ARGUMENT",
                    f"measure: the reference function of candidate {cid} returned {what} for output {k}, "
                    f"which is {want} {np.dtype(o.dtype).name}",
                )
        it = iter(got)
        return [next(it) if isinstance(a, Output) else None for a in c.args]


class _BoardSession:
    """One board's session for a whole batch: modules uploaded once, and arrays
    kept between candidates (by dtype and shape), so that a candidate usually
    costs one round trip: its inputs' copies and the Measure request go out
    together, and the board serves a session's frames in order. Outputs need
    no reset: the board poisons them before every check."""

    def __init__(self, session: Session):
        self.session = session
        self._modules: dict[str, Callable[[], RemoteModule]] = {}
        self._spare: dict[tuple[Any, ...], list[RemoteArray]] = collections.defaultdict(list)

    def prefetch(self, module: Any) -> Callable[[], RemoteModule]:
        """Sends `module`'s upload and load now, unless already sent; returns what waits for the loaded module."""
        digest = module_digest(module)
        if digest not in self._modules:
            s = self.session
            s.upload(module)
            loading = s._mux.submit(load_module=session_pb2.LoadModule(name=module.name))
            loaded: list[RemoteModule] = []

            def wait() -> RemoteModule:
                if not loaded:
                    try:
                        loaded.append(RemoteModule(s, loading.result().module))
                    except FarmError:
                        # A failure is the result of the candidate that needs it (and a later one tries again).
                        self._modules.pop(digest, None)
                        raise
                return loaded[0]

            self._modules[digest] = wait
        return self._modules[digest]

    def run(
        self, module: Any, c: Candidate, expects: Sequence[Optional[NDArray[Any]]], options: TimeOptions, sent: Callable[[], None]
    ) -> dict[str, Any]:
        s = self.session
        loading = self.prefetch(module)
        taken: list[tuple[tuple[Any, ...], RemoteArray]] = []
        pending = []
        args: list[Any] = []
        try:
            for a in c.args:
                if not isinstance(a, (Input, RandomInput, Output)):
                    args.append(a)
                    continue
                data = wire_array(a.array, "input") if isinstance(a, Input) else None
                shape = data.shape if data is not None else shape_of(a.shape, "measure")  # type: ignore[union-attr]
                dtype = data.dtype.name if data is not None else np.dtype(a.dtype).name  # type: ignore[union-attr]
                key = (dtype, shape)
                spare = self._spare[key]
                array = spare.pop() if spare else s.empty(shape, dtype)
                taken.append((key, array))
                if data is not None and array.nbytes:
                    pending.append(array._write(data))
                elif isinstance(a, RandomInput):
                    # Again at every candidate: the last one may have written into its inputs.
                    pending.append(s._mux.submit(array_fill=array._fill_op(a.fill)))
                args.append(array)
            remote = loading()
            checks = [(args[i], e, c.atol, c.rtol) for i, e in enumerate(expects) if e is not None]
            measuring = s._submit_measure(remote, c.function, args, checks, options._replace(launch=c.launch))
            sent()
            for p in pending:
                p.result()
            timing, wrong, counters = measured(measuring.result())
            board = s.board.id
            t = None
            if timing is not None:
                t = {
                    "results": list(timing.results),
                    **{k: _finite(getattr(timing, k)) for k in ("mean", "median", "min", "max", "std")},
                    "number": timing.number,
                    # The precision reached (inf, with one repeat, is not JSON: left out) and, with a target, what stopped the timing.
                    **({"rse": timing.rse} if math.isfinite(timing.rse) else {}),
                    **({"stoppedBy": timing.stopped_by} if timing.stopped_by != "repeat" else {}),
                }
            if wrong:
                return {"outcome": "WRONG_ANSWER", "message": wrong, "board": board, "timing": t}
            return {
                "outcome": "OK",
                "timing": t,
                "stats": counters,
                "board": board,
                "conditions": dict(timing.conditions) if timing else {},
                "throttled": timing.throttled if timing else None,
            }
        finally:
            for p in pending:
                try:
                    p.result()
                except FarmError:
                    pass
            for spare_key, array in taken:
                self._spare[spare_key].append(array)


class _Progress:
    def __init__(self, total: int, on: bool):
        self._t0 = time.monotonic()
        self.total, self.on = total, on
        self.done = self.failed = self.running = 0
        #: What the batch waits for, during an outage.
        self.waiting: Optional[str] = None

    def draw(self) -> None:
        if not self.on:
            return
        s = max(time.monotonic() - self._t0, 1e-3)
        rate = self.done / s
        eta = (self.total - self.done) / rate if rate > 0 else 0
        waiting = f" · waiting for the farm ({self.waiting})" if self.waiting else ""
        sys.stderr.write(
            f"\r measure: {self.done}/{self.total} done, {self.failed} failed, {self.running} running "
            f"· {rate:.1f}/s · ETA {eta:.0f} s{waiting}   "
        )
        sys.stderr.flush()

    def end(self) -> None:
        if self.on:
            sys.stderr.write("\n")


_DEFAULT_TIME_EVALUATOR: Mapping[str, Any] = {"number": 10, "repeat": 3}
ResultsPath = Union[str, "os.PathLike[str]"]


@dataclasses.dataclass(frozen=True)
class _Given:
    """A batch's options as given (None: not given, so the Measurer's or the default)."""

    time_evaluator: Optional[Mapping[str, Any]] = None
    timeout: Optional[float] = None
    retries: Optional[int] = None
    infra_deadline: Optional[float] = None
    results_file: Optional[ResultsPath] = None
    on_result: Optional[Callable[[MeasureResult], None]] = None
    progress: Optional[bool] = None

    def over(self, base: "_Given") -> "_Given":
        """These options, and `base`'s where these are not given (a batch's over its Measurer's)."""
        return _Given(
            **{f.name: getattr(base, f.name) if getattr(self, f.name) is None else getattr(self, f.name) for f in dataclasses.fields(self)}
        )


class _Options(NamedTuple):
    """A batch's options, resolved: defaults applied, values checked."""

    time_evaluator: dict[str, Any]
    time_options: TimeOptions
    timeout: float
    retries: int
    infra_deadline: float
    results_file: Optional[str]
    on_result: Optional[Callable[[MeasureResult], None]]
    progress: bool


def _resolve(o: _Given) -> _Options:
    given = {k: v for k, v in (o.time_evaluator or {}).items() if v is not None}
    te = {**_DEFAULT_TIME_EVALUATOR, **given}
    allowed = set(TimeOptions._fields) - {"timeout", "launch"}
    if set(te) - allowed:
        raise FarmError(
            "INVALID_ARGUMENT",
            f"measure: unknown time_evaluator option(s) {', '.join(sorted(set(te) - allowed))}; options: {', '.join(sorted(allowed))}",
        )
    # Before anything is sent: the same limits a session's time_evaluator keeps (contract.json "optionLimits").
    for k, v in te.items():
        if k in OPTION_LIMITS["time_evaluator"]:
            check_option("time_evaluator", k, v)
    timeout = DEFAULT_TIMEOUT_S if o.timeout is None else o.timeout
    check_option("measure", "timeout", timeout)
    retries = DEFAULT_RETRIES if o.retries is None else o.retries
    check_option("measure", "retries", retries)
    deadline = DEFAULT_INFRA_DEADLINE_S if o.infra_deadline is None else o.infra_deadline
    check_option("measure", "infra_deadline", deadline)
    return _Options(
        te,
        TimeOptions(**te, timeout=timeout),
        timeout,
        retries,
        float(deadline),
        os.fspath(o.results_file) if o.results_file is not None else None,
        o.on_result,
        sys.stderr.isatty() if o.progress is None else bool(o.progress),
    )


class Measurer:
    """A tuning run's measurement service: batches that keep their sessions,
    and what is in them (modules, arrays), from one batch to the next. The
    sessions hold their boards between batches: close() gives them back.

    `key`, `labels`, `boards` (at most this many; default every board of the
    key the labels select) and `deadline` (seconds a session request waits in
    the tracker's queue, and a batch for a key no board serves waits for one
    to attach before it is refused with NO_BOARD; default 60) belong to the
    Measurer; the rest may change per batch:

    * `time_evaluator`: options of time_evaluator (default number=10, repeat=3);
    * `timeout`: seconds per candidate on the board (default 10);
    * `results_file`: a JSON-lines file, appended per candidate; on start, a
      candidate whose id has a line of the same digest and a final outcome
      is not measured again (docs/measure.md, "Resuming a batch");
    * `retries`: sessions that may fail under one candidate (agent lost,
      session timeout, tracker gone) before it is recorded as INFRA_ERROR
      (default 3; failures to obtain a session do not count);
    * `infra_deadline`: seconds an infrastructure failure is waited out
      (default 600): a candidate is INFRA_ERROR only once this long has
      passed since its first lost session, and a board loop that cannot get
      a session (tracker unreachable, no board of the key) keeps asking, with
      backoff from 0.25 s doubling to 8 s, for this long;
    * `on_result`: called with each result as it is recorded;
    * `progress`: a progress line on stderr (default: when it is a terminal).

    Refusals no wait heals — UNAUTHENTICATED, PERMISSION_DENIED,
    INVALID_ARGUMENT, from the tracker or a board — stop the batch at once:
    measure() raises that FarmError (results already recorded stay in the
    file, and a rerun resumes from them)."""

    def __init__(
        self,
        tracker: TrackerClient,
        key: str,
        labels: Optional[Mapping[str, str]] = None,
        boards: Optional[int] = None,
        deadline: float = 60.0,
        *,
        time_evaluator: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
        retries: Optional[int] = None,
        infra_deadline: Optional[float] = None,
        results_file: Optional[ResultsPath] = None,
        on_result: Optional[Callable[[MeasureResult], None]] = None,
        progress: Optional[bool] = None,
    ):
        self._tracker = tracker
        if boards is not None:
            check_option("measure", "boards", boards)
        check_option("measure", "deadline", deadline)
        self._key, self._labels, self._boards, self._deadline = key, dict(labels or {}), boards, deadline
        self._options = _Given(time_evaluator, timeout, retries, infra_deadline, results_file, on_result, progress)
        _resolve(self._options)
        self._idle: list[_BoardSession] = []
        self._lock = threading.Lock()
        self._running = False
        self._closed = False

    def __enter__(self) -> "Measurer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Ends the sessions: their boards go back to the farm."""
        self._closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for b in idle:
            _close(b)

    def _take_idle(self) -> Optional[_BoardSession]:
        with self._lock:
            while self._idle:
                b = self._idle.pop()
                if not b.session.is_closed:
                    return b
        return None

    def _keep(self, b: _BoardSession) -> None:
        with self._lock:
            self._idle.append(b)

    def _idle_count(self) -> int:
        with self._lock:
            return sum(1 for b in self._idle if not b.session.is_closed)

    def measure(
        self,
        candidates: Sequence[Candidate],
        *,
        time_evaluator: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
        retries: Optional[int] = None,
        infra_deadline: Optional[float] = None,
        results_file: Optional[ResultsPath] = None,
        on_result: Optional[Callable[[MeasureResult], None]] = None,
        progress: Optional[bool] = None,
    ) -> list[MeasureResult]:
        """One batch: one result per candidate, in candidate order. An option
        given here is this batch's; one not given (None) is the Measurer's."""
        given = _Given(time_evaluator, timeout, retries, infra_deadline, results_file, on_result, progress)
        if self._closed:
            raise FarmError("INVALID_ARGUMENT", "measure: this Measurer is closed")
        with self._lock:
            if self._running:
                raise FarmError("INVALID_ARGUMENT", "measure: a Measurer runs one batch at a time")
            self._running = True
        try:
            candidates = list(candidates)
            ids = [c.id if c.id is not None else f"c{i}" for i, c in enumerate(candidates)]
            if len(set(ids)) != len(ids):
                raise FarmError("INVALID_ARGUMENT", "measure: candidate ids must be unique")
            for c, cid in zip(candidates, ids):
                _check_args(c, cid)
            return _Batch(self, candidates, ids, _resolve(given.over(self._options))).run()
        finally:
            self._running = False


def _close(b: Optional[_BoardSession]) -> None:
    if b is not None:
        try:
            b.session.close()
        except FarmError:
            pass


def _build(module_fn: Callable[[], Any], cid: str) -> Any:
    """Runs a candidate's module function (on a compile thread)."""
    built = module_fn()
    if not (hasattr(built, "bytes") and hasattr(built, "name")):
        raise FarmError(
            "INVALID_ARGUMENT",
            f"measure: candidate {cid}: its module function returned a {type(built).__name__}, not a built module "
            "(an object with .bytes and .name, as compile_cpu returns)",
        )
    return built


class _Batch:
    """One batch of a Measurer: what is resumed from the results file, the
    queue of what is not, the board loops that take from it, and the results.

    A loop holds at most one session. Without one, it asks the tracker; an
    outage (tracker unreachable, no board of the key, none free in time) is
    waited out with backoff, for `infra_deadline` from the loop's first
    failure to get one — after that the loop ends, and the last loop to end
    records what is left in the queue as INFRA_ERROR. A candidate whose
    session failed under it goes back to the front of the queue, unless
    that was more than `retries` times or `infra_deadline` after the first.
    """

    def __init__(self, m: Measurer, candidates: list[Candidate], ids: list[str], o: _Options):
        self.m, self.tracker, self.candidates, self.ids, self.o = m, m._tracker, candidates, ids, o
        # One lock for the batch's state; loops wait on it for a change (a result, a candidate back in the queue).
        self.lock = threading.Condition(threading.RLock())
        self.results: list[Optional[MeasureResult]] = [None] * len(candidates)
        self.docs: list[CandidateDoc] = []
        self.digests: dict[int, str] = {}
        self.notes: dict[int, str] = {}
        self.modules: dict[int, concurrent.futures.Future[Any]] = {}
        self.queue: collections.deque[int] = collections.deque()
        self.attempts: dict[int, int] = {}
        self.first_infra: dict[int, float] = {}
        self.fatal: Optional[BaseException] = None
        self.last_infra = "UNAVAILABLE: no session could be had"
        self.requesting = 0
        self.live = 0
        self.ended = False
        self.file = ResultsFile(o.results_file) if o.results_file else None
        self.references = _References()
        self.progress = _Progress(0, False)

    # ---- start ---------------------------------------------------------------------------------------------------

    def run(self) -> list[MeasureResult]:
        # The digests' documents: a definition that is not JSON data, a bad launch, is refused before anything runs.
        arrays = _ArrayDigests()
        for c, cid in zip(self.candidates, self.ids):
            where = f"measure: candidate {cid}"
            try:
                self.docs.append(CandidateDoc(c, self.o.time_evaluator, self.o.timeout, where, arrays))
            except FarmError as err:
                raise err if err.message.startswith(where) else FarmError("INVALID_ARGUMENT", f"{where}: {err.message}") from None
        if self.file:
            self.file.check_writable()
        compiles = concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="kernelfarm-compile")
        try:
            todo = self._resume(self.file.read() if self.file else {}, compiles)
            self.progress = _Progress(len(todo), self.o.progress)
            self.queue.extend(todo)
            for i in todo:
                self.modules[i].add_done_callback(functools.partial(self._built, i))
            slots = self._slots(len(self.queue)) if self.queue else 0
            threads = [threading.Thread(target=self._loop, name=f"kernelfarm-measure-{n}", daemon=True) for n in range(slots)]
            self.live = len(threads)
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            with self.lock:
                self.ended = True
            compiles.shutdown(wait=False, cancel_futures=True)
            self.progress.end()
        if self.fatal is not None:
            raise self.fatal
        return [
            r if r is not None else MeasureResult(i, self.ids[i], "INFRA_ERROR", self.attempts.get(i, 0), "INTERNAL: not measured")
            for i, r in enumerate(self.results)
        ]

    def _resume(self, lines: Mapping[str, Mapping[str, Any]], compiles: concurrent.futures.Executor) -> list[int]:
        """The candidates to measure, in order; the others' results come from their lines. Starts every build."""
        todo: list[int] = []
        deciding: list[int] = []
        for i, (c, cid) in enumerate(zip(self.candidates, self.ids)):
            doc = self.docs[i]
            if not doc.needs_module:
                self.digests[i] = doc.digest()
            elif is_built(c.module):
                self.digests[i] = doc.digest(c.module)
            line = lines.get(cid)
            if line is None:
                todo.append(i)
            elif i in self.digests:
                self._decide(i, line, self.digests[i], todo)
            else:
                deciding.append(i)  # a module function without a definition: built to learn its digest
        for i in deciding + todo:
            m = self.candidates[i].module
            if is_built(m):
                self.modules[i] = concurrent.futures.Future()
                self.modules[i].set_result(m)
            else:
                self.modules[i] = compiles.submit(_build, m, self.ids[i])
        for i in deciding:
            try:
                digest: Optional[str] = self.docs[i].digest(self.modules[i].result())
            except FarmError as err:
                if err.code == "INVALID_ARGUMENT":
                    raise
                digest = None
            except Exception:  # noqa: BLE001 - a module that does not build is measured (its COMPILE_ERROR) again
                digest = None
            if digest is not None:
                self.digests[i] = digest
            self._decide(i, lines[self.ids[i]], digest, todo)
        return sorted(todo)

    def _decide(self, i: int, line: Mapping[str, Any], digest: Optional[str], todo: list[int]) -> None:
        why = remeasure_reason(dict(line), digest)
        if why is None:
            self.results[i] = dataclasses.replace(MeasureResult.from_json(line), index=i)
        else:
            self.notes[i] = why
            todo.append(i)

    def _slots(self, n: int) -> int:
        """Board loops: one per board of the key (and labels), at most `boards` and one per candidate. A key no
        board serves is waited for up to `deadline`, then refused with NO_BOARD; a tracker that does not answer
        is waited out by the loops, like any outage."""
        limit = max(1, min(self.m._boards if self.m._boards is not None else n, n))
        idle = self.m._idle_count()
        if idle:
            try:
                return min(limit, max(idle, self._matching()))
            except FarmError:
                return min(limit, idle)
        until = time.monotonic() + self.m._deadline
        for failures in range(1 << 30):
            try:
                found = self._matching()
            except FarmError as err:
                if err.code in FATAL_CODES:
                    raise
                return min(limit, self.m._boards or 1)
            if found > 0:
                return min(limit, found)
            if time.monotonic() >= until:
                keys = sorted({b.key for b in self.tracker.summary().boards})
                selector = f" with labels {self.m._labels}" if self.m._labels else ""
                raise FarmError(
                    "NO_BOARD",
                    f'measure: no board serves key "{self.m._key}"{selector} (waited {self.m._deadline:g} s for one to attach); '
                    f"the farm serves {'keys ' + ', '.join(keys) if keys else 'no boards at all'}",
                )
            time.sleep(min(2.0, 0.25 * 2**failures, max(0.0, until - time.monotonic())))
        raise AssertionError("unreachable")

    def _matching(self) -> int:
        summary = self.tracker.summary(key=self.m._key)
        return sum(1 for b in summary.boards if b.key == self.m._key and all(b.labels.get(k) == v for k, v in self.m._labels.items()))

    # ---- results -------------------------------------------------------------------------------------------------

    def _record(self, r: MeasureResult) -> None:
        """Records a candidate's final result, once: in results, the file, on_result."""
        with self.lock:
            if self.ended or self.results[r.index] is not None:
                return
            r = dataclasses.replace(r, digest=self.digests.get(r.index), measured_again=self.notes.get(r.index))
            self.results[r.index] = r
            self.progress.done += 1
            if r.outcome != "OK":
                self.progress.failed += 1
            self.lock.notify_all()
            if self.file:
                try:
                    self.file.append(r.to_json())
                except OSError as err:
                    self._stop(
                        FarmError(
                            "UNAVAILABLE",
                            f"measure: cannot append to results_file {self.file.path}: {err}; the batch stopped (rerun it to resume)",
                        )
                    )
                    return
            self.progress.draw()
            if self.o.on_result:
                try:
                    self.o.on_result(r)
                except Exception as err:  # noqa: BLE001 - the script's bug stops the batch, as a throwing reference does
                    self._stop(
                        FarmError("INVALID_ARGUMENT", f"measure: on_result raised for candidate {r.id}: {type(err).__name__}: {err}")
                    )

    def _stop(self, err: BaseException) -> None:
        """Stops the batch: no more candidates are taken, and measure() raises `err`."""
        with self.lock:
            if self.fatal is None:
                self.fatal = err
            self.lock.notify_all()

    def _built(self, i: int, f: concurrent.futures.Future[Any]) -> None:
        """A build ended (on its compile thread): one that failed is the candidate's result now, session or not."""
        if f.cancelled() or f.exception() is None:
            return
        self._build_failed(i, f.exception())  # type: ignore[arg-type]

    def _build_failed(self, i: int, err: BaseException) -> None:
        if isinstance(err, FarmError) and err.code == "INVALID_ARGUMENT":
            self._stop(err)
            return
        message = (
            f"{err.code}: {err.message}"
            if isinstance(err, FarmError)
            else f"COMPILE_ERROR: the module function raised {type(err).__name__}: {err}"
        )
        with self.lock:
            if i in self.queue:
                self.queue.remove(i)
        self._record(MeasureResult(i, self.ids[i], "COMPILE_ERROR", 0, message))

    # ---- board loops ---------------------------------------------------------------------------------------------

    def _loop(self) -> None:
        board: Optional[_BoardSession] = None
        outage: Optional[float] = None  # when this loop's failures to get a session began
        backoff = Backoff()
        try:
            while True:
                with self.lock:
                    if self.fatal is not None or not self.queue:
                        break
                if board is None:
                    board = self.m._take_idle()
                if board is None:
                    try:
                        board = self._request()
                    except FarmError as err:
                        if err.code in FATAL_CODES or self.tracker._closed:
                            self._stop(err)
                            break
                        now = time.monotonic()
                        outage = now if outage is None else outage
                        with self.lock:
                            self.last_infra = f"{err.code}: {err.message}"
                            self.progress.waiting = err.code
                        if now - outage > self.o.infra_deadline:
                            break  # given up; the last loop to end records what is left
                        self._pause(backoff.next())
                        continue
                    outage = None
                    backoff.reset()
                    with self.lock:
                        self.progress.waiting = None
                with self.lock:
                    if self.fatal is not None or not self.queue:
                        break
                    index = self.queue.popleft()
                    attempt = self.attempts[index] = self.attempts.get(index, 0) + 1
                board = self._measure(board, index, attempt)
        finally:
            with self.lock:
                self.live -= 1
                left: list[int] = []
                if self.live == 0 and self.fatal is None:
                    left = list(self.queue)
                    self.queue.clear()
                # Kept for the next batch, unless the Measurer is done with its boards, or another loop of
                # this batch waits for a board (after a lost one, this may be the only one left).
                keep = board is not None and not board.session.is_closed and not self.m._closed and self.requesting == 0
            for i in left:
                # No loop is left to measure these: the farm stayed away for infra_deadline.
                self._record(
                    MeasureResult(
                        i,
                        self.ids[i],
                        "INFRA_ERROR",
                        self.attempts.get(i, 0),
                        f"{self.last_infra} (no session could be had for infra_deadline, {self.o.infra_deadline:g} s)",
                    )
                )
            if keep:
                self.m._keep(board)  # type: ignore[arg-type]
            else:
                _close(board)

    def _request(self) -> _BoardSession:
        with self.lock:
            self.requesting += 1
        try:
            return _BoardSession(self.tracker.request(self.m._key, labels=self.m._labels, deadline=self.m._deadline))
        except FarmError:
            raise
        except Exception as err:  # noqa: BLE001 - anything else the request meets is mapped in one place
            raise FarmError.from_exception(err) from err
        finally:
            with self.lock:
                self.requesting -= 1

    def _pause(self, seconds: float) -> None:
        """Waits `seconds`, or less when the batch stops or has nothing left to take."""
        until = time.monotonic() + seconds
        with self.lock:
            while self.fatal is None and self.queue:
                left = until - time.monotonic()
                if left <= 0:
                    return
                self.lock.wait(left)

    def _measure(self, board: _BoardSession, index: int, attempt: int) -> Optional[_BoardSession]:
        """Measures one candidate on `board`; returns the board, or None when its session was lost."""
        c, cid = self.candidates[index], self.ids[index]
        try:
            module = self.modules[index].result()
        except Exception as err:  # noqa: BLE001 - a failed build is the candidate's result
            self._build_failed(index, err)
            return board
        with self.lock:
            if index not in self.digests and self.docs[index].needs_module:
                self.digests[index] = self.docs[index].digest(module)
        try:
            expects = self.references.expected(c, cid)
        except FarmError as err:
            self._stop(err)
            return board
        with self.lock:
            self.progress.running += 1
        self.progress.draw()
        try:
            current = board

            def prefetch_next() -> None:
                with self.lock:
                    nxt = self.queue[0] if self.queue else None
                f = self.modules.get(nxt) if nxt is not None else None
                if f is not None and f.done() and not f.cancelled() and f.exception() is None:
                    try:
                        current.prefetch(f.result())
                    except FarmError:
                        pass  # the candidate that needs it meets the failure

            got = board.run(module, c, expects, self.o.time_options, prefetch_next)
            self._record(MeasureResult(index, cid, attempts=attempt, **got))
            return board
        except Exception as err:  # noqa: BLE001 - every failure is some candidate's outcome
            e = FarmError.from_exception(err)
            outcome, message, lost = _outcome_of(e)
            # Named before a lost session is dropped: a tuner must know which board crashed or hung.
            board_id = board.session.board.id
            if lost:
                _close(board)
            if e.code in FATAL_CODES:
                self._stop(e)
            elif outcome != "INFRA_ERROR":
                self._record(MeasureResult(index, cid, outcome, attempt, message, board=board_id))
            else:
                self._lost_session(index, attempt, message, board_id)
            return None if lost else board
        finally:
            with self.lock:
                self.progress.running -= 1

    def _lost_session(self, index: int, attempt: int, message: str, board_id: str) -> None:
        """The session failed under a candidate: it goes back to the front of the queue, or is INFRA_ERROR for good."""
        now = time.monotonic()
        with self.lock:
            first = self.first_infra.setdefault(index, now)
            if attempt > self.o.retries:
                why = f"{message} ({attempt} session{'s' if attempt > 1 else ''} failed under this candidate; retries is {self.o.retries})"
            elif now - first > self.o.infra_deadline:
                why = f"{message} (its first session failed {now - first:.0f} s ago; infra_deadline is {self.o.infra_deadline:g} s)"
            else:
                self.queue.appendleft(index)  # again, on a fresh session: the tracker picks any board of the key
                self.lock.notify_all()
                return
        self._record(MeasureResult(index, self.ids[index], "INFRA_ERROR", attempt, why, board=board_id))


def measure(
    tracker: TrackerClient,
    candidates: Sequence[Candidate],
    key: str,
    *,
    labels: Optional[Mapping[str, str]] = None,
    boards: Optional[int] = None,
    deadline: float = 60.0,
    time_evaluator: Optional[Mapping[str, Any]] = None,
    timeout: Optional[float] = None,
    retries: Optional[int] = None,
    infra_deadline: Optional[float] = None,
    results_file: Optional[ResultsPath] = None,
    on_result: Optional[Callable[[MeasureResult], None]] = None,
    progress: Optional[bool] = None,
) -> list[MeasureResult]:
    """Measures every candidate on the boards of `key` (see Measurer for the
    options); returns one result per candidate, in candidate order. Its
    sessions end with it: a search that measures batch after batch keeps them
    with a Measurer."""
    with Measurer(
        tracker,
        key,
        labels,
        boards,
        deadline,
        time_evaluator=time_evaluator,
        timeout=timeout,
        retries=retries,
        infra_deadline=infra_deadline,
        results_file=results_file,
        on_result=on_result,
        progress=progress,
    ) as m:
        return m.measure(candidates)
