/**
 * examples/tune-vta-conv2d.ts runs as CI would run it: an embedded farm of
 * vta-sim boards, a short schedule search, every measured candidate checked,
 * the results file and the best-so-far plot written where --out says; it says
 * that no schedule beat the default, and why. The claim behind that verdict is
 * checked too: no schedule of the example's space is faster than the default
 * on its workload (the whole space, compiled and run in-process).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, it } from "node:test";
import { MEASURE_OUTCOMES, compileVta, vtaConv2d, type MeasureResult, type VtaConv2dSchedule } from "../host-sdk/index.ts";
import { runVtaFunction } from "../device-agent/backends/vta-sim/index.ts";
import { VTA_CONV2D_WORKLOADS, vtaConv2dSpace } from "../examples/lib/vta-conv2d-space.ts";

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
  // The verdict: the default is the best schedule measured, said plainly with the reason.
  const summary = JSON.parse(readFileSync(join(out, "tune-vta-conv2d-summary.json"), "utf8")) as {
    best: { cycles: number; schedule: string };
    default: { cycles: number; schedule: string };
    defaultIsBest: boolean;
  };
  assert.equal(summary.defaultIsBest, true);
  assert.equal(summary.best.cycles, summary.default.cycles);
  assert.match(stdout, /no schedule beat the default: it is the best schedule this search knows, because/);
  assert.match(stdout, /this conv2d is compute-bound: the compute module is busy for (9\d\.\d)% of the default's [\d,]+ cycles/);
  assert.match(stdout, /2 virtual threads hide the loads behind compute, and the largest tiles that fit the buffers move the fewest DRAM bytes/);
  assert.match(stdout, /an exhaustive sweep of this space on the default cycle model finds no faster schedule/);
  assert.doesNotMatch(stdout, /the search beat the default/);
  const svg = join(out, "tune-vta-conv2d.svg");
  assert.ok(existsSync(svg));
  assert.match(readFileSync(svg, "utf8"), /<polyline [^>]*points="[\d.]+,[\d.]+/);
});

it("no schedule in the example's space beats the default on its CI workload (the sweep behind its verdict)", () => {
  // The example's `--workload small` and knob space (examples/lib/vta-conv2d-space.ts).
  const w = VTA_CONV2D_WORKLOADS.small!;
  const space = vtaConv2dSpace(w);
  const def = vtaConv2d(w);
  const fn = def.functions[0]!;
  const args = fn.params.map((p) => new Uint8Array(p.shape!.reduce((a, b) => a * b, 1)));
  const cycles = (mod: ReturnType<typeof compileVta>) => runVtaFunction(mod.program, fn.name, args).cycles;
  const defaultCycles = cycles(def);
  let valid = 0;
  const faster: string[] = [];
  for (const ocBlock of space.ocBlock)
    for (const icBlock of space.icBlock)
      for (const hBlock of space.hBlock)
        for (const wBlock of space.wBlock)
          for (const virtualThreads of space.virtualThreads)
            for (const storeGranularity of space.storeGranularity) {
              const s: VtaConv2dSchedule = { ocBlock, icBlock, hBlock, wBlock, virtualThreads, storeGranularity };
              let mod;
              try {
                mod = compileVta({ kind: "conv2d", workload: w, schedule: s });
              } catch {
                continue; // COMPILE_ERROR: the tuner counts it, it runs nowhere
              }
              valid++;
              const c = cycles(mod);
              if (c < defaultCycles) faster.push(`${JSON.stringify(s)}: ${c} cycles`);
            }
  assert.equal(valid, 672, "the space the docs quote");
  assert.deepEqual(faster, [], `faster than the default's ${defaultCycles} cycles`);
});
