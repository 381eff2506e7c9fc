/**
 * A host script's happy path against real tracker and agent processes:
 * request, files, modules, arrays, calls, time_evaluator, stats, close.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { writeFile, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FarmError } from "../protos/index.ts";
import { compileCpu, type CompiledModule } from "../host-sdk/index.ts";
import { compileVadd } from "./helpers/kernels.ts";
import { startFarm, waitForFreeBoards } from "./helpers/processes.ts";

describe("a session on a CPU board", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let module: CompiledModule;

  before(async () => {
    [farm, module] = await Promise.all([startFarm(["cpu:key=cpu"]), compileVadd()]);
  });
  after(() => farm.stop());

  it("uploads, lists, downloads and removes files", async () => {
    const s = await farm.client.request("cpu");
    try {
      const payload = Buffer.alloc(3 * (1 << 20) + 17);
      for (let i = 0; i < payload.length; i++) payload[i] = (i * 31) & 0xff;
      await s.upload(payload, "blob.bin");
      const dir = await mkdtemp(join(tmpdir(), "kf-test-"));
      await writeFile(join(dir, "notes.txt"), "hello board");
      assert.equal(await s.upload(join(dir, "notes.txt")), "notes.txt");
      assert.deepEqual(await s.listdir(), [
        { name: "blob.bin", size: payload.length },
        { name: "notes.txt", size: 11 },
      ]);
      assert.ok((await s.download("blob.bin")).equals(payload));
      assert.equal((await s.download("notes.txt")).toString(), "hello board");
      await s.remove("blob.bin");
      assert.deepEqual(
        (await s.listdir()).map((e) => e.name),
        ["notes.txt"],
      );
      await assert.rejects(s.download("blob.bin"), (e: FarmError) => e.code === "NOT_FOUND" && /blob\.bin/.test(e.message));
    } finally {
      await s.close();
    }
  });

  it("loads a module, calls it on remote arrays and reads the result back", async () => {
    const s = await farm.client.request("cpu");
    try {
      await s.upload(module);
      const mod = await s.loadModule(module.name);
      assert.deepEqual(mod.functions.map((f) => f.name).sort(), ["nop", "scale", "vadd"]);
      const vadd = mod.getFunction("vadd");
      assert.deepEqual(
        vadd.info.params.map((p) => [p.name, p.kind, p.dtype]),
        [
          ["a", "buffer", "float32"],
          ["b", "buffer", "float32"],
          ["c", "buffer", "float32"],
          ["n", "scalar", "int32"],
        ],
      );
      const n = 300_000; // more than one chunk each way
      const a = Float32Array.from({ length: n }, (_, i) => i);
      const b = Float32Array.from({ length: n }, (_, i) => 2 * i + 0.5);
      const ra = await s.array(a);
      const rb = await s.array(b);
      const rc = await s.array({ shape: [n], dtype: "float32" });
      await vadd(ra, rb, rc, n);
      const c = (await rc.toArray()) as Float32Array;
      assert.equal(c.length, n);
      for (let i = 0; i < n; i += 997) assert.equal(c[i], a[i]! + b[i]!);
      await mod.getFunction("scale")(rc, n, 0.5);
      const half = (await rc.toArray()) as Float32Array;
      assert.equal(half[10], (a[10]! + b[10]!) * 0.5);
      await rc.copyFrom(new Float32Array(n).fill(7));
      assert.equal(((await rc.toArray()) as Float32Array)[n - 1], 7);
      await rc.free();
      await assert.rejects(rc.toArray(), (e: FarmError) => e.code === "NOT_FOUND");
    } finally {
      await s.close();
    }
  });

  it("time_evaluator follows TVM: results per repeat, number grows to min_repeat_ms and stays grown", async () => {
    const s = await farm.client.request("cpu");
    try {
      await s.upload(module);
      const mod = await s.loadModule(module.name);
      const n = 1 << 16;
      const ra = await s.array(new Float32Array(n).fill(1));
      const rb = await s.array(new Float32Array(n).fill(2));
      const rc = await s.array({ shape: [n], dtype: "float32" });
      const plain = await mod.timeEvaluator("vadd", { number: 3, repeat: 4 })(ra, rb, rc, n);
      assert.equal(plain.results.length, 4);
      assert.equal(plain.number, 3);
      assert.ok(
        plain.results.every((r) => r > 0 && r < 0.1),
        `implausible times ${plain.results}`,
      );
      assert.ok(plain.min <= plain.median && plain.median <= plain.max);
      assert.ok(Math.abs(plain.mean - plain.results.reduce((x, y) => x + y) / 4) < 1e-12);

      const evaluator = mod.timeEvaluator("vadd", { number: 1, repeat: 2, minRepeatMs: 15 });
      const grown = await evaluator(ra, rb, rc, n);
      assert.ok(grown.number > 1, "number must grow to fill min_repeat_ms");
      assert.ok(grown.results[0]! * grown.number * 1e3 >= 15, "a repeat lasts at least min_repeat_ms");
      const again = await evaluator(ra, rb, rc, n);
      assert.ok(again.number >= grown.number, "the grown number persists into the next evaluation");

      const t0 = performance.now();
      await mod.timeEvaluator("nop", { number: 1, repeat: 3, cooldownMs: 40 })();
      assert.ok(performance.now() - t0 >= 3 * 40, "cooldown sleeps after every repeat by default");
      assert.match(plain.toString(), /mean \(ms\)\s+median \(ms\)/);
      assert.equal(s.timeEvaluator("vadd", { repeat: 1 }) instanceof Function, true);
      assert.equal(plain.stoppedBy, "repeat");

      // A precision target: repeats until the median is known within 2 %, or the budget ends — either way it says which.
      const precise = await mod.timeEvaluator("vadd", { number: 5, repeat: 3, targetRse: 0.02, budgetMs: 3000 })(ra, rb, rc, n);
      if (precise.stoppedBy === "precision") assert.ok(precise.rse <= 0.02, `rse ${precise.rse}`);
      else assert.equal(precise.stoppedBy, "budget", `stopped by ${precise.stoppedBy}`);
      assert.ok(precise.results.length >= 3);
      const hopeless = await mod.timeEvaluator("vadd", { number: 1, repeat: 2, targetRse: 1e-12, budgetMs: 200 })(ra, rb, rc, n);
      assert.deepEqual([hopeless.stoppedBy, hopeless.rse > 1e-12], ["budget", true]);
      // Refused on the host when the evaluator is made (contract.json's limits), before anything reaches the board.
      for (const targetRse of [-0.1, 1, Number.NaN]) {
        assert.throws(
          () => mod.timeEvaluator("vadd", { targetRse }),
          (e: FarmError) => e.code === "INVALID_ARGUMENT" && /timeEvaluator targetRse must be a number in \[0, 1\)/.test(e.message),
        );
      }
    } finally {
      await s.close();
    }
  });

  it("flushCpuCache evicts every argument but the first before each timed batch (TVM's cache_flush_cpu_non_first_arg), on CPU boards only", async () => {
    // A pointer chase: each load waits for the one before, so where the table sits (cache or DRAM) is what the time measures.
    const chase = await compileCpu(
      "#include <stdint.h>\nvoid chase(int32_t* out, const int32_t* next, int32_t steps) { int32_t i = 0; for (int32_t k = 0; k < steps; k++) i = next[i]; out[0] = i; }\n",
      { functions: { chase: ["int32* out", "int32* next", "int32 steps"] } },
    );
    // One cycle through the 1,024 cache lines of 64 KiB, one step per line, in random order (Sattolo), so
    // that no prefetcher guesses the next line and every step of a flushed table misses.
    const lines = 1024;
    const order = Int32Array.from({ length: lines }, (_, i) => i);
    let seed = 12345;
    for (let i = lines - 1; i > 0; i--) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      const j = seed % i;
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    const next = new Int32Array(lines * 16);
    for (let k = 0; k < lines; k++) next[order[k]! * 16] = order[(k + 1) % lines]! * 16;
    const n = lines;
    const s = await farm.client.request("cpu");
    try {
      await s.upload(chase);
      const mod = await s.loadModule(chase.name);
      const [out, table] = await Promise.all([s.array({ shape: [1], dtype: "int32" }), s.array(next)]);
      const timed = (flushCpuCache: boolean) => mod.timeEvaluator("chase", { number: 1, repeat: 15, flushCpuCache })(out, table, n);
      await s.clearStats();
      const cold = await timed(true);
      assert.equal((await s.stats()).counters.cache_flushes, 15, "one flush per timed batch");
      const warm = await timed(false);
      assert.equal((await s.stats()).counters.cache_flushes, 15, "no flush unless asked");
      console.log(
        `# pointer chase through 1,024 lines (64 KiB), median: ${(warm.median * 1e6).toFixed(1)} µs cached, ${(cold.median * 1e6).toFixed(1)} µs with flushCpuCache`,
      );
      // Not a speed target: evidence that the flush reaches the caches (DRAM latency is tens of times a cache hit's).
      assert.ok(cold.median > 3 * warm.median, `flushed ${cold.median} s against ${warm.median} s cached`);
      await assert.rejects(
        mod.timeEvaluator("chase", { flushL2: true })(out, table, n),
        (e: FarmError) => e.code === "BAD_ARGUMENTS" && /flushL2 is an option of CUDA boards/.test(e.message),
      );
    } finally {
      await s.close();
    }
  });

  it("reports board stats and clears them", async () => {
    const s = await farm.client.request("cpu");
    try {
      await s.upload(module);
      const mod = await s.loadModule(module.name);
      const nop = mod.getFunction("nop");
      for (let i = 0; i < 5; i++) await nop();
      const st = await s.stats();
      assert.equal(st.counters.calls, 5);
      assert.equal(st.info.kind, "cpu");
      await s.clearStats();
      assert.equal((await s.stats()).counters.calls, 0);
    } finally {
      await s.close();
    }
  });

  it("gives the board back on close, and refuses calls after close", async () => {
    const s = await farm.client.request("cpu");
    const summary = await farm.client.summary();
    assert.equal(summary.boards[0]!.state, "busy");
    assert.equal(summary.boards[0]!.session_id, s.id);
    await s.close();
    await s.close(); // twice is fine
    await assert.rejects(s.listdir(), (e: FarmError) => e.code === "SESSION_CLOSED");
    await waitForFreeBoards(farm.client, 1);
    const q = (await farm.client.summary()).queues.find((x) => x.key === "cpu")!;
    assert.deepEqual([q.total, q.free, q.pending], [1, 1, 0]);
  });

  it("wipes a session's files before the next session", async () => {
    const s1 = await farm.client.request("cpu");
    await s1.upload(Buffer.from("secret"), "left-behind.txt");
    await s1.close();
    const s2 = await farm.client.request("cpu");
    try {
      assert.deepEqual(await s2.listdir(), []);
    } finally {
      await s2.close();
    }
  });
});
