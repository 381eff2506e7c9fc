/**
 * The TypeScript measure() on a results file, for python/tests/test_measure.py:
 * the same JSON lines must work in both directions.
 *
 *   node --import tsx python/tests/ts/measure_batch.ts resume TRACKER FILE BATCH_JSON
 *     measure() with the candidates BATCH_JSON describes ({ options:
 *     { timeEvaluator?, timeoutMs? }, candidates: [...] }, ts/candidates.ts),
 *     whose modules fail if they are ever built: every one must come from
 *     FILE (written by the Python SDK), its id and digest matching.
 *   node --import tsx python/tests/ts/measure_batch.ts run TRACKER FILE
 *     a real batch on the cpu boards (ts-ok, ts-seeded: OK; ts-wrong:
 *     WRONG_ANSWER), with definitions, its results appended to FILE for the
 *     Python SDK to read.
 *
 * Prints one JSON object: the outcomes host-sdk/measure/types.ts defines and the results.
 */
import { readFileSync } from "node:fs";
import { connectTracker, compileCpu, measure, MEASURE_OUTCOMES, type Candidate } from "../../../host-sdk/index.ts";
import { compileVadd } from "../../../tests/helpers/kernels.ts";
import { candidateOf, type CandidateDescription } from "./candidates.ts";

const [mode, tracker, file, batch] = process.argv.slice(2);
if (!tracker || !file || (mode === "resume" ? !batch : mode !== "run")) {
  console.error("usage: measure_batch.ts resume TRACKER FILE BATCH_JSON | run TRACKER FILE");
  process.exit(2);
}
const client = await connectTracker(tracker);
let candidates: Candidate[];
let options: { timeEvaluator?: Record<string, number>; timeoutMs?: number } = { timeEvaluator: { number: 5, repeat: 2 } };
if (mode === "resume") {
  const described = JSON.parse(readFileSync(batch!, "utf8")) as { options: typeof options; candidates: CandidateDescription[] };
  candidates = described.candidates.map(candidateOf);
  options = described.options;
} else {
  const vadd = await compileVadd();
  const wrong = await compileCpu(
    "#include <stdint.h>\nvoid vadd_wrong(const float* a, const float* b, float* c, int32_t n) { for (int32_t i = 0; i < n; i++) c[i] = a[i] - b[i]; }\n",
    { functions: { vadd_wrong: ["float32* a", "float32* b", "float32* c", "int32 n"] } },
  );
  const n = 1000;
  const a = Float32Array.from({ length: n }, (_, i) => i);
  const b = new Float32Array(n).fill(0.5);
  const sum = ([x, y]: Parameters<NonNullable<Candidate["reference"]>>[0]) => [Float32Array.from(x as Float32Array, (v, i) => v + (y as Float32Array)[i]!)];
  const out = { output: { shape: [n], dtype: "float32" as const } };
  // Definitions, so that the Python SDK resumes these without building them (python/tests/test_measure.py writes the same).
  candidates = [
    { id: "ts-ok", module: vadd, definition: { kernel: "vadd" }, function: "vadd", args: [{ input: a }, { input: b }, out, { scalar: n }], reference: sum },
    { id: "ts-wrong", module: wrong, definition: { kernel: "vadd_wrong" }, function: "vadd_wrong", args: [{ input: a }, { input: b }, out, { scalar: n }], reference: sum },
    {
      id: "ts-seeded",
      module: vadd,
      definition: { kernel: "vadd" },
      function: "vadd",
      args: [{ random: { seed: 11 }, shape: [n], dtype: "float32" }, { random: { seed: 12 }, shape: [n], dtype: "float32" }, out, { scalar: n }],
      reference: sum,
    },
  ] as Candidate[];
}
try {
  const results = await measure(client, candidates, { key: "cpu", resultsFile: file, progress: false, ...options });
  console.log(JSON.stringify({ outcomes: MEASURE_OUTCOMES, results }));
} finally {
  client.close();
}
