/**
 * The contract every part shares, and nothing else: the messages and services
 * of farm.v1 (the .proto files, what is generated from them, their codecs),
 * the error table, the module bundle's format, the dtypes the wire names.
 * It imports no runtime (sockets, TLS, HTTP, files, logging): that is
 * runtime/; the rules both sides apply to kernels and timings are domain/.
 */
export { FarmError, FARM_ERROR_CODES, CODE_TRAILER, type FarmErrorCode, type WireError } from "./errors.ts";
export { DTYPES, isDtype, dtypeBytes, dtypeOf, elementCount, integerRange, viewAs, type Dtype, type AnyTypedArray, type TypedArrayOf } from "./dtype.ts";
export {
  BUNDLE_FORMAT,
  BUNDLE_VERSION,
  BUNDLE_TARGETS,
  encodeBundle,
  decodeBundle,
  validateBundle,
  bundleDigest,
  launchProblem,
  paramProblem,
  toLaunchConfig,
  type ModuleBundle,
  type LaunchConfig,
  type LaunchDecl,
  type Dim3,
  type BundleTarget,
  type FunctionSpec,
  type ParamSpec,
} from "./bundle.ts";
export { workerCodecWarmups } from "./warm.ts";
export {
  encodeHostFrame,
  encodeHostFrameParts,
  decodeHostFrame,
  encodeBoardFrame,
  encodeBoardFrameParts,
  decodeBoardFrame,
  isGrantFrame,
  isEndFrame,
  encodeGrantFrame,
  encodeEndFrame,
  decodeGrantFrame,
  decodeEndFrame,
  CLEAN_END_FRAME,
  encodeSessionRequest,
  decodeSessionRequest,
  encodeLaneHello,
  decodeLaneWelcome,
  encodeSessionTicket,
  decodeSessionTicket,
  MAX_TICKET_CHARS,
  type SessionTicketFields,
  type HostFrame,
  type HostFrame__Output,
  type BoardFrame,
  type BoardFrame__Output,
  type Grant,
  type Grant__Output,
  type SessionRequest,
  type SessionRequest__Output,
  type LaneHello,
  type LaneHello__Output,
} from "./frames.ts";
export {
  EnumCodec,
  ROUTE,
  LANE,
  LANE_ROLE,
  type LaneRoleName,
  BOARD_STATE,
  HEALTH_REPORT_KIND,
  BOARD_ACTION,
  TOKEN_ACTION,
  TOKEN_KIND,
  toWireMessage,
  fromWireMessage,
  type EnumName,
  type Unset,
  type BoardStateName,
  type SessionLane,
  BOARD_HEALTH,
  type BoardHealthName,
  BOARD_KIND,
  type BoardKindName,
  TVM_BOARD_KIND,
} from "./enums.ts";
export type { TokensRequest, TokensRequest__Output, TokenInfo, TokenInfo__Output, TokensReply, TokensReply__Output } from "./admin.ts";
export { encodeBoardEntry, encodeSummaryReply, type BoardInfo, type BoardInfo__Output, type SummaryReply, type SummaryReply__Output } from "./summary-reply.ts";
export {
  WORKER_MESSAGE_MAX_BYTES,
  WORKER_MAX_PENDING_REQUESTS,
  decodeToAgent,
  decodeToWorker,
  encodeToAgent,
  encodeToWorker,
  workerProtocolError,
  type AgentToWorker,
  type AgentToWorker__Output,
  type WorkerMessage,
  type WorkerToAgent,
} from "./worker-channel.ts";
export { ROUTES, LANES, SESSION_END_GRACE_MS, SESSION_REQUEST_HEADER, parseRoute, type Route, type Lane } from "./routes.ts";
export {
  HostService,
  AgentService,
  CHUNK_BYTES,
  DEFAULT_TRACKER_PORT,
  MAX_MESSAGE_BYTES,
  SESSION_ID_HEADER,
  SESSION_TOKEN_HEADER,
  KEEPALIVE_TIME_MS,
  KEEPALIVE_TIMEOUT_MS,
  LIVENESS_MS,
  type HostServiceClient,
  type HostServiceHandlers,
  type AgentServiceClient,
  type AgentServiceHandlers,
} from "./grpc.ts";
export { FARM_VERSION } from "./version.ts";
/** The board kinds agents serve, as contract.json declares them (the BoardKind enum adds the tracker's tvm-rpc: protos/enums.ts). */
export { BOARD_KINDS } from "./gen/contract.ts";
/** The numeric options of the SDKs' APIs, checked against contract.json's one table of their limits. */
export { checkOption, checkOptions, describeLimit, type OptionApi } from "./option-limits.ts";
export type {
  CudaLaunchLimits as CudaLaunchLimitsMessage,
  CudaLaunchLimits__Output as CudaLaunchLimitsMessage__Output,
} from "./gen/farm/v1/CudaLaunchLimits.ts";
