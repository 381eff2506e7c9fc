/** The CUDA compiler: bundles from real nvcc, its diagnostics, the cache, the limiter and the ptxas parser. */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { bundleDigest, decodeBundle, FarmError } from "../../protos/index.ts";
import { compileCuda, compileCudaMany, type CompileCudaOptions } from "./compile-cuda.ts";
import { cleanDiagnostics, locateNvcc, nvccLimiter, nvccVersion } from "./nvcc.ts";
import { Limiter } from "../limiter.ts";
import { parsePtxasInfo } from "./ptxas-info.ts";

/** Why the tests that run nvcc are skipped, or false when nvcc is here. */
const skip: string | false = await nvccVersion(await locateNvcc()).then(
  () => false,
  (e: unknown) => (e instanceof Error ? e.message : String(e)),
);
if (skip) console.log(`# SKIP the tests that run nvcc: ${skip}`);

const SAXPY = `extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void reverse(const float* x, float* y) {
  __shared__ float tile[1024];
  tile[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  y[threadIdx.x] = tile[1023 - threadIdx.x];
}
`;
const SAXPY_PARAMS = ["float32 a", "float32* x", "float32* y", "int32 n"];
const FUNCTIONS: CompileCudaOptions["functions"] = {
  saxpy: { params: SAXPY_PARAMS, launch: { grid: 4096, block: 256 } },
  reverse: ["float32* x", "float32* y"],
};

// The bad line is line 3: an undeclared identifier.
const BROKEN = `extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + not_declared_anywhere;
}
`;

