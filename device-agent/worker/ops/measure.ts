/**
 * measure() as one request: counters cleared; each checked output poisoned,
 * one call, outputs compared; the time evaluation; poison, call and compare
 * again (a kernel whose answer changes when run repeatedly is caught).
 */
import { FarmError, viewAs } from "../../../protos/index.ts";
import { arrayOf } from "./arrays.ts";
import { callSettings, guarded, prepare } from "./calls.ts";
import type { Handler } from "./operation.ts";
import { evaluate } from "./timing.ts";

/** Bytes no kernel is likely to produce: checked outputs are filled with them before each call. */
const POISON = 0xa5;

export const measure: Handler<"measure"> = (s, id, m, mux) => {
  // The board's own share of a candidate's time (checks, poisoning, timing), so a tuner can tell it from the farm's.
  const t0 = performance.now();
  const c = m.time?.call;
  if (!c) throw new FarmError("BAD_ARGUMENTS", "measure needs a time_evaluate with a call");
  const checks = m.checks.map((k, i) => {
    const a = arrayOf(s, k.array);
    // A reference in a board array is read once, here: the same for the check before timing and after.
    const held = k.expect_array ? arrayOf(s, k.expect_array) : undefined;
    if (held && held.dtype !== a.dtype)
      throw new FarmError("BAD_ARGUMENTS", `check ${i}: the reference array ${k.expect_array} holds ${held.dtype}, array ${k.array} ${a.dtype}`);
    const expect = held ? held.array.read(0, held.array.nbytes) : k.expect;
    if (expect.byteLength !== a.array.nbytes) {
      throw new FarmError("BAD_ARGUMENTS", `check ${i}: the reference has ${expect.byteLength} bytes, array ${k.array} holds ${a.array.nbytes}`);
    }
    return { k, a, want: viewAs(a.dtype, expect) };
  });
  const { fn, args } = prepare(s, c);
  const settings = callSettings(s, c, m.time!);
  const check = (when: string): string => {
    for (const { a } of checks) a.array.write(0, new Uint8Array(a.array.nbytes).fill(POISON));
    guarded(s, c, "call", () => s.backend.invoke(fn, args, { launch: settings.launch }));
    for (const [i, { k, a, want }] of checks.entries()) {
      const bad = firstMismatch(viewAs(a.dtype, a.array.read(0, a.array.nbytes)), want, k.atol, k.rtol);
      if (bad) return `output ${i} ${when}: ${bad}`;
    }
    return "";
  };
  s.backend.clearStats();
  const before = check("before timing");
  if (before) {
    mux.reply({ id, measured: { wrong: before, counters: s.backend.stats().counters } });
    return;
  }
  const result = evaluate(s, m.time!);
  const after = check("after timing");
  const stats = s.backend.stats();
  const counters = { ...stats.counters, measure_wall_ns: (performance.now() - t0) * 1e6 };
  mux.reply({
    id,
    measured: {
      time: { results_s: result.resultsS, number: result.number, conditions: result.conditions, stopped_by: result.stoppedBy },
      wrong: after,
      counters,
    },
  });
};

/** The first element of `got` outside |got − want| ≤ atol + rtol·|want|, described; or undefined. */
function firstMismatch(got: ArrayLike<number | bigint>, want: ArrayLike<number | bigint>, atol: number, rtol: number): string | undefined {
  for (let i = 0; i < got.length; i++) {
    const g = Number(got[i]!);
    const w = Number(want[i]!);
    if (!(Math.abs(g - w) <= atol + rtol * Math.abs(w))) return `element ${i} is ${g}, expected ${w}`;
  }
  return undefined;
}
