/**
 * Reads what `ptxas -v` (nvcc `-Xptxas -v`) prints on stderr: per entry
 * function and architecture, registers, barriers, stack, spills, static shared
 * memory and constant memory.
 *
 * The lines look like this (nvcc 13.0):
 *
 *   ptxas info    : 0 bytes gmem, 256 bytes cmem[3]
 *   ptxas info    : Compiling entry function 'saxpy' for 'sm_90'
 *   ptxas info    : Function properties for saxpy
 *       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 10 registers, used 0 barriers, 4096 bytes smem, 360 bytes cmem[0]
 *   ptxas info    : Compile time = 1.338 ms
 *   ptxas info    : Function properties for _Z3bigi          (a non-entry function)
 *       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *
 * Items of the "Used" line are optional and come in varying order across
 * versions ("used N barriers" is recent; "cmem[0]" is absent for sm_90 in
 * nvcc 13), so each is matched on its own; unknown items are ignored.
 */

/** What ptxas reported for one kernel on one architecture. */
export interface KernelResources {
  /** Registers per thread. */
  registers: number;
  /** Named barriers used (`__syncthreads` counts one); 0 when not reported. */
  barriers: number;
  /** Stack frame of the kernel itself, bytes per thread. */
  stackFrameBytes: number;
  /** Stack including the callees' frames ("cumulative stack size"), bytes per thread; 0 when not reported. */
  cumulativeStackBytes: number;
  /** Register spills to local memory, bytes per thread. */
  spillStoreBytes: number;
  spillLoadBytes: number;
  /** Static shared memory (`__shared__` arrays), bytes per block; dynamic shared memory is the launch's. */
  sharedMemBytes: number;
  /** Constant memory the kernel's own line lists (sum of its `cmem[N]` banks, e.g. its parameters); 0 when none is listed. */
  constMemBytes: number;
}

/** Per architecture ("sm_90"), per entry function name as ptxas spells it (mangled when not `extern "C"`). */
export type PtxasReport = Record<string, Record<string, KernelResources>>;

const INFO = /^ptxas info\s*:\s*(.*)$/;
const ENTRY = /^Compiling entry function '([^']+)' for '([^']+)'$/;
const PROPERTIES = /^Function properties for (\S+)$/;
const STACK = /^(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads$/;

function emptyResources(): KernelResources {
  return { registers: 0, barriers: 0, stackFrameBytes: 0, cumulativeStackBytes: 0, spillStoreBytes: 0, spillLoadBytes: 0, sharedMemBytes: 0, constMemBytes: 0 };
}

/** Parses `ptxas -v` output; lines that are not ptxas info (diagnostics, warnings) are skipped. */
export function parsePtxasInfo(text: string): PtxasReport {
  const report: PtxasReport = {};
  // The entry whose block we are in, and whether the last "Function properties" line named it.
  let entry: { name: string; resources: KernelResources } | undefined;
  let propertiesOfEntry = false;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    const info = INFO.exec(line);
    if (!info) {
      const stack = STACK.exec(line);
      if (stack && entry && propertiesOfEntry) {
        entry.resources.stackFrameBytes = Number(stack[1]);
        entry.resources.spillStoreBytes = Number(stack[2]);
        entry.resources.spillLoadBytes = Number(stack[3]);
      }
      continue;
    }
    const body = info[1]!.trim();
    const start = ENTRY.exec(body);
    if (start) {
      const name = start[1]!;
      const arch = start[2]!;
      entry = { name, resources: emptyResources() };
      (report[arch] ??= {})[name] = entry.resources;
      propertiesOfEntry = false;
      continue;
    }
    const props = PROPERTIES.exec(body);
    if (props) {
      propertiesOfEntry = entry !== undefined && props[1] === entry.name;
      continue;
    }
    if (body.startsWith("Used ") && entry) {
      readUsed(body, entry.resources);
      propertiesOfEntry = false;
    }
  }
  return report;
}

function readUsed(body: string, r: KernelResources): void {
  for (const item of body.split(",").map((s) => s.trim())) {
    let m: RegExpExecArray | null;
    if ((m = /^Used (\d+) registers$/i.exec(item))) r.registers = Number(m[1]);
    else if ((m = /^used (\d+) barriers?$/i.exec(item))) r.barriers = Number(m[1]);
    else if ((m = /^(\d+) bytes smem$/.exec(item))) r.sharedMemBytes = Number(m[1]);
    else if ((m = /^(\d+) bytes cmem\[\d+\]$/.exec(item))) r.constMemBytes += Number(m[1]);
    else if ((m = /^(\d+) bytes cumulative stack size$/.exec(item))) r.cumulativeStackBytes = Number(m[1]);
  }
}
