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
import { tvmChildEnv, type TvmRuntime } from "../backends/tvm/backend.ts";

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

/**
 * The Python child: argv is [key, timeout seconds]; fd 3 the client's socket.
 * It dies with the worker (PR_SET_PDEATHSIG), whatever killed the worker.
 */
const SERVE_PY = `
import ctypes, os, signal, socket, struct, sys, threading
ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: gone with the worker
if os.getppid() == 1:
    sys.exit(1)
key, timeout = sys.argv[1], float(sys.argv[2])
from tvm.rpc import _ffi_api, server

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

server._server_env(None, SessionFolder(os.getcwd()))
sock = socket.socket(fileno=3)
sock.setblocking(True)  # Node left the socket non-blocking; TVM's loop reads it blocking
answer = ("server:" + key).encode()
sock.sendall(struct.pack("<ii", ${TVM_RPC_MAGIC}, len(answer)) + answer)
if timeout > 0:
    def expire():
        # As TVM's server: the client's pending call fails with this, then the session ends.
        _ffi_api.ReturnException(3, 'RPCSessionTimeoutError: Your %ss session has expired, try to increase the "session_timeout" value.' % timeout)
        os._exit(${EXIT_TVM_TIMEOUT})
    t = threading.Timer(timeout, expire)
    t.daemon = True
    t.start()
_ffi_api.ServerLoop(3)
os._exit(0)
`;

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

/** Starts TVM's server loop on the client's socket; the worker's copy of the socket is closed once the child holds it. */
export function serveTvm(lane: TvmLane, opts: TvmSessionOptions): TvmSession {
  const timeoutS = handshakeTimeout(lane.handshake);
  let child: ChildProcess;
  try {
    child = spawn(opts.runtime.python, ["-c", SERVE_PY, opts.key, String(timeoutS)], {
      cwd: opts.workdir,
      env: tvmChildEnv(opts.runtime, opts.workdir),
      stdio: ["ignore", "pipe", "pipe", lane.socket],
    });
  } finally {
    // The child has its own copy (fd 3); the client sees the session end when the child's closes.
    lane.socket.destroy();
  }
  let tail = "";
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  let stopped = false;
  const over = new Promise<FarmError | undefined>((resolve) => {
    child.once("error", (err) => resolve(new FarmError("RUNTIME_CRASH", `TVM's server could not start: ${opts.runtime.python}: ${err.message}`)));
    child.once("close", (code, signal) => {
      if (stopped || code === 0) resolve(undefined);
      else if (code === EXIT_TVM_TIMEOUT)
        resolve(new FarmError("SESSION_TIMEOUT", `the TVM client's session_timeout of ${timeoutS} s passed; TVM's server told the client so`));
      else
        resolve(
          new FarmError(
            "RUNTIME_CRASH",
            `TVM's server loop ended with ${signal ? `signal ${signal}` : `exit status ${code}`} (a module the client loaded crashed it?): ${lastLines(tail)}`,
          ),
        );
    });
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

function lastLines(text: string): string {
  const lines = text.trim().split("\n");
  return lines.slice(-5).join(" | ") || "(nothing on stderr)";
}
