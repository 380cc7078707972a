"""The measurement protocol: the code that decides what a recorded number means.

Every file in this folder is part of every result's key (``labnotebook/results/keys.py``): change one
and every result is stale until it is measured again. The rest of the engine (the runner's
bookkeeping, workers, scheduling, the store, the profiler pass, the site) only carries numbers
and is recorded as provenance (the git commit), never keyed. What the protocol fixes:

- how kernels are built: ``NVCC_FLAGS``, and ``INCLUDE_DIR`` (shared device headers) on the
  include path after the kernel's own folder;
- inputs: fresh random data, from a generator seeded by the experiment and the case (``case_rng``);
- outputs are poisoned (``POISON_BYTE``) before the run that is verified, so an element a
  kernel never wrote fails;
- verification: every element against the float64 reference within the declared tolerance,
  NaN never passing (``verify.py``);
- timing: CUDA events, warm-up, many repetitions, L2 flushed before each (``timing.py``);
- the order (``measure``): poison, run once, verify, and time only what verified.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ...results.format import Check, Timing
from ...declare.experiment import Case, Experiment, Unsupported

NVCC_FLAGS = ("-std=c++17", "-O3", "-lineinfo", "-Xptxas=-v")
# Device code shared by experiments (tensor_core.cuh): on every kernel's include path.
INCLUDE_DIR = Path(__file__).parent.parent / "include"
POISON_BYTE = 0xFF  # all-ones bytes are NaN in every float type, so an unwritten element fails


def case_rng(exp: Experiment, case: Case) -> np.random.Generator:
    """The generator a case's inputs are drawn from: the experiment's seed and the case's place in
    its declaration, so a run of some cases (``--case``) draws what a full run draws."""
    position = next(i for i, c in enumerate(exp.all_cases()) if c.name == case.name)
    return np.random.default_rng([exp.seed, position])


class StepFailed(Exception):
    """A step of ``measure`` raised: ``step`` says which ("the first run", "timing")."""

    def __init__(self, step: str, cause: Exception):
        super().__init__(f"{step}: {type(cause).__name__}: {cause}")
        self.step, self.cause = step, cause


@dataclass
class Measured:
    check: Check
    status: str  # "ok" or "failed"
    error: str | None  # names every wrong output
    verify_s: float  # seconds spent on the reference comparison
    time: Timing | None  # None unless verified and asked to time


def measure(poison: Callable[[], None], run: Callable[[], object], fetch: Callable[[object], dict],
            verify: Callable[[dict], tuple[Check, str, str | None]], timer: Callable[[], Timing],
            time_it: bool) -> Measured:
    """Measure one kernel or baseline at one case, in the protocol's order: poison the outputs,
    run once, fetch and verify every element, and only then, if it verified, time it (the
    timing runs overwrite the outputs: whatever is taken from them, ``fetch`` takes). An
    exception from the run or the timing is raised as ``StepFailed`` naming the step;
    ``Unsupported`` from the first run passes through (a declared skip, not a failure)."""
    try:
        poison()
        outputs = fetch(run())
    except Unsupported:
        raise
    except Exception as e:
        raise StepFailed("the first run", e) from e
    t0 = time.perf_counter()
    check, status, error = verify(outputs)
    verify_s = round(time.perf_counter() - t0, 3)
    timing = None
    if status == "ok" and time_it:
        try:
            timing = timer()
        except Exception as e:
            raise StepFailed("timing", e) from e
    return Measured(check, status, error, verify_s, timing)
