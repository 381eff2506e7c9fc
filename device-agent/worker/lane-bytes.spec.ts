import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it, mock } from "node:test";
import type { WorkerToAgent } from "../../protos/index.ts";
import { LANE_BYTES_REPORT_MS, LaneBytesReporter, type LaneByteTotals } from "./lane-bytes.ts";

describe("LaneBytesReporter", () => {
  beforeEach(() => mock.timers.enable({ apis: ["setInterval"] }));
  afterEach(() => mock.timers.reset());

  it("reports the lane's totals once a second while they change, and once more at the end", () => {
    const told: WorkerToAgent[] = [];
    let now: LaneByteTotals = { toBoard: 0, fromBoard: 0 };
    const r = new LaneBytesReporter(
      "s1",
      () => now,
      (m) => told.push(m),
    );
    mock.timers.tick(LANE_BYTES_REPORT_MS);
    assert.deepEqual(told, [], "nothing moved: nothing said");
    now = { toBoard: 10, fromBoard: 3 };
    mock.timers.tick(LANE_BYTES_REPORT_MS - 1);
    assert.deepEqual(told, [], "not before the second is up");
    mock.timers.tick(1);
    mock.timers.tick(LANE_BYTES_REPORT_MS);
    assert.deepEqual(told, [{ lane_bytes: { session_id: "s1", to_board: 10, from_board: 3 } }], "once, not again while unchanged");
    now = { toBoard: 10, fromBoard: 8 };
    r.finish();
    assert.deepEqual(told.at(-1), { lane_bytes: { session_id: "s1", to_board: 10, from_board: 8 } });
    mock.timers.tick(5 * LANE_BYTES_REPORT_MS);
    assert.equal(told.length, 2, "nothing after the end");
  });

  it("says nothing for a lane that is not its to count (relay, grpc)", () => {
    const told: WorkerToAgent[] = [];
    const r = new LaneBytesReporter(
      "s1",
      () => undefined,
      (m) => told.push(m),
    );
    mock.timers.tick(3 * LANE_BYTES_REPORT_MS);
    r.finish();
    assert.deepEqual(told, []);
  });
});
