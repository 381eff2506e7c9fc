/**
 * node:test's describe/it/before/after, with one change: a suite skipped for
 * a reason (`describe(name, { skip: "no GPU" }, …)`) reports each of its
 * tests as skipped with that reason, instead of one skipped suite. node:test
 * would count a skipped suite of twelve tests as "skipped 1"; a reader of
 * CI's summary must see what did not run. The reason is also printed once
 * (`# SKIP suite: reason`), and the skipped suite's hooks never run.
 *
 * Suite bodies run synchronously while node:test collects them, so "inside a
 * skipped suite" is a stack kept during that call.
 */
import * as nt from "node:test";

type SuiteOptions = nt.TestOptions;
type TestOptions = nt.TestOptions;
type Body = () => void;
type TestFn = nt.TestFn;

/** The reason of the skipped suite being collected, if any. */
let skipping: string | false = false;

function reasonOf(skip: boolean | string | undefined): string | false {
  return skip === true ? "skipped" : skip || false;
}

export function describe(name: string, optsOrBody: SuiteOptions | Body, maybeBody?: Body): void {
  const [opts, body] = typeof optsOrBody === "function" ? [{}, optsOrBody] : [optsOrBody, maybeBody!];
  const reason = skipping || reasonOf(opts.skip);
  if (!reason) {
    nt.describe(name, opts, body);
    return;
  }
  if (!skipping) console.log(`# SKIP ${name}: ${reason}`);
  const { skip: _, ...rest } = opts;
  nt.describe(name, rest, () => {
    const outer = skipping;
    skipping = reason;
    try {
      body();
    } finally {
      skipping = outer;
    }
  });
}

export function it(name: string, optsOrFn?: TestOptions | TestFn, maybeFn?: TestFn): void {
  if (skipping) {
    nt.it(name, { skip: skipping });
    return;
  }
  const [opts, fn] = typeof optsOrFn === "function" ? [{}, optsOrFn] : [optsOrFn ?? {}, maybeFn];
  nt.it(name, opts, fn);
}

type Hook = typeof nt.before;
const hook =
  (real: Hook): Hook =>
  (fn, options) => {
    if (!skipping) real(fn, options);
  };

export const before = hook(nt.before);
export const after = hook(nt.after);
export const beforeEach = hook(nt.beforeEach);
export const afterEach = hook(nt.afterEach);
