/** FarmError: conversion of anything caught, the gRPC and wire forms, branded instanceof. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Metadata, status as GrpcStatus } from "@grpc/grpc-js";
import { CODE_TRAILER, FARM_ERROR_CODES, FarmError } from "./errors.ts";

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
      const grpcErr = serviceError(GrpcStatus.NOT_FOUND, "no board serves key \"x\"", "NO_BOARD");
      const e = FarmError.from(grpcErr);
      assert.equal(e.code, "NO_BOARD");
      assert.equal(e.message, "no board serves key \"x\"");
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
    assert.equal(({ [Symbol.for("kernelfarm.FarmError")]: "yes" }) instanceof FarmError, false);
    assert.equal((null as unknown) instanceof FarmError, false);
    assert.equal(("FarmError" as unknown) instanceof FarmError, false);
  });
});
