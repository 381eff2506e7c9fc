/**
 * The quick start's main job: an embedded farm (tracker + agent with a VTA
 * simulator board and a CPU board) and a host script that does what a TVM
 * user does: compile locally, request a board, upload, load, call, check the
 * answer against a reference, time it, and read the board's statistics.
 *
 * The headline is TVM's VTA conv2d tutorial (ResNet-18 layer 9) on the VTA
 * simulator, with the execution statistics TVM's simulator printed.
 */
import {
  compileCpu,
  conv2dReference,
  packNCHW,
  packOIHW,
  unpackNCHW,
  conv2dOutputSize,
  vtaConv2d,
  VTA_CONV2D,
  type Session,
  type TrackerClient,
} from "../host-sdk/index.ts";
import { formatSummary } from "../tracker/index.ts";
import { startLocalFarm } from "../local-farm.ts";

/** TVM's statistics, in the order and format its tutorials print them. */
const VTA_COUNTERS = ["inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes", "gemm_counter", "alu_counter"];

/** Uniform int8 in [-128, 128), reproducible. */
function randomInt8(n: number, seed: number): Int8Array {
  const out = new Int8Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s >>> 24) - 128;
  }
  return out;
}

async function conv2dOnVta(client: TrackerClient): Promise<boolean> {
  const w = VTA_CONV2D.workload;
  const module = vtaConv2d(w, VTA_CONV2D.schedule);
  const info = module.kernels[0]!;
  console.log(
    `VTA conv2d (ResNet-18 layer 9): ${w.batch}x${w.inChannels}x${w.height}x${w.width}, ${w.outChannels} filters ${w.kernelH}x${w.kernelW}, pad ${w.padH}, stride ${w.strideH}`,
  );
  console.log(`  compiled on the host: ${info.instructions} instructions in ${info.runs} run(s), schedule ${JSON.stringify(info.schedule)}`);

  const { outHeight, outWidth } = conv2dOutputSize(w);
  const data = randomInt8(w.batch * w.inChannels * w.height * w.width, 1);
  const kernel = randomInt8(w.outChannels * w.inChannels * w.kernelH * w.kernelW, 2);
  const outShape = [w.batch, w.outChannels, outHeight, outWidth] as const;

  const remote: Session = await client.request("vta", { sessionTimeoutMs: 120_000 });
  try {
    console.log(`  session ${remote.id} on board ${remote.board.id}`);
    await remote.upload(module);
    const conv = (await remote.loadModule(module.name)).getFunction("conv2d");
    const [shapeData, shapeKernel, shapeRes] = conv.info.params.map((p) => p.shape);
    const rData = await remote.array(packNCHW(data, [w.batch, w.inChannels, w.height, w.width]), shapeData);
    const rKernel = await remote.array(packOIHW(kernel, [w.outChannels, w.inChannels, w.kernelH, w.kernelW]), shapeKernel);
    const rRes = await remote.array({ shape: shapeRes!, dtype: "int8" });
    await remote.clearStats();
    const t0 = performance.now();
    await conv(rData, rKernel, rRes);
    const callMs = performance.now() - t0;
    const stats = await remote.stats();
    const got = unpackNCHW((await rRes.toArray()) as Int8Array, outShape);
    const want = conv2dReference(data, kernel, w);
    const wrong = got.findIndex((v, i) => v !== want[i]);
    console.log(
      `  output ${wrong < 0 ? "equals" : `DIFFERS (first at ${wrong}) from`} the reference (int32 accumulate, >> 8, clip [0,127], int8); call took ${callMs.toFixed(1)} ms`,
    );
    console.log("\nExecution statistics:");
    for (const name of VTA_COUNTERS) console.log(`\t${name.padEnd(16)}: ${String(stats.counters[name]).padStart(16)}`);
    console.log(`\t${"cycle_count".padEnd(16)}: ${String(stats.counters.cycle_count).padStart(16)}   (kernelfarm's timing model)`);
    const t = await remote.timeEvaluator("conv2d", { number: 1, repeat: 5 })(rData, rKernel, rRes);
    const macs = w.batch * w.outChannels * outHeight * outWidth * w.inChannels * w.kernelH * w.kernelW;
    console.log(`\nsimulator time_evaluator: median ${(t.median * 1e3).toFixed(2)} ms, ${(macs / t.median / 1e9).toFixed(2)} G simulated MAC/s\n`);
    return wrong < 0;
  } finally {
    await remote.close();
  }
}

const VADD = `
#include <stdint.h>
void vadd(const float* a, const float* b, float* c, int32_t n) {
  for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}`;

async function vaddOnCpu(client: TrackerClient): Promise<boolean> {
  const module = await compileCpu(VADD, { functions: { vadd: ["float32* a", "float32* b", "float32* c", "int32 n"] } });
  const remote = await client.request("cpu");
  try {
    await remote.upload(module);
    const vadd = (await remote.loadModule(module.name)).getFunction("vadd");
    const n = 1 << 20;
    const a = Float32Array.from({ length: n }, (_, i) => i * 0.5);
    const b = Float32Array.from({ length: n }, (_, i) => 1 - i);
    const [ra, rb, rc] = await Promise.all([remote.array(a), remote.array(b), remote.array({ shape: [n], dtype: "float32" })]);
    await vadd(ra!, rb!, rc!, n);
    const c = (await rc!.toArray()) as Float32Array;
    const wrong = c.findIndex((v, i) => v !== a[i]! + b[i]!);
    const t = await remote.timeEvaluator("vadd", { number: 10, repeat: 5, minRepeatMs: 20 })(ra!, rb!, rc!, n);
    console.log(
      `CPU vadd of ${n} floats on board ${remote.board.id}: ${wrong < 0 ? "correct" : `WRONG at ${wrong}`}; time_evaluator (number grew to ${t.number}):`,
    );
    console.log(t.toString());
    return wrong < 0;
  } finally {
    await remote.close();
  }
}

export async function runDemo(): Promise<void> {
  const t0 = performance.now();
  const farm = await startLocalFarm({ boards: ["vta-sim:key=vta,name=vta0", "cpu:key=cpu,name=cpu0"] });
  try {
    await farm.ready();
    console.log(`embedded farm up at ${farm.address} (a VTA simulator board and a CPU board) in ${(performance.now() - t0).toFixed(0)} ms\n`);
    const vtaOk = await conv2dOnVta(farm.client);
    const cpuOk = await vaddOnCpu(farm.client);
    console.log("\n" + formatSummary(await farm.client.summary(), farm.address));
    console.log(`\ndone in ${(performance.now() - t0).toFixed(0)} ms`);
    if (!vtaOk || !cpuOk) process.exitCode = 1;
  } finally {
    await farm.close();
  }
}
