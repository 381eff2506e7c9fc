import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_TVM_ALLOW, TvmAdmission, plainAddress } from "./admission.ts";

describe("TVM port admission", () => {
  it("admits loopback by default, IPv4-mapped IPv6 included, and refuses the rest naming the flag", () => {
    const a = new TvmAdmission(DEFAULT_TVM_ALLOW, undefined);
    assert.equal(a.refusesPeer("127.0.0.1"), undefined);
    assert.equal(a.refusesPeer("127.9.9.9"), undefined);
    assert.equal(a.refusesPeer("::1"), undefined);
    assert.equal(a.refusesPeer("::ffff:127.0.0.1"), undefined);
    assert.match(a.refusesPeer("10.0.0.5")!, /^10\.0\.0\.5 is not in the TVM port's networks \(--tvm-allow 127\.0\.0\.0\/8,::1\/128\)/);
    assert.match(a.refusesPeer("::ffff:10.0.0.5")!, /^10\.0\.0\.5 is not/);
    assert.equal(a.beyondLoopback, false);
  });

  it("reads networks and single hosts; refuses what is not one", () => {
    const a = new TvmAdmission(["10.1.0.0/16", "192.168.1.7", "fd00::/8"], undefined);
    assert.equal(a.refusesPeer("10.1.200.3"), undefined);
    assert.ok(a.refusesPeer("10.2.0.1"));
    assert.equal(a.refusesPeer("192.168.1.7"), undefined);
    assert.ok(a.refusesPeer("192.168.1.8"));
    assert.equal(a.refusesPeer("fd12::1"), undefined);
    assert.equal(a.beyondLoopback, true);
    assert.equal(new TvmAdmission(["127.0.0.0/1"], undefined).beyondLoopback, true);
    for (const bad of ["10.0.0.0/33", "10.0.0/8", "fd00::/129", "host.lab/24", "10.0.0.0/", "10.0.0.0/8/1"]) {
      assert.throws(() => new TvmAdmission([bad], undefined), { code: "INVALID_ARGUMENT", message: /--tvm-allow: .* is not a network/ });
    }
    assert.throws(() => new TvmAdmission([], undefined), { code: "INVALID_ARGUMENT" });
  });

  it("limits keys when told to", () => {
    assert.equal(new TvmAdmission(DEFAULT_TVM_ALLOW, undefined).refusesKey("any"), undefined);
    assert.equal(new TvmAdmission(DEFAULT_TVM_ALLOW, []).refusesKey("any"), undefined);
    const a = new TvmAdmission(DEFAULT_TVM_ALLOW, ["rasp", "h100"]);
    assert.equal(a.refusesKey("rasp"), undefined);
    assert.equal(a.refusesKey("cpu"), 'key "cpu" is not served on the TVM port (--tvm-keys rasp,h100)');
  });

  it("writes IPv4-mapped addresses as IPv4", () => {
    assert.equal(plainAddress("::ffff:10.0.0.5"), "10.0.0.5");
    assert.equal(plainAddress("fd00::1"), "fd00::1");
    assert.equal(plainAddress(undefined), "");
  });
});
