/**
 * runtime/named-timers.ts on node:test's mock clock (and, for `unref`, on
 * the real one, where only the event loop can tell).
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it, mock } from "node:test";
import { NamedTimers } from "./named-timers.ts";

describe("named timers", () => {
  beforeEach(() => mock.timers.enable({ apis: ["setTimeout"] }));
  afterEach(() => mock.timers.reset());

  it("fire once, when due", () => {
    const timers = new NamedTimers<string>();
    const fired: string[] = [];
    timers.start("open", 1000, () => fired.push("open"));
    mock.timers.tick(999);
    assert.deepEqual(fired, []);
    mock.timers.tick(1);
    assert.deepEqual(fired, ["open"]);
    mock.timers.tick(10_000);
    assert.deepEqual(fired, ["open"]);
  });

  it("are disarmed by name, the others left armed", () => {
    const timers = new NamedTimers<string>();
    const fired: string[] = [];
    timers.start("open", 1000, () => fired.push("open"));
    timers.start("session", 2000, () => fired.push("session"));
    timers.cancel("open");
    mock.timers.tick(2000);
    assert.deepEqual(fired, ["session"]);
  });

  it("take a cancel of a name not armed, or fired already, as nothing to do", () => {
    const timers = new NamedTimers<string>();
    const fired: string[] = [];
    timers.cancel("never");
    timers.start("grace", 10, () => fired.push("grace"));
    mock.timers.tick(10);
    timers.cancel("grace");
    assert.deepEqual(fired, ["grace"]);
  });

  it("replace a name started again while armed: only the new one fires, when it is due", () => {
    const timers = new NamedTimers<string>();
    const fired: string[] = [];
    timers.start("drain", 1000, () => fired.push("first"));
    mock.timers.tick(500);
    timers.start("drain", 1000, () => fired.push("second"));
    mock.timers.tick(999);
    assert.deepEqual(fired, []);
    mock.timers.tick(1);
    assert.deepEqual(fired, ["second"]);
    mock.timers.tick(10_000);
    assert.deepEqual(fired, ["second"]);
  });

  it("forget a name before it fires, so that what it fires may arm it again (and cancel that)", () => {
    const timers = new NamedTimers<string>();
    let fired = 0;
    const arm = (): void => timers.start("canary", 100, () => (fired++, arm()));
    arm();
    mock.timers.tick(100);
    mock.timers.tick(100);
    assert.equal(fired, 2);
    timers.cancel("canary");
    mock.timers.tick(1000);
    assert.equal(fired, 2);
  });

  it("key by value: the same string from elsewhere names the same timer", () => {
    const timers = new NamedTimers<string>();
    const fired: string[] = [];
    const worker = 3;
    timers.start(`grace:${worker}`, 100, () => fired.push("grace"));
    timers.cancel(["grace", worker].join(":"));
    mock.timers.tick(100);
    assert.deepEqual(fired, []);
  });
});

describe("named timers on the real clock", () => {
  const pending = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

  it("keep the process alive unless started with unref", () => {
    const timers = new NamedTimers<string>();
    const before = pending();
    timers.start("grace", 60_000, () => assert.fail("cancelled before it is due"));
    assert.equal(pending(), before + 1);
    timers.start("canary", 60_000, () => assert.fail("cancelled before it is due"), { unref: true });
    assert.equal(pending(), before + 1);
    timers.cancel("grace");
    timers.cancel("canary");
    assert.equal(pending(), before);
  });
});
