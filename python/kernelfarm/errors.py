"""FarmError: kernelfarm's one exception, with the stable codes of protos/errors.ts.

The same codes travel on the wire (a session's Error frames, the `farm-code`
trailer of a gRPC status), so a Python host and a TypeScript host see the same
failure the same way. tests/test_errors.py checks this list against the
TypeScript one.
"""
from __future__ import annotations

import json
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
    "PROTOCOL_ERROR": "a peer sent a frame that breaks the protocol",
    "CANCELLED": "the caller gave up",
    "INTERNAL": "a bug in kernelfarm",
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
        parse as a JSON object are ignored, as protos/errors.ts does."""
        details: dict[str, Any] = {}
        if details_json:
            try:
                parsed = json.loads(details_json)
                if isinstance(parsed, dict):
                    details = parsed
            except ValueError:
                pass
        return cls(code, message, details)
