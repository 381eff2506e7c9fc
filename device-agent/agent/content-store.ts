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
 * A stored file is hashed once, in the background right after it is kept,
 * and handed out after that as long as its inode, size, modification time
 * and status-change time (ctime) are the ones it had when it was hashed: a
 * hash per file rather than per hand-out (64 MiB: ~40 ms less per upload by
 * digest). That is no weaker, by who the workers are (`workers`):
 * * `own-uids` (the agent as root): a stored file is the agent's and
 *   read-only (0444) to them. It is handed out without a copy: a hard link in
 *   the store's `handed/SESSION/DIGEST` (which keeps the bytes while the
 *   session lives, evicted or not) and a symbolic link to that in the
 *   session's folder (which is a tmpfs of its own: no hard link reaches
 *   it). The store and `handed/` are 0711 to workers: a worker opens a
 *   stored file only by a path that holds its digest, which is what a probe
 *   needs anyway. A link moves the ctime, so the fingerprint is taken again
 *   after it.
 * * `agent-user`: a kernel could chmod and write a stored file, even set its
 *   mtime back, but any of that moves its ctime, which only the clock sets,
 *   and only root may set the clock. It is handed out by a copy (a reflink
 *   where the filesystem can), so the stored inode never enters a session.
 * * `root`: workers could set the clock, so every hand-out hashes the file
 *   again.
 *
 * The agent never writes a stored file, not even its times: recency for
 * eviction is kept in memory.
 *
 * A file is named by the sha256 of its bytes (a module's digest, known from
 * compilation) or by its tree digest (`tree-HEX`, domain/tree-digest.ts:
 * what a host hashes in parallel for `upload(…, { dedupe: true })`).
 *
 * One folder per agent (under its scratch folder), owned by the agent and
 * closed to workers (0700): the **agent** keeps and hands out files when a
 * worker asks over its channel (worker.proto store_keep, store_take), so
 * workers running as uids of their own (device-agent/agent/sandbox.ts) can
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
import { chmodSync, constants, mkdirSync, readdirSync, rmSync, statSync, unlinkSync, type BigIntStats } from "node:fs";
import { chmod, copyFile, link, mkdir, open, rename, stat, symlink, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { treeDigestOfFile } from "../../domain/index.ts";
import { openSessionFile } from "../common/session-file.ts";

/** What the store keeps by default: enough for many modules and a few large inputs. */
export const DEFAULT_STORE_BYTES = 1 << 30;

/** The folder of hand-outs by session (workers on uids of their own). */
const HANDED = "handed";
/** A stored file's name: a sha256, or a tree digest with its prefix. */
const DIGEST = /^(tree-)?[0-9a-f]{64}$/;
const TREE = "tree-";

export interface ContentStoreOptions {
  /** The bound in bytes; default DEFAULT_STORE_BYTES. */
  maxBytes?: number;
  /** Who the session workers run as (see above); default `agent-user`. */
  workers?: StoreWorkers;
}

/** Who session workers run as, which decides how a stored file is checked and handed out. */
export type StoreWorkers = "own-uids" | "agent-user" | "root";

export class ContentStore {
  /** Bytes kept since the store was last looked at as a whole (the first keep looks). */
  private keptSinceScan = Infinity;
  /** Keeps in progress by digest: a take of the same digest waits for its keep (and its check). */
  private readonly pending = new Map<string, Promise<void>>();
  /** Files hashed and found to hold their digest, by digest: what their inode, size, mtime and ctime were then. */
  private readonly verified = new Map<string, string>();
  /** When each file was last handed out (ms): eviction's recency, kept here so that a hand-out never touches the file. */
  private readonly lastUsed = new Map<string, number>();
  private seq = 0;
  private readonly maxBytes: number;
  private readonly workers: StoreWorkers;
  /** Files hashed so far (each check that read the whole file): how tests see that a hand-out skipped the hash. */
  hashed = 0;

  constructor(
    readonly dir: string,
    opts: ContentStoreOptions = {},
  ) {
    this.maxBytes = opts.maxBytes ?? DEFAULT_STORE_BYTES;
    this.workers = opts.workers ?? "agent-user";
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // Hand-outs of an agent that died: their sessions are gone.
    rmSync(join(dir, HANDED), { recursive: true, force: true });
    if (this.workers === "own-uids") {
      mkdirSync(join(dir, HANDED), { mode: 0o711 });
      for (const d of [dir, join(dir, HANDED)]) chmodSync(d, 0o711);
    }
  }

  /**
   * Puts the stored file of `sha256` (and exactly `size` bytes) at `dest`, for
   * session `holder` (release() ends its hand-outs); false when the store has
   * no such file.
   */
  async take(sha256: string, size: number, dest: string, holder = "none"): Promise<boolean> {
    if (!DIGEST.test(sha256)) return false;
    await this.pending.get(sha256);
    const path = join(this.dir, sha256);
    try {
      const s = await stat(path, { bigint: true });
      if (s.size !== BigInt(size)) return false;
      if (this.workers === "root" || this.verified.get(sha256) !== fingerprint(s)) {
        if (!(await this.check(path, sha256))) return false;
      }
      this.lastUsed.set(sha256, Date.now());
    } catch {
      return false;
    }
    // Links share the bytes (SessionFiles replaces a file by a new one rather than writing into it): only where
    // workers cannot write the shared inode. Otherwise a copy (a reflink where the filesystem can).
    try {
      if (this.workers !== "own-uids") throw new Error("copied");
      if (!/^[A-Za-z0-9_.-]+$/.test(holder)) throw new Error(`no hand-out for ${holder}`);
      const held = join(this.dir, HANDED, holder);
      await mkdir(held, { mode: 0o711 }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "EEXIST") throw err;
      });
      await chmod(held, 0o711);
      await link(path, join(held, sha256)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "EEXIST") throw err;
      });
      // The link moved the ctime; nothing else could have (the file is the agent's, 0444, to workers of other uids).
      if (this.verified.has(sha256)) this.verified.set(sha256, fingerprint(await stat(path, { bigint: true })));
      await symlink(join(held, sha256), dest);
    } catch {
      try {
        // Exclusively: `dest` is in a folder the session's kernel writes, and a link it left there is never followed.
        await copyFile(path, dest, constants.COPYFILE_FICLONE | constants.COPYFILE_EXCL);
      } catch {
        // Evicted meanwhile (or the name was taken): the host sends the bytes.
        return false;
      }
    }
    return true;
  }

  /** Ends session `holder`'s hand-outs: what was evicted meanwhile is freed now. */
  release(holder: string): void {
    if (/^[A-Za-z0-9_.-]+$/.test(holder)) rmSync(join(this.dir, HANDED, holder), { recursive: true, force: true });
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
      // Never through a link the session's kernel made of the name, only a regular file of `owner` (session-file.ts).
      const { fh, stat: s } = await openSessionFile(dirname(path), basename(path), owner);
      try {
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
    const checked =
      this.workers === "root"
        ? job
        : job.then(() =>
            this.check(join(this.dir, sha256), sha256).then(
              () => {},
              () => {},
            ),
          );
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
    const digest = sha256.startsWith(TREE) ? TREE + (await treeDigestOfFile(path)) : await hashFile(path);
    if (digest !== sha256) {
      this.verified.delete(sha256);
      await unlink(path).catch(() => {});
      return false;
    }
    if (this.workers !== "root") this.verified.set(sha256, fingerprint(before));
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
          return [{ f, size: s.size, at: this.lastUsed.get(f) ?? s.mtimeMs }];
        } catch {
          return [];
        }
      });
    let total = files.reduce((a, x) => a + x.size, 0);
    for (const x of files.sort((a, b) => a.at - b.at)) {
      if (total <= this.maxBytes) break;
      try {
        unlinkSync(join(this.dir, x.f));
        this.lastUsed.delete(x.f);
        this.verified.delete(x.f);
      } catch {
        // gone already
      }
      total -= x.size;
    }
  }
}

/**
 * What changes when a file's bytes do: another inode (replaced), size, or
 * modification time (written); and the ctime, which a write, a chmod or a
 * utimes all move and only the clock sets.
 */
function fingerprint(s: BigIntStats): string {
  return `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
}

/** The sha256 of a file, read a MiB at a time off the event loop. */
async function hashFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  const fh = await open(path, "r");
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    for (let r = await fh.read(buf, 0, buf.length, null); r.bytesRead > 0; r = await fh.read(buf, 0, buf.length, null))
      hash.update(buf.subarray(0, r.bytesRead));
  } finally {
    await fh.close();
  }
  return hash.digest("hex");
}
