"""What the elementwise-add experiments share: the exact reference and the torch.add baseline."""

from __future__ import annotations

import numpy as np

from .declare import Baseline


def add_reference(a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    """``c = a + b`` exactly in float64, then rounded once to float32: a correct float32 add
    matches it bit for bit, overflow to inf and NaN included."""
    with np.errstate(over="ignore", invalid="ignore"):  # inf - inf and overflow are the point
        return {"c": (a.astype(np.float64) + b.astype(np.float64)).astype(np.float32).astype(np.float64)}


def _torch_add(case, x):
    import torch

    a, b = (torch.from_numpy(x[k]).cuda() for k in "ab")
    c = torch.empty_like(a)
    return lambda: {"c": torch.add(a, b, out=c)}


TORCH_ADD = Baseline("torch", _torch_add, requires=("torch",))
