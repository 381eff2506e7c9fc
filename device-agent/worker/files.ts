/**
 * A session's working directory: uploads land here under validated plain
 * names, with a cap per file and per session.
 */
import { closeSync, fstatSync, lstatSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, unlinkSync, write } from "node:fs";
import { unlink } from "node:fs/promises";
import { promisify } from "node:util";
import { join } from "node:path";
import { FarmError } from "../../protos/index.ts";
import { quotaError } from "../common/session-disk.ts";
import { fileError, MAX_NAME_BYTES } from "./file-errors.ts";
import type { FileLimits } from "../common/worker-spawn.ts";

function closeUpload(upload: OpenUpload): void {
  if (upload.closed) return;
  upload.closed = true;
  closeSync(upload.fd);
}

const writeAsync = promisify(write) as (fd: number, data: Uint8Array, offset: number, length: number, position: number) => Promise<{ bytesWritten: number }>;

/** A replaced file at least this large is unlinked on the thread pool (SessionFiles.removeOld). */
const FREE_ASYNC_MIN_BYTES = 1 << 20;

/** An upload's chunks written at once, at most (worker/files.ts append). */
const WRITES_IN_FLIGHT = 4;

/** All of `data` at `position` of the file. */
async function writeAll(fd: number, data: Uint8Array, position: number): Promise<void> {
  for (let off = 0; off < data.byteLength;) off += (await writeAsync(fd, data, off, data.byteLength - off, position + off)).bytesWritten;
}

/**
 * The agent's content store as a worker sees it (agent/content-store.ts runs
 * in the agent; main.ts asks it over its channel).
 */
export interface SessionStore {
  /** Links the stored file of `sha256` (`size` bytes) into the session's folder; its name there, or undefined when not held. */
  take(sha256: string, size: number): Promise<string | undefined>;
  /** Asks for the session's file `name` to be kept under `sha256`; settles when the agent is done with it. */
  keep(name: string, sha256: string): Promise<void>;
}

/** A name as a message quotes it: long ones cut (a 255-byte name of `é`s is 127 characters of noise). */
function quoted(name: string): string {
  return JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);
}

/**
 * A plain file name: no path separators, no `..`, no control characters,
 * at most MAX_NAME_BYTES bytes of UTF-8 — the filesystem's limit, which is
 * in bytes: 200 × "é" is 200 characters but 400 bytes.
 */
export function checkUploadName(name: string): string {
  const bytes = Buffer.byteLength(name, "utf8");
  const problem =
    name.length === 0
      ? "is empty"
      : bytes > MAX_NAME_BYTES
        ? `is ${bytes} bytes long in UTF-8 (${name.length} characters); the filesystem's limit is ${MAX_NAME_BYTES} bytes`
        : /[/\\]/.test(name)
          ? "contains a path separator"
          : name.includes("..")
            ? 'contains ".."'
            : name === "."
              ? 'is "."'
              : // eslint-disable-next-line no-control-regex -- control characters are what it looks for
                /[\x00-\x1f\x7f]/.test(name)
                ? "contains a control character"
                : name.startsWith(".module")
                  ? "is reserved for loaded modules"
                  : undefined;
  if (problem) {
    throw new FarmError("INVALID_NAME", `file name ${quoted(name)} ${problem}; upload names must be plain file names`, { details: { bytes } });
  }
  return name;
}

/** Bytes to send in chunks (worker/session-server.ts sendChunks): `size` of them, read a range at a time, then closed. */
export interface ChunkSource {
  readonly size: number;
  read(offset: number, length: number): Uint8Array;
  close?(): void;
}

interface OpenUpload {
  fd: number;
  /** Its descriptor was closed (finished or abandoned): never close a number the process may have reused. */
  closed?: boolean;
  name: string;
  written: number;
  /** The digest the host named for the whole file: kept in the store under it (checked when handed out). */
  sha256?: string;
  /** The file it replaces being unlinked (removeOld): its first write waits for that. */
  freeing?: Promise<void>;
  /** Its chunks' writes in flight. */
  writing: Set<Promise<void>>;
  /** Why a write failed: the upload fails with it. */
  failed?: FarmError;
}

export class SessionFiles {
  private used = 0;
  private readonly sizes = new Map<string, number>();
  /** Files set aside by removeOld. */
  private replaced = 0;

