/**
 * The numeric options of the SDKs' APIs, checked against the one table of
 * their limits (protos/farm/v1/contract.json "optionLimits", generated as
 * OPTION_LIMITS; python/kernelfarm/option_limits.py checks the same table
 * with the same words). A value outside it is refused on the host before
 * anything is sent: on the wire a negative `repeat` becomes 4294967295 as a
 * uint32, and the board would spin until its timeout.
 */
import { FarmError } from "./errors.ts";
import { OPTION_LIMITS, type OptionLimit } from "./gen/contract.ts";

export type OptionApi = keyof typeof OPTION_LIMITS;

/** "an integer in [1, 4294967295]", "a number in [0, 1)": what `limit` takes, as the refusal says it. */
export function describeLimit(limit: OptionLimit): string {
  return `${limit.integer ? "an integer" : "a number"} in [${limit.min}, ${limit.max}${limit.maxExclusive ? ")" : "]"}`;
}

/** Whether `value` is one `limit` takes. */
function fits(limit: OptionLimit, value: unknown): value is number {
  if (typeof value !== "number" || !Number.isFinite(value)) return false;
  if (limit.integer && !Number.isInteger(value)) return false;
  return value >= limit.min && (limit.maxExclusive ? value < limit.max : value <= limit.max);
}

/**
 * `value` of `api`'s `option`, or INVALID_ARGUMENT naming the option, the
 * value and the range (`details.option` names it for code).
 */
export function checkOption<A extends OptionApi>(api: A, option: keyof (typeof OPTION_LIMITS)[A] & string, value: unknown): number {
  const limit = (OPTION_LIMITS[api] as Record<string, OptionLimit>)[option]!;
  if (fits(limit, value)) return value;
  const shown = typeof value === "number" ? String(value) : typeof value === "bigint" ? `${value}n` : (JSON.stringify(value) ?? String(value));
  throw new FarmError("INVALID_ARGUMENT", `${api} ${option} must be ${describeLimit(limit)} (${limit.doc}), got ${shown}`, {
    details: { option: `${api}.${option}` },
  });
}

/** Every option of `api` that `opts` gives (undefined: not given, the default applies), checked; other keys are left alone. */
export function checkOptions(api: OptionApi, opts: object): void {
  const given = opts as Record<string, unknown>;
  for (const option of Object.keys(OPTION_LIMITS[api])) {
    if (given[option] !== undefined) checkOption(api, option as never, given[option]);
  }
}
