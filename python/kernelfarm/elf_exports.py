"""What a shared object exports, read from its ELF dynamic symbol table
(`.dynsym`; host-sdk/elf-exports.ts): the names `dlsym` finds, which is how a
CPU board finds a module's functions. compile_cpu checks its `functions`
against it. Read here rather than with `nm`, so that nothing beyond the C
compiler is needed and a cross compiler's output (32 or 64 bits, either byte
order) reads the same.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Optional

_ET_DYN = 3
_SHT_DYNSYM = 11
_STT_NOTYPE = 0
_FUNCTION_TYPES = (2, 10)  # STT_FUNC, STT_GNU_IFUNC
_VISIBLE_BINDS = (1, 2, 10)  # STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE
_VISIBLE = (0, 3)  # STV_DEFAULT, STV_PROTECTED


@dataclass
class ElfExports:
    #: ET_DYN: a shared object. Not one: the flags stopped before linking (-c).
    shared: bool
    #: Defined, visible functions (STT_FUNC, STT_GNU_IFUNC), in the table's order.
    functions: list[str] = field(default_factory=list)
    #: Defined, visible symbols of no type (a label in assembly): dlsym finds them too.
    untyped: list[str] = field(default_factory=list)


def elf_exports(binary: bytes) -> Optional[ElfExports]:
    """The exports of an ELF file; None for bytes that are not ELF (a Mach-O) or whose tables do not read."""
    if len(binary) < 52 or binary[:4] != b"\x7fELF":
        return None
    wide = binary[4] == 2
    order = "<" if binary[5] == 1 else ">"

    def u16(at: int) -> int:
        return int(struct.unpack_from(order + "H", binary, at)[0])

    def u32(at: int) -> int:
        return int(struct.unpack_from(order + "I", binary, at)[0])

    def addr(at: int) -> int:
        return int(struct.unpack_from(order + "Q", binary, at)[0]) if wide else u32(at)

    try:
        result = ElfExports(shared=u16(16) == _ET_DYN)
        shoff, shentsize, shnum = addr(0x28 if wide else 0x20), u16(0x3A if wide else 0x2E), u16(0x3C if wide else 0x30)

        def section(i: int) -> tuple[int, int, int, int, int]:
            at = shoff + i * shentsize
            return (
                u32(at + 4),
                addr(at + (0x18 if wide else 0x10)),
                addr(at + (0x20 if wide else 0x14)),
                u32(at + (0x28 if wide else 0x18)),
                addr(at + (0x38 if wide else 0x24)),
            )

        tables = 0
        for i in range(shnum):
            kind, offset, size, link, entsize = section(i)
            if kind != _SHT_DYNSYM:
                continue
            tables += 1
            _, str_offset, str_size, _, _ = section(link)

            def name(at: int) -> str:
                start = str_offset + at
                end = binary.find(b"\0", start)
                if at >= str_size or end < 0 or end > str_offset + str_size:
                    raise struct.error("a name outside its string table")
                return binary[start:end].decode("latin-1")

            entsize = entsize or (24 if wide else 16)
            at = offset
            while at + entsize <= offset + size:
                info, other = binary[at + (4 if wide else 12)], binary[at + (5 if wide else 13)]
                shndx = u16(at + (6 if wide else 14))
                bind, kind_of, visibility = info >> 4, info & 0xF, other & 3
                if shndx != 0 and bind in _VISIBLE_BINDS and visibility in _VISIBLE:
                    if kind_of in _FUNCTION_TYPES:
                        result.functions.append(name(u32(at)))
                    elif kind_of == _STT_NOTYPE:
                        result.untyped.append(name(u32(at)))
                at += entsize
        # A shared object without the table's section header (stripped of its sections): what it exports is not read here.
        return None if tables == 0 and result.shared else result
    except (struct.error, IndexError):
        return None
