"""Measuring one kernel or baseline at one case: set it up, poison its outputs, run it once,
verify every element, and only then time it. Whatever its setup, its run or the check raises
is that row's failure, named; the other rows still run.

CUDA kernels, Python-DSL kernels and baselines take this one path: only the arrays differ
(PyCUDA buffers for CUDA kernels, torch views of the same device memory for Triton, cuTile and
PyTorch, NumPy arrays for CPU baselines).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Mapping

import numpy as np

from ..declare.experiment import Case, Tolerances, Unavailable, Unsupported, tolerance_at
from ..results.rows import BaselineRow, Check, KernelRow, RunRow
from . import protocol
from . import reference as references
from .case_arrays import CaseArrays
from .host_code import CaseError, host_call, module_installed
from .launch import CudaLaunch
from .outputs import Outputs
from .protocol.timing import time_cpu
from .protocol.verify import Comparison, DeviceReference, verify_outputs, within_on_gpu

if TYPE_CHECKING:
    from .runner import Runner


@dataclass
class Runnable:
    """A kernel or a baseline, as the engine runs it: ``make(case, inputs, outputs)`` returns
    the callable that runs it once, given arrays of ``library``."""

    name: str
    kind: str  # "kernel" or "baseline"
    device: str  # "gpu" or "cpu": how it is timed
    library: str  # "cuda" (PyCUDA buffers), "torch", "pycuda" (GPUArrays) or "numpy"
    make: Callable[[Case, dict, dict], Callable[[], Any]]
    what: str  # what to call its setup in an error message: "launch()", "prepare()"
    requires: tuple[str, ...] = ()
    tolerance: Tolerances | None = None
    timed_cases: tuple[str, ...] | None = None


@dataclass(frozen=True)
class CaseSetup:
    """One case, set up: what every kernel and baseline measured at it shares."""

    case: Case
    base: dict  # the fields of every row at this case
    inputs: dict
    reference: Mapping | None  # None: a row-wise reference too big to keep, computed a slice at a time
    arrays: CaseArrays
    phase: Callable[[str], ContextManager]  # the clock for a phase at this case


def runnable_row(r: Runnable, base: dict, **fields) -> RunRow:
    """``r``'s row at a case (``base``: the case's fields): a KernelRow, or a BaselineRow that
    says where it ran."""
    if r.kind == "baseline":
        return BaselineRow(name=r.name, device=r.device, **base, **fields)
    return KernelRow(name=r.name, **base, **fields)


def measure(runner: Runner, r: Runnable, at: CaseSetup, time_it: bool) -> RunRow:
    """Set up, poison, run once, verify, and (when ``time_it``) time one kernel or baseline."""
    row = runnable_row(r, {**at.base, "timed": time_it}, status="ok")
    unmet = runner.unavailable or runner.blocked.get(r.name) or runner.missing(r.requires)
    if unmet:
        return replace(row, **unmet)
    ins, outs = at.arrays.arrays(r.library)
    try:
        go = r.make(at.case, ins, outs)
    except Unsupported as e:
        return _skipped(row, e, r.library)
    except Exception as e:
        runner.check_context(f"{r.kind} {r.name}")
        return replace(row, status="failed", error=_describe_error(e, r.what))
    if isinstance(go, CudaLaunch):
        row = replace(row, launch=go.shape)
    # Large outputs on the GPU are checked and digested there (not under a sanitizer, whose
    # report must hold our kernels alone, and not without torch).
    gpu_views = r.device == "gpu" and runner.gpu_checks and module_installed("torch")
    try:
        def fetch(returned) -> Outputs:
            nonlocal row
            if r.device == "gpu":
                runner.context.synchronize()  # PyTorch shares this (primary) context and its default stream
            outputs = at.arrays.fetch(r.device, returned, gpu_views)
            row = replace(row, digest=_digest(runner, outputs))  # now: timing runs it again, over the same buffers
            return outputs

        def time():
            with at.phase("baselines" if r.kind == "baseline" else "timing"):
                return runner.timer.time(go) if r.device == "gpu" else time_cpu(go)
        measured = protocol.measure(lambda: at.arrays.poison(r.device), go, fetch,
                                    lambda outputs: verify(runner, at, outputs, r.tolerance), time, time_it)
    except Unsupported as e:
        return _skipped(row, e, r.library)
    except protocol.StepFailed as e:
        runner.check_context(f"{r.kind} {r.name}" if e.step == "the first run" else f"timing {r.kind} {r.name}")
        return replace(row, status="failed", error=_describe_error(e.cause, e.step))
    except CaseError as e:
        return replace(row, status="failed", error=str(e))
    except (ValueError, KeyError) as e:  # outputs of the wrong shape, or missing
        return replace(row, status="failed", error=f"verification: {type(e).__name__}: {e}")
    return replace(row, check=measured.check, status=measured.status, error=measured.error,
                   verify_s=measured.verify_s, time=measured.time)


def verify(runner: Runner, at: CaseSetup, outputs: Mapping[str, np.ndarray],
           tolerance: Tolerances | None) -> tuple[Check, str, str | None]:
    """The protocol's verification, with the tolerance declared for this case; outputs with
    a view on the GPU (``Outputs.on_gpu``) get the quick check there first."""
    exp, reference = runner.exp, at.reference
    tolerance = host_call(tolerance_at, "tolerance", at.case, tolerance or exp.tolerance, at.case)

    def reference_slice(**rows):  # a row-wise reference too big to keep, a slice at a time
        return host_call(exp.reference, "reference", None, **rows)

    def check_on_gpu(name: str, tol) -> Comparison | None:
        got = outputs.on_gpu(name)
        if got is None:
            return None
        try:
            want = at.arrays.reference_on_gpu(reference, name)
            return within_on_gpu(got, want, tol) if want is not None else None
        except Exception as e:  # no room, say: the CPU checks it all the same
            runner.log(f"  (checking {name} on the CPU: {type(e).__name__}: {e})")
            return None
    use_gpu = isinstance(outputs, Outputs) and reference is not None
    # What the GPU leaves to the host: a row-wise reference computed on the GPU is copied there
    # whole only within the host's budget; past it, the host recomputes it a slice at a time.
    on_host = None if (isinstance(reference, DeviceReference) and exp.rowwise_reference
                       and reference.nbytes > references.reference_budget()) else reference
    return verify_outputs(outputs, list(exp.outputs), tolerance, on_host, at.inputs, reference_slice,
                          check_on_gpu if use_gpu else None)


def _digest(runner: Runner, outputs: Outputs) -> str | None:
    try:
        return outputs.digest()
    except Exception as e:  # a digest is a convenience for the page; the run stands without it
        runner.log(f"  (no digest: {type(e).__name__}: {e})")
        return None


def _skipped(row: RunRow, e: Unsupported, library: str) -> RunRow:
    """A declared skip: a case the kernel does not take (Unsupported), or a machine that cannot run it."""
    return replace(row, status="skipped", error=f"unsupported: {e}" if library == "cuda" and not isinstance(e, Unavailable)
                   else str(e),
                   unavailable=isinstance(e, Unavailable))


def _describe_error(e: Exception, step: str) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text if step == "the first run" else f"{step} raised {text}"