/** Runs `body` with a fresh cache directory, removed afterwards. */
async function withCache<T>(body: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "kfarm-cuda-cache-test-"));
  try {
    return await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function failure(p: Promise<unknown>): Promise<FarmError> {
  const err = await p.then(
    () => assert.fail("expected the compile to fail"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof FarmError, String(err));
  return err;
}

describe("compileCuda with nvcc", () => {
  test("saxpy compiles to a fatbin bundle with normalised launches and ptxas resources", { skip }, () =>
    withCache(async (cache) => {
      const m = await compileCuda(SAXPY, { functions: FUNCTIONS, cache });
      assert.equal(m.target, "cuda");
      assert.equal(m.arch, "sm_90");
      assert.equal(m.cached, false);
      assert.equal(m.digest, bundleDigest(m.bytes));
      assert.equal(m.name, `${m.digest.slice(0, 16)}.kfm`);
      const b = decodeBundle(m.bytes);
      assert.equal(b.target, "cuda");
      assert.deepEqual(b.targetDetails, { arch: "sm_90", format: "fatbin", ptx: "compute_90" });
      // A fatbin starts with its magic 0xBA55ED50, little-endian.
      assert.deepEqual([...b.binary.subarray(0, 4)], [0x50, 0xed, 0x55, 0xba]);
      assert.deepEqual(b.functions, [
        {
          name: "saxpy",
          params: [
            { name: "a", kind: "scalar", dtype: "float32" },
            { name: "x", kind: "buffer", dtype: "float32" },
            { name: "y", kind: "buffer", dtype: "float32" },
            { name: "n", kind: "scalar", dtype: "int32" },
          ],
          launch: { grid: [4096, 1, 1], block: [256, 1, 1], sharedMemBytes: 0 },
        },
        {
          name: "reverse",
          params: [
            { name: "x", kind: "buffer", dtype: "float32" },
            { name: "y", kind: "buffer", dtype: "float32" },
          ],
        },
      ]);
      assert.deepEqual(m.functions, b.functions);
      assert.ok(m.resources.saxpy!.registers > 0, JSON.stringify(m.resources));
      assert.equal(m.resources.saxpy!.spillStoreBytes, 0);
      assert.equal(m.resources.reverse!.sharedMemBytes, 4096);
      assert.equal(m.resources.reverse!.barriers, 1);
      assert.deepEqual(JSON.parse(b.meta!.ptxas!), m.resources);
      assert.match(b.meta!.compiler!, /^nvcc \d+\.\d+/);
      assert.equal(b.meta!.flags, "-fatbin -O3 -gencode arch=compute_90,code=[sm_90,compute_90] -Xptxas -v");
      assert.match(b.meta!.source_sha256!, /^[0-9a-f]{64}$/);
    }),
  );

  test("ptx: false gives a plain cubin (an ELF file) for the arch only", { skip }, async () => {
    const m = await compileCuda(SAXPY, { functions: { saxpy: SAXPY_PARAMS }, ptx: false, cache: false });
    const b = decodeBundle(m.bytes);
    assert.deepEqual(b.targetDetails, { arch: "sm_90", format: "cubin", ptx: "none" });
    assert.deepEqual([...b.binary.subarray(0, 4)], [0x7f, 0x45, 0x4c, 0x46]);
    assert.equal(b.meta!.flags, "-cubin -O3 -arch=sm_90 -Xptxas -v");
    assert.equal(b.functions[0]!.launch, undefined);
    assert.ok(m.resources.saxpy!.registers > 0);
  });

  test("a syntax error is COMPILE_ERROR with kernel.cu(line), nvcc's text, and no temp dir", { skip }, async () => {
    const err = await failure(compileCuda(BROKEN, { functions: { saxpy: SAXPY_PARAMS }, cache: false }));
    assert.equal(err.code, "COMPILE_ERROR");
    assert.ok(err.message.startsWith("nvcc failed to compile kernel.cu:\n"), err.message);
    assert.match(err.message, /^kernel\.cu\(3\): error: identifier "not_declared_anywhere" is undefined$/m, err.message);
    assert.doesNotMatch(err.message, /kernel\.cu\([1245]\): error/, "line 3 only");
    assert.ok(!err.message.includes("kfarm-nvcc-") && !err.message.includes(tmpdir() + "/"), `the message leaks the temp dir:\n${err.message}`);
    assert.doesNotMatch(err.message, /ptxas info/);
    assert.equal(err.details?.diagnostics, err.message.slice("nvcc failed to compile kernel.cu:\n".length));
  });

  test('a kernel without extern "C" is COMPILE_ERROR saying to declare it extern "C"', { skip }, async () => {
    const err = await failure(compileCuda(SAXPY.replace('extern "C" __global__ void saxpy', "__global__ void saxpy"), { functions: FUNCTIONS, cache: false }));
    assert.equal(err.code, "COMPILE_ERROR");
    assert.match(err.message, /"saxpy"/);
    assert.match(err.message, /_Z5saxpyfPKfPfi/);
    assert.match(err.message, /extern "C" __global__/);
    assert.deepEqual(err.details?.missing, ["saxpy"]);
  });

  test("a declared kernel that the source lacks is COMPILE_ERROR naming it and the kernels found", { skip }, async () => {
    const err = await failure(compileCuda(SAXPY, { functions: { saxpy: SAXPY_PARAMS, gemm: ["float32* c"] }, cache: false }));
    assert.equal(err.code, "COMPILE_ERROR");
    assert.match(err.message, /no kernel "gemm" for sm_90/);
    assert.match(err.message, /entry functions compiled: .*saxpy/);
    assert.match(err.message, /reverse/);
    assert.doesNotMatch(err.message, /"saxpy"/, "saxpy is there");
  });

  test("a second identical compile comes from the cache with the same bytes; a changed flag or source does not", { skip }, () =>
    withCache(async (cache) => {
      const opts = { functions: FUNCTIONS, cache };
      const first = await compileCuda(SAXPY, opts);
      const again = await compileCuda(SAXPY, opts);
      assert.equal(first.cached, false);
      assert.equal(again.cached, true);
      assert.deepEqual(again.bytes, first.bytes);
      assert.equal(again.digest, first.digest);
      assert.deepEqual(again.resources, first.resources);
      assert.deepEqual(again.functions, first.functions);

      assert.equal((await compileCuda(SAXPY, { ...opts, flags: ["-lineinfo"] })).cached, false, "a new flag is a miss");
      assert.equal((await compileCuda(`${SAXPY}// edited\n`, opts)).cached, false, "a new source is a miss");

      // A corrupt entry is ignored, rebuilt and replaced.
      const entries = (await readdir(cache)).filter((f) => f.endsWith(".kfm"));
      assert.equal(entries.length, 3, entries.join(", "));
      for (const f of entries) await writeFile(join(cache, f), "not a bundle");
      const rebuilt = await compileCuda(SAXPY, opts);
      assert.equal(rebuilt.cached, false);
      assert.deepEqual(rebuilt.bytes, first.bytes);
      assert.equal((await compileCuda(SAXPY, opts)).cached, true);
      assert.deepEqual(
        (await readdir(cache)).filter((f) => !f.endsWith(".kfm")),
        [],
        "no temporary files left behind",
      );
    }),
  );

  test("compileCudaMany compiles 4 different kernels, never more nvcc at once than CPUs", { skip }, () =>
    withCache(async (cache) => {
      const ops = ["+", "-", "*", "/"];
      const jobs = ops.map((op, i) => ({
        source: `extern "C" __global__ void k${i}(const float* x, float* y, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = y[i] ${op} x[i];\n}\n`,
        functions: { [`k${i}`]: { params: ["float32* x", "float32* y", "int32 n"], launch: { grid: [i + 1, 2] as const, block: 128 } } },
        cache,
      }));
      const modules = await compileCudaMany(jobs);
      assert.equal(modules.length, 4);
      modules.forEach((m, i) => {
        assert.equal(m.cached, false);
        assert.deepEqual(
          decodeBundle(m.bytes).functions.map((f) => [f.name, f.launch?.grid]),
          [[`k${i}`, [i + 1, 2, 1]]],
        );
        assert.ok(m.resources[`k${i}`]!.registers > 0);
      });
      assert.equal(new Set(modules.map((m) => m.digest)).size, 4);
      assert.ok(nvccLimiter.peak <= availableParallelism(), `peak ${nvccLimiter.peak}`);
    }),
  );
});

describe("compileCuda refusals before nvcc runs", () => {
  test("a bad arch is INVALID_ARGUMENT naming an example", async () => {
    for (const arch of ["90", "sm90", "compute_90", "sm_90ab", "hopper"]) {
      const err = await failure(compileCuda(SAXPY, { arch, functions: FUNCTIONS, cache: false, nvcc: "/nonexistent/nvcc" }));
      assert.equal(err.code, "INVALID_ARGUMENT", arch);
      assert.match(err.message, /"sm_90"/);
      assert.ok(err.message.includes(JSON.stringify(arch)), err.message);
    }
  });

  test("a bad launch is INVALID_ARGUMENT naming the kernel and the field", async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ grid: 0, block: 256 }, /function saxpy: launch grid/],
      [{ grid: 8, block: [256, 0] }, /function saxpy: launch block/],
      [{ grid: [1, 2, 3, 4], block: 1 }, /function saxpy: launch grid/],
      [{ grid: 8, block: 2.5 }, /function saxpy: launch block/],
      [{ grid: 8, block: 32, sharedMemBytes: -1 }, /function saxpy: launch sharedMemBytes/],
      [{ grid: "8", block: 32 }, /function saxpy: launch grid/],
      [5, /function saxpy: launch is not a record/],
    ];
    for (const [launch, expected] of cases) {
      const functions = { saxpy: { params: SAXPY_PARAMS, launch } } as unknown as CompileCudaOptions["functions"];
      const err = await failure(compileCuda(SAXPY, { functions, cache: false, nvcc: "/nonexistent/nvcc" }));
      assert.equal(err.code, "INVALID_ARGUMENT", JSON.stringify(launch));
      assert.match(err.message, expected);
    }
  });

  test("bad parameters, kernel names and file names are INVALID_ARGUMENT", async () => {
    const nvcc = "/nonexistent/nvcc";
    assert.equal((await failure(compileCuda(SAXPY, { functions: { saxpy: ["float a"] }, nvcc }))).code, "INVALID_ARGUMENT");
    assert.equal((await failure(compileCuda(SAXPY, { functions: { "my-kernel": [] }, nvcc }))).code, "INVALID_ARGUMENT");
    assert.equal((await failure(compileCuda(SAXPY, { functions: {}, nvcc }))).code, "INVALID_ARGUMENT");
    assert.equal((await failure(compileCuda(SAXPY, { functions: FUNCTIONS, fileName: "../kernel.cu", nvcc }))).code, "INVALID_ARGUMENT");
  });

  test("options of the wrong shape are INVALID_ARGUMENT naming the option, before nvcc runs", async () => {
    const nvcc = "/nonexistent/nvcc"; // reached only if a check let the options through (TOOLCHAIN_MISSING)
    const cases: Array<[string, unknown, RegExp]> = [
      [
        "functions as a list of { name, params }",
        { functions: [{ name: "saxpy", params: SAXPY_PARAMS }], nvcc },
        /^compileCuda: functions must be a record of kernel name → parameters, e\.g\. .*; got an array \(for a list of \{ name, params \}, write \{ \[name\]: \{ params, launch \} \}\)$/,
      ],
      // Spread into characters, "-O3" gave nvcc a "-" argument: it waited for its source on stdin.
      [
        "flags as one string",
        { functions: FUNCTIONS, flags: "-O3", nvcc },
        /^compileCuda: flags must be a list of strings such as \["-O3", "-DN=4"\], got "-O3"$/,
      ],
      [
        "ptx that is not a boolean",
        { functions: FUNCTIONS, ptx: "yes", nvcc },
        /^compileCuda: ptx must be true \(a fatbin with PTX\) or false \(a cubin\), got "yes"$/,
      ],
      [
        "cache that is neither a directory nor false",
        { functions: FUNCTIONS, cache: 5, nvcc },
        /^compileCuda: cache must be a directory or false \(no cache\), got 5$/,
      ],
      ["nvcc that is not a path", { functions: FUNCTIONS, nvcc: 7 }, /^compileCuda: nvcc must be a path, got 7$/],
      [
        "a misspelt option",
        { functions: FUNCTIONS, archs: "sm_90", nvcc },
        /^compileCuda: options has an unknown key "archs"; the keys are functions, arch, flags, ptx, nvcc, fileName, cache$/,
      ],
      ["no options", undefined, /^compileCuda: options must be \{ functions, arch\?, flags\?, ptx\?, nvcc\?, fileName\?, cache\? \}, got undefined$/],
      [
        "a kernel with an unknown key",
        { functions: { saxpy: { params: SAXPY_PARAMS, grid: 8 } }, nvcc },
        /^compileCuda: function saxpy: unknown key "grid"; a kernel is \{ params, launch\? \}$/,
      ],
      [
        "a launch with an unknown key",
        { functions: { saxpy: { params: SAXPY_PARAMS, launch: { grid: 8, block: 32, shared: 1024 } } }, nvcc },
        /^compileCuda: function saxpy: launch has an unknown key "shared"; expected grid, block and sharedMemBytes$/,
      ],
    ];
    for (const [what, opts, message] of cases) {
      const err = await failure(compileCuda(SAXPY, opts as CompileCudaOptions));
      assert.equal(err.code, "INVALID_ARGUMENT", `${what}: ${err.message}`);
      assert.match(err.message, message, what);
    }
  });

  test("nvcc missing is TOOLCHAIN_MISSING saying where it looked and what to install", async () => {
    const err = await failure(compileCuda(SAXPY, { functions: FUNCTIONS, nvcc: "/nonexistent/nvcc", cache: false }));
    assert.equal(err.code, "TOOLCHAIN_MISSING");
    assert.match(err.message, /\/nonexistent\/nvcc/);
    assert.match(err.message, /install the CUDA toolkit \(nvcc\)/);
    assert.match(err.message, /KFARM_NVCC \/ CUDA_HOME/);
    assert.deepEqual(err.details?.tried, ["/nonexistent/nvcc (the nvcc option)"]);
  });

  test("nvcc is looked for in the option, $KFARM_NVCC, $CUDA_HOME/bin, then PATH", async () => {
    const saved = { KFARM_NVCC: process.env.KFARM_NVCC, CUDA_HOME: process.env.CUDA_HOME };
    const home = await mkdtemp(join(tmpdir(), "kfarm-cuda-home-"));
    try {
      delete process.env.KFARM_NVCC;
      process.env.CUDA_HOME = "/nonexistent/cuda";
      assert.deepEqual(await locateNvcc(), { path: "nvcc", tried: ["/nonexistent/cuda/bin/nvcc ($CUDA_HOME/bin/nvcc: not found)", "nvcc on PATH"] });
      process.env.CUDA_HOME = home;
      await mkdir(join(home, "bin"));
      await writeFile(join(home, "bin", "nvcc"), "#!/bin/sh\n", { mode: 0o755 });
      assert.equal((await locateNvcc()).path, join(home, "bin", "nvcc"));
      process.env.KFARM_NVCC = "/opt/env/nvcc";
      assert.equal((await locateNvcc()).path, "/opt/env/nvcc");
      assert.equal((await locateNvcc("/opt/option/nvcc")).path, "/opt/option/nvcc");
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await rm(home, { recursive: true, force: true });
    }
  });
});

