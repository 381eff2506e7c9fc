"""measure(): the farm as a measurement service for auto-tuners (host-sdk/measure.ts,
docs/measure.md). Many candidates, one result each — never fewer — with a
closed set of outcomes (autotvm's MeasureErrorNo): compiled on the host in
parallel, measured on every matching board at once with one session per
board for the whole batch, checked against a reference before and after
timing with poisoned outputs, infrastructure failures retried once on a
fresh session, results appended as JSON lines — the same lines the
TypeScript measure() writes and reads — so a restarted batch skips what is
done, whichever SDK ran it.

Each board's session runs in a thread of its own; `on_result` is called
from those threads, one result at a time.
"""
from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import hashlib
import json
import math
import numbers
import os
import sys
import threading
import time
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from .candidate import Arg, Candidate, Input, Output, RandomInput, ReferenceFn  # noqa: F401 - re-exported
from .dtypes import dtype_name, shape_of, wire_array
from .errors import FarmError
from .protos import session_pb2
from .seeded import fill_problem, fill_range, random_array
from .session import RemoteArray, RemoteModule, Session, TimeOptions, measured
from .tracker_client import TrackerClient

# INVALID_CONFIG: a launch the board cannot run (block size, registers, shared memory), refused by its launch check.
MEASURE_OUTCOMES = ("OK", "INVALID_CONFIG", "COMPILE_ERROR", "LOAD_ERROR", "RUNTIME_ERROR", "WRONG_ANSWER", "TIMEOUT", "INFRA_ERROR")


@dataclasses.dataclass
class MeasureResult:
    """One candidate's result; its JSON line has the TypeScript SDK's fields.

    `timing`: {"results", "mean", "median", "min", "max", "std", "number"} in
    seconds per call, with "rse" (the precision reached, where finite) and,
    with a precision target, "stoppedBy"; `stats`: the board's counters for
    this candidate alone; `throttled`: whether a GPU board says it was
    throttled while it timed (absent where the board does not say);
    `attempts`: sessions it took (2 after a retried infrastructure failure).
    `measurements` and `flagged` come from the TypeScript SDK's re-measure
    option (docs/measure.md), kept when its lines are read."""

    index: int
    id: str
    outcome: str
    attempts: int
    message: Optional[str] = None
    timing: Optional[dict[str, Any]] = None
    stats: Optional[dict[str, float]] = None
    board: Optional[str] = None
    conditions: Optional[dict[str, str]] = None
    throttled: Optional[bool] = None
    measurements: Optional[int] = None
    flagged: Optional[bool] = None

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in dataclasses.asdict(self).items() if v is not None}, allow_nan=False)

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> "MeasureResult":
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in record.items() if k in fields})


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


def read_results(path: Optional[str]) -> dict[str, MeasureResult]:
    """Results already in a results file, by candidate id (later lines win; a torn last line is ignored)."""
    out: dict[str, MeasureResult] = {}
    if not path or not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a line cut short by a crash: that candidate is measured again
            if isinstance(r, dict) and isinstance(r.get("id"), str) and r.get("outcome") in MEASURE_OUTCOMES:
                out[r["id"]] = MeasureResult.from_json(r)
    return out


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


