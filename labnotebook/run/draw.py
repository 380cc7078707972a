"""Random inputs of any size, drawn on every core, the same for a given generator on any machine.

NumPy draws from one generator on one core: 2^31 floats take tens of seconds. Here the array is
cut into fixed slices of ``SLICE`` elements, each drawn from its own child generator
(``rng.spawn``) in a thread pool (NumPy releases the GIL while it fills). The slicing does not
depend on the number of cores, so the values do not either.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

SLICE = 1 << 22


def cores() -> list[int]:
    """The cores this process may use (the build gives each GPU's workers their own share)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))  # macOS: no affinity, every core


def threads() -> int:
    return max(1, min(32, len(cores())))


def _fill(rng: np.random.Generator, shape, dtype, draw: Callable[[np.random.Generator, np.ndarray], None]) -> np.ndarray:
    out = np.empty(shape, dtype=dtype)
    flat = out.reshape(-1)
    if flat.size <= SLICE:
        draw(rng, flat)
        return out
    starts = range(0, flat.size, SLICE)
    children = rng.spawn(len(starts))
    with ThreadPoolExecutor(threads()) as pool:
        list(pool.map(lambda i: draw(children[i], flat[starts[i]:starts[i] + SLICE]), range(len(starts))))
    return out


def normal(rng: np.random.Generator, shape, dtype=np.float32) -> np.ndarray:
    """Standard normal values (float32 or float64)."""
    return _fill(rng, shape, dtype, lambda g, x: g.standard_normal(out=x, dtype=x.dtype))


def normal_as(rng: np.random.Generator, shape, fn: Callable[[np.ndarray], np.ndarray], dtype) -> np.ndarray:
    """``fn(normal(rng, shape))`` for an elementwise ``fn`` whose result is of ``dtype`` (float32
    rounded to fp16, say): the same values, a slice at a time, and never a float32 array of the
    whole shape (attention's three inputs at 2^31 elements each made 24 GiB of them)."""
    def draw(g: np.random.Generator, x: np.ndarray) -> None:
        x[...] = fn(g.standard_normal(x.size, dtype=np.float32))
    return _fill(rng, shape, dtype, draw)


def in_slices(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray, dtype) -> np.ndarray:
    """``fn(x)`` for an elementwise ``fn`` whose result is of ``dtype``, a slice of ``x`` at a
    time on every core (NumPy releases the GIL in its loops): narrowing 2^31 floats to fp16 on
    one core takes tens of seconds."""
    out = np.empty(x.shape, dtype=dtype)
    src, dst = x.reshape(-1), out.reshape(-1)

    def one(start: int) -> None:
        dst[start:start + SLICE] = fn(src[start:start + SLICE])
    with ThreadPoolExecutor(threads()) as pool:
        list(pool.map(one, range(0, src.size, SLICE)))
    return out


def uniform(rng: np.random.Generator, shape, low: float = 0.0, high: float = 1.0, dtype=np.float32) -> np.ndarray:
    """Uniform values in ``[low, high)``, drawn in float32 or float64 and cast to ``dtype``."""
    def draw(g: np.random.Generator, x: np.ndarray) -> None:
        if x.dtype in (np.float32, np.float64):  # in place: the same values, in a third of the time
            g.random(out=x, dtype=x.dtype)
            x *= high - low
            x += low
            return
        x[...] = low + (high - low) * g.random(x.size, dtype=np.float64)
    return _fill(rng, shape, dtype, draw)
