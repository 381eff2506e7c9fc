"""What measure() takes: a Candidate and its arguments (host-sdk/measure/types.ts,
docs/measure.md). Kept apart from measure.py so that the candidate digest
(candidate_digest.py) reads the same types without importing the batch."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from numpy.typing import NDArray

from .seeded import RandomFill


@dataclasses.dataclass(frozen=True)
class Input:
    """An input sent from the host (its shape is the array's)."""

    array: NDArray[Any]


@dataclasses.dataclass(frozen=True)
class RandomInput:
    """An input generated on the board from a seed (kernelfarm.random_array): no bytes cross the network."""

    shape: Sequence[int]
    dtype: str
    seed: int
    low: Optional[float] = None
    high: Optional[float] = None
    integers: bool = False

    @property
    def fill(self) -> RandomFill:
        return RandomFill(self.seed, self.low, self.high, self.integers)


@dataclasses.dataclass(frozen=True)
class Output:
    """An output, checked when it has an expected value (`expect`, or the candidate's reference function)."""

    shape: Sequence[int]
    dtype: str
    expect: Optional[NDArray[Any]] = None


Arg = Union[Input, RandomInput, Output, int, float]
#: The expected outputs, one per Output argument in order, from the candidate's inputs (host data as given,
#: seeded inputs generated on the host as the board does). Called once per function and inputs in a batch.
ReferenceFn = Callable[[list], Sequence[NDArray[Any]]]


@dataclasses.dataclass
class Candidate:
    """One kernel to measure. `module`: a compiled module (`.bytes`, `.name`,
    optionally `.digest`), or a function that builds one (run on the host in
    parallel, at most one per core). `atol`/`rtol`: |got − want| ≤ atol + rtol·|want|.
    `launch`: {"grid": …, "block": …, "shared_mem_bytes": …} for CUDA kernels.

    `definition`: JSON data that defines the module — its source and compile
    options — for the results file's digest (docs/measure.md, "Resuming a
    batch"): with it, a resumed batch knows whether a line is this
    candidate's without building the module; without it, a module given as a
    function is built on resume to learn its digest."""

    module: Any
    function: str
    args: Sequence[Arg]
    id: Optional[str] = None
    reference: Optional[ReferenceFn] = None
    atol: float = 0.0
    rtol: float = 0.0
    launch: Optional[Mapping[str, Any]] = None
    definition: Optional[Any] = None


def is_built(module: Any) -> bool:
    """Whether `module` is a built module (it has `.bytes`) rather than a function that builds one."""
    return hasattr(module, "bytes") or not callable(module)
