/**
 * Every JSON line a farm writes has unique keys (JSON.parse silently keeps
 * the last of a repeated key): a tracker with its TVM port and live view and
 * an agent, at debug level, through a session's life.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect } from "node:net";
import { describe, it } from "node:test";
import { connectTracker } from "../host-sdk/index.ts";
import { compileVadd } from "./helpers/kernels.ts";
import { repeatedKeys } from "./helpers/json-keys.ts";
import { startAgentProcess, startTrackerProcess, waitFor, waitForFreeBoards } from "./helpers/processes.ts";

describe("the farm's log lines", () => {
  it("are JSON objects with unique keys, at every level", async () => {
    const env = { env: { KFARM_LOG: "debug" } };
    const tracker = await startTrackerProcess(["--tvm-port", "0", "--metrics-port", "0"], 0, env);
    const agent = await startAgentProcess(tracker.address, ["cpu:key=cpu,name=c0", "vta-sim:key=vta,name=v0"], ["--name", "logs"], env);
    try {
      const client = await connectTracker(tracker.address);
      await waitForFreeBoards(client, 2);
      const s = await client.request("cpu");
      const module = await compileVadd();
      await s.upload(module);
      await s.loadModule(module.name);
      await s.close();
      client.close();
      await fetch(`http://${tracker.httpAddress}/`);
      // A wrong magic on the TVM port: the port's own lines (its logger is a child of the tracker's).
      const [host, port] = tracker.tvmAddress!.split(/:(?=\d+$)/) as [string, string];
      const socket = connect(Number(port), host);
      socket.on("error", () => {});
      socket.end(Buffer.from([1, 2, 3, 4]));
      await once(socket, "close");
      await waitFor("the TVM port's refusal in the log", () => /tvm port: closing the connection from/.test(tracker.stderr()));
    } finally {
      await agent.stop();
      await tracker.stop();
    }
    const lines = [...tracker.stderr().split("\n"), ...agent.stderr().split("\n")].filter((l) => l.trim() !== "");
    assert.ok(lines.length > 5, `a farm at debug level says something: ${lines.length} lines`);
    for (const line of lines) {
      assert.ok(line.startsWith("{"), `not a JSON line: ${line}`);
      assert.deepEqual(repeatedKeys(line), [], `a key repeated in: ${line}`);
    }
  });
});
