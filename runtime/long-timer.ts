/**
 * A timeout of any length. Node's setTimeout holds at most 2^31 − 1 ms
 * (24.8 days): a longer delay fires at once, with a TimeoutOverflowWarning.
 * A queue's deadline is as long as the operator or the caller likes
 * (`kfarm tracker --default-deadline-ms`, a request's own), so it is armed in
 * pieces of at most that.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export class LongTimer {
  private handle: NodeJS.Timeout | undefined;

  /** Calls `fire` once, `ms` (a non-negative number of milliseconds, any size) from now, unless cleared first. */
  constructor(ms: number, fire: () => void) {
    const arm = (left: number): void => {
      const piece = Math.min(left, MAX_TIMER_MS);
      this.handle = setTimeout(() => (piece < left ? arm(left - piece) : fire()), piece);
    };
    arm(ms);
  }

  clear(): void {
    clearTimeout(this.handle);
    this.handle = undefined;
  }
}
