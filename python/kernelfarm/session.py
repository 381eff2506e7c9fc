"""A session on one board: TVM's `remote` (host-sdk/session.ts). Files, modules,
arrays, calls and timing, over the session's lane; requests are pipelined
through the Multiplexer, which matches each reply to its request by id.

Units are Python's: timeouts in seconds, shapes as tuples, arrays as numpy
arrays. Every failure is a FarmError.
"""
from __future__ import annotations

import numbers
import os
import re
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np
from numpy.typing import NDArray

from .benchmark_result import BenchmarkResult
from .dtypes import DTYPES, dtype_name, shape_of, wire_array
from .errors import FarmError
from .frames import CHUNK_BYTES
from .multiplexer import Multiplexer, Pending
from .option_limits import check_option
from .protos import session_pb2
from .summary import BoardInfo
from .seeded import RandomFill, fill_problem, fill_range
from .tree_digest import tree_digest

_INT64 = (-(2**63), 2**63 - 1)
_UINT32_MAX = 0xFFFF_FFFF


class FileInfo(NamedTuple):
    """One file of the session's folder."""

    name: str
    size: int


class FpgaProgrammed(NamedTuple):
    """What Session.program_fpga loaded: the bitstream's SHA-256 (the board's `bitstream` label) and its VTA configuration."""

    sha256: str
    hardware: str


class Stats(NamedTuple):
    """The board's counters (VTA: TVM's simulator statistics and cycles; CUDA: registers, …) and facts."""

    #: Integer counts as int (board_counters).
    counters: dict[str, Union[int, float]]
    info: dict[str, str]


def board_counters(counters: Mapping[str, float]) -> dict[str, Union[int, float]]:
    """A board's counters as Python numbers: they travel as doubles (map<string, double>), and a count
    read as 3.0 is not a count; integers (exact in a double, up to 2**53) are ints, the rest floats."""
    return {k: int(v) if v.is_integer() and abs(v) <= 2**53 else v for k, v in counters.items()}


def _uint32(value: Any, what: str, minimum: int = 0) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not minimum <= value <= _UINT32_MAX:
        raise FarmError("BAD_ARGUMENTS", f"{what} must be an integer in [{minimum}, {_UINT32_MAX}], got {value!r}")
    return int(value)


def _timeout_ms(timeout: Optional[float], api: str) -> int:
    """A timeout in seconds as the wire's milliseconds, checked as `api`'s timeout; None: the board's default (0)."""
    return 0 if timeout is None else int(check_option(api, "timeout", timeout))


def _launch(decl: Optional[Mapping[str, Any]], where: str) -> Optional[session_pb2.Launch]:
    """A CUDA launch configuration: {"grid": 256 | (x, y) | (x, y, z), "block": …, "shared_mem_bytes": 0}."""
    if decl is None:
        return None
    if not isinstance(decl, Mapping) or "grid" not in decl or "block" not in decl:
        raise FarmError("INVALID_ARGUMENT", f"{where}: launch must be a dict with grid and block (and shared_mem_bytes), got {decl!r}")
    checked: Mapping[str, Any] = decl

    def dim3(name: str) -> list[int]:
        v = checked[name]
        dims = [v] if isinstance(v, (int, np.integer)) else list(v)
        if not 1 <= len(dims) <= 3 or not all(isinstance(d, (int, np.integer)) and 1 <= d <= 0x7FFF_FFFF for d in dims):
            raise FarmError("INVALID_ARGUMENT", f"{where}: launch {name} is {v!r}, expected 1 to 3 positive integers")
        return [int(d) for d in dims] + [1] * (3 - len(dims))

    shared = decl.get("shared_mem_bytes", 0)
    return session_pb2.Launch(grid=dim3("grid"), block=dim3("block"), shared_mem_bytes=_uint32(shared, f"{where}: launch shared_mem_bytes"))


