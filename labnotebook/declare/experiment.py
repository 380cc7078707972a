"""What an experiment declares, once: kernels, cases, inputs, reference, tolerance, baselines.

An experiment lives in ``snippets/<name>/experiment.py`` and binds one module-level
``experiment = Experiment(...)``. Everything else (compiling, allocating, copying, poisoning,
verifying, timing, storing, rendering) is the engine's job and derives from this declaration.
Nothing here touches a GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Mapping

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


def size(case: Case) -> int:
    """How large a case is, for choosing the smaller: the product of its numeric parameters."""
    return math.prod(v for v in case.params.values() if isinstance(v, (int, float)) and not isinstance(v, bool))


class Unsupported(Exception):
    """Raised by a ``launch`` or ``prepare`` function for a case the kernel does not handle (say,
    a size that is not a multiple of its tile, or past its 32-bit indices); the message says what
    it needs. The case is recorded as skipped, with that reason."""


class Unavailable(Unsupported):
    """Raised where this machine cannot run the kernel at all (a toolchain that is missing or
    fails, a GPU feature it lacks), rather than this one case. Recorded as skipped and marked
    unavailable: the GPU tests skip it instead of failing."""


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


# One tolerance for every case, or a function of the case where the precision differs between
# cases (the fp16 and bf16 cases of one experiment, say).
Tolerances = Tolerance | Callable[[Case], Tolerance]


def tolerance_at(tolerance: Tolerances, case: Case) -> Tolerance:
    found = tolerance(case) if callable(tolerance) else tolerance
    if not isinstance(found, Tolerance):
        raise TypeError(f"a tolerance must be a Tolerance, or a function of the case returning one; got {found!r}")
    return found


@dataclass(frozen=True)
class Kernel:
    """One rung of a ladder: a ``.cu`` file, the ``extern "C"`` function in it, and how to launch it.

    ``launch(case)`` returns the ``Launch`` for a case, or raises ``Unsupported`` (with the
    reason) for a case the kernel does not handle; the row is then recorded as skipped. Anything
    else it raises is recorded as this kernel's failure at that case, and the rest still runs.
    """

    source: str
    function: str
    launch: Callable[[Case], Launch]
    # Why this kernel is known to compute wrong answers; the build insists that it fails.
    expected_failure: str | None = None
    nvcc_options: tuple[str, ...] = ()
    # Its own tolerance where its precision differs from the experiment's (fp16 output, say).
    tolerance: Tolerances | None = None
    # Timed only at these case names (a slow rung left out of the largest sizes); None: every
    # timed case. Edge and large cases run regardless, unless ``launch`` says Unsupported.
    timed_cases: tuple[str, ...] | None = None
    # Its own code paths at a case, beside the experiment's ``paths`` (the heights of its tiles,
    # say): the sanitizer tools run it at the edge cases that take every path of either kind.
    paths: Callable[[Case], Iterable[str]] | None = None

    @property
    def name(self) -> str:
        return self.source.rsplit(".", 1)[0]

    def takes(self, case: Case) -> bool:
        """Whether ``launch()`` takes ``case`` (on the host alone: no input, no GPU). Anything
        but ``Unsupported`` it raises counts as taken: the launch's own failure to report."""
        try:
            self.launch(case)
        except Unsupported:
            return False
        except Exception:
            return True
        return True


# Prepares one run of a Python-DSL kernel or a baseline: ``prepare(case, inputs, outputs)``
# gets the case's inputs and its (poisoned) output buffers as arrays of the runnable's library
# and returns a callable that runs the operation once, writing the outputs in place. Where a
# library has no in-place form, the callable may instead return ``{output: array}``, which is
# then verified as it is. ``prepare`` may raise ``Unsupported`` to skip a case.
Prepare = Callable[[Case, Mapping[str, Any], Mapping[str, Any]], Callable[[], Mapping[str, Any] | None]]


