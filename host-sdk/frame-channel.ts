/**
 * How a Session reaches its board: a duplex of encoded frames. Over the
 * network it is the OpenSession stream through the tracker; LocalSession
 * plugs an in-process board into the same interface.
 */
import * as grpc from "@grpc/grpc-js";
import { FarmError, SESSION_ID_HEADER, SESSION_TOKEN_HEADER, type HostServiceClient } from "../protos/index.ts";

export interface FrameChannel {
  /** false: the send buffer is full, wait for drained() before sending more. */
  send(frame: Uint8Array): boolean;
  drained(): Promise<void>;
  onFrame(handler: (frame: Uint8Array) => void): void;
  /** Called once when the channel is over; null means a clean end. */
  onClose(handler: (reason: FarmError | null) => void): void;
  /** No more frames from this side. */
  end(): void;
  /** Drops the channel now. */
  abort(): void;
}

export class GrpcFrameChannel implements FrameChannel {
  private readonly stream: grpc.ClientDuplexStream<Uint8Array, Buffer>;
  private closeHandler: ((reason: FarmError | null) => void) | undefined;
  private closedWith: { reason: FarmError | null } | undefined;

  /** `metadata`: the client's own (its token), to which the session's id and ticket are added. */
  constructor(client: HostServiceClient, sessionId: string, token: string, metadata = new grpc.Metadata()) {
    metadata.set(SESSION_ID_HEADER, sessionId);
    metadata.set(SESSION_TOKEN_HEADER, token);
    this.stream = client.OpenSession(metadata) as unknown as grpc.ClientDuplexStream<Uint8Array, Buffer>;
    this.stream.on("status", (s: grpc.StatusObject) =>
      this.close(s.code === grpc.status.OK ? null : FarmError.from({ ...s, message: s.details })),
    );
    this.stream.on("error", (err) => this.close(FarmError.from(err)));
  }

  private close(reason: FarmError | null): void {
    if (this.closedWith) return;
    this.closedWith = { reason };
    this.closeHandler?.(reason);
  }

  send(frame: Uint8Array): boolean {
    return this.stream.write(frame);
  }

  drained(): Promise<void> {
    return new Promise((resolve) => this.stream.once("drain", resolve));
  }

  onFrame(handler: (frame: Uint8Array) => void): void {
    this.stream.on("data", handler);
  }

  onClose(handler: (reason: FarmError | null) => void): void {
    this.closeHandler = handler;
    if (this.closedWith) handler(this.closedWith.reason);
  }

  end(): void {
    if (!this.stream.writableEnded) this.stream.end();
  }

  abort(): void {
    this.stream.cancel();
  }
}
