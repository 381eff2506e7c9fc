/**
 * A/B probe (bench/ab/swap.sh): an idle farm's grant → first call (listdir), as `bench grant` measures it —
 * before each grant the board is free and the farm's processes quiet. Prints one line: the p50s.
 * RUNS (default 25) timed grants after 5 warm-ups.
 */
import { settle, startBenchFarm } from "../lib/farm.ts";
import { nowMs, percentile } from "../lib/stats.ts";

const runs = Number(process.env.RUNS ?? 25);
const farm = await startBenchFarm();
const total: number[] = [];
const grant: number[] = [];
for (let i = 0; i < 5 + runs; i++) {
  await farm.waitFree();
  await settle(farm);
  const t0 = nowMs();
  const s = await farm.client.request("cpu");
  const t1 = nowMs();
  await s.listdir();
  const t2 = nowMs();
  await s.close();
  if (i < 5) continue;
  total.push(t2 - t0);
  grant.push(t1 - t0);
}
await farm.stop();
console.log(`idle grant → listdir p50 ${percentile(total, 50).toFixed(2)} ms (request() ${percentile(grant, 50).toFixed(2)} ms), ${runs} grants`);
process.exit(0);
