/**
 * Node's file system errors, as the host hears them: a FarmError that names
 * the session-relative file, never the agent's path. Node puts the absolute
 * path (`/tmp/kfarm-agent-PID/SESSION/NAME`) in every fs error's message;
 * that says where the agent keeps its scratch folder and other sessions'
 * folders, which is nothing a tenant needs (issue 27). The whole error stays
 * as `cause`, for the agent's own logs.
 */
import { FarmError } from "../../protos/index.ts";

/** NAME_MAX of Linux (and of every filesystem a session's folder lives on): a name's length in bytes, not characters. */
export const MAX_NAME_BYTES = 255;

/** What the session was doing with the file, as the message says it ("download", "remove", …). */
export type FileAction = "upload" | "download" | "remove" | "load" | "list";

/**
 * `err` (thrown by node:fs on the session's file `name`) as a FarmError
 * naming `name` only; a FarmError passes through. `name` undefined: the
 * session's folder itself (listdir).
 */
export function fileError(err: unknown, action: FileAction, name?: string): FarmError {
  if (err instanceof FarmError) return err;
  const code = String((err as NodeJS.ErrnoException | null)?.code ?? "");
  const what = name === undefined ? "the session's folder" : `"${name}"`;
  const opts = { cause: err, details: { errno: code, ...(name === undefined ? {} : { name }) } };
  switch (code) {
    case "ENOENT":
      return new FarmError("NOT_FOUND", name === undefined ? "this session's folder is gone" : `no file "${name}" in this session`, opts);
    case "EISDIR":
    case "ERR_FS_EISDIR":
      return new FarmError(
        "INVALID_NAME",
        `${what} is a folder in this session (a kernel made it), not a file: ${action} takes file names; ${action === "upload" ? "upload under another name" : "name a file (listdir() shows them)"}`,
        opts,
      );
    case "ENOTDIR":
      return new FarmError("NOT_FOUND", `${what} is not a file or folder this session can ${action}`, opts);
    case "ENAMETOOLONG":
      return new FarmError("INVALID_NAME", `${what} is longer than the filesystem's limit of ${MAX_NAME_BYTES} bytes; use a shorter name`, opts);
    case "ELOOP":
      return new FarmError("NOT_FOUND", `${what} is a symbolic link that never reaches a file (a kernel made it); remove it or name another file`, opts);
    case "EACCES":
    case "EPERM":
      return new FarmError("PERMISSION_DENIED", `the session may not ${action} ${what}: permission denied (a kernel changed its mode or owner?)`, opts);
    case "EMFILE":
    case "ENFILE":
      return new FarmError("TOO_LARGE", `cannot ${action} ${what}: the session's worker has too many files open (its kernels' included); close some`, opts);
    case "ENOSPC":
    case "EDQUOT":
      return new FarmError("TOO_LARGE", `cannot ${action} ${what}: the board's disk is full; remove files this session no longer needs`, opts);
    default:
      // Node's own message carries the path: say only the code and the call.
      return new FarmError(
        "INTERNAL",
        `cannot ${action} ${what}: ${code || "error"}${(err as NodeJS.ErrnoException | null)?.syscall ? ` (${(err as NodeJS.ErrnoException).syscall})` : ""}`,
        opts,
      );
  }
}

/**
 * A message for the host with the agent's folders taken out: `dir/NAME`
 * becomes `NAME`, and what is left of the scratch folder's path becomes
 * "the agent's folder". For messages of libraries the worker cannot word
 * itself (dlopen's, a backend's): the file system errors are mapped above.
 */
export function withoutAgentPaths(message: string, sessionDir: string, scratchDir: string): string {
  return message.split(`${sessionDir}/`).join("").split(sessionDir).join("the session's folder").split(scratchDir).join("the agent's folder");
}
