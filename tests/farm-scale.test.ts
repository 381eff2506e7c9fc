/**
 * The machinery of the 10,000-board benchmark (bench/farm-scale.ts) at a tiny
 * size against the real tracker, so that its simulated agents
 * (bench/lib/sim-agent.ts) cannot drift from the contract unnoticed: every
 * request of the real host SDK is granted on a direct lane and released
 * cleanly, the agents saw exactly those sessions, and the tracker lists every
 * board and has them all free again afterwards.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_FARM_SCALE, farmScaleProblems, runFarmScale } from "../bench/farm-scale.ts";

describe("a simulated farm (bench/farm-scale.ts) against the real tracker", () => {
  it("grants and releases every request of 10 hosts on 3 agents × 4 boards", async () => {
    const r = await runFarmScale({
      ...DEFAULT_FARM_SCALE,
      agents: 3,
      boards: 4,
      hosts: 10,
      durationS: 2,
      warmupS: 0.5,
      holdMs: 5,
      summaryEveryMs: 200,
      baseline: false,
      trackerArgs: [],
    });
    assert.deepEqual(farmScaleProblems(r), []);
    assert.equal(r.boardsListed, 12);
    assert.equal(r.boardsFreeAfter, 12);
    assert.ok(r.hosts.granted >= r.hosts.hosts, `only ${r.hosts.granted} sessions granted`);
    assert.deepEqual(r.hosts.lanes, { direct: r.hosts.granted });
    assert.equal(r.agents.assigned, r.hosts.granted);
    assert.equal(r.agents.direct, r.hosts.granted);
    assert.equal(r.agents.closed, r.hosts.released);
    assert.ok(r.hosts.grantMs.length > 0 && r.summaryMs.length > 0);
    assert.ok(r.trackerCpuS > 0 && r.rssPeakBytes > 0);
  });
});
