/**
 * A hung kernel's TIMEOUT (issue 31, item 11): it says the limit that
 * applied, where it came from and how to change it; and a call never waits
 * past what its session has left, so a hung kernel in a short session ends
 * as the call's TIMEOUT within the session's time — not after the board's
 * 60 s default, nor as the session's SESSION_TIMEOUT.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connectTracker, type CompiledModule, type RemoteModule, type Session, type TrackerClient } from "../host-sdk/index.ts";
import type { FarmError } from "../protos/index.ts";
import { compileBad } from "./helpers/kernels.ts";
import { startAgentProcess, startTrackerProcess, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

describe("a hung kernel's TIMEOUT", () => {
  let tracker: TrackerProcess;
  let agents: AgentProcess[];
  let client: TrackerClient;
  let bad: CompiledModule;

  before(async () => {
    tracker = await startTrackerProcess();
    agents = await Promise.all([
      // The default call timeout (60 s), as a user meets it.
      startAgentProcess(tracker.address, ["cpu:key=cpu,name=c0"], ["--name", "default"]),
      startAgentProcess(tracker.address, ["cpu:key=short,name=s0"], ["--name", "short", "--call-timeout-ms", "800"]),
    ]);
    client = await connectTracker(tracker.address);
    [bad] = await Promise.all([compileBad(), waitForFreeBoards(client, 2)]);
  });
  after(async () => {
    client.close();
    await Promise.all(agents.map((a) => a.stop()));
    await tracker.stop();
  });

  async function loaded(s: Session): Promise<RemoteModule> {
    await s.upload(bad);
    return s.loadModule(bad.name);
  }

  it("in a short session comes within the session's time, not after the board's 60 s default", async () => {
    const s = await client.request("cpu", { sessionTimeoutMs: 5000 });
    const t0 = Date.now();
    const spin = (await loaded(s)).getFunction("spin");
    await assert.rejects(spin(), (e: FarmError) => {
      assert.equal(e.code, "TIMEOUT", e.message);
      assert.match(e.message, /call spin ran past its \d+ ms timeout \(all its session had left: its sessionTimeoutMs of 5000 ms/);
      assert.match(e.message, /request\(key, \{ sessionTimeoutMs \}\), session_timeout= in Python/);
      return true;
    });
    const took = Date.now() - t0;
    assert.ok(took < 5000, `ended within the session's 5 s, well before the board's 60 s default: ${took} ms`);
    assert.equal(s.closedReason?.code, "TIMEOUT");
    await waitForFreeBoards(client, 2);
  });

  it("names the board's default and how a call sets its own", async () => {
    const s = await client.request("short");
    const spin = (await loaded(s)).getFunction("spin");
    await assert.rejects(spin(), (e: FarmError) => {
      assert.equal(e.code, "TIMEOUT");
      assert.match(e.message, /call spin ran past its 800 ms timeout \(the board's default: its agent's --call-timeout-ms, 800 ms\)/);
      assert.match(e.message, /a call sets its own with timeoutMs \(fn\.withOptions\(\{ timeoutMs \}\).*timeout= in seconds in Python\)/);
      assert.match(e.message, /the session worker was killed and the board returned to the pool/);
      return true;
    });
    await waitForFreeBoards(client, 2);
  });

  it("names the call's own timeoutMs when it gave one", async () => {
    const s = await client.request("short");
    const spin = (await loaded(s)).getFunction("spin");
    await assert.rejects(spin.withOptions({ timeoutMs: 300 })(), (e: FarmError) => {
      assert.equal(e.code, "TIMEOUT");
      assert.match(e.message, /call spin ran past its 300 ms timeout \(the call's own timeoutMs; timeout= in seconds in Python\)/);
      return true;
    });
    await waitForFreeBoards(client, 2);
  });
});
