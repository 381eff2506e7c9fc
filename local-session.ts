/**
 * LocalSession: the Session API on a board run inside this process, with no
 * tracker or agent (TVM's rpc.LocalSession). Frames still go through the
 * real encoder and the agent's SessionServer, so behaviour matches a remote
 * board; but a crashing kernel takes this process with it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FarmError } from "./protos/index.ts";
import type { BoardKind, SessionLimits, SessionServer } from "./device-agent/index.ts";
import { Session, type FrameChannel } from "./host-sdk/index.ts";

export interface LocalSessionOptions {
  /** Board kind; default "cpu". */
  kind?: BoardKind;
  /** Backend settings (memoryBytes, ...). */
  backendOptions?: Record<string, unknown>;
  limits?: Partial<SessionLimits>;
}

const DEFAULT_LIMITS: SessionLimits = { maxUploadBytes: 1 << 30, maxSessionBytes: 4 * (1 << 30), callTimeoutMs: 0 };

/** Frames cross between the two ends on the microtask queue, like on a stream. */
class InProcessChannel implements FrameChannel {
  private frameHandler: ((frame: Uint8Array) => void) | undefined;
  private closeHandler: ((reason: FarmError | null) => void) | undefined;
  private closed = false;
  server: SessionServer | undefined;

  send(frame: Uint8Array): boolean {
    const copy = Uint8Array.from(frame);
    queueMicrotask(() => this.server?.receive(copy));
    return true;
  }
  sendParts(parts: readonly Uint8Array[]): boolean {
    return this.send(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  }

  deliver(frame: Uint8Array): void {
    const copy = Uint8Array.from(frame);
    queueMicrotask(() => this.frameHandler?.(copy));
  }
  drained(): Promise<void> {
    return Promise.resolve();
  }
  onFrame(handler: (frame: Uint8Array) => void): void {
    this.frameHandler = handler;
  }
  onClose(handler: (reason: FarmError | null) => void): void {
    this.closeHandler = handler;
  }
  finish(reason: FarmError | null): void {
    if (this.closed) return;
    this.closed = true;
    queueMicrotask(() => this.closeHandler?.(reason));
  }
  end(): void {
    this.finish(null);
  }
  abort(): void {
    this.finish(new FarmError("CANCELLED", "the local session was aborted"));
  }
}

export class LocalSession extends Session {
  static async open(opts: LocalSessionOptions = {}): Promise<LocalSession> {
    const kind = opts.kind ?? "cpu";
    // Loaded on the first open, not with `import "kernelfarm"`: host scripts that never run a board in-process do not pay for the backends.
    const { createBackend, SessionServer } = await import("./device-agent/index.ts");
    const backend = await createBackend(kind, opts.backendOptions ?? {});
    const workdir = mkdtempSync(join(tmpdir(), "kfarm-local-"));
    const channel = new InProcessChannel();
    const server = new SessionServer(
      backend,
      workdir,
      { ...DEFAULT_LIMITS, ...opts.limits },
      {
        send: (frame) => {
          channel.deliver(frame);
          return true;
        },
        drained: () => Promise.resolve(),
        // Delivered in this process: a crash here takes the host with it anyway.
        flushed: () => undefined,
      },
    );
    channel.server = server;
    void server.closed.then(() => {
      server.dispose();
      try {
        rmSync(workdir, { recursive: true, force: true });
      } catch {
        // A temporary folder that cannot be removed stays behind: not worth a rejection nobody handles, which would end the host.
      }
      channel.finish(null);
    });
    const board = {
      id: `local/${kind}`,
      key: kind,
      kind,
      labels: {},
      capabilities: {},
      agent_id: "local",
      agent_name: "local",
      state: "busy" as const,
      session_id: "local",
      client_id: "local",
      session_lane: "local" as const,
      health: "healthy" as const,
      health_reason: "",
      last_error: "",
      drained: false,
      drain_reason: "",
      last_canary: "",
      last_canary_at_ms: 0,
      health_history: [],
      canary_ns: 0,
      canary_baseline_ns: 0,
      canary_baseline_runs: 0,
      canary_drift: 0,
      canary_timings: [],
      cuda_limits: null,
    };
    return new LocalSession("local", board, channel);
  }
}
