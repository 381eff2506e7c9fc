/**
 * Apache TVM for the tests and benchmarks that run TVM's own programs
 * (`rpc_server`, `rpc_tracker`, `query_rpc_tracker`, the client, autotvm's
 * RPCRunner). TVM is found through `KFARM_TVM_HOME`, a folder holding TVM's
 * `python/` package and `lib/libtvm_runtime.so` (a runtime-only build is
 * enough; `.ci/run` points it at one), or else as a package Debian's Python
 * imports already. Without either, the suites that need it are skipped with
 * the reason this module gives.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_PYTHON, TVM_HOME_VARIABLE } from "../../device-agent/backends/tvm/backend.ts";

export const PYTHON = DEFAULT_PYTHON;

/** The environment for a Python process that imports TVM: the caller's, plus TVM's paths where KFARM_TVM_HOME names a build. */
export function tvmEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const home = process.env[TVM_HOME_VARIABLE];
  if (!home) return { ...process.env, ...extra };
  const python = join(home, "python");
  return {
    ...process.env,
    PYTHONPATH: process.env.PYTHONPATH ? `${python}:${process.env.PYTHONPATH}` : python,
    TVM_LIBRARY_PATH: join(home, "lib"),
    ...extra,
  };
}

let missing: string | false | undefined;

/** Why TVM cannot run here (for a skip that says so), or false. Probed once per process. */
export function tvmMissing(): string | false {
  if (missing !== undefined) return missing;
  const home = process.env[TVM_HOME_VARIABLE];
  if (home && !existsSync(join(home, "python", "tvm"))) {
    missing = `${TVM_HOME_VARIABLE}=${home} holds no TVM (no python/tvm there): point it at a TVM build with python/ and lib/`;
    return missing;
  }
  const probe = spawnSync(PYTHON, ["-c", "import tvm, tvm.rpc; print(tvm.__version__)"], { encoding: "utf8", timeout: 60_000, env: tvmEnv() });
  if (probe.error) missing = `${PYTHON} cannot run (${probe.error.message}): no TVM to test against`;
  else if (probe.status !== 0)
    missing = `TVM does not import for ${PYTHON} (set ${TVM_HOME_VARIABLE} to a TVM build, as .ci/run does): ${lastLine(probe.stderr)}`;
  else missing = false;
  return missing;
}

function lastLine(text: string): string {
  const lines = text.trim().split("\n");
  return lines[lines.length - 1] ?? "";
}
