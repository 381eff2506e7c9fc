/**
 * The TypeScript measure() on a results file, for python/tests/test_measure.py:
 * the same JSON lines must work in both directions.
 *
 *   node --import tsx python/tests/ts/measure_batch.ts resume TRACKER FILE IDS_JSON
 *     measure() with candidates of these ids whose modules fail if they are
 *     ever built: every one must come from FILE (written by the Python SDK).
 *   node --import tsx python/tests/ts/measure_batch.ts run TRACKER FILE
 *     a real batch on the cpu boards (ts-ok, ts-seeded: OK; ts-wrong:
 *     WRONG_ANSWER), its results appended to FILE for the Python SDK to read.
 *
 * Prints one JSON object: the outcomes measure.ts defines and the results.
 */
import { connectTracker, compileCpu, measure, MEASURE_OUTCOMES, type Candidate } from "../../../host-sdk/index.ts";
import { compileVadd } from "../../../tests/helpers/kernels.ts";

const [mode, tracker, file, ids] = process.argv.slice(2);
if (!tracker || !file || (mode === "resume" ? !ids : mode !== "run")) {
  console.error("usage: measure_batch.ts resume TRACKER FILE IDS_JSON | run TRACKER FILE");
  process.exit(2);
}
const client = await connectTracker(tracker);
let candidates: Candidate[];
if (mode === "resume") {
  candidates = (JSON.parse(ids!) as string[]).map((id) => ({
    id,
    module: () => Promise.reject(new Error(`candidate ${id} was built again: the results file did not hold it`)),
    function: "vadd",
    args: [],
  }));
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
  candidates = [
    { id: "ts-ok", module: vadd, function: "vadd", args: [{ input: a }, { input: b }, out, { scalar: n }], reference: sum },
    { id: "ts-wrong", module: wrong, function: "vadd_wrong", args: [{ input: a }, { input: b }, out, { scalar: n }], reference: sum },
    {
      id: "ts-seeded",
      module: vadd,
      function: "vadd",
      args: [{ random: { seed: 11 }, shape: [n], dtype: "float32" }, { random: { seed: 12 }, shape: [n], dtype: "float32" }, out, { scalar: n }],
      reference: sum,
    },
  ];
}
try {
  const results = await measure(client, candidates, { key: "cpu", resultsFile: file, progress: false, timeEvaluator: { number: 5, repeat: 2 } });
  console.log(JSON.stringify({ outcomes: MEASURE_OUTCOMES, results }));
} finally {
  client.close();
}