  constructor(
    readonly dir: string,
    private readonly limits: FileLimits,
    private readonly store?: SessionStore,
  ) {}

  path(name: string): string {
    return join(this.dir, checkUploadName(name));
  }

  /** `sha256`: the digest the host names for the whole file; the file is kept in the store under it. */
  begin(name: string, announcedBytes: number, sha256?: string): OpenUpload {
    const path = this.path(name);
    this.checkSize(name, announcedBytes, this.sizes.get(name) ?? 0);
    let fd: number;
    let freeing: Promise<void> | undefined;
    try {
      // A new file, not the old one rewritten: the old may be a link into the store.
      freeing = this.removeOld(path);
      this.release(name);
      fd = openSync(path, "w", 0o600);
    } catch (err) {
      throw this.quotaOr(err, "upload", name);
    }
    return { fd, name, written: 0, writing: new Set(), ...(freeing ? { freeing } : {}), ...(sha256 && this.store ? { sha256 } : {}) };
  }

  /**
   * Removes the file an upload replaces. Freeing a large one's pages takes
   * this thread milliseconds (64 MiB on tmpfs: ~10 ms, a sixth of the upload
   * on a fast lane): it is renamed out of the way (to a reserved name that
   * no listing shows) and unlinked on the thread pool; the new file's first
   * write waits for that, so the two never hold the session's quota at once.
   */
  private removeOld(path: string): Promise<void> | undefined {
    const old = lstatSync(path, { throwIfNoEntry: false });
    if (!old?.isFile() || old.size < FREE_ASYNC_MIN_BYTES) {
      rmSync(path, { force: true });
      return undefined;
    }
    const aside = join(this.dir, `.module-replaced-${this.replaced++}`);
    renameSync(path, aside);
    // Failing, it is left to the session's end, which empties the folder.
    return unlink(aside).catch(() => {});
  }

  /**
   * The file of `sha256` from the store, as `name`, if the store has it
   * (`size` bytes, counted like an upload); false: the host sends the bytes.
   */
  async adopt(name: string, sha256: string, size: number): Promise<boolean> {
    if (!this.store) return false;
    const path = this.path(name);
    this.checkSize(name, size, this.sizes.get(name) ?? 0);
    // Taken first: a file of that name stays as it was when the store has none (the host sends the bytes).
    const taken = await this.store.take(sha256, size);
    if (!taken) return false;
    try {
      rmSync(path, { force: true });
      this.release(name);
      renameSync(join(this.dir, taken), path);
    } catch (err) {
      throw fileError(err, "upload", name);
    }
    this.used += size;
    this.sizes.set(name, size);
    return true;
  }

  /** The digest of an upload in progress, named by its last frame; kept at its end as if named by its first. */
  name(upload: OpenUpload, sha256: string): void {
    if (this.store) upload.sha256 = sha256;
  }

  /**
   * Writes the next chunk of an upload, at its offset, on the thread pool:
   * up to WRITES_IN_FLIGHT chunks at once (each holds its chunk until it is
   * written), so that the lane goes on reading while the disk writes and one
   * chunk's write need not wait for the one before. A write that fails fails
   * the upload at its next chunk or at its end.
   */
  async append(upload: OpenUpload, data: Uint8Array): Promise<void> {
    if (upload.failed) throw upload.failed;
    // The bytes already written are counted in `used`: they are replaced, not added.
    this.checkSize(upload.name, upload.written + data.byteLength, upload.written);
    const at = upload.written;
    // Counted as they are sent to the disk: should one fail, abandon() takes the whole file back.
    upload.written += data.byteLength;
    this.used += data.byteLength;
    this.sizes.set(upload.name, upload.written);
    const writing: Promise<void> = (upload.freeing ? upload.freeing.then(() => writeAll(upload.fd, data, at)) : writeAll(upload.fd, data, at))
      .catch((err: unknown) => {
        upload.failed ??= this.quotaOr(err, "upload", upload.name);
      })
      .finally(() => upload.writing.delete(writing));
    upload.writing.add(writing);
    if (upload.writing.size >= WRITES_IN_FLIGHT) await Promise.race(upload.writing);
    if (upload.failed) throw upload.failed;
  }

