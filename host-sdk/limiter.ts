/** Bounding how many tasks of a kind run at once: nvcc compiles, measure()'s host compiles. */

/**
 * A counting semaphore.
 * `peak` is the most holders there ever were at once (tests read it).
 */
export class Limiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  peak = 0;

  constructor(readonly slots: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active < this.slots) this.active++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    // The slot is ours: taken above, or handed over by the holder that released it.
    this.peak = Math.max(this.peak, this.active);
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
