/**
 * The `tvm` board: Apache TVM's own runtime behind the agent
 * (docs/tvm-boards.md). A TVM client that requests the board's key on the
 * tracker's TVM port connects to the agent's direct-lane port with its match
 * key; the agent hands the socket to the session's worker, which runs TVM's
 * RPC server loop on it in a Python child (device-agent/worker/tvm-session.ts)
 * inside the worker's sandbox. The worker itself runs no frame session on
 * this board: its Backend methods refuse, naming the TVM port.
 *
 * TVM is found where the agent starts: the board's `tvm_home=` (a folder
 * with TVM's `python/` package and `lib/libtvm_runtime.so`), else
 * `$KFARM_TVM_HOME`, else a TVM package the Python interpreter imports
 * already; the interpreter is the board's `python=`, else /usr/bin/python3.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { FarmError } from "../../../protos/index.ts";
import type { ArgValue, Backend, BackendStats, BoardFacts, CanaryResult, DeviceArray, LoadedFunction, LoadedModule } from "../backend.ts";

/** The environment variable that names a TVM build, as the tests' helper reads it. */
export const TVM_HOME_VARIABLE = "KFARM_TVM_HOME";
/** The interpreter when the board names none. */
export const DEFAULT_PYTHON = "/usr/bin/python3";
/** How long finding TVM may take at the agent's start (Python imports numpy and TVM's runtime). */
const PROBE_TIMEOUT_MS = 60_000;

/** Where this board's TVM lives, as the worker is told (backendOptions). */
export interface TvmRuntime {
  /** The Python interpreter, an absolute path. */
  python: string;
  /** A TVM build's folder (python/, lib/); undefined: the interpreter imports TVM by itself. */
  tvmHome: string | undefined;
}

/** The TVM runtime a board's options name (`tvm_home=`, `python=`), else the agent's `$KFARM_TVM_HOME` and /usr/bin/python3. */
export function tvmRuntimeOf(options: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): TvmRuntime {
  const home = typeof options.tvmHome === "string" ? options.tvmHome : env[TVM_HOME_VARIABLE] || undefined;
  return { python: typeof options.python === "string" ? options.python : DEFAULT_PYTHON, tvmHome: home };
}

/**
 * The environment of a Python child that imports TVM: a short list, never the
 * worker's own (which is the agent's short list already), so that a session's
 * child sees the paths TVM needs and its session folder, nothing more.
 */
export function tvmChildEnv(rt: TvmRuntime, home: string | undefined): NodeJS.ProcessEnv {
  return {
    PATH: "/usr/local/bin:/usr/bin:/bin",
    LANG: "C.UTF-8",
    PYTHONDONTWRITEBYTECODE: "1",
    PYTHONUNBUFFERED: "1",
    ...(home ? { HOME: home, TMPDIR: home } : {}),
    ...(rt.tvmHome ? { PYTHONPATH: join(rt.tvmHome, "python"), TVM_LIBRARY_PATH: join(rt.tvmHome, "lib") } : {}),
  };
}

/**
 * Finds TVM for a `tvm` board, in the agent at start-up: its version and
 * where it is, as the board's capabilities. Refuses (TOOLCHAIN_MISSING,
 * saying what to install or set) where the interpreter or TVM is missing: a
 * board that could serve nothing must not register.
 */
export function describeTvmBoard(options: Record<string, unknown>): BoardFacts {
  const rt = tvmRuntimeOf(options);
  if (rt.tvmHome && !existsSync(join(rt.tvmHome, "python", "tvm")))
    throw new FarmError(
      "TOOLCHAIN_MISSING",
      `TVM home ${rt.tvmHome} holds no TVM (no python/tvm there): point tvm_home= or $${TVM_HOME_VARIABLE} at a TVM build with python/ and lib/libtvm_runtime.so`,
    );
  const probe = spawnSync(rt.python, ["-c", "import tvm, tvm.rpc.server; print(tvm.__version__)"], {
    encoding: "utf8",
    timeout: PROBE_TIMEOUT_MS,
    env: tvmChildEnv(rt, undefined),
  });
  if (probe.error)
    throw new FarmError("TOOLCHAIN_MISSING", `a tvm board needs Python with Apache TVM: ${rt.python} cannot run (${probe.error.message}); give python=PATH`);
  if (probe.status !== 0) {
    const last = probe.stderr.trim().split("\n").pop() ?? "";
    throw new FarmError(
      "TOOLCHAIN_MISSING",
      `a tvm board needs Apache TVM's Python package and runtime, and ${rt.python} cannot import them (${last}): install TVM, or set tvm_home= on the board or $${TVM_HOME_VARIABLE} to a TVM build`,
    );
  }
  return {
    labels: {},
    capabilities: {
      tvm_version: probe.stdout.trim(),
      tvm_python: rt.python,
      ...(rt.tvmHome ? { tvm_home: rt.tvmHome } : {}),
    },
  };
}

