/**
 * FarmError: the one error type of kernelfarm, with a closed set of stable codes.
 *
 * Codes travel on the wire (session Error frames, the `farm-code` trailer of a
 * gRPC status); `cause` stays local, for logs. Every part throws FarmError and
 * converts anything it catches with FarmError.from().
 */
import { status as GrpcStatus, Metadata, type ServiceError } from "@grpc/grpc-js";

/** code → gRPC status at the edge, and what the code means. */
const CODES = {
  INVALID_ARGUMENT: { grpc: GrpcStatus.INVALID_ARGUMENT, doc: "a request field is malformed" },
  NO_BOARD: { grpc: GrpcStatus.NOT_FOUND, doc: "no board serves the key (or label selector)" },
  DEADLINE_EXCEEDED: { grpc: GrpcStatus.DEADLINE_EXCEEDED, doc: "no board became free before the request's deadline" },
  UNAVAILABLE: { grpc: GrpcStatus.UNAVAILABLE, doc: "the tracker (or agent) cannot be reached" },
  NOT_FOUND: { grpc: GrpcStatus.NOT_FOUND, doc: "no such file, module, array or session" },
  INVALID_NAME: { grpc: GrpcStatus.INVALID_ARGUMENT, doc: "an upload name is not a plain file name" },
  TOO_LARGE: { grpc: GrpcStatus.RESOURCE_EXHAUSTED, doc: "a file, session quota or array exceeds its cap" },
  OUT_OF_MEMORY: { grpc: GrpcStatus.RESOURCE_EXHAUSTED, doc: "the board has no memory for the array" },
  BAD_BUNDLE: { grpc: GrpcStatus.INVALID_ARGUMENT, doc: "the module bundle failed validation" },
  TARGET_MISMATCH: { grpc: GrpcStatus.FAILED_PRECONDITION, doc: "the bundle was built for another target" },
  LOAD_ERROR: { grpc: GrpcStatus.FAILED_PRECONDITION, doc: "the board could not load the module" },
  UNKNOWN_FUNCTION: { grpc: GrpcStatus.NOT_FOUND, doc: "the module has no such function" },
  BAD_ARGUMENTS: { grpc: GrpcStatus.INVALID_ARGUMENT, doc: "wrong argument count, dtype or shape" },
  COMPILE_ERROR: { grpc: GrpcStatus.INVALID_ARGUMENT, doc: "the host compiler rejected the source" },
  TOOLCHAIN_MISSING: { grpc: GrpcStatus.FAILED_PRECONDITION, doc: "a host compiler (nvcc, cc) is not installed" },
  LAUNCH_ERROR: { grpc: GrpcStatus.INVALID_ARGUMENT, doc: "a launch configuration the device cannot run (block size, shared memory)" },
  DEVICE_ERROR: { grpc: GrpcStatus.INTERNAL, doc: "the device driver reported an error; its own name for it is in the message" },
  RUNTIME_ERROR: { grpc: GrpcStatus.INTERNAL, doc: "the kernel failed while running" },
  RUNTIME_CRASH: { grpc: GrpcStatus.ABORTED, doc: "the session worker died (segfault, abort, kill)" },
  TIMEOUT: { grpc: GrpcStatus.DEADLINE_EXCEEDED, doc: "a call ran past its timeout; its worker was killed" },
  SESSION_TIMEOUT: { grpc: GrpcStatus.DEADLINE_EXCEEDED, doc: "the session outlived its session timeout" },
  SESSION_CLOSED: { grpc: GrpcStatus.FAILED_PRECONDITION, doc: "the session is closed" },
  AGENT_LOST: { grpc: GrpcStatus.UNAVAILABLE, doc: "the board's agent died or stopped answering" },
  DRAINED: { grpc: GrpcStatus.UNAVAILABLE, doc: "the board or tracker is shutting down" },
  UNAUTHENTICATED: { grpc: GrpcStatus.UNAUTHENTICATED, doc: "no token, or one the tracker does not know (malformed, revoked, expired)" },
  PERMISSION_DENIED: { grpc: GrpcStatus.PERMISSION_DENIED, doc: "the caller's token or session ticket does not allow this" },
  PROTOCOL_ERROR: { grpc: GrpcStatus.INTERNAL, doc: "a peer sent a frame that breaks the protocol" },
  CANCELLED: { grpc: GrpcStatus.CANCELLED, doc: "the caller gave up" },
  INTERNAL: { grpc: GrpcStatus.INTERNAL, doc: "a bug in kernelfarm" },
} as const;

