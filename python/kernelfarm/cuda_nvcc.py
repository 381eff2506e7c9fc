"""nvcc (host-sdk/cuda/nvcc.ts): where it is, which version it is, running it
(at most one per CPU at once in this process, whatever thread asks) and
turning its stderr into diagnostics a user can read.

The version text is part of the compile cache key and the version number of
the bundle's meta, so both are read exactly as the TypeScript reads them.
"""
from __future__ import annotations

import os
import re
import subprocess
import threading
from dataclasses import dataclass
from typing import Optional, Sequence

from .errors import FarmError

#: How to get nvcc, said once for every TOOLCHAIN_MISSING.
NVCC_INSTALL_HINT = (
    "install the CUDA toolkit (nvcc), e.g. from https://developer.nvidia.com/cuda-downloads "
    "or Debian's nvidia-cuda-toolkit, or set KFARM_NVCC / CUDA_HOME"
)
#: One nvcc run may take this long before it is killed (a runaway template instantiation, say).
NVCC_TIMEOUT_S = 600
_VERSION_TIMEOUT_S = 60


@dataclass(frozen=True)
class NvccLocation:
    #: What is executed: a path, or "nvcc" looked up on PATH.
    path: str
    #: Where it was looked for, for TOOLCHAIN_MISSING, e.g. ["/opt/cuda/bin/nvcc ($CUDA_HOME/bin/nvcc: not found)", "nvcc on PATH"].
    tried: list[str]


def locate_nvcc(explicit: Optional[str] = None) -> NvccLocation:
    """Finds nvcc: `explicit` (the `nvcc` option), else $KFARM_NVCC, else
    $CUDA_HOME/bin/nvcc if it is there, else `nvcc` on PATH."""
    if explicit:
        return NvccLocation(explicit, [f"{explicit} (the nvcc option)"])
    env = os.environ.get("KFARM_NVCC")
    if env:
        return NvccLocation(env, [f"{env} ($KFARM_NVCC)"])
    tried = []
    home = os.environ.get("CUDA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "nvcc")
        if os.access(candidate, os.X_OK):
            return NvccLocation(candidate, [f"{candidate} ($CUDA_HOME/bin/nvcc)"])
        tried.append(f"{candidate} ($CUDA_HOME/bin/nvcc: not found)")
    tried.append("nvcc on PATH")
    return NvccLocation("nvcc", tried)


@dataclass(frozen=True)
class NvccVersion:
    #: e.g. "13.0.88" (the V number), or the first line of `nvcc --version` when it has none.
    version: str
    #: All of `nvcc --version`, build line included: part of the cache key.
    text: str


_versions: dict[str, NvccVersion] = {}
_versions_lock = threading.Lock()


def nvcc_version(where: NvccLocation) -> NvccVersion:
    """`nvcc --version`, asked once per path and process; TOOLCHAIN_MISSING
    when nvcc cannot be run. A failure is not remembered: the toolkit may be
    installed before the next try."""
    with _versions_lock:
        known = _versions.get(where.path)
    if known:
        return known
    try:
        result = subprocess.run([where.path, "--version"], capture_output=True, timeout=_VERSION_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise toolchain_error(where, err) from err
    if result.returncode != 0:
        stderr = result.stderr.decode("utf-8", "replace")
        raise toolchain_error(where, stderr or f"Command failed: {where.path} --version")
    text = result.stdout.decode("utf-8", "replace").strip()
    m = re.search(r"\bV([0-9]+(?:\.[0-9]+)+)", text) or re.search(r"release ([0-9]+(?:\.[0-9]+)+)", text)
    found = NvccVersion(m.group(1) if m else text.split("\n")[0], text)
    with _versions_lock:
        _versions[where.path] = found
    return found


def toolchain_error(where: NvccLocation, err: "OSError | subprocess.TimeoutExpired | str") -> FarmError:
    """TOOLCHAIN_MISSING for an nvcc that is not there, not executable or does not run."""
    if isinstance(err, FileNotFoundError):
        why = "not found"
    elif isinstance(err, PermissionError):
        why = "not executable"
    else:
        why = f"does not run: {str(err).strip()}"
    return FarmError("TOOLCHAIN_MISSING", f"nvcc {why} (tried {', '.join(where.tried)}): {NVCC_INSTALL_HINT}", {"tried": list(where.tried)})


class Limiter:
    """A counting semaphore that remembers the most holders it ever had at
    once (`peak`, which tests read)."""

    def __init__(self, slots: int):
        self.slots = slots
        self.peak = 0
        self._active = 0
        self._free = threading.Semaphore(slots)
        self._lock = threading.Lock()

    def __enter__(self) -> "Limiter":
        self._free.acquire()
        with self._lock:
            self._active += 1
            self.peak = max(self.peak, self._active)
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._active -= 1
        self._free.release()


def parallelism() -> int:
    """The CPUs this process may run on (Node's os.availableParallelism())."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


#: Every nvcc compile of this process goes through here.
nvcc_limiter = Limiter(parallelism())


@dataclass(frozen=True)
class NvccResult:
    ok: bool
    #: stdout (if any) and stderr: ptxas info and diagnostics.
    stderr: str
    #: Why it failed, for when it printed nothing; "" when ok.
    reason: str = ""


def run_nvcc(where: NvccLocation, args: Sequence[str], cwd: str) -> NvccResult:
    """One nvcc compile in `cwd` under the process-wide limiter. A non-zero
    exit is a result (ok False), not an exception; nvcc missing is
    TOOLCHAIN_MISSING."""
    with nvcc_limiter:
        try:
            result = subprocess.run([where.path, *args], cwd=cwd, capture_output=True, timeout=NVCC_TIMEOUT_S)
        except OSError as err:
            raise toolchain_error(where, err) from err
        except subprocess.TimeoutExpired as err:
            output = "\n".join(s for s in (_text(err.stdout), _text(err.stderr)) if s.strip())
            return NvccResult(False, output, f"nvcc ran past {NVCC_TIMEOUT_S} s and was killed")
    stdout, stderr = _text(result.stdout), _text(result.stderr)
    if result.returncode == 0:
        return NvccResult(True, f"{stdout}\n{stderr}" if stdout else stderr)
    output = "\n".join(s for s in (stdout, stderr) if s.strip())
    reason = f"nvcc exited with status {result.returncode}" if result.returncode > 0 else f"nvcc was killed by signal {-result.returncode}"
    return NvccResult(False, output, reason)


def _text(data: Optional[bytes]) -> str:
    return (data or b"").decode("utf-8", "replace")


_PTXAS_INFO = re.compile(r"ptxas info\s*:")
_STACK_LINE = re.compile(r"\s+[0-9]+ bytes stack frame, [0-9]+ bytes spill stores, [0-9]+ bytes spill loads\s*")


def clean_diagnostics(stderr: str, dirs: Sequence[str]) -> str:
    """nvcc's stderr as the user should read it: the compile directory
    removed from paths (lines read `kernel.cu(12): error: ...`), and the
    `ptxas info` lines that `-Xptxas -v` adds left out (warnings and errors
    stay)."""
    text = stderr
    for d in dirs:
        text = text.replace(f"{d}/", "").replace(d, ".")
    lines = re.split(r"\r?\n", text)
    return "\n".join(line for line in lines if not _PTXAS_INFO.match(line) and not _STACK_LINE.fullmatch(line)).strip()
