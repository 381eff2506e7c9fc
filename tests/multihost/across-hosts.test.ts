/**
 * The farm across hosts of their own (tests/multihost/netbed.ts): a tracker
 * host, two agent hosts and two client hosts, each a network namespace with
 * its own address and TCP stack. Under each network condition — none, 20 ms
 * one way, about 1 % loss — a client host opens sessions, calls, uploads
 * 64 MiB on every lane and runs a measure() batch on both agents' boards, and
 * everything comes back right. The figures (with a raw TCP transfer over the
 * same links as the upload's baseline) are printed; BENCHMARKS.md "Across
 * hosts" has them from `npm run bench -- across-hosts`.
 *
 * Skips, saying why, where network namespaces cannot be made (not root).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "../helpers/suites.ts";
import { waitFor } from "../helpers/processes.ts";
import { CONDITIONS, figureRows, runCondition, type ConditionFigures } from "./conditions.ts";
import { Driver, startBedFarm, type BedFarm } from "./farm.ts";
import { netBedUnavailable } from "./netbed.ts";

const skip = netBedUnavailable();

describe("a farm across hosts, under delay and loss", { skip, timeout: 600_000 }, () => {
  let farm: BedFarm;
  let sink: { driver: Driver; port: number };
  const figures: ConditionFigures[] = [];

  before(async () => {
    farm = await startBedFarm();
    const driver = await Driver.start(farm.bed, "agent1");
    sink = { driver, port: (await driver.do("sink")).port };
    await waitFor(
      "both agents' boards",
      async () => (await farm.clients.client1.do("summary")).boards.filter((b: { state: string }) => b.state === "free").length === 2,
      30_000,
    );
  });

  after(async () => {
    await sink?.driver.stop();
    await farm?.stop();
    if (figures.length) console.log(["across hosts (client1 → agent1/agent2 through the wire):", ...figureRows(figures)].join("\n"));
  });

  for (const condition of CONDITIONS) {
    it(`sessions, calls, 64 MiB uploads on each lane and a measure() batch work at ${condition.name}`, async () => {
      // Each timing runs the kernel 300,000 times (~0.2 s), so the batch (2–3 s on one board) outlasts a board whose
      // session opened late: at 1 % loss a lost SYN is sent again after 1 s, and 12 quick candidates were all done on
      // the other board by then.
      const f = await runCondition(farm, sink, condition, {
        grants: 3,
        calls: 20,
        uploads: 1,
        lanes: ["direct", "relay", "grpc"],
        candidates: 12,
        number: 300_000,
      });
      figures.push(f);
      assert.equal(f.grantMs.length, 3);
      assert.equal(f.callMs.length, 20);
      for (const lane of ["direct", "relay", "grpc"] as const) assert.equal(f.uploadMs[lane]?.length, 1, `an upload on the ${lane} lane`);
      assert.deepEqual(f.measure.outcomes, { OK: 12 }, "every candidate measured and checked");
      assert.deepEqual(f.measure.boards, ["agent1/agent1-cpu0", "agent2/agent2-cpu0"], "the batch used both agents' boards");
      // The wire really delays: at 20 ms one way a call cannot come back in less than the round trip.
      if (condition.link.delayMs > 0)
        assert.ok(
          Math.min(...f.callMs) >= 4 * condition.link.delayMs - 2 * condition.link.jitterMs,
          `calls at ${condition.name} took ${Math.min(...f.callMs)} ms at least`,
        );
    });
  }
});
