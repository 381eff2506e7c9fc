/**
 * A/B probe (bench/ab/swap.sh): sessions back to back on one board (request → listdir → close) for SECS
 * seconds (default 3) after 200 untimed ones. Prints one line: sessions/s and the p50 of request → listdir.
 */
import { startBenchFarm } from "../lib/farm.ts";
import { nowMs, percentile } from "../lib/stats.ts";

const seconds = Number(process.env.SECS ?? 3);
const farm = await startBenchFarm();
await farm.waitFree();
for (let i = 0; i < 200; i++) {
  const s = await farm.client.request("cpu");
  await s.listdir();
  await s.close();
}
const hot: number[] = [];
const r0 = nowMs();
while (nowMs() - r0 < seconds * 1e3) {
  const t0 = nowMs();
  const s = await farm.client.request("cpu");
  await s.listdir();
  hot.push(nowMs() - t0);
  await s.close();
}
const perS = hot.length / ((nowMs() - r0) / 1e3);
await farm.stop();
console.log(`back to back ${perS.toFixed(0)} sessions/s, request → listdir p50 ${percentile(hot, 50).toFixed(3)} ms`);
process.exit(0);