describe("the nvcc limiter", () => {
  test("runs at most `slots` tasks at once and every task to the end", async () => {
    const limiter = new Limiter(2);
    let running = 0;
    let most = 0;
    const results = await Promise.all(
      Array.from({ length: 7 }, (_, i) =>
        limiter
          .run(async () => {
            most = Math.max(most, ++running);
            await new Promise((r) => setTimeout(r, 5));
            running--;
            if (i === 3) throw new Error("task 3 fails");
            return i;
          })
          .catch((e: Error) => e.message),
      ),
    );
    assert.deepEqual(results, [0, 1, 2, "task 3 fails", 4, 5, 6]);
    assert.equal(most, 2);
    assert.equal(limiter.peak, 2);
    // The slots are all free again.
    assert.equal(await limiter.run(async () => "again"), "again");
  });
});

describe("cleanDiagnostics", () => {
  test("drops the compile directory and the ptxas info lines, keeps errors and warnings", () => {
    const dir = "/tmp/kfarm-nvcc-AbC123";
    const stderr = [
      "ptxas info    : 0 bytes gmem",
      "ptxas info    : Compiling entry function 'huge' for 'sm_90'",
      "ptxas info    : Function properties for huge",
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
      "ptxas error   : Entry function 'huge' uses too much shared data (0x61a80 bytes, 0xc000 max)",
      `${dir}/kernel.cu(3): warning #177-D: variable "unused" was declared but never referenced`,
      "",
    ].join("\n");
    assert.equal(
      cleanDiagnostics(stderr, [dir]),
      "ptxas error   : Entry function 'huge' uses too much shared data (0x61a80 bytes, 0xc000 max)\n" +
        'kernel.cu(3): warning #177-D: variable "unused" was declared but never referenced',
    );
  });
});

