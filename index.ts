/**
 * kernelfarm: what host scripts import.
 *
 *   import { connectTracker, compileCpu } from "kernelfarm";
 *
 * It loads the host SDK and the contract only; the tracker and the agent are
 * `kernelfarm/server`'s (server.ts), loaded here only when a script starts an
 * embedded farm or an in-process board.
 */
export {
  connectTracker,
  TrackerClient,
  Session,
  RemoteArray,
  RemoteModule,
  BenchmarkResult,
  compileCpu,
  type ConnectOptions,
  type RequestOptions,
  type RemoteFunction,
  type TimeEvaluatorOptions,
  type CallArg,
  type CallOptions,
  type CompileCpuOptions,
  type CompiledModule,
  type ParamDecl,
  compileCuda,
  compileCudaMany,
  type CompileCudaOptions,
  type CudaCompiledModule,
  type CudaFunctionDecl,
  type KernelResources,
  type Dim3,
  type LaunchDecl,
  measure,
  Measurer,
  MEASURE_OUTCOMES,
  DEFAULT_REMEASURE_TIMES,
  DEFAULT_INFRA_DEADLINE_MS,
  DEFAULT_RETRIES,
  DEFAULT_IN_FLIGHT_PER_BOARD,
  formatReport,
  candidateDigest,
  type BatchOptions,
  type Candidate,
  type CandidateSource,
  type MeasureArg,
  type MeasureOptions,
  type MeasureResult,
  type MeasureOutcome,
  type ReferenceFn,
  type RemeasureOptions,
  type MeasureReport,
  type BoardReport,
  type IdleTime,
} from "./host-sdk/index.ts";
export {
  compileVta,
  vtaConv2d,
  vtaMatmul,
  vtaElementwise,
  vtaVectorAdd,
  VTA_TUTORIALS,
  packNCHW,
  unpackNCHW,
  packOIHW,
  packMatrix,
  unpackMatrix,
  packMatmulInput,
  packMatmulWeight,
  unpackMatmulOutput,
  conv2dReference,
  matmulReference,
  elementwiseReference,
  conv2dOutputSize,
  type VtaCompiledModule,
  type VtaKernelSpec,
  type VtaKernelInfo,
  type CompileVtaOptions,
  type VtaConv2dWorkload,
  type VtaConv2dSchedule,
  type VtaMatmulWorkload,
  type VtaMatmulSchedule,
  type VtaElementwiseWorkload,
  type VtaAluStep,
} from "./host-sdk/index.ts";
export { FarmError, FARM_ERROR_CODES, type AnyTypedArray, type FarmErrorCode, type Dtype, type ModuleBundle } from "./protos/index.ts";
export { randomArray, type RandomFill } from "./domain/index.ts";
// The servers are loaded by `kernelfarm/server` (server.ts), and by startLocalFarm and LocalSession.open when called.
export type { TrackerOptions } from "./tracker/index.ts";
export type { AgentOptions } from "./device-agent/index.ts";
export { LocalSession, type LocalSessionOptions } from "./local-session.ts";
export { startLocalFarm, type LocalFarm, type LocalFarmOptions } from "./local-farm.ts";
