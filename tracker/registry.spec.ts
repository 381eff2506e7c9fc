/** The registry's indexes (by id, by key, ready boards of a key, id order) follow agents as they come and go, and readiness. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { newBoard, Registry, servesAsker, type Board, type BoardProtocol, type TvmAgent } from "./registry.ts";

let attaches = 0;
function agent(name: string, boards: Array<{ name: string; key: string }>): TvmAgent {
  const a: TvmAgent = {
    protocol: "tvm",
    control: { assign: () => {}, openRelay: () => {}, end: () => {} },
    id: `${name}#${++attaches}`,
    name,
    peer: "127.0.0.1:1",
    attachedAt: 1,
    lastSeen: 1,
    boards: new Map(),
    data: undefined,
  };
  for (const b of boards) a.boards.set(b.name, newBoard(a, { id: `${name}/${b.name}`, name: b.name, key: b.key, kind: "cpu", labels: {}, capabilities: {} }));
  return a;
}

describe("the registry", () => {
  it("indexes boards by id, by key and by readiness as agents come and go", () => {
    const registry = new Registry();
    const x = agent("x", [
      { name: "p", key: "k" },
      { name: "q", key: "k" },
    ]);
    const ready = (key: string) => [...registry.readyBoardsOf(key)].map((b: Board) => b.id);
    registry.setReady(x.boards.get("p")!, true);
    assert.deepEqual(ready("k"), [], "a board not attached is not indexed");
    registry.add(x);
    assert.deepEqual(ready("k"), ["x/p"], "a board ready when its agent attached");
    registry.setReady(x.boards.get("q")!, true);
    registry.setReady(x.boards.get("p")!, false);
    registry.setReady(x.boards.get("p")!, true);
    assert.deepEqual(ready("k"), ["x/q", "x/p"], "in the order they became ready");
    assert.equal(registry.board("x/q"), x.boards.get("q"));
    assert.deepEqual(
      [...registry.boardsWithKey("k")].map((b) => b.id),
      ["x/p", "x/q"],
    );
    // A newer agent of the same name attached before the old one is removed: the old one's removal leaves it.
    const y = agent("x", [{ name: "p", key: "k" }]);
    registry.add(y);
    registry.remove(x);
    assert.equal(registry.board("x/p"), y.boards.get("p"));
    assert.deepEqual(ready("k"), []);
    assert.deepEqual(registry.keys(), ["k"]);
    assert.equal(registry.remove(x), false);
    registry.remove(y);
    assert.deepEqual(registry.keys(), []);
    assert.equal(registry.board("x/p"), undefined);
  });

  it("lists boards in id order, again after an agent came or went", () => {
    const registry = new Registry();
    registry.add(
      agent("b", [
        { name: "2", key: "k" },
        { name: "1", key: "k" },
      ]),
    );
    const a = agent("a", [{ name: "x", key: "j" }]);
    registry.add(a);
    assert.deepEqual(
      registry.boardsById().map((b) => b.id),
      ["a/x", "b/1", "b/2"],
    );
    registry.remove(a);
    assert.deepEqual(
      registry.boardsById().map((b) => b.id),
      ["b/1", "b/2"],
    );
    assert.deepEqual(registry.keys(), ["k"]);
  });

  it("grants a board to its own agent's askers, and a kernelfarm board of kind tvm to TVM clients only", () => {
    const of = (protocol: BoardProtocol, kind: Board["kind"]) => ({ kind, agent: { protocol } }) as Pick<Board, "kind" | "agent">;
    assert.equal(servesAsker(of("kernelfarm", "cpu"), "kernelfarm"), true);
    assert.equal(servesAsker(of("kernelfarm", "cpu"), "tvm"), false);
    assert.equal(servesAsker(of("tvm", "tvm-rpc"), "tvm"), true);
    assert.equal(servesAsker(of("tvm", "tvm-rpc"), "kernelfarm"), false);
    assert.equal(servesAsker(of("kernelfarm", "tvm"), "tvm"), true);
    assert.equal(servesAsker(of("kernelfarm", "tvm"), "kernelfarm"), false);
    const registry = new Registry();
    const farm = { ...agent("f", []), protocol: "kernelfarm" } as unknown as TvmAgent;
    farm.boards.set("t", newBoard(farm, { id: "f/t", name: "t", key: "k", kind: "tvm", labels: {}, capabilities: {} }));
    registry.add(farm);
    assert.deepEqual(registry.keys("tvm"), ["k"]);
    assert.deepEqual(registry.keys("kernelfarm"), []);
    assert.deepEqual(
      registry.boardsOfKey("k", "tvm").map((b) => b.id),
      ["f/t"],
    );
  });
});
