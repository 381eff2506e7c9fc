/** A worker thread of VtaCompilePool: compiles one conv2d schedule per message and sends back what measure() uploads. */
import { parentPort } from "node:worker_threads";
import { FarmError, vtaConv2d, type VtaConv2dSchedule, type VtaConv2dWorkload } from "kernelfarm";

parentPort!.on("message", ({ id, workload, schedule }: { id: number; workload: VtaConv2dWorkload; schedule: Partial<VtaConv2dSchedule> }) => {
  try {
    const m = vtaConv2d(workload, schedule);
    // The decoded program and kernel notes stay here: measure() needs the bundle and its description only.
    parentPort!.postMessage({ id, module: { bytes: m.bytes, name: m.name, digest: m.digest, target: m.target, functions: m.functions } });
  } catch (err) {
    const e = FarmError.from(err);
    parentPort!.postMessage({ id, error: { code: e.code, message: e.message } });
  }
});
