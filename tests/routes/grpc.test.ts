/**
 * The whole session suite again on the grpc route (the default run takes
 * auto, which is direct on a loopback farm): every lane must pass it. Then
 * what only this route has: the agent in the middle of the worker's lane
 * (device-agent/agent/lane-pair.ts), facing a worker turned hostile.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { compileCpu, connectTracker } from "../../host-sdk/index.ts";
import { MAX_MESSAGE_BYTES, type FarmError } from "../../protos/index.ts";
import { checkVadd } from "../helpers/kernels.ts";
import { startAgentProcess, startTrackerProcess, waitFor, waitForFreeBoards } from "../helpers/processes.ts";

process.env.KFARM_ROUTE = "grpc";
await import("./session-suite.ts");

/**
 * A tenant's kernel runs in the session worker, so it can write to the
 * worker's end of the lane's pair: the accepted end of a socket named
 * pair-*.sock (lane-pair.ts socketPair). It writes a frame header announcing
 * `announced` bytes there, and nothing more.
 */
const FORGE_SOURCE = `
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
void forge(int32_t announced) {
  uint32_t n = (uint32_t)announced;
  unsigned char header[4] = { n >> 24, n >> 16, n >> 8, n };
  for (int fd = 3; fd < 1024; fd++) {
    struct sockaddr_un a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    if (getsockname(fd, (struct sockaddr*)&a, &len) != 0 || a.sun_family != AF_UNIX) continue;
    if (strstr(a.sun_path, "/pair-")) write(fd, header, 4);
  }
}
`;

describe("a worker that breaks the grpc lane's framing", () => {
  it(
    "is cut off at its header: the session ends PROTOCOL_ERROR saying why, the agent logs it, the agent and other sessions serve on",
    { timeout: 60_000 },
    async () => {
      const tracker = await startTrackerProcess();
      const agent = await startAgentProcess(tracker.address, ["cpu:key=cpu,name=c0", "cpu:key=cpu,name=c1"], [], { env: { KFARM_LOG: "warn" } });
      const client = await connectTracker(tracker.address);
      try {
        await waitForFreeBoards(client, 2);
        const forge = await compileCpu(FORGE_SOURCE, { functions: { forge: ["int32 announced"] } });
        const other = await client.request("cpu");
        const s = await client.request("cpu");
        assert.equal(s.lane, "grpc");
        await s.upload(forge);
        const mod = await s.loadModule(forge.name);

        const announced = 1 << 30;
        await assert.rejects(mod.getFunction("forge")(announced), (e: FarmError) => {
          // The tracker saw only its stream cancelled; the agent ended the session with the breach as it cut the
          // worker's socket (device-agent/agent/lane-pair.ts), before the worker could report its lane closing.
          assert.equal(e.code, "PROTOCOL_ERROR", `${e.code}: ${e.message}`);
          assert.match(e.message, new RegExp(`a frame of ${announced} bytes is over the limit of ${MAX_MESSAGE_BYTES}`));
          return true;
        });
        assert.ok(s.isClosed);
        await waitFor("the agent's account of the breach", () =>
          agent
            .stderr()
            .split("\n")
            .some(
              (line) =>
                line.includes(`"audit":"worker_protocol"`) &&
                line.includes(s.id) &&
                line.includes(`a frame of ${announced} bytes is over the limit of ${MAX_MESSAGE_BYTES}`),
            ),
        );

        assert.equal(agent.proc.exitCode, null, "the agent lives on");
        await checkVadd(other);
        await other.close();
        await waitForFreeBoards(client, 2);
        const again = await client.request("cpu");
        await checkVadd(again);
        await again.close();
      } finally {
        client.close();
        await agent.stop();
        await tracker.stop();
      }
    },
  );
});
