/**
 * The wait between attempts to reach the farm while it is away (a tracker
 * restarting, a key's agents gone, no free board): exponential with full
 * jitter, so that the clients a restart cut off do not come back in step.
 */

/** The first wait's cap; it doubles per failure up to BACKOFF_MAX_MS. */
export const BACKOFF_FIRST_MS = 250;
export const BACKOFF_MAX_MS = 8000;

/** The longest wait after `failures` failures in a row (0: the first). */
export function backoffCapMs(failures: number): number {
  return Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** failures);
}

/**
 * Full jitter: a uniform wait up to a cap that doubles per failure.
 * Resolves early (never rejects) when `signal` aborts: the batch that waited
 * needs no session any more. `random` is there for tests.
 */
export function backoff(failures: number, signal?: AbortSignal, random: () => number = Math.random): Promise<void> {
  const cap = backoffCapMs(failures);
  return new Promise((resolve) => {
    const timer = setTimeout(done, random() * cap);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}
