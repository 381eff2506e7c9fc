/** The README's host script runs as written, importing from "kernelfarm"; the tuning examples' wait for their boards works without a GPU. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { it } from "node:test";
import { boardsOf } from "../examples/lib/boards.ts";
import { connectTracker } from "../host-sdk/index.ts";
import type { FarmError } from "../protos/index.ts";
import { startAgentProcess, startTrackerProcess, waitFor } from "./helpers/processes.ts";

const run = promisify(execFile);

it("examples/vadd.ts runs on an embedded farm and gets the right answer", async () => {
  const script = fileURLToPath(new URL("../examples/vadd.ts", import.meta.url));
  const { stdout } = await run(process.execPath, ["--import", "tsx", script], { env: { ...process.env, KFARM_LOG: "error" }, timeout: 60_000 });
  assert.match(stdout, /c\[12345\] = 12346 \(expected 12346\)/);
  assert.match(stdout, /mean \(ms\)\s+median \(ms\)/);
});

it("examples/lib/boards.ts waits, with a request's deadline, for an agent started just after the script", async () => {
  const tracker = await startTrackerProcess();
  const client = await connectTracker(tracker.address);
  let agent: Awaited<ReturnType<typeof startAgentProcess>> | undefined;
  try {
    const boards = boardsOf(client, "late", 20_000);
    await waitFor("the example's request waiting in the queue", async () => (await client.summary()).queues.some((q) => q.key === "late" && q.pending === 1));
    agent = await startAgentProcess(tracker.address, ["cpu:key=late,name=l0", "cpu:key=late,name=l1"], ["--name", "ex"]);
    const found = await boards;
    assert.ok(found.length >= 1 && found.every((b) => b.key === "late" && b.id.startsWith("ex/")), JSON.stringify(found.map((b) => b.id)));
    // No board of the key, and none comes: the tracker's answer at the deadline names the keys it serves.
    await assert.rejects(boardsOf(client, "never", 300), (e: FarmError) => e.code === "DEADLINE_EXCEEDED" && /keys served: late/.test(e.message));
  } finally {
    client.close();
    await agent?.stop();
    await tracker.stop();
  }
});
