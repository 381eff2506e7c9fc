/**
 * Shape checks of what the host compilers take (compileCpu, compileCuda,
 * compileVta): a value of the wrong shape is INVALID_ARGUMENT naming the
 * option and the shape expected, before any work — not a TypeError from deep
 * inside a compiler ("params.map is not a function"), a compiler that reads
 * its source from stdin because a flags string was spread into characters,
 * or a misspelt option that is silently ignored.
 */
import { FarmError } from "../protos/index.ts";

export function invalidOption(where: string, field: string, message: string): FarmError {
  return new FarmError("INVALID_ARGUMENT", `${where}: ${message}`, { details: { field } });
}

/** A value as a message shows it: strings and numbers as JSON, containers by kind. */
export function shown(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (value === null) return "null";
  if (typeof value === "object") return "an object";
  if (typeof value === "function") return "a function";
  return value === undefined ? "undefined" : (JSON.stringify(value) ?? String(value));
}

/**
 * A plain object whose keys are all in `allowed`: an unknown key is a typo
 * or an option of another compiler, and ignoring it would build something
 * the caller did not ask for.
 */
export function checkRecord(value: unknown, allowed: readonly string[], where: string, field: string, shape: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalidOption(where, field, `${field} must be ${shape}, got ${shown(value)}`);
  const unknown = Object.keys(value).find((k) => !allowed.includes(k));
  if (unknown !== undefined)
    throw invalidOption(where, `${field}.${unknown}`, `${field} has an unknown key ${JSON.stringify(unknown)}; the keys are ${allowed.join(", ")}`);
  return value as Record<string, unknown>;
}

/** Extra compiler flags: a list of strings (undefined: none). */
export function checkFlags(flags: unknown, where: string): string[] {
  if (flags === undefined) return [];
  if (!Array.isArray(flags) || !flags.every((f) => typeof f === "string")) {
    throw invalidOption(
      where,
      "flags",
      `flags must be a list of strings such as ["-O3", "-DN=4"], got ${Array.isArray(flags) ? JSON.stringify(flags) : shown(flags)}`,
    );
  }
  return [...flags];
}

/** A file name the compiler gets as its input: no directory, no leading "-" (a flag) or "." (hidden, parent). */
const PLAIN_FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;

export function checkFileName(name: unknown, where: string, example: string, suffix = ""): string {
  if (typeof name !== "string" || !PLAIN_FILE_NAME.test(name) || !name.endsWith(suffix)) {
    throw invalidOption(where, "fileName", `fileName ${shown(name)} is not a plain file name${suffix ? ` ending in ${suffix}` : ""}, such as "${example}"`);
  }
  return name;
}
