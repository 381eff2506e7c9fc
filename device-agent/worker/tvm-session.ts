/**
 * A TVM client's session on a `tvm` board (docs/tvm-boards.md): the worker
 * runs Apache TVM's own RPC server loop on the client's socket, in a Python
 * child that inherits the worker's sandbox (its uid, network namespace,
 * limits, session folder). The child registers TVM's server environment as
 * `rpc_server` does (tvm.rpc.server `_server_env`: upload, download, remove,
 * load_module in the session's folder), answers TVM's handshake
 * (`server:<key>`), and serves until the client closes, TVM's `-timeout=`
 * passes, or the worker ends it.
 *
 * The child runs the tenant's modules: the worker is tainted from the start
 * and never serves another session.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Socket } from "node:net";
import { FarmError } from "../../protos/index.ts";
import type { Logger } from "../../runtime/index.ts";
import type { CanaryResult } from "../backends/backend.ts";
import { CANARY_PY, canaryFailed, canaryOf, tvmChildEnv, type TvmRuntime } from "../backends/tvm/backend.ts";
import { descriptorOf, sendDescriptor } from "../common/handle-passing.ts";

/** The RPC magic TVM's handshake opens with (python/tvm/rpc/base.py). */
const TVM_RPC_MAGIC = 0xff271;
/** The child's exit status when TVM's `-timeout=` passed (it told the client, as TVM's server does). */
const EXIT_TVM_TIMEOUT = 3;
/** What a crashed child's report keeps of its stderr. */
const STDERR_TAIL_CHARS = 2000;
/** After SIGTERM (the session was ended), how long the child has before SIGKILL. */
const KILL_AFTER_MS = 1000;

/** A TVM client's socket, as the agent handed it over, with the handshake it read. */
export interface TvmLane {
  readonly kind: "tvm";
  readonly socket: Socket;
  readonly handshake: Buffer;
}

/** The line a server child prints its start canary's result on. */
const CANARY_LINE = "kfarm-canary ";

/**
 * The Python child. It starts while the worker is idle and imports TVM (0.4–0.6 s
 * that a session would otherwise wait for), then waits on fd 3, a unix socket
 * to the worker, for its session: the client's socket (SCM_RIGHTS, with one
 * byte), then a JSON line {key, timeout, workdir}. It dies with the worker
 * (PR_SET_PDEATHSIG), whatever killed the worker, and exits quietly when the
 * worker closes fd 3 without a session.
 */
const SERVE_PY = `
import ctypes, json, os, signal, socket, struct, sys, tempfile, threading
ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: gone with the worker
if os.getppid() == 1:
    sys.exit(1)
${CANARY_PY}
from tvm.rpc import _ffi_api, server

# The worker's start canary (argv[1]: the canary module), here where TVM is imported already: one Python start less.
if len(sys.argv) > 1:
    try:
        result = kfarm_canary(sys.argv[1])
    except Exception as err:
        lines = str(err).strip().splitlines()
        result = "error " + (lines[-1] if lines else type(err).__name__)
    print("${CANARY_LINE}" + result, flush=True)

ctl = socket.socket(fileno=3)
try:
    _, fds, _, _ = socket.recv_fds(ctl, 1, 1)
except OSError:
    fds = []
if not fds:
    os._exit(0)  # the worker went, or ended without a session
line = ctl.makefile("rb").readline()
if not line:
    os._exit(0)
session = json.loads(line)
key, timeout, workdir = session["key"], float(session["timeout"]), session["workdir"]
os.chdir(workdir)
os.environ["HOME"] = os.environ["TMPDIR"] = workdir
tempfile.tempdir = workdir

class SessionFolder:
    """TVM's server environment's work path: the session's folder, which the worker empties and the agent removes."""
    def __init__(self, path):
        self.path = path
    def relpath(self, name):
        return os.path.join(self.path, name)
    def listdir(self):
        return os.listdir(self.path)
    def remove(self):
        pass

server._server_env(None, SessionFolder(workdir))
fd = fds[0]
sock = socket.socket(fileno=fd)
sock.setblocking(True)  # Node left the socket non-blocking; TVM's loop reads it blocking
answer = ("server:" + key).encode()
sock.sendall(struct.pack("<ii", ${TVM_RPC_MAGIC}, len(answer)) + answer)
if timeout > 0:
    def expire():
        # As TVM's server: the client's pending call fails with this, then the session ends.
        _ffi_api.ReturnException(fd, 'RPCSessionTimeoutError: Your %ss session has expired, try to increase the "session_timeout" value.' % timeout)
        os._exit(${EXIT_TVM_TIMEOUT})
    t = threading.Timer(timeout, expire)
    t.daemon = True
    t.start()
_ffi_api.ServerLoop(fd)
os._exit(0)
`;

/** TVM's server in a Python child, started ahead of its session (startTvmServer); serveTvm gives it the session. */
export interface TvmServerChild {
  readonly process: ChildProcess;
  /** The start canary it ran, when given the canary module: its result, or why it could not run. */
  readonly canary: Promise<CanaryResult> | undefined;
  /** Its stderr and stdout, the last STDERR_TAIL_CHARS: a crash's report. */
  tail(): string;
}

/**
 * Starts TVM's server child for the next session, in the worker's own folder
 * until the session's arrives; with `canaryLibrary` it runs the worker's start
 * canary first (TVM imported once for both).
 */
