import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { diagnoseTransport } from "./credentials.ts";

describe("diagnoseTransport", () => {
  // Its callers start it with `void` (device-agent/agent/tracker-link.ts, host-sdk/tracker-client.ts): a rejection would go unhandled.
  it("never rejects: an address tls.connect throws on is no diagnosis", async () => {
    for (const address of ["127.0.0.1:99999", "nohost", "[::1]:x"]) assert.equal(await diagnoseTransport(address, false, 200), undefined, address);
  });
});
