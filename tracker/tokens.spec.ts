import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FarmError } from "../protos/index.ts";
import { AuditLog } from "./audit.ts";
import { keyAllowed, TokenFile, TokenStore, type Identity } from "./tokens.ts";
import { componentLogger } from "../runtime/index.ts";

const tmp = () => mkdtempSync(join(tmpdir(), "kf-tokens-"));
const code = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    return `${(e as FarmError).code}: ${(e as FarmError).message}`;
  }
  return "no error";
};

describe("keyAllowed", () => {
  it("matches exact keys, '*' and prefixes ending in '*'", () => {
    assert.equal(keyAllowed(["cpu"], "cpu"), true);
    assert.equal(keyAllowed(["cpu"], "cpu2"), false);
    assert.equal(keyAllowed(["*"], "anything"), true);
    assert.equal(keyAllowed(["h100-*"], "h100-lab"), true);
    assert.equal(keyAllowed(["h100-*"], "h200-lab"), false);
    assert.equal(keyAllowed([], "cpu"), false);
  });
});

describe("TokenFile", () => {
  it("creates tokens whose secret is nowhere in the file, with mode 0600", () => {
    const f = new TokenFile(join(tmp(), "t.json"));
    const { token, record } = f.create({ name: "ci", kind: "client", keys: ["cpu"], maxPriority: 3 });
    assert.match(token, /^kf1\.[0-9a-f]{12}\.[A-Za-z0-9_-]{43}$/);
    const text = readFileSync(f.path, "utf8");
    assert.ok(!text.includes(token.split(".")[2]!));
    assert.deepEqual(
      { name: record.name, kind: record.kind, keys: record.keys, maxPriority: record.maxPriority },
      { name: "ci", kind: "client", keys: ["cpu"], maxPriority: 3 },
    );
    assert.ok(!("hash" in record) && !("salt" in record), "the public part has no hash");
  });

  it("refuses bad specs, naming the field", () => {
    const f = new TokenFile(join(tmp(), "t.json"));
    assert.match(
      code(() => f.create({ name: "a b", kind: "client", keys: ["cpu"] })),
      /INVALID_ARGUMENT: token name "a b"/,
    );
    assert.match(
      code(() => f.create({ name: "x", kind: "root" as "client", keys: ["cpu"] })),
      /token kind must be one of agent, client, operator/,
    );
    assert.match(
      code(() => f.create({ name: "x", kind: "client" })),
      /needs the keys it may use/,
    );
    assert.match(
      code(() => f.create({ name: "x", kind: "client", keys: ["a b"] })),
      /key "a b" is not a board key/,
    );
    assert.match(
      code(() => f.create({ name: "x", kind: "client", keys: ["cpu"], expiresAtMs: Date.now() - 1 })),
      /expiry must be in the future/,
    );
    f.create({ name: "x", kind: "operator" });
    assert.match(
      code(() => f.create({ name: "x", kind: "operator" })),
      /a token named "x" exists already/,
    );
  });

  it("refuses a file others may read, or that is not a tokens file", () => {
    const f = new TokenFile(join(tmp(), "t.json"));
    f.create({ name: "x", kind: "operator" });
    chmodSync(f.path, 0o640);
    assert.match(
      code(() => f.read()),
      /PERMISSION_DENIED: tokens file .* has mode 640.*chmod 600/,
    );
    writeFileSync(f.path, "{}", { mode: 0o600 });
    chmodSync(f.path, 0o600);
    assert.match(
      code(() => f.read()),
      /not a kernelfarm tokens file/,
    );
    writeFileSync(f.path, "not json");
    assert.match(
      code(() => f.read()),
      /is not JSON/,
    );
  });
});

describe("TokenStore", () => {
  it("verifies a token and says why it refuses one", () => {
    const path = join(tmp(), "t.json");
    const f = new TokenFile(path);
    const { token } = f.create({ name: "ci", kind: "client", keys: ["cpu"] });
    const lost: string[] = [];
    const store = new TokenStore(
      path,
      (id: Identity, why) => lost.push(`${id.name}: ${why}`),
      () => {},
    );
    try {
      assert.equal(store.verify(token).name, "ci");
      assert.match(
        code(() => store.verify("kf1.zz")),
        /UNAUTHENTICATED: malformed token/,
      );
      assert.match(
        code(() => store.verify(`${token.slice(0, 17)}${"A".repeat(43)}`)),
        /UNAUTHENTICATED: unknown token/,
      );
      assert.match(
        code(() => store.verify(`kf1.${"0".repeat(12)}.${"A".repeat(43)}`)),
        /UNAUTHENTICATED: unknown token/,
      );
      assert.match(
        code(() => store.verify("x".repeat(600))),
        /at most 512/,
      );
      // A token made after the store started is found at its first use, not at the next poll.
      const late = f.create({ name: "late", kind: "client", keys: ["cpu"] }).token;
      assert.equal(store.verify(late).name, "late");
      f.revoke("ci");
      store.refresh();
      assert.match(
        code(() => store.verify(token)),
        /UNAUTHENTICATED: token 'ci' was revoked at/,
      );
      assert.deepEqual(lost, ["ci: token 'ci' was revoked"]);
    } finally {
      store.close();
    }
  });

  it("keeps the last good file when a new one does not parse", () => {
    const path = join(tmp(), "t.json");
    const f = new TokenFile(path);
    const { token } = f.create({ name: "ci", kind: "client", keys: ["cpu"] });
    const errors: string[] = [];
    const store = new TokenStore(
      path,
      () => {},
      (e) => errors.push(e.message),
    );
    try {
      writeFileSync(path, "{ half", { mode: 0o600 });
      store.refresh();
      assert.equal(store.verify(token).name, "ci");
      assert.match(errors[0]!, /is not JSON/);
    } finally {
      store.close();
    }
  });
});

describe("AuditLog", () => {
  it("writes JSON lines and rotates by size, keeping a bounded number of files", () => {
    const dir = tmp();
    const path = join(dir, "audit.jsonl");
    const log = new AuditLog(path, componentLogger("test"), 300, 2);
    for (let i = 0; i < 20; i++) log.record({ event: "grant", who: `client-${i}`, peer: "ipv4:127.0.0.1:1" });
    const current = readFileSync(path, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { who: string; at: string });
    assert.equal(current.at(-1)!.who, "client-19");
    assert.ok(readFileSync(`${path}.1`, "utf8").length > 0);
    assert.ok(readFileSync(`${path}.2`, "utf8").length > 0);
    assert.throws(() => readFileSync(`${path}.3`), /ENOENT/);
    assert.ok(readFileSync(path, "utf8").length <= 300);
  });
});
