/**
 * The CUDA board on a real GPU, through real tracker and agent processes:
 * registration labels, kernels compiled with nvcc on the host, arrays in
 * device memory, calls with fixed and call-time launches, event timing with
 * its options and conditions (clocks, throttling), per-kernel stats — and every bad input of the
 * CUDA list, after each of which the board comes back and the agent's other
 * board keeps working; measure() past a candidate that loses the context.
 * Skipped, with the reason printed, without a GPU.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "../helpers/suites.ts";
import { cudaLaunchLimitsFromWire } from "../../domain/index.ts";
import { compileCuda, measure, type Candidate, type CompiledModule, type Session, type TrackerClient } from "../../host-sdk/index.ts";
import { compileVadd } from "../helpers/kernels.ts";
import { names, refused } from "../helpers/assertions.ts";
import { cudaSkipReason } from "../helpers/gpu.ts";
import { startAgentProcess, startFarm, waitFor, waitForFreeBoards } from "../helpers/processes.ts";

const skip = await cudaSkipReason();

const SOURCE = String.raw`
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void fill_index(int* out, long long base, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (int)(base + i);
}
extern "C" __global__ void shared_reverse(float* data, int n) {
  extern __shared__ float tile[];
  int i = threadIdx.x;
  if (i < n) tile[i] = data[i];
  __syncthreads();
  if (i < n) data[i] = tile[n - 1 - i];
}
extern "C" __global__ void poke(int* p, long long offset) { p[offset] = 1; }
extern "C" __global__ void spin(int* flag) { while (atomicAdd(flag, 0) == 0) { } }
`;

const FUNCTIONS = {
  saxpy: { params: ["float32 a", "float32* x", "float32* y", "int32 n"], launch: { grid: 4, block: 256 } },
  fill_index: ["int32* out", "int64 base", "int32 n"],
  shared_reverse: ["float32* data", "int32 n"],
  poke: { params: ["int32* p", "int64 offset"], launch: { grid: 1, block: 1 } },
  spin: { params: ["int32* flag"], launch: { grid: 1, block: 1 } },
};

/**
 * What every CUDA timing carries: the clocks, and whether the GPU was
 * throttled while it timed (NVML's reasons before and after, its violation
 * counters) — or, without NVML, that it cannot tell.
 */
function assertTimingConditions(c: Readonly<Record<string, string>>, throttled: boolean | undefined, what: string): void {
  const say = `${what}: ${JSON.stringify(c)}`;
  assert.match(c.sm_clock_mhz ?? "", /^\d+$/, say);
  assert.match(c.mem_clock_mhz ?? "", /^\d+$/, say);
  assert.ok(c.throttled, say);
  if (c.clock_source === "nvml") {
    assert.match(c.temperature_c ?? "", /^\d+$/, say);
    for (const k of ["clock_event_reasons", "clock_event_reasons_before"]) assert.match(c[k] ?? "", /^0x[0-9a-f]+$/, `${k} of ${say}`);
    assert.ok(c.clock_events && c.clock_events !== "unknown", say);
    assert.match(c.throttled!, /^(no|yes: .+)$/, say);
    for (const k of ["power_violation_ns", "thermal_violation_ns"]) if (k in c) assert.match(c[k]!, /^\d+$/, `${k} of ${say}`);
    assert.equal(throttled, c.throttled !== "no", say);
  } else {
    assert.match(c.throttled!, /^unknown: /, say);
    assert.equal(throttled, undefined, say);
  }
}

