/**
 * The compile cache: encoded bundles on disk under a content hash of
 * everything that decides nvcc's output (its version, arch, flags, source,
 * function table). Entries are written to a temporary file and renamed, so a
 * reader never sees half a file; a bad entry is the caller's to ignore.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";

/** Bumped whenever what is cached, or how the key is made, changes: old entries are then never read. */
export const CACHE_FORMAT = 1;

/** $KFARM_CACHE_DIR, else $XDG_CACHE_HOME/kernelfarm/cuda, else ~/.cache/kernelfarm/cuda (read at each call). */
export function defaultCacheDir(): string {
  if (process.env.KFARM_CACHE_DIR) return process.env.KFARM_CACHE_DIR;
  if (process.env.XDG_CACHE_HOME) return join(process.env.XDG_CACHE_HOME, "kernelfarm", "cuda");
  return join(homedir(), ".cache", "kernelfarm", "cuda");
}

/** sha256 (hex) of the canonical JSON of `parts` plus CACHE_FORMAT: objects with sorted keys, so key order never matters. */
export function cacheKey(parts: Record<string, unknown>): string {
  return createHash("sha256")
    .update(canonicalJson({ cacheFormat: CACHE_FORMAT, ...parts }))
    .digest("hex");
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export function cacheEntryPath(dir: string, key: string): string {
  return join(dir, `${key}.kfm`);
}

/** The entry's bytes, or undefined when there is none (or it cannot be read). */
export async function readCacheEntry(dir: string, key: string): Promise<Uint8Array | undefined> {
  try {
    return new Uint8Array(await readFile(cacheEntryPath(dir, key)));
  } catch {
    return undefined;
  }
}

/** Stores `bytes` as the entry for `key`: written beside it, then renamed over it. */
export async function writeCacheEntry(dir: string, key: string, bytes: Uint8Array): Promise<void> {
  await mkdir(dir, { recursive: true });
  const final = cacheEntryPath(dir, key);
  const temp = `${final}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(temp, bytes);
    await rename(temp, final);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}
