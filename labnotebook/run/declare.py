"""What an experiment declares, once: kernels, cases, inputs, reference, tolerance, baselines.

An experiment lives in ``snippets/<name>/experiment.py`` and binds one module-level
``experiment = Experiment(...)``. Everything else (compiling, allocating, copying, poisoning,
verifying, timing, storing, rendering) is the engine's job and derives from this declaration.
Nothing here touches a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np


def cdiv(a: int, b: int) -> int:
    """Ceiling division: the number of size-``b`` blocks needed to cover ``a`` items."""
    return -(-a // b)


class Case:
    """One problem size: a display name plus the parameters the host code needs (``case.n``)."""

    def __init__(self, name: str, **params: int | float | str):
        self.name = name
        self.params = dict(params)

    def __getattr__(self, key: str):
        try:
            return self.params[key]
        except KeyError:
            raise AttributeError(f"case {self.name!r} has no parameter {key!r}") from None

    def __repr__(self) -> str:
        return f"Case({self.name!r}, {self.params})"


def sizes(*ns: int, param: str = "n") -> list[Case]:
    """Cases named after a 1-D size: powers of two as ``2^k``, others with thousands separators."""
    def name(n: int) -> str:
        k = n.bit_length() - 1
        return f"2^{k}" if n >= 1024 and n == 1 << k else f"{n:,}"
    return [Case(name(n), **{param: n}) for n in ns]


class Unsupported(Exception):
    """Raised by a ``launch`` function for a case the kernel does not handle (say, a size that is
    not a multiple of its tile); the message says what it needs. The case is recorded as skipped."""


@dataclass(frozen=True)
class Launch:
    """Launch geometry and arguments. A ``str`` argument names a buffer (an input or an output);
    anything else (``np.int32(n)``, ``np.float32(x)``) is passed by value, so its C type is explicit."""

    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: tuple[Any, ...]
    shared_bytes: int = 0


@dataclass(frozen=True)
class Tolerance:
    """Element ``i`` passes when ``|out[i] - ref[i]| <= atol + rtol * |ref[i]|``.
    Non-finite reference values must be matched exactly (NaN by NaN, inf by inf of the same sign)."""

    atol: float
    rtol: float


@dataclass(frozen=True)
class Kernel:
    """One rung of a ladder: a ``.cu`` file, the ``extern "C"`` function in it, and how to launch it."""

    source: str
    function: str
    launch: Callable[[Case], Launch]
    # Why this kernel is known to compute wrong answers; the build insists that it fails.
    expected_failure: str | None = None
    nvcc_options: tuple[str, ...] = ()
    # Its own tolerance where its precision differs from the experiment's (fp16 output, say).
    tolerance: Tolerance | None = None
    # Run only at these case names (a slow rung left out of the largest size); None: all.
    cases: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        return self.source.rsplit(".", 1)[0]


@dataclass(frozen=True)
class PythonKernel:
    """A rung written in a Python DSL (Triton, cuTile) instead of CUDA C++.

    ``source`` is a ``.py`` file beside ``experiment.py``; its function ``function(case, inputs,
    outputs)`` receives the inputs and the (poisoned) outputs as torch tensors on the GPU and
    returns a callable that launches the kernel once. The engine verifies and times it like a
    CUDA kernel. It may raise ``Unsupported`` (at preparation or at its first launch) when this
    GPU or toolchain cannot run it; the case is then recorded as skipped, with the reason.
    ``requires`` names Python modules that must import, else every case is skipped.
    """

    source: str
    function: str = "prepare"
    requires: tuple[str, ...] = ("torch",)
    tolerance: Tolerance | None = None
    cases: tuple[str, ...] | None = None
    expected_failure: str | None = None

    @property
    def name(self) -> str:
        return self.source.rsplit(".", 1)[0]


@dataclass(frozen=True)
class PhaseProgram:
    """A whole program, timed phase by phase in fresh processes (see ``phases.py``).

    ``source`` is a ``.py`` file beside ``experiment.py`` with ``main(case, inputs, phase,
    cubins)``: it does everything a standalone program does (context, module, allocation,
    copies, launch, copies back, teardown) with each step inside ``with phase("name"):``, loads
    kernels from ``cubins / "<kernel name>.cubin"``, and returns its outputs for verification.
    """

    source: str
    cases: tuple[str, ...]
    repeats: int = 10


@dataclass(frozen=True)
class Baseline:
    """Something to compare the kernels with, run on the same inputs in the same run.

    ``prepare(case, inputs)`` does any setup (copies to the device, say) and returns a function
    that runs the operation once and returns its outputs (NumPy arrays, or anything with
    ``.cpu().numpy()`` such as torch tensors), which are verified like a kernel's. ``device`` says
    how it is timed: ``"gpu"`` with CUDA events on the default stream, ``"cpu"`` with the host clock. ``requires`` names Python modules
    that must import; when one does not, the baseline is recorded as skipped with the reason.
    """

    name: str
    prepare: Callable[[Case, Mapping[str, np.ndarray]], Callable[[], Mapping[str, Any]]]
    device: str = "gpu"
    requires: tuple[str, ...] = ()
    # Timed only at these cases (all timed cases when None); verified at every case regardless.
    timed_cases: tuple[str, ...] | None = None
    tolerance: Tolerance | None = None


@dataclass
class Experiment:
    """The single declaration of an experiment. ``name`` is filled in from its folder."""

    title: str
    kernels: list[Kernel | PythonKernel]
    cases: list[Case]
    inputs: Callable[[Case, np.random.Generator], dict[str, np.ndarray]]
    reference: Callable[..., dict[str, np.ndarray]]
    outputs: dict[str, type]
    tolerance: Tolerance
    # Sizes that are only verified, never timed: 1, primes, non-multiples of the block.
    edge_cases: list[Case] = field(default_factory=list)
    bytes_moved: Callable[[Case], int] | None = None
    flops: Callable[[Case], int] | None = None
    baselines: list[Baseline] = field(default_factory=list)
    # Time host<->device copies of the inputs and outputs for each case, as their own rows.
    time_transfers: bool = False
    phases: PhaseProgram | None = None
    seed: int = 20261121
    # What every kernel needs: Python modules that must import, and the oldest GPU (major,
    # minor). Where either is missing, every row is recorded as skipped with the reason.
    requires: tuple[str, ...] = ()
    min_compute_capability: tuple[int, int] | None = None
    # The build kills an experiment that runs longer than this (a hung kernel, say).
    time_limit_s: int = 600
    name: str = ""

    def kernel(self, name: str) -> Kernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"{self.name}: no kernel {name!r}; have {[k.name for k in self.kernels]}")
