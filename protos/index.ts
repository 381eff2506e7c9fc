/** The contract shared by every part: errors, frames, bundle format, gRPC services. */
export { FarmError, FARM_ERROR_CODES, CODE_TRAILER, type FarmErrorCode, type WireError } from "./errors.ts";
export { DTYPES, isDtype, dtypeBytes, dtypeOf, elementCount, integerRange, viewAs, type Dtype, type AnyTypedArray, type TypedArrayOf } from "./dtype.ts";
export {
  BUNDLE_FORMAT, BUNDLE_VERSION, BUNDLE_TARGETS, encodeBundle, decodeBundle, validateBundle, bundleDigest, launchProblem, paramProblem, toLaunchConfig,
  type ModuleBundle, type LaunchConfig, type LaunchDecl, type Dim3, type BundleTarget, type FunctionSpec, type ParamSpec,
} from "./bundle.ts";
export { hostCpuTarget, binaryCpuTarget, type CpuTarget } from "./cpu-target.ts";
export {
  encodeHostFrame, encodeHostFrameParts, decodeHostFrame, encodeBoardFrame, encodeBoardFrameParts, decodeBoardFrame,
  isGrantFrame, isEndFrame, encodeGrantFrame, encodeEndFrame, decodeGrantFrame, decodeEndFrame, CLEAN_END_FRAME,
  encodeSessionRequest, decodeSessionRequest, encodeLaneHello, decodeLaneWelcome,
  type HostFrame, type HostFrame__Output, type BoardFrame, type BoardFrame__Output, type Grant__Output, type SessionRequest__Output,
} from "./frames.ts";
export { encodeBoardEntry, encodeSummaryReply } from "./summary-reply.ts";
export { LaneSocket, framed, acceptHello, welcome, refuse, awaitWelcome, HELLO_TIMEOUT_MS, type LaneRole } from "./lane.ts";
export {
  WORKER_MESSAGE_MAX_BYTES, WORKER_MAX_PENDING_REQUESTS, decodeToAgent, decodeToWorker, encodeToAgent, encodeToWorker, workerProtocolError,
  type AgentToWorker, type AgentToWorker__Output, type WorkerMessage, type WorkerToAgent,
} from "./worker-channel.ts";
export { ROUTES, LANES, SESSION_END_GRACE_MS, SESSION_REQUEST_HEADER, parseRoute, type Route, type Lane } from "./routes.ts";
export {
  HostService, AgentService, CHANNEL_OPTIONS, SERVER_OPTIONS, CHUNK_BYTES, MAX_MESSAGE_BYTES,
  SESSION_ID_HEADER, SESSION_TOKEN_HEADER, LIVENESS_MS, parseAddress,
  type HostServiceClient, type HostServiceHandlers, type AgentServiceClient, type AgentServiceHandlers,
} from "./grpc.ts";
export { randomArray, fillRange, fillProblem, type RandomFill } from "./random.ts";
export { rootLogger, componentLogger, type Logger } from "./log.ts";
export { FARM_VERSION } from "./version.ts";
export { LIVENESS_PATH, READINESS_PATH, isProbePath, answerProbe, type Readiness } from "./probes.ts";
export {
  AUTHORIZATION_HEADER, MAX_TOKEN_CHARS, CERT_RELOAD_INTERVAL_MS, clientSecurity, checkTokenShape, callMetadata, grpcClient, makeClient, grpcServerCredentials,
  bearerToken, httpServer, socketServer, connectSocket, httpToken, httpClientOptions, isLoopbackHost, diagnoseTransport,
  type ClientSecurity, type ClientTls, type ServerTls, type SecurityFlags,
} from "./credentials.ts";
export {
  blockRegisters, cudaLaunchLimitsCapabilities, cudaLaunchLimitsFrom, cudaLaunchProblem, type CudaLaunchLimits, type KernelLaunchResources, type LaunchShape,
} from "./cuda-limits.ts";
export { DEFAULT_PRECISION_BUDGET_MS, MAX_PRECISION_REPEATS, MIN_PRECISION_REPEATS, median, medianRse } from "./precision.ts";
export { CLOCK_EVENT_REASONS, clockEventNames, throttlingNames, describeThrottling, throttledOf, type ClockEventReason, type ThrottleSample } from "./throttle.ts";
export { TREE_LEAF_BYTES, treeDigest, treeDigestOfFile, treeRoot } from "./tree-digest.ts";
