/**
 * measure() against real tracker and agent processes: every outcome of the
 * closed set, one result per candidate whatever happens, correctness checked
 * before and after timing with poisoned outputs, an agent killed mid-batch
 * (its candidate retried on the other board), a key no board serves, and
 * resumption from a partial results file, and re-measurement of results a
 * test flags.
 */
import assert from "node:assert/strict";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  DEFAULT_REMEASURE_TIMES,
  Measurer,
  RemoteArray,
  compileCpu,
  connectTracker,
  measure,
  type Candidate,
  type CompiledModule,
  type MeasureReport,
  type MeasureResult,
  type TrackerClient,
} from "../host-sdk/index.ts";
import type { AnyTypedArray, FarmError } from "../protos/index.ts";
import { randomArray } from "../domain/index.ts";
import { names, refused } from "./helpers/assertions.ts";
import { startAgentProcess, startTrackerProcess, waitFor, waitForFreeBoards } from "./helpers/processes.ts";

const SOURCE = `
#include <stdint.h>
void good(const float* a, const float* b, float* c, int32_t n) { for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i]; }
void wrong(const float* a, const float* b, float* c, int32_t n) { for (int32_t i = 0; i < n; i++) c[i] = a[i] - b[i]; }
void half(const float* a, const float* b, float* c, int32_t n) { for (int32_t i = 0; i < n / 2; i++) c[i] = a[i] + b[i]; }
static int runs = 0;
void drifts(const float* a, const float* b, float* c, int32_t n) { runs++; for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i] + (runs > 3 ? 1.0f : 0.0f); }
void crash(const float* a, const float* b, float* c, int32_t n) { volatile int* p = (int*)0; *p = n; }
void spin(const float* a, const float* b, float* c, int32_t n) { volatile int x = 1; while (x) {} }
void slow(const float* a, const float* b, float* c, int32_t n) { for (volatile int32_t k = 0; k < 2000000; k++) {} for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i]; }
`;
const PARAMS = ["float32* a", "float32* b", "float32* c", "int32 n"];
const N = 64;
const A = Float32Array.from({ length: N }, (_, i) => i);
const B = Float32Array.from({ length: N }, (_, i) => 0.5 * i);
const WANT = Float32Array.from({ length: N }, (_, i) => 1.5 * i);

function candidate(fn: string, module: CompiledModule | (() => Promise<CompiledModule>), id?: string): Candidate {
  return { id, module, function: fn, args: [{ input: A }, { input: B }, { output: { shape: [N], dtype: "float32" }, expect: WANT }, { scalar: N }] };
}

