/**
 * Just enough of a WebAssembly binary writer to emit the compute core's
 * kernels (core-wasm.ts): LEB128, sections, and the scalar and SIMD
 * instructions they use. Opcodes are from the WebAssembly core and
 * fixed-width SIMD specs.
 */

export const I32 = 0x7f;
export const V128 = 0x7b;

export function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n = Math.floor(n / 128);
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

export function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    const done = (n === 0 && (byte & 0x40) === 0) || (n === -1 && (byte & 0x40) !== 0);
    out.push(done ? byte : byte | 0x80);
    if (done) return out;
  }
}

function name(s: string): number[] {
  const b = [...new TextEncoder().encode(s)];
  return [...uleb(b.length), ...b];
}

function vec(items: number[][]): number[] {
  return [...uleb(items.length), ...items.flat()];
}

function section(id: number, body: number[]): number[] {
  return [id, ...uleb(body.length), ...body];
}

/** An instruction sequence under construction. */
export class Code {
  readonly bytes: number[] = [];

  private op(...b: number[]): this {
    this.bytes.push(...b);
    return this;
  }
  private simd(opcode: number, ...imm: number[]): this {
    return this.op(0xfd, ...uleb(opcode), ...imm);
  }

  block(): this {
    return this.op(0x02, 0x40);
  }
  loop(): this {
    return this.op(0x03, 0x40);
  }
  end(): this {
    return this.op(0x0b);
  }
  br(depth: number): this {
    return this.op(0x0c, ...uleb(depth));
  }
  brIf(depth: number): this {
    return this.op(0x0d, ...uleb(depth));
  }
  /** br_table: to `depths[i]` for i on the stack, `otherwise` for any other value. */
  brTable(depths: readonly number[], otherwise: number): this {
    return this.op(0x0e, ...uleb(depths.length), ...depths.flatMap((d) => uleb(d)), ...uleb(otherwise));
  }
  /** select: the first operand if the third is non-zero, else the second. */
  select(): this {
    return this.op(0x1b);
  }
  get(local: number): this {
    return this.op(0x20, ...uleb(local));
  }
  set(local: number): this {
    return this.op(0x21, ...uleb(local));
  }
  tee(local: number): this {
    return this.op(0x22, ...uleb(local));
  }
  i32const(v: number): this {
    return this.op(0x41, ...sleb(v | 0));
  }
  i32load(offset: number): this {
    return this.op(0x28, 2, ...uleb(offset));
  }
  /** i32.store with a constant byte offset (alignment hint 4 bytes). */
  i32store(offset: number): this {
    return this.op(0x36, 2, ...uleb(offset));
  }
  i32eqz(): this {
    return this.op(0x45);
  }
  i32eq(): this {
    return this.op(0x46);
  }
  i32ltS(): this {
    return this.op(0x48);
  }
  i32ltU(): this {
    return this.op(0x49);
  }
  i32geS(): this {
    return this.op(0x4e);
  }
  i32geU(): this {
    return this.op(0x4f);
  }
  i32add(): this {
    return this.op(0x6a);
  }
  i32sub(): this {
    return this.op(0x6b);
  }
  i32mul(): this {
    return this.op(0x6c);
  }
  i32and(): this {
    return this.op(0x71);
  }
  i32shl(): this {
    return this.op(0x74);
  }
  i32shrS(): this {
    return this.op(0x75);
  }
  /** v128.load with a constant byte offset (alignment hint 1 byte: always valid). */
  v128load(offset: number): this {
    return this.simd(0x00, 0, ...uleb(offset));
  }
  /** i16x8.load8x8_s: 8 int8 sign-extended to 8 int16. */
  load8x8s(offset: number): this {
    return this.simd(0x01, 0, ...uleb(offset));
  }
  /** v128.load32_splat: one 32-bit value in every lane. */
  load32Splat(offset: number): this {
    return this.simd(0x09, 0, ...uleb(offset));
  }
  v128store(offset: number): this {
    return this.simd(0x0b, 0, ...uleb(offset));
  }
  /** i8x16.shuffle of two vectors by 32-bit lanes (0–3 first operand, 4–7 second). */
  shuffle32(lanes: readonly [number, number, number, number]): this {
    const bytes = lanes.flatMap((l) => [4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3]);
    return this.simd(0x0d, ...bytes);
  }
  i32x4splat(): this {
    return this.simd(0x11);
  }
  /** i32x4.shl by an i32 amount (taken mod 32). */
  i32x4shl(): this {
    return this.simd(0xab);
  }
  /** i32x4.shr_s by an i32 amount (taken mod 32). */
  i32x4shrS(): this {
    return this.simd(0xac);
  }
  i32x4add(): this {
    return this.simd(0xae);
  }
  i32x4mul(): this {
    return this.simd(0xb5);
  }
  i32x4minS(): this {
    return this.simd(0xb6);
  }
  i32x4maxS(): this {
    return this.simd(0xb8);
  }
  /** i32x4.dot_i16x8_s: lane i = a[2i]·b[2i] + a[2i+1]·b[2i+1]. */
  i32x4dotI16x8s(): this {
    return this.simd(0xba);
  }
}

export interface WasmFunction {
  exportName: string;
  params: number[];
  locals: number[];
  body: Code;
}

/** A module importing `env.mem` (a memory of exactly `pages` pages) and exporting `fns`. */
export function wasmModule(pages: number, fns: WasmFunction[]): Uint8Array {
  const types = fns.map((f) => [0x60, ...vec(f.params.map((t) => [t])), 0x00]);
  const imports = [[...name("env"), ...name("mem"), 0x02, 0x01, ...uleb(pages), ...uleb(pages)]];
  const funcs = fns.map((_, i) => uleb(i));
  const exports = fns.map((f, i) => [...name(f.exportName), 0x00, ...uleb(i)]);
  const bodies = fns.map((f) => {
    const groups: number[][] = [];
    for (const t of f.locals) {
      const last = groups[groups.length - 1];
      if (last && last[1] === t) last[0]!++;
      else groups.push([1, t]);
    }
    const body = [...vec(groups.map(([n, t]) => [...uleb(n!), t!])), ...f.body.bytes, 0x0b];
    return [...uleb(body.length), ...body];
  });
  return new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, vec(types)),
    ...section(2, vec(imports)),
    ...section(3, vec(funcs)),
    ...section(7, vec(exports)),
    ...section(10, vec(bodies)),
  ]);
}
