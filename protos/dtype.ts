/** Element types of remote arrays and scalar parameters, and their sizes. */

export const DTYPES = {
  int8: { bytes: 1, array: Int8Array, c: "int8_t" },
  uint8: { bytes: 1, array: Uint8Array, c: "uint8_t" },
  int16: { bytes: 2, array: Int16Array, c: "int16_t" },
  uint16: { bytes: 2, array: Uint16Array, c: "uint16_t" },
  int32: { bytes: 4, array: Int32Array, c: "int32_t" },
  uint32: { bytes: 4, array: Uint32Array, c: "uint32_t" },
  int64: { bytes: 8, array: BigInt64Array, c: "int64_t" },
  uint64: { bytes: 8, array: BigUint64Array, c: "uint64_t" },
  float32: { bytes: 4, array: Float32Array, c: "float" },
  float64: { bytes: 8, array: Float64Array, c: "double" },
} as const;

export type Dtype = keyof typeof DTYPES;
export type TypedArrayOf<D extends Dtype> = InstanceType<(typeof DTYPES)[D]["array"]>;
/** Any typed array of a known dtype, whatever memory backs it. */
export type AnyTypedArray =
  | Int8Array<ArrayBufferLike>
  | Uint8Array<ArrayBufferLike>
  | Int16Array<ArrayBufferLike>
  | Uint16Array<ArrayBufferLike>
  | Int32Array<ArrayBufferLike>
  | Uint32Array<ArrayBufferLike>
  | BigInt64Array<ArrayBufferLike>
  | BigUint64Array<ArrayBufferLike>
  | Float32Array<ArrayBufferLike>
  | Float64Array<ArrayBufferLike>;

export function isDtype(value: unknown): value is Dtype {
  return typeof value === "string" && Object.hasOwn(DTYPES, value);
}

/** Ranges of the integer dtypes that a JavaScript number carries exactly (the 64-bit ones: the safe integers). */
const INTEGER_RANGES: Partial<Record<Dtype, readonly [number, number]>> = {
  int8: [-(2 ** 7), 2 ** 7 - 1],
  uint8: [0, 2 ** 8 - 1],
  int16: [-(2 ** 15), 2 ** 15 - 1],
  uint16: [0, 2 ** 16 - 1],
  int32: [-(2 ** 31), 2 ** 31 - 1],
  uint32: [0, 2 ** 32 - 1],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  uint64: [0, Number.MAX_SAFE_INTEGER],
};

/** [min, max] of an integer dtype as numbers; undefined for floating point ones. */
export function integerRange(dtype: Dtype): readonly [number, number] | undefined {
  return INTEGER_RANGES[dtype];
}

export function dtypeBytes(dtype: Dtype): number {
  return DTYPES[dtype].bytes;
}

/** The dtype of a typed array (Float32Array → float32). */
export function dtypeOf(array: AnyTypedArray): Dtype {
  for (const [name, info] of Object.entries(DTYPES)) {
    if (array instanceof info.array) return name as Dtype;
  }
  throw new TypeError(`unsupported array type ${Object.prototype.toString.call(array)}`);
}

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((n, d) => n * d, 1);
}

/** A typed array of `dtype` viewing `bytes` (copied first when misaligned). */
export function viewAs<D extends Dtype>(dtype: D, bytes: Uint8Array): TypedArrayOf<D> {
  const info = DTYPES[dtype];
  const aligned = bytes.byteOffset % info.bytes === 0 ? bytes : Uint8Array.from(bytes);
  return new info.array(aligned.buffer as ArrayBuffer, aligned.byteOffset, aligned.byteLength / info.bytes) as TypedArrayOf<D>;
}
