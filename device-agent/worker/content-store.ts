/**
 * Files an agent's sessions uploaded, kept by the sha256 of their bytes so a
 * later session that uploads the same bytes (the same module, the same
 * weights) gets them without their crossing the network again: the host
 * names the digest in the upload's first frame, and asks first for more
 * than a frame of bytes. A file is kept under the digest its uploader named
 * and hashed each time it is handed out (an uploader may have named a wrong
 * one; a session's kernel runs as the agent's user and could write into
 * the store): no session is ever given bytes other than the ones it named,
 * and a file that fails the check is dropped.
 *
 * One folder per agent (under its scratch folder), shared by the workers of
 * all its boards through atomic renames and hard links; bounded in bytes
 * (each worker may overshoot by a sixteenth before it looks), the least
 * recently used files going first.
 */
import { createHash } from "node:crypto";
import { closeSync, copyFileSync, linkSync, mkdirSync, openSync, readSync, readdirSync, renameSync, statSync, unlinkSync, utimesSync } from "node:fs";
import { join } from "node:path";

/** What the store keeps by default: enough for many modules and a few large inputs. */
export const DEFAULT_STORE_BYTES = 1 << 30;

const DIGEST = /^[0-9a-f]{64}$/;

export class ContentStore {
  /** Bytes this process kept since it last looked at the whole store (the first keep looks). */
  private keptSinceScan = Infinity;

  constructor(
    readonly dir: string,
    private readonly maxBytes = DEFAULT_STORE_BYTES,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** Puts the stored file of `sha256` (and exactly `size` bytes) at `dest`; false when the store has no such file. */
  take(sha256: string, size: number, dest: string): boolean {
    if (!DIGEST.test(sha256)) return false;
    const path = join(this.dir, sha256);
    try {
      if (statSync(path).size !== size) return false;
      if (hashFile(path) !== sha256) {
        unlinkSync(path);
        return false;
      }
      // Most recently used: the last to be evicted.
      const now = new Date();
      utimesSync(path, now, now);
    } catch {
      return false;
    }
    // A link shares the bytes (SessionFiles replaces a file by a new one rather than writing into it).
    try {
      linkSync(path, dest);
    } catch {
      try {
        copyFileSync(path, dest);
      } catch {
        // Evicted by another worker meanwhile: the host sends the bytes.
        return false;
      }
    }
    return true;
  }

  /** Keeps the file at `path` under the digest its uploader named (checked by take()). */
  keep(path: string, sha256: string): void {
    if (!DIGEST.test(sha256)) return;
    const tmp = join(this.dir, `.${sha256}.${process.pid}`);
    try {
      linkSync(path, tmp);
    } catch {
      copyFileSync(path, tmp);
    }
    renameSync(tmp, join(this.dir, sha256));
    // Every module of a tuning batch is kept: look at the whole store only once a sixteenth of its bound has
    // come in since the last look, not at every keep (each look stats every file).
    this.keptSinceScan += statSync(join(this.dir, sha256)).size;
    if (this.keptSinceScan >= this.maxBytes / 16) this.evict();
  }

  /** Drops the least recently used files until the store is within its bound. */
  private evict(): void {
    this.keptSinceScan = 0;
    const files = readdirSync(this.dir)
      .filter((f) => DIGEST.test(f))
      .flatMap((f) => {
        try {
          const s = statSync(join(this.dir, f));
          return [{ f, size: s.size, at: s.mtimeMs }];
        } catch {
          return [];
        }
      });
    let total = files.reduce((a, x) => a + x.size, 0);
    for (const x of files.sort((a, b) => a.at - b.at)) {
      if (total <= this.maxBytes) break;
      try {
        unlinkSync(join(this.dir, x.f));
      } catch {
        // another worker took it first
      }
      total -= x.size;
    }
  }
}

/** The sha256 of a file, read a MiB at a time. */
function hashFile(path: string): string {
  const hash = createHash("sha256");
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    for (let n = readSync(fd, buf); n > 0; n = readSync(fd, buf)) hash.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}
