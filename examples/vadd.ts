/**
 * A host script, as in the README: compile a kernel here, run and time it on
 * a board of the farm.
 *
 *   node --import tsx examples/vadd.ts [TRACKER_HOST:PORT]
 *
 * Without an address it starts an embedded farm (tracker + agent with a CPU board).
 */
import { compileCpu, connectTracker, startLocalFarm } from "kernelfarm";

const source = `
void vadd(const float* a, const float* b, float* c, int n) {
  for (int i = 0; i < n; i++) c[i] = a[i] + b[i];
}`;

const farm = process.argv[2] ? undefined : await startLocalFarm({ boards: ["cpu:key=cpu"] });
const tracker = farm ? farm.client : await connectTracker(process.argv[2]!);
try {
  const module = await compileCpu(source, { functions: { vadd: ["float32* a", "float32* b", "float32* c", "int32 n"] } });
  const remote = await tracker.request("cpu", { priority: 1, sessionTimeoutMs: 60_000 });
  await remote.upload(module);
  const vadd = (await remote.loadModule(module.name)).getFunction("vadd");

  const n = 1 << 20;
  const a = await remote.array(Float32Array.from({ length: n }, (_, i) => i));
  const b = await remote.array(Float32Array.from({ length: n }, () => 1));
  const c = await remote.array({ shape: [n], dtype: "float32" });
  await vadd(a, b, c, n);
  const out = (await c.toArray()) as Float32Array;
  console.log(`c[12345] = ${out[12345]} (expected 12346)`);

  const timer = remote.timeEvaluator("vadd", { number: 10, repeat: 3, minRepeatMs: 10 });
  console.log((await timer(a, b, c, n)).toString());
  await remote.close();
  if (out[12345] !== 12346) process.exitCode = 1;
} finally {
  if (farm) await farm.close();
  else tracker.close();
}