class RemoteArray:
    """An array in the board's memory (TVM's remote NDArray): `numpy()` reads it
    back, `copyfrom()` writes it, `fill()` fills it from a seed on the board."""

    def __init__(self, session: "Session", array_id: int, shape: tuple[int, ...], dtype: str, nbytes: int):
        self._session = session
        self.id = array_id
        self.shape = shape
        self.dtype = dtype
        self.nbytes = nbytes
        self._freed = False

    def __repr__(self) -> str:
        return f"<RemoteArray {self.id} of session {self._session.id}: {list(self.shape)} {self.dtype}>"

    def _describe(self) -> str:
        return f"array {self.id} ({list(self.shape)} {self.dtype})"

    def _write(self, data: NDArray[Any]) -> Pending:
        """Sends the array's contents without waiting for the board's answer."""
        view = memoryview(data).cast("B")  # type: ignore[arg-type]  # numpy's buffer protocol is not in its annotations
        head = lambda offset, done: session_pb2.ArrayWrite(array=self.id, offset=offset, done=done).SerializeToString()  # noqa: E731
        return self._session._mux.send_chunked(view, "array_write", head)

    def _checked(self, source: Any) -> NDArray[Any]:
        data = wire_array(source, f"copyfrom into {self._describe()}")
        if data.dtype.name != self.dtype:
            raise FarmError(
                "BAD_ARGUMENTS",
                f"copyfrom: {self._describe()} holds {self.dtype}, got {data.dtype.name} (convert it with .astype(np.{self.dtype}))",
            )
        if data.shape != self.shape:
            raise FarmError("BAD_ARGUMENTS", f"copyfrom: {self._describe()} has shape {list(self.shape)}, got {list(data.shape)}")
        return data

    def copyfrom(self, source: NDArray[Any]) -> "RemoteArray":
        """Copies a numpy array of the same shape and dtype into this one (a
        non-contiguous source is copied into contiguous form first)."""
        data = self._checked(source)
        if self.nbytes:
            self._write(data).result()
        return self

    def fill(self, seed: int, low: Optional[float] = None, high: Optional[float] = None, integers: bool = False) -> "RemoteArray":
        """Fills the array on the board from a seed (kernelfarm.random_array makes
        the same contents on the host): no bytes cross the network."""
        self._session._mux.request(array_fill=self._fill_op(RandomFill(seed, low, high, integers)))
        return self

    def _fill_op(self, fill: RandomFill) -> session_pb2.ArrayFill:
        problem = fill_problem(self.dtype, fill)
        if problem:
            raise FarmError("BAD_ARGUMENTS", f"fill: {self._describe()}: {problem}")
        low, high = fill_range(self.dtype, fill)
        return session_pb2.ArrayFill(array=self.id, seed=fill.seed, low=low, high=high, integers=fill.integers)

    def numpy(self) -> NDArray[Any]:
        """The array's contents, as a (writable) numpy array of its shape and dtype."""
        data = self._session._mux.fetch_chunked(array_read=session_pb2.ArrayRead(array=self.id))
        return np.frombuffer(data, dtype=DTYPES[self.dtype]).reshape(self.shape)

    def free(self) -> None:
        """Frees the board's memory now (otherwise it goes with the session)."""
        if self._freed:
            return
        self._freed = True
        self._session._mux.request(array_free=session_pb2.ArrayFree(array=self.id))


class RemoteFunction:
    """One function of a loaded module: `fn(a, b, c, n)` runs it on the board.
    Arguments are RemoteArrays and numbers; `timeout` (seconds) and `launch`
    (CUDA) are keyword-only."""

    def __init__(self, module: "RemoteModule", info: session_pb2.FunctionInfo):
        self.module = module
        self.info = info
        self.name = info.name

    def __repr__(self) -> str:
        params = ", ".join(f"{p.dtype}{'*' if p.kind == 'buffer' else ''} {p.name}" for p in self.info.params)
        return f"<RemoteFunction {self.name}({params})>"

    def __call__(self, *args: Any, timeout: Optional[float] = None, launch: Optional[Mapping[str, Any]] = None) -> None:
        self.module._session._mux.request(call=self.module._call(self.info, args, timeout, launch))


