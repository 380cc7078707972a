"""A case's float64 reference and its outputs' shapes: computed whole on the host, slice by
slice where it is too big to keep (``reference_budget``), or on the GPU from the uploaded
inputs where the experiment's reference is written for the array API."""

from __future__ import annotations

import os
from typing import Callable, Mapping

import numpy as np

from ..declare.experiment import Case, Experiment
from .case_arrays import CaseArrays, elements
from .host_code import CaseError, host_call, module_installed
from .protocol.verify import GPU_CHECK_MIN, DeviceReference, reference_in_gpu_slices, reference_in_slices

# The most a kept float64 reference may take, on any machine: enough for 2^31 elements and some
# (a reference recomputed for every kernel and baseline costs far more than the memory).
REFERENCE_CAP = 24 << 30


def reference_budget() -> int:
    """How many bytes of float64 reference a case may keep: a quarter of the machine's memory
    (of this GPU's share of it, on a node where several run at once), at most REFERENCE_CAP.
    Beyond it the reference is recomputed slice by slice per output."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0
    sharing = max(1, int(os.environ.get("NOTEBOOK_GPUS_SHARING", "1")))
    return min(REFERENCE_CAP, total // (4 * sharing))


def goes_on_gpu(exp: Experiment, inputs: dict, gpu_checks: bool) -> bool:
    """Whether this case's reference is computed on the GPU: the experiment's reference is
    written for the array API, the checks run there, and the inputs are large."""
    return (exp.array_api_reference and gpu_checks and module_installed("torch")
            and module_installed("array_api_compat")
            and sum(elements(v) for v in inputs.values()) >= GPU_CHECK_MIN)


def on_gpu(exp: Experiment, case: Case, inputs: dict, arrays: CaseArrays,
           log: Callable[[str], None]) -> tuple[Mapping, dict[str, tuple]]:
    """The reference computed on the GPU from the uploaded inputs (``DeviceReference``, kept by
    ``arrays`` and freed with them) and the outputs' shapes; on the host as usual where the GPU
    has no room for it."""
    import torch

    ins = arrays.arrays("torch")[0]
    try:
        if exp.rowwise_reference:
            tensors = host_call(reference_in_gpu_slices, "reference", case, ins, exp.reference)
        else:
            whole = host_call(exp.reference, "reference", case, **ins)
            tensors = {n: torch.as_tensor(whole[n], dtype=torch.float64, device="cuda") for n in exp.outputs
                       if n in whole}
    except CaseError as e:
        if not isinstance(e.__cause__, torch.cuda.OutOfMemoryError):
            raise
        log("  (no room for the reference on the GPU: computing it on the host)")
        torch.cuda.empty_cache()
        return on_host(exp, case, inputs)
    require_outputs(exp, case, tensors)
    arrays.device_reference = DeviceReference(tensors)
    return arrays.device_reference, {n: tuple(t.shape) for n, t in tensors.items()}


def on_host(exp: Experiment, case: Case, inputs: dict, keep: bool = True) -> tuple[dict | None, dict[str, tuple]]:
    """The whole reference and the outputs' shapes. A row-wise reference too big to keep
    (``reference_budget``) is None: it is computed slice by slice while verifying each output."""
    if exp.rowwise_reference:
        first = host_call(exp.reference, "reference", case, **{k: v[:1] for k, v in inputs.items()})
        rows = next(iter(inputs.values())).shape[0]
        ref, shapes = None, {n: (rows, *np.shape(first[n])[1:]) for n in exp.outputs if n in first}
        if keep and set(shapes) == set(exp.outputs) and sum(8 * np.prod(s) for s in shapes.values()) <= reference_budget():
            # It fits: compute it once (in slices, on every core) for every kernel to be checked against.
            ref = host_call(reference_in_slices, "reference", case, inputs, exp.reference, shapes)
    else:
        ref = host_call(exp.reference, "reference", case, **inputs)
        shapes = {n: np.shape(ref[n]) for n in exp.outputs if n in ref}
    require_outputs(exp, case, shapes)
    return ref, shapes


def require_outputs(exp: Experiment, case: Case, found: Mapping) -> None:
    """The reference gave every declared output (``found`` is keyed by output name)."""
    missing = sorted(set(exp.outputs) - set(found))
    if missing:
        raise CaseError(f"host code reference() returned no {missing} (case {case.name})")
