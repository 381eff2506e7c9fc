/**
 * The audit log: one JSON line per grant, release, session end, operator
 * action, token change and refusal, with who (the token's name and kind)
 * and from where (the peer address). Rotated by size: `audit.jsonl` becomes
 * `audit.jsonl.1`, and so on up to `keep` files; the oldest goes.
 *
 * Writes are synchronous appends: a line is on disk (in the page cache) when
 * the action it records is answered, and an append of one line is atomic
 * for readers of the file.
 *
 * Refusals are the exception: anyone who reaches a port can cause them, as
 * fast as the tracker answers, so they are counted per caller and reason and
 * written a bounded number of times per interval (tracker/refusal-tally.ts);
 * the rest of the history is not rotated away by them.
 */
import { appendFileSync, existsSync, renameSync, rmSync, statSync } from "node:fs";
import type { Logger } from "../runtime/index.ts";
import { RefusalTally } from "./refusal-tally.ts";

export const DEFAULT_AUDIT_MAX_BYTES = 16 << 20;
export const DEFAULT_AUDIT_KEEP = 5;

export type AuditEvent = "grant" | "release" | "session_end" | "refused" | "board_command" | "token_create" | "token_revoke" | "token_lost" | "agent_attach";

export interface AuditRecord {
  event: AuditEvent;
  /** The token's name ("anonymous" where the farm runs without tokens). */
  who: string;
  kind?: string;
  peer?: string;
  [field: string]: unknown;
}

export class AuditLog {
  private size: number;
  private readonly refusals = new RefusalTally((r) => this.append(r));

  constructor(
    readonly path: string | undefined,
    private readonly log: Logger,
    private readonly maxBytes = DEFAULT_AUDIT_MAX_BYTES,
    private readonly keep = DEFAULT_AUDIT_KEEP,
  ) {
    this.size = path && existsSync(path) ? statSync(path).size : 0;
  }

  /**
   * Writes `r` now; a refusal is counted, and written as refusal-tally.ts
   * says. Returns false for a refusal only counted (not the first of its
   * caller and reason this interval): whoever logs refusals logs that one
   * at debug level, so the process log is not flooded either.
   */
  record(r: AuditRecord): boolean {
    if (!this.path) return true;
    if (r.event === "refused") return this.refusals.add({ ...r, event: "refused" });
    this.append(r);
    return true;
  }

  /** Writes the counts of refusals not written yet (the tracker is stopping). */
  close(): void {
    if (this.path) this.refusals.flush();
  }

  private append(r: AuditRecord): void {
    const line = `${JSON.stringify({ at: new Date().toISOString(), ...r })}\n`;
    try {
      if (this.size + line.length > this.maxBytes && this.size > 0) this.rotate();
      appendFileSync(this.path!, line, { mode: 0o600 });
      this.size += Buffer.byteLength(line);
    } catch (err) {
      // The farm keeps serving; the operator hears about it.
      this.log.error({ path: this.path, err: (err as Error).message }, "cannot write the audit log");
    }
  }

  private rotate(): void {
    const p = this.path!;
    rmSync(`${p}.${this.keep}`, { force: true });
    for (let i = this.keep - 1; i >= 1; i--) if (existsSync(`${p}.${i}`)) renameSync(`${p}.${i}`, `${p}.${i + 1}`);
    renameSync(p, `${p}.1`);
    this.size = 0;
  }
}
