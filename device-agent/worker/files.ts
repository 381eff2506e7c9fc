/**
 * A session's working directory: uploads land here under validated plain
 * names, with a cap per file and per session.
 */
import { closeSync, lstatSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, write } from "node:fs";
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

const writeAsync = promisify(write) as (fd: number, data: Uint8Array, offset: number, length: number) => Promise<{ bytesWritten: number }>;

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

interface OpenUpload {
  fd: number;
  /** Its descriptor was closed (finished or abandoned): never close a number the process may have reused. */
  closed?: boolean;
  name: string;
  written: number;
  /** The digest the host named for the whole file: kept in the store under it (checked when handed out). */
  sha256?: string;
}

export class SessionFiles {
  private used = 0;
  private readonly sizes = new Map<string, number>();

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
    try {
      // A new file, not the old one rewritten: the old may be a link into the store.
      rmSync(path, { force: true });
      this.release(name);
      fd = openSync(path, "w", 0o600);
    } catch (err) {
      throw this.quotaOr(err, "upload", name);
    }
    return { fd, name, written: 0, ...(sha256 && this.store ? { sha256 } : {}) };
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
   * Writes the next chunk of an upload. Asynchronously (the thread pool
   * writes while the lane goes on reading the chunks after it); a session's
   * chunks are still written one after the other, in order.
   */
  async append(upload: OpenUpload, data: Uint8Array): Promise<void> {
    // The bytes already written are counted in `used`: they are replaced, not added.
    this.checkSize(upload.name, upload.written + data.byteLength, upload.written);
    let off = 0;
    try {
      while (off < data.byteLength) off += (await writeAsync(upload.fd, data, off, data.byteLength - off)).bytesWritten;
    } catch (err) {
      // What got written is on the disk until abandon() removes the file.
      upload.written += off;
      this.used += off;
      this.sizes.set(upload.name, upload.written);
      throw this.quotaOr(err, "upload", upload.name);
    }
    upload.written += data.byteLength;
    this.used += data.byteLength;
    this.sizes.set(upload.name, upload.written);
  }

  /**
   * Closes the upload; with a digest, asks the agent to keep it, without
   * waiting for the copy (64 MiB: tens of ms the host would wait for): the
   * agent's store makes a take of the same digest wait for a keep in progress.
   */
  finish(upload: OpenUpload): void {
    closeUpload(upload);
    if (upload.sha256) void this.store!.keep(upload.name, upload.sha256);
  }

  /** Closes and deletes an upload that failed half-way. */
  abandon(upload: OpenUpload): void {
    closeUpload(upload);
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
