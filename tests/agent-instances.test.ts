/**
 * One agent token, many agents: the pods of a Kubernetes Deployment or
 * DaemonSet share one token and attach as `TOKEN@INSTANCE` (their pod name),
 * side by side, where a second live agent of one name is refused. No token
 * reaches another token's names.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connectTracker, type TrackerClient } from "../host-sdk/index.ts";
import { runCli, startAgentProcess, startTrackerProcess, waitFor, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

async function createToken(file: string, name: string, kind: string, keys: string): Promise<string> {
  const made = await runCli(["token", "create", "--tokens", file, "--name", name, "--kind", kind, "--keys", keys]);
  assert.equal(made.code, 0, made.stderr);
  return /kf1\.[0-9a-f]{12}\.[A-Za-z0-9_-]{43}/.exec(made.stdout)![0];
}

describe("agents of one token", () => {
  let dir: string;
  let tracker: TrackerProcess;
  let client: TrackerClient;
  let pool: string;
  const agents: AgentProcess[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "kfarm-instances-"));
    const file = join(dir, "tokens.json");
    pool = await createToken(file, "pool", "agent", "vta");
    const user = await createToken(file, "user", "client", "vta");
    tracker = await startTrackerProcess(["--tokens", file]);
    client = await connectTracker(tracker.address, { token: user });
  });
  after(async () => {
    client?.close();
    for (const a of agents) await a.stop();
    await tracker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("attach side by side as TOKEN@INSTANCE", async () => {
    for (const instance of ["pod-a", "pod-b"]) {
      agents.push(await startAgentProcess(tracker.address, ["vta-sim:key=vta,name=vta0"], ["--token", pool, "--name", `pool@${instance}`]));
    }
    const ids = ["pool@pod-a/vta0", "pool@pod-b/vta0"];
    await waitFor("both agents' boards, free", async () => {
      const s = await client.summary();
      return ids.every((id) => s.boards.some((b) => b.id === id && b.state === "free"));
    });
  });

  it("refuses a name outside the token's", async () => {
    for (const name of ["other@pod-c", "pool@", "pool@pod/c"]) {
      const stray = await startAgentProcess(tracker.address, ["vta-sim:key=vta,name=vta0"], ["--token", pool, "--name", name]);
      try {
        await waitFor(`the refusal of ${name}`, () => stray.stderr().includes(`token 'pool' attaches as agent 'pool', not '${name}'`), 10_000);
      } finally {
        await stray.stop();
      }
    }
    const s = await client.summary();
    assert.deepEqual(s.boards.map((b) => b.id).sort(), ["pool@pod-a/vta0", "pool@pod-b/vta0"], "the refused agents displaced no one");
  });
});
