"""FarmError: kernelfarm's one exception, with the stable codes of protos/errors.ts.

The same codes travel on the wire (a session's Error frames, the `farm-code`
and `farm-details-bin` trailers of a gRPC status), so a Python host and a
TypeScript host see the same failure the same way. python/tests/test_errors.py
checks this list against the TypeScript one.

`FarmError.from_exception()` is the one place where anything caught becomes a
FarmError (protos/errors.ts `FarmError.from`): gRPC errors keep their farm
code, socket errors are mapped like Node's system errors.
"""
from __future__ import annotations

import errno
import json
import socket
import ssl
from typing import Any, Mapping, Optional

#: code -> what it means (protos/errors.ts CODES, same order).
CODES: dict[str, str] = {
    "INVALID_ARGUMENT": "a request field is malformed",
    "NO_BOARD": "no board serves the key (or label selector)",
    "DEADLINE_EXCEEDED": "no board became free before the request's deadline",
    "UNAVAILABLE": "the tracker (or agent) cannot be reached",
    "NOT_FOUND": "no such file, module, array or session",
    "INVALID_NAME": "an upload name is not a plain file name",
    "TOO_LARGE": "a file, session quota or array exceeds its cap",
    "OUT_OF_MEMORY": "the board has no memory for the array",
    "BAD_BUNDLE": "the module bundle failed validation",
    "TARGET_MISMATCH": "the bundle was built for another target",
    "LOAD_ERROR": "the board could not load the module",
    "UNKNOWN_FUNCTION": "the module has no such function",
    "BAD_ARGUMENTS": "wrong argument count, dtype or shape",
    "COMPILE_ERROR": "the host compiler rejected the source",
    "TOOLCHAIN_MISSING": "a host compiler (nvcc, cc) is not installed",
    "LAUNCH_ERROR": "a launch configuration the device cannot run (block size, shared memory)",
    "DEVICE_ERROR": "the device driver reported an error; its own name for it is in the message",
    "RUNTIME_ERROR": "the kernel failed while running",
    "RUNTIME_CRASH": "the session worker died (segfault, abort, kill)",
    "TIMEOUT": "a call ran past its timeout; its worker was killed",
    "SESSION_TIMEOUT": "the session outlived its session timeout",
    "SESSION_CLOSED": "the session is closed",
    "AGENT_LOST": "the board's agent died or stopped answering",
    "DRAINED": "the board or tracker is shutting down",
    "UNAUTHENTICATED": "no token, or one the tracker does not know (malformed, revoked, expired)",
    "PERMISSION_DENIED": "the caller's token or session ticket does not allow this",
    "NAME_IN_USE": "another live agent is attached under this agent name",
    "PROTOCOL_ERROR": "a peer sent a frame that breaks the protocol",
    "CANCELLED": "the caller gave up",
    "INTERNAL": "a bug in kernelfarm",
}

#: Metadata keys of the trailers that carry a FarmError over gRPC (protos/errors.ts).
CODE_TRAILER = "farm-code"
DETAILS_TRAILER = "farm-details-bin"
#: Most bytes of details' JSON on the wire; larger ones are ignored, as the TypeScript side does.
DETAILS_MAX_BYTES = 2048

#: gRPC status name -> code, for a status without a farm-code trailer (grpc-js's own, a proxy's).
_GRPC_TO_FARM = {
    "UNAVAILABLE": "UNAVAILABLE",
    "DEADLINE_EXCEEDED": "DEADLINE_EXCEEDED",
    "CANCELLED": "CANCELLED",
    "INVALID_ARGUMENT": "INVALID_ARGUMENT",
    "NOT_FOUND": "NOT_FOUND",
    "PERMISSION_DENIED": "PERMISSION_DENIED",
    "UNAUTHENTICATED": "UNAUTHENTICATED",
    "RESOURCE_EXHAUSTED": "TOO_LARGE",
}

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
    what to do, and `details` (facts for code to act on, e.g. `sticky`)."""

    def __init__(self, code: str, message: str, details: Optional[Mapping[str, Any]] = None):
        if code not in CODES:
            # A peer newer than this SDK may send a code we do not know: keep its
            # text, but the type's promise (a known code) holds.
            message = f"{message} (unknown error code {code!r} from a newer peer)"
            code = "INTERNAL"
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    @classmethod
    def from_wire(cls, code: str, message: str, details_json: str = "") -> "FarmError":
        """An Error message (common.proto) as it arrives: details that do not
        parse as a JSON object, or are over DETAILS_MAX_BYTES, are ignored, as
        protos/errors.ts does."""
        return cls(code, message, _decode_details(details_json))

    @classmethod
    def from_exception(cls, err: BaseException, fallback: str = "INTERNAL") -> "FarmError":
        """Anything caught, as a FarmError (the original kept as `__cause__`)."""
        if isinstance(err, FarmError):
            return err
        out = _from_grpc(err) or _from_os_error(err) or cls(fallback, str(err) or type(err).__name__)
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
    return FarmError(_GRPC_TO_FARM.get(name, "INTERNAL"), message)


def _from_os_error(err: BaseException) -> Optional[FarmError]:
    if isinstance(err, (socket.timeout, socket.gaierror, ssl.SSLError)):
        return FarmError("UNAVAILABLE", str(err))
    if isinstance(err, OSError) and err.errno in _ERRNO_TO_FARM:
        return FarmError(_ERRNO_TO_FARM[err.errno], err.strerror or str(err))
    return None
