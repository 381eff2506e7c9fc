/**
 * What a worker prints, as the agent's log may show it. A worker runs a
 * tenant's code, so its stdout and stderr are the tenant's: they belong to
 * its session (session-output.ts, which the session's host reads), and the
 * agent's own log — JSON lines, read by operators and by `jq` — shows them
 * only as a bounded, escaped field of a line of its own ("worker output"),
 * rate-limited, never raw. The watchdog's TIMEOUT marker is the agent's to
 * read, not to show.
 */
import { TIMEOUT_MARKER } from "../common/worker-spawn.ts";

/** The most of one piece of a worker's output a log line shows, in UTF-16 code units (≈ bytes for ASCII). */
export const LOG_EXCERPT_CHARS = 2048;
/** What a worker may put into the agent's log: a burst, then a rate (OutputBudget). */
export const LOG_BURST_BYTES = 1 << 20;
export const LOG_BYTES_PER_S = 64 << 10;

/** A line the watchdog wrote: `\nKFARM-CALL-TIMEOUT <what>\n` (worker/watchdog.ts). */
const MARKER_LINE = new RegExp(`\\n?${TIMEOUT_MARKER} ([^\\n]*)(?:\\n|$)`);

/**
 * Takes the watchdog's marker out of a piece of a worker's stderr: the text
 * without it, and what the marker said (which call ran past which limit).
 */
export function takeTimeoutMarker(text: string): { text: string; timeout?: string } {
  const m = MARKER_LINE.exec(text);
  if (!m) return { text };
  return { text: text.slice(0, m.index) + text.slice(m.index + m[0].length), timeout: m[1]!.trim() };
}

/** One "worker output" line's fields: the excerpt, the output's size, and how many characters the excerpt leaves out. */
export interface Excerpt {
  output: string;
  bytes: number;
  cut: number;
}

/**
 * A worker's output on one stream, gathered into one log line: a pipe hands
 * it over in pieces of a few hundred bytes, and a line per piece would bury
 * the log. What came since the last line is shown as one field: nothing when
 * it holds no visible character (blank lines say nothing), else its first
 * LOG_EXCERPT_CHARS without the trailing line end, with how many characters
 * were left out. JSON's escaping (the logger's) does the rest: control bytes
 * become \u00XX, and bytes that are not UTF-8 were U+FFFD already.
 */
export class PendingOutput {
  private head = "";
  private chars = 0;
  private bytes = 0;
  private visible = false;

  get empty(): boolean {
    return this.bytes === 0;
  }

  /** A piece: its text (decoded) and its size in bytes. */
  add(text: string, bytes: number): void {
    // One character past the bound: enough to tell a cut, and a trailing line end from one that is cut off.
    if (this.head.length <= LOG_EXCERPT_CHARS) this.head += text.slice(0, LOG_EXCERPT_CHARS + 2 - this.head.length);
    this.chars += text.length;
    this.bytes += bytes;
    this.visible ||= text.trim() !== "";
  }

  /** The line's fields for what came since the last take (undefined: nothing to show), and a fresh start. */
  take(): Excerpt | undefined {
    const { head, chars, bytes, visible } = this;
    this.head = "";
    this.chars = this.bytes = 0;
    this.visible = false;
    if (!visible) return undefined;
    const whole = chars === head.length;
    const body = whole ? head.replace(/\r?\n$/, "") : head;
    const output = body.slice(0, LOG_EXCERPT_CHARS);
    // A trailing line end left off a line shown whole is not news.
    const shown = output.length + (whole && body.length <= LOG_EXCERPT_CHARS ? head.length - body.length : 0);
    return { output, bytes, cut: chars - shown };
  }
}

/**
 * What a worker may put into the agent's log: a kernel that floods stdout
 * must not flood the log, nor block the agent's event loop (its log is a
 * synchronous write). A bucket of LOG_BURST_BYTES refilled at
 * LOG_BYTES_PER_S; what does not fit is dropped and counted, and the next
 * line that fits says how much (`dropped()`).
 */
export class OutputBudget {
  private bytes = LOG_BURST_BYTES;
  private at: number;
  private droppedBytes = 0;

  /** `onFlood`: the first drop of a flood, once until a line fits again. */
  constructor(
    private readonly onFlood: () => void,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.at = now();
  }

  /** Whether a line of `cost` bytes may be logged now; if not, the `size` bytes of output it showed are counted as dropped. */
  take(cost: number, size = cost): boolean {
    const now = this.now();
    this.bytes = Math.min(LOG_BURST_BYTES, this.bytes + ((now - this.at) / 1000) * LOG_BYTES_PER_S);
    this.at = now;
    if (cost <= this.bytes) {
      this.bytes -= cost;
      return true;
    }
    if (this.droppedBytes === 0) this.onFlood();
    this.droppedBytes += size;
    return false;
  }

  /** Bytes dropped since the last line that fitted; the count starts again. */
  dropped(): number {
    const n = this.droppedBytes;
    this.droppedBytes = 0;
    return n;
  }
}
