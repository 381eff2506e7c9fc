/**
 * What an agent says about its tracker: that it cannot be reached (address,
 * reason, when it tries next), again only as a reminder during a long outage,
 * and that it attached once the tracker is there — without flooding the log.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { freePort, startAgentProcess, startTrackerProcess, waitFor } from "./helpers/processes.ts";
import { transportReason } from "../device-agent/agent/tracker-link.ts";

function logLines(stderr: string): { level: number; msg: string }[] {
  return stderr
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { level: number; msg: string });
}

describe("an agent whose tracker cannot be reached", () => {
  it("says so with the address, the reason and the next try, stays quiet while retrying, and says when it attached", async () => {
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    const agent = await startAgentProcess(address, ["cpu:key=cpu,name=c0"], ["--name", "lonely"], { env: { KFARM_LOG: "info" } });
    let tracker: Awaited<ReturnType<typeof startTrackerProcess>> | undefined;
    try {
      const said = new RegExp(
        `cannot attach to the tracker at ${address}: connect ECONNREFUSED ${address}; next try in \\d+ ms, then every 250 ms \\(said again every 60 s while it lasts\\)`,
      );
      await waitFor("the agent saying it cannot reach the tracker", () => said.test(agent.stderr()), 10_000);
      // Retries (the link's and each worker's own dials) add no lines.
      const tries = () => logLines(agent.stderr()).filter((l) => l.level >= 40).length;
      const before = tries();
      await new Promise((r) => setTimeout(r, 3000)); // the outage's length is the scenario (a dozen retries), not a wait for an event
      assert.equal(
        tries(),
        before,
        `no more warnings during the outage: ${logLines(agent.stderr())
          .filter((l) => l.level >= 40)
          .map((l) => l.msg)
          .join("\n")}`,
      );

      tracker = await startTrackerProcess([], port);
      const attached = new RegExp(`attached to the tracker at ${address} after \\d+\\.\\d s and \\d+ failed tries`);
      await waitFor("the agent saying it attached", () => attached.test(agent.stderr()), 15_000);
      // Every JSON line has unique keys (a duplicate `agent` key would be silently merged by JSON.parse).
      for (const line of agent
        .stderr()
        .split("\n")
        .filter((l) => l.startsWith("{"))) {
        const keys = [...line.matchAll(/"([a-z_]+)":/g)].map((m) => m[1]);
        const top = keys.filter((k, i) => keys.indexOf(k) !== i && ["agent", "agent_id", "tracker"].includes(k!));
        assert.deepEqual(top, [], `a log line with a repeated key: ${line}`);
      }
    } finally {
      await agent.stop();
      await tracker?.stop();
    }
  });

  it("reads grpc-js's transport failure down to what a reader acts on", () => {
    assert.equal(
      transportReason("No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: "),
      "connect ECONNREFUSED 127.0.0.1:1",
    );
    assert.equal(transportReason("Failed to connect before the deadline"), "Failed to connect before the deadline");
  });
});
