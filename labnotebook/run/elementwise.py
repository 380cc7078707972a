"""What the elementwise-add experiments share: the exact reference and the torch.add baseline."""

from __future__ import annotations

import numpy as np

from ..declare.experiment import Baseline
from .xp import namespace

# The values that break careless float code: infinities, NaN, near-overflow, the smallest
# subnormal, the smallest normal and both zeros.
EXTREMES = np.array([np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 1e-45, -0.0, 0.0, 1.17549435e-38],
                    dtype=np.float32)


def all_pairs(a: np.ndarray, b: np.ndarray) -> None:
    """Put every pairing of EXTREMES (inf + -inf, 3.4e38 + 3.4e38, ...) at the start of ``a``
    and ``b``, in place: a correct add matches the reference on each, overflow and NaN included."""
    k = len(EXTREMES)
    a.reshape(-1)[:k * k], b.reshape(-1)[:k * k] = np.repeat(EXTREMES, k), np.tile(EXTREMES, k)


def add_reference(a, b) -> dict:
    """``c = a + b`` exactly in float64, then rounded once to float32: a correct float32 add
    matches it bit for bit, overflow to inf and NaN included."""
    xp = namespace(a, b)
    with np.errstate(over="ignore", invalid="ignore"):  # inf - inf and overflow are the point
        exact = xp.astype(a, xp.float64) + xp.astype(b, xp.float64)
        return {"c": xp.astype(xp.astype(exact, xp.float32), xp.float64)}
# Elementwise: any slice of the inputs' rows gives that slice of the output (Experiment.rowwise_reference),
# and written for the array API (Experiment.array_api_reference).


def _torch_add(case, inputs, outputs):
    import torch

    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    return lambda: torch.add(a, b, out=c)


TORCH_ADD = Baseline("torch", _torch_add)
