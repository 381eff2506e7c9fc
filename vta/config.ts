/**
 * The VTA hardware configuration as data (config/vta_config.json of TVM's VTA),
 * and every size derived from it. Nothing else in kernelfarm hard-codes a VTA
 * buffer size or element width: it asks a VtaHardware.
 */
import { FarmError } from "../protos/index.ts";

export interface VtaConfig {
  target: string;
  hwVer: string;
  logInpWidth: number;
  logWgtWidth: number;
  logAccWidth: number;
  logBatch: number;
  logBlock: number;
  logUopBuffSize: number;
  logInpBuffSize: number;
  logWgtBuffSize: number;
  logAccBuffSize: number;
}

/** The default Pynq / simulator configuration: int8 inputs and weights, int32 accumulators, 1×16×16 GEMM. */
export const DEFAULT_VTA_CONFIG: Readonly<VtaConfig> = Object.freeze({
  target: "sim",
  hwVer: "0.0.2",
  logInpWidth: 3,
  logWgtWidth: 3,
  logAccWidth: 5,
  logBatch: 0,
  logBlock: 4,
  logUopBuffSize: 15,
  logInpBuffSize: 15,
  logWgtBuffSize: 18,
  logAccBuffSize: 17,
});

/** Sizes derived from a configuration (include/vta/hw_spec_const.h). */
export interface VtaHardware {
  readonly config: Readonly<VtaConfig>;
  /** e.g. "1x16_i8w8a32_15_15_18_17" */
  readonly name: string;
  readonly batch: number;
  readonly blockIn: number;
  readonly blockOut: number;
  readonly inpWidth: number;
  readonly wgtWidth: number;
  readonly accWidth: number;
  readonly outWidth: number;
  /** Bytes of one element of each buffer. */
  readonly inpElemBytes: number;
  readonly wgtElemBytes: number;
  readonly accElemBytes: number;
  readonly outElemBytes: number;
  readonly uopElemBytes: 4;
  readonly insnBytes: 16;
  /** Elements per buffer, and their log2 (the widths of index fields). */
  readonly uopDepth: number;
  readonly inpDepth: number;
  readonly wgtDepth: number;
  readonly accDepth: number;
  readonly logUopDepth: number;
  readonly logInpDepth: number;
  readonly logWgtDepth: number;
  readonly logAccDepth: number;
}

export function vtaHardware(config: Readonly<VtaConfig> = DEFAULT_VTA_CONFIG): VtaHardware {
  const c = config;
  const batch = 1 << c.logBatch;
  const block = 1 << c.logBlock;
  const inpWidth = 1 << c.logInpWidth;
  const wgtWidth = 1 << c.logWgtWidth;
  const accWidth = 1 << c.logAccWidth;
  const outWidth = inpWidth;
  const inpElemBits = batch * block * inpWidth;
  const wgtElemBits = block * block * wgtWidth;
  const accElemBits = batch * block * accWidth;
  // LOG_*_BUFF_DEPTH = LOG_*_BUFF_SIZE - log2(element bits) + 3
  const logDepth = (logSize: number, elemBits: number) => logSize - Math.log2(elemBits) + 3;
  const logUopDepth = logDepth(c.logUopBuffSize, 32);
  const logInpDepth = logDepth(c.logInpBuffSize, inpElemBits);
  const logWgtDepth = logDepth(c.logWgtBuffSize, wgtElemBits);
  const logAccDepth = logDepth(c.logAccBuffSize, accElemBits);
  return Object.freeze({
    config: c,
    name: `${batch}x${block}_i${inpWidth}w${wgtWidth}a${accWidth}_${c.logUopBuffSize}_${c.logInpBuffSize}_${c.logWgtBuffSize}_${c.logAccBuffSize}`,
    batch,
    blockIn: block,
    blockOut: block,
    inpWidth,
    wgtWidth,
    accWidth,
    outWidth,
    inpElemBytes: inpElemBits / 8,
    wgtElemBytes: wgtElemBits / 8,
    accElemBytes: accElemBits / 8,
    outElemBytes: (batch * block * outWidth) / 8,
    uopElemBytes: 4,
    insnBytes: 16,
    uopDepth: 1 << logUopDepth,
    inpDepth: 1 << logInpDepth,
    wgtDepth: 1 << logWgtDepth,
    accDepth: 1 << logAccDepth,
    logUopDepth,
    logInpDepth,
    logWgtDepth,
    logAccDepth,
  });
}

export const DEFAULT_VTA_HARDWARE = vtaHardware();

/** TVM's vta_config.json keys, and the field of VtaConfig each fills. */
const TVM_CONFIG_KEYS: readonly [string, keyof VtaConfig][] = [
  ["TARGET", "target"],
  ["HW_VER", "hwVer"],
  ["LOG_INP_WIDTH", "logInpWidth"],
  ["LOG_WGT_WIDTH", "logWgtWidth"],
  ["LOG_ACC_WIDTH", "logAccWidth"],
  ["LOG_BATCH", "logBatch"],
  ["LOG_BLOCK", "logBlock"],
  ["LOG_UOP_BUFF_SIZE", "logUopBuffSize"],
  ["LOG_INP_BUFF_SIZE", "logInpBuffSize"],
  ["LOG_WGT_BUFF_SIZE", "logWgtBuffSize"],
  ["LOG_ACC_BUFF_SIZE", "logAccBuffSize"],
];

/**
 * A VtaConfig from the text of TVM's `vta_config.json` (the companion file of
 * a VTA bitstream); `where` names the file in errors. Every key must be there
 * with the right type.
 */
export function parseTvmVtaConfig(text: string, where: string): VtaConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new FarmError("INVALID_ARGUMENT", `${where} is not JSON (${(err as Error).message}); a VTA bitstream's companion is TVM's vta_config.json`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw new FarmError("INVALID_ARGUMENT", `${where} is not a JSON object like TVM's vta_config.json`);
  const o = json as Record<string, unknown>;
  const missing = TVM_CONFIG_KEYS.filter(([k]) => o[k] === undefined).map(([k]) => k);
  if (missing.length > 0) throw new FarmError("INVALID_ARGUMENT", `${where} lacks ${missing.join(", ")} (TVM's vta_config.json has them all)`);
  const config: Record<string, string | number> = {};
  for (const [key, field] of TVM_CONFIG_KEYS) {
    const v = o[key];
    const text = field === "target" || field === "hwVer";
    if (text ? typeof v !== "string" : !Number.isInteger(v) || (v as number) < 0 || (v as number) > 31) {
      throw new FarmError("INVALID_ARGUMENT", `${where}: ${key} is ${JSON.stringify(v)}, expected ${text ? "a string" : "an integer 0..31"}`);
    }
    config[field] = v as string | number;
  }
  return config as unknown as VtaConfig;
}
