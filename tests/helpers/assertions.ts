/** Assertions on FarmErrors shared by the bad-input suites. */
import assert from "node:assert/strict";
import { FarmError, type FarmErrorCode } from "../../protos/index.ts";

/** Awaits `p`, which must reject with a FarmError of `code`; returns it for more checks. */
export async function refused(p: Promise<unknown> | (() => unknown), code: FarmErrorCode): Promise<FarmError> {
  let err: unknown;
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    err = e;
  }
  assert.ok(err !== undefined, `expected ${code}, but it succeeded`);
  assert.ok(err instanceof FarmError, `expected a FarmError ${code}, got ${String(err)}`);
  assert.equal(err.code, code, `expected ${code}, got [${err.code}] ${err.message}`);
  return err;
}

/** Asserts each fragment appears literally in the message. */
export function names(err: FarmError, ...fragments: string[]): void {
  for (const f of fragments) assert.ok(err.message.includes(f), `message should name ${JSON.stringify(f)}: ${err.message}`);
}
