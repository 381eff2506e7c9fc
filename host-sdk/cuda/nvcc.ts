/**
 * nvcc: where it is, which version it is, running it (at most
 * `os.availableParallelism()` at once in this process) and turning its stderr
 * into diagnostics a user can read.
 */
import { execFile } from "node:child_process";
import { access, constants } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { Limiter } from "../limiter.ts";
import { join } from "node:path";
import { promisify } from "node:util";
import { FarmError } from "../../protos/index.ts";

const exec = promisify(execFile);

/** How to get nvcc, said once for every TOOLCHAIN_MISSING. */
export const NVCC_INSTALL_HINT =
  "install the CUDA toolkit (nvcc), e.g. from https://developer.nvidia.com/cuda-downloads or Debian's nvidia-cuda-toolkit, or set KFARM_NVCC / CUDA_HOME";

/** One nvcc run may take this long before it is killed (a runaway template instantiation, say). */
export const NVCC_TIMEOUT_MS = 10 * 60_000;
const VERSION_TIMEOUT_MS = 60_000;
const MAX_OUTPUT_BYTES = 64 << 20;

export interface NvccLocation {
  /** What is executed: an absolute path, or "nvcc" looked up on PATH. */
  path: string;
  /** Where it was looked for, for TOOLCHAIN_MISSING, e.g. ["/opt/cuda/bin/nvcc ($CUDA_HOME/bin/nvcc: not found)", "nvcc on PATH"]. */
  tried: string[];
}

/** Finds nvcc: `explicit` (the `nvcc` option), else $KFARM_NVCC, else $CUDA_HOME/bin/nvcc if it exists, else `nvcc` on PATH. */
export async function locateNvcc(explicit?: string): Promise<NvccLocation> {
  if (explicit) return { path: explicit, tried: [`${explicit} (the nvcc option)`] };
  const env = process.env.KFARM_NVCC;
  if (env) return { path: env, tried: [`${env} ($KFARM_NVCC)`] };
  const tried: string[] = [];
  const home = process.env.CUDA_HOME;
  if (home) {
    const candidate = join(home, "bin", "nvcc");
    try {
      await access(candidate, constants.X_OK);
      return { path: candidate, tried: [`${candidate} ($CUDA_HOME/bin/nvcc)`] };
    } catch {
      tried.push(`${candidate} ($CUDA_HOME/bin/nvcc: not found)`);
    }
  }
  tried.push("nvcc on PATH");
  return { path: "nvcc", tried };
}

export interface NvccVersion {
  /** e.g. "13.0.88" (the V number), or the first line of `nvcc --version` when it has none. */
  version: string;
  /** All of `nvcc --version`, build line included: part of the cache key. */
  text: string;
}

const versions = new Map<string, Promise<NvccVersion>>();

/** `nvcc --version`, asked once per path and process; TOOLCHAIN_MISSING when nvcc cannot be run. */
export function nvccVersion(where: NvccLocation): Promise<NvccVersion> {
  let pending = versions.get(where.path);
  if (!pending) {
    pending = askVersion(where);
    versions.set(where.path, pending);
    // A failure is not remembered: the toolkit may be installed before the next try.
    pending.catch(() => versions.delete(where.path));
  }
  return pending;
}

async function askVersion(where: NvccLocation): Promise<NvccVersion> {
  let stdout: string;
  try {
    ({ stdout } = await exec(where.path, ["--version"], { timeout: VERSION_TIMEOUT_MS, maxBuffer: MAX_OUTPUT_BYTES }));
  } catch (err) {
    throw toolchainError(where, err);
  }
  const text = stdout.trim();
  const version = /\bV(\d+(?:\.\d+)+)/.exec(text)?.[1] ?? /release (\d+(?:\.\d+)+)/.exec(text)?.[1] ?? text.split("\n")[0] ?? "unknown";
  return { version, text };
}

function toolchainError(where: NvccLocation, err: unknown): FarmError {
  const e = err as NodeJS.ErrnoException & { stderr?: string };
  const why = e.code === "ENOENT" ? "not found" : e.code === "EACCES" ? "not executable" : `does not run: ${(e.stderr || e.message).trim()}`;
  return new FarmError("TOOLCHAIN_MISSING", `nvcc ${why} (tried ${where.tried.join(", ")}): ${NVCC_INSTALL_HINT}`, {
    details: { tried: where.tried },
    cause: err,
  });
}

/** Every nvcc compile of this process goes through here. @internal */
export const nvccLimiter = new Limiter(Math.max(1, availableParallelism()));

export type NvccResult = { ok: true; stderr: string } | { ok: false; stderr: string; reason: string };

/**
 * Runs one nvcc compile in `cwd` under the process-wide limiter. Exit status
 * non-zero is a result (`ok: false`), not an exception; nvcc missing is
 * TOOLCHAIN_MISSING.
 */
export function runNvcc(where: NvccLocation, args: readonly string[], cwd: string): Promise<NvccResult> {
  return nvccLimiter.run(async () => {
    try {
      const { stdout, stderr } = await exec(where.path, args, { cwd, timeout: NVCC_TIMEOUT_MS, maxBuffer: MAX_OUTPUT_BYTES });
      return { ok: true, stderr: stdout ? `${stdout}\n${stderr}` : stderr };
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stdout?: string; stderr?: string; killed?: boolean; signal?: string | null };
      if (e.code === "ENOENT" || e.code === "EACCES") throw toolchainError(where, err);
      const output = [e.stdout ?? "", e.stderr ?? ""].filter((s) => s.trim()).join("\n");
      const reason =
        e.killed && e.signal
          ? `nvcc ran past ${NVCC_TIMEOUT_MS / 1000} s and was killed`
          : typeof e.code === "number"
            ? `nvcc exited with status ${e.code}`
            : e.message;
      return { ok: false, stderr: output, reason };
    }
  });
}

/**
 * nvcc's stderr as the user should read it: the compile directory removed from
 * paths (so lines read `kernel.cu(12): error: ...`), and the `ptxas info`
 * lines that `-Xptxas -v` adds left out (warnings and errors stay).
 */
export function cleanDiagnostics(stderr: string, dirs: readonly string[]): string {
  let text = stderr;
  for (const dir of dirs) text = text.split(`${dir}/`).join("").split(dir).join(".");
  return text
    .split(/\r?\n/)
    .filter((line) => !/^ptxas info\s*:/.test(line) && !/^\s+\d+ bytes stack frame, \d+ bytes spill stores, \d+ bytes spill loads\s*$/.test(line))
    .join("\n")
    .trim();
}