class RemoteModule:
    """A module loaded on the board: `mod["fn"]` is a function, `mod.time_evaluator("fn", …)` TVM's evaluator."""

    def __init__(self, session: "Session", info: session_pb2.ModuleInfo):
        self._session = session
        self.id = info.module
        self.target = info.target
        self.functions: tuple[session_pb2.FunctionInfo, ...] = tuple(info.functions)

    def __repr__(self) -> str:
        return f"<RemoteModule {self.id} ({self.target}): {', '.join(f.name for f in self.functions)}>"

    def _info(self, name: str) -> session_pb2.FunctionInfo:
        for f in self.functions:
            if f.name == name:
                return f
        raise FarmError(
            "UNKNOWN_FUNCTION", f'module {self.id} has no function "{name}"; it has: {", ".join(f.name for f in self.functions)}'
        )

    def __getitem__(self, name: str) -> RemoteFunction:
        return RemoteFunction(self, self._info(name))

    get_function = __getitem__

    def _call(
        self, info: session_pb2.FunctionInfo, args: Sequence[Any], timeout: Optional[float], launch: Optional[Mapping[str, Any]]
    ) -> session_pb2.Call:
        return session_pb2.Call(
            module=self.id,
            function=info.name,
            args=[self._session._arg(info, i, a) for i, a in enumerate(args)],
            timeout_ms=_timeout_ms(timeout, "call"),
            launch=_launch(launch, f"call of {info.name}"),
        )

    def _time_evaluate(self, info: session_pb2.FunctionInfo, args: Sequence[Any], o: "TimeOptions") -> session_pb2.TimeEvaluate:
        def checked(option: str, value: Any) -> Any:
            return check_option("time_evaluator", option, value)

        call = self._call(info, args, None, o.launch)
        call.timeout_ms = _timeout_ms(o.timeout, "time_evaluator")
        return session_pb2.TimeEvaluate(
            call=call,
            number=checked("number", o.number),
            repeat=checked("repeat", o.repeat),
            min_repeat_ms=checked("min_repeat_ms", o.min_repeat_ms),
            cooldown_ms=checked("cooldown_interval_ms", o.cooldown_interval_ms),
            repeats_to_cooldown=checked("repeats_to_cooldown", o.repeats_to_cooldown),
            limit_zero_time_iterations=checked("limit_zero_time_iterations", o.limit_zero_time_iterations),
            flush_l2=bool(o.flush_l2),
            graph=bool(o.graph),
            flush_cpu_cache=bool(o.flush_cpu_cache),
            target_rse=checked("target_rse", o.target_rse),
            budget_ms=checked("budget_ms", o.budget_ms),
        )

    def time_evaluator(
        self,
        name: str,
        number: int = 10,
        repeat: int = 1,
        min_repeat_ms: float = 0,
        limit_zero_time_iterations: int = 100,
        cooldown_interval_ms: float = 0,
        repeats_to_cooldown: int = 1,
        *,
        timeout: Optional[float] = None,
        launch: Optional[Mapping[str, Any]] = None,
        flush_l2: bool = False,
        graph: bool = False,
        flush_cpu_cache: bool = False,
        target_rse: float = 0,
        budget_ms: float = 0,
    ) -> Callable[..., BenchmarkResult]:
        """TVM's Module.time_evaluator, run on the board next to the device: call
        the result with the function's arguments; it returns a BenchmarkResult.
        The options after the name are TVM's, in TVM's order (TVM's `dev`, the
        second, has no counterpart: the session is the device). As in TVM, a
        `number` grown to reach `min_repeat_ms` persists into later
        evaluations. `timeout` (seconds) bounds each evaluation on the board;
        `launch`, `flush_l2`, `graph` are for CUDA boards, `flush_cpu_cache`
        (TVM's cache_flush_cpu_non_first_arg) for CPU boards.

        A precision target, `target_rse` (e.g. 0.01): after `repeat` repeats
        the board adds more (to 10 at least) until the median's relative
        standard error is at most it, or `budget_ms` ends (0: 5000 ms, within
        `timeout`); the result's `rse` is the precision reached and
        `stopped_by` what ended it ("precision", "budget" or "max_repeats").
        Default 0: exactly `repeat` repeats, as TVM."""
        info = self._info(name)
        options = TimeOptions(
            number,
            repeat,
            min_repeat_ms,
            limit_zero_time_iterations,
            cooldown_interval_ms,
            repeats_to_cooldown,
            timeout,
            launch,
            flush_l2,
            graph,
            flush_cpu_cache,
            target_rse,
            budget_ms,
        )

        # Refused here, where the options are given, rather than at the first evaluation.
        self._time_evaluate(info, (), options)

        def evaluate(*args: Any) -> BenchmarkResult:
            nonlocal options
            reply = self._session._mux.request(time_evaluate=self._time_evaluate(info, args, options))
            result = _benchmark(reply.time)
            options = options._replace(number=result.number)
            return result

        return evaluate


