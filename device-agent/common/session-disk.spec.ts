/**
 * The session's tmpfs against the real kernel (root only: mount(2) needs
 * it; skips saying so otherwise): bounded at the quota, owned by the
 * worker's uid, ENOSPC past it, detached even while a file in it is open.
 */
import assert from "node:assert/strict";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statfsSync, statSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { FarmError } from "../../protos/index.ts";
import { quotaError, SessionDisk } from "./session-disk.ts";

const NOT_ROOT = SessionDisk.supported() ? false : "needs root on Linux: mount(2) of a tmpfs";
const QUOTA = 1 << 20;

/** Whether `dir` is a mount point (in /proc/self/mountinfo). */
const mounted = (dir: string) =>
  readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .some((l) => l.split(" ")[4] === dir);

describe("session disk", () => {
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), "kfarm-session-disk-"));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("rejects a quota that is not a positive whole number of bytes", () => {
    assert.throws(() => new SessionDisk(0), { code: "INVALID_ARGUMENT", message: /--worker-disk/ });
    assert.throws(() => new SessionDisk(1.5), { code: "INVALID_ARGUMENT", message: /--worker-disk/ });
  });

  it("quotaError: TOO_LARGE naming the quota", () => {
    const e = quotaError(4096);
    assert.ok(e instanceof FarmError);
    assert.equal(e.code, "TOO_LARGE");
    assert.match(e.message, /the session's files reached its disk quota of 4096 bytes/);
  });

  it(
    "mounts a tmpfs of the quota owned by the uid, 0700; writes past it fail with ENOSPC and full() says so; detaches while a file is open",
    { skip: NOT_ROOT },
    () => {
      const disk = new SessionDisk(QUOTA);
      const d = mkdtempSync(join(root, "s-"));
      disk.mount(d, 61001);
      try {
        assert.ok(mounted(d));
        const st = statSync(d);
        assert.equal(st.uid, 61001);
        assert.equal(st.gid, 61001);
        assert.equal(st.mode & 0o777, 0o700);
        const fs = statfsSync(d);
        assert.equal(fs.blocks * fs.bsize, QUOTA);
        assert.equal(disk.full(d), false);
        const fd = openSync(join(d, "f"), "w");
        const buf = Buffer.alloc(64 * 1024);
        let written = 0;
        assert.throws(
          () => {
            for (;;) written += writeSync(fd, buf);
          },
          (e: NodeJS.ErrnoException) => e.code === "ENOSPC",
        );
        assert.ok(written <= QUOTA, `${written} bytes written`);
        assert.equal(disk.full(d), true);
        // Still open: a lazy detach does not wait for it.
        disk.unmount(d);
        assert.ok(!mounted(d));
        closeSync(fd);
      } finally {
        disk.unmount(d);
      }
      // Twice, or on a plain folder: nothing to do, no error.
      disk.unmount(d);
      assert.equal(disk.full(join(root, "gone")), false);
    },
  );

  it("unmountSoon: detaches on libuv's pool, with a file still open; a folder no tmpfs is on resolves too", { skip: NOT_ROOT }, async () => {
    const disk = new SessionDisk(QUOTA);
    const d = mkdtempSync(join(root, "soon-"));
    disk.mount(d, 61001);
    const fd = openSync(join(d, "f"), "w");
    try {
      await disk.unmountSoon(d);
      assert.ok(!mounted(d));
      // What the async call's failure (EINVAL: nothing mounted there) comes to once tried again on this thread.
      await disk.unmountSoon(d);
      await assert.rejects(disk.unmountSoon(join(root, "no such folder", "x".repeat(5000))), { code: "INTERNAL", message: /cannot unmount the tmpfs/ });
    } finally {
      closeSync(fd);
      disk.unmount(d);
    }
  });

  it("detachWhere: detaches the session tmpfs it picks (a mount point with a space too), and only those", { skip: NOT_ROOT }, () => {
    const disk = new SessionDisk(QUOTA);
    const stale = join(root, "kfarm-agent-1 dead", "s1");
    const live = join(root, `kfarm-agent-${process.pid}`, "s1");
    for (const d of [stale, live]) {
      mkdirSync(d, { recursive: true });
      disk.mount(d, 61001);
    }
    const then: string[] = [];
    try {
      assert.equal(
        SessionDisk.detachWhere(
          (p) => p === stale,
          (p) => then.push(p),
        ),
        1,
      );
      assert.deepEqual(then, [stale]);
      assert.ok(!mounted(stale.replace(/ /g, "\\040")));
      assert.ok(mounted(live));
    } finally {
      disk.unmount(stale);
      disk.unmount(live);
    }
  });
});