describe("CUDA board on a real GPU", { skip }, () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let client: TrackerClient;
  let arch: string;
  let module: CompiledModule;

  before(async () => {
    farm = await startFarm(["cuda:0:key=gpu", "cpu:key=cpu"], { agentArgs: ["--call-timeout-ms", "20000"] });
    client = farm.client;
    const board = (await client.summary()).boards.find((b) => b.key === "gpu")!;
    arch = board.labels.arch!;
    module = await compileCuda(SOURCE, { arch, functions: FUNCTIONS });
  });
  after(async () => farm?.stop());

  /** A session on the GPU with the test module loaded. */
  async function withGpu<T>(fn: (s: Session, m: Awaited<ReturnType<Session["loadModule"]>>) => Promise<T>): Promise<T> {
    const s = await client.request("gpu", { deadlineMs: 20_000 });
    try {
      await s.upload(module);
      return await fn(s, await s.loadModule(module.name));
    } finally {
      await s.close();
    }
  }

  /** The agent's other board and the GPU itself still serve sessions. */
  async function assertBoardsBack(): Promise<void> {
    await waitForFreeBoards(client, 2);
    const cpu = await client.request("cpu");
    try {
      const vadd = await compileVadd();
      await cpu.upload(vadd);
      const m = await cpu.loadModule(vadd.name);
      const a = await cpu.array(Float32Array.from([1, 2]));
      const c = await cpu.array({ shape: [2], dtype: "float32" });
      await m.getFunction("vadd")(a, a, c, 2);
      assert.deepEqual([...((await c.toArray()) as Float32Array)], [2, 4]);
    } finally {
      await cpu.close();
    }
    await withGpu(async (s, m) => {
      const y = await s.array(Float32Array.from([1, 1, 1]));
      const x = await s.array(Float32Array.from([1, 2, 3]));
      await m.getFunction("saxpy")(2, x, y, 3);
      assert.deepEqual([...((await y.toArray()) as Float32Array)], [3, 5, 7]);
    });
    await waitForFreeBoards(client, 2);
  }

  it("registers the GPU with labels from the device", async () => {
    const board = (await client.summary()).boards.find((b) => b.key === "gpu")!;
    assert.match(board.labels.arch!, /^sm_\d+$/);
    assert.match(board.labels.memory!, /^\d+GiB$/);
    assert.ok(Number(board.labels.sm_count) > 0);
    assert.match(board.labels.driver!, /^\d+\.\d+$/);
    // The limits a host checks a launch against before it uploads anything (measure()'s INVALID_CONFIG).
    const limits = cudaLaunchLimitsFromWire(board.cuda_limits);
    assert.ok(limits, `launch limits in ${JSON.stringify(board.capabilities)}`);
    assert.equal(limits.maxThreadsPerBlock, 1024);
    assert.equal(limits.warpSize, 32);
    assert.equal(limits.maxRegistersPerBlock, 65536);
    assert.ok(limits.maxSharedPerBlockOptin > limits.maxSharedPerBlock);
    // Its canary (saxpy from embedded PTX) ran when the worker started and passed.
    assert.equal(board.health, "healthy");
    assert.equal(board.last_canary, "passed: saxpy of 1024 floats exact");
    // And was timed with events: saxpy over 2^20 floats, microseconds, not the worker's start.
    assert.ok(board.canary_ns > 0 && board.canary_ns < 1e6, `canary ${board.canary_ns} ns per run`);
    // A host can select on them.
    const s = await client.request("gpu", { labels: { arch } });
    await s.close();
    await refusedRequest(client, { arch: "sm_1" });
  });

  it("runs saxpy with its compiled launch and returns exact results", async () => {
    await withGpu(async (s, m) => {
      const n = 1000;
      const x = Float32Array.from({ length: n }, (_, i) => i);
      const y = Float32Array.from({ length: n }, (_, i) => 2 * i);
      const dx = await s.array(x);
      const dy = await s.array(y);
      await m.getFunction("saxpy")(0.5, dx, dy, n);
      const out = (await dy.toArray()) as Float32Array;
      for (let i = 0; i < n; i++) assert.equal(out[i], 0.5 * i + 2 * i);
    });
  });

  it("takes a launch at call time, 64-bit scalars included, and refuses a call without one", async () => {
    await withGpu(async (s, m) => {
      const out = await s.array({ shape: [1000], dtype: "int32" });
      const fill = m.getFunction("fill_index");
      const e = await refused(fill(out, 7, 1000), "BAD_ARGUMENTS");
      names(e, "fill_index", "launch");
      await fill.withOptions({ launch: { grid: [4], block: [256] } })(out, 2 ** 33 + 5, 1000);
      const got = (await out.toArray()) as Int32Array;
      // (2^33 + 5 + i) truncated to int: 5 + i.
      for (let i = 0; i < 1000; i++) assert.equal(got[i], 5 + i);
    });
  });

  it("gives kernels dynamic shared memory, beyond 48 KiB too", async () => {
    await withGpu(async (s, m) => {
      const n = 1024;
      const data = await s.array(Float32Array.from({ length: n }, (_, i) => i));
      const rev = m.getFunction("shared_reverse");
      await rev.withOptions({ launch: { grid: 1, block: n, sharedMemBytes: 64 * 1024 } })(data, n);
      const got = (await data.toArray()) as Float32Array;
      for (let i = 0; i < n; i++) assert.equal(got[i], n - 1 - i);
    });
  });

  it("times with CUDA events: TVM's semantics, conditions with clocks, L2 flush and graph replay", async () => {
    await withGpu(async (s, m) => {
      const n = 1 << 20;
      const x = await s.array({ shape: [n], dtype: "float32" });
      const y = await s.array({ shape: [n], dtype: "float32" });
      const launch = { grid: n / 256, block: 256 };
      for (const opts of [{}, { flushL2: true }, { graph: true }, { graph: true, flushL2: true }]) {
        const r = await m.timeEvaluator("saxpy", { number: 20, repeat: 3, minRepeatMs: 5, launch, ...opts })(2, x, y, n);
        assert.equal(r.results.length, 3, JSON.stringify(opts));
        for (const t of r.results) assert.ok(t > 0 && t < 0.01, `${JSON.stringify(opts)}: ${t} s per saxpy of 1M`);
        assert.ok(r.number >= 20);
        assert.ok(r.conditions.name && r.conditions.name.length > 0);
        assertTimingConditions(r.conditions, r.throttled, `timeEvaluator ${JSON.stringify(opts)}`);
        assert.equal(r.conditions.arch, arch);
      }
    });
  });

  it("reports per-kernel and board stats", async () => {
    await withGpu(async (s) => {
      const st = await s.stats();
      assert.ok(st.counters["saxpy.registers"]! > 0);
      assert.ok(st.counters["shared_reverse.max_threads_per_block"]! >= 256);
      assert.equal(st.counters["saxpy.local_bytes"], 0);
      assert.ok(st.counters.device_memory_total_bytes! > 0);
      assert.ok(Number(st.info.sm_count) > 0);
      assert.equal(st.info.arch, arch);
      assert.match(st.info.driver_version!, /^\d+\.\d+$/);
      // Stats describe a moment, not a timing: the throttle state now, no "before".
      assert.match(st.info.throttled ?? "", /^(no|yes: .+|unknown: .+)$/);
      assert.equal(st.info.clock_event_reasons_before, undefined);
    });
  });

  describe("bad input: a clear error, and the board comes back", () => {
    it("a cubin for an architecture the board cannot run names both", async () => {
      const foreign = arch === "sm_80" ? "sm_90" : "sm_80";
      const other = await compileCuda(SOURCE, { arch: foreign, ptx: false, functions: FUNCTIONS });
      const s = await client.request("gpu");
      try {
        await s.upload(other);
        const e = await refused(s.loadModule(other.name), "TARGET_MISMATCH");
        names(e, foreign, arch);
      } finally {
        await s.close();
      }
      await assertBoardsBack();
    });

    it("too many threads per block, too much shared memory", async () => {
      await withGpu(async (s, m) => {
        const data = await s.array({ shape: [4], dtype: "float32" });
        const rev = m.getFunction("shared_reverse");
        names(await refused(rev.withOptions({ launch: { grid: 1, block: 2048 } })(data, 4), "LAUNCH_ERROR"), "2048 threads", "shared_reverse");
        names(
          await refused(rev.withOptions({ launch: { grid: 1, block: 4, sharedMemBytes: 4 << 20 } })(data, 4), "LAUNCH_ERROR"),
          "4194304 bytes of dynamic shared memory",
        );
        // The session goes on.
        await rev.withOptions({ launch: { grid: 1, block: 4, sharedMemBytes: 16 } })(data, 4);
      });
      await assertBoardsBack();
    });

    it("an illegal address inside the kernel: DEVICE_ERROR with the driver's name; the worker is replaced", async () => {
      await withGpu(async (s, m) => {
        const p = await s.array({ shape: [1], dtype: "int32" });
        const e = await refused(m.getFunction("poke")(p, 2 ** 40), "DEVICE_ERROR");
        names(e, "CUDA_ERROR_ILLEGAL_ADDRESS", "poke");
        // Its details cross worker → tracker → host: measure() reads `sticky`.
        assert.deepEqual(e.details, { cuda: "CUDA_ERROR_ILLEGAL_ADDRESS", sticky: true });
        // The context is gone: later work on this session says so.
        const later = await refused(p.toArray(), "DEVICE_ERROR");
        names(later, "CUDA_ERROR_ILLEGAL_ADDRESS");
        assert.equal(later.details?.sticky, true);
      });
      await assertBoardsBack();
    });

    it("measure(): a launch that cannot run is INVALID_CONFIG, told on the host from ptxas's report before any upload, or by the board's launch check", async () => {
      // 200 live accumulators: more than 64 registers per thread, so 1024 threads exceed the 65,536 registers of a block.
      const heavy = await compileCuda(
        String.raw`extern "C" __global__ void heavy(float* out, int n) {
          float acc[200];
          #pragma unroll
          for (int i = 0; i < 200; i++) acc[i] = out[i * n + threadIdx.x];
          for (int k = 0; k < n; k++) {
            #pragma unroll
            for (int i = 0; i < 200; i++) acc[i] = acc[i] * acc[(i + 1) % 200] + 1.0f;
          }
          #pragma unroll
          for (int i = 0; i < 200; i++) out[i * n + threadIdx.x] = acc[i];
        }`,
        { arch, functions: { heavy: ["float32* out", "int32 n"] } },
      );
      const registers = heavy.resources.heavy!.registers;
      assert.ok(registers > 64, `ptxas gave heavy ${registers} registers`);
      const cand = (id: string, block: number, sharedMemBytes = 0): Candidate => ({
        id,
        module: heavy,
        function: "heavy",
        launch: { grid: 1, block, sharedMemBytes },
        args: [{ output: { shape: [200 * block], dtype: "float32" } }, { scalar: 1 }],
      });
      const results = await measure(client, [cand("regs", 1024), cand("shared", 32, 1 << 30), cand("fits", 32)], {
        key: "gpu",
        boards: 1,
        progress: false,
        timeEvaluator: { number: 1, repeat: 1 },
      });
      assert.deepEqual(
        results.map((r) => r.outcome),
        ["INVALID_CONFIG", "INVALID_CONFIG", "OK"],
        JSON.stringify(results.map((r) => r.message)),
      );
      assert.match(
        results[0]!.message!,
        new RegExp(`uses ${registers} registers per thread: 1024 threads take \\d+ registers, more than the 65536 .*told on the host .*nothing was uploaded`),
      );
      assert.match(results[1]!.message!, /1073741824 dynamic\), more than the \d+ a block may have .*told on the host/);
      await assertBoardsBack();
    });

    it("measure(): a candidate that loses the context is RUNTIME_ERROR, and the candidates after it get a fresh session", async () => {
      const N = 64;
      const fill = (id: string): Candidate => ({
        id,
        module,
        function: "fill_index",
        launch: { grid: 1, block: N },
        args: [{ output: { shape: [N], dtype: "int32" }, expect: Int32Array.from({ length: N }, (_, i) => 100 + i) }, { scalar: 100 }, { scalar: N }],
      });
      const poke: Candidate = { id: "poke", module, function: "poke", args: [{ output: { shape: [1], dtype: "int32" } }, { scalar: 2 ** 40 }] };
      // One board loop: without `sticky` reaching the host it would keep the lost session, and every later candidate would fail on it.
      const results = await measure(client, [fill("before"), poke, fill("after1"), fill("after2")], {
        key: "gpu",
        boards: 1,
        progress: false,
        timeEvaluator: { number: 2, repeat: 1 },
      });
      assert.deepEqual(
        results.map((r) => r.outcome),
        ["OK", "RUNTIME_ERROR", "OK", "OK"],
        JSON.stringify(results.map((r) => r.message)),
      );
      assert.match(results[1]!.message!, /DEVICE_ERROR: .*CUDA_ERROR_ILLEGAL_ADDRESS/);
      for (const r of results.filter((r) => r.outcome === "OK")) assertTimingConditions(r.conditions!, r.throttled, `measure() ${r.id}`);
      await assertBoardsBack();
    });

    it("an endless kernel is stopped by killing its worker at the call timeout", async () => {
      await withGpu(async (s, m) => {
        const flag = await s.array({ shape: [1], dtype: "int32" });
        const t0 = Date.now();
        const e = await refused(m.getFunction("spin").withOptions({ timeoutMs: 1500 })(flag), "TIMEOUT");
        names(e, "spin");
        assert.ok(Date.now() - t0 < 10_000, `took ${Date.now() - t0} ms`);
      }).catch((err) => {
        // close() of a session whose worker was killed may itself report the end.
        if (!/TIMEOUT|RUNTIME_CRASH|closed/.test(String(err))) throw err;
      });
      await assertBoardsBack();
    });

    it("an allocation larger than the device's free memory is OUT_OF_MEMORY", async () => {
      await withGpu(async (s) => {
        const st = await s.stats();
        const total = st.counters.device_memory_total_bytes!;
        // Within the board's quota (its total memory), beyond what is free once contexts hold their share.
        const e = await refused(s.array({ shape: [1024, Math.floor(total / 4 / 1024) - 1], dtype: "float32" }), "OUT_OF_MEMORY");
        assert.match(e.message, /bytes|memory/);
        // Smaller ones still work.
        const ok = await s.array({ shape: [1 << 20], dtype: "float32" });
        await ok.free();
      });
      await assertBoardsBack();
    });

    it("CUDA options on a CPU board are refused by name", async () => {
      const s = await client.request("cpu");
      try {
        const vadd = await compileVadd();
        await s.upload(vadd);
        const m = await s.loadModule(vadd.name);
        const a = await s.array(Float32Array.from([1]));
        names(await refused(m.getFunction("vadd").withOptions({ launch: { grid: 1, block: 1 } })(a, a, a, 1), "BAD_ARGUMENTS"), "launch", "cpu board");
        names(await refused(m.timeEvaluator("vadd", { flushL2: true })(a, a, a, 1), "BAD_ARGUMENTS"), "flushL2");
      } finally {
        await s.close();
      }
    });
  });

  it("cuda:all registers one board per device", async () => {
    const agent = await startAgentProcess(farm.tracker.address, ["cuda:all:key=every-gpu"]);
    try {
      const boards = await waitFor(
        "cuda:all boards",
        async () => {
          const b = (await client.summary()).boards.filter((x) => x.key === "every-gpu");
          return b.length > 0 && b.every((x) => x.state === "free") ? b : undefined;
        },
        30_000,
      );
      assert.deepEqual(boards.map((b) => b.id.split("/").pop()).sort(), boards.map((_, i) => `cuda${i}`).sort());
    } finally {
      await agent.stop();
    }
  });
});

async function refusedRequest(client: TrackerClient, labels: Record<string, string>): Promise<void> {
  await refused(client.request("gpu", { labels }), "NO_BOARD");
}
