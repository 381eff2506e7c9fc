/**
 * A farm in containers, driven from the host: a tracker and a simulator agent
 * started from the images of deploy/docker/ (deploy/docker/ci-images.sh builds
 * and starts them), and this host script's sessions through them. The agent's
 * boards show up in the tracker's summary, its workers run as the image's
 * non-root user, and a VTA program and a CPU kernel compiled here come back
 * with the right results.
 *
 * Skipped, with the reason printed, unless KFARM_CONTAINER_TRACKER names the
 * tracker (host:port) and KFARM_CONTAINER_AGENT the agent's name.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "./helpers/suites.ts";
import { compileVta, connectTracker, VTA_TUTORIALS, type Session, type TrackerClient } from "../host-sdk/index.ts";
import { checkVadd } from "./helpers/kernels.ts";
import { waitForFreeBoards } from "./helpers/processes.ts";
import { firstMismatch, matmulCase } from "./helpers/vta.ts";

const TRACKER = process.env.KFARM_CONTAINER_TRACKER;
const AGENT = process.env.KFARM_CONTAINER_AGENT;
const skip =
  TRACKER && AGENT ? false : "no farm in containers: deploy/docker/ci-images.sh starts one and sets KFARM_CONTAINER_TRACKER and KFARM_CONTAINER_AGENT";

/** Containers start their node, then the agent its warm workers, on a 2-core CI machine. */
const BOARDS_TIMEOUT_MS = 60_000;

describe("a farm in containers, from the host", { skip }, () => {
  let client: TrackerClient;

  const withSession = async <T>(key: string, fn: (s: Session) => Promise<T>): Promise<T> => {
    const s = await client.request(key, { deadlineMs: 30_000 });
    console.log(`${key} session on ${s.board.id} over the ${s.lane} lane${s.laneNote ? ` (${s.laneNote})` : ""}`);
    try {
      return await fn(s);
    } finally {
      await s.close();
    }
  };

  before(async () => {
    client = await connectTracker(TRACKER!);
  });
  after(() => client?.close());

  it("the agent's boards show up in the tracker's summary, its workers confined as a user's", async () => {
    await waitForFreeBoards(client, 2, undefined, BOARDS_TIMEOUT_MS);
    const boards = (await client.summary()).boards.filter((b) => b.agent_name === AGENT);
    assert.deepEqual(boards.map((b) => [b.key, b.kind, b.state]).sort(), [
      ["cpu", "cpu", "free"],
      ["vta", "vta-sim", "free"],
    ]);
    for (const b of boards) {
      console.log(`${b.id}: ${b.capabilities.sandbox}`);
      // The image's USER: as root the line would name per-worker uids (docs/sandbox.md).
      assert.match(b.capabilities.sandbox ?? "", /user=agent's user/, `${b.id} runs its workers as the agent's (non-root) user`);
    }
  });

  it("TVM's matrix_multiply on the VTA simulator board: the reference's output and TVM's statistics", async () => {
    const spec = VTA_TUTORIALS.matrix_multiply;
    const mod = compileVta(spec);
    const c = matmulCase(spec.workload, 101);
    const counters = await withSession("vta", async (s) => {
      await s.upload(mod);
      const fn = (await s.loadModule(mod.name)).getFunction(mod.functions[0]!.name);
      const params = mod.functions[0]!.params;
      const inputs = await Promise.all(c.inputs.map((x, i) => s.array(x, params[i]!.shape!)));
      const out = await s.array({ shape: params[2]!.shape!, dtype: "int8" });
      await s.clearStats();
      await fn(...inputs, out);
      const packed = await out.toArray();
      assert.ok(packed instanceof Int8Array);
      assert.equal(firstMismatch(c.unpack(packed), c.want), undefined);
      return (await s.stats()).counters;
    });
    // What TVM's simulator printed for this tutorial (docs/vta-isa.md §9.1; tests/vta-farm.test.ts checks all three).
    assert.deepEqual(
      {
        inp: counters.inp_load_nbytes,
        wgt: counters.wgt_load_nbytes,
        uop: counters.uop_load_nbytes,
        out: counters.out_store_nbytes,
        gemm: counters.gemm_counter,
      },
      { inp: 256, wgt: 65536, uop: 8, out: 256, gemm: 256 },
    );
  });

  it("a C kernel compiled on the host runs on the container's CPU board", async () => {
    await withSession("cpu", (s) => checkVadd(s));
  });
});