@dataclass(frozen=True)
class PythonKernel:
    """A rung written in a Python DSL (Triton, cuTile) instead of CUDA C++.

    ``source`` is a ``.py`` file beside ``experiment.py`` whose function ``function`` is a
    ``Prepare`` on torch tensors on the GPU. The engine verifies and times it like a CUDA
    kernel. ``requires`` names Python modules that must import, else every case is skipped;
    it may also raise ``Unsupported`` (at preparation or its first launch) when this GPU or
    toolchain cannot run it.
    """

    source: str
    function: str = "prepare"
    requires: tuple[str, ...] = ("torch",)
    tolerance: Tolerances | None = None
    timed_cases: tuple[str, ...] | None = None
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
    repeats: int = 10  # fresh processes at most: five at least, more while they take under 5 s


@dataclass(frozen=True)
class Baseline:
    """Something to compare the kernels with (a library, the CPU), run on the same inputs in
    the same run, verified and timed like a kernel.

    ``prepare`` is a ``Prepare``: it gets the inputs and the poisoned outputs as ``arrays``:
    ``"torch"`` tensors on the GPU, ``"pycuda"`` GPUArrays (for cuBLAS through ctypes), or
    ``"numpy"`` arrays on the host (the default for ``device="cpu"``). ``device`` says how it is
    timed: ``"gpu"`` with CUDA events on the default stream, ``"cpu"`` with the host clock.
    """

    name: str
    prepare: Prepare
    device: Literal["gpu", "cpu"] = "gpu"
    arrays: Literal["torch", "pycuda", "numpy"] | None = None  # None: torch on the GPU, numpy on the CPU
    # Python modules that must import; where one does not, the baseline is skipped with the reason.
    requires: tuple[str, ...] = ()
    # Timed only at these cases (all timed cases when None); verified at every case regardless.
    timed_cases: tuple[str, ...] | None = None
    tolerance: Tolerances | None = None

    @property
    def library(self) -> str:
        return self.arrays or ("numpy" if self.device == "cpu" else "torch")


@dataclass(frozen=True)
class Headline:
    """The case an entry is summed up by (its dashboard row) and what it is compared with there."""

    case: str
    baseline: str


