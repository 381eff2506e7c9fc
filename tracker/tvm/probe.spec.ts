import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { probeTvmServer } from "./probe.ts";

describe("probeTvmServer", () => {
  // Its caller (server.ts's probe()) is started with `void`: a rejection would go unhandled and leave it probing.
  it("never rejects: a port net.connect throws on is a failed probe", async () => {
    assert.match((await probeTvmServer("127.0.0.1", 99999, 200)) ?? "", /^its RPC port 127\.0\.0\.1:99999 cannot be probed: /);
  });
});