/** What a kernelfarm session is told on a tvm board: it serves TVM clients, on the tracker's TVM port. */
function tvmOnly(what: string): FarmError {
  return new FarmError(
    "TARGET_MISMATCH",
    `a tvm board serves TVM's clients (rpc.connect_tracker(HOST, TVM_PORT).request(KEY)), not kernelfarm's ${what}: request a cpu board for kernelfarm modules (docs/tvm-boards.md)`,
  );
}

/**
 * A tvm board's worker. Its sessions are TVM's (worker/tvm-session.ts): the
 * Python child loads the tenant's modules, so the worker is tainted from the
 * session's start and never serves another.
 */
export class TvmBackend implements Backend {
  readonly kind = "tvm" as const;
  readonly target = "cpu" as const;
  readonly memoryBytes = 0;
  readonly loadsNativeCode = true;
  private taintedBy: string | undefined;

  constructor(
    readonly runtime: TvmRuntime,
    /** The canary module (a TVM-convention shared object the agent built), if the board has one. */
    readonly canaryLibrary: string | undefined,
  ) {}

  get tainted(): boolean {
    return this.taintedBy !== undefined;
  }

  /** A TVM session starts: its child runs the tenant's code. */
  taint(sessionId: string): void {
    this.taintedBy = sessionId;
  }

  alloc(): DeviceArray {
    throw tvmOnly("arrays");
  }
  load(): LoadedModule {
    throw tvmOnly("module bundles");
  }
  invoke(_fn: LoadedFunction, _args: readonly ArgValue[]): void {
    throw tvmOnly("calls");
  }
  timeCalls(): number {
    throw tvmOnly("time evaluations");
  }
  stats(): BackendStats {
    return { counters: {}, info: { tvm_python: this.runtime.python, ...(this.runtime.tvmHome ? { tvm_home: this.runtime.tvmHome } : {}) } };
  }
  clearStats(): void {}
  reset(): void {}

  /**
   * The canary: the agent's own vector add, a TVM-convention shared object
   * (device-agent/backends/tvm/canary.ts), loaded and called through TVM's
   * runtime in a Python child, as a session's module is — trusted code, so
   * the worker stays clean.
   */
  canary(): CanaryResult | undefined {
    if (!this.canaryLibrary) return undefined;
    const run = spawnSync(this.runtime.python, ["-c", `${CANARY_PY}\nprint(kfarm_canary(sys.argv[1]))`, this.canaryLibrary], {
      encoding: "utf8",
      timeout: PROBE_TIMEOUT_MS,
      env: tvmChildEnv(this.runtime, process.env.HOME),
    });
    if (run.status !== 0) return canaryFailed(run.error?.message ?? (run.stderr.trim().split("\n").pop() || `exit ${run.status ?? run.signal}`));
    return canaryOf(run.stdout);
  }
}

/** The canary's result from what `kfarm_canary` printed (CANARY_PY). */
export function canaryOf(printed: string): CanaryResult {
  const m = /^ok (\d+(?:\.\d+)?)$/m.exec(printed);
  if (!m) return { ok: false, detail: `the canary's vector add through TVM's runtime gave a wrong answer: ${printed.trim().slice(0, 200)}` };
  return { ok: true, detail: `vector add of ${CANARY_N} floats through TVM's runtime (load_module, time_evaluator)`, kernelNs: Number(m[1]) };
}

/** The canary's result when the Python that runs it failed, with the last thing it said. */
export function canaryFailed(why: string): CanaryResult {
  return { ok: false, detail: `TVM's runtime could not load and run the canary module: ${why}` };
}

/** Floats the canary adds. */
const CANARY_N = 4096;

/**
 * The canary's Python, a function: load the module, add, check exactly, time
 * with TVM's own time_evaluator; "ok <ns per call>" or "wrong …". Run on its
 * own (canary()) and by a session's TVM server child when its worker starts
 * (worker/tvm-session.ts), which imports TVM anyway.
 */
export const CANARY_PY = `
import sys
import numpy as np
import tvm
def kfarm_canary(path):
    m = tvm.runtime.load_module(path)
    dev = tvm.cpu(0)
    a = tvm.nd.array(np.arange(${CANARY_N}, dtype="float32"), dev)
    b = tvm.nd.array(np.full(${CANARY_N}, 0.5, dtype="float32"), dev)
    c = tvm.nd.empty((${CANARY_N},), "float32", dev)
    m["kfarm_tvm_canary_vadd"](a, b, c)
    want = np.arange(${CANARY_N}, dtype="float32") + np.float32(0.5)
    if not np.array_equal(c.numpy(), want):
        return "wrong %s" % (c.numpy()[:4],)
    t = m.time_evaluator("kfarm_tvm_canary_vadd", dev, number=20, repeat=9)(a, b, c)
    return "ok %.1f" % (float(np.median(t.results)) * 1e9)
`;
