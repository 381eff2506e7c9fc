/**
 * A session's bounded filesystem (docs/sandbox.md): as root, with workers
 * running as uids of their own, the agent mounts a tmpfs of the session's
 * disk quota on the session's folder before handing the session over, and
 * detaches it when the worker is done with it. RLIMIT_FSIZE bounds one
 * file; this bounds all of them: a kernel that writes on gets ENOSPC from
 * the OS, and the agent can tell (statfs) that the quota is what stopped it.
 *
 * mount(2) and umount2(2) are called through libc (koffi, as
 * worker/parent-death.ts does), not by spawning `mount`: this is on the
 * grant path, where a process start would cost milliseconds.
 */
import { readFileSync, statfsSync } from "node:fs";
import { basename } from "node:path";
import koffi, { type KoffiFunc } from "koffi";
import { FarmError } from "../../protos/index.ts";

const MS_NOSUID = 2;
const MS_NODEV = 4;
/** umount2: detach now, free once the last open file or working directory in it is gone (a kernel's leftovers). */
const MNT_DETACH = 2;
const EINVAL = 22;
/** The tmpfs's source name in /proc/mounts: how the agent finds those a dead agent left. */
const SOURCE = "kfarm-session";

const ENOENT = 2;

interface Libc {
  mount: (source: string, target: string, fstype: string, flags: number, data: string) => number;
  umount2: KoffiFunc<(target: string, flags: number) => number>;
}

let libc: Libc | undefined;
function loadLibc(): Libc {
  if (!libc) {
    const lib = koffi.load("libc.so.6");
    libc = {
      mount: lib.func("int mount(const char *source, const char *target, const char *fstype, unsigned long flags, const char *data)"),
      umount2: lib.func("int umount2(const char *target, int flags)") as KoffiFunc<(target: string, flags: number) => number>,
    };
  }
  return libc;
}

/** The message the host gets when a session's files reached its quota (an upload's ENOSPC, a worker dead of a full disk). */
export function quotaMessage(quotaBytes: number): string {
  return `the session's files reached its disk quota of ${quotaBytes} bytes (--worker-disk); remove files it no longer needs (remove()), upload less, or ask the farm's operator for a larger quota`;
}

export function quotaError(quotaBytes: number): FarmError {
  return new FarmError("TOO_LARGE", quotaMessage(quotaBytes));
}

/** Mounts and unmounts the tmpfs of sessions' folders. */
export class SessionDisk {
  constructor(
    /** The quota of every session, in bytes. */
    readonly quotaBytes: number,
  ) {
    if (!(Number.isSafeInteger(quotaBytes) && quotaBytes > 0))
      throw new FarmError("INVALID_ARGUMENT", `--worker-disk: a session's disk quota must be a whole number of bytes > 0, got ${quotaBytes}`, {
        details: { option: "workerDisk" },
      });
  }

  /** Only on Linux, as root: elsewhere the agent cannot mount. */
  static supported(): boolean {
    return process.platform === "linux" && process.getuid?.() === 0;
  }

  /**
   * Mounts a fresh tmpfs of the quota on the (existing, empty) folder `dir`,
   * owned by `uid` (its group `uid` too) and closed to everyone else.
   * nosuid, nodev: nothing there may raise privileges or open devices. Not
   * noexec: a CPU kernel's shared object is loaded from there.
   */
  mount(dir: string, uid: number): void {
    const options = `size=${this.quotaBytes},mode=0700,uid=${uid},gid=${uid}`;
    if (loadLibc().mount(SOURCE, dir, "tmpfs", MS_NOSUID | MS_NODEV, options) !== 0) {
      const errno = koffi.errno();
      // Named by the session's folder alone: this message ends the session, and its host hears it (no agent path).
      throw new FarmError(
        "INTERNAL",
        `cannot mount the tmpfs (${options}) of session ${basename(dir)}: errno ${errno}; the agent must run as root on Linux, or pass --worker-disk off`,
        { details: { errno } },
      );
    }
  }

  /**
   * As unmount, on a thread of libuv's pool: umount2 waits for the kernel
   * (milliseconds: an RCU grace period), and a session's end must not hold
   * the agent's event loop, where the next session's assignment waits. The
   * errno of a call on another thread is not the one koffi.errno() reads, so
   * a failure is tried again here, whose errno is (EINVAL then: detached).
   */
  unmountSoon(dir: string): Promise<void> {
    return new Promise((resolve, reject) =>
      loadLibc().umount2.async(dir, MNT_DETACH, (err: unknown, rc: number) => {
        if (err) return reject(err as Error);
        try {
          if (rc !== 0) this.unmount(dir);
          resolve();
        } catch (retried) {
          reject(retried as Error);
        }
      }),
    );
  }

  /** Detaches the tmpfs on `dir`, if one is there (its memory is freed once nothing in it is open). */
  unmount(dir: string): void {
    if (loadLibc().umount2(dir, MNT_DETACH) !== 0) {
      const errno = koffi.errno();
      // EINVAL: not a mount point (already detached, or never mounted); ENOENT: gone.
      if (errno !== EINVAL && errno !== ENOENT)
        throw new FarmError("INTERNAL", `cannot unmount the tmpfs of session ${basename(dir)}: errno ${errno}`, { details: { errno } });
    }
  }

  /**
   * Detaches every session tmpfs whose mount point `which` picks (those an
   * agent killed without its clean-up left: leftovers.ts decides), deepest
   * first, then calls `then` on each mount point. Returns how many.
   */
  static detachWhere(which: (mountPoint: string) => boolean, then: (mountPoint: string) => void = () => {}): number {
    let info: string;
    try {
      info = readFileSync("/proc/self/mountinfo", "utf8");
    } catch {
      return 0;
    }
    const points: string[] = [];
    for (const line of info.split("\n")) {
      const [before, after] = line.split(" - ");
      if (!after?.startsWith(`tmpfs ${SOURCE} `)) continue;
      // Field 5 is the mount point, with space, tab, newline and backslash as octal escapes.
      const dir = before!.split(" ")[4]!.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
      if (which(dir)) points.push(dir);
    }
    points.sort((a, b) => b.length - a.length);
    for (const dir of points) {
      loadLibc().umount2(dir, MNT_DETACH);
      then(dir);
    }
    return points.length;
  }

  /**
   * Whether the filesystem at `dir` is (nearly) full: less than a block
   * free, or no inode. False when it cannot be looked at (gone already).
   */
  full(dir: string): boolean {
    try {
      const s = statfsSync(dir);
      return s.bavail === 0 || s.ffree === 0 || s.bavail * s.bsize < 64 * 1024;
    } catch {
      return false;
    }
  }
}
