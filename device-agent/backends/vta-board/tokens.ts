/**
 * The four dependency-token FIFOs between VTA's modules (§3, §6):
 * `l2g` load→compute, `g2l` compute→load, `s2g` store→compute, `g2s`
 * compute→store. Tokens carry no data; here each carries the cycle at which it
 * was pushed, for the timing model. Like TVM's simulator, the FIFOs are not
 * cleared between runs: a token left by one run is there for the next (of
 * the same call: simulator.ts refuses a call that leaves any behind).
 */

export const QUEUE = { L2G: 0, G2L: 1, S2G: 2, G2S: 3 } as const;
export const QUEUE_NAMES = ["l2g", "g2l", "s2g", "g2s"] as const;
/** Which module pushes to and which pops from each queue, for messages. */
export const QUEUE_ROUTES = { l2g: "load → compute", g2l: "compute → load", s2g: "store → compute", g2s: "compute → store" } as const;
export type QueueId = (typeof QUEUE)[keyof typeof QUEUE];

class TimeFifo {
  private items: number[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }
  push(time: number): void {
    this.items.push(time);
  }
  /** The push time of the oldest token; the caller checked `length > 0`. */
  shift(): number {
    const t = this.items[this.head++]!;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return t;
  }
  /** Every token still queued becomes available at cycle 0. */
  rebase(): void {
    this.items = this.items.slice(this.head).fill(0);
    this.head = 0;
  }
  clear(): void {
    this.items = [];
    this.head = 0;
  }
}

export class TokenQueues {
  private readonly fifos = [new TimeFifo(), new TimeFifo(), new TimeFifo(), new TimeFifo()];

  count(q: number): number {
    return this.fifos[q]!.length;
  }
  push(q: number, time: number): void {
    this.fifos[q]!.push(time);
  }
  pop(q: number): number {
    return this.fifos[q]!.shift();
  }
  /** Token counts by queue name, e.g. for error messages and stats. */
  counts(): Record<(typeof QUEUE_NAMES)[number], number> {
    return { l2g: this.count(0), g2l: this.count(1), s2g: this.count(2), g2s: this.count(3) };
  }
  /** Start of a run: leftover tokens are available at once. */
  rebase(): void {
    for (const f of this.fifos) f.rebase();
  }
  clear(): void {
    for (const f of this.fifos) f.clear();
  }
}
