/**
 * What a session's worker printed, kept for its host (session.proto Output,
 * `remote.output()`): its kernels' stdout and stderr as the agent read them
 * from the worker's pipes, the last `capacity` bytes of it. The worker never
 * holds it — it would be a tenant's to rewrite — and the agent's log gets
 * only a bounded, escaped excerpt (pool.ts).
 *
 * Positions count every byte printed since the session began, so a reader
 * that pages through (at most WORKER_MESSAGE_MAX_BYTES a message) can tell
 * what it was sent from what fell out of the window meanwhile.
 */

/** What a session's host can read back of its worker's output: the last 1 MiB. */
export const SESSION_OUTPUT_BYTES = 1 << 20;

/** Grown on demand up to the capacity: most sessions print nothing, or little. */
const FIRST_BYTES = 4096;

export class SessionOutput {
  /** Byte `p` of the output lives at `p % buf.length` once the buffer is full; before, at `p`. */
  private buf = Buffer.alloc(0);
  private total = 0;

  constructor(readonly capacity = SESSION_OUTPUT_BYTES) {}

  /** Every byte printed so far (the position after the last one). */
  get end(): number {
    return this.total;
  }

  /** The first byte still held. */
  get start(): number {
    return Math.max(0, this.total - this.capacity);
  }

  append(bytes: Uint8Array): void {
    if (bytes.byteLength === 0) return;
    // What would fall out at once is counted, never copied.
    const kept = bytes.subarray(Math.max(0, bytes.byteLength - this.capacity));
    this.grow(this.total + bytes.byteLength);
    const size = this.buf.length;
    let at = (this.total + bytes.byteLength - kept.byteLength) % size;
    let from = 0;
    while (from < kept.byteLength) {
      const n = Math.min(kept.byteLength - from, size - at);
      this.buf.set(kept.subarray(from, from + n), at);
      from += n;
      at = (at + n) % size;
    }
    this.total += bytes.byteLength;
  }

  /**
   * At most `max` bytes from position `from` on (from the first byte held,
   * where `from` fell out of the window), with where they start and the end
   * of all printed so far.
   */
  read(from: number, max: number): { start: number; data: Buffer; end: number } {
    const start = Math.min(Math.max(from, this.start), this.total);
    const n = Math.max(0, Math.min(max, this.total - start));
    const data = Buffer.allocUnsafe(n);
    const size = this.buf.length;
    let at = size === 0 ? 0 : start % size;
    let done = 0;
    while (done < n) {
      const k = Math.min(n - done, size - at);
      this.buf.copy(data, done, at, at + k);
      done += k;
      at = (at + k) % size;
    }
    return { start, data, end: this.total };
  }

  /**
   * Room for `end` bytes: a larger buffer until the capacity. Below it
   * nothing has wrapped (every byte sits at its own position), so the
   * bytes keep their places in the larger one.
   */
  private grow(end: number): void {
    if (this.buf.length >= this.capacity || end <= this.buf.length) return;
    const size = Math.min(this.capacity, Math.max(FIRST_BYTES, this.buf.length * 2, end));
    const bigger = Buffer.alloc(size);
    this.buf.copy(bigger, 0, 0, this.total);
    this.buf = bigger;
  }
}
