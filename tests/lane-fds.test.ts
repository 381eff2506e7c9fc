/**
 * The tracker's file descriptors across many sessions on every lane, with
 * TLS on every port (issue 27: relay lanes under TLS left 12–18 descriptors
 * behind per 40 sessions, their sockets gone from /proc/net/tcp). Real
 * tracker and agent processes, certificates from `kfarm certs init`: after
 * ROUNDS × PER_ROUND sessions per route (request → listdir → close, one after
 * another on one board, a new client each round, as the report did), the
 * tracker's open descriptors come back to where they were, within a small
 * slack.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connectTracker, type TrackerClient } from "../host-sdk/index.ts";
import { runCli, startAgentProcess, startTrackerProcess, waitFor, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

const ROUNDS = 5;
const PER_ROUND = 40;
/** Descriptors the tracker may hold above its baseline once the sessions are over: a connection a client keeps, a timer's, a log's. */
const SLACK = 4;

describe("tracker descriptors across sessions, TLS on every lane", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;
  let security: { tls: { caFile: string } };
  const fds = () => readdirSync(`/proc/${tracker.proc.pid}/fd`).length;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), "kf-fds-"));
    const certs = await runCli(["certs", "init", dir]);
    assert.equal(certs.code, 0, certs.stderr);
    const f = (name: string) => join(dir, name);
    tracker = await startTrackerProcess(["--tls-cert", f("server.crt"), "--tls-key", f("server.key")]);
    assert.ok(tracker.tls);
    agent = await startAgentProcess(
      tracker.address,
      ["cpu:key=cpu"],
      ["--tls-ca", f("ca.crt"), "--data-tls-cert", f("server.crt"), "--data-tls-key", f("server.key")],
    );
    security = { tls: { caFile: f("ca.crt") } };
    client = await connectTracker(tracker.address, security);
    await waitForFreeBoards(client, 1);
  });
  after(async () => {
    client?.close();
    await agent?.stop();
    await tracker?.stop();
  });

  for (const route of ["direct", "relay", "grpc"] as const) {
    it(`${ROUNDS * PER_ROUND} sessions on the ${route} lane: the tracker's descriptors come back`, async () => {
      // One session first: whatever a route opens once (a pooled connection) is in the baseline.
      const warm = await client.request("cpu", { route });
      await warm.listdir();
      await warm.close();
      await waitForFreeBoards(client, 1);
      const base = fds();
      for (let round = 0; round < ROUNDS; round++) {
        const host = await connectTracker(tracker.address, security);
        try {
          for (let i = 0; i < PER_ROUND; i++) {
            const s = await host.request("cpu", { route });
            assert.equal(s.lane, route);
            assert.deepEqual(await s.listdir(), []);
            await s.close();
          }
        } finally {
          host.close();
        }
      }
      await waitForFreeBoards(client, 1);
      const peak = fds();
      // Closes finish after the sessions' ends: wait for the count, not a time.
      await waitFor(`the tracker's descriptors back to ${base} (+${SLACK}); ${peak} right after the sessions`, () => fds() <= base + SLACK, 15_000, 50).catch(
        (err: Error) => {
          throw new Error(`${err.message}; now ${fds()}`);
        },
      );
    });
  }
});
