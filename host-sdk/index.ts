/** The host SDK: what host scripts use to reach boards and build kernels. */
export { connectTracker, TrackerClient, type ConnectOptions, type RequestOptions } from "./tracker-client.ts";
export {
  Session, RemoteArray, RemoteModule, type RemoteFunction, type TimeEvaluatorOptions, type CallArg, type CallOptions,
} from "./session.ts";
export { BenchmarkResult, type StoppedBy } from "./benchmark-result.ts";
export { compileCpu, functionTable, parseParam, type CompileCpuOptions, type ParamDecl } from "./compile-cpu.ts";
export type { CompiledModule } from "./compiled-module.ts";
export { compileCuda, compileCudaMany, type CompileCudaOptions, type CudaCompiledModule, type CudaFunctionDecl, type KernelResources, type Dim3, type LaunchDecl } from "./cuda/index.ts";
export type { FrameChannel } from "./frame-channel.ts";
export {
  compileVta, lowerVtaKernel, vtaConv2d, vtaMatmul, vtaElementwise, vtaVectorAdd,
  VTA_TUTORIALS, VTA_CONV2D, VTA_MATRIX_MULTIPLY, VTA_MATRIX_MULTIPLY_BLOCKED, VTA_VECTOR_ADD,
  packNCHW, unpackNCHW, packOIHW, packMatrix, unpackMatrix, packMatmulInput, packMatmulWeight, unpackMatmulOutput,
  conv2dReference, matmulReference, elementwiseReference, conv2dOutputSize,
  type CompileVtaOptions, type VtaCompiledModule, type VtaKernelInfo, type VtaKernelSpec, type VtaKernelOptions,
  type VtaConv2dWorkload, type VtaConv2dSchedule, type VtaMatmulWorkload, type VtaMatmulSchedule,
  type VtaElementwiseWorkload, type VtaElementwiseSchedule, type VtaAluStep, type VtaEpilogue,
} from "./vta/index.ts";
export {
  measure, Measurer, MEASURE_OUTCOMES, DEFAULT_REMEASURE_TIMES, DEFAULT_INFRA_DEADLINE_MS, DEFAULT_RETRIES, DEFAULT_IN_FLIGHT_PER_BOARD, formatReport, candidateDigest,
  type BatchOptions, type Candidate, type CandidateSource, type MeasureArg, type MeasureOptions, type MeasureResult, type MeasureOutcome, type ReferenceFn, type RemeasureOptions,
  type MeasureReport, type BoardReport, type IdleTime,
} from "./measure/index.ts";
