/**
 * Canaries: each board kind's tiny known kernel with a known answer, run by
 * the board's idle worker when it starts (so after every worker death too)
 * and on a schedule while idle; results go to the tracker's health state
 * machine (tracker/health.ts). The kernels live with their backends
 * (`Backend.canary()`); what the agent prepares is here.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { copyFile, mkdir, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Logger } from "../protos/index.ts";

/** Canaries of idle boards run this often by default. */
export const DEFAULT_CANARY_INTERVAL_MS = 10 * 60_000;

const CPU_CANARY_SOURCE = `#include <stdint.h>
void kfarm_canary_vadd(const float* a, const float* b, float* c, int32_t n) {
  for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}
`;

/** The user's own cache (not /tmp: workers load what is there). */
function cacheDir(): string {
  return process.env.KFARM_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "kernelfarm");
}

/**
 * The CPU canary's shared object, built once per compiler and source with
 * the host's C compiler and kept in the user's cache, so an agent start does
 * not pay a compile (`dir` holds the build when the cache is not writable).
 * Without a compiler, CPU boards run no canary (logged once): their health
 * then follows infrastructure errors and operators only.
 */
export async function buildCpuCanary(dir: string, log: Logger): Promise<string | undefined> {
  const cc = process.env.CC ?? "cc";
  const name = `kfarm-canary-${createHash("sha256").update(cc).update(CPU_CANARY_SOURCE).digest("hex").slice(0, 12)}`;
  const cached = join(cacheDir(), `${name}.so`);
  if (existsSync(cached)) return cached;
  try {
    const src = join(dir, `${name}.c`);
    const lib = join(dir, `${name}.so`);
    await writeFile(src, CPU_CANARY_SOURCE);
    await promisify(execFile)(cc, ["-O1", "-shared", "-fPIC", "-o", lib, src]);
    try {
      await mkdir(cacheDir(), { recursive: true, mode: 0o700 });
      // Copy then rename: a concurrent agent never loads a half-written file.
      await copyFile(lib, `${cached}.${process.pid}`);
      await rename(`${cached}.${process.pid}`, cached);
      return cached;
    } catch {
      return lib;
    }
  } catch (err) {
    log.warn({ cc, err: (err as Error).message }, "CPU boards run no canary: the canary could not be built with the C compiler");
    return undefined;
  }
}
