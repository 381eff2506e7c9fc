/**
 * Per-key request queues: highest priority first; within a priority, a
 * request of `per-client` fairness goes by the client served least recently
 * (round robin across client ids), then arrival; one of `fifo` fairness by
 * arrival alone (TVM's tracker's order). Both kinds never compete for one
 * board (tracker/scheduler.ts grants each asker its own boards), so the two
 * orders never meet.
 */

/** How equal priorities are ordered: round robin across clients, or arrival order. */
export const FAIRNESS = ["per-client", "fifo"] as const;
export type Fairness = (typeof FAIRNESS)[number];

export interface PendingRequest {
  readonly seq: number;
  readonly key: string;
  readonly priority: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly clientId: string;
  readonly fairness: Fairness;
  readonly enqueuedAt: number;
}

export class RequestQueue<R extends PendingRequest> {
  private readonly pending: R[] = [];
  /** clientId → sequence number of its last grant, for fairness. */
  private readonly lastServed = new Map<string, number>();
  private grants = 0;

  get size(): number {
    return this.pending.length;
  }

  push(request: R): void {
    this.pending.push(request);
  }

  remove(request: R): boolean {
    const i = this.pending.indexOf(request);
    if (i < 0) return false;
    this.pending.splice(i, 1);
    return true;
  }

  /** Requests in the order they should be served. */
  ordered(): R[] {
    const served = (r: R) => (r.fairness === "per-client" ? (this.lastServed.get(r.clientId) ?? -1) : -1);
    return [...this.pending].sort((a, b) => b.priority - a.priority || served(a) - served(b) || a.seq - b.seq);
  }

  /** The first request, in serving order, that `fits` accepts; removed and counted as served. */
  take(fits: (request: R) => boolean): R | undefined {
    const request = this.ordered().find(fits);
    if (request) {
      this.remove(request);
      this.lastServed.set(request.clientId, this.grants++);
    }
    return request;
  }

  all(): readonly R[] {
    return this.pending;
  }
}

export function labelsMatch(selector: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(selector)) if (labels[k] !== v) return false;
  return true;
}
