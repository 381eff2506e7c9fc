/** The host SDK: what host scripts use to reach boards and build kernels. */
export { connectTracker, TrackerClient, type ConnectOptions, type RequestOptions } from "./tracker-client.ts";
export {
  Session, RemoteArray, RemoteModule, type RemoteFunction, type TimeEvaluatorOptions, type CallArg, type CallOptions,
} from "./session.ts";
export { BenchmarkResult } from "./benchmark-result.ts";
export { compileCpu, functionTable, parseParam, type CompileCpuOptions, type ParamDecl } from "./compile-cpu.ts";
export type { CompiledModule } from "./compiled-module.ts";
export type { FrameChannel } from "./frame-channel.ts";
