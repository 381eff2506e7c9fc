"""Real farm processes for the Python tests, as tests/helpers/processes.ts starts
them for the TypeScript ones: `kfarm tracker` and `kfarm agent` as children on
127.0.0.1 port 0. The tracker prints its bound address on stdout; the wait for
it races the child's early exit. No mocks: the SDK talks to these over real
gRPC and real lanes.
"""
from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, TypeVar

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "cli" / "main.ts"
NODE = shutil.which("node")
LOG_LEVEL = os.environ.get("KFARM_TEST_LOG", "error")

T = TypeVar("T")


class FarmProcess:
    """A child `kfarm` process: its stdout lines on a queue, its stderr kept for failure reports."""

    def __init__(self, args: list[str], env: Optional[dict[str, str]] = None):
        if not NODE:
            raise RuntimeError("node is not installed: the tests start the real tracker and agents")
        self.proc = subprocess.Popen(
            [NODE, "--import", "tsx", str(CLI), *args],
            cwd=REPO,
            env={**os.environ, "KFARM_LOG": LOG_LEVEL, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._lines: "queue.Queue[Optional[str]]" = queue.Queue()
        self._stderr: list[str] = []
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        threading.Thread(target=self._pump_stderr, daemon=True).start()

    def _pump_stdout(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self._lines.put(line)
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        for line in self.proc.stderr:  # type: ignore[union-attr]
            self._stderr.append(line)

    def stderr(self) -> str:
        return "".join(self._stderr)

    def wait_for_line(self, pattern: str, what: str, timeout: float = 30.0) -> re.Match[str]:
        """The first stdout text matching `pattern` (across lines); fails when the process exits first."""
        out = ""
        until = time.monotonic() + timeout
        while True:
            left = until - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"{what} was not ready within {timeout} s:\n{self.stderr()}")
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                self.proc.wait()
                raise RuntimeError(f"{what} exited (code {self.proc.returncode}) before it was ready:\n{self.stderr()}")
            out += line
            m = re.search(pattern, out)
            if m:
                return m

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class TrackerProcess(FarmProcess):
    """`port`: 0 for any; a restarted tracker takes its predecessor's, so that its agents and hosts find it again."""

    def __init__(self, args: Sequence[str] = (), env: Optional[dict[str, str]] = None, port: int = 0):
        super().__init__(["tracker", "--port", str(port), *args], env)
        m = self.wait_for_line(r"listening on (\S+):(\d+)( \(TLS\))?\n.*data port (\d+)", "kfarm tracker")
        self.host, self.port, self.tls, self.data_port = m.group(1), int(m.group(2)), bool(m.group(3)), int(m.group(4))
        self.address = f"{self.host}:{self.port}"


class AgentProcess(FarmProcess):
    def __init__(self, tracker: str, boards: list[str], args: Sequence[str] = (), env: Optional[dict[str, str]] = None):
        super().__init__(["agent", "--tracker", tracker, *[a for b in boards for a in ("--board", b)], *args], env)
        self.wait_for_line(r"kfarm agent .* serving", "kfarm agent")


def run_cli(args: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Runs a one-shot `kfarm` command (certs, token) to its end."""
    return subprocess.run(
        [NODE or "node", "--import", "tsx", str(CLI), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "KFARM_LOG": LOG_LEVEL},
    )


def run_ts(script: Path, args: list[str], timeout: float = 120.0, stdin: str = "") -> subprocess.CompletedProcess:
    """Runs a TypeScript script of python/tests/ts through node and tsx."""
    return subprocess.run(
        [NODE or "node", "--import", "tsx", str(script), *args],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "KFARM_LOG": LOG_LEVEL},
    )


def wait_for(what: str, probe: Callable[[], Optional[T]], timeout: float = 20.0, every: float = 0.02) -> T:
    """Polls `probe` until it returns something truthy (an event the test waits for), at most `timeout` seconds."""
    until = time.monotonic() + timeout
    last: Optional[BaseException] = None
    while True:
        try:
            v = probe()
            if v:
                return v
        except Exception as err:  # noqa: BLE001 - kept for the timeout's message
            last = err
        if time.monotonic() > until:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}{f' (last error: {last})' if last else ''}")
        time.sleep(every)


def wait_for_free_boards(client: Any, n: int, key: Optional[str] = None, timeout: float = 30.0) -> None:
    """Until the tracker lists `n` free boards (of `key`, if given)."""
    wait_for(
        f"{n} free board(s){f' of key {key}' if key else ''}",
        lambda: sum(1 for b in client.summary().boards if b.state == "free" and (key is None or b.key == key)) >= n,
        timeout,
    )
