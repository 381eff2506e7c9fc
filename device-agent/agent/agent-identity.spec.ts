import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { isRunning, parseIdentity, selfIdentity } from "./agent-identity.ts";

/** This process's start time, in clock ticks since boot, as /proc says. */
function ownStart(): number {
  const stat = readFileSync(`/proc/${process.pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
}

describe("agent identity", () => {
  it("a live holder is running, as it wrote itself", () => {
    const me = parseIdentity(selfIdentity());
    assert.ok(me?.start, "a start time is written where /proc has one");
    assert.equal(isRunning(me), true);
  });

  it("a start time a few ticks off is the same process: qemu-user's emulated /proc/self/stat is 3 ticks after the kernel's", () => {
    assert.equal(isRunning({ pid: process.pid, start: String(ownStart() + 3) }), true);
    assert.equal(isRunning({ pid: process.pid, start: String(ownStart() - 3) }), true);
  });

  it("a start time seconds away is another process given the same pid: the holder is dead", () => {
    // The holder started 10 s before the process that has its pid now (the pid was reused), or after it.
    assert.equal(isRunning({ pid: process.pid, start: String(ownStart() - 1000) }), false);
    assert.equal(isRunning({ pid: process.pid, start: String(ownStart() + 1000) }), false);
  });
});
