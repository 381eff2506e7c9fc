/** The farm's errors as measure()'s outcomes, and the candidates refused before anything runs. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FarmError } from "../../protos/index.ts";
import type { CompiledModule } from "../compiled-module.ts";
import { checkCandidate, HOPELESS, outcomeFields, outcomeOf } from "./outcomes.ts";
import type { Candidate, MeasureArg } from "./types.ts";

describe("outcomeOf", () => {
  it("maps each farm code to its outcome, and says which lose the session", () => {
    const cases: [string, string, boolean][] = [
      ["COMPILE_ERROR", "COMPILE_ERROR", false],
      ["TOOLCHAIN_MISSING", "COMPILE_ERROR", false],
      ["BAD_BUNDLE", "LOAD_ERROR", false],
      ["TARGET_MISMATCH", "LOAD_ERROR", false],
      ["LOAD_ERROR", "LOAD_ERROR", false],
      ["UNKNOWN_FUNCTION", "LOAD_ERROR", false],
      ["TIMEOUT", "TIMEOUT", true],
      ["RUNTIME_CRASH", "RUNTIME_ERROR", true],
      ["DEVICE_ERROR", "RUNTIME_ERROR", false],
      ["LAUNCH_ERROR", "INVALID_CONFIG", false],
      ["RUNTIME_ERROR", "RUNTIME_ERROR", false],
      ["BAD_ARGUMENTS", "RUNTIME_ERROR", false],
      ["OUT_OF_MEMORY", "RUNTIME_ERROR", false],
      ["TOO_LARGE", "RUNTIME_ERROR", false],
      ["UNAVAILABLE", "INFRA_ERROR", true],
      ["NO_BOARD", "INFRA_ERROR", true],
    ];
    for (const [code, outcome, sessionLost] of cases) {
      const o = outcomeOf(new FarmError(code as never, "what happened"));
      assert.deepEqual(o, { outcome, message: `${code}: what happened`, sessionLost }, code);
    }
  });

  it("loses the session on a sticky device error only: the context is gone", () => {
    assert.equal(outcomeOf(new FarmError("DEVICE_ERROR", "illegal address", { details: { sticky: true } })).sessionLost, true);
    assert.equal(outcomeOf(new FarmError("DEVICE_ERROR", "illegal address", { details: { sticky: false } })).sessionLost, false);
  });

  it("takes anything thrown: a plain Error is an INTERNAL infrastructure failure", () => {
    assert.deepEqual(outcomeOf(new Error("boom")), { outcome: "INFRA_ERROR", message: "INTERNAL: boom", sessionLost: true });
  });

  it("outcomeFields keeps the outcome and message, not whether the session was lost", () => {
    assert.deepEqual(outcomeFields(outcomeOf(new FarmError("TIMEOUT", "t"))), { outcome: "TIMEOUT", message: "TIMEOUT: t" });
  });

  it("HOPELESS: the refusals no waiting heals, and not an outage", () => {
    assert.deepEqual([...HOPELESS].sort(), ["INVALID_ARGUMENT", "PERMISSION_DENIED", "UNAUTHENTICATED"]);
    assert.equal(HOPELESS.has("UNAVAILABLE"), false);
  });
});

describe("checkCandidate", () => {
  const module = {} as CompiledModule;
  const out: MeasureArg = { output: { shape: [4], dtype: "float32" } };
  const candidate = (args: MeasureArg[], extra: Partial<Candidate> = {}): Candidate => ({ module, function: "f", args, ...extra });
  const reference = () => [new Float32Array(4)];

  it("passes a candidate that can be measured as written", () => {
    checkCandidate(candidate([{ random: { seed: 1 }, shape: [4], dtype: "float32" }, out, { scalar: 4 }], { reference }), "ok");
    checkCandidate(candidate([{ output: { shape: [4], dtype: "float32" }, expect: new Float32Array(4) }]), "ok");
  });

  it("refuses a random input its generator cannot make, naming the candidate and the argument", () => {
    assert.throws(
      () => checkCandidate(candidate([{ random: { seed: -1 }, shape: [4], dtype: "float32" }, out]), "c7"),
      (e: FarmError) => e.code === "INVALID_ARGUMENT" && /^measure: candidate c7: argument 0, a random float32 input: the seed/.test(e.message),
    );
    assert.throws(
      () => checkCandidate(candidate([{ random: { seed: 1, low: 0, high: 300 }, shape: [4], dtype: "uint8" }]), "c8"),
      /argument 0, a random uint8 input: \[0, 300\] does not fit uint8/,
    );
  });

  it("refuses an output with both an expect and a reference function", () => {
    assert.throws(
      () => checkCandidate(candidate([{ output: { shape: [4], dtype: "float32" }, expect: new Float32Array(4) }], { reference }), "c1"),
      /candidate c1: argument 0 has an expect and the candidate a reference function/,
    );
  });

  it("refuses a reference function with no output to check", () => {
    assert.throws(
      () => checkCandidate(candidate([{ scalar: 1 }], { reference }), "c2"),
      /candidate c2: a reference function, but no output arguments to check/,
    );
  });
});
