/**
 * A session opened by hand, below the host SDK: the Session stream with an
 * encoded request, its grant, and lanes dialled byte by byte — for tests that
 * send what the SDK never would (garbage, forged or reused tickets).
 */
import { connect, type Socket } from "node:net";
import {
  HostService,
  SESSION_REQUEST_HEADER,
  decodeLaneWelcome,
  encodeLaneHello,
  encodeSessionRequest,
  type Grant__Output,
  type HostServiceClient,
  type LaneHello,
  type SessionRequest,
} from "../../protos/index.ts";
import { LaneSocket, callMetadata, makeClient } from "../../runtime/index.ts";
import { awaitGrant, type SessionStream } from "../../host-sdk/frame-channel.ts";

export interface RawSession {
  client: HostServiceClient;
  stream: SessionStream;
  grant: Grant__Output;
  close(): void;
}

/** Requests a session on a raw Session stream and waits for its grant. */
export async function rawSession(address: string, req: SessionRequest, token?: string): Promise<RawSession> {
  const client = makeClient<HostServiceClient>(HostService, address, token ? { token } : {});
  const md = callMetadata(token ? { token } : {});
  md.set(SESSION_REQUEST_HEADER, Buffer.from(encodeSessionRequest(req)));
  const stream = client.Session(md) as unknown as SessionStream;
  stream.on("error", () => {});
  const grant = await awaitGrant(stream);
  return {
    client,
    stream,
    grant,
    close: () => {
      stream.cancel();
      client.close();
    },
  };
}

/** Says `hello` on a fresh plaintext lane to host:port; resolves with the welcome's error (undefined: welcomed) and the lane. */
export async function rawHello(host: string, port: number, hello: LaneHello): Promise<{ error?: { code: string; message: string }; lane: LaneSocket }> {
  const socket: Socket = connect({ host, port });
  await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  const lane = new LaneSocket(socket, "a test lane");
  lane.send(encodeLaneHello(hello));
  const w = decodeLaneWelcome(await lane.first("welcome"));
  return { ...(w.error ? { error: { code: w.error.code, message: w.error.message } } : {}), lane };
}
