/**
 * Across hosts: the farm on the multi-host bed (tests/multihost/): tracker,
 * two agents and a client, each in a network namespace of its own, joined by
 * the bed's wire. Per network condition — 0 ms, 20 ms one way, about 1 %
 * loss, and both — the session grant, a small call, and a 64 MiB upload on
 * each lane, against a raw TCP transfer over the same links in the same run
 * (client host → agent host, acknowledged when all bytes arrived, as an
 * upload's reply is). Needs root (namespaces, TUN); says why and skips
 * without. Partition detection and recovery times come from the fault tests
 * (`npm run test:multihost`), which print them.
 */
import { CONDITIONS, figureRows, runCondition, type Condition, type ConditionFigures } from "../tests/multihost/conditions.ts";
import { Driver, startBedFarm } from "../tests/multihost/farm.ts";
import { netBedUnavailable } from "../tests/multihost/netbed.ts";
import { waitFor } from "../tests/helpers/processes.ts";

/** TCP at 40 ms round trip and 1 % loss is the slow corner: measured here, not in the tests. */
const BENCH_CONDITIONS: Condition[] = [...CONDITIONS, { name: "20 ms + 1 % loss", link: { delayMs: 10, jitterMs: 1, lossPct: 0.5 } }];

export async function benchAcrossHosts(): Promise<void> {
  const skip = netBedUnavailable();
  if (skip) {
    console.log(`\nacross-hosts: skipped: ${skip}`);
    return;
  }
  const farm = await startBedFarm();
  const driver = await Driver.start(farm.bed, "agent1");
  try {
    const sink = { driver, port: (await driver.do("sink")).port as number };
    await waitFor(
      "both agents' boards",
      async () => (await farm.clients.client1.do("summary")).boards.filter((b: { state: string }) => b.state === "free").length === 2,
      30_000,
    );
    const figures: ConditionFigures[] = [];
    for (const c of BENCH_CONDITIONS) {
      figures.push(await runCondition(farm, sink, c, { grants: 10, calls: 50, uploads: 3, lanes: ["direct", "relay", "grpc"], candidates: 24 }));
      console.error(`across-hosts: ${c.name} done`);
    }
    console.log("\nAcross hosts (client1 → agent1 through the bed's wire; medians; raw TCP over the same links in the same run)");
    for (const row of figureRows(figures)) console.log(row);
  } finally {
    await driver.stop();
    await farm.stop();
  }
}
