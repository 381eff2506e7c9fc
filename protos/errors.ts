/**
 * FarmError: the one error type of kernelfarm, with a closed set of stable codes.
 *
 * Code, message and details travel on the wire (session Error frames, the
 * agent's and tracker's SessionEnded/EndSession reasons, the worker's IPC; the
 * `farm-code` and `farm-details-bin` trailers of a gRPC status); `cause` stays
 * local, for logs. Every part throws FarmError and converts anything it catches
 * with FarmError.from().
 *
 * Details travel as JSON text of one object (`details_json` of the Error
 * message; UTF-8 in the binary trailer), at most DETAILS_MAX_BYTES: entries
 * that do not fit, or that JSON cannot hold (a bigint, a cycle), are left out,
 * so a large one never costs the small ones a reader acts on (`sticky`). A
 * receiver ignores details that do not parse as a JSON object: a peer's bad
 * details never turn an error into another error.
 */
import { status as GrpcStatus, Metadata, type ServiceError } from "@grpc/grpc-js";
import { CODE_TRAILER, DETAILS_MAX_BYTES, DETAILS_TRAILER, ERROR_CODES, GRPC_STATUS_TO_ERROR_CODE } from "./gen/contract.ts";

/**
 * CODE_TRAILER: metadata key of the trailer that carries a FarmError code over gRPC.
 * DETAILS_TRAILER: the one that carries its details (binary: `-bin`, base64 on the wire,
 * since text trailers must be printable ASCII).
 * DETAILS_MAX_BYTES: most bytes of details' JSON on the wire. Small: in a gRPC status
 * they share the HTTP/2 header-list limit (64 KiB in Node) with the message, which can
 * hold a crash's output; details are facts for code to act on (a flag, a name, a
 * number), the prose belongs in the message.
 */
export { CODE_TRAILER, DETAILS_MAX_BYTES, DETAILS_TRAILER };

/**
 * code → gRPC status at the edge, and what the code means: declared once, in
 * protos/farm/v1/contract.json, for both SDKs (npm run gen:contract).
 */
const CODES = ERROR_CODES;

export type FarmErrorCode = keyof typeof CODES;
export const FARM_ERROR_CODES = Object.keys(CODES) as FarmErrorCode[];

const BRAND = Symbol.for("kernelfarm.FarmError");

/** A FarmError as the Error message (common.proto) and the worker's IPC carry it. */
export interface WireError {
  code: string;
  message: string;
  /** JSON of `details`; absent or empty: none. */
  details_json?: string;
}

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

  /** The gRPC form: status, message as its details, the `farm-code` and `farm-details-bin` trailers. */
  toGrpc(): Partial<ServiceError> {
    const metadata = new Metadata();
    metadata.set(CODE_TRAILER, this.code);
    const json = encodeDetails(this.details);
    if (json) metadata.set(DETAILS_TRAILER, Buffer.from(json));
    return { code: GrpcStatus[CODES[this.code].grpc], details: this.message, metadata };
  }

  toWire(): WireError {
    const json = encodeDetails(this.details);
    return { code: this.code, message: this.message, ...(json ? { details_json: json } : {}) };
  }

  static fromWire(e: WireError): FarmError {
    const details = decodeDetails(e.details_json);
    return new FarmError(FarmError.isCode(e.code) ? e.code : "INTERNAL", e.message, details ? { details } : {});
  }
}
Object.defineProperty(FarmError.prototype, BRAND, { value: true });

/** gRPC status → code, for a status without a farm-code trailer (grpc-js's own, a proxy's); any other is INTERNAL. */
const GRPC_TO_FARM: Partial<Record<number, FarmErrorCode>> = Object.fromEntries(
  Object.entries(GRPC_STATUS_TO_ERROR_CODE).map(([status, code]) => [GrpcStatus[status as keyof typeof GRPC_STATUS_TO_ERROR_CODE], code]),
);

function fromGrpcError(err: unknown): FarmError | undefined {
  if (typeof err !== "object" || err === null || !("code" in err) || !("metadata" in err)) return undefined;
  const e = err as ServiceError;
  if (!(e.metadata instanceof Metadata)) return undefined;
  const tagged = e.metadata.get(CODE_TRAILER)[0];
  const message = e.details || e.message;
  if (typeof tagged === "string" && FarmError.isCode(tagged)) {
    const sent = e.metadata.get(DETAILS_TRAILER)[0];
    const details = Buffer.isBuffer(sent) ? decodeDetails(sent.toString("utf8")) : undefined;
    return new FarmError(tagged, message, { cause: err, ...(details ? { details } : {}) });
  }
  return new FarmError(GRPC_TO_FARM[e.code] ?? "INTERNAL", message, { cause: err });
}

/** Details as wire JSON: "" for none; entries that do not fit in DETAILS_MAX_BYTES or are not JSON are left out. */
function encodeDetails(details: Record<string, unknown> | undefined): string {
  if (!details) return "";
  const parts: string[] = [];
  let bytes = 2; // the braces
  for (const [key, value] of Object.entries(details)) {
    let part: string;
    try {
      const v = JSON.stringify(value);
      // undefined and functions have no JSON form (stringify gives undefined)
      if (v === undefined) continue;
      part = `${JSON.stringify(key)}:${v}`;
    } catch {
      continue; // a bigint or a cycle
    }
    const size = Buffer.byteLength(part) + (parts.length > 0 ? 1 : 0);
    if (bytes + size > DETAILS_MAX_BYTES) continue;
    parts.push(part);
    bytes += size;
  }
  return parts.length > 0 ? `{${parts.join(",")}}` : "";
}

/** A peer's details JSON: undefined when absent, too large, not JSON, or not an object. */
function decodeDetails(json: string | null | undefined): Record<string, unknown> | undefined {
  if (!json || Buffer.byteLength(json) > DETAILS_MAX_BYTES) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
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