describe("measure()", () => {
  let dir: string;
  let tracker: Awaited<ReturnType<typeof startTrackerProcess>>;
  let agents: Awaited<ReturnType<typeof startAgentProcess>>[];
  let client: TrackerClient;
  let module: CompiledModule;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "kfarm-measure-"));
    tracker = await startTrackerProcess();
    agents = await Promise.all(["m1", "m2"].map((name) => startAgentProcess(tracker.address, ["cpu:key=cpu"], ["--name", name])));
    client = await connectTracker(tracker.address);
    await waitForFreeBoards(client, 2);
    module = await compileCpu(SOURCE, { functions: Object.fromEntries(["good", "wrong", "half", "drifts", "crash", "spin", "slow"].map((f) => [f, PARAMS])) });
  });
  after(async () => {
    client?.close();
    for (const a of agents ?? []) await a.stop();
    await tracker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("gives every candidate its outcome, one result each, in order", async () => {
    const broken = () => compileCpu("void good(float* a) { oops }", { functions: { good: ["float32* a"] } });
    const cands = [
      candidate("good", module),
      candidate("wrong", module),
      candidate("half", module),
      candidate("drifts", module),
      candidate("crash", module),
      candidate("spin", module),
      candidate("good", broken),
      candidate("nosuch", module),
      candidate("good", module),
    ];
    const results = await measure(client, cands, { key: "cpu", timeoutMs: 1500, timeEvaluator: { number: 3, repeat: 2 }, progress: false });
    assert.equal(results.length, cands.length);
    const outcomes = results.map((r) => r.outcome);
    assert.deepEqual(outcomes, ["OK", "WRONG_ANSWER", "WRONG_ANSWER", "WRONG_ANSWER", "RUNTIME_ERROR", "TIMEOUT", "COMPILE_ERROR", "LOAD_ERROR", "OK"]);
    assert.match(results[1]!.message!, /before timing: element 1 is 0\.5, expected 1\.5/);
    // Unwritten elements still hold the poison.
    assert.match(results[2]!.message!, /before timing: element 32 is /);
    assert.match(results[3]!.message!, /after timing: element 0 is 1, expected 0/);
    assert.match(results[4]!.message!, /RUNTIME_CRASH/);
    assert.match(results[6]!.message!, /COMPILE_ERROR: .*kernel\.c/);
    assert.match(results[7]!.message!, /nosuch/);
    // Every result names its board when one was involved: the crash, the hang and the load error too; the compile error none.
    for (const i of [1, 4, 5, 7]) assert.match(results[i]!.board ?? "", /^m[12]\/cpu0$/, `${outcomes[i]} names its board`);
    assert.equal(results[6]!.board, undefined);
    for (const r of [results[0]!, results[8]!]) {
      assert.equal(r.timing!.results.length, 2);
      assert.ok(r.timing!.median > 0);
      assert.ok(r.timing!.rse! >= 0, "the precision achieved, with each result");
      const timed = r.timing!.results.reduce((a, b) => a + b, 0) * r.timing!.number * 1e9;
      assert.ok(
        r.stats!.measure_wall_ns! > timed,
        `the board's wall time for the candidate (${r.stats!.measure_wall_ns} ns) holds its timed calls (${timed} ns)`,
      );
      assert.equal(r.timing!.stoppedBy, undefined, "no target: no reason to give");
      assert.match(r.board!, /^m[12]\/cpu0$/);
      // The counters are the candidate's own: 2 checked calls + the warm-up + 3 × 2 timed.
      assert.equal(r.stats!.calls, 9);
      assert.equal(r.attempts, 1);
    }
    await waitForFreeBoards(client, 2);
  });

  it("takes a precision target and reports, with each result, the precision reached and what stopped it", async () => {
    const [loose, hopeless] = await Promise.all([
      measure(client, [candidate("good", module)], { key: "cpu", timeEvaluator: { number: 3, repeat: 3, targetRse: 0.5, budgetMs: 2000 }, progress: false }),
      measure(client, [candidate("good", module)], { key: "cpu", timeEvaluator: { number: 1, repeat: 2, targetRse: 1e-12, budgetMs: 150 }, progress: false }),
    ]);
    const [l, h] = [loose[0]!, hopeless[0]!];
    assert.deepEqual([l.outcome, h.outcome], ["OK", "OK"]);
    assert.equal(l.timing!.stoppedBy, "precision");
    assert.ok(l.timing!.rse! <= 0.5 && l.timing!.results.length >= 3);
    assert.equal(h.timing!.stoppedBy, "budget");
    assert.ok(h.timing!.rse! > 1e-12 && h.timing!.results.length > 2, "it kept repeating until the budget ended");
  });

  it("re-measures a result its test flags, on the same session, counting the timings; the results file keeps them and resumes", async () => {
    const file = join(dir, "remeasure.jsonl");
    const seen: { id: string; median: number; board: string }[] = [];
    const timesSeen = (id: string) => seen.filter((s) => s.id === id).length;
    // The first timing of "once" is flagged, every timing of "always", none of "never".
    const when = (r: MeasureResult) => {
      assert.equal(r.outcome, "OK");
      seen.push({ id: r.id, median: r.timing!.median, board: r.board! });
      return r.id === "always" || (r.id === "once" && timesSeen("once") === 1);
    };
    const cands = [
      candidate("good", module, "once"),
      candidate("good", module, "always"),
      candidate("good", module, "never"),
      candidate("wrong", module, "bad"),
    ];
    const opts = { key: "cpu", progress: false, resultsFile: file, timeEvaluator: { number: 2, repeat: 2 } };
    const results = await measure(client, cands, { ...opts, remeasure: { when } });
    assert.deepEqual(
      results.map((r) => [r.id, r.outcome, r.measurements, r.flagged, r.attempts]),
      [
        ["once", "OK", 2, undefined, 1],
        ["always", "OK", 1 + DEFAULT_REMEASURE_TIMES, true, 1],
        ["never", "OK", undefined, undefined, 1],
        ["bad", "WRONG_ANSWER", undefined, undefined, 1],
      ],
    );
    assert.deepEqual(
      [timesSeen("once"), timesSeen("always"), timesSeen("never"), timesSeen("bad")],
      [2, 3, 1, 0],
      "the test saw every timing of an OK result, and no other",
    );
    for (const r of results.slice(0, 3)) {
      const mine = seen.filter((s) => s.id === r.id);
      assert.equal(r.timing!.median, mine[mine.length - 1]!.median, `${r.id}: the result is its last timing`);
      assert.ok(
        mine.every((s) => s.board === r.board),
        `${r.id}: every timing on one board's session`,
      );
      // A re-measure is a whole Measure request without the checks: a call before and after, the warm-up and 2 × 2 timed.
      assert.equal(r.stats!.calls, 7);
      assert.equal(r.throttled, undefined, "a CPU board does not say");
    }
    const lines = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as MeasureResult);
    assert.deepEqual(
      lines.sort((a, b) => a.index - b.index),
      results,
      "each line is the candidate's final result",
    );

    // Resumed: nothing is measured, or tested, again.
    const again = await measure(client, cands, { ...opts, remeasure: { when: () => assert.fail("a resumed result is not tested again") } });
    assert.deepEqual(again, results);

    // Default off; `times` checked before anything runs; a test that throws stops the batch.
    const plain = await measure(client, [candidate("good", module)], { key: "cpu", progress: false, timeEvaluator: { number: 1, repeat: 1 } });
    assert.deepEqual([plain[0]!.outcome, plain[0]!.measurements, plain[0]!.flagged], ["OK", undefined, undefined]);
    await assert.rejects(
      measure(client, cands, { key: "cpu", progress: false, remeasure: { times: 1.5 } }),
      (e: FarmError) => e.code === "INVALID_ARGUMENT" && /remeasure\.times/.test(e.message),
    );
    const boom = () => {
      throw new Error("boom");
    };
    await assert.rejects(
      measure(client, [candidate("good", module, "x")], { key: "cpu", progress: false, timeEvaluator: { number: 1, repeat: 1 }, remeasure: { when: boom } }),
      (e: FarmError) => e.code === "INVALID_ARGUMENT" && /remeasure\.when threw for candidate x: boom/.test(e.message),
    );
    await waitForFreeBoards(client, 2);
  });

  it("candidates of the same shapes get their own inputs (arrays are reused between candidates, data is not)", async () => {
    const cands = [1, 2, 3, 4, 5, 6].map((k): Candidate => {
      const a = Float32Array.from({ length: N }, (_, i) => k * i);
      return {
        id: `k${k}`,
        module,
        function: "good",
        args: [{ input: a }, { input: B }, { output: { shape: [N], dtype: "float32" }, expect: a.map((v, i) => v + B[i]!) }, { scalar: N }],
      };
    });
    const results = await measure(client, cands, { key: "cpu", boards: 1, progress: false, timeEvaluator: { number: 2, repeat: 1 } });
    assert.deepEqual(
      results.map((r) => r.outcome),
      cands.map(() => "OK"),
      JSON.stringify(results.map((r) => r.message)),
    );
    // And a big input (several 1 MiB chunks), twice on one session.
    const big = Float32Array.from({ length: 600_000 }, (_, i) => i % 977);
    const bigCands = [0, 1].map((k): Candidate => {
      const a = big.map((v) => v + k);
      return {
        id: `big${k}`,
        module,
        function: "good",
        args: [
          { input: a },
          { input: big },
          { output: { shape: [big.length], dtype: "float32" }, expect: a.map((v, i) => v + big[i]!) },
          { scalar: big.length },
        ],
      };
    });
    const bigResults = await measure(client, bigCands, { key: "cpu", boards: 1, progress: false, timeEvaluator: { number: 1, repeat: 1 } });
    assert.deepEqual(
      bigResults.map((r) => r.outcome),
      ["OK", "OK"],
      JSON.stringify(bigResults.map((r) => r.message)),
    );
    await waitForFreeBoards(client, 2);
  });

  it("a reference larger than a message is held on the board, sent once for the candidates that share it", async () => {
    // 3 Mi floats: 12 MiB of reference per output, three candidates; inline they would not fit one Measure request with the others.
    const n = 3 << 20;
    const a = { random: { seed: 5, low: -4, high: 4, integers: true }, shape: [n], dtype: "float32" as const };
    const big = (fn: string, id: string): Candidate => ({
      id,
      module,
      function: fn,
      args: [a, a, { output: { shape: [n], dtype: "float32" } }, { scalar: n }],
      reference: ([x]) => [Float32Array.from(x as Float32Array, (v) => 2 * v)],
    });
    const results = await measure(client, [big("good", "g1"), big("wrong", "w"), big("good", "g2")], {
      key: "cpu",
      boards: 1,
      progress: false,
      timeEvaluator: { number: 1, repeat: 1 },
    });
    assert.deepEqual(
      results.map((r) => r.outcome),
      ["OK", "WRONG_ANSWER", "OK"],
      JSON.stringify(results.map((r) => r.message)),
    );
    assert.match(results[1]!.message!, /output 0 before timing: element \d+ is 0, expected -?\d+/);
  });

  it("a held reference the board cannot use is refused by name: another dtype, another size, no such array; the session goes on", async () => {
    const s = await client.request("cpu");
    try {
      await s.upload(module);
      const m = await s.loadModule(module.name);
      const [a, b, c] = await Promise.all([s.array(A), s.array(B), s.array({ shape: [N], dtype: "float32" })]);
      const check = (expect: RemoteArray) => s.measureCall(m, "good", [a, b, c, N], [{ array: c, expect, atol: 0, rtol: 0 }], { number: 1, repeat: 1 });
      names(await refused(check(await s.array(Int32Array.from(WANT))), "BAD_ARGUMENTS"), "reference array", "int32", "float32");
      names(await refused(check(await s.array(WANT.subarray(1))), "BAD_ARGUMENTS"), `${(N - 1) * 4} bytes`, `${N * 4}`);
      names(await refused(check(new RemoteArray(s, 4242, [N], "float32", N * 4)), "NOT_FOUND"), "no array 4242");
      const ok = await check(await s.array(WANT));
      assert.equal(ok.wrong, "");
    } finally {
      await s.close();
    }
  });

  it("seeded inputs are generated on the board, equal to the host's; a reference function checks them, once per inputs", async () => {
    // The board's bytes must equal randomArray's bit for bit: float addition of the same inputs is exact.
    const s = await client.request("cpu", { deadlineMs: 20_000 });
    try {
      const onBoard = await s.array({ shape: [1000], dtype: "float32", random: { seed: 11, low: -4, high: 4 } });
      assert.deepEqual(await onBoard.toArray(), randomArray("float32", 1000, { seed: 11, low: -4, high: 4 }));
      const ints = await s.array({ shape: [4, 8], dtype: "int8", random: { seed: 5 } });
      assert.deepEqual(await ints.toArray(), randomArray("int8", 32, { seed: 5 }));
      // The board refuses a fill the host SDK would have refused (sent raw, past the SDK's own check).
      await assert.rejects(
        (s as unknown as { request(f: object): Promise<unknown> }).request({ array_fill: { array: ints.id, seed: 1, low: 0, high: 1000 } }),
        (e: FarmError) => e.code === "BAD_ARGUMENTS" && /does not fit int8/.test(e.message),
      );
      await assert.rejects(ints.fill({ seed: 1, low: 3, high: 2 }), (e: FarmError) => e.code === "BAD_ARGUMENTS" && /empty/.test(e.message));
      assert.deepEqual(await onBoard.toArray(), randomArray("float32", 1000, { seed: 11, low: -4, high: 4 }), "the session goes on");
    } finally {
      await s.close();
    }

    let calls = 0;
    const reference = ([a, b]: AnyTypedArray[]) => {
      calls++;
      return [Float32Array.from(a as Float32Array, (x, i) => x + (b as Float32Array)[i]!)];
    };
    const seeded = (fn: string, seed: number): Candidate => ({
      module,
      function: fn,
      reference,
      args: [
        { random: { seed }, shape: [N], dtype: "float32" },
        { random: { seed: seed + 1 }, shape: [N], dtype: "float32" },
        { output: { shape: [N], dtype: "float32" } },
        { scalar: N },
      ],
    });
    const cands = [seeded("good", 1), seeded("good", 1), seeded("wrong", 1), seeded("good", 1), seeded("good", 7), seeded("half", 7)];
    const results = await measure(client, cands, { key: "cpu", timeEvaluator: { number: 2, repeat: 1 }, progress: false });
    assert.deepEqual(
      results.map((r) => r.outcome),
      ["OK", "OK", "WRONG_ANSWER", "OK", "OK", "WRONG_ANSWER"],
    );
    assert.match(results[2]!.message!, /before timing: element \d+ is /);
    assert.equal(calls, 2, "one reference per distinct inputs (seeds 1 and 7)");
  });

  it("refuses candidates it cannot measure as written, naming them, before any board work", async () => {
    const base = candidate("good", module, "x");
    const refusals: [Candidate, RegExp][] = [
      [
        { ...base, args: [{ random: { seed: 1, low: 0, high: 300 }, shape: [N], dtype: "int8" }] },
        /candidate x: argument 0, a random int8 input: .*does not fit int8/,
      ],
      [{ ...base, reference: () => [WANT] }, /candidate x: argument 2 has an expect and the candidate a reference function/],
      [{ ...base, args: [{ input: A }], reference: () => [] }, /candidate x: a reference function, but no output arguments/],
    ];
    for (const [c, why] of refusals) {
      await assert.rejects(measure(client, [c], { key: "cpu", progress: false }), (e: FarmError) => e.code === "INVALID_ARGUMENT" && why.test(e.message));
    }
    // A reference that fails at run time stops the batch: measure() rejects, the boards are given back.
    const noExpect = (reference: Candidate["reference"]): Candidate => ({
      ...base,
      id: undefined,
      reference,
      args: [{ input: A }, { input: B }, { output: { shape: [N], dtype: "float32" } }, { scalar: N }],
    });
    const bad: [Candidate["reference"], RegExp][] = [
      [
        () => {
          throw new Error("no numpy here");
        },
        /reference function of candidate c0 threw: no numpy here/,
      ],
      [() => [WANT, WANT], /returned 2 array\(s\) for 1 output/],
      [() => [new Int32Array(N)], /returned 64 int32 for output 0, which is 64 float32/],
    ];
    for (const [reference, why] of bad) {
      await assert.rejects(
        measure(client, [noExpect(reference)], { key: "cpu", progress: false }),
        (e: FarmError) => e.code === "INVALID_ARGUMENT" && why.test(e.message),
      );
    }
    await waitForFreeBoards(client, 2);
    const [ok] = await measure(client, [candidate("good", module)], { key: "cpu", timeEvaluator: { number: 1, repeat: 1 }, progress: false });
    assert.equal(ok!.outcome, "OK");
  });

  it("draws a progress line on stderr when asked: done / failed / running, rate, ETA", async () => {
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      await measure(client, [candidate("good", module), candidate("wrong", module), candidate("good", module)], {
        key: "cpu",
        progress: true,
        timeEvaluator: { number: 1, repeat: 1 },
      });
    } finally {
      process.stderr.write = write;
    }
    const lines = written
      .join("")
      .split("\r")
      .map((l) => l.trim())
      .filter(Boolean);
    assert.match(lines[0]!, /^measure: 0\/3 done, 0 failed, 1 running · [\d.]+\/s · ETA \d+ s$/);
    assert.match(lines[lines.length - 1]!, /^measure: 3\/3 done, 1 failed, \d running · [\d.]+\/s · ETA 0 s$/);
    assert.ok(written.join("").endsWith("\n"), "the line ends when the batch does");
  });

  it("a key no board serves: the batch waits its deadline for one to attach, then is refused naming the keys served", async () => {
    const t0 = performance.now();
    await assert.rejects(
      measure(client, [candidate("good", module), candidate("good", module)], { key: "tpu", progress: false, deadlineMs: 1500 }),
      (e: FarmError) => e.code === "NO_BOARD" && /no board serves key "tpu" \(waited 1500 ms for one to attach\); the farm serves keys cpu/.test(e.message),
    );
    assert.ok(performance.now() - t0 >= 1500, "it waited for the deadline");
  });

  it("resumes: candidates already in the results file are not measured again", async () => {
    const file = join(dir, "results.jsonl");
    const first = await measure(client, [candidate("good", module, "a"), candidate("wrong", module, "b")], {
      key: "cpu",
      resultsFile: file,
      progress: false,
      timeEvaluator: { number: 2, repeat: 1 },
    });
    assert.equal(readFileSync(file, "utf8").trim().split("\n").length, 2);
    const again = await measure(client, [candidate("good", module, "a"), candidate("wrong", module, "b"), candidate("good", module, "c")], {
      key: "cpu",
      resultsFile: file,
      progress: false,
      timeEvaluator: { number: 2, repeat: 1 },
    });
    assert.equal(readFileSync(file, "utf8").trim().split("\n").length, 3, "only the new candidate was appended");
    assert.deepEqual(
      again.slice(0, 2).map((r) => r.timing?.median),
      first.map((r) => r.timing?.median),
    );
    assert.deepEqual(
      again.map((r) => r.outcome),
      ["OK", "WRONG_ANSWER", "OK"],
    );
    await waitForFreeBoards(client, 2);
  });

  it("resumes a line only for the candidate it describes: a changed definition, an INFRA_ERROR or a line without digest is measured again, saying why; a torn last line is cut off first", async () => {
    const file = join(dir, "resume-rules.jsonl");
    const opts = { key: "cpu", resultsFile: file, progress: false, timeEvaluator: { number: 2, repeat: 1 } };
    const lines = () =>
      readFileSync(file, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as MeasureResult);
    const first = await measure(client, [{ ...candidate("good", module, "a"), definition: { source: "v1" } }, candidate("good", module, "b")], opts);
    assert.deepEqual(
      first.map((r) => r.outcome),
      ["OK", "OK"],
    );
    appendFileSync(file, `${JSON.stringify({ index: 0, id: "c", outcome: "INFRA_ERROR", message: "UNAVAILABLE: gone", attempts: 2 })}\n`);
    appendFileSync(file, `${JSON.stringify({ index: 0, id: "d", outcome: "OK", attempts: 1, timing: first[1]!.timing })}\n`);
    appendFileSync(file, '{"index":4,"id":"e","outcome":"OK","tim'); // a crash mid-write

    const again = await measure(
      client,
      [
        { ...candidate("good", module, "a"), definition: { source: "v2" } },
        candidate("good", module, "b"),
        candidate("good", module, "c"),
        candidate("good", module, "d"),
        candidate("good", module, "e"),
      ],
      opts,
    );
    assert.deepEqual(
      again.map((r) => r.outcome),
      ["OK", "OK", "OK", "OK", "OK"],
    );
    assert.equal(again[1]!.timing!.median, first[1]!.timing!.median, "b is unchanged: its line is reused");
    const recorded = lines();
    assert.equal(recorded.length, 2 + 2 + 4, "the torn fragment is gone; a, c, d and e have new lines");
    const why = Object.fromEntries(recorded.slice(4).map((r) => [r.id, r.measuredAgain]));
    assert.match(why.a!, /^its definition changed \(digest [0-9a-f]{12} → [0-9a-f]{12}\)$/);
    assert.equal(why.c, "the earlier result was INFRA_ERROR, which is never final");
    assert.equal(why.d, "the earlier line has no digest");
    assert.equal(why.e, undefined, "a torn line is no line");
    await waitForFreeBoards(client, 2);
  });

  it("is a pipeline: a slow compile holds no board, a source proposes with results in hand, and the report says where each board's time went", async () => {
    // Candidate 0's compile finishes only after four later candidates have results: with rounds, or a queue in order, that would never happen.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let results = 0;
    const seenAtProposal: number[] = [];
    let n = 0;
    const source = {
      total: 12,
      next: () => {
        if (n >= 12) return undefined;
        seenAtProposal.push(results);
        const i = n++;
        return { ...candidate("good", i === 0 ? async () => (await held, module) : module, `p${i}`) };
      },
    };
    let report: MeasureReport | undefined;
    const got = await measure(client, source, {
      key: "cpu",
      progress: false,
      timeEvaluator: { number: 2, repeat: 1 },
      queueDepth: 3,
      onResult: () => {
        if (++results === 4) release();
      },
      onReport: (r) => (report = r),
    });
    assert.deepEqual(
      got.map((r) => [r.id, r.outcome]),
      Array.from({ length: 12 }, (_, i) => [`p${i}`, "OK"]),
    );
    assert.ok(seenAtProposal.at(-1)! >= 4, `later proposals are made knowing earlier results (results seen at each proposal: ${seenAtProposal})`);
    assert.ok(report, "onReport is called when the batch ends");
    assert.equal(report!.candidates, 12);
    assert.equal(report!.queueDepth, 3);
    assert.equal(
      report!.boards.reduce((s, b) => s + b.candidates, 0),
      12,
    );
    for (const b of report!.boards) {
      assert.match(b.boards[0]!, /^m[12]\/cpu0$/);
      assert.ok(b.busy > 0 && b.busy <= 1, `busy fraction ${b.busy}`);
      const idle = Object.values(b.idle).reduce((a, x) => a + x, 0);
      assert.ok(Math.abs(b.busy * report!.seconds + idle - report!.seconds) < 0.05, "busy and idle time add up to the batch's");
    }
    await waitForFreeBoards(client, 2);
  });

  const crashOrTimeoutIsItsOwn = async (inFlightPerBoard: number) => {
    for (const bad of ["crash", "spin"]) {
      const results = await measure(
        client,
        [candidate("good", module, "before"), candidate(bad, module, bad), candidate("good", module, "after1"), candidate("good", module, "after2")],
        {
          key: "cpu",
          boards: 1,
          progress: false,
          timeoutMs: 1500,
          timeEvaluator: { number: 2, repeat: 1 },
          inFlightPerBoard,
        },
      );
      const want = bad === "crash" ? "RUNTIME_ERROR" : "TIMEOUT";
      const seen = JSON.stringify(results.map((r) => ({ outcome: r.outcome, attempts: r.attempts, board: r.board, message: r.message })));
      assert.deepEqual(
        results.map((r) => [r.id, r.outcome]),
        [
          ["before", "OK"],
          [bad, want],
          ["after1", "OK"],
          ["after2", "OK"],
        ],
        seen,
      );
      assert.deepEqual(
        results.map((r) => r.attempts),
        [1, 1, 1, 1],
        `nobody is charged for another's failure, and the failing one is not run twice: ${seen}`,
      );
    }
    await waitForFreeBoards(client, 2);
  };

  it("on one board, a crash or a timeout is that candidate's alone: the one after it is measured on a fresh session, uncharged", () =>
    crashOrTimeoutIsItsOwn(1));

  it(
    "the same with two candidates in flight per board",
    {
      todo:
        "in full `npm test` runs on this 2-CPU machine, on the grpc route (tests/routes/grpc.test.ts), the good candidate before the bad one " +
        "was charged with its crash or timeout: the worker's answer to it never reached the host; never seen on the direct lane, never " +
        "reproduced alone. The worker now writes to a socket (its agent bridges it to the ServeSession stream), but the agent reports the " +
        "worker's death on its Attach stream, another connection, and the tracker may end the lease before the answer arrives on the " +
        "session's stream (a reading, not confirmed). One in flight is the default until the tracker keeps that order",
    },
    () => crashOrTimeoutIsItsOwn(2),
  );

  it("a Measurer keeps its sessions, modules and references between batches; a session lost in between costs no attempt", async () => {
    const extra = await Promise.all(["m3", "m4"].map((name) => startAgentProcess(tracker.address, ["cpu:key=keep"], ["--name", name])));
    try {
      await waitForFreeBoards(client, 2, "keep");
      let calls = 0;
      const reference = ([a, b]: AnyTypedArray[]) => {
        calls++;
        return [Float32Array.from(a as Float32Array, (x, i) => x + (b as Float32Array)[i]!)];
      };
      const seeded = (id: string): Candidate => ({
        id,
        module,
        function: "good",
        reference,
        args: [
          { random: { seed: 3 }, shape: [N], dtype: "float32" },
          { random: { seed: 4 }, shape: [N], dtype: "float32" },
          { output: { shape: [N], dtype: "float32" } },
          { scalar: N },
        ],
      });
      const m = new Measurer(client, { key: "keep", timeEvaluator: { number: 1, repeat: 1 }, progress: false });
      const keepBoards = async () => (await client.summary()).boards.filter((b) => b.key === "keep");
      // The first batch's module is ready once both boards are the Measurer's: on a loaded machine one board's
      // session could otherwise come after the other board had measured all four.
      const bothHeld = async () => {
        await waitFor("both boards held by the Measurer", async () => ((await keepBoards()).every((b) => b.state === "busy") ? true : undefined), 30_000);
        return module;
      };
      try {
        const first = await m.measure(["a", "b", "c", "d"].map((id) => ({ ...seeded(id), module: bothHeld })));
        assert.deepEqual(
          first.map((r) => r.outcome),
          ["OK", "OK", "OK", "OK"],
        );
        assert.deepEqual([...new Set(first.map((r) => r.board))].sort(), ["m3/cpu0", "m4/cpu0"]);
        // Between batches both boards stay with the Measurer.
        assert.deepEqual(
          (await keepBoards()).map((b) => b.state),
          ["busy", "busy"],
        );
        const running = m.measure([seeded("x")]);
        await assert.rejects(m.measure([seeded("y")]), (e: FarmError) => e.code === "INVALID_ARGUMENT" && /one batch at a time/.test(e.message));
        assert.equal((await running)[0]!.outcome, "OK");

        // An agent dies between batches: its kept session is dropped without costing a candidate an attempt.
        await extra[1]!.stop("SIGKILL");
        await waitFor("m4's board to leave", async () => ((await keepBoards()).length === 1 ? true : undefined), 10_000);
        const second = await m.measure(["e", "f", "g"].map(seeded), { timeEvaluator: { number: 2, repeat: 1 } });
        assert.deepEqual(
          second.map((r) => [r.outcome, r.board, r.attempts]),
          [
            ["OK", "m3/cpu0", 1],
            ["OK", "m3/cpu0", 1],
            ["OK", "m3/cpu0", 1],
          ],
        );
        assert.equal(second[0]!.timing!.number, 2, "the batch's own time_evaluator settings");
        assert.equal(calls, 1, "the reference was computed once for the whole run");
      } finally {
        await m.close();
      }
      await waitForFreeBoards(client, 1, "keep");
      await assert.rejects(m.measure([seeded("z")]), (e: FarmError) => e.code === "INVALID_ARGUMENT" && /closed/.test(e.message));
    } finally {
      for (const a of extra) await a.stop();
    }
  });

  it("an agent killed mid-batch loses nothing: its candidate is retried on the other board", async () => {
    const cands = Array.from({ length: 16 }, (_, i) => candidate("slow", module, `s${i}`));
    const file = join(dir, "killed.jsonl");
    const batch = measure(client, cands, { key: "cpu", progress: false, timeEvaluator: { number: 20, repeat: 3 }, timeoutMs: 20_000, resultsFile: file });
    // Mid-batch: once both boards have finished a candidate, each has another in flight.
    await waitFor("two results", () => existsSync(file) && readFileSync(file, "utf8").trim().split("\n").length >= 2, 60_000);
    await agents[1]!.stop("SIGKILL");
    const results = await batch;
    assert.equal(results.length, 16);
    assert.deepEqual(
      results.map((r) => r.outcome),
      cands.map(() => "OK"),
      JSON.stringify(results.filter((r) => r.outcome !== "OK")),
    );
    const retried = results.filter((r) => r.attempts === 2);
    assert.ok(retried.length >= 1, "the candidate in flight on the killed agent was measured again");
    for (const r of retried) assert.equal(r.board, "m1/cpu0");
  });
});
