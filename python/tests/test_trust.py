"""TLS and tokens from Python, as the TypeScript SDK sends them: a tracker with
certificates from `kfarm certs init` and a tokens file, an agent with a
direct-lane certificate; every lane carries a session, tokens come from the
argument or $KFARM_TOKEN, the CA from the argument or $KFARM_TLS_CA, and
clients without them are refused with codes that say why."""
from __future__ import annotations

import time

import numpy as np
import pytest

import kernelfarm
from kernelfarm import FarmError
from farm import AgentProcess, TrackerProcess, run_cli, wait_for_free_boards


def token(tokens: str, name: str, kind: str, *extra: str) -> str:
    run = run_cli(["token", "create", "--tokens", tokens, "--name", name, "--kind", kind, *extra])
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


@pytest.fixture(scope="module")
def secure_farm(tmp_path_factory):
    d = tmp_path_factory.mktemp("trust")
    certs = d / "certs"
    run = run_cli(["certs", "init", str(certs)])
    assert run.returncode == 0, run.stderr
    tokens = str(d / "tokens.json")
    agent_token = token(tokens, "py-agent", "agent", "--keys", "secure")
    client_token = token(tokens, "py-client", "client", "--keys", "secure")
    other_token = token(tokens, "py-other", "client", "--keys", "elsewhere")
    tracker = TrackerProcess(["--tls-cert", str(certs / "server.crt"), "--tls-key", str(certs / "server.key"), "--tokens", tokens])
    agent = None
    try:
        assert tracker.tls
        agent = AgentProcess(
            tracker.address,
            ["cpu:key=secure,name=s0"],
            [
                "--tls-ca",
                str(certs / "ca.crt"),
                "--token",
                agent_token,
                "--data-tls-cert",
                str(certs / "server.crt"),
                "--data-tls-key",
                str(certs / "server.key"),
            ],
        )
        yield {"address": tracker.address, "ca": str(certs / "ca.crt"), "client": client_token, "other": other_token}
    finally:
        if agent:
            agent.stop()
        tracker.stop()


def test_every_lane_over_tls_with_a_token(secure_farm, vadd_module):
    with kernelfarm.connect_tracker(secure_farm["address"], token=secure_farm["client"], tls_ca=secure_farm["ca"]) as client:
        wait_for_free_boards(client, 1, "secure")
        payload = bytes(range(256)) * (3 * 4096 + 1)
        for route in ("auto", "direct", "relay", "grpc"):
            with client.request("secure", route=route) as s:
                assert s.lane == ("direct" if route == "auto" else route)
                s.upload(payload, "p.bin")
                assert s.download("p.bin") == payload, f"{route}: the bytes came back intact"
                s.upload(vadd_module)
                vadd = s.load_module(vadd_module.name)["vadd"]
                a, c = s.array(np.arange(5, dtype=np.float32)), s.empty(5, "float32")
                vadd(a, a, c, 5)
                assert c.numpy().tolist() == [0, 2, 4, 6, 8]
            wait_for_free_boards(client, 1, "secure")


def test_the_token_and_ca_come_from_the_environment(secure_farm, monkeypatch):
    monkeypatch.setenv("KFARM_TOKEN", secure_farm["client"])
    monkeypatch.setenv("KFARM_TLS_CA", secure_farm["ca"])
    with kernelfarm.connect_tracker(secure_farm["address"]) as client:
        wait_for_free_boards(client, 1, "secure")
        with client.request("secure", route="relay") as s:
            assert s.listdir() == []


def test_clients_without_the_right_credentials_are_refused(secure_farm):
    address, ca = secure_farm["address"], secure_farm["ca"]
    with pytest.raises(FarmError) as e:
        kernelfarm.connect_tracker(address, connect_timeout=1)
    assert e.value.code == "UNAVAILABLE"
    assert e.value.message == f"{address} speaks TLS and this client spoke plaintext: pass tls_ca (the farm's ca.crt) to connect"
    with kernelfarm.connect_tracker(address, tls_ca=ca) as anonymous:
        with pytest.raises(FarmError) as e:
            anonymous.summary()
        assert e.value.code == "UNAUTHENTICATED"
        with pytest.raises(FarmError) as e:
            anonymous.request("secure")
        assert e.value.code == "UNAUTHENTICATED"
    with kernelfarm.connect_tracker(address, tls_ca=ca, token=secure_farm["other"]) as other:
        with pytest.raises(FarmError) as e:
            other.request("secure")
        assert e.value.code == "PERMISSION_DENIED" and "secure" in e.value.message
    with kernelfarm.connect_tracker(address, tls_ca=ca, token="kf_" + "0" * 40) as unknown:
        with pytest.raises(FarmError) as e:
            unknown.summary()
        assert e.value.code == "UNAUTHENTICATED"
    # Refused before anything is sent.
    with pytest.raises(FarmError) as e:
        kernelfarm.connect_tracker(address, tls_ca=ca, token="two words")
    assert e.value.code == "UNAUTHENTICATED" and "spaces or control characters" in e.value.message
    with pytest.raises(FarmError) as e:
        kernelfarm.connect_tracker(address, tls_ca="/nonexistent/ca.crt")
    assert e.value.code == "INVALID_ARGUMENT" and e.value.message.startswith("tls_ca /nonexistent/ca.crt: cannot be read")
    with pytest.raises(FarmError) as e:
        kernelfarm.connect_tracker(address, tls_ca=ca, tls_cert=ca)
    assert e.value.message == "connect_tracker: tls_cert and tls_key go together (a client certificate and its key), got only tls_cert"


def test_measure_stops_at_once_on_a_refusal_no_wait_heals(secure_farm, vadd_module):
    """UNAUTHENTICATED and PERMISSION_DENIED are not outages: measure() raises them at once instead of waiting infra_deadline."""
    address, ca = secure_farm["address"], secure_farm["ca"]
    candidate = kernelfarm.Candidate(vadd_module, "nop", [], id="nop")
    for token, code in ((None, "UNAUTHENTICATED"), (secure_farm["other"], "PERMISSION_DENIED")):
        with kernelfarm.connect_tracker(address, tls_ca=ca, token=token) as client:
            t0 = time.monotonic()
            with pytest.raises(FarmError) as e:
                kernelfarm.measure(client, [candidate], key="secure", deadline=30, infra_deadline=600, progress=False)
            assert e.value.code == code, e.value
            assert time.monotonic() - t0 < 10, "refused at once, not waited out"
