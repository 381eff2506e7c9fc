/**
 * The contract both SDKs share (protos/farm/v1/contract.json) is what each
 * language uses: the generated files are fresh, the TypeScript names that
 * re-export them give the declared values, and a broken declaration is
 * refused naming its entry.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { Metadata, status as GrpcStatus } from "@grpc/grpc-js";
import { CONTRACT_JSON, OUTPUTS, pythonClassOf, readContract, renderAll, renderPy, staleOutputs, type Contract } from "./generate-contract.ts";
import { OPTION_LIMITS } from "./gen/contract.ts";
import { FARM_ERROR_CODES, FarmError } from "./errors.ts";
import { CHUNK_BYTES, KEEPALIVE_TIME_MS, KEEPALIVE_TIMEOUT_MS, MAX_MESSAGE_BYTES } from "./grpc.ts";
import { LANES, ROUTES, SESSION_END_GRACE_MS, SESSION_REQUEST_HEADER } from "./routes.ts";
import { MEASURE_OUTCOMES } from "../host-sdk/measure/types.ts";
import { BOARD_KINDS } from "../device-agent/backends/index.ts";

const repoFile = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), "utf8");
const contract = readContract();

describe("the contract", () => {
  it("its generated files are what it declares (npm run gen:contract writes them)", () => {
    assert.deepEqual(staleOutputs(), [], "run npm run gen:contract and commit what it writes");
  });

  it("finds a generated file that was edited by hand", () => {
    const files = renderAll();
    files[OUTPUTS.py] = files[OUTPUTS.py]!.replace('"NO_BOARD"', '"NO_BOARDS"');
    assert.deepEqual(staleOutputs(files), [OUTPUTS.py]);
  });

  it("TypeScript's names give the declared values, in the declared order", () => {
    assert.deepEqual(
      FARM_ERROR_CODES,
      contract.errorCodes.map((e) => e.code),
    );
    for (const e of contract.errorCodes) {
      assert.equal(new FarmError(e.code as (typeof FARM_ERROR_CODES)[number], "m").toGrpc().code, GrpcStatus[e.grpc as keyof typeof GrpcStatus], e.code);
    }
    assert.deepEqual(
      MEASURE_OUTCOMES,
      contract.measureOutcomes.map((o) => o.outcome),
    );
    assert.deepEqual(
      LANES,
      contract.lanes.map((l) => l.lane),
    );
    assert.deepEqual(ROUTES, [contract.autoRoute.route, ...LANES]);
    assert.deepEqual(
      BOARD_KINDS,
      contract.boardKinds.map((k) => k.kind),
    );
    const constants = Object.fromEntries(contract.constants.map((k) => [k.name, k.value]));
    assert.deepEqual(
      { CHUNK_BYTES, MAX_MESSAGE_BYTES, KEEPALIVE_TIME_MS, KEEPALIVE_TIMEOUT_MS, SESSION_END_GRACE_MS, SESSION_REQUEST_HEADER },
      {
        CHUNK_BYTES: 1 << 20,
        MAX_MESSAGE_BYTES: 16 << 20,
        KEEPALIVE_TIME_MS: 5000,
        KEEPALIVE_TIMEOUT_MS: 5000,
        SESSION_END_GRACE_MS: 1000,
        SESSION_REQUEST_HEADER: "farm-session-request-bin",
      },
    );
    for (const name of ["CHUNK_BYTES", "MAX_MESSAGE_BYTES", "KEEPALIVE_TIME_MS", "KEEPALIVE_TIMEOUT_MS", "SESSION_END_GRACE_MS", "SESSION_REQUEST_HEADER"]) {
      assert.ok(Object.hasOwn(constants, name), `${name} is declared in the contract`);
    }
  });

  it("the numeric options' limits: one table, the same for TypeScript and Python", () => {
    const py = repoFile(OUTPUTS.py);
    for (const a of contract.optionLimits.apis) {
      const ts = OPTION_LIMITS[a.api as keyof typeof OPTION_LIMITS] as Record<string, { python: string; min: number; max: number }>;
      assert.deepEqual(
        Object.keys(ts),
        a.options.map((o) => o.option),
        a.api,
      );
      if (a.python === undefined) {
        assert.ok(
          a.options.every((o) => o.python === undefined),
          `${a.api}: TypeScript's alone, so are its options`,
        );
      } else {
        assert.ok(py.includes(`    ${JSON.stringify(a.python)}: {`), a.python);
      }
      for (const o of a.options) {
        assert.deepEqual([ts[o.option]!.python, ts[o.option]!.min, ts[o.option]!.max], [o.python ?? "", o.min, o.max], `${a.api}.${o.option}`);
        // An option TypeScript's alone has is not in Python's table.
        if (o.python === undefined) {
          assert.ok(
            !py.includes(`OptionLimit(\n            ${JSON.stringify(o.option)},`) && !py.includes(`OptionLimit(${JSON.stringify(o.option)},`),
            o.option,
          );
          continue;
        }
        assert.match(
          py,
          new RegExp(`${JSON.stringify(o.python)}: OptionLimit\\(\\s*${JSON.stringify(o.option)}, ${o.min}, ${o.max},`),
          `${a.python}.${o.python}`,
        );
      }
    }
    assert.ok(Object.hasOwn(OPTION_LIMITS.timeEvaluator, "repeat") && OPTION_LIMITS.timeEvaluator.repeat.min === 1, "a negative repeat is refused");
  });

  it("a status without a farm-code trailer maps as declared", () => {
    for (const [status, code] of Object.entries(contract.grpcStatusCodes)) {
      if (status === "$comment") continue;
      assert.equal(FarmError.from({ code: GrpcStatus[status as keyof typeof GrpcStatus], details: "d", metadata: new Metadata() }).code, code, status);
    }
    assert.equal(FarmError.from({ code: GrpcStatus.DATA_LOSS, details: "d", metadata: new Metadata() }).code, "INTERNAL", "an undeclared status");
  });

  it("each code has its Python class, none of them shadowing a builtin", () => {
    const classes = contract.errorCodes.map(pythonClassOf);
    assert.equal(pythonClassOf({ code: "NO_BOARD", grpc: "NOT_FOUND", doc: "d" }), "NoBoard");
    assert.equal(classes[contract.errorCodes.findIndex((e) => e.code === "RUNTIME_ERROR")], "KernelRuntimeError");
    const py = repoFile(OUTPUTS.pyErrors);
    for (const [i, cls] of classes.entries()) assert.ok(py.includes(`class ${cls}(FarmError, code=ErrorCode.${contract.errorCodes[i]!.code}):`), cls);
  });

  it("refuses a declaration that would break a language, naming the entry", () => {
    const text = repoFile(CONTRACT_JSON);
    type Raw = Record<"errorCodes" | "lanes" | "constants", unknown[]> & { grpcStatusCodes: Record<string, string> };
    const broken = (edit: (c: Raw) => void) => {
      const c = JSON.parse(text) as Raw;
      edit(c);
      return () => readContract(JSON.stringify(c));
    };
    assert.throws(
      broken((c) => c.errorCodes.push({ code: "NO_BOARD", grpc: "NOT_FOUND", doc: "again" })),
      /code NO_BOARD is declared twice/,
    );
    assert.throws(
      broken((c) => c.errorCodes.push({ code: "WARP", grpc: "WARPED", doc: "d" })),
      /code WARP: grpc "WARPED" is not a gRPC status name/,
    );
    assert.throws(
      broken((c) => c.errorCodes.push({ code: "SLOW", grpc: "INTERNAL", doc: "" })),
      /code SLOW needs a doc/,
    );
    assert.throws(
      broken((c) => c.errorCodes.push({ code: "RUNTIME__ERROR", grpc: "INTERNAL", doc: "d", pythonClass: "KernelRuntimeError" })),
      /make the Python class KernelRuntimeError/,
    );
    assert.throws(
      broken((c) => (c.grpcStatusCodes.ABORTED = "CRASHED")),
      /grpcStatusCodes.ABORTED: "CRASHED" is not one of the error codes/,
    );
    assert.throws(
      broken((c) => c.lanes.push({ lane: "auto", doc: "d" })),
      /the auto route auto is also a lane/,
    );
    assert.throws(
      broken((c) => c.constants.push({ name: "HALF", value: 0.5, doc: "d" })),
      /constant HALF: a value is a string or a safe integer/,
    );
    const inverted = JSON.parse(text) as Contract;
    inverted.optionLimits.apis[0]!.options[0]!.max = inverted.optionLimits.apis[0]!.options[0]!.min;
    assert.throws(() => readContract(JSON.stringify(inverted)), /optionLimits timeEvaluator\.number: max must be a number above min/);
    const long = JSON.parse(text) as { constants: Array<Record<string, unknown>> };
    long.constants.push({ name: "LONG", value: 1, doc: "x".repeat(200) });
    assert.throws(() => renderPy(readContract(JSON.stringify(long))), /_contract.py would have a line over 140 characters/);
  });
});
