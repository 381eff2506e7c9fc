/**
 * One board of a measure() batch: the session its slots share, replaced
 * when lost, and the record of what it sent on each session that decides
 * which candidate a lost session is charged to. The slots themselves (taking
 * candidates, recording results) are the pipeline's.
 */
import type { BoardClock } from "./board-clock.ts";
import type { BoardSession } from "./board-session.ts";

export class BoardLoop {
  session?: BoardSession;
  private acquiring?: Promise<BoardSession | undefined>;
  /** The boards it used, in order: more than one after a lost session. */
  readonly boards: string[] = [];
  candidates = 0;
  /** When this board's session requests began to fail, if they are failing: its outage clock. */
  outageSince?: number;
  /**
   * Per session, its Measure requests in the order they went out from the
   * first the board has not answered well (those before it can be no
   * culprit), and whether the board answered each. Weak: a session dropped
   * and let go takes its entries with it.
   */
  private readonly sent = new WeakMap<BoardSession, { index: number; ok?: boolean }[]>();
  /** Per lost session: the candidate whose run it died in. */
  private readonly culprit = new WeakMap<BoardSession, number>();

  constructor(
    readonly clock: BoardClock,
    private readonly obtain: () => Promise<BoardSession | undefined>,
  ) {}

  /** The board's session, asking for one (once, for all its slots) when it has none. Undefined: none can be had. */
  async acquire(): Promise<BoardSession | undefined> {
    if (this.session && !this.session.session.isClosed) return this.session;
    this.acquiring ??= this.obtain().then((s) => {
      this.acquiring = undefined;
      if (s) {
        this.session = s;
        if (this.boards.at(-1) !== s.session.board.id) this.boards.push(s.session.board.id);
      }
      return s;
    });
    return this.acquiring;
  }

  /** Forgets a lost session (unless already replaced) and closes it. */
  drop(s: BoardSession): void {
    if (this.session === s) this.session = undefined;
    s.session.close().catch(() => {});
  }

  measureSent(s: BoardSession, index: number): void {
    if (!this.sent.has(s)) this.sent.set(s, []);
    this.sent.get(s)!.push({ index });
    this.clock.measureSent();
  }

  measureSettled(s: BoardSession, index: number, ok: boolean): void {
    const sent = this.sent.get(s);
    const entry = sent?.find((e) => e.index === index && e.ok === undefined);
    if (entry) entry.ok = ok;
    while (sent?.[0]?.ok === true) sent.shift();
    this.clock.measureDone();
  }

  /**
   * Whether candidate `index` is the one its lost session died under: the
   * board serves a session's requests in order, so it is the first request
   * sent that the board did not answer — the ones behind it failed because
   * of it. A candidate that failed before its request went out (an upload)
   * is the culprit only if no request was outstanding. The first question
   * about a session settles its culprit for every slot that asks after.
   */
  blame(s: BoardSession, index: number): boolean {
    if (!this.culprit.has(s)) this.culprit.set(s, this.sent.get(s)?.find((e) => e.ok !== true)?.index ?? index);
    return this.culprit.get(s) === index;
  }
}
