/**
 * Canaries: each board kind's tiny known kernel with a known answer, run by
 * the board's idle worker when it starts (so after every worker death too)
 * and on a schedule while idle; results go to the tracker's health state
 * machine (tracker/health.ts). The kernels live with their backends
 * (`Backend.canary()`); what the agent prepares is here.
 */
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
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

/**
 * Builds the CPU canary's shared object in `dir` with the host's C compiler.
 * Without one, CPU boards run no canary (logged once): their health then
 * follows infrastructure errors and operators only.
 */
export async function buildCpuCanary(dir: string, log: Logger): Promise<string | undefined> {
  const cc = process.env.CC ?? "cc";
  const src = join(dir, "kfarm-canary.c");
  const lib = join(dir, "kfarm-canary.so");
  try {
    await writeFile(src, CPU_CANARY_SOURCE);
    await promisify(execFile)(cc, ["-O1", "-shared", "-fPIC", "-o", lib, src]);
    return lib;
  } catch (err) {
    log.warn({ cc, err: (err as Error).message }, "CPU boards run no canary: the canary could not be built with the C compiler");
    return undefined;
  }
}
