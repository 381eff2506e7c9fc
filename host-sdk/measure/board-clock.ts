/**
 * Where one board's time went in a measure() batch: busy while a Measure
 * request is outstanding on it, otherwise idle for the most advanced reason
 * any of its in-flight slots has — sending a candidate's bytes, waiting for
 * the host, for a compile, for a session, or for the batch's last
 * candidates on other boards.
 */
import type { IdleTime } from "./types.ts";

/** What a slot of a board is doing. `wait`: waiting for a candidate, for the pipeline's reason of the moment. */
export type SlotActivity = "transfer" | "host" | "wait" | "session" | "tail";

/** Which idle cause wins when slots differ: the one closest to keeping the board busy. */
const PRIORITY: readonly (keyof IdleTime)[] = ["transfer", "host", "compile", "session", "tail"];

export class BoardClock {
  readonly idle: IdleTime = { compile: 0, host: 0, transfer: 0, session: 0, tail: 0 };
  busySeconds = 0;
  private readonly slots: SlotActivity[];
  private outstanding = 0;
  private last = performance.now();

  /** `waitCause` says what a slot waiting for a candidate waits for, as of now. */
  constructor(
    slots: number,
    private readonly waitCause: () => "compile" | "host" | "tail",
  ) {
    this.slots = Array.from({ length: slots }, (): SlotActivity => "session");
  }

  /** Books the time since the last event to what the board was doing; call before anything it depends on changes. */
  tick(): void {
    const now = performance.now();
    const s = (now - this.last) / 1e3;
    this.last = now;
    if (this.outstanding > 0) {
      this.busySeconds += s;
      return;
    }
    const causes = new Set<keyof IdleTime>(this.slots.map((a) => (a === "wait" ? this.waitCause() : a)));
    this.idle[PRIORITY.find((c) => causes.has(c)) ?? "tail"] += s;
  }

  set(slot: number, activity: SlotActivity): void {
    this.tick();
    this.slots[slot] = activity;
  }

  measureSent(): void {
    this.tick();
    this.outstanding++;
  }

  measureDone(): void {
    this.tick();
    this.outstanding--;
  }
}
