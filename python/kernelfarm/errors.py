"""FarmError: kernelfarm's one exception, with the stable codes both SDKs
generate from protos/farm/v1/contract.json (`CODES`, `ErrorCode`; npm run
gen:contract).

The same codes travel on the wire (a session's Error frames, the `farm-code`
and `farm-details-bin` trailers of a gRPC status), so a Python host and a
TypeScript host see the same failure the same way. Each code has its
subclass (`NO_BOARD`: `NoBoard`, generated in _error_types.py), so a caller
can catch one kind: `except kernelfarm.NoBoard:`; `FarmError(code, message)`
makes the subclass of its code, and `e.code == "NO_BOARD"` still holds.

`FarmError.from_exception()` is the one place where anything caught becomes a
FarmError (protos/errors.ts `FarmError.from`): gRPC errors keep their farm
code, socket errors are mapped like Node's system errors.
"""
from __future__ import annotations

import errno
import json
import socket
import ssl
from typing import Any, ClassVar, Mapping, Optional

from ._contract import CODE_TRAILER, CODES, DETAILS_MAX_BYTES, DETAILS_TRAILER, GRPC_TO_FARM, ErrorCode

#: errno -> code (connect-es's node-error.ts, as protos/errors.ts maps Node's).
_ERRNO_TO_FARM = {
    errno.ECONNREFUSED: "UNAVAILABLE",
    errno.ETIMEDOUT: "UNAVAILABLE",
    errno.ECONNRESET: "UNAVAILABLE",
    errno.ECONNABORTED: "UNAVAILABLE",
    errno.EPIPE: "UNAVAILABLE",
    errno.EHOSTUNREACH: "UNAVAILABLE",
    errno.ENETUNREACH: "UNAVAILABLE",
    errno.ENOENT: "NOT_FOUND",
    errno.ENOSPC: "TOO_LARGE",
}


class FarmError(Exception):
    """Every failure the SDK reports: `code` (one of CODES), a message that says
    what to do, and `details` (facts for code to act on, e.g. `sticky`).

    `FarmError(code, message)` is an instance of the code's subclass (`NoBoard`
    for NO_BOARD); a subclass made directly takes its own code only."""

    #: The code of a generated subclass (_error_types.py); None on FarmError itself.
    CODE: ClassVar[Optional[ErrorCode]] = None
    #: code -> its subclass, filled as _error_types.py defines them.
    _TYPES: ClassVar[dict[str, type["FarmError"]]] = {}

    def __init_subclass__(cls, code: Optional[ErrorCode] = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.CODE = code
            FarmError._TYPES[code.value] = cls

    def __new__(cls, code: str, message: str, details: Optional[Mapping[str, Any]] = None) -> "FarmError":
        known = str(code) if code in CODES else ErrorCode.INTERNAL.value
        if cls is FarmError:
            cls = FarmError._TYPES.get(known, FarmError)
        elif cls.CODE is not None and cls.CODE.value != known:
            raise TypeError(f"{cls.__name__} carries {cls.CODE.value}, not {code!r}: make it with FarmError({code!r}, message)")
        return super().__new__(cls)

    def __init__(self, code: str, message: str, details: Optional[Mapping[str, Any]] = None):
        if code not in CODES:
            # A peer newer than this SDK may send a code we do not know: keep its
            # text, but the type's promise (a known code) holds.
            message = f"{message} (unknown error code {code!r} from a newer peer)"
            code = ErrorCode.INTERNAL.value
        super().__init__(f"[{code}] {message}")
        # A plain str, as it travels: `e.code == "NO_BOARD"` and `e.code == ErrorCode.NO_BOARD` both hold.
        self.code: str = str(code)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    @classmethod
    def from_wire(cls, code: str, message: str, details_json: str = "") -> "FarmError":
        """An Error message (common.proto) as it arrives: details that do not
        parse as a JSON object, or are over DETAILS_MAX_BYTES, are ignored, as
        protos/errors.ts does."""
        return FarmError(code, message, _decode_details(details_json))

    @classmethod
    def from_exception(cls, err: BaseException, fallback: str = "INTERNAL") -> "FarmError":
        """Anything caught, as a FarmError (the original kept as `__cause__`)."""
        if isinstance(err, FarmError):
            return err
        out = _from_grpc(err) or _from_os_error(err) or FarmError(fallback, str(err) or type(err).__name__)
        out.__cause__ = err
        return out

    def with_message(self, message: str) -> "FarmError":
        """The same error (code, details, cause) with a message that says more."""
        out = FarmError(self.code, message, self.details)
        out.__cause__ = self.__cause__ or self
        return out


def _decode_details(details_json: str) -> dict[str, Any]:
    if not details_json or len(details_json.encode()) > DETAILS_MAX_BYTES:
        return {}
    try:
        parsed = json.loads(details_json)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def grpc_farm_code(err: BaseException) -> Optional[str]:
    """The farm-code trailer of a gRPC error, when it carries one."""
    trailers = getattr(err, "trailing_metadata", None)
    if not callable(trailers):
        return None
    for key, value in trailers() or ():
        if key == CODE_TRAILER:
            return value.decode() if isinstance(value, bytes) else value
    return None


def _from_grpc(err: BaseException) -> Optional[FarmError]:
    # grpc.RpcError raised by a call is also a grpc.Call: code(), details(), trailing_metadata().
    code_of = getattr(err, "code", None)
    if not callable(code_of) or not callable(getattr(err, "trailing_metadata", None)):
        return None
    status = code_of()
    message = (err.details() if callable(getattr(err, "details", None)) else None) or str(err)  # type: ignore[attr-defined]
    tagged = grpc_farm_code(err)
    if tagged in CODES:
        details = ""
        for key, value in err.trailing_metadata() or ():  # type: ignore[attr-defined]
            if key == DETAILS_TRAILER:
                details = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        return FarmError.from_wire(tagged, message, details)
    name = getattr(status, "name", "")
    return FarmError(GRPC_TO_FARM.get(name, "INTERNAL"), message)


def _from_os_error(err: BaseException) -> Optional[FarmError]:
    if isinstance(err, (socket.timeout, socket.gaierror, ssl.SSLError)):
        return FarmError("UNAVAILABLE", str(err))
    if isinstance(err, OSError) and err.errno in _ERRNO_TO_FARM:
        return FarmError(_ERRNO_TO_FARM[err.errno], err.strerror or str(err))
    return None


# The subclasses register themselves with FarmError as they are defined, which
# needs FarmError: they come last, and whoever imports FarmError has them.
from . import _error_types  # noqa: E402,F401
