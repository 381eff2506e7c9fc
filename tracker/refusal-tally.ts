/**
 * Refusals, counted instead of written one by one: what keeps the audit log's
 * history (grants, releases, revocations, operator actions) from being
 * rotated away by anyone who can reach a port. A token-less caller is refused
 * at ~670 calls a second per connection; written one line each, that is
 * ~200 KiB/s, and the 6 × 16 MiB of the log turn over in minutes.
 *
 * Per interval (REFUSAL_INTERVAL_MS), refusals are counted by a key. For a
 * caller without a valid token: its address without the port (a flood opens
 * connections from many ports), what it attempted, the code and the reason.
 * For a caller with a valid token: the token's name, what it attempted and
 * the code (the reason may quote what the caller chose, such as a key name;
 * the record keeps the first). The first refusal of a key in an interval is
 * written at once, `count: 1`, so an operator sees a new refuser as it
 * happens; the rest of that interval's are one record at its end,
 * `count: N`, with `first` and `last` times. So the counts of a key's
 * records add up to its refusals.
 *
 * Distinct keys of callers without a valid token are bounded per interval
 * too (MAX_REFUSAL_KEYS): such a caller can vary its address within its
 * network and the token it claims. Past the bound, their refusals are
 * counted under one overflow key (`who: "*"`), one record at the interval's
 * end. A token's keys need no such bound: there are as many as the
 * operator made tokens, times the attempts and codes, and a token that
 * floods is named and can be revoked. With every string clipped
 * (MAX_FIELD_CHARS), callers without a token make an interval write at most
 * 2 × MAX_REFUSAL_KEYS + 1 records — docs/security.md, "The audit log", says
 * how long history lasts under a flood.
 */
/** A refusal as the audit log records it (tracker/audit.ts's AuditRecord, which this module must not import: the log owns a tally). */
export interface RefusalRecord {
  event: "refused";
  who: string;
  kind?: string;
  peer?: string;
  [field: string]: unknown;
}

export const REFUSAL_INTERVAL_MS = 60_000;
/** Distinct keys of callers without a valid token written per interval; the rest share one overflow record. */
export const MAX_REFUSAL_KEYS = 16;
/** A refusal's string fields (reason, who, doing, peer) are clipped to this: a caller chooses parts of them. */
export const MAX_FIELD_CHARS = 256;

interface Tally {
  /** The record of its first refusal, clipped; the aggregate repeats it with the count. */
  record: RefusalRecord;
  /** Refusals after the first, this interval. */
  more: number;
  firstAt: number;
  lastAt: number;
}

export class RefusalTally {
  private tallies = new Map<string, Tally>();
  /** Keys of callers without a valid token this interval (bounded by maxKeys). */
  private anonymousKeys = 0;
  private overflow: Tally | undefined;
  private timer: NodeJS.Timeout | undefined;

  /** `write` appends one record to the log, with its own time. */
  constructor(
    private readonly write: (r: RefusalRecord) => void,
    private readonly intervalMs = REFUSAL_INTERVAL_MS,
    private readonly maxKeys = MAX_REFUSAL_KEYS,
  ) {}

  /** Counts a refusal; true when it was written now (the first of its key this interval), so a caller may log it once too. */
  add(r: RefusalRecord): boolean {
    const record = clipped(r);
    const at = Date.now();
    const anonymous = record.kind === "anonymous" || record.kind === "tvm" || record.who === "unknown";
    const key = JSON.stringify(
      anonymous ? [hostOf(String(record.peer ?? "")), record.doing, record.code, record.reason] : [record.who, record.kind, record.doing, record.code],
    );
    this.timer ??= setTimeout(() => this.flush(), this.intervalMs).unref();
    const tally = this.tallies.get(key);
    if (tally) {
      tally.more++;
      tally.lastAt = at;
      return false;
    }
    if (!anonymous || this.anonymousKeys < this.maxKeys) {
      if (anonymous) this.anonymousKeys++;
      this.tallies.set(key, { record, more: 0, firstAt: at, lastAt: at });
      this.write({ ...record, count: 1 });
      return true;
    }
    this.overflow ??= {
      record: {
        event: "refused",
        who: "*",
        kind: "*",
        peer: "*",
        doing: "*",
        code: "*",
        reason: `refusals of callers without a valid token past the first ${this.maxKeys} distinct addresses, attempts and reasons of this interval, counted together`,
      },
      more: 0,
      firstAt: at,
      lastAt: at,
    };
    this.overflow.more++;
    this.overflow.lastAt = at;
    return false;
  }

  /** Ends the interval: one record per key refused again since its first, and the overflow's. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const all = [...this.tallies.values(), ...(this.overflow ? [this.overflow] : [])];
    this.tallies = new Map();
    this.anonymousKeys = 0;
    this.overflow = undefined;
    for (const t of all) {
      if (t.more > 0) this.write({ ...t.record, count: t.more, first: new Date(t.firstAt).toISOString(), last: new Date(t.lastAt).toISOString() });
    }
  }
}

/** "ipv4:10.0.0.9:40022" → "ipv4:10.0.0.9", "[::1]:5000" → "[::1]": a flood opens connections from many ports of one address. */
function hostOf(peer: string): string {
  const m = /^(.*):\d+$/.exec(peer);
  return m ? m[1]! : peer;
}

function clipped(r: RefusalRecord): RefusalRecord {
  const out: RefusalRecord = { ...r };
  for (const [field, value] of Object.entries(out)) {
    if (typeof value === "string" && value.length > MAX_FIELD_CHARS) out[field] = `${value.slice(0, MAX_FIELD_CHARS - 3)}...`;
  }
  return out;
}
