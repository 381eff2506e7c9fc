/**
 * A/B probe: the grant on the multi-host bed (tests/multihost/) with 20 ms
 * one way on every host's link (a 40 ms round trip between any two hosts):
 * client1's request() — the grant, then its lane opened — in round trips,
 * against a unary call (the summary) to the tracker over the same links.
 * RUNS (default 10) grants. Needs root (namespaces); says why and exits
 * without. Prints one line: the medians.
 */
import { startBedFarm } from "../../tests/multihost/farm.ts";
import { netBedUnavailable } from "../../tests/multihost/netbed.ts";
import { waitFor } from "../../tests/helpers/processes.ts";

const runs = Number(process.env.RUNS ?? 10);
const skip = netBedUnavailable();
if (skip) {
  console.log(`bed grant: skipped: ${skip}`);
  process.exit(0);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const farm = await startBedFarm();
const client = farm.clients.client1;
try {
  await waitFor(
    "both agents' boards",
    async () => (await client.do("summary")).boards.filter((b: { state: string }) => b.state === "free").length === 2,
    30_000,
  );
  await farm.bed.allLinks({ delayMs: 10, jitterMs: 0, lossPct: 0, dir: "both" });
  const unary: number[] = [];
  const grant: number[] = [];
  for (let i = 0; i < runs + 2; i++) {
    const t0 = performance.now();
    await client.do("summary");
    const u = performance.now() - t0;
    const s = (await client.do("request", { key: "cpu", route: "direct" })) as { sid: string; ms: number };
    await client.do("close", { sid: s.sid });
    if (i < 2) continue;
    unary.push(u);
    grant.push(s.ms);
  }
  const rtt = median(unary);
  console.log(
    `bed grant, 20 ms one way: request() p50 ${median(grant).toFixed(1)} ms = ${(median(grant) / rtt).toFixed(2)} round trips (unary summary p50 ${rtt.toFixed(1)} ms), ${runs} grants`,
  );
} finally {
  await farm.stop();
}
process.exit(0);
