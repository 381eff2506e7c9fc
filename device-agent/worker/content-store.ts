/**
 * Files an agent's sessions uploaded, kept by the sha256 of their bytes so a
 * later session that uploads the same bytes (the same module, the same
 * weights) gets them without their crossing the network again: the host
 * names the digest in the upload's first frame, and asks first for more
 * than a frame of bytes. A file is kept under the digest its uploader named
 * (who may have named a wrong one) and checked before it is handed out: no
 * session is ever given bytes other than the ones it named, and a file that
 * fails the check is dropped.
 *
 * How often it is hashed depends on who can write it. Where workers run as
 * uids of their own (the agent as root), a stored file is the agent's and
 * read-only (0444) to them, and the agent never writes one: it is hashed
 * once, in the background right after it is kept, and handed out after that
 * as long as its inode, size and modification time are the ones it had when
 * it was hashed — a hash per file rather than per hand-out (64 MiB: ~40 ms
 * less per upload by digest), and no weaker, as nothing that can reach it
 * could have changed it. Where workers run as the agent's user a kernel
 * could write into the store (and set the time back), so every hand-out
 * hashes the file again.
 *
 * One folder per agent (under its scratch folder), owned by the agent and
 * closed to workers (0700): the **agent** keeps and hands out files when a
 * worker asks over IPC (worker/protocol.ts "store-keep", "store-take"), so
 * workers running as uids of their own (device-agent/sandbox.ts) can
 * neither read the store nor change a stored file. Keeping copies the
 * session's file (a link would share an inode its kernel owns and could
 * rewrite under a later session); handing out links the stored file, which
 * is the agent's and read-only to workers, into the session's folder. Every
 * operation is asynchronous: the agent's event loop also carries its
 * heartbeats. Bounded in bytes (looked at once a sixteenth of the bound has
 * been kept), the least recently used files going first.
 *
 * This module runs in the agent; it sits with the worker's files because the
 * worker's upload path (files.ts) is what it serves.
 */
import { createHash } from "node:crypto";
import { constants, mkdirSync, readdirSync, statSync, unlinkSync, type BigIntStats } from "node:fs";
import { chmod, copyFile, link, open, rename, stat, unlink, utimes } from "node:fs/promises";
import { join } from "node:path";

/** What the store keeps by default: enough for many modules and a few large inputs. */
export const DEFAULT_STORE_BYTES = 1 << 30;

const DIGEST = /^[0-9a-f]{64}$/;

export interface ContentStoreOptions {
  /** The bound in bytes; default DEFAULT_STORE_BYTES. */
  maxBytes?: number;
  /**
   * Whether session workers could write a stored file: true where they run
   * as the agent's user (every hand-out is hashed), false where they run as
   * uids of their own (each file is hashed once). Default true.
   */
  workersCanWrite?: boolean;
}

export class ContentStore {
  /** Bytes kept since the store was last looked at as a whole (the first keep looks). */
  private keptSinceScan = Infinity;
  /** Keeps in progress by digest: a take of the same digest waits for its keep (and its check). */
  private readonly pending = new Map<string, Promise<void>>();
  /** Files hashed and found to hold their digest, by digest: what their inode, size and mtime were then. */
  private readonly verified = new Map<string, string>();
  private seq = 0;
  private readonly maxBytes: number;
  private readonly workersCanWrite: boolean;
  /** Files hashed so far (each check that read the whole file): how tests see that a hand-out skipped the hash. */
  hashed = 0;

