/**
 * Replacing a small file so that a crash at any instant leaves either the old
 * file or the new one, whole: the bytes go to a temporary file in the same
 * directory (a rename within one file system is atomic), which is fsynced
 * before it is renamed over the old one, and the directory is fsynced after,
 * so the rename itself survives a power cut. The tracker's state file
 * (tracker/state-store.ts) and the tokens file (tracker/tokens.ts) are
 * written this way.
 *
 * The temporary file is `.<name>.<pid>.tmp`: one writer per process at a
 * time (each caller serialises its own writes), and one a crashed writer left
 * behind is recognisable (`leftoverTemporaries`).
 */
import { closeSync, fsyncSync, openSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { open, rename } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

function temporaryOf(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
}

/** Replaces `path` with `text` atomically, without blocking the event loop (the file system work runs on libuv's pool). */
export async function writeFileAtomic(path: string, text: string, mode = 0o600): Promise<void> {
  const tmp = temporaryOf(path);
  const file = await open(tmp, "w", mode);
  try {
    await file.writeFile(text);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tmp, path);
  const dir = await open(dirname(path), "r");
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** writeFileAtomic(), synchronously: for a command line tool, or a check at start-up. */
export function writeFileAtomicSync(path: string, text: string, mode = 0o600): void {
  const tmp = temporaryOf(path);
  const fd = openSync(tmp, "w", mode);
  try {
    writeFileSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  const dir = openSync(dirname(path), "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

/** Temporary files that writers of `path` left behind when they died mid-write (never the file itself). */
export function leftoverTemporaries(path: string): string[] {
  const prefix = `.${basename(path)}.`;
  return readdirSync(dirname(path))
    .filter((name) => name.startsWith(prefix) && name.endsWith(".tmp"))
    .map((name) => join(dirname(path), name));
}
