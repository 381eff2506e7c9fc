import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CLOCK_EVENT_REASONS, clockEventNames, describeThrottling, throttledOf, throttlingNames } from "./throttle.ts";

describe("NVML's clocks event reasons", () => {
  it("names each bit as nvml.h defines it", () => {
    const byBit = Object.fromEntries(CLOCK_EVENT_REASONS.map((r) => [`0x${r.bit.toString(16)}`, r.name]));
    assert.deepEqual(byBit, {
      "0x1": "gpu idle",
      "0x2": "applications clocks setting",
      "0x4": "sw power cap",
      "0x8": "hw slowdown",
      "0x10": "sync boost",
      "0x20": "sw thermal slowdown",
      "0x40": "hw thermal slowdown",
      "0x80": "hw power brake slowdown",
      "0x100": "display clock setting",
      "0x200": "board limit",
      "0x400": "reliability",
    });
    assert.deepEqual(clockEventNames(0n), []);
    assert.deepEqual(clockEventNames(0x45n), ["gpu idle", "sw power cap", "hw thermal slowdown"]);
  });

  it("names a bit it does not know by its value, and does not call it throttling", () => {
    assert.deepEqual(clockEventNames(0x1801n), ["gpu idle", "unknown reason 0x800", "unknown reason 0x1000"]);
    assert.deepEqual(throttlingNames(0x1800n), []);
  });

  it("counts power, heat and hardware slowdowns as throttling; idle and configured clocks not", () => {
    for (const bit of [0x4n, 0x8n, 0x20n, 0x40n, 0x80n, 0x200n, 0x400n]) assert.equal(throttlingNames(bit).length, 1, `0x${bit.toString(16)}`);
    for (const bit of [0x1n, 0x2n, 0x10n, 0x100n]) assert.deepEqual(throttlingNames(bit), [], `0x${bit.toString(16)}`);
    assert.deepEqual(throttlingNames(0x1ffn), ["sw power cap", "hw slowdown", "sw thermal slowdown", "hw thermal slowdown", "hw power brake slowdown"]);
  });
});

describe("describeThrottling: the conditions a timing carries", () => {
  it("idle before and nothing after, no violation time: not throttled", () => {
    const c = describeThrottling(
      { reasons: 0x1n, powerViolationNs: 500n, thermalViolationNs: 0n },
      { reasons: 0x0n, powerViolationNs: 500n, thermalViolationNs: 0n },
    );
    assert.deepEqual(c, {
      clock_event_reasons: "0x0",
      clock_event_reasons_before: "0x1",
      clock_events: "gpu idle",
      power_violation_ns: "0",
      thermal_violation_ns: "0",
      throttled: "no",
    });
    assert.equal(throttledOf(c), false);
  });

  it("a throttling reason at either end flags it, naming every reason seen", () => {
    const start = describeThrottling({ reasons: 0x40n }, { reasons: 0x0n });
    assert.equal(start.throttled, "yes: hw thermal slowdown");
    const both = describeThrottling({ reasons: 0x1n }, { reasons: 0x24n });
    assert.equal(both.throttled, "yes: sw power cap, sw thermal slowdown");
    assert.equal(both.clock_events, "gpu idle, sw power cap, sw thermal slowdown");
    assert.equal(throttledOf(both), true);
  });

  it("violation time that grew during the span flags it, though the reasons are clear at both ends", () => {
    const c = describeThrottling(
      { reasons: 0x0n, powerViolationNs: 1_000_000n, thermalViolationNs: 7n },
      { reasons: 0x0n, powerViolationNs: 2_250_000n, thermalViolationNs: 7n },
    );
    assert.equal(c.power_violation_ns, "1250000");
    assert.equal(c.thermal_violation_ns, "0");
    assert.equal(c.throttled, "yes: power violation 1.3 ms");
    const long = describeThrottling({ reasons: 0x4n, thermalViolationNs: 0n }, { reasons: 0x4n, thermalViolationNs: 42_000_000n });
    assert.equal(long.throttled, "yes: sw power cap, thermal violation 42 ms");
  });

  it("a counter that went backwards (driver reloaded) or is missing at one end says nothing", () => {
    const c = describeThrottling({ reasons: 0x0n, powerViolationNs: 9n, thermalViolationNs: 5n }, { reasons: 0x0n, powerViolationNs: 3n });
    assert.equal(c.power_violation_ns, undefined);
    assert.equal(c.thermal_violation_ns, undefined);
    assert.equal(c.throttled, "no");
  });

  it("says unknown when NVML gave nothing, and decides from the end it could read", () => {
    const none = describeThrottling({}, {});
    assert.deepEqual([none.clock_event_reasons, none.clock_event_reasons_before, none.clock_events], ["unknown", "unknown", "unknown"]);
    assert.match(none.throttled!, /^unknown: /);
    assert.equal(throttledOf(none), undefined);
    assert.equal(describeThrottling({ reasons: 0x8n }, {}).throttled, "yes: hw slowdown");
  });

  it("without a start (a board's stats) describes the one moment", () => {
    const c = describeThrottling(undefined, { reasons: 0x4n, powerViolationNs: 10n });
    assert.deepEqual(c, { clock_event_reasons: "0x4", clock_events: "sw power cap", throttled: "yes: sw power cap" });
  });
});

describe("throttledOf", () => {
  it("reads the flag back; boards that do not say give undefined", () => {
    assert.equal(throttledOf({ throttled: "no" }), false);
    assert.equal(throttledOf({ throttled: "yes: hw slowdown" }), true);
    assert.equal(throttledOf({ throttled: "unknown: no NVML" }), undefined);
    assert.equal(throttledOf({ kind: "cpu" }), undefined);
    assert.equal(throttledOf(undefined), undefined);
  });
});
