/**
 * Farm events: everything an operator may want to see change — agents
 * attaching and leaving, boards changing state, sessions granted and ended,
 * queues growing and shrinking, heartbeats missed. The tracker's parts emit
 * them; the metrics, the live view and `kfarm status --watch` listen.
 *
 * Events are plain records (msgpackr- and JSON-friendly), never live objects;
 * `at` is the tracker's clock in ms since the epoch. Listeners run
 * synchronously and must be cheap; one that throws is logged and kept.
 */
import type { Logger } from "../runtime/index.ts";
import type { BoardInfo } from "../protos/index.ts";

export type FarmEvent =
  | { type: "agent"; at: number; agent: string; name: string; peer: string; change: "attached" | "lost"; reason?: string }
  | { type: "board"; at: number; board: BoardInfo; change: "added" | "changed" | "removed"; reason?: string }
  | {
      type: "session";
      at: number;
      session: string;
      board: string;
      key: string;
      client: string;
      change: "granted" | "ended";
      /** ended: "OK" for a clean close, else the FarmError code. */
      reason?: string;
      message?: string;
      queuedMs?: number;
      durationMs?: number;
      /** ended: the lane it had (direct | relay | grpc), or "none" when it never opened one. */
      lane?: string;
      /** ended: bytes its lane carried host → board and board → host (relay, grpc: as relayed; direct: as its worker reported them; tracker/lane-bytes.ts). */
      bytesToBoard?: number;
      bytesFromBoard?: number;
    }
  | { type: "queue"; at: number; key: string; pending: number }
  | { type: "heartbeat_missed"; at: number; agent: string; silentMs: number }
  /** A board's health moved (tracker/health.ts); canary runs that change nothing are not events. */
  | { type: "health"; at: number; board: string; key: string; from: string; to: string; reason: string };

export type FarmEventType = FarmEvent["type"];
export type FarmEventListener = (event: FarmEvent) => void;

export class FarmEvents {
  private readonly listeners = new Set<FarmEventListener>();

  constructor(private readonly log: Logger) {}

  /** Calls `listener` with every event from now on; returns the unsubscribe. */
  subscribe(listener: FarmEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  emit(event: FarmEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.log.error({ err: (err as Error).message, event: event.type }, "a farm event listener failed");
      }
    }
  }
}