export function startTvmServer(runtime: TvmRuntime, canaryLibrary?: string): TvmServerChild {
  const child = spawn(runtime.python, ["-c", SERVE_PY, ...(canaryLibrary ? [canaryLibrary] : [])], {
    env: tvmChildEnv(runtime, undefined),
    // fd 3: a unix socket pair (libuv's pipes are), for the client's socket and the session's line.
    stdio: ["ignore", "pipe", "pipe", "pipe"],
  });
  let tail = "";
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  // Until a session comes, an early exit is only the next session's loss: serveTvm starts another then.
  child.on("error", () => {});
  const canary = canaryLibrary
    ? new Promise<CanaryResult>((resolve) => {
        const look = () => {
          const at = tail.indexOf(CANARY_LINE);
          const end = at < 0 ? -1 : tail.indexOf("\n", at);
          if (end < 0) return;
          child.stdout?.off("data", look);
          const result = tail.slice(at + CANARY_LINE.length, end);
          resolve(result.startsWith("error ") ? canaryFailed(result.slice("error ".length)) : canaryOf(result));
        };
        child.stdout?.on("data", look);
        child.once("error", (err) => resolve(canaryFailed(`${runtime.python}: ${err.message}`)));
        child.once("close", (code, signal) => resolve(canaryFailed(lastLine(tail) || `exit ${code ?? signal}`)));
      })
    : undefined;
  return { process: child, canary, tail: () => tail };
}

/** Whether a child started ahead can still take a session. */
export function usable(child: TvmServerChild | undefined): child is TvmServerChild {
  return child !== undefined && child.process.exitCode === null && child.process.signalCode === null && child.process.pid !== undefined;
}

export interface TvmSessionOptions {
  readonly runtime: TvmRuntime;
  /** The board's key: TVM's server answers its handshake with `server:<key>`. */
  readonly key: string;
  /** The session's folder: the child's working directory, HOME and TMPDIR, TVM's work path. */
  readonly workdir: string;
  readonly log: Logger;
}

export interface TvmSession {
  /** Settles when the session is over: undefined when the client closed it, else why it ended. */
  readonly over: Promise<FarmError | undefined>;
  /** Ends it (the tracker ended the lease): the child is stopped, its client sees the socket close. */
  stop(): void;
}

/** The `-timeout=N` of a TVM handshake (seconds; 0: none), read from the bytes the agent read and checked. */
export function handshakeTimeout(handshake: Buffer): number {
  const key = handshake.length > 8 ? handshake.subarray(8).toString("utf8") : "";
  for (const word of key.split(" ")) {
    if (!word.startsWith("-timeout=")) continue;
    const t = Number(word.slice("-timeout=".length));
    if (Number.isFinite(t) && t > 0) return t;
  }
  return 0;
}

/**
 * Gives the client's socket to TVM's server child (`ahead`, started while the
 * worker was idle, else one started now) and watches it to the session's end;
 * the worker's copy of the socket is closed once the child holds it.
 */
export function serveTvm(lane: TvmLane, opts: TvmSessionOptions, ahead?: TvmServerChild): TvmSession {
  const timeoutS = handshakeTimeout(lane.handshake);
  const server = usable(ahead) ? ahead : startTvmServer(opts.runtime);
  const child = server.process;
  try {
    const control = child.stdio[3] as Socket;
    sendDescriptor(descriptorOf(control), descriptorOf(lane.socket));
    control.end(`${JSON.stringify({ key: opts.key, timeout: timeoutS, workdir: opts.workdir })}\n`);
  } catch (err) {
    child.kill("SIGKILL");
    opts.log.warn({ err: (err as Error).message }, "the TVM client's socket could not be handed to TVM's server");
  } finally {
    // The child has its own copy; the client sees the session end when the child's closes.
    lane.socket.destroy();
  }
  let stopped = false;
  const over = new Promise<FarmError | undefined>((resolve) => {
    const ended = (code: number | null, signal: NodeJS.Signals | null) => {
      if (stopped || code === 0) resolve(undefined);
      else if (code === EXIT_TVM_TIMEOUT)
        resolve(new FarmError("SESSION_TIMEOUT", `the TVM client's session_timeout of ${timeoutS} s passed; TVM's server told the client so`));
      else
        resolve(
          new FarmError(
            "RUNTIME_CRASH",
            `TVM's server loop ended with ${signal ? `signal ${signal}` : `exit status ${code}`} (a module the client loaded crashed it?): ${lastLines(server.tail())}`,
          ),
        );
    };
    if (child.exitCode !== null || child.signalCode !== null) ended(child.exitCode, child.signalCode);
    child.once("error", (err) => resolve(new FarmError("RUNTIME_CRASH", `TVM's server could not start: ${opts.runtime.python}: ${err.message}`)));
    child.once("close", ended);
  });
  return {
    over,
    stop: () => {
      if (stopped || child.exitCode !== null || child.signalCode !== null) return;
      stopped = true;
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), KILL_AFTER_MS).unref();
      opts.log.info({ pid: child.pid }, "TVM session ended by the tracker: its server loop is stopped");
    },
  };
}

function lastLine(text: string): string {
  return text.trim().split("\n").pop() ?? "";
}

function lastLines(text: string): string {
  const lines = text.trim().split("\n");
  return lines.slice(-5).join(" | ") || "(nothing on stderr)";
}
