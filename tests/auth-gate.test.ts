/**
 * The tracker authenticates before it reads (tracker/call-gate.ts), against
 * real tracker and agent processes on a farm with tokens: a token-less flood
 * of 15 MiB Summary requests (16 connections × 5 streams, bounded) is
 * answered UNAUTHENTICATED, the tracker's memory stays bounded, and a live
 * session and its agent go on through it. A caller with a token is held to
 * each method's message limit.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { FarmError } from "../protos/index.ts";
import { CHANNEL_OPTIONS, callMetadata } from "../runtime/index.ts";
import { connectTracker, type TrackerClient } from "../host-sdk/index.ts";
import { TokenFile } from "../tracker/index.ts";
import { FLOOD_BODY_BYTES, FLOOD_CONNECTIONS, FLOOD_STREAMS, summaryFlood } from "./helpers/flood.ts";
import { statusKiB } from "./helpers/procfs.ts";
import { startAgentProcess, startTrackerProcess, waitFor, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

/** What the flood may add to the tracker's resident memory at its peak. */
const MAX_GROWTH_MIB = 64;

describe("authenticate before reading", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let host: TrackerClient;
  let alice: string;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), "kf-gate-"));
    const file = new TokenFile(join(dir, "tokens.json"));
    alice = file.create({ name: "alice", kind: "client", keys: ["cpu"] }).token;
    const box = file.create({ name: "box", kind: "agent", keys: ["cpu"] }).token;
    tracker = await startTrackerProcess(["--tokens", join(dir, "tokens.json")]);
    agent = await startAgentProcess(tracker.address, ["cpu:key=cpu"], ["--token", box]);
    host = await connectTracker(tracker.address, { token: alice });
    await waitFor("the board", async () => (await host.summary()).boards.some((b) => b.state === "free"));
  });
  after(async () => {
    host?.close();
    await agent?.stop();
    await tracker?.stop();
  });

  it("a token-less flood of 15 MiB requests: every call UNAUTHENTICATED, memory bounded, a live session and its agent unharmed", async () => {
    const session = await host.request("cpu", { route: "grpc" });
    const agentBefore = (await host.summary()).agents;
    assert.equal(agentBefore.length, 1);
    const pid = tracker.proc.pid!;
    const rssBefore = statusKiB(pid, "VmRSS");
    let peak = rssBefore;
    const sampler = setInterval(() => (peak = Math.max(peak, statusKiB(pid, "VmRSS"))), 20);
    let result;
    try {
      result = await summaryFlood(tracker.address, { rounds: 2, untilMs: Date.now() + 30_000 });
      // The session works while it can still be flooded: a listdir between rounds.
      await session.listdir();
    } finally {
      clearInterval(sampler);
    }
    const hwm = statusKiB(pid, "VmHWM");
    assert.equal(result.calls, FLOOD_CONNECTIONS * FLOOD_STREAMS * 2);
    assert.deepEqual([...result.codes], [["UNAUTHENTICATED", result.calls]]);
    const growthMiB = (Math.max(peak, hwm) - rssBefore) / 1024;
    assert.ok(growthMiB <= MAX_GROWTH_MIB, `the tracker grew by ${growthMiB.toFixed(0)} MiB under the flood (at most ${MAX_GROWTH_MIB})`);
    // The agent stayed attached (the same attachment), and the session serves.
    const agentAfter = (await host.summary()).agents;
    assert.deepEqual(
      agentAfter.map((a) => [a.id, a.attached_at_ms]),
      agentBefore.map((a) => [a.id, a.attached_at_ms]),
    );
    assert.deepEqual(await session.listdir(), []);
    await session.close();
    assert.equal(tracker.proc.exitCode, null);
  });

  it("a caller with a token is held to each method's message limit; the grpc route still carries its 1 MiB chunks", async () => {
    const client = new grpc.Client(tracker.address, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
    try {
      const code = await new Promise<FarmError>((resolve) =>
        client.makeUnaryRequest(
          "/farm.v1.HostService/Summary",
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.alloc(FLOOD_BODY_BYTES, 0xff),
          callMetadata({ token: alice }),
          { deadline: Date.now() + 10_000 },
          (err) => resolve(FarmError.from(err)),
        ),
      );
      assert.equal(code.code, "TOO_LARGE", code.message);
      assert.match(code.message, /larger than max \(15728640 vs 65536\)/);
    } finally {
      client.close();
    }
    const session = await host.request("cpu", { route: "grpc" });
    const bytes = new Uint8Array(3 << 20).map((_, i) => i & 0xff);
    await session.upload(bytes, "big.bin");
    assert.deepEqual(
      (await session.listdir()).map((f) => [f.name, Number(f.size)]),
      [["big.bin", bytes.length]],
    );
    await session.close();
  });
});
