/**
 * A worker's requests to its agent (store, FPGA): each gets an id and one
 * answer. At most WORKER_MAX_PENDING_REQUESTS are unanswered at once — the
 * agent kills a worker past that — so the rest wait here, sent as answers
 * come; a session's end waits (bounded) for all of them (settled()).
 */
import { WORKER_MAX_PENDING_REQUESTS, type AgentToWorker__Output, type WorkerToAgent } from "../../protos/index.ts";

export class AgentRequests {
  private readonly unanswered = new Map<number, (msg: AgentToWorker__Output) => void>();
  private readonly waiting: (() => void)[] = [];
  private idle: (() => void)[] = [];
  private nextId = 0;

  constructor(private readonly tell: (msg: WorkerToAgent) => void) {}

  ask(msg: (id: number) => WorkerToAgent): Promise<AgentToWorker__Output> {
    return new Promise((resolve) => {
      const send = () => {
        const id = this.nextId++ >>> 0;
        this.unanswered.set(id, resolve);
        this.tell(msg(id));
      };
      if (this.unanswered.size < WORKER_MAX_PENDING_REQUESTS) send();
      else this.waiting.push(send);
    });
  }

  /** The agent's answer to request `id`; an id not asked is ignored. */
  answered(id: number, msg: AgentToWorker__Output): void {
    const resolve = this.unanswered.get(id);
    if (!resolve) return;
    this.unanswered.delete(id);
    this.waiting.shift()?.();
    resolve(msg);
    if (this.unanswered.size === 0) {
      for (const done of this.idle) done();
      this.idle = [];
    }
  }

  /** Resolves once no request is unanswered or waiting, or after `timeoutMs` (an agent that does not answer). */
  settled(timeoutMs: number): Promise<void> {
    if (this.unanswered.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.idle.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
