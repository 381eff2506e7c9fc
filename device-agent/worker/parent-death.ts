/**
 * Ties a session worker's life to its agent's. A worker can be deep in a
 * native call (a hanging kernel) or still starting up when the agent dies,
 * so the end of its channel to the agent (worker/agent-channel.ts) is not
 * enough: on Linux the kernel is asked to SIGKILL the worker when its parent
 * exits (prctl PR_SET_PDEATHSIG).
 */
import koffi from "koffi";

const PR_SET_PDEATHSIG = 1;
const SIGKILL = 9;

export function dieWithParent(parentPid: number): void {
  if (process.platform === "linux") {
    const prctl = koffi.load("libc.so.6").func("int prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5)");
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  }
  // The parent may have died before the request was made (we were re-parented).
  if (process.ppid !== parentPid) process.exit(0);
}
