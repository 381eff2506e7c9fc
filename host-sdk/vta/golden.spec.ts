/**
 * The compiler against the instruction streams TVM emitted for the three VTA
 * tutorials (tests/fixtures/vta-golden/, whose README says how they were
 * made): same instructions, fields, dependency flags, NOPs and micro-ops, DRAM
 * bases compared relative to the first base seen per buffer (golden files do
 * not name buffers).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { parseStreamText, relativeDram, runToStream, type ParsedStream } from "../../vta/index.ts";
import { lowerVtaKernel } from "./compile.ts";
import { VTA_TUTORIALS } from "./tutorials.ts";

const GOLDEN_DIR = fileURLToPath(new URL("../../tests/fixtures/vta-golden/", import.meta.url));

const NAMES = ["matrix_multiply", "matrix_multiply_opt", "convolution_opt"] as const;

function golden(name: string): ParsedStream {
  return parseStreamText(readFileSync(`${GOLDEN_DIR}${name}.stream.txt`, "utf8"));
}

function render(s: ParsedStream, i: number, rel: (number | undefined)[]): string {
  const l = s.lines[i];
  if (!l) return "(end of stream)";
  const dram = l.dram ? (l.kind === "LOAD_UOP" ? `uop+${l.dram.value}` : `+${rel[i]}`) : "";
  return `${l.kind} ${l.fields.replace("<dram>", dram)} ${l.flags}`.replace(/\s+/g, " ").trim();
}

/** The first difference between two streams, described; undefined when they are the same. */
function firstDifference(ours: ParsedStream, gold: ParsedStream): string | undefined {
  const relOurs = relativeDram(ours.lines);
  const relGold = relativeDram(gold.lines, (l) => l.kind);
  const n = Math.max(ours.lines.length, gold.lines.length);
  for (let i = 0; i < n; i++) {
    const a = render(ours, i, relOurs);
    const b = render(gold, i, relGold);
    if (a !== b) return `instruction ${i}:\n  ours:   ${a}\n  golden: ${b}`;
    const ug = gold.uops.get(i);
    const uo = ours.uops.get(i);
    if ((ug === undefined) !== (uo === undefined)) return `instruction ${i}: micro-op list present in only one stream`;
    if (ug && uo) {
      if (ug.length !== uo.length) return `instruction ${i}: loads ${uo.length} uops, golden ${ug.length}`;
      for (let k = 0; k < ug.length; k++) {
        const g = ug[k]!;
        const o = uo[k]!.slice(0, g.length);
        if (g.some((v, j) => v !== o[j])) return `instruction ${i}, uop ${k}: ours (${o.join(",")}), golden (${g.join(",")})`;
      }
    }
  }
  return undefined;
}

/** Each golden kind must address one buffer of ours (so relative bases compare like with like). */
function bufferPerKind(ours: ParsedStream): Map<string, Set<string>> {
  const m = new Map<string, Set<string>>();
  for (const l of ours.lines) {
    if (!l.dram) continue;
    const set = m.get(l.kind) ?? new Set<string>();
    set.add(l.dram.space);
    m.set(l.kind, set);
  }
  return m;
}

describe("VTA compiler vs TVM's golden streams", () => {
  for (const name of NAMES) {
    it(`${name}: the tutorial schedule emits TVM's stream exactly (trailingPops "carry")`, () => {
      const { fn } = lowerVtaKernel(VTA_TUTORIALS[name], { trailingPops: "carry" });
      assert.equal(fn.runs.length, 1);
      const ours = runToStream(fn.runs[0]!);
      const gold = golden(name);
      assert.ok(gold.lines.length > 50, "golden file parsed");
      assert.equal(firstDifference(ours, gold), undefined);
      assert.equal(ours.lines.length, gold.lines.length);
      assert.deepEqual([...ours.uops.keys()], [...gold.uops.keys()]);
      for (const [kind, spaces] of bufferPerKind(ours)) assert.equal(spaces.size, 1, `${kind} addresses ${[...spaces].join(", ")}`);
    });
  }

  it('the default (trailingPops "commit") differs only where TVM leaves a pop pending after the sync', () => {
    for (const name of ["matrix_multiply", "convolution_opt"] as const) {
      const { fn } = lowerVtaKernel(VTA_TUTORIALS[name]);
      assert.equal(firstDifference(runToStream(fn.runs[0]!), golden(name)), undefined, name);
    }
    const { fn, info } = lowerVtaKernel(VTA_TUTORIALS.matrix_multiply_opt);
    const ours = runToStream(fn.runs[0]!);
    const gold = golden("matrix_multiply_opt");
    assert.deepEqual(info.carriedPops, []);
    // Golden ends NOP_STORE Pp, NOP_MEMORY pn, NOP_MEMORY Pn, NOP_COMPUTE pp,pn, FINISH; the committed
    // pop(3→2) adds one NOP_COMPUTE pn before the last NOP_COMPUTE, and everything else is the same.
    const k = gold.lines.length - 2;
    assert.deepEqual(
      ours.lines.map((l) => `${l.kind} ${l.flags}`),
      [...gold.lines.slice(0, k).map((l) => `${l.kind} ${l.flags}`), "NOP_COMPUTE pn", ...gold.lines.slice(k).map((l) => `${l.kind} ${l.flags}`)],
    );
    const carry = lowerVtaKernel(VTA_TUTORIALS.matrix_multiply_opt, { trailingPops: "carry" });
    assert.deepEqual(carry.info.carriedPops, [{ from: 3, to: 2 }]);
  });

  it("a changed schedule no longer matches (the comparison can fail)", () => {
    const spec = VTA_TUTORIALS.convolution_opt;
    const { fn } = lowerVtaKernel({ ...spec, schedule: { ...spec.schedule, storeGranularity: "row" } });
    assert.match(firstDifference(runToStream(fn.runs[0]!), golden("convolution_opt")) ?? "", /instruction 117/);
  });
});

describe("VTA compiler: tutorial statistics", () => {
  // The figures the tutorials print (docs/vta-isa.md §9), derived here from the instructions alone.
  const PUBLISHED = {
    matrix_multiply: {
      inp_load_nbytes: 256,
      wgt_load_nbytes: 65536,
      acc_load_nbytes: 0,
      uop_load_nbytes: 8,
      out_store_nbytes: 256,
      gemm_counter: 256,
      alu_counter: 0,
    },
    matrix_multiply_opt: {
      inp_load_nbytes: 4096,
      wgt_load_nbytes: 1048576,
      acc_load_nbytes: 0,
      uop_load_nbytes: 20,
      out_store_nbytes: 1024,
      gemm_counter: 4096,
      alu_counter: 192,
    },
    convolution_opt: {
      inp_load_nbytes: 114688,
      wgt_load_nbytes: 1179648,
      acc_load_nbytes: 0,
      uop_load_nbytes: 1144,
      out_store_nbytes: 50176,
      gemm_counter: 451584,
      alu_counter: 9408,
    },
  };
  for (const name of NAMES) {
    it(`${name} counts as published`, () => {
      assert.deepEqual(lowerVtaKernel(VTA_TUTORIALS[name]).info.stats, PUBLISHED[name]);
    });
  }
});
