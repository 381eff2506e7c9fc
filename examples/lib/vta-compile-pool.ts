/**
 * VTA schedules compiled on worker threads. The VTA compiler is synchronous
 * and some schedules take a second or more (tiny tiles: tens of MB of
 * instructions): on the tuning process's one thread it held up the search,
 * the pipeline and every board's results, and at 8 boards that thread was
 * the limit (BENCHMARKS.md §19). A pool keeps the main thread for the
 * pipeline; each module comes back as the bytes measure() uploads.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { FarmError, type CompiledModule, type FarmErrorCode, type VtaConv2dSchedule, type VtaConv2dWorkload } from "kernelfarm";

const BOOT = `
const { workerData } = require("node:worker_threads");
import("tsx/esm/api").then(({ tsImport }) => tsImport(workerData.module, workerData.module));
`;

type Reply = { id: number; module: CompiledModule } | { id: number; error: { code: FarmErrorCode; message: string } };

export class VtaCompilePool {
  private readonly workers: Worker[] = [];
  private readonly idle: Worker[] = [];
  private readonly waiting: (() => void)[] = [];
  private readonly pending = new Map<number, { resolve: (m: CompiledModule) => void; reject: (e: Error) => void }>();
  private next = 0;

  constructor(size = Math.max(1, availableParallelism() - 1)) {
    for (let i = 0; i < size; i++) {
      // A worker does not inherit the TypeScript loader this script runs under (Node 20): it loads its module through tsx's API.
      const w = new Worker(BOOT, { eval: true, workerData: { module: new URL("./vta-compile-worker.ts", import.meta.url).href } });
      w.on("error", (err) => {
        // A worker that died fails what waits on any worker: nothing is left waiting for ever.
        for (const p of this.pending.values()) p.reject(new FarmError("INTERNAL", `a VTA compile worker died: ${err.message}`));
        this.pending.clear();
      });
      w.on("message", (r: Reply) => {
        const p = this.pending.get(r.id)!;
        this.pending.delete(r.id);
        if ("error" in r) p.reject(new FarmError(r.error.code, r.error.message));
        else p.resolve(r.module);
        this.release(w);
      });
      this.workers.push(w);
      this.idle.push(w);
    }
  }

  /** The conv2d module for `schedule`, or COMPILE_ERROR as vtaConv2d would throw it. */
  async conv2d(workload: VtaConv2dWorkload, schedule: Partial<VtaConv2dSchedule>): Promise<CompiledModule> {
    const w = await this.take();
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      w.postMessage({ id, workload, schedule });
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }

  private async take(): Promise<Worker> {
    for (let w = this.idle.pop(); ; w = this.idle.pop()) {
      if (w) return w;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  private release(w: Worker): void {
    this.idle.push(w);
    this.waiting.shift()?.();
  }
}