describe("parsePtxasInfo", () => {
  // Captured from nvcc 13.0.88: `-gencode arch=compute_90a,code=[sm_90a,compute_90a] -gencode arch=compute_80,code=sm_80
  // -maxrregcount=16 -Xptxas -v` over a kernel that spills, one with dynamic shared memory and a __constant__ array.
  const MULTI_ARCH = `ptxas warning : For profile sm_90a adjusting per thread register count of 16 to lower bound of 24
ptxas info    : Overriding maximum register limit 256 for 'dyn' with  24 of maxrregcount option
ptxas info    : Overriding maximum register limit 256 for 'spill' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'dyn' for 'sm_90a'
ptxas info    : Function properties for dyn
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers
ptxas info    : Compile time = 5.689 ms
ptxas info    : Compiling entry function 'spill' for 'sm_90a'
ptxas info    : Function properties for spill
    152 bytes stack frame, 184 bytes spill stores, 184 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 152 bytes cumulative stack size
ptxas info    : Compile time = 18.791 ms
ptxas warning : For profile sm_80 adjusting per thread register count of 16 to lower bound of 24
ptxas info    : Overriding maximum register limit 256 for 'dyn' with  24 of maxrregcount option
ptxas info    : Overriding maximum register limit 256 for 'spill' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem, 256 bytes cmem[3]
ptxas info    : Compiling entry function 'dyn' for 'sm_80'
ptxas info    : Function properties for dyn
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 2.801 ms
ptxas info    : Compiling entry function 'spill' for 'sm_80'
ptxas info    : Function properties for spill
    264 bytes stack frame, 276 bytes spill stores, 276 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 264 bytes cumulative stack size, 368 bytes cmem[0]
ptxas info    : Compile time = 15.272 ms
`;

  // Captured from nvcc 13.0.88, -arch=sm_90: static shared memory, a mangled kernel, and a
  // __noinline__ device function whose "Function properties" block follows the kernel's.
  const SM90 = `ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'tile' for 'sm_90'
ptxas info    : Function properties for tile
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 14 registers, used 1 barriers, 4096 bytes smem
ptxas info    : Compile time = 1.239 ms
ptxas info    : Compiling entry function '_Z7mangledfPKfPfi' for 'sm_90'
ptxas info    : Function properties for _Z7mangledfPKfPfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
ptxas info    : Compile time = 0.879 ms
ptxas info    : Compiling entry function 'stacky' for 'sm_90'
ptxas info    : Function properties for stacky
    1024 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 34 registers, used 0 barriers, 1024 bytes cumulative stack size
ptxas info    : Compile time = 64.915 ms
ptxas info    : Function properties for _Z3bigi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
`;

  test("reads every entry per architecture: registers, barriers, stack, spills, cmem", () => {
    assert.deepEqual(parsePtxasInfo(MULTI_ARCH), {
      sm_90a: {
        dyn: {
          registers: 12,
          barriers: 1,
          stackFrameBytes: 0,
          cumulativeStackBytes: 0,
          spillStoreBytes: 0,
          spillLoadBytes: 0,
          sharedMemBytes: 0,
          constMemBytes: 0,
        },
        spill: {
          registers: 24,
          barriers: 0,
          stackFrameBytes: 152,
          cumulativeStackBytes: 152,
          spillStoreBytes: 184,
          spillLoadBytes: 184,
          sharedMemBytes: 0,
          constMemBytes: 0,
        },
      },
      sm_80: {
        dyn: {
          registers: 10,
          barriers: 1,
          stackFrameBytes: 0,
          cumulativeStackBytes: 0,
          spillStoreBytes: 0,
          spillLoadBytes: 0,
          sharedMemBytes: 0,
          constMemBytes: 360,
        },
        spill: {
          registers: 24,
          barriers: 0,
          stackFrameBytes: 264,
          cumulativeStackBytes: 264,
          spillStoreBytes: 276,
          spillLoadBytes: 276,
          sharedMemBytes: 0,
          constMemBytes: 368,
        },
      },
    });
  });

  test("reads static shared memory and keeps a device function's frame off the kernel before it", () => {
    const r = parsePtxasInfo(SM90);
    assert.deepEqual(Object.keys(r), ["sm_90"]);
    assert.deepEqual(Object.keys(r.sm_90!), ["tile", "_Z7mangledfPKfPfi", "stacky"]);
    assert.equal(r.sm_90!.tile!.sharedMemBytes, 4096);
    assert.equal(r.sm_90!.tile!.barriers, 1);
    assert.equal(r.sm_90!.stacky!.stackFrameBytes, 1024);
    assert.equal(r.sm_90!.stacky!.registers, 34);
  });

  test("takes the older form of the Used line (no barriers, cmem) and ignores other text", () => {
    const older = [
      'kernel.cu(3): warning #177-D: variable "unused" was declared but never referenced',
      "ptxas info    : Compiling entry function 'saxpy' for 'sm_70'",
      "ptxas info    : Function properties for saxpy",
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
      "ptxas info    : Used 10 registers, 380 bytes cmem[0]",
    ].join("\r\n");
    assert.deepEqual(parsePtxasInfo(older).sm_70?.saxpy, {
      registers: 10,
      barriers: 0,
      stackFrameBytes: 0,
      cumulativeStackBytes: 0,
      spillStoreBytes: 0,
      spillLoadBytes: 0,
      sharedMemBytes: 0,
      constMemBytes: 380,
    });
    assert.deepEqual(parsePtxasInfo(""), {});
  });
});