class _References:
    """Each reference function's outputs, per distinct inputs, computed once a batch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._memo: dict[tuple, concurrent.futures.Future] = {}
        # Host inputs by identity, kept alive so an id is never reused within the batch.
        self._host_inputs: dict[int, np.ndarray] = {}
        self._seeded: dict[tuple, np.ndarray] = {}

    def expected(self, c: Candidate, cid: str) -> list[Optional[np.ndarray]]:
        """The expected contents per argument (None: not a checked output)."""
        if c.reference is None:
            return [a.expect if isinstance(a, Output) else None for a in c.args]
        inputs: list[np.ndarray] = []
        keys: list[tuple] = []
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
            if owner:
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
            raise FarmError("INVALID_ARGUMENT", f"measure: the reference function of candidate {cid} returned {n} array(s) for {len(outputs)} output(s)")
        for k, (o, r) in enumerate(zip(outputs, got)):
            want = int(np.prod(o.shape, dtype=np.int64))
            if not isinstance(r, np.ndarray) or r.dtype != np.dtype(o.dtype) or r.size != want:
                what = f"{r.size} {r.dtype}" if isinstance(r, np.ndarray) else type(r).__name__
                raise FarmError(
                    "INVALID_ARGUMENT", f"measure: the reference function of candidate {cid} returned {what} for output {k}, which is {want} {np.dtype(o.dtype).name}"
                )
        it = iter(got)
        return [next(it) if isinstance(a, Output) else None for a in c.args]


def _digest(module: Any) -> str:
    return getattr(module, "digest", None) or hashlib.sha256(module.bytes).hexdigest()


class _BoardSession:
    """One board's session for a whole batch: modules uploaded once, and arrays
    kept between candidates (by dtype and shape), so that a candidate usually
    costs one round trip: its inputs' copies and the Measure request go out
    together, and the board serves a session's frames in order. Outputs need
    no reset: the board poisons them before every check."""

    def __init__(self, session: Session):
        self.session = session
        self._modules: dict[str, Callable[[], RemoteModule]] = {}
        self._spare: dict[tuple, list[RemoteArray]] = collections.defaultdict(list)

    def prefetch(self, module: Any) -> Callable[[], RemoteModule]:
        """Sends `module`'s upload and load now, unless already sent; returns what waits for the loaded module."""
        digest = _digest(module)
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

    def run(self, module: Any, c: Candidate, expects: Sequence[Optional[np.ndarray]], options: TimeOptions, sent: Callable[[], None]) -> dict[str, Any]:
        s = self.session
        loading = self.prefetch(module)
        taken: list[tuple[tuple, RemoteArray]] = []
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
                "outcome": "OK", "timing": t, "stats": counters, "board": board,
                "conditions": dict(timing.conditions) if timing else {}, "throttled": timing.throttled if timing else None,
            }
        finally:
            for p in pending:
                try:
                    p.result()
                except FarmError:
                    pass
            for key, array in taken:
                self._spare[key].append(array)


class _Progress:
    def __init__(self, total: int, on: bool):
        self._t0 = time.monotonic()
        self.total, self.on = total, on
        self.done = self.failed = self.running = 0

    def draw(self) -> None:
        if not self.on:
            return
        s = max(time.monotonic() - self._t0, 1e-3)
        rate = self.done / s
        eta = (self.total - self.done) / rate if rate > 0 else 0
        sys.stderr.write(f"\r measure: {self.done}/{self.total} done, {self.failed} failed, {self.running} running · {rate:.1f}/s · ETA {eta:.0f} s   ")
        sys.stderr.flush()

    def end(self) -> None:
        if self.on:
            sys.stderr.write("\n")


_DEFAULT_TIME_EVALUATOR: Mapping[str, Any] = {"number": 10, "repeat": 3}


