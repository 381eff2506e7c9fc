/** The CPU compiler: parameter declarations, bundles from real C, and its diagnostics. */
import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { describe, it } from "node:test";
import { bundleDigest, decodeBundle, FarmError } from "../protos/index.ts";
import { hostCpuTarget } from "../domain/index.ts";
import { compileCpu, functionTable, parseParam } from "./compile-cpu.ts";

describe("parseParam", () => {
  it("reads buffers and scalars, named or not", () => {
    assert.deepEqual(parseParam("float32* a", 0, "f"), { name: "a", kind: "buffer", dtype: "float32" });
    assert.deepEqual(parseParam("float32 *a", 0, "f"), { name: "a", kind: "buffer", dtype: "float32" });
    assert.deepEqual(parseParam("float32*a", 0, "f"), { name: "a", kind: "buffer", dtype: "float32" });
    assert.deepEqual(parseParam("  uint8*  ", 2, "f"), { name: "arg2", kind: "buffer", dtype: "uint8" });
    assert.deepEqual(parseParam("int32 n", 3, "f"), { name: "n", kind: "scalar", dtype: "int32" });
    assert.deepEqual(parseParam("float64", 1, "f"), { name: "arg1", kind: "scalar", dtype: "float64" });
    assert.deepEqual(parseParam("int64 _len2", 0, "f"), { name: "_len2", kind: "scalar", dtype: "int64" });
  });

  it("passes a full ParamSpec through unchanged", () => {
    const spec = { name: "m", kind: "buffer" as const, dtype: "int16" as const, shape: [2, 3] };
    assert.equal(parseParam(spec, 0, "f"), spec);
  });

  it("refuses anything else, naming the function, the position and the text", () => {
    for (const decl of ["float a", "float32** a", "vec4 a", "int32 1a", "int32 a b", "", "Float32* a", "float32* a[4]"]) {
      assert.throws(
        () => parseParam(decl, 4, "gemm"),
        (e: unknown) =>
          e instanceof FarmError &&
          e.code === "INVALID_ARGUMENT" &&
          e.message.includes("function gemm, parameter 4") &&
          e.message.includes(JSON.stringify(decl)),
        JSON.stringify(decl),
      );
    }
  });

  it("functionTable needs at least one function", () => {
    assert.throws(
      () => functionTable({}),
      (e: FarmError) => e.code === "INVALID_ARGUMENT" && /at least one function/.test(e.message),
    );
    assert.deepEqual(functionTable({ f: ["int32 n"], g: [] }), [
      { name: "f", params: [{ name: "n", kind: "scalar", dtype: "int32" }] },
      { name: "g", params: [] },
    ]);
  });
});

const GOOD = `#include <stdint.h>
void saxpy(float* y, const float* x, float a, int32_t n) {
  for (int32_t i = 0; i < n; i++) y[i] += a * x[i];
}
void fill(int32_t* out, int32_t n, int32_t v) { for (int32_t i = 0; i < n; i++) out[i] = v; }
`;

// The error is on line 4: an undeclared identifier.
const BROKEN = `#include <stdint.h>
void ok(float* a) { a[0] = 1.0f; }
void bad(float* a) {
  a[0] = not_declared_anywhere;
}
`;