  /**
   * Closes the upload once its chunks are written (or abandons it, throwing
   * why, when one failed); with a digest, asks the agent to keep it, without
   * waiting for the copy (64 MiB: tens of ms the host would wait for): the
   * agent's store makes a take of the same digest wait for a keep in progress.
   */
  async finish(upload: OpenUpload): Promise<void> {
    await Promise.all(upload.writing);
    if (upload.failed) {
      this.abandon(upload);
      throw upload.failed;
    }
    closeUpload(upload);
    if (upload.sha256) void this.store!.keep(upload.name, upload.sha256);
  }

  /**
   * Deletes an upload that failed half-way; its descriptor closes once the
   * writes still in flight on it are done (the name goes at once: a new
   * upload may take it).
   */
  abandon(upload: OpenUpload): void {
    if (upload.writing.size === 0) closeUpload(upload);
    else void Promise.allSettled(upload.writing).then(() => closeUpload(upload));
    this.remove(upload.name);
  }

  /** `action`: what the host asked for, as an error names it (a module's load reads its file too). */
  read(name: string, action: "download" | "load" = "download"): Buffer {
    const path = this.path(name);
    try {
      return readFileSync(path);
    } catch (err) {
      throw fileError(err, action, name);
    }
  }

  /**
   * A file to send a chunk at a time (a download): its size when opened, and
   * its bytes read as they go out, so that a download holds one chunk in
   * this process, not the whole file in memory it touches for the first time.
   */
  openRead(name: string): ChunkSource {
    const path = this.path(name);
    let fd: number;
    let size: number;
    try {
      fd = openSync(path, "r");
    } catch (err) {
      throw fileError(err, "download", name);
    }
    try {
      size = fstatSync(fd).size;
    } catch (err) {
      closeSync(fd);
      throw fileError(err, "download", name);
    }
    return {
      size,
      read: (offset, length) => {
        const out = Buffer.allocUnsafe(length);
        let got = 0;
        try {
          for (let n = -1; got < length && n !== 0; got += n) n = readSync(fd, out, got, length - got, offset + got);
        } catch (err) {
          throw fileError(err, "download", name);
        }
        if (got < length) {
          throw new FarmError(
            "RUNTIME_ERROR",
            `file ${quoted(name)} shrank while it was downloaded (a kernel still writing it?); download it again once it is done`,
          );
        }
        return out;
      },
      close: () => closeSync(fd),
    };
  }

  list(): Array<{ name: string; size: number }> {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (err) {
      throw fileError(err, "list");
    }
    const entries: Array<{ name: string; size: number }> = [];
    for (const name of names) {
      if (name.startsWith(".module")) continue;
      // A kernel's dangling link, or a file it removed meanwhile: the link itself, or nothing.
      const stat = statSync(join(this.dir, name), { throwIfNoEntry: false }) ?? lstatSync(join(this.dir, name), { throwIfNoEntry: false });
      if (stat) entries.push({ name, size: stat.size });
    }
    return entries.sort((a, b) => a.name.localeCompare(b.name));
  }

  remove(name: string): void {
    const path = this.path(name);
    try {
      unlinkSync(path);
    } catch (err) {
      throw fileError(err, "remove", name);
    }
    this.release(name);
  }

  private release(name: string): void {
    this.used -= this.sizes.get(name) ?? 0;
    this.sizes.delete(name);
  }

  /**
   * ENOSPC (or EDQUOT) where the session's folder is its own bounded
   * filesystem: the quota was reached (its kernels' files count too), which
   * the host should hear as TOO_LARGE naming it, not as an I/O error.
   */
  private quotaOr(err: unknown, action: "upload", name: string): FarmError {
    const code = (err as NodeJS.ErrnoException).code;
    if (this.limits.diskBytes && (code === "ENOSPC" || code === "EDQUOT")) return quotaError(this.limits.diskBytes);
    return fileError(err, action, name);
  }

  /** `replacing`: bytes of an existing file of that name that the new one replaces. */
  private checkSize(name: string, bytes: number, replacing: number): void {
    if (bytes > this.limits.maxUploadBytes) {
      throw new FarmError("TOO_LARGE", `upload "${name}" is ${bytes} bytes; this board accepts at most ${this.limits.maxUploadBytes} bytes per file`);
    }
    if (this.used - replacing + bytes > this.limits.maxSessionBytes) {
      throw new FarmError(
        "TOO_LARGE",
        `upload "${name}" would bring this session's files to ${this.used - replacing + bytes} bytes; the cap is ${this.limits.maxSessionBytes} bytes per session`,
      );
    }
  }
}
