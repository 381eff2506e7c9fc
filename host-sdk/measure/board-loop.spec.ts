/**
 * A board loop with plain objects standing in for its sessions: one
 * session asked for however many slots want it, a lost one replaced, and
 * the blame rule — a lost session is charged to the first request the board
 * did not answer, not to the candidates queued behind it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BoardClock } from "./board-clock.ts";
import { BoardLoop } from "./board-loop.ts";
import type { BoardSession } from "./board-session.ts";

interface Fake {
  session: { isClosed: boolean; board: { id: string }; close(): Promise<void> };
}

/** What BoardLoop uses of a BoardSession: whether it is closed, its board, and close(). */
function fakeSession(board: string): BoardSession & Fake {
  const fake: Fake = {
    session: {
      isClosed: false,
      board: { id: board },
      close() {
        fake.session.isClosed = true;
        return Promise.resolve();
      },
    },
  };
  return fake as unknown as BoardSession & Fake;
}

/** A loop whose sessions come from `sessions`, in order; undefined once they run out. */
function loopOver(sessions: (BoardSession | undefined)[]): { loop: BoardLoop; asked: () => number } {
  let asked = 0;
  const loop = new BoardLoop(new BoardClock(2, () => "tail"), () => Promise.resolve(sessions[asked++]));
  return { loop, asked: () => asked };
}

describe("BoardLoop", () => {
  it("asks once for the session all its slots wait for, and keeps it while it is open", async () => {
    const a = fakeSession("b1");
    const { loop, asked } = loopOver([a]);
    const [s1, s2] = await Promise.all([loop.acquire(), loop.acquire()]);
    assert.equal(s1, a);
    assert.equal(s2, a);
    assert.equal(await loop.acquire(), a);
    assert.equal(asked(), 1);
    assert.deepEqual(loop.boards, ["b1"]);
  });

  it("replaces a dropped session, closing it, and lists each board once in the order used", async () => {
    const a = fakeSession("b1");
    const b = fakeSession("b1");
    const c = fakeSession("b2");
    const { loop, asked } = loopOver([a, b, c]);
    await loop.acquire();
    loop.drop(a);
    assert.equal(a.session.isClosed, true);
    assert.equal(loop.session, undefined);
    assert.equal(await loop.acquire(), b);
    b.session.isClosed = true; // lost under it: the next acquire asks again
    assert.equal(await loop.acquire(), c);
    assert.equal(asked(), 3);
    assert.deepEqual(loop.boards, ["b1", "b2"], "a second session on the same board is one board");
  });

  it("dropping a session already replaced leaves the new one in place", async () => {
    const a = fakeSession("b1");
    const b = fakeSession("b2");
    const { loop } = loopOver([a, b]);
    await loop.acquire();
    loop.drop(a);
    await loop.acquire();
    loop.drop(a);
    assert.equal(loop.session, b);
  });

  it("undefined when no session can be had", async () => {
    const { loop } = loopOver([]);
    assert.equal(await loop.acquire(), undefined);
    assert.deepEqual(loop.boards, []);
  });
});

describe("BoardLoop's blame rule", () => {
  it("charges the first unanswered request, whichever slot asks first", () => {
    const s = fakeSession("b1");
    const { loop } = loopOver([]);
    loop.measureSent(s, 4);
    loop.measureSent(s, 5);
    loop.measureSettled(s, 5, false);
    loop.measureSettled(s, 4, false);
    assert.equal(loop.blame(s, 5), false, "queued behind 4: not its doing");
    assert.equal(loop.blame(s, 4), true);
  });

  it("answered requests before the crash are no culprit", () => {
    const s = fakeSession("b1");
    const { loop } = loopOver([]);
    loop.measureSent(s, 1);
    loop.measureSent(s, 2);
    loop.measureSettled(s, 1, true);
    loop.measureSettled(s, 2, false);
    assert.equal(loop.blame(s, 2), true);
    assert.equal(loop.blame(s, 1), false);
  });

  it("the one the board was running is charged even while the answer to its successor is still unknown", () => {
    const s = fakeSession("b1");
    const { loop } = loopOver([]);
    loop.measureSent(s, 7);
    loop.measureSent(s, 8);
    loop.measureSettled(s, 7, false);
    assert.equal(loop.blame(s, 8), false);
    assert.equal(loop.blame(s, 7), true);
  });

  it("a failure before the request went out (an upload) is the culprit only when nothing was outstanding", () => {
    const idle = fakeSession("b1");
    const { loop } = loopOver([]);
    assert.equal(loop.blame(idle, 3), true, "nothing outstanding: its own failure");
    const busy = fakeSession("b1");
    loop.measureSent(busy, 9);
    assert.equal(loop.blame(busy, 10), false, "9 was running: 10 lost its session to it");
    assert.equal(loop.blame(busy, 9), true);
  });

  it("keeps each session's record apart", () => {
    const a = fakeSession("b1");
    const b = fakeSession("b1");
    const { loop } = loopOver([]);
    loop.measureSent(a, 1);
    loop.measureSent(b, 2);
    assert.equal(loop.blame(b, 2), true);
    assert.equal(loop.blame(a, 1), true);
  });

  it("books the board busy while a request is outstanding", () => {
    const s = fakeSession("b1");
    const { loop } = loopOver([]);
    loop.measureSent(s, 1);
    const until = performance.now() + 15;
    while (performance.now() < until);
    loop.measureSettled(s, 1, true);
    assert.ok(loop.clock.busySeconds >= 0.01, `busy ${loop.clock.busySeconds} s`);
  });
});
