/**
 * When `upload(…, { dedupe: true })` asks the board first and when it just
 * sends. Asking first costs the tree digest before the first byte goes, plus
 * a round trip; it saves the transfer when the board holds the bytes. Where
 * this host has seen a board's lane carry bytes faster than it hashes them,
 * asking first can only lose. Then the bytes go at once and are hashed
 * meanwhile on other cores, and the digest rides on the last frame so that
 * the board keeps them for later sessions. Neither way is slower than a plain
 * upload by more than the hash, and the hash is then the smaller of the two.
 *
 * Rates are remembered per board and lane in this process, from uploads of
 * at least RATE_MIN_BYTES and from hashes. Until both are known, the upload
 * asks first.
 */

/** Uploads smaller than this say little about the lane's rate. */
export const RATE_MIN_BYTES = 4 << 20;
/** A probe's round trip, budgeted into asking first. */
const PROBE_MS = 1;

interface Rates {
  /** Bytes per ms, the latest measurements weighed 1/2 against what came before. */
  transfer?: number;
  hash?: number;
}

const rates = new Map<string, Rates>();

function blend(old: number | undefined, now: number): number {
  return old === undefined ? now : (old + now) / 2;
}

/** An upload of `bytes` took `ms` on `link` (board and lane). */
export function noteTransfer(link: string, bytes: number, ms: number): void {
  if (bytes < RATE_MIN_BYTES || ms <= 0) return;
  const r = rates.get(link) ?? {};
  r.transfer = blend(r.transfer, bytes / ms);
  rates.set(link, r);
}

/** A tree digest of `bytes` took `ms` here. */
export function noteHash(link: string, bytes: number, ms: number): void {
  if (bytes < RATE_MIN_BYTES || ms <= 0) return;
  const r = rates.get(link) ?? {};
  r.hash = blend(r.hash, bytes / ms);
  rates.set(link, r);
}

/** "probe": hash, ask, send only if the board lacks the bytes; "send": send now, hash meanwhile, digest on the last frame. */
export function dedupePlan(link: string, bytes: number): "probe" | "send" {
  const r = rates.get(link);
  if (!r?.transfer || !r.hash) return "probe";
  return bytes / r.transfer < bytes / r.hash + PROBE_MS ? "send" : "probe";
}

/** Forgets what was measured (tests). */
export function resetDedupeRates(): void {
  rates.clear();
}

/**
 * What one session has put on its board by digest (a module's sha256, or the
 * tree digest of `dedupe` bytes). Its agent keeps those bytes, so the same
 * bytes again in the session are taken from the board's store, whatever
 * their name: asked for even when one frame would carry them, and hashed
 * before they are sent when bytes of their size went before, though the lane
 * outruns the hash (a bet that costs the hash where it loses).
 */
export class SessionUploads {
  private readonly digests = new Set<string>();
  private readonly sizes = new Set<number>();

  /** `bytes` bytes of `digest` are on the board (sent with it, or taken from its store). */
  placed(digest: string, bytes: number): void {
    this.digests.add(digest);
    this.sizes.add(bytes);
  }

  /** Whether this session put bytes of `digest` on its board. */
  holds(digest: string): boolean {
    return this.digests.has(digest);
  }

  /** Whether this session put bytes of this size on its board: these may be the same. */
  mayHold(bytes: number): boolean {
    return this.sizes.has(bytes);
  }
}
