/**
 * examples/tune-vta-conv2d.ts runs as CI would run it: an embedded farm of
 * vta-sim boards, a short schedule search, every measured candidate checked,
 * the results file and the best-so-far plot written where --out says.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, it } from "node:test";
import { MEASURE_OUTCOMES, type MeasureResult } from "../host-sdk/index.ts";

const run = promisify(execFile);
const out = mkdtempSync(join(tmpdir(), "kfarm-tune-vta-test-"));
after(() => rmSync(out, { recursive: true, force: true }));

it("examples/tune-vta-conv2d.ts tunes 24 schedules on an embedded farm, checks them and writes results and a plot", async () => {
  const script = fileURLToPath(new URL("../examples/tune-vta-conv2d.ts", import.meta.url));
  const { stdout } = await run(process.execPath, ["--import", "tsx", script, "--candidates", "24", "--out", out], {
    env: { ...process.env, KFARM_LOG: "error" },
    timeout: 60_000,
  }); // rejects on a non-zero exit
  const lines = readFileSync(join(out, "tune-vta-conv2d.jsonl"), "utf8").trim().split("\n");
  assert.equal(lines.length, 24);
  const results = lines.map((l) => JSON.parse(l) as MeasureResult);
  for (const r of results) assert.ok((MEASURE_OUTCOMES as readonly string[]).includes(r.outcome), r.outcome);
  assert.equal(new Set(results.map((r) => r.id)).size, 24, "no schedule measured twice");
  const ok = results.filter((r) => r.outcome === "OK");
  assert.ok(ok.length >= 1, "at least one schedule ran");
  assert.deepEqual(
    results.filter((r) => r.outcome !== "OK" && r.outcome !== "COMPILE_ERROR"),
    [],
    "only schedules that do not fit fail",
  );
  for (const r of ok) assert.ok(r.stats!.cycle_count! > 0 && r.timing!.median > 0);
  assert.match(stdout, /best schedules \(of \d+ OK\)/);
  assert.match(stdout, /best [\d,]+ cycles; default [\d,]+ cycles; worst OK [\d,]+ cycles/);
  assert.match(stdout, new RegExp(`outcomes: OK ${ok.length}\\b`));
  const svg = join(out, "tune-vta-conv2d.svg");
  assert.ok(existsSync(svg));
  assert.match(readFileSync(svg, "utf8"), /<polyline [^>]*points="[\d.]+,[\d.]+/);
});
