/**
 * Bounded fuzzing inside node's test runner (tests/fuzz/): a fast-check
 * property run for at most `runs` inputs and `seconds` of wall time, which
 * prints how many inputs it ran on a line of its own (`fuzz NAME: N
 * executions (seed S)`) and, on a failure, the shrunk input and the seed
 * that replays it (FUZZ_SEED=S, with FUZZ_RUNS / FUZZ_SECONDS to fuzz longer
 * by hand).
 */
import type { Socket } from "node:net";
import fc from "fast-check";

export interface FuzzBudget {
  /** At most this many inputs. */
  runs: number;
  /** At most this long, in seconds (the input running when it passes is finished). */
  seconds: number;
}

/** The budget, scaled by FUZZ_RUNS / FUZZ_SECONDS where set (a longer run by hand). */
function budget(b: FuzzBudget): FuzzBudget {
  return { runs: Number(process.env.FUZZ_RUNS) || b.runs, seconds: Number(process.env.FUZZ_SECONDS) || b.seconds };
}

/** Runs `check` on inputs of `arbitrary` within `limits`; throws fast-check's report (with the shrunk input) on a failure. */
export async function fuzz<T>(name: string, limits: FuzzBudget, arbitrary: fc.Arbitrary<T>, check: (input: T) => Promise<void> | void): Promise<number> {
  const b = budget(limits);
  const seed = Number(process.env.FUZZ_SEED) || (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
  let executions = 0;
  try {
    await fc.assert(
      fc.asyncProperty(arbitrary, async (input) => {
        executions++;
        await check(input);
      }),
      { numRuns: b.runs, interruptAfterTimeLimit: b.seconds * 1000, markInterruptAsFailure: false, seed, endOnFailure: false },
    );
  } catch (err) {
    // fast-check's report holds the shrunk input, which may be megabytes of bytes: its head says enough.
    const report = (err as Error).message;
    throw new Error(`fuzz ${name} failed (replay: FUZZ_SEED=${seed}):\n${report.length > 4000 ? `${report.slice(0, 4000)}…` : report}`, { cause: err });
  } finally {
    console.log(`fuzz ${name}: ${executions} executions (seed ${seed})`);
  }
  return executions;
}

/**
 * What `socket` receives until the other side closes it or `enough(bytes)`
 * holds (`answered`), whichever comes first: a fuzz input's outcome. The
 * wait is on those events; `ms` only bounds it, failing the input with
 * `what()` (and destroying the socket) when the peer does neither.
 */
export function receiveUntil(
  socket: Socket,
  ms: number,
  what: () => string,
  enough: (received: Buffer) => boolean = () => false,
): Promise<{ received: Buffer; answered: boolean }> {
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`${what()} (received ${received.length} bytes)`));
    }, ms);
    const done = (answered: boolean) => {
      clearTimeout(timer);
      resolve({ received, answered });
    };
    socket.on("data", (c: Buffer) => {
      received = Buffer.concat([received, c]);
      if (enough(received)) done(true);
    });
    socket.on("error", () => {}); // a reset: the close says the rest
    socket.once("close", () => done(false));
  });
}
