"""Every failure is a FarmError with a stable code: the tracker's refusals keep
their farm code (the `farm-code`/`farm-details-bin` trailers), transport
failures become UNAVAILABLE naming the address, socket and file errors are
mapped as the TypeScript side maps Node's."""
from __future__ import annotations

import signal
import socket
import threading
import time

import pytest

import kernelfarm
from kernelfarm import FarmError
from farm import AgentProcess, TrackerProcess, wait_for, wait_for_free_boards


def test_a_code_from_a_newer_peer_becomes_internal_and_keeps_its_text():
    e = FarmError("WARP_CORE_BREACH", "it broke")
    assert e.code == "INTERNAL" and "WARP_CORE_BREACH" in e.message and "it broke" in e.message


def test_wire_details_are_kept_only_when_they_are_a_json_object_of_at_most_2048_bytes():
    assert FarmError.from_wire("DEVICE_ERROR", "m", '{"sticky":true}').details == {"sticky": True}
    for bad in ("[1,2]", "not json", '"text"', "{" + '"k":' + '"' + "x" * 3000 + '"}'):
        assert FarmError.from_wire("DEVICE_ERROR", "m", bad).details == {}


def test_socket_and_file_errors_are_mapped():
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(OSError) as refused:
        socket.create_connection(("127.0.0.1", port), timeout=2)
    e = FarmError.from_exception(refused.value)
    assert e.code == "UNAVAILABLE" and e.__cause__ is refused.value
    with pytest.raises(OSError) as missing:
        open("/nonexistent/kernelfarm")
    assert FarmError.from_exception(missing.value).code == "NOT_FOUND"
    assert FarmError.from_exception(ValueError("odd")).code == "INTERNAL"
    assert FarmError.from_exception(ValueError("odd"), "BAD_ARGUMENTS").code == "BAD_ARGUMENTS"


def test_the_trackers_refusal_keeps_its_farm_code(tracker):
    with pytest.raises(FarmError) as e:
        tracker.request("no-such-key")
    assert e.value.code == "NO_BOARD" and "no-such-key" in e.value.message
    with pytest.raises(FarmError) as e:
        tracker.request("cpu", labels={"gpu": "h100"})
    assert e.value.code == "NO_BOARD"


def test_a_tracker_that_is_not_there():
    free = socket.create_server(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    with pytest.raises(FarmError) as e:
        kernelfarm.connect_tracker(f"127.0.0.1:{port}", connect_timeout=0.5)
    assert e.value.code == "UNAVAILABLE"
    assert e.value.message == f"cannot reach the tracker at 127.0.0.1:{port} within 500 ms; is `kfarm tracker` running there?"
    for bad in ("localhost", "host:0", ":9190", "host:port", "host:70000"):
        with pytest.raises(FarmError) as e:
            kernelfarm.connect_tracker(bad)
        assert e.value.code == "INVALID_ARGUMENT" and e.value.message == f"address must be HOST:PORT, got {bad!r}"


def test_the_trackers_http_and_tvm_ports_are_named_with_the_port_to_use():
    t = TrackerProcess(["--metrics-port", "0", "--tvm-port", "0"])
    try:
        http = t.wait_for_line(r"http on http://(\S+?)/", "the tracker's HTTP line").group(1)
        tvm = t.wait_for_line(r"tvm port (\S+) ", "the tracker's TVM line").group(1)
        cases = [
            (http, "answered in HTTP/1.1, not gRPC: it is an HTTP port (the tracker's --metrics-port"),
            (tvm, "answered with TVM's tracker magic (0x2f271), not gRPC: it is a TVM tracker port (the tracker's --tvm-port"),
        ]
        for address, what in cases:
            started = time.monotonic()
            with pytest.raises(FarmError) as e:
                kernelfarm.connect_tracker(address, connect_timeout=20)
            took = time.monotonic() - started
            assert e.value.code == "UNAVAILABLE"
            assert e.value.message.startswith(f"{address} {what}"), e.value.message
            use = 'connect to the tracker\'s gRPC port instead: the one `kfarm tracker` prints as "listening on"'
            assert e.value.message.endswith(f"{use} (its --port, 9190 unless set)")
            assert took < 5, f"told after {took:.1f} s: another protocol is known at the first attempt, not at the 20 s timeout"
        kernelfarm.connect_tracker(t.address).close()
    finally:
        t.stop()


def test_a_tracker_that_went_away_is_named():
    t = TrackerProcess()
    client = kernelfarm.connect_tracker(t.address)
    try:
        client.summary()
        t.stop()
        with pytest.raises(FarmError) as e:
            client.summary()
        assert e.value.code == "UNAVAILABLE" and e.value.message.startswith(f"cannot reach the tracker at {t.address}: ")
        with pytest.raises(FarmError) as e:
            client.request("cpu", deadline=1)
        assert e.value.code == "UNAVAILABLE" and e.value.message.startswith(f"cannot reach the tracker at {t.address}: ")
    finally:
        client.close()
        t.stop()


def test_a_request_with_a_deadline_waits_for_its_key_to_attach():
    t = TrackerProcess()
    client = kernelfarm.connect_tracker(t.address)
    agent = None
    try:
        # Without a deadline of its own: NO_BOARD at once, saying how to wait.
        with pytest.raises(FarmError) as e:
            client.request("late")
        assert e.value.code == "NO_BOARD"
        assert (
            'to wait for a board of "late" to attach, give it one' in e.value.message
            and "request(key, deadline=SECONDS)" in e.value.message
        )
        got: list[object] = []

        def waiting() -> None:
            try:
                got.append(client.request("late", deadline=20))
            except BaseException as err:  # noqa: BLE001 - the test reads it
                got.append(err)

        th = threading.Thread(target=waiting)
        th.start()
        wait_for("the request to queue", lambda: any(q.key == "late" and q.pending == 1 for q in client.summary().queues))
        agent = AgentProcess(t.address, ["cpu:key=late,name=l0"], ["--name", "late"])
        th.join(timeout=30)
        assert got and isinstance(got[0], kernelfarm.Session), got
        assert got[0].board.id == "late/l0"
        got[0].close()
    finally:
        if agent:
            agent.stop()
        client.close()
        t.stop()


def test_a_tracker_killed_under_a_queued_request_and_a_session():
    t = TrackerProcess()
    client = kernelfarm.connect_tracker(t.address)
    agent = AgentProcess(t.address, ["cpu:key=only"])
    try:
        wait_for_free_boards(client, 1, "only")
        held = client.request("only")
        outcome: list[BaseException] = []

        def queued() -> None:
            try:
                client.request("only", deadline=30)
            except BaseException as err:  # noqa: BLE001 - the test reads it
                outcome.append(err)

        th = threading.Thread(target=queued)
        th.start()
        wait_for("the request to queue", lambda: any(q.key == "only" and q.pending == 1 for q in client.summary().queues))
        t.stop(signal.SIGKILL)
        th.join(timeout=30)
        assert outcome and isinstance(outcome[0], FarmError), outcome
        assert outcome[0].code == "UNAVAILABLE"
        assert outcome[0].message.startswith(f'the tracker at {t.address} went away while this request for key "only" waited in its queue')
        # The held session's lease lived in the tracker: the session ends at once, saying so.
        wait_for("the held session to end", lambda: held.is_closed)
        assert held.closed_reason.code == "UNAVAILABLE"
        assert held.closed_reason.message.startswith(f"the tracker at {t.address} went away")
        held.close()
    finally:
        agent.stop()
        client.close()
        t.stop()