export type FarmErrorCode = keyof typeof CODES;
export const FARM_ERROR_CODES = Object.keys(CODES) as FarmErrorCode[];

const BRAND = Symbol.for("kernelfarm.FarmError");

/** Metadata key of the trailer that carries a FarmError code over gRPC. */
export const CODE_TRAILER = "farm-code";

export class FarmError extends Error {
  override readonly name = "FarmError";
  readonly code: FarmErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: FarmErrorCode, message: string, opts: { details?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.details = opts.details;
  }

  override toString(): string {
    return `[${this.code}] ${this.message}`;
  }

  /** `instanceof` that survives two copies of the package in one process. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  static isCode(value: string): value is FarmErrorCode {
    return Object.hasOwn(CODES, value);
  }

  /** Anything caught → FarmError: FarmErrors pass through, gRPC errors keep their
   * farm code (or are mapped from their status), Node system errors are mapped. */
  static from(err: unknown, fallback: FarmErrorCode = "INTERNAL"): FarmError {
    if (err instanceof FarmError) return err;
    const grpc = fromGrpcError(err);
    if (grpc) return grpc;
    const sys = fromSystemError(err);
    if (sys) return sys;
    const message = err instanceof Error ? err.message : String(err);
    return new FarmError(fallback, message, { cause: err });
  }

  /** The gRPC form: status, details and the `farm-code` trailer. */
  toGrpc(): Partial<ServiceError> {
    const metadata = new Metadata();
    metadata.set(CODE_TRAILER, this.code);
    return { code: CODES[this.code].grpc, details: this.message, metadata };
  }

  toWire(): { code: string; message: string } {
    return { code: this.code, message: this.message };
  }

  static fromWire(e: { code: string; message: string }): FarmError {
    return new FarmError(FarmError.isCode(e.code) ? e.code : "INTERNAL", e.message);
  }
}
Object.defineProperty(FarmError.prototype, BRAND, { value: true });

const GRPC_TO_FARM: Partial<Record<number, FarmErrorCode>> = {
  [GrpcStatus.UNAVAILABLE]: "UNAVAILABLE",
  [GrpcStatus.DEADLINE_EXCEEDED]: "DEADLINE_EXCEEDED",
  [GrpcStatus.CANCELLED]: "CANCELLED",
  [GrpcStatus.INVALID_ARGUMENT]: "INVALID_ARGUMENT",
  [GrpcStatus.NOT_FOUND]: "NOT_FOUND",
  [GrpcStatus.PERMISSION_DENIED]: "PERMISSION_DENIED",
  [GrpcStatus.UNAUTHENTICATED]: "UNAUTHENTICATED",
  [GrpcStatus.RESOURCE_EXHAUSTED]: "TOO_LARGE",
};

function fromGrpcError(err: unknown): FarmError | undefined {
  if (typeof err !== "object" || err === null || !("code" in err) || !("metadata" in err)) return undefined;
  const e = err as ServiceError;
  if (!(e.metadata instanceof Metadata)) return undefined;
  const tagged = e.metadata.get(CODE_TRAILER)[0];
  const message = e.details || e.message;
  if (typeof tagged === "string" && FarmError.isCode(tagged)) return new FarmError(tagged, message, { cause: err });
  return new FarmError(GRPC_TO_FARM[e.code] ?? "INTERNAL", message, { cause: err });
}

const SYSTEM_TO_FARM: Record<string, FarmErrorCode> = {
  ECONNREFUSED: "UNAVAILABLE",
  ENOTFOUND: "UNAVAILABLE",
  ETIMEDOUT: "UNAVAILABLE",
  ECONNRESET: "UNAVAILABLE",
  EPIPE: "UNAVAILABLE",
  ENOENT: "NOT_FOUND",
  ENOSPC: "TOO_LARGE",
};

function fromSystemError(err: unknown): FarmError | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !(code in SYSTEM_TO_FARM)) return undefined;
  return new FarmError(SYSTEM_TO_FARM[code]!, (err as Error).message, { cause: err });
}