@dataclass
class Experiment:
    """The single declaration of an experiment. ``name`` is filled in from its folder.

    The engine calls ``inputs(case, rng)`` for a dict of NumPy arrays (fresh, seeded random
    data; ``labnotebook.run.draw`` fills large arrays on every core), then
    ``reference(**inputs)`` for a dict with one float64 array per name in ``outputs``.
    """

    title: str
    kernels: list[Kernel | PythonKernel]
    cases: list[Case]  # timed: every kernel and baseline, verified first, then timed
    inputs: Callable[[Case, np.random.Generator], dict[str, np.ndarray]]
    reference: Callable[..., dict[str, np.ndarray]]
    outputs: dict[str, type]  # output name -> NumPy dtype the kernels write
    tolerance: Tolerances
    # Sizes that are only verified, never timed: 1, primes, non-multiples of the block,
    # non-finite values. The compute-sanitizer pass runs these.
    edge_cases: list[Case] = field(default_factory=list)
    # The code paths a case takes, by name (which template a type and a head size instantiate,
    # one tile or several, a ragged last one, a pipeline's stages reused, a mask, one block or
    # several), for every kernel (each may add its own, ``Kernel.paths``): the compute-sanitizer
    # tools, which slow a kernel tens of times (racecheck more, with a block's shared-memory
    # traffic), then run each kernel at the smallest edge cases that together take every path
    # it takes at any case (``sanitizer_cases``). None, here and on the kernel: every edge case.
    paths: Callable[[Case], Iterable[str]] | None = None
    # Sizes at and past 2^31 elements: verified (in bounded memory), not timed, and not run
    # under the compute-sanitizer, whose shadow memory would not fit.
    large_cases: list[Case] = field(default_factory=list)
    # True when ``reference`` works slice by slice: given the inputs' rows lo:hi (along their
    # first axis) it returns the outputs' rows lo:hi. The engine then computes and compares the
    # reference a slice at a time, on every core, never holding all of it (elementwise and
    # row-wise operations; not a reduction over the whole input, not a matrix product).
    rowwise_reference: bool = False
    # True when ``reference`` is written against the array API standard (``xp =
    # labnotebook.run.xp.namespace(...)`` and its functions, not NumPy's own): the engine then
    # computes it on the GPU (float64, with PyTorch, from the uploaded inputs) wherever the
    # inputs have GPU_CHECK_MIN elements or more, and neither computes nor copies it on the host.
    array_api_reference: bool = False
    bytes_moved: Callable[[Case], int] | None = None  # the least traffic a kernel needs: GB/s
    flops: Callable[[Case], int] | None = None  # declared instead for compute-bound work: TFLOP/s
    # Floating-point operations per byte of that least traffic, for the roofline (an add of
    # float32 arrays: 1 flop per 12 bytes). Places each kernel whichever figure it is timed by.
    intensity: Callable[[Case], float] | None = None
    baselines: list[Baseline] = field(default_factory=list)
    headline: Headline | None = None
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

    def kernel(self, name: str) -> Kernel | PythonKernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"{self.name}: no kernel {name!r}; have {[k.name for k in self.kernels]}")

    def all_cases(self) -> list[Case]:
        return self.cases + self.edge_cases + self.large_cases

    def paths_of(self, kernel: Kernel, case: Case) -> set[str]:
        """The code paths ``kernel`` takes at ``case``: the experiment's and its own."""
        return {*(self.paths(case) if self.paths else ()), *(kernel.paths(case) if kernel.paths else ())}

    def cost(self, case: Case) -> float:
        """How much work ``case`` asks for, to choose the cheaper of two: its ``flops`` where they
        are declared (attention's grow with N squared), else its ``bytes_moved``, else its size."""
        measure = self.flops or self.bytes_moved or size
        return measure(case)

    def sanitizer_cases(self, kernel: Kernel) -> list[Case]:
        """The edge cases the sanitizer tools run ``kernel`` at: every one where no paths are
        declared; else, of those it takes, from the cheapest (``cost``), each that takes a path
        no cheaper one took; then, from the costliest, each dropped whose paths the others left
        take."""
        if self.paths is None and kernel.paths is None:
            return list(self.edge_cases)
        taken: set[str] = set()
        chosen = []
        for case in sorted((c for c in self.edge_cases if kernel.takes(c)), key=self.cost):
            new = self.paths_of(kernel, case) - taken
            if new:
                chosen.append(case)
                taken |= new
        for case in sorted(chosen, key=self.cost, reverse=True):
            if self.paths_of(kernel, case) <= {p for c in chosen if c is not case for p in self.paths_of(kernel, c)}:
                chosen.remove(case)
        return [c for c in self.edge_cases if c in chosen]

    def sanitizer_plan(self, names: set[str] | None = None) -> dict[str, set[str]]:
        """{edge case name: the CUDA kernels (of ``names``; all where None) that the sanitizer
        tools run there}: each kernel at its ``sanitizer_cases``."""
        plan: dict[str, set[str]] = {}
        for kernel in self.kernels:
            if isinstance(kernel, Kernel) and (names is None or kernel.name in names):
                for case in self.sanitizer_cases(kernel):
                    plan.setdefault(case.name, set()).add(kernel.name)
        return plan

    def profile_case(self, name: str) -> str | None:
        """Where ``name`` (a kernel or baseline) is profiled and placed on the roofline: the
        headline case if it is timed there, else the last (largest) case it is timed at."""
        runnable = next(r for r in [*self.kernels, *self.baselines] if r.name == name)
        mine = [c.name for c in self.cases if runnable.timed_cases is None or c.name in runnable.timed_cases]
        if self.headline and self.headline.case in mine:
            return self.headline.case
        return mine[-1] if mine else None

    def runnable_names(self) -> list[str]:
        """Every kernel's and baseline's name, in the order they run."""
        return [k.name for k in self.kernels] + [b.name for b in self.baselines]
