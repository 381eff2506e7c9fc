/**
 * The quick start's main job: an embedded farm with CPU boards, and a host
 * script that does what a TVM user does: request, upload, load, call,
 * time_evaluator, stats, and checks the answer.
 */
import { compileCpu } from "../host-sdk/index.ts";
import { formatSummary } from "../tracker/index.ts";
import { startLocalFarm } from "../local-farm.ts";

const SOURCE = `
#include <stdint.h>
void vadd(const float* a, const float* b, float* c, int32_t n) {
  for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}
void matmul(const float* a, const float* b, float* c, int32_t n) {
  for (int32_t i = 0; i < n; i++)
    for (int32_t j = 0; j < n; j++) {
      float acc = 0;
      for (int32_t k = 0; k < n; k++) acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
}
`;

export async function runDemo(opts: { boards: number }): Promise<void> {
  const t0 = performance.now();
  const farm = await startLocalFarm({ boards: Array.from({ length: opts.boards }, (_, i) => `cpu:key=cpu,name=cpu${i}`), agent: {} });
  try {
    await farm.ready();
    console.log(`embedded farm up at ${farm.address} with ${opts.boards} CPU board(s) in ${(performance.now() - t0).toFixed(0)} ms\n`);

    const module = await compileCpu(SOURCE, {
      functions: { vadd: ["float32* a", "float32* b", "float32* c", "int32 n"], matmul: ["float32* a", "float32* b", "float32* c", "int32 n"] },
    });
    const tReq = performance.now();
    const remote = await farm.client.request("cpu", { sessionTimeoutMs: 60_000 });
    console.log(`session ${remote.id} on board ${remote.board.id} (granted in ${(performance.now() - tReq).toFixed(1)} ms)`);
    await remote.upload(module);
    const mod = await remote.loadModule(module.name);
    console.log(`loaded ${module.name}: ${mod.functions.map((f) => `${f.name}(${f.params.map((p) => `${p.dtype}${p.kind === "buffer" ? "*" : ""} ${p.name}`).join(", ")})`).join(", ")}`);

    const n = 1 << 20;
    const a = Float32Array.from({ length: n }, (_, i) => i * 0.5);
    const b = Float32Array.from({ length: n }, (_, i) => 1 - i);
    const [ra, rb, rc] = await Promise.all([remote.array(a), remote.array(b), remote.array({ shape: [n], dtype: "float32" })]);
    await mod.getFunction("vadd")(ra!, rb!, rc!, n);
    const c = (await rc!.toArray()) as Float32Array;
    const wrong = c.findIndex((v, i) => v !== a[i]! + b[i]!);
    console.log(`vadd of ${n} floats: ${wrong < 0 ? "correct" : `WRONG at ${wrong}`}`);
    const t = await mod.timeEvaluator("vadd", { number: 10, repeat: 5, minRepeatMs: 20 })(ra!, rb!, rc!, n);
    console.log(`vadd time_evaluator (number grew to ${t.number}):\n${t.toString()}`);
    console.log(`  → ${((3 * 4 * n) / t.median / 1e9).toFixed(2)} GB/s\n`);

    const m = 256;
    const ma = Float32Array.from({ length: m * m }, (_, i) => (i % 7) - 3);
    const mb = Float32Array.from({ length: m * m }, (_, i) => (i % 5) - 2);
    const [xa, xb, xc] = await Promise.all([remote.array(ma, [m, m]), remote.array(mb, [m, m]), remote.array({ shape: [m, m], dtype: "float32" })]);
    await mod.getFunction("matmul")(xa!, xb!, xc!, m);
    const got = (await xc!.toArray()) as Float32Array;
    let maxErr = 0;
    for (let i = 0; i < m; i += 17) for (let j = 0; j < m; j += 13) {
      let acc = 0;
      for (let k = 0; k < m; k++) acc += ma[i * m + k]! * mb[k * m + j]!;
      maxErr = Math.max(maxErr, Math.abs(acc - got[i * m + j]!));
    }
    console.log(`matmul ${m}x${m}: ${maxErr === 0 ? "correct" : `max error ${maxErr}`} (sampled against a host reference)`);
    const tm = await mod.timeEvaluator("matmul", { number: 1, repeat: 3 })(xa!, xb!, xc!, m);
    console.log(`matmul: median ${(tm.median * 1e3).toFixed(3)} ms, ${((2 * m ** 3) / tm.median / 1e9).toFixed(2)} GFLOP/s\n`);

    const stats = await remote.stats();
    console.log("board stats:", Object.entries(stats.counters).map(([k, v]) => `${k}=${v}`).join(" "));
    console.log("\n" + formatSummary(await farm.client.summary(), farm.address) + "\n");
    await remote.close();
    console.log(`session closed; total ${(performance.now() - t0).toFixed(0)} ms`);
    if (wrong >= 0 || maxErr !== 0) process.exitCode = 1;
  } finally {
    await farm.close();
  }
}
