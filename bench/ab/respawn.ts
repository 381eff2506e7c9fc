/**
 * A/B probe (bench/ab/swap.sh): how soon a board is free again after a session whose worker loaded native code
 * (the worker exits; the pool's spare serves next and a new spare starts). RUNS (default 11) after one untimed.
 */
import { compileVadd } from "../../tests/helpers/kernels.ts";
import { settle, startBenchFarm } from "../lib/farm.ts";
import { nowMs, percentile } from "../lib/stats.ts";

const runs = Number(process.env.RUNS ?? 11);
const [farm, module] = await Promise.all([startBenchFarm(), compileVadd()]);
const free: number[] = [];
for (let i = 0; i < runs + 1; i++) {
  await farm.waitFree();
  await settle(farm);
  const s = await farm.client.request("cpu");
  await s.upload(module);
  await (await s.loadModule(module.name)).getFunction("nop")();
  await s.close();
  const t0 = nowMs();
  // Two sessions back to back: the second needs the spare, and the third (untimed) the spare's own replacement.
  const s2 = await farm.client.request("cpu");
  await s2.upload(module);
  await (await s2.loadModule(module.name)).getFunction("nop")();
  await s2.close();
  const s3 = await farm.client.request("cpu");
  await s3.listdir();
  const t1 = nowMs();
  await s3.close();
  if (i > 0) free.push(t1 - t0);
}
await farm.stop();
console.log(`two tainted sessions back to back, then a grant: p50 ${percentile(free, 50).toFixed(2)} ms`);
process.exit(0);