class Measurer:
    """A tuning run's measurement service: batches that keep their sessions,
    and what is in them (modules, arrays), from one batch to the next. The
    sessions hold their boards between batches: close() gives them back.

    `key`, `labels`, `boards` (at most this many; default every board of the
    key the labels select) and `deadline` (seconds to wait for boards) belong
    to the Measurer; the rest may change per batch: `time_evaluator` (options
    of time_evaluator; default number=10, repeat=3), `timeout` (seconds per
    candidate on the board, default 10), `retries` (of infrastructure
    failures, default 1), `results_file` (JSON lines: appended per candidate;
    candidates already in it are skipped), `on_result`, `progress`."""

    def __init__(
        self,
        tracker: TrackerClient,
        key: str,
        labels: Optional[Mapping[str, str]] = None,
        boards: Optional[int] = None,
        deadline: float = 60.0,
        **batch_options: Any,
    ):
        self._tracker = tracker
        self._key, self._labels, self._boards, self._deadline = key, dict(labels or {}), boards, deadline
        self._options = self._batch_options(batch_options)
        self._idle: list[_BoardSession] = []
        self._lock = threading.Lock()
        self._running = False
        self._closed = False

    @staticmethod
    def _batch_options(o: Mapping[str, Any], base: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
        known = {"time_evaluator", "timeout", "retries", "results_file", "on_result", "progress"}
        unknown = set(o) - known
        if unknown:
            raise FarmError("INVALID_ARGUMENT", f"measure: unknown option(s) {', '.join(sorted(unknown))}; options: {', '.join(sorted(known))}")
        return {**(base or {}), **o}

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
            try:
                b.session.close()
            except FarmError:
                pass

    def _take_idle(self) -> Optional[_BoardSession]:
        with self._lock:
            while self._idle:
                b = self._idle.pop()
                if not b.session.is_closed:
                    return b
        return None

    def measure(self, candidates: Sequence[Candidate], **batch_options: Any) -> list[MeasureResult]:
        """One batch: one result per candidate, in candidate order."""
        if self._closed:
            raise FarmError("INVALID_ARGUMENT", "measure: this Measurer is closed")
        with self._lock:
            if self._running:
                raise FarmError("INVALID_ARGUMENT", "measure: a Measurer runs one batch at a time")
            self._running = True
        try:
            return self._batch(list(candidates), self._batch_options(batch_options, self._options))
        finally:
            self._running = False

    def _batch(self, candidates: list[Candidate], o: dict[str, Any]) -> list[MeasureResult]:
        ids = [c.id if c.id is not None else f"c{i}" for i, c in enumerate(candidates)]
        if len(set(ids)) != len(ids):
            raise FarmError("INVALID_ARGUMENT", "measure: candidate ids must be unique")
        for c, cid in zip(candidates, ids):
            _check_args(c, cid)
        te = {**_DEFAULT_TIME_EVALUATOR, **(o.get("time_evaluator") or {})}
        allowed = set(TimeOptions._fields) - {"timeout", "launch"}
        if set(te) - allowed:
            raise FarmError("INVALID_ARGUMENT", f"measure: unknown time_evaluator option(s) {', '.join(sorted(set(te) - allowed))}; options: {', '.join(sorted(allowed))}")
        options = TimeOptions(**te, timeout=o.get("timeout", 10.0))
        retries = o.get("retries", 1)
        results_file: Optional[str] = o.get("results_file")
        on_result: Optional[Callable[[MeasureResult], None]] = o.get("on_result")

        results: list[Optional[MeasureResult]] = [None] * len(candidates)
        known = read_results(results_file)
        for i, cid in enumerate(ids):
            if cid in known:
                results[i] = dataclasses.replace(known[cid], index=i)
        unmeasured = [i for i, r in enumerate(results) if r is None]
        progress = _Progress(len(unmeasured), o.get("progress", sys.stderr.isatty()))
        lock = threading.Lock()

        def record(r: MeasureResult) -> None:
            with lock:
                results[r.index] = r
                progress.done += 1
                if r.outcome != "OK":
                    progress.failed += 1
                if results_file:
                    with open(results_file, "a", encoding="utf-8") as f:
                        f.write(r.to_json() + "\n")
                progress.draw()
                if on_result:
                    on_result(r)

        # Host compilation in parallel, started now and awaited per candidate.
        compiles = concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="kernelfarm-compile")
        modules: dict[int, concurrent.futures.Future] = {}
        for i in unmeasured:
            m = candidates[i].module
            if callable(m) and not hasattr(m, "bytes"):
                modules[i] = compiles.submit(m)
            else:
                modules[i] = concurrent.futures.Future()
                modules[i].set_result(m)

        queue = collections.deque(unmeasured)
        attempts: dict[int, int] = {}
        summary = self._tracker.summary(key=self._key)
        matching = [b for b in summary.boards if b.key == self._key and all(b.labels.get(k) == v for k, v in self._labels.items())]
        slots = max(1, min(self._boards if self._boards is not None else len(matching), len(matching) or 1, len(queue)))
        state = {"fatal": None, "requesting": 0}
        references = _References()

        def request() -> _BoardSession:
            with lock:
                state["requesting"] += 1
            try:
                return _BoardSession(self._tracker.request(self._key, labels=self._labels, deadline=self._deadline))
            finally:
                with lock:
                    state["requesting"] -= 1

        def run_board() -> None:
            board: Optional[_BoardSession] = None

            def drop() -> None:
                nonlocal board
                b, board = board, None
                if b:
                    try:
                        b.session.close()
                    except FarmError:
                        pass

            try:
                while True:
                    with lock:
                        if not queue or state["fatal"] is not None:
                            break
                        index = queue.popleft()
                        attempt = attempts[index] = attempts.get(index, 0) + 1
                    c, cid = candidates[index], ids[index]
                    try:
                        module = modules[index].result()
                    except Exception as err:  # noqa: BLE001 - a failed build is the candidate's result
                        outcome, message, _ = _outcome_of(err)
                        record(MeasureResult(index, cid, outcome, 0, message))
                        continue
                    try:
                        expects = references.expected(c, cid)
                    except FarmError as err:
                        with lock:
                            state["fatal"] = state["fatal"] or err
                        break
                    with lock:
                        progress.running += 1
                    progress.draw()
                    try:
                        board = board or self._take_idle() or request()
                        current = board

                        def prefetch_next() -> None:
                            with lock:
                                nxt = queue[0] if queue else None
                            f = modules.get(nxt) if nxt is not None else None
                            if f is not None and f.done() and f.exception() is None:
                                try:
                                    current.prefetch(f.result())
                                except FarmError:
                                    pass  # the candidate that needs it meets the failure

                        got = board.run(module, c, expects, options, prefetch_next)
                        record(MeasureResult(index, cid, attempts=attempt, **got))
                    except Exception as err:  # noqa: BLE001 - every failure is some candidate's outcome
                        outcome, message, lost = _outcome_of(err)
                        # Named before a lost session is dropped: a tuner must know which board crashed or hung.
                        # A compile error involved none.
                        board_id = board.session.board.id if board and outcome != "COMPILE_ERROR" else None
                        if lost:
                            drop()
                        if outcome == "INFRA_ERROR" and attempt <= retries:
                            # Again, on a fresh session (the board may be gone: the tracker picks another).
                            with lock:
                                queue.appendleft(index)
                        else:
                            record(MeasureResult(index, cid, outcome, attempt, message, board=board_id))
                    finally:
                        with lock:
                            progress.running -= 1
            finally:
                # Kept for the next batch, unless the Measurer is done with its boards, or another loop of
                # this batch waits for a board (after a lost one, this may be the only one left).
                with lock:
                    keep = board is not None and not board.session.is_closed and not self._closed and state["requesting"] == 0
                if keep:
                    with self._lock:
                        self._idle.append(board)  # type: ignore[arg-type]
                else:
                    drop()

        threads = [threading.Thread(target=run_board, name=f"kernelfarm-measure-{n}", daemon=True) for n in range(slots)]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            compiles.shutdown(wait=False, cancel_futures=True)
            progress.end()
        if state["fatal"] is not None:
            raise state["fatal"]
        return [
            r if r is not None else MeasureResult(i, ids[i], "INFRA_ERROR", attempts.get(i, 0), "INTERNAL: not measured")
            for i, r in enumerate(results)
        ]


def measure(tracker: TrackerClient, candidates: Sequence[Candidate], key: str, **options: Any) -> list[MeasureResult]:
    """Measures every candidate on the boards of `key` (see Measurer for the
    options); returns one result per candidate, in candidate order. Its
    sessions end with it: a search that measures batch after batch keeps them
    with a Measurer."""
    measurer_options = {k: options.pop(k) for k in ("labels", "boards", "deadline") if k in options}
    with Measurer(tracker, key, **measurer_options, **options) as m:
        return m.measure(candidates)
