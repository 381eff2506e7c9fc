"""What `ptxas -v` (nvcc `-Xptxas -v`) prints on stderr, read per entry
function and architecture (host-sdk/cuda/ptxas-info.ts): registers,
barriers, stack, spills, static shared memory and constant memory.

The report goes into the bundle's meta (as JSON, camelCase, in the
TypeScript's field order), so both SDKs must read the same text the same
way. The lines look like this (nvcc 13.0):

  ptxas info    : 0 bytes gmem, 256 bytes cmem[3]
  ptxas info    : Compiling entry function 'saxpy' for 'sm_90'
  ptxas info    : Function properties for saxpy
      0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  ptxas info    : Used 10 registers, used 0 barriers, 4096 bytes smem, 360 bytes cmem[0]
  ptxas info    : Compile time = 1.338 ms
  ptxas info    : Function properties for _Z3bigi          (a non-entry function)
      0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

Items of the "Used" line are optional and their order varies across
versions, so each is matched on its own; unknown items are ignored.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, Mapping, Optional

_INFO = re.compile(r"ptxas info\s*:\s*(.*)")
_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_STACK = re.compile(r"([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads")
_LINE_BREAK = re.compile(r"\r?\n")
# One item of the "Used" line -> the field it sets; cmem banks add up.
_USED_ITEMS = (
    (re.compile(r"Used ([0-9]+) registers", re.IGNORECASE), "registers"),
    (re.compile(r"used ([0-9]+) barriers?", re.IGNORECASE), "barriers"),
    (re.compile(r"([0-9]+) bytes smem"), "shared_mem_bytes"),
    (re.compile(r"([0-9]+) bytes cmem\[[0-9]+\]"), "const_mem_bytes"),
    (re.compile(r"([0-9]+) bytes cumulative stack size"), "cumulative_stack_bytes"),
)


@dataclass
class KernelResources:
    """What ptxas reported for one kernel on one architecture."""

    #: Registers per thread.
    registers: int = 0
    #: Named barriers used (`__syncthreads` counts one); 0 when not reported.
    barriers: int = 0
    #: Stack frame of the kernel itself, bytes per thread.
    stack_frame_bytes: int = 0
    #: Stack including the callees' frames ("cumulative stack size"), bytes per thread; 0 when not reported.
    cumulative_stack_bytes: int = 0
    #: Register spills to local memory, bytes per thread.
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    #: Static shared memory (`__shared__` arrays), bytes per block; dynamic shared memory is the launch's.
    shared_mem_bytes: int = 0
    #: Constant memory the kernel's own line lists (sum of its cmem[N] banks); 0 when none is listed.
    const_mem_bytes: int = 0

    def to_json(self) -> dict[str, int]:
        """The TypeScript KernelResources: camelCase, in its field order (the bundle's meta.ptxas holds this)."""
        return {_camel(f.name): getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, value: Any) -> Optional["KernelResources"]:
        """The resources of a meta.ptxas entry, or None when it is not one (every field a number)."""
        if not isinstance(value, Mapping):
            return None
        found = {}
        for f in fields(cls):
            v = value.get(_camel(f.name))
            if not isinstance(v, int) or isinstance(v, bool):
                return None
            found[f.name] = v
        return cls(**found)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


#: Per architecture ("sm_90"), per entry function name as ptxas spells it (mangled when not extern "C").
PtxasReport = dict[str, dict[str, KernelResources]]


def parse_ptxas_info(text: str) -> PtxasReport:
    """Parses `ptxas -v` output; lines that are not ptxas info (diagnostics, warnings) are skipped."""
    report: PtxasReport = {}
    # The entry whose block we are in, and whether the last "Function properties" line named it.
    entry: Optional[tuple[str, KernelResources]] = None
    properties_of_entry = False
    for raw in _LINE_BREAK.split(text):
        line = raw.strip()
        info = _INFO.fullmatch(line)
        if not info:
            stack = _STACK.fullmatch(line)
            if stack and entry and properties_of_entry:
                r = entry[1]
                r.stack_frame_bytes, r.spill_store_bytes, r.spill_load_bytes = (int(g) for g in stack.groups())
            continue
        body = info.group(1).strip()
        start = _ENTRY.fullmatch(body)
        if start:
            name, arch = start.groups()
            entry = (name, KernelResources())
            report.setdefault(arch, {})[name] = entry[1]
            properties_of_entry = False
            continue
        props = _PROPERTIES.fullmatch(body)
        if props:
            properties_of_entry = entry is not None and props.group(1) == entry[0]
            continue
        if body.startswith("Used ") and entry:
            _read_used(body, entry[1])
            properties_of_entry = False
    return report


def _read_used(body: str, r: KernelResources) -> None:
    for item in (s.strip() for s in body.split(",")):
        for pattern, name in _USED_ITEMS:
            m = pattern.fullmatch(item)
            if m:
                n = int(m.group(1))
                setattr(r, name, r.const_mem_bytes + n if name == "const_mem_bytes" else n)
                break
