/**
 * Per-key request queues: highest priority first; within a priority, the
 * client served least recently goes first (round robin across client ids);
 * within a client, arrival order.
 */

export interface PendingRequest {
  readonly seq: number;
  readonly key: string;
  readonly priority: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly clientId: string;
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
    const served = (r: R) => this.lastServed.get(r.clientId) ?? -1;
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
