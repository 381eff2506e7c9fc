/** The numeric options' limits: one table (contract.json "optionLimits"), the same refusal for every option of every API. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FarmError } from "./errors.ts";
import { OPTION_LIMITS } from "./gen/contract.ts";
import { checkOption, checkOptions, describeLimit } from "./option-limits.ts";

function refusal(fn: () => unknown): FarmError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof FarmError, String(err));
    return err;
  }
  return assert.fail("accepted");
}

describe("checkOption", () => {
  it("refuses a negative repeat (a uint32 on the wire: 4294967295) naming the option, the value and the range", () => {
    const e = refusal(() => checkOption("timeEvaluator", "repeat", -1));
    assert.equal(e.code, "INVALID_ARGUMENT");
    assert.equal(e.message, "timeEvaluator repeat must be an integer in [1, 4294967295] (repeats, each one result), got -1");
    assert.deepEqual(e.details, { option: "timeEvaluator.repeat" });
  });

  it("refuses, for every option of every API, a value below, above, not finite, not whole where whole, or not a number", () => {
    let checked = 0;
    for (const [api, options] of Object.entries(OPTION_LIMITS)) {
      for (const [option, limit] of Object.entries(options)) {
        const bad: unknown[] = [limit.min - 1, limit.maxExclusive ? limit.max : limit.max + 1, Number.NaN, Infinity, "5", null, 5n];
        if (limit.integer) bad.push(limit.min + 0.5);
        for (const value of bad) {
          const e = refusal(() => checkOption(api as never, option as never, value));
          assert.equal(e.code, "INVALID_ARGUMENT");
          assert.ok(e.message.startsWith(`${api} ${option} must be ${describeLimit(limit)} (${limit.doc}), got `), e.message);
        }
        for (const good of [limit.min, limit.maxExclusive ? (limit.min + limit.max) / 2 : limit.max])
          assert.equal(checkOption(api as never, option as never, good), good);
        checked++;
      }
    }
    assert.ok(checked >= 14, `${checked} options`);
  });

  it("says each range as it is: whole numbers, numbers, an exclusive bound", () => {
    assert.equal(describeLimit(OPTION_LIMITS.timeEvaluator.number), "an integer in [1, 4294967295]");
    assert.equal(describeLimit(OPTION_LIMITS.timeEvaluator.minRepeatMs), "a number in [0, 4294967295]");
    assert.equal(describeLimit(OPTION_LIMITS.timeEvaluator.targetRse), "a number in [0, 1)");
    assert.equal(describeLimit(OPTION_LIMITS.request.priority), "an integer in [-2147483648, 2147483647]");
  });
});

describe("checkOptions", () => {
  it("checks the options given, leaves absent ones (their defaults apply) and other keys alone", () => {
    checkOptions("timeEvaluator", { number: 1, repeat: undefined, launch: { grid: 1, block: 1 }, flushL2: true });
    checkOptions("request", { priority: -3, deadlineMs: 0, labels: { a: "b" } });
    assert.match(refusal(() => checkOptions("request", { deadlineMs: -1 })).message, /^request deadlineMs must be an integer in \[0, 4294967295\]/);
    assert.match(
      refusal(() => checkOptions("timeEvaluator", { number: 10, budgetMs: -1 })).message,
      /^timeEvaluator budgetMs must be a number in \[0, 4294967295\]/,
    );
  });
});
