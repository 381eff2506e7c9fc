/**
 * Canaries: each board kind's tiny known kernel with a known answer, run by
 * the board's idle worker when it starts (so after every worker death too)
 * and on a schedule while idle; results go to the tracker's health state
 * machine (tracker/health.ts). The kernels live with their backends
 * (`Backend.canary()`); what the agent prepares is here: the canary's
 * interval, and the CPU boards' helper library, which holds their canary
 * kernel and the cache flush of `flushCpuCache` as well.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { copyFile, mkdir, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Logger } from "../../runtime/index.ts";

/** Canaries of idle boards run this often by default. */
export const DEFAULT_CANARY_INTERVAL_MS = 10 * 60_000;

/**
 * The CPU boards' helper library: the canary kernel, and the cache flush of
 * the time evaluator's `flushCpuCache` (TVM's cache_flush_cpu_non_first_arg:
 * every cache line of a range evicted from every level).
 */
const CPU_SUPPORT_SOURCE = `#include <stddef.h>
#include <stdint.h>
void kfarm_canary_vadd(const float* a, const float* b, float* c, int32_t n) {
  for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}
int32_t kfarm_flush_range(const void* p, size_t n) {
  const char* c = (const char*)p;
#if defined(__x86_64__) || defined(__i386__)
  for (size_t i = 0; i < n; i += 64) __builtin_ia32_clflush(c + i);
  if (n) __builtin_ia32_clflush(c + n - 1);
  __builtin_ia32_mfence();
  return 1;
#elif defined(__aarch64__)
  for (size_t i = 0; i < n; i += 64) __asm__ volatile("dc civac, %0" :: "r"(c + i) : "memory");
  if (n) __asm__ volatile("dc civac, %0" :: "r"(c + n - 1) : "memory");
  __asm__ volatile("dsb ish" ::: "memory");
  return 1;
#else
  (void)c; (void)n;
  return 0;
#endif
}
`;

/**
 * The tvm boards' canary module: a vector add in TVM's packed-function C
 * convention (what TVM's own compiler emits for a host function), which a
 * session's modules follow too, so the canary goes through the same
 * tvm.runtime.load_module a TVM client's module does (backends/tvm/backend.ts).
 */
const TVM_CANARY_SOURCE = `#include <stdint.h>
typedef union { int64_t v_int64; double v_float64; void* v_handle; const char* v_str; } TVMValue;
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct { void* data; DLDevice device; int32_t ndim; DLDataType dtype; int64_t* shape; int64_t* strides; uint64_t byte_offset; } DLTensor;
static float* at(DLTensor* t) { return (float*)((char*)t->data + t->byte_offset); }
int kfarm_tvm_canary_vadd(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* resource) {
  (void)codes; (void)ret; (void)ret_code; (void)resource;
  if (n != 3) return -1;
  DLTensor* a = (DLTensor*)args[0].v_handle;
  DLTensor* b = (DLTensor*)args[1].v_handle;
  DLTensor* c = (DLTensor*)args[2].v_handle;
  int64_t len = 1;
  for (int32_t i = 0; i < a->ndim; i++) len *= a->shape[i];
  float *pa = at(a), *pb = at(b), *pc = at(c);
  for (int64_t i = 0; i < len; i++) pc[i] = pa[i] + pb[i];
  return 0;
}
`;

/** The user's own cache (not /tmp: workers load what is there). */
function cacheDir(): string {
  return process.env.KFARM_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "kernelfarm");
}

/**
 * The CPU helper library (the canary, the cache flush), built once per
 * compiler and source with the host's C compiler and kept in the user's
 * cache, so an agent start does not pay a compile (`dir` holds the build
 * when the cache is not writable). Without a compiler, CPU boards run no
 * canary and cannot flush caches (logged once): their health then follows
 * infrastructure errors and operators only.
 */
export async function buildCpuSupport(dir: string, log: Logger): Promise<string | undefined> {
  return buildSharedObject(
    "kfarm-cpu-support",
    CPU_SUPPORT_SOURCE,
    dir,
    log,
    "CPU boards run no canary and cannot flush caches: their helper library could not be built with the C compiler",
  );
}

/** The tvm boards' canary module, built and cached as the CPU helper library is; without a compiler, tvm boards run no canary (logged once). */
export async function buildTvmCanary(dir: string, log: Logger): Promise<string | undefined> {
  return buildSharedObject("kfarm-tvm-canary", TVM_CANARY_SOURCE, dir, log, "tvm boards run no canary: its TVM module could not be built with the C compiler");
}

async function buildSharedObject(prefix: string, source: string, dir: string, log: Logger, without: string): Promise<string | undefined> {
  const cc = process.env.CC ?? "cc";
  const name = `${prefix}-${createHash("sha256").update(cc).update(source).digest("hex").slice(0, 12)}`;
  const cached = join(cacheDir(), `${name}.so`);
  if (existsSync(cached)) return cached;
  try {
    const src = join(dir, `${name}.c`);
    const lib = join(dir, `${name}.so`);
    await writeFile(src, source);
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
    log.warn({ cc, err: (err as Error).message }, without);
    return undefined;
  }
}
