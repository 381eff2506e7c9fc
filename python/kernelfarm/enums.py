"""The closed sets that travel as protobuf enums, under the lowercase names users see.

On the wire a value is the enum's number (ROUTE_DIRECT = 1); everywhere a user looks
(`summary()`, `Session.lane`, errors, logs) it is "direct". One rule maps the two, for
every enum, as protos/enums.ts does for TypeScript: the value's name without the enum's
prefix, lowercased, `_` as `-`. A 0 value named `<PREFIX>UNSPECIFIED` is "", unset, as the string
field it replaced was, and not one of the choices an error names; a codec's `empty` value is "" too,
and one of the choices (LANE_NONE: no lane yet).
"""
from __future__ import annotations

import re
from typing import Optional

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from .errors import FarmError
from .protos import common_pb2


class EnumCodec:
    """One enum's names, both ways. `what` in the methods says whose value it is, for the error."""

    def __init__(self, enum: EnumTypeWrapper, label: str, empty: Optional[str] = None) -> None:
        descriptor = enum.DESCRIPTOR
        prefix = re.sub(r"([a-z0-9])(?=[A-Z])", r"\1_", descriptor.name).upper() + "_"
        self.type = descriptor.full_name
        self.label = label
        self._wire: dict[str, int] = {}
        self._name: dict[int, str] = {}
        names: list[str] = []
        for value in descriptor.values:
            if not value.name.startswith(prefix):
                raise ValueError(f"{self.type}: {value.name} does not start with {prefix}")
            unset = value.name == f"{prefix}UNSPECIFIED"
            name = "" if unset or value.name == empty else value.name[len(prefix) :].lower().replace("_", "-")
            if not unset:
                names.append(name)
            self._wire[name] = value.number
            self._name[value.number] = name
        if empty is not None and "" not in names:
            raise ValueError(f"{self.type} has no value {empty}")
        #: The choices, as users see them, in the enum's order ("" only where it means something: `empty`).
        self.names: tuple[str, ...] = tuple(names)

    def to_wire(self, name: str) -> int:
        """ "direct" -> ROUTE_DIRECT's number, for a message being built."""
        if name not in self._wire:
            self._refuse(name, "a message being built", "INTERNAL")
        return self._wire[name]

    def from_wire(self, value: int, what: str, code: str = "INVALID_ARGUMENT") -> str:
        """A decoded message's number -> "direct"; an unknown or unset value is refused with `code`."""
        if value not in self._name:
            self._refuse(value, what, code)
        return self._name[value]

    def parse(self, value: Optional[str], what: str) -> str:
        """A name as a user gave it ("direct") -> the same; anything else is refused naming the choices."""
        if value is None or value not in self.names:
            self._refuse(value, what, "INVALID_ARGUMENT")
        return str(value)

    def _refuse(self, value: object, what: str, code: str) -> None:
        choices = ", ".join('"" (none)' if n == "" else n for n in self.names)
        raise FarmError(code, f"{what}: {self.label} must be one of {choices}, got {value!r}")


#: How a host asks its session's frames to travel.
ROUTE = EnumCodec(common_pb2.Route, "route")
#: How a session's frames do travel; "" until its lane opens; "tvm": a TVM server's board.
LANE = EnumCodec(common_pb2.Lane, "lane", empty="LANE_NONE")
#: A board's health; "" where unset.
BOARD_HEALTH = EnumCodec(common_pb2.BoardHealth, "board health")
#: Where a board stands with the tracker; "absent": not attached (a remembered board).
BOARD_STATE = EnumCodec(common_pb2.BoardState, "board state")
#: What a board is: one of the kinds agents serve (_contract.BOARD_KINDS), or "tvm-rpc", a stock TVM server on
#: the tracker's TVM port; "" where unset.
BOARD_KIND = EnumCodec(common_pb2.BoardKind, "board kind")