  constructor(
    readonly dir: string,
    opts: ContentStoreOptions = {},
  ) {
    this.maxBytes = opts.maxBytes ?? DEFAULT_STORE_BYTES;
    this.workersCanWrite = opts.workersCanWrite ?? true;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** Puts the stored file of `sha256` (and exactly `size` bytes) at `dest`; false when the store has no such file. */
  async take(sha256: string, size: number, dest: string): Promise<boolean> {
    if (!DIGEST.test(sha256)) return false;
    await this.pending.get(sha256);
    const path = join(this.dir, sha256);
    try {
      const s = await stat(path, { bigint: true });
      if (s.size !== BigInt(size)) return false;
      if (this.workersCanWrite || this.verified.get(sha256) !== fingerprint(s)) {
        if (!(await this.check(path, sha256))) return false;
      }
      // Most recently used: the last to be evicted (the store's own change: the check's record follows it).
      const now = new Date();
      await utimes(path, now, now);
      if (!this.workersCanWrite) this.verified.set(sha256, fingerprint(await stat(path, { bigint: true })));
    } catch {
      return false;
    }
    // A link shares the bytes (SessionFiles replaces a file by a new one rather than writing into it).
    try {
      await link(path, dest);
    } catch {
      try {
        await copyFile(path, dest);
      } catch {
        // Evicted meanwhile: the host sends the bytes.
        return false;
      }
    }
    return true;
  }

  /**
   * Keeps a copy of the file at `path` under the digest its uploader named
   * (checked by take()). `owner`: keep it only if that uid owns it — a
   * sandboxed worker's own file, not one its kernel pointed a link at.
   * Never throws: a file that cannot be kept is not kept.
   */
  keep(path: string, sha256: string, owner?: number): Promise<void> {
    if (!DIGEST.test(sha256)) return Promise.resolve();
    const job = (async () => {
      await this.pending.get(sha256);
      // O_NOFOLLOW: the session's kernel may have made the name a symbolic link.
      const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        const s = await fh.stat();
        if (!s.isFile() || (owner !== undefined && s.uid !== owner)) return;
        const tmp = join(this.dir, `.${sha256}.${process.pid}.${this.seq++}`);
        // The open descriptor, not the name: what was checked is what is copied (reflinked where the filesystem can).
        await copyFile(`/proc/self/fd/${fh.fd}`, tmp, constants.COPYFILE_FICLONE);
        // Read-only to all: a worker running as another uid cannot change it, and the agent never writes it.
        await chmod(tmp, 0o444);
        await rename(tmp, join(this.dir, sha256));
        this.verified.delete(sha256);
        this.keptSinceScan += s.size;
      } finally {
        await fh.close();
      }
      // Every module of a tuning batch is kept: look at the whole store only once a sixteenth of its bound has
      // come in since the last look, not at every keep (each look stats every file).
      if (this.keptSinceScan >= this.maxBytes / 16) this.evict();
    })().catch(() => {});
    // Where the file cannot change once kept, its one check follows the keep, off the upload's reply.
    const checked = this.workersCanWrite ? job : job.then(() => this.check(join(this.dir, sha256), sha256).then(() => {}, () => {}));
    this.pending.set(sha256, checked);
    void checked.then(() => {
      if (this.pending.get(sha256) === checked) this.pending.delete(sha256);
    });
    return job;
  }

  /**
   * Hashes the stored file: true when it holds its digest (recorded, where
   * it cannot change, so the next hand-out need not hash it); otherwise it
   * is dropped. False also when it is not there.
   */
  private async check(path: string, sha256: string): Promise<boolean> {
    let before;
    try {
      before = await stat(path, { bigint: true });
    } catch {
      return false;
    }
    this.hashed++;
    if ((await hashFile(path)) !== sha256) {
      this.verified.delete(sha256);
      await unlink(path).catch(() => {});
      return false;
    }
    if (!this.workersCanWrite) this.verified.set(sha256, fingerprint(before));
    return true;
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
        // gone already
      }
      total -= x.size;
    }
  }
}

/** What changes when a file's bytes do: another inode (replaced), size, or modification time (written). */
function fingerprint(s: BigIntStats): string {
  return `${s.ino}:${s.size}:${s.mtimeNs}`;
}

/** The sha256 of a file, read a MiB at a time off the event loop. */
async function hashFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  const fh = await open(path, "r");
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    for (let r = await fh.read(buf, 0, buf.length, null); r.bytesRead > 0; r = await fh.read(buf, 0, buf.length, null)) hash.update(buf.subarray(0, r.bytesRead));
  } finally {
    await fh.close();
  }
  return hash.digest("hex");
}
