/** Board kinds this agent can serve, by name. */
import { BOARD_KINDS, FarmError } from "../../protos/index.ts";
import type { Backend, BoardFacts, BoardKind } from "./backend.ts";

/** Declared once, with what each kind is, in protos/farm/v1/contract.json; the switches below serve each one. */
export { BOARD_KINDS };

export function isBoardKind(kind: string): kind is BoardKind {
  return (BOARD_KINDS as readonly string[]).includes(kind);
}

/** Facts for registration; cheap, runs in the agent process. */
export async function describeBoard(kind: BoardKind, options: Record<string, unknown>): Promise<BoardFacts> {
  switch (kind) {
    case "cpu":
      return (await import("./cpu.ts")).describeCpuBoard();
    case "cuda":
      return (await import("./cuda/backend.ts")).describeCudaBoard(deviceOption(options));
    case "vta-sim":
      return (await import("./vta-sim/backend.ts")).describeVtaSimBoard();
    case "vta":
      return (await import("./vta-mmio/backend.ts")).describeVtaBoard(String(options.device));
    case "tvm":
      return (await import("./tvm/backend.ts")).describeTvmBoard(options);
  }
}

/** The backend itself; runs in the session worker (loads native code). */
export async function createBackend(kind: string, options: Record<string, unknown>): Promise<Backend> {
  switch (kind) {
    case "cpu": {
      const { CpuBackend } = await import("./cpu.ts");
      return new CpuBackend({
        memoryBytes: typeof options.memoryBytes === "number" ? options.memoryBytes : undefined,
        canaryLibrary: typeof options.canaryLibrary === "string" ? options.canaryLibrary : undefined,
        supportLibrary: typeof options.supportLibrary === "string" ? options.supportLibrary : undefined,
      });
    }
    case "cuda": {
      const { CudaBackend } = await import("./cuda/backend.ts");
      return new CudaBackend({ device: deviceOption(options), memoryBytes: typeof options.memoryBytes === "number" ? options.memoryBytes : undefined });
    }
    case "vta-sim": {
      const { VtaSimBackend } = await import("./vta-sim/backend.ts");
      return new VtaSimBackend({ memoryBytes: typeof options.memoryBytes === "number" ? options.memoryBytes : undefined });
    }
    case "vta": {
      const { VtaMmioBackend } = await import("./vta-mmio/backend.ts");
      const device = String(options.device);
      return new VtaMmioBackend(
        {
          device,
          memoryBytes: typeof options.memoryBytes === "number" ? options.memoryBytes : undefined,
          dma: typeof options.dma === "string" ? options.dma : undefined,
          hang: typeof options.hang === "string" ? options.hang : undefined,
          doneTimeoutMs: typeof options.doneTimeoutMs === "number" ? options.doneTimeoutMs : undefined,
        },
        device === "model" ? undefined : (await import("./vta-mmio/linux.ts")).openBoard,
      );
    }
    case "tvm": {
      const { TvmBackend, tvmRuntimeOf } = await import("./tvm/backend.ts");
      // The agent resolved TVM's paths (describeTvmBoard): the worker's environment holds no $KFARM_TVM_HOME.
      return new TvmBackend(tvmRuntimeOf(options, {}), typeof options.canaryLibrary === "string" ? options.canaryLibrary : undefined);
    }
    default:
      throw new FarmError("INVALID_ARGUMENT", `unknown board kind "${kind}"; this agent serves: ${BOARD_KINDS.join(", ")}`);
  }
}

/** How many devices of `kind` this host has, for `KIND:all` boards. */
export async function deviceCount(kind: BoardKind): Promise<number> {
  if (kind !== "cuda") throw new FarmError("INVALID_ARGUMENT", `board kind ${kind} has no device index: "${kind}:all" means nothing`);
  return (await import("./cuda/device-info.ts")).cudaDeviceCount();
}

function deviceOption(options: Record<string, unknown>): number {
  return typeof options.device === "number" ? options.device : 0;
}

export type {
  Backend,
  BoardKind,
  CanaryResult,
  CallSettings,
  BoardFacts,
  DeviceArray,
  ArgValue,
  LoadedFunction,
  LoadedModule,
  BackendStats,
} from "./backend.ts";
