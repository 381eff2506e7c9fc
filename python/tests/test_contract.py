"""The Python SDK uses what protos/farm/v1/contract.json declares, the same
declaration the TypeScript side is generated from: every code (and no other)
with its gRPC status, the outcomes, lanes, routes, kinds and limits. A code
one language has and the other lacks fails here; a generated file that is
stale fails protos/generate-contract.spec.ts (`npm run gen:contract -- --check`)."""
from __future__ import annotations

import builtins
import json
from typing import Any

import pytest

import kernelfarm
from kernelfarm import _contract, _error_types
from kernelfarm.enums import BOARD_KIND, LANE, ROUTE
from kernelfarm.errors import FarmError
from farm import REPO

CONTRACT: dict[str, Any] = json.loads((REPO / "protos" / "farm" / "v1" / "contract.json").read_text(encoding="utf-8"))
DECLARED = [e["code"] for e in CONTRACT["errorCodes"]]


def test_the_codes_are_the_declared_ones_in_the_declared_order() -> None:
    assert list(kernelfarm.CODES) == DECLARED
    assert [c.value for c in kernelfarm.ErrorCode] == DECLARED
    assert kernelfarm.CODES == {e["code"]: e["doc"] for e in CONTRACT["errorCodes"]}
    assert _contract.GRPC_STATUS == {e["code"]: e["grpc"] for e in CONTRACT["errorCodes"]}
    assert _contract.GRPC_TO_FARM == {k: v for k, v in CONTRACT["grpcStatusCodes"].items() if k != "$comment"}


def test_the_other_sets_and_limits_are_the_declared_ones() -> None:
    assert kernelfarm.MEASURE_OUTCOMES == tuple(o["outcome"] for o in CONTRACT["measureOutcomes"])
    lanes = tuple(lane["lane"] for lane in CONTRACT["lanes"])
    assert _contract.LANES == lanes and kernelfarm.ROUTES == (CONTRACT["autoRoute"]["route"], *lanes)
    # The Route and Lane enums of the protos name the same lanes (protos/enums.ts checks the TypeScript side).
    assert ROUTE.names == kernelfarm.ROUTES and LANE.names == ("", *lanes, "tvm")
    assert _contract.BOARD_KINDS == tuple(k["kind"] for k in CONTRACT["boardKinds"])
    # The BoardKind enum: the kinds agents serve, and the tracker's own for stock TVM servers (numbered before the
    # tvm kind, which came later).
    assert sorted(BOARD_KIND.names) == sorted((*_contract.BOARD_KINDS, "tvm-rpc"))
    assert BOARD_KIND.names == ("cpu", "cuda", "vta-sim", "vta", "tvm-rpc", "tvm")
    for k in CONTRACT["constants"]:
        assert getattr(_contract, k["name"]) == k["value"], k["name"]
    from kernelfarm import channel, credentials, frames, tracker_client

    # The modules that used to keep their own copies take the declared values.
    assert (frames.CHUNK_BYTES, frames.MAX_MESSAGE_BYTES) == (1 << 20, 16 << 20)
    assert channel.SESSION_END_GRACE_MS == 1000 and tracker_client.SESSION_REQUEST_HEADER == "farm-session-request-bin"
    assert (credentials.KEEPALIVE_TIME_MS, credentials.KEEPALIVE_TIMEOUT_MS) == (10_000, 5_000)


def _class_name(entry: dict[str, str]) -> str:
    return entry.get("pythonClass") or "".join(w.capitalize() for w in entry["code"].split("_"))


def test_every_code_has_its_subclass_named_from_the_code() -> None:
    for e in CONTRACT["errorCodes"]:
        name = _class_name(e)
        cls = getattr(kernelfarm, name)
        assert issubclass(cls, FarmError) and cls.CODE == e["code"], name
        assert not hasattr(builtins, name), f"{name} would shadow a builtin: give the code a pythonClass in contract.json"
    assert kernelfarm.NoBoard.__name__ == "NoBoard" and kernelfarm.KernelRuntimeError.CODE == "RUNTIME_ERROR"
    assert sorted(_error_types.__all__) == sorted(_class_name(e) for e in CONTRACT["errorCodes"])


@pytest.mark.parametrize("code", DECLARED)
def test_a_farm_error_is_its_codes_subclass_and_still_says_its_code(code: str) -> None:
    e = FarmError(code, "m", {"k": 1})
    assert type(e) is FarmError._TYPES[code] and isinstance(e, FarmError)
    assert e.code == code and e.code == kernelfarm.ErrorCode(code) and type(e.code) is str
    assert (e.message, e.details, str(e)) == ("m", {"k": 1}, f"[{code}] m")
    assert type(FarmError.from_wire(code, "m")) is type(e)
    assert type(e.with_message("more")) is type(e)


def test_catching_by_kind() -> None:
    with pytest.raises(kernelfarm.NoBoard) as e:
        raise FarmError("NO_BOARD", 'no board serves key "h100"')
    assert e.value.code == "NO_BOARD"
    with pytest.raises(FarmError):
        raise kernelfarm.Timeout("TIMEOUT", "late")
    assert not isinstance(FarmError("TIMEOUT", "late"), kernelfarm.NoBoard)
    # An unknown code (a newer peer's) is INTERNAL, and of its class.
    assert isinstance(FarmError.from_wire("WARP_CORE_BREACH", "it broke"), kernelfarm.Internal)


def test_a_subclass_takes_its_own_code_only() -> None:
    assert type(kernelfarm.NoBoard(kernelfarm.ErrorCode.NO_BOARD, "m")) is kernelfarm.NoBoard
    with pytest.raises(TypeError) as e:
        kernelfarm.NoBoard("TIMEOUT", "m")
    assert str(e.value) == "NoBoard carries NO_BOARD, not 'TIMEOUT': make it with FarmError('TIMEOUT', message)"


def test_an_error_code_formats_as_what_travels() -> None:
    assert f"{kernelfarm.ErrorCode.NO_BOARD}" == "NO_BOARD" == str(kernelfarm.ErrorCode.NO_BOARD)
    assert f"[{kernelfarm.ErrorCode.TIMEOUT:>9}]" == "[  TIMEOUT]"


def test_an_enum_value_outside_the_enum_is_refused_naming_the_choices() -> None:
    assert (ROUTE.to_wire("relay"), ROUTE.from_wire(3, "x"), LANE.from_wire(0, "x")) == (2, "grpc", "")
    with pytest.raises(FarmError) as e:
        ROUTE.from_wire(9, "the tracker's grant", "PROTOCOL_ERROR")
    assert (e.value.code, e.value.message) == (
        "PROTOCOL_ERROR",
        "the tracker's grant: route must be one of auto, direct, relay, grpc, got 9",
    )
    assert (BOARD_KIND.to_wire("vta-sim"), BOARD_KIND.from_wire(5, "x"), BOARD_KIND.from_wire(0, "x")) == (3, "tvm-rpc", "")
    with pytest.raises(FarmError) as e:
        BOARD_KIND.from_wire(42, "the tracker's board a1/c0", "PROTOCOL_ERROR")
    assert (e.value.code, e.value.message) == (
        "PROTOCOL_ERROR",
        "the tracker's board a1/c0: board kind must be one of cpu, cuda, vta-sim, vta, tvm-rpc, tvm, got 42",
    )