describe("compileCpu", () => {
  it("builds a bundle that decodes with the declared function table", async () => {
    const m = await compileCpu(GOOD, {
      functions: { saxpy: ["float32* y", "float32* x", "float32 a", "int32 n"], fill: ["int32* out", "int32 n", "int32 v"] },
    });
    assert.equal(m.target, "cpu");
    assert.equal(m.digest, bundleDigest(m.bytes));
    assert.equal(m.name, `${m.digest.slice(0, 16)}.kfm`);
    const b = decodeBundle(m.bytes);
    assert.equal(b.target, "cpu");
    assert.deepEqual(b.targetDetails, hostCpuTarget());
    // An ELF shared object (the host is Linux here).
    assert.deepEqual([...b.binary.subarray(0, 4)], [0x7f, 0x45, 0x4c, 0x46]);
    assert.deepEqual(b.functions, [
      {
        name: "saxpy",
        params: [
          { name: "y", kind: "buffer", dtype: "float32" },
          { name: "x", kind: "buffer", dtype: "float32" },
          { name: "a", kind: "scalar", dtype: "float32" },
          { name: "n", kind: "scalar", dtype: "int32" },
        ],
      },
      {
        name: "fill",
        params: [
          { name: "out", kind: "buffer", dtype: "int32" },
          { name: "n", kind: "scalar", dtype: "int32" },
          { name: "v", kind: "scalar", dtype: "int32" },
        ],
      },
    ]);
    assert.deepEqual(m.functions, b.functions);
    assert.match(b.meta?.flags ?? "", /-shared/);
  });

  it("a syntax error is COMPILE_ERROR with file:line, the compiler's own text, and no temp dir", async () => {
    const err = await compileCpu(BROKEN, { functions: { ok: ["float32* a"], bad: ["float32* a"] } }).then(
      () => assert.fail("compiling broken C must fail"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof FarmError, String(err));
    assert.equal(err.code, "COMPILE_ERROR");
    assert.match(err.message, /kernel\.c:4:\d+:/, err.message);
    assert.doesNotMatch(err.message, /kernel\.c:[1235]:\d+: error/, "the error is on line 4 only");
    assert.match(err.message, /not_declared_anywhere/);
    assert.match(err.message, /undeclared/);
    assert.match(err.message, /failed to compile kernel\.c/);
    assert.ok(!err.message.includes(tmpdir() + "/kfarm-cc-"), `the message leaks the temp dir:\n${err.message}`);
    assert.ok(!err.message.includes("kfarm-cc-"), `the message leaks the temp dir:\n${err.message}`);
    assert.equal(typeof err.details?.diagnostics, "string");
  });

  it("names the file as given in fileName", async () => {
    const err = await compileCpu("void f(void) { syntax error here }\n", { functions: { f: [] }, fileName: "gemm_tile.c" }).catch((e: unknown) => e);
    assert.ok(err instanceof FarmError && err.code === "COMPILE_ERROR");
    assert.match(err.message, /gemm_tile\.c:1:\d+:/);
  });

  it("a missing compiler is TOOLCHAIN_MISSING saying what to install", async () => {
    const err = await compileCpu(GOOD, { functions: { fill: ["int32* out", "int32 n", "int32 v"] }, cc: "/nonexistent/cc" }).catch((e: unknown) => e);
    assert.ok(err instanceof FarmError, String(err));
    assert.equal(err.code, "TOOLCHAIN_MISSING");
    assert.match(err.message, /\/nonexistent\/cc/);
    assert.match(err.message, /install/);
    assert.match(err.message, /gcc|CC/);
  });

  it("refuses a bad parameter declaration before running the compiler", async () => {
    await assert.rejects(
      compileCpu(GOOD, { functions: { fill: ["int* out"] }, cc: "/nonexistent/cc" }),
      (e: FarmError) => e.code === "INVALID_ARGUMENT" && /function fill, parameter 0/.test(e.message),
    );
  });

  it("options of the wrong shape are INVALID_ARGUMENT naming the option and the shape it takes, before the compiler runs", async () => {
    const cc = "/nonexistent/cc"; // reached only if a check let the options through (TOOLCHAIN_MISSING)
    const cases: Array<[string, unknown, unknown, RegExp]> = [
      // The shape several RPC libraries use: "params.map is not a function" from inside the compiler, before.
      [
        "functions as a list of { name, params }",
        GOOD,
        { functions: [{ name: "fill", params: ["int32* out"] }], cc },
        /^compileCpu: functions must be a record of function name → parameter list, e\.g\. \{ vadd: .*; got an array \(for a list of \{ name, params \}, write \{ \[name\]: params \}\)$/,
      ],
      [
        "parameters as one string",
        GOOD,
        { functions: { fill: "int32* out" }, cc },
        /^compileCpu: function fill: parameters must be a list such as \["float32\* a", "int32 n"\], got "int32\* out"$/,
      ],
      ["a function name that is not a C identifier", GOOD, { functions: { "fill-in": [] }, cc }, /function name "fill-in" is not a C identifier/],
      [
        "a ParamSpec with an unknown dtype",
        GOOD,
        { functions: { fill: [{ name: "out", kind: "buffer", dtype: "half" }] }, cc },
        /^function fill, parameter 0: ParamSpec\.dtype is not a known dtype: "half"$/,
      ],
      ["a parameter that is a number", GOOD, { functions: { fill: [4] }, cc }, /^function fill, parameter 0: 4 is not "DTYPE\* name"/],
      ["no options", GOOD, undefined, /^compileCpu: options must be \{ functions, flags\?, cc\?, fileName\? \}/],
      [
        "a misspelt option",
        GOOD,
        { function: { fill: [] }, cc },
        /^compileCpu: options has an unknown key "function"; the keys are functions, flags, cc, fileName$/,
      ],
      // Spread into characters, "-O3" gave cc a "-" argument: cc read its source from stdin.
      [
        "flags as one string",
        GOOD,
        { functions: { fill: ["int32* out"] }, flags: "-O3", cc },
        /^compileCpu: flags must be a list of strings such as \["-O3", "-DN=4"\], got "-O3"$/,
      ],
      ["source that is not a string", 42, { functions: { fill: ["int32* out"] }, cc }, /^compileCpu: source must be a string of C code, got 42$/],
      ["cc that is not a string", GOOD, { functions: { fill: ["int32* out"] }, cc: 5 }, /^compileCpu: cc must be a compiler's name or path, got 5$/],
      [
        "a fileName with a directory",
        GOOD,
        { functions: { fill: ["int32* out"] }, fileName: "../kernel.c", cc },
        /^compileCpu: fileName "\.\.\/kernel\.c" is not a plain file name, such as "kernel\.c"$/,
      ],
    ];
    for (const [what, source, opts, message] of cases) {
      const err = await compileCpu(source as string, opts as never).then(
        () => assert.fail(`${what}: compiled`),
        (e: unknown) => e,
      );
      assert.ok(err instanceof FarmError, `${what}: ${String(err)}`);
      assert.equal(err.code, "INVALID_ARGUMENT", `${what}: ${err.message}`);
      assert.match(err.message, message, what);
    }
  });
});

describe("compileCpu checks `functions` against the source", () => {
  const compileError = async (
    source: string,
    functions: Record<string, readonly string[]>,
    opts: { fileName?: string; cc?: string; flags?: string[] } = {},
  ) => {
    const err = await compileCpu(source, { functions, ...opts }).then(
      () => assert.fail(`compiled with functions ${JSON.stringify(functions)}`),
      (e: unknown) => e,
    );
    assert.ok(err instanceof FarmError, String(err));
    assert.equal(err.code, "COMPILE_ERROR", err.message);
    assert.ok(!err.message.includes("kfarm-cc-"), `the message leaks the temp dir:\n${err.message}`);
    return err;
  };
  const SOURCE = `#include <stdint.h>
void fill(int32_t* out, int32_t n, int32_t v) { for (int32_t i = 0; i < n; i++) out[i] = v; }
static void helper(float* a) { a[0] = 0; }
void scale(float* a, float s) { helper(a); a[0] *= s; }
`;

  it("a declared function the object does not export is COMPILE_ERROR naming it and the functions it exports", async () => {
    const err = await compileError(SOURCE, { fill: ["int32* out", "int32 n", "int32 v"], vfill: ["int32* out"], helper: ["float32* a"] });
    assert.match(err.message, /^kernel\.c exports no function "vfill", "helper" of `functions`; the shared object exports: fill, scale\n/);
    assert.match(err.message, /not static, not hidden by -fvisibility=hidden\), or take it out of `functions`$/);
    assert.deepEqual(err.details, { missing: ["vfill", "helper"], exports: ["fill", "scale"] });
  });

  it("a function hidden by -fvisibility=hidden is not exported", async () => {
    const err = await compileCpu(SOURCE, { functions: { fill: ["int32* out", "int32 n", "int32 v"] }, flags: ["-fvisibility=hidden"] }).catch(
      (e: unknown) => e,
    );
    assert.ok(err instanceof FarmError && err.code === "COMPILE_ERROR");
    assert.match(err.message, /exports no function "fill" of `functions`; the shared object exports: none/);
  });

  it('a C++ function without extern "C" is named with its mangled name and the fix', async () => {
    const err = await compileError(
      'extern "C" void ok(float* a) { a[0] = 1; }\nvoid scale(float* a, float s) { a[0] *= s; }\n',
      { ok: ["float32* a"], scale: ["float32* a", "float32 s"] },
      { fileName: "kernel.cc" },
    );
    assert.match(err.message, /^kernel\.cc exports no function "scale" of `functions`; the shared object exports: .*_Z5scalePff/);
    assert.match(err.message, /"_Z5scalePff" is scale with a C\+\+ mangled name: declare it extern "C" so that its name stays "scale"/);
  });

  it("a different number of parameters is COMPILE_ERROR with the compiler's words and what to do", async () => {
    for (const fill of [
      ["int32* out", "int32 n"],
      ["int32* out", "int32 n", "int32 v", "int32 w"],
    ]) {
      const err = await compileError(SOURCE, { scale: ["float32* a", "float32 s"], fill });
      assert.match(err.message, /^kernel\.c: its functions do not take the parameters that `functions` declares \(cc checked kfarm-functions\.c, /);
      assert.match(err.message, /kfarm-functions\.c:\d+:\d+: error: too (few|many) arguments to function .fill./);
      assert.match(err.message, /functions\.fill: int32\*, int32(, int32, int32)? \*\//, "the declaration, as the check file's line shows it");
      assert.match(err.message, /kernel\.c:2:6: note: declared here/);
      assert.match(
        err.message,
        /list each function's parameters in `functions` in the order its C definition takes them: "DTYPE\* name" for a pointer, "DTYPE name" for a number$/,
      );
      assert.equal(typeof err.details?.diagnostics, "string");
    }
  });

  it("a pointer where the function takes a number, or a number where it takes a pointer, is COMPILE_ERROR", async () => {
    // int32 and int32*: a warning in C by default (int-conversion), an error here.
    const err = await compileError(SOURCE, { fill: ["int32 n", "int32* out", "int32 v"] });
    assert.match(err.message, /error: passing argument 1 of .fill. makes pointer from integer without a cast/);
    assert.match(err.message, /error: passing argument 2 of .fill. makes integer from pointer without a cast/);
    const floats = await compileError(SOURCE, { scale: ["float32 s", "float32* a"] });
    assert.match(floats.message, /error: incompatible type for argument 1 of .scale./);
  });

  it("takes what the board passes alike: const and void pointers, any pointee type, numbers of another type", async () => {
    const source = `#include <stdint.h>
void f(const float* a, void* b, long long* c, double x, int n) { (void)a; (void)b; (void)c; (void)x; (void)n; }
void g(void) {}
`;
    const m = await compileCpu(source, { functions: { f: ["float32* a", "uint8* b", "int64* c", "float32 x", "int64 n"], g: [] } });
    assert.deepEqual(
      m.functions.map((f) => f.name),
      ["f", "g"],
    );
    // The check file compiles beside a source of its own name too.
    await compileCpu(source, { functions: { g: [] }, fileName: "kfarm-functions.c" });
  });

  it("checks a cross compiler's object the same way", async (t) => {
    const cross = "aarch64-linux-gnu-gcc";
    const probe = await compileCpu("void g(void) {}", { functions: { g: [] }, cc: cross }).catch((e: unknown) => e);
    if (probe instanceof FarmError && probe.code === "TOOLCHAIN_MISSING") return t.skip(`no ${cross} (Debian: apt-get install gcc-aarch64-linux-gnu)`);
    assert.ok(!(probe instanceof Error), String(probe));
    const err = await compileError(SOURCE, { scale: ["float32* a", "float32 s"], vfill: [] }, { cc: cross });
    assert.match(err.message, /exports no function "vfill" of `functions`; the shared object exports: fill, scale/);
    const arity = await compileError(SOURCE, { fill: ["int32* out"] }, { cc: cross });
    assert.match(arity.message, /too few arguments to function .fill./);
  });

  it("flags that stop before linking are COMPILE_ERROR saying so", async () => {
    const stopped = await compileError(SOURCE, { fill: ["int32* out", "int32 n", "int32 v"] }, { flags: ["-c"] });
    assert.match(stopped.message, /^\S+ built no shared object from kernel\.c: do the flags stop before linking \(-c, -E, -S\)\?$/);
  });
});