class TimeOptions(NamedTuple):
    number: int = 10
    repeat: int = 1
    min_repeat_ms: float = 0
    limit_zero_time_iterations: int = 100
    cooldown_interval_ms: float = 0
    repeats_to_cooldown: int = 1
    timeout: Optional[float] = None
    launch: Optional[Mapping[str, Any]] = None
    flush_l2: bool = False
    graph: bool = False
    flush_cpu_cache: bool = False
    target_rse: float = 0
    budget_ms: float = 0


def _benchmark(t: session_pb2.TimeResult) -> BenchmarkResult:
    # A board older than precision targets sends no stopped_by: it ran its `repeat` repeats.
    return BenchmarkResult(list(t.results_s), t.number, dict(t.conditions), t.stopped_by or "repeat")


class Session:
    """A session on one board (TVM's `remote`). Use it as a context manager, or
    call close(): the board goes back to the farm."""

    def __init__(self, session_id: str, board: BoardInfo, mux: Multiplexer, lane: str, lane_note: Optional[str] = None):
        self.id = session_id
        #: The board (kernelfarm.summary.BoardInfo): id, key, kind, labels, capabilities, …
        self.board = board
        self._mux = mux
        #: How the session's frames travel: direct | relay | grpc.
        self.lane = lane
        #: Why an auto-routed session did not get the direct lane, when it fell back.
        self.lane_note = lane_note
        self._closed_once = False
        # What this session put on its board by digest (as the agent's store names it): its agent keeps those bytes,
        # so the same bytes again in the session, under any name, are asked for even when one frame would carry them.
        self._placed: set[str] = set()

    def __repr__(self) -> str:
        return f"<Session {self.id} on {self.board.id} ({self.lane} lane{', closed' if self.is_closed else ''})>"

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed_reason(self) -> Optional[FarmError]:
        """Why the session ended, once it has."""
        return self._mux.end_reason

    @property
    def is_closed(self) -> bool:
        return self._mux.end_reason is not None

    # --- files

    def upload(self, source: Any, name: Optional[str] = None, dedupe: bool = False) -> str:
        """Sends a file into the session's folder as `name`; returns the name.

        `source` is a path, bytes (then `name` is needed), or a compiled module
        (an object with `.bytes` and `.name`, and optionally `.digest`, its
        sha256: what compile_cpu()/compile_cuda() return). A module travels
        with its digest, so a board whose agent has held those bytes before
        takes them from its store; `dedupe=True` does the same for other bytes,
        at the price of hashing them here, by their tree digest
        (kernelfarm.tree_digest: a MiB per thread at a time). Bytes this
        session put on the board so already are taken from there again,
        whatever their name and size."""
        sha256: Optional[str] = None
        tree: Optional[str] = None
        if isinstance(source, (str, os.PathLike)):
            try:
                with open(source, "rb") as f:
                    data: bytes | bytearray | memoryview = f.read()
            except OSError as err:
                raise FarmError("NOT_FOUND", f"upload: cannot read {os.fspath(source)}: {err.strerror}") from err
            target = name if name is not None else os.path.basename(os.fspath(source))
        elif isinstance(source, (bytes, bytearray, memoryview)):
            # Only a missing name is the caller's slip here; a bad one ("", "a/b") is the board's INVALID_NAME.
            if name is None:
                raise FarmError("INVALID_ARGUMENT", "upload(bytes) needs a name")
            data, target = source, name
        elif hasattr(source, "bytes") and hasattr(source, "name"):
            data, target = source.bytes, name if name is not None else source.name
            sha256 = getattr(source, "digest", None)
        else:
            raise FarmError(
                "INVALID_ARGUMENT", f"upload takes a path, bytes or a compiled module (.bytes and .name), got {type(source).__name__}"
            )
        if not isinstance(target, str):
            raise FarmError("INVALID_ARGUMENT", f"upload: the name must be a string, got {type(target).__name__}")
        _sendable_name(target)
        view = memoryview(data).cast("B")
        if dedupe and sha256 is None:
            tree = tree_digest(view)
        digest = {"sha256": sha256} if sha256 else {"tree_sha256": tree} if tree else {}
        stored_as = sha256 or f"tree-{tree}"
        total = len(view)
        # Ask first whether the board holds them: for more than one frame of bytes (one round trip against the
        # transfer), and for any this session put there.
        if digest and (total > CHUNK_BYTES or stored_as in self._placed):
            try:
                self._mux.request(upload=session_pb2.Upload(name=target, total_bytes=total, done=True, probe=True, **digest))
                self._placed.add(stored_as)
                return target
            except FarmError as err:
                if err.code != "NOT_FOUND":
                    raise

        def head(offset: int, done: bool) -> bytes:
            return bytes(
                session_pb2.Upload(name=target, total_bytes=total, done=done, **(digest if offset == 0 else {})).SerializeToString()
            )

        self._mux.send_chunked(view, "upload", head).result()
        if digest:
            self._placed.add(stored_as)
        return target

    def download(self, name: str) -> bytearray:
        """A file of the session's folder (as TVM's download, a bytearray)."""
        return self._mux.fetch_chunked(download=session_pb2.Download(name=_sendable_name(name)))

    def listdir(self) -> list[FileInfo]:
        reply = self._mux.request(listdir=session_pb2.ListDir())
        return [FileInfo(e.name, int(e.size)) for e in reply.listing.entries]

    def remove(self, name: str) -> None:
        self._mux.request(remove=session_pb2.Remove(name=_sendable_name(name)))

    # --- modules and calls

    def load_module(self, name: str) -> RemoteModule:
        """Loads an uploaded module bundle: `mod["fn"](*args)` calls its functions."""
        return RemoteModule(self, self._mux.request(load_module=session_pb2.LoadModule(name=_sendable_name(name))).module)

    def _arg(self, info: session_pb2.FunctionInfo, i: int, a: Any) -> session_pb2.Arg:
        at = f"argument {i} of {info.name}"
        if isinstance(a, RemoteArray):
            if a._session is not self:
                raise FarmError("BAD_ARGUMENTS", f"{at} is {a!r}: an array of another session")
            return session_pb2.Arg(array=a.id)
        if isinstance(a, np.ndarray):
            raise FarmError(
                "BAD_ARGUMENTS", f"{at} is a numpy array: the board cannot read host memory; pass remote.array(x) (a RemoteArray) instead"
            )
        param = info.params[i] if i < len(info.params) else None
        is_float = param is not None and param.dtype.startswith("float")
        if isinstance(a, (numbers.Integral, np.bool_)):
            value = int(a)
            if is_float:
                return session_pb2.Arg(float_value=float(value))
            if not _INT64[0] <= value <= _INT64[1]:
                raise FarmError("BAD_ARGUMENTS", f"{at} is {value}, outside the 64-bit integers a call carries")
            return session_pb2.Arg(int_value=value)
        if isinstance(a, numbers.Real):
            real = float(a)
            # As the TypeScript SDK sends it: a whole number for an integer parameter travels as an integer.
            if not is_float and real.is_integer() and _INT64[0] <= real <= _INT64[1]:
                return session_pb2.Arg(int_value=int(real))
            return session_pb2.Arg(float_value=real)
        raise FarmError("BAD_ARGUMENTS", f"{at} must be a RemoteArray or a number, got {type(a).__name__}")

    # --- arrays

    def _alloc(self, shape: Any, dtype: Any, what: str) -> RemoteArray:
        dims = shape_of(shape, what)
        name = dtype_name(dtype, what)
        reply = self._mux.request(array_alloc=session_pb2.ArrayAlloc(shape=dims, dtype=name))
        return RemoteArray(self, reply.array.array, dims, name, int(reply.array.nbytes))

    def array(self, source: NDArray[Any]) -> RemoteArray:
        """A remote array holding a copy of a numpy array (its shape and dtype).
        A non-contiguous array (a slice, a transpose) is copied into contiguous
        form first, as `np.ascontiguousarray` does; the board gets its values
        in row-major order."""
        data = wire_array(source, "array()")
        out = self._alloc(data.shape, data.dtype, "array()")
        if out.nbytes:
            out._write(data).result()
        return out

    def empty(self, shape: Any, dtype: Any = "float32") -> RemoteArray:
        """An uninitialised remote array."""
        return self._alloc(shape, dtype, "empty()")

    def random(
        self, shape: Any, dtype: Any, seed: int, low: Optional[float] = None, high: Optional[float] = None, integers: bool = False
    ) -> RemoteArray:
        """A remote array filled on the board from a seed (see RemoteArray.fill)."""
        return self.empty(shape, dtype).fill(seed, low, high, integers)

    # --- stats and lifetime

    def stats(self) -> Stats:
        s = self._mux.request(stats=session_pb2.Stats()).stats
        return Stats(board_counters(s.counters), dict(s.info))

    def clear_stats(self) -> None:
        self._mux.request(clear_stats=session_pb2.ClearStats())

    def output(self) -> str:
        """What this session's kernels printed (stdout and stderr, as the board's agent
        read them from the session's worker): the last 1 MiB since the session began,
        as UTF-8 (bytes that are not become U+FFFD). Only this session's own output."""
        return bytes(self._mux.fetch_chunked(output=session_pb2.Output())).decode("utf-8", "replace")

    def program_fpga(self, bitstream: Any, config: Any = None) -> FpgaProgrammed:
        """Loads a bitstream into this VTA board's FPGA: TVM's `vta.program_fpga(remote, bitstream)`.

        `bitstream` and `config` (its companion, TVM's vta_config.json; default:
        the bitstream's path with .json for .bit/.bin) are paths or bytes. The
        agent refuses a configuration that is not the board's, naming both,
        then loads the bitstream through the FPGA manager; the board's
        `bitstream` label becomes its SHA-256, which this returns."""
        if config is None:
            if not isinstance(bitstream, (str, os.PathLike)):
                raise FarmError(
                    "INVALID_ARGUMENT", "program_fpga(bytes) needs the configuration too: the bytes of its vta_config.json, or its path"
                )
            config = re.sub(r"\.(bit|bin)$", "", os.fspath(bitstream)) + ".json"
        b = self.upload(bitstream, "kfarm-bitstream.bin")
        c = self.upload(config, "kfarm-bitstream.json")
        r = self._mux.request(program_fpga=session_pb2.ProgramFpga(bitstream=b, config=c)).programmed
        return FpgaProgrammed(r.sha256, r.hardware)

    def close(self) -> None:
        """Ends the session; returns once the worker (or the tracker) has closed it. Safe to call twice."""
        if not self._closed_once:
            self._closed_once = True
            if not self.is_closed:
                try:
                    self._mux.request(close=session_pb2.Close())
                except FarmError:
                    pass  # already ending: the channel's close settles it
                self._mux.end()
        self._mux.wait_ended()

    # --- measure()'s board side (kernelfarm.measure)

    def _submit_measure(
        self,
        module: RemoteModule,
        function: str,
        args: Sequence[Any],
        checks: Iterable[tuple[RemoteArray, NDArray[Any], float, float]],
        options: TimeOptions,
    ) -> Pending:
        """One Measure request (checks before and after a time evaluation), sent without waiting."""
        info = module._info(function)
        return self._mux.submit(
            measure=session_pb2.Measure(
                time=module._time_evaluate(info, args, options),
                checks=[session_pb2.OutputCheck(array=a.id, expect=e.tobytes(), atol=atol, rtol=rtol) for a, e, atol, rtol in checks],
            )
        )


def measured(reply: session_pb2.BoardFrame) -> tuple[Optional[BenchmarkResult], str, dict[str, Union[int, float]]]:
    """A Measure reply: the timing (None when a check failed before it), the first mismatch, the counters."""
    m = reply.measured
    return (_benchmark(m.time) if m.HasField("time") else None), m.wrong, board_counters(m.counters)


def _sendable_name(name: str) -> str:
    """`name`, if UTF-8 can carry it: a str with a lone surrogate (such as
    os.fsdecode's escapes of bytes that are not UTF-8) has no UTF-8 form.
    Every other check of names is the board's, one rule for every SDK
    (device-agent/worker/files.ts); host-sdk/session.ts says the same."""
    if isinstance(name, str):
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            shown = repr(name if len(name) <= 40 else name[:40] + "…")
            raise FarmError(
                "INVALID_NAME",
                f"file name {shown} holds a lone surrogate (half of a UTF-16 pair), which UTF-8 cannot carry; "
                "names must be well-formed Unicode",
            ) from None
    return name
