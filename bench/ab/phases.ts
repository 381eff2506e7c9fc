/**
 * A/B probe (bench/ab/swap.sh): where a session on a fresh worker spends its time — grant, upload, load, the
 * first and second nop call, and close() (the worker, tainted by the load, exits after it). RUNS (default 11)
 * sessions after one untimed. Prints one line of p50s.
 */
import { compileVadd } from "../../tests/helpers/kernels.ts";
import { settle, startBenchFarm } from "../lib/farm.ts";
import { nowMs, percentile } from "../lib/stats.ts";

const runs = Number(process.env.RUNS ?? 11);
const [farm, module] = await Promise.all([startBenchFarm(), compileVadd()]);
const phases = { grant: [] as number[], upload: [] as number[], load: [] as number[], nop: [] as number[], nop2: [] as number[], close: [] as number[] };
for (let i = 0; i < runs + 1; i++) {
  await farm.waitFree();
  await settle(farm);
  const t = [nowMs()];
  const s = await farm.client.request("cpu");
  t.push(nowMs());
  await s.upload(module);
  t.push(nowMs());
  const nop = (await s.loadModule(module.name)).getFunction("nop");
  t.push(nowMs());
  await nop();
  t.push(nowMs());
  await nop();
  t.push(nowMs());
  await s.close();
  t.push(nowMs());
  if (i === 0) continue;
  Object.values(phases).forEach((into, k) => into.push(t[k + 1]! - t[k]!));
}
await farm.stop();
console.log(
  Object.entries(phases)
    .map(([name, v]) => `${name} ${percentile(v, 50).toFixed(2)}`)
    .join(", ") + " ms (p50)",
);
process.exit(0);
