"""The array namespace a reference is written against, so that one function runs on the host and
on the GPU (``Experiment.array_api_reference``).

NumPy 2.1 and later follow the array API standard in their main namespace; torch tensors get
``array_api_compat``'s. A reference written as ``xp = namespace(a, b)`` and ``xp.astype``,
``xp.exp``, ``xp.max(x, axis=1, keepdims=True)``, ``a @ b`` ... computes the same float64 values
from NumPy arrays in the CPU tests and from the uploaded inputs on the GPU.
"""

from __future__ import annotations

import numpy as np


def namespace(*arrays):
    if all(isinstance(a, (np.ndarray, np.generic)) for a in arrays):
        return np
    from array_api_compat import array_namespace

    return array_namespace(*arrays)
