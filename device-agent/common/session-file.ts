/**
 * Files of a session's folder as the agent touches them. The agent may be
 * root, and the folder is its kernel's to write: a name there may be a
 * symbolic link to anything, a FIFO that blocks a reader, or a file of
 * another owner linked in. So the agent opens such a file without following
 * links and without blocking, and takes it only if it is a regular file —
 * where workers have uids of their own, one the session's uid owns. What was
 * checked is the open descriptor, so what is read is what was checked.
 */
import { constants, type Stats } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { FarmError } from "../../protos/index.ts";

/** A file of a session's folder as the agent read it: its plain name and its bytes. */
export interface SessionFile {
  name: string;
  bytes: Buffer;
}

/**
 * Opens `name` of the session folder `dir` for reading, checked as above
 * (`owner`: the uid it must belong to; undefined: any). Throws a FarmError
 * naming the file, never the agent's path.
 */
export async function openSessionFile(dir: string, name: string, owner: number | undefined): Promise<{ fh: FileHandle; stat: Stats }> {
  let fh: FileHandle;
  try {
    fh = await open(join(dir, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ELOOP") throw new FarmError("BAD_ARGUMENTS", `${name} is a symbolic link: name a file the session uploaded`);
    if (code === "ENOENT") throw new FarmError("NOT_FOUND", `the session has no file ${name}: upload it first`);
    throw new FarmError("BAD_ARGUMENTS", `${name} cannot be read (${code})`);
  }
  const stat = await fh.stat();
  if (!stat.isFile() || (owner !== undefined && stat.uid !== owner)) {
    await fh.close();
    throw new FarmError("BAD_ARGUMENTS", `${name} is not a file the session uploaded`);
  }
  return { fh, stat };
}

/** Reads `name` of the session folder `dir`, checked as openSessionFile does. */
export async function readSessionFile(dir: string, name: string, owner: number | undefined): Promise<SessionFile> {
  const { fh } = await openSessionFile(dir, name, owner);
  try {
    return { name, bytes: await fh.readFile() };
  } finally {
    await fh.close();
  }
}
