/** FarmError: conversion of anything caught, the gRPC and wire forms (details included), branded instanceof. */
import assert from "node:assert/strict";
import type { IncomingHttpHeaders } from "node:http2";
import { describe, it } from "node:test";
import { Metadata, status as GrpcStatus } from "@grpc/grpc-js";
import { CODE_TRAILER, DETAILS_MAX_BYTES, DETAILS_TRAILER, FARM_ERROR_CODES, FarmError, type WireError } from "./errors.ts";
import { decodeBoardFrame, encodeBoardFrame } from "./frames.ts";

/** What grpc-js hands a callback: an Error with code, details and metadata. */
function serviceError(code: number, details: string, farmCode?: string): Error & { code: number; details: string; metadata: Metadata } {
  const metadata = new Metadata();
  if (farmCode !== undefined) metadata.set(CODE_TRAILER, farmCode);
  return Object.assign(new Error(`${code} ${GrpcStatus[code]}: ${details}`), { code, details, metadata });
}

function systemError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code, errno: -1, syscall: "connect" });
}

describe("FarmError", () => {
  it("carries code, message, details and a local cause", () => {
    const cause = new Error("root");
    const e = new FarmError("TOO_LARGE", "file too big", { details: { limit: 1 }, cause });
    assert.equal(e.code, "TOO_LARGE");
    assert.equal(e.message, "file too big");
    assert.deepEqual(e.details, { limit: 1 });
    assert.equal(e.cause, cause);
    assert.equal(e.name, "FarmError");
    assert.equal(String(e), "[TOO_LARGE] file too big");
    assert.ok(e instanceof Error);
  });

  it("isCode knows exactly the closed set of codes", () => {
    for (const c of FARM_ERROR_CODES) assert.equal(FarmError.isCode(c), true);
    assert.ok(FARM_ERROR_CODES.includes("NO_BOARD") && FARM_ERROR_CODES.includes("BAD_BUNDLE"));
    for (const c of ["", "no_board", "toString", "__proto__", "constructor", "OK"]) assert.equal(FarmError.isCode(c), false, c);
  });

  describe("FarmError.from", () => {
    it("passes a FarmError through unchanged", () => {
      const e = new FarmError("NO_BOARD", "none");
      assert.equal(FarmError.from(e), e);
      assert.equal(FarmError.from(e, "UNAVAILABLE"), e);
    });

    it("keeps the farm code of a gRPC error's trailer and uses its details as message", () => {
      const grpcErr = serviceError(GrpcStatus.NOT_FOUND, 'no board serves key "x"', "NO_BOARD");
      const e = FarmError.from(grpcErr);
      assert.equal(e.code, "NO_BOARD");
      assert.equal(e.message, 'no board serves key "x"');
      assert.equal(e.cause, grpcErr);
    });

    it("maps a gRPC status when there is no trailer, or an unknown one", () => {
      assert.equal(FarmError.from(serviceError(GrpcStatus.UNAVAILABLE, "gone")).code, "UNAVAILABLE");
      assert.equal(FarmError.from(serviceError(GrpcStatus.DEADLINE_EXCEEDED, "late")).code, "DEADLINE_EXCEEDED");
      assert.equal(FarmError.from(serviceError(GrpcStatus.CANCELLED, "bye")).code, "CANCELLED");
      assert.equal(FarmError.from(serviceError(GrpcStatus.RESOURCE_EXHAUSTED, "big")).code, "TOO_LARGE");
      assert.equal(FarmError.from(serviceError(GrpcStatus.PERMISSION_DENIED, "no")).code, "PERMISSION_DENIED");
      assert.equal(FarmError.from(serviceError(GrpcStatus.UNAVAILABLE, "gone", "NOT_A_CODE")).code, "UNAVAILABLE");
      assert.equal(FarmError.from(serviceError(GrpcStatus.DATA_LOSS, "??")).code, "INTERNAL");
    });

    it("maps Node system errors in one place", () => {
      const refused = FarmError.from(systemError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:1"));
      assert.equal(refused.code, "UNAVAILABLE");
      assert.match(refused.message, /127\.0\.0\.1:1/);
      assert.equal(FarmError.from(systemError("ENOTFOUND", "getaddrinfo ENOTFOUND nohost")).code, "UNAVAILABLE");
      assert.equal(FarmError.from(systemError("ETIMEDOUT", "t")).code, "UNAVAILABLE");
      assert.equal(FarmError.from(systemError("ECONNRESET", "r")).code, "UNAVAILABLE");
      assert.equal(FarmError.from(systemError("ENOENT", "no such file")).code, "NOT_FOUND");
      assert.equal(FarmError.from(systemError("ENOSPC", "disk full")).code, "TOO_LARGE");
    });

    it("uses the fallback for anything else, keeping the message and cause", () => {
      const plain = new TypeError("x is not a function");
      const e = FarmError.from(plain);
      assert.equal(e.code, "INTERNAL");
      assert.equal(e.message, "x is not a function");
      assert.equal(e.cause, plain);
      assert.equal(FarmError.from(plain, "RUNTIME_ERROR").code, "RUNTIME_ERROR");
      assert.equal(FarmError.from(systemError("EACCES", "denied"), "LOAD_ERROR").code, "LOAD_ERROR");
      assert.equal(FarmError.from("a string").message, "a string");
      assert.equal(FarmError.from(undefined).code, "INTERNAL");
      assert.equal(FarmError.from(null).code, "INTERNAL");
      // An object with a numeric code but no gRPC metadata is not taken for a gRPC error.
      assert.equal(FarmError.from({ code: 14, message: "m" }).code, "INTERNAL");
    });
  });

  it("toGrpc → ServiceError → from() round-trips code and message", () => {
    for (const code of FARM_ERROR_CODES) {
      const original = new FarmError(code, `problem with ${code}`, { cause: new Error("local only") });
      const g = original.toGrpc();
      assert.equal(typeof g.code, "number");
      assert.equal(g.details, `problem with ${code}`);
      assert.deepEqual(g.metadata!.get(CODE_TRAILER), [code]);
      const received = serviceError(g.code!, g.details!, code);
      const back = FarmError.from(received);
      assert.equal(back.code, code);
      assert.equal(back.message, original.message);
    }
    assert.equal(new FarmError("NO_BOARD", "m").toGrpc().code, GrpcStatus.NOT_FOUND);
    assert.equal(new FarmError("TOO_LARGE", "m").toGrpc().code, GrpcStatus.RESOURCE_EXHAUSTED);
    assert.equal(new FarmError("SESSION_CLOSED", "m").toGrpc().code, GrpcStatus.FAILED_PRECONDITION);
  });

  it("toWire → fromWire round-trips code and message, never the cause", () => {
    for (const code of FARM_ERROR_CODES) {
      const original = new FarmError(code, `wire ${code}`, { cause: new Error("secret") });
      const wire = original.toWire();
      assert.deepEqual(Object.keys(wire).sort(), ["code", "message"]);
      const back = FarmError.fromWire(JSON.parse(JSON.stringify(wire)) as { code: string; message: string });
      assert.ok(back instanceof FarmError);
      assert.equal(back.code, code);
      assert.equal(back.message, `wire ${code}`);
      assert.equal(back.cause, undefined);
    }
  });

  describe("details on the wire", () => {
    /** What a CUDA board says about a lost context (device-agent/backends/cuda/driver.ts). */
    const sticky = { cuda: "CUDA_ERROR_ILLEGAL_ADDRESS", sticky: true };

    /** Through the Error message of a real session frame, as a board's reply reaches the host. */
    function throughFrame(wire: WireError): FarmError {
      return FarmError.fromWire(decodeBoardFrame(encodeBoardFrame({ id: 7, error: wire })).error!);
    }

    /** Through a gRPC status as a host receives it: the trailers as HTTP/2 headers and back. */
    function throughStatus(e: FarmError): FarmError {
      const g = e.toGrpc();
      const metadata = Metadata.fromHttp2Headers(g.metadata!.toHttp2Headers() as IncomingHttpHeaders);
      return FarmError.from(Object.assign(new Error(g.details), { code: g.code, details: g.details, metadata }));
    }

    it("toWire → Error frame → fromWire keeps the details, and so does JSON (the worker's IPC)", () => {
      const original = new FarmError("DEVICE_ERROR", "kernel poke failed", { details: sticky });
      const back = throughFrame(original.toWire());
      assert.equal(back.code, "DEVICE_ERROR");
      assert.equal(back.message, "kernel poke failed");
      assert.deepEqual(back.details, sticky);
      assert.deepEqual(FarmError.fromWire(JSON.parse(JSON.stringify(original.toWire())) as WireError).details, sticky);
      // Nested values and non-ASCII text come through as JSON has them.
      const rich = { instruction: 12, where: { queue: "load", µops: [1, 2] }, note: "tile → 2 KiB" };
      assert.deepEqual(throughFrame(new FarmError("RUNTIME_ERROR", "m", { details: rich }).toWire()).details, rich);
    });

    it("an error without details has none on the other side", () => {
      const wire = new FarmError("NOT_FOUND", "no such file").toWire();
      assert.deepEqual(Object.keys(wire).sort(), ["code", "message"]);
      assert.equal(throughFrame(wire).details, undefined);
      assert.equal(throughStatus(new FarmError("NO_BOARD", "none")).details, undefined);
      // An empty object is no details.
      assert.equal(throughFrame(new FarmError("NOT_FOUND", "m", { details: {} }).toWire()).details, undefined);
    });

    it("toGrpc → status trailers → from() keeps the details, non-ASCII included", () => {
      const g = new FarmError("RUNTIME_CRASH", "worker died", { details: { signal: "SIGSEGV" } }).toGrpc();
      assert.equal(Buffer.from(g.metadata!.get(DETAILS_TRAILER)[0] as Buffer).toString(), '{"signal":"SIGSEGV"}');
      const back = throughStatus(new FarmError("RUNTIME_CRASH", "worker died", { details: { signal: "SIGSEGV", note: "naïve → ok" } }));
      assert.equal(back.code, "RUNTIME_CRASH");
      assert.deepEqual(back.details, { signal: "SIGSEGV", note: "naïve → ok" });
      assert.deepEqual(throughStatus(new FarmError("DEVICE_ERROR", "lost", { details: sticky })).details, sticky);
    });

    it("a peer's details that are not a JSON object are ignored, the error kept", () => {
      for (const bad of ["{not json", "[1,2]", "null", "42", '"sticky"', '{"a":1', "x".repeat(10)]) {
        const e = FarmError.fromWire({ code: "DEVICE_ERROR", message: "from a peer", details_json: bad });
        assert.equal(e.code, "DEVICE_ERROR", bad);
        assert.equal(e.message, "from a peer", bad);
        assert.equal(e.details, undefined, bad);
      }
      // Over the size limit: ignored whole, however well formed.
      const big = JSON.stringify({ sticky: true, pad: "x".repeat(DETAILS_MAX_BYTES) });
      assert.equal(FarmError.fromWire({ code: "DEVICE_ERROR", message: "m", details_json: big }).details, undefined);
      // The same in a trailer.
      const metadata = new Metadata();
      metadata.set(CODE_TRAILER, "DEVICE_ERROR");
      metadata.set(DETAILS_TRAILER, Buffer.from("{broken"));
      const e = FarmError.from(Object.assign(new Error("m"), { code: GrpcStatus.INTERNAL, details: "m", metadata }));
      assert.equal(e.code, "DEVICE_ERROR");
      assert.equal(e.details, undefined);
    });

    it("keeps what fits and what JSON can hold: a large or unencodable entry never costs the small ones", () => {
      const cycle: Record<string, unknown> = {};
      cycle.self = cycle;
      const details = { cuda: "CUDA_ERROR_LAUNCH_FAILED", huge: "x".repeat(DETAILS_MAX_BYTES), big: 2n ** 70n, cycle, gone: undefined, sticky: true };
      const wire = new FarmError("DEVICE_ERROR", "m", { details }).toWire();
      assert.ok(Buffer.byteLength(wire.details_json!) <= DETAILS_MAX_BYTES);
      assert.deepEqual(throughFrame(wire).details, { cuda: "CUDA_ERROR_LAUNCH_FAILED", sticky: true });
      assert.deepEqual(throughStatus(new FarmError("DEVICE_ERROR", "m", { details })).details, { cuda: "CUDA_ERROR_LAUNCH_FAILED", sticky: true });
      // Entries up to the limit exactly are kept.
      const fill = { a: "y".repeat(DETAILS_MAX_BYTES - '{"a":""}'.length) };
      assert.deepEqual(throughFrame(new FarmError("INTERNAL", "m", { details: fill }).toWire()).details, fill);
    });
  });

  it("fromWire turns an unknown code into INTERNAL, keeping the message", () => {
    const e = FarmError.fromWire({ code: "FROM_THE_FUTURE", message: "new peer" });
    assert.equal(e.code, "INTERNAL");
    assert.equal(e.message, "new peer");
  });

  it("instanceof holds for a structurally branded object (another copy of the package)", () => {
    const foreign = Object.create(Object.prototype, { [Symbol.for("kernelfarm.FarmError")]: { value: true } }) as object;
    assert.ok(foreign instanceof FarmError);
    class OtherCopyFarmError extends Error {
      readonly code = "NO_BOARD";
    }
    Object.defineProperty(OtherCopyFarmError.prototype, Symbol.for("kernelfarm.FarmError"), { value: true });
    const copy = new OtherCopyFarmError("from another copy");
    assert.ok(copy instanceof FarmError);
    // FarmError.from passes a branded error through as-is.
    assert.equal(FarmError.from(copy), copy);
  });

  it("instanceof is false for unbranded look-alikes and primitives", () => {
    assert.equal(new Error("plain") instanceof FarmError, false);
    assert.equal(Object.assign(new Error("m"), { code: "NO_BOARD", name: "FarmError" }) instanceof FarmError, false);
    assert.equal({ [Symbol.for("kernelfarm.FarmError")]: "yes" } instanceof FarmError, false);
    assert.equal((null as unknown) instanceof FarmError, false);
    assert.equal(("FarmError" as unknown) instanceof FarmError, false);
  });
});
