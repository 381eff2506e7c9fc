/** Command-line options the tuning examples share: numbers checked by name, the search strategy, the pipeline's knobs. */
import type { MeasureOptions } from "kernelfarm";
import type { Strategy } from "./search.ts";

export function numberArg(name: string, value: string | undefined, min: number, integer = true): number {
  const n = Number(value);
  if ((integer && !Number.isInteger(n)) || !(n >= min))
    throw new Error(`--${name} must be ${integer ? "an integer" : "a number"} ≥ ${min}, got ${JSON.stringify(value)}`);
  return n;
}

export function searchArg(value: string | undefined): Strategy {
  if (value === "model" || value === "evolution") return value;
  throw new Error(
    `--search must be "model" (a cost model ranks proposals by what was measured) or "evolution" (random draws, then mutations of the best), got ${JSON.stringify(value)}`,
  );
}

/** parseArgs options every tuning example takes: the search and measure()'s pipeline. */
export const TUNING_OPTIONS = {
  search: { type: "string", default: "model" },
  boards: { type: "string" },
  "compile-jobs": { type: "string" },
  "queue-depth": { type: "string" },
  "in-flight": { type: "string" },
} as const;

/** `--boards`, `--compile-jobs`, `--queue-depth`, `--in-flight`: measure()'s pipeline options, its own choices where absent. */
export function pipelineArgs(
  args: Record<string, string | boolean | undefined>,
): Pick<MeasureOptions, "boards" | "compileParallelism" | "queueDepth" | "inFlightPerBoard"> {
  const opt = (name: string) => (args[name] === undefined ? undefined : numberArg(name, String(args[name]), 1));
  const out = { boards: opt("boards"), compileParallelism: opt("compile-jobs"), queueDepth: opt("queue-depth"), inFlightPerBoard: opt("in-flight") };
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}
