/**
 * C's stdio in the worker process, as a tenant's kernel uses it.
 *
 * A kernel's printf to a pipe is held in libc's buffer until it fills (4 KiB)
 * or the process exits, so what a call printed would reach the agent — and
 * the session's host, through `remote.output()` — late, out of step with the
 * calls, or never (a worker killed by its watchdog): fflush(NULL) after the
 * session's native code ran hands it over.
 *
 * And the worker's stdout and stderr come to it non-blocking (its runtime
 * sets O_NONBLOCK on them): C's stdio, which expects blocking writes, then
 * drops what it holds whenever the pipe is full for a moment (EAGAIN), and
 * so would the watchdog's marker. They are made blocking again: the agent
 * reads them all the time.
 */
import koffi from "koffi";

const F_GETFL = 3;
const F_SETFL = 4;
const O_NONBLOCK = 0o4000;

interface Libc {
  fflush(stream: null): number;
  fcntl(fd: number, cmd: number, arg: number): number;
}

let libc: Libc | null | undefined;

function bound(): Libc | null {
  if (libc === undefined) {
    try {
      const lib = koffi.load("libc.so.6");
      libc = {
        fflush: lib.func("int fflush(void *stream)") as Libc["fflush"],
        fcntl: lib.func("int fcntl(int fd, int cmd, int arg)") as Libc["fcntl"],
      };
    } catch {
      libc = null;
    }
  }
  return libc;
}

/** Binds libc's functions (koffi loads libc.so.6: ~1 ms): done while the worker is idle, off the grant's path. */
export function bindCStdio(): void {
  bound();
}

/** Flushes every C stdio stream of this process; nothing where libc cannot be bound (a libc without libc.so.6). */
export function flushCStdio(): void {
  bound()?.fflush(null);
}

/** Makes the worker's stdout and stderr blocking, as C's stdio expects them. */
export function blockingStdio(): void {
  const c = bound();
  if (!c) return;
  for (const fd of [1, 2]) {
    const flags = c.fcntl(fd, F_GETFL, 0);
    if (flags >= 0 && flags & O_NONBLOCK) c.fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
}
