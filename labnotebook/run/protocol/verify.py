"""Compare every element of an output with its higher-precision reference, in bounded memory.

Outputs of 2^31 elements and more are compared a slice at a time, in a thread pool (NumPy
releases the GIL), so memory stays at a few slices per core and the time divides by the cores.
Where the experiment's reference works row by row (``Experiment.rowwise_reference``), the
reference itself is computed a slice at a time too and never held whole.

Each slice is checked a block at a time (``BLOCK`` elements, whose float64 temporaries stay in
the core's cache) in two steps. The quick one (``_within``) proves a block passes with a few
whole-array operations: every error finite and every error under its bound. Anything else (a
non-finite value anywhere, an element at or past its bound) goes to the exact one
(``_exact``), which counts and locates every mismatch. Both give the same numbers for a block
that passes; the quick one is about ten times faster, and passing blocks are nearly all of them.

On the GPU machine an output of ``GPU_CHECK_MIN`` elements or more is first given the quick
proof on the GPU (``within_on_gpu``: the same float64 operations, so the same numbers, over the
output where the kernel left it and the reference uploaded once per case). One core pass of
NumPy over 2^31 elements takes seconds, and the GIL keeps threads from dividing it; the GPU
takes milliseconds, and an output it proves is never copied to the host. Anything it does not
prove is copied and goes to the CPU's checks above, unchanged.

Where the experiment's reference is written against the array API standard
(``Experiment.array_api_reference``), a case with large inputs has its reference computed on
the GPU as well, in float64 from the inputs as uploaded (``reference_in_gpu_slices``,
``DeviceReference``): no float64 reference is computed or held on the host, and none crosses
PCIe, unless a check the GPU cannot prove needs one there.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Callable

import math

import numpy as np

from ...results.format import Check
from ...declare.experiment import Tolerance
from ..draw import threads

SLICE = 1 << 21  # elements compared at a time by one thread
BLOCK = 1 << 16  # elements checked at once within a slice: 512 KiB per float64 temporary
GPU_CHECK_MIN = 1 << 24  # elements from which an output is checked on the GPU first
GPU_CHUNK = 1 << 26  # elements the GPU checks at once: 512 MiB per float64 temporary


def reference_in_slices(inputs: Mapping[str, np.ndarray], reference: Callable[..., Mapping[str, np.ndarray]],
                        shapes: Mapping[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """The whole of a row-wise reference, computed a slice of rows at a time on every core into
    float64 arrays of ``shapes`` (for when it fits in memory and several outputs are checked
    against it: computing it once beats computing it for each)."""
    out = {name: np.empty(shape, np.float64) for name, shape in shapes.items()}
    rows = next(iter(shapes.values()))[0]
    per_row = max(1, max(int(np.prod(s[1:])) for s in shapes.values()))
    step = max(1, SLICE // per_row)

    def one(lo: int) -> None:
        part = reference(**{k: v[lo:lo + step] for k, v in inputs.items()})
        for name in out:
            out[name][lo:lo + step] = part[name]
    _map(one, list(range(0, rows, step)) or [0])
    return out


def reference_in_gpu_slices(inputs: Mapping, reference: Callable[..., Mapping], chunk: int | None = None) -> dict:
    """A row-wise reference computed where ``inputs`` are (torch tensors on the GPU, as uploaded;
    NumPy arrays work the same), ``chunk`` output elements at a time (``GPU_CHUNK``), into
    float64 arrays there: the temporaries of a slice, never of the whole."""
    from ..xp import namespace

    xp = namespace(*inputs.values())
    first = reference(**{k: v[:1] for k, v in inputs.items()})
    rows = next(iter(inputs.values())).shape[0]
    per_row = max(1, max(math.prod(tuple(t.shape)[1:]) for t in first.values()))
    step = max(1, (chunk or GPU_CHUNK) // per_row)
    device = next(iter(inputs.values())).device
    out = {name: xp.empty((rows, *tuple(t.shape)[1:]), dtype=xp.float64, device=device) for name, t in first.items()}
    for lo in range(0, rows, step):
        part = reference(**{k: v[lo:lo + step] for k, v in inputs.items()})
        for name, t in out.items():
            t[lo:lo + step] = part[name]
    return out


class DeviceReference(Mapping):
    """A reference computed on the GPU (``Experiment.array_api_reference``): float64 tensors for
    the check there (``tensors``), and, by name, NumPy copies made on first use for the checks
    that need the host (a CPU baseline's output, an output the GPU did not prove)."""

    def __init__(self, tensors: dict):
        self.tensors = tensors
        self._host: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._host:
            self._host[name] = self.tensors[name].cpu().numpy()
        return self._host[name]

    def __iter__(self):
        return iter(self.tensors)

    def __len__(self) -> int:
        return len(self.tensors)

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors.values())

    def release(self) -> None:
        """Drop the tensors (the GPU memory goes back once torch's cache is emptied)."""
        self.tensors = {}
        self._host = {}


@dataclass
class Comparison:
    """The outcome of comparing one output with its reference (``format.Check`` is what a row
    keeps of it)."""

    ok: bool
    max_abs_err: float
    max_rel_err: float
    mismatches: int
    elements: int
    # The worst element's error over its own bound (atol + rtol * |ref|): <= 1 passes.
    bound_ratio: float
    # Where the worst mismatch is, and what was there, for the error message.
    worst_index: tuple[int, ...] | None = None
    worst_got: float | None = None
    worst_want: float | None = None
    worst_excess: float = -np.inf  # how far past its bound the worst mismatch is

    def describe(self, output: str) -> str:
        if self.ok:
            return f"{output}: all {self.elements} elements within tolerance"
        return (f"{output}: {self.mismatches} of {self.elements} elements wrong; worst at index "
                f"{list(self.worst_index)}: got {self.worst_got!r}, want {self.worst_want!r}")

    def as_record(self) -> dict:
        return {"max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
                "mismatches": self.mismatches, "elements": self.elements, "bound_ratio": self.bound_ratio}


def _within(got: np.ndarray, want: np.ndarray, tol: Tolerance) -> Comparison | None:
    """The block's Comparison if every element is finite and strictly within its bound, else
    None. Any NaN or infinity in ``got`` or ``want`` makes an error non-finite, so ``max``
    (which propagates NaN) sees it; and ``err > bound`` implies ``err / bound >= 1`` in rounded
    arithmetic, so a ratio under 1 proves there is no mismatch."""
    err = got.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: NaN, which sends the block to _exact
        np.subtract(err, want, out=err)
    np.abs(err, out=err)
    max_abs = err.max(initial=0.0)
    if not np.isfinite(max_abs):
        return None
    scale = np.abs(want, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        quotient = np.divide(err, scale)
        # 0 / 0 (exact where the reference is 0) is NaN, which fmax skips; err / 0 is inf, as in _exact.
        max_rel = np.fmax.reduce(quotient, initial=0.0)
        scale *= tol.rtol
        scale += tol.atol  # the bound, atol + rtol * |ref|
        np.divide(err, scale, out=quotient)
        ratio = np.fmax.reduce(quotient, initial=0.0)
    if not ratio < 1.0:
        return None
    return Comparison(ok=True, max_abs_err=float(max_abs), max_rel_err=float(max_rel), mismatches=0,
                      elements=int(got.size), bound_ratio=float(ratio))


def within_on_gpu(got, want, tol: Tolerance) -> Comparison | None:
    """``_within`` on the GPU, over a whole output (torch tensors on the GPU: the output and its
    reference), a chunk at a time, with the same float64 operations in the same order (each
    one correctly rounded, none fused), so the same numbers. None: not proved (a non-finite
    value, an element at or past its bound, or shapes that differ); the CPU decides."""
    import torch

    if tuple(got.shape) != tuple(want.shape) or got.numel() == 0:
        return None
    g, w = got.reshape(-1), want.reshape(-1)
    maxima = []
    for lo in range(0, g.numel(), GPU_CHUNK):
        part = w[lo:lo + GPU_CHUNK]
        err = g[lo:lo + GPU_CHUNK].to(torch.float64).sub_(part).abs_()
        scale = part.abs().to(torch.float64)
        quotient = err / scale
        # 0 / 0 (exact where the reference is 0) is NaN: skipped, as fmax does on the CPU.
        max_rel = quotient.nan_to_num_(nan=0.0, posinf=math.inf).max()
        scale.mul_(tol.rtol).add_(tol.atol)
        torch.div(err, scale, out=quotient)
        ratio = quotient.nan_to_num_(nan=0.0, posinf=math.inf).max()
        finite = torch.isfinite(err).all().to(torch.float64)
        maxima.append(torch.stack([finite, err.max(), max_rel, ratio]))
    rows = torch.stack(maxima).tolist()  # one synchronisation for the whole output
    if not all(finite == 1.0 for finite, *_ in rows):
        return None
    max_abs, max_rel, ratio = (max(r[i] for r in rows) for i in (1, 2, 3))
    if not ratio < 1.0:
        return None
    return Comparison(ok=True, max_abs_err=max_abs, max_rel_err=max_rel, mismatches=0,
                      elements=int(g.numel()), bound_ratio=ratio)


def _exact(got: np.ndarray, want: np.ndarray, tol: Tolerance, base: int) -> Comparison:
    """One block, element by element, non-finite values included; ``worst_index`` is the flat
    index plus ``base``."""
    g = got.astype(np.float64, copy=False)
    w = want.astype(np.float64, copy=False)
    finite = np.isfinite(w)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf; handled just below
        err = np.abs(g - w)
    if not finite.all():  # a non-finite reference must be matched exactly, NaN by NaN
        err[~finite] = np.where((np.isnan(w) & np.isnan(g)) | (g == w), 0.0, np.inf)[~finite]
    # NaN in got gives NaN error: make it infinitely wrong so it can never compare as passing.
    err[np.isnan(err)] = np.inf
    bound = tol.atol + tol.rtol * np.where(finite, np.abs(w), 0.0)
    bad = err > bound
    mismatches = int(np.count_nonzero(bad))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(finite & (w != 0), err / np.abs(w), np.where(err == 0, 0.0, np.inf))
        ratio = np.where(bound > 0, err / bound, np.where(err == 0, 0.0, np.inf))
    check = Comparison(ok=mismatches == 0, max_abs_err=float(err.max(initial=0.0)),
                  max_rel_err=float(rel.max(initial=0.0)), mismatches=mismatches,
                  elements=int(got.size), bound_ratio=float(ratio.max(initial=0.0)))
    if mismatches:
        # Worst by how far past its own bound it is, so one huge reference value doesn't hide a NaN.
        with np.errstate(invalid="ignore"):
            excess = np.where(bad, err - bound, -np.inf)
        flat = int(np.argmax(excess))
        check.worst_index = (base + flat,)
        check.worst_got, check.worst_want = float(got[flat]), float(want[flat])
        check.worst_excess = float(excess[flat])
    return check


def _compare_flat(got: np.ndarray, want: np.ndarray, tol: Tolerance, base: int) -> Comparison:
    """One slice, as flat arrays, a block at a time; ``worst_index`` is the flat index plus ``base``."""
    parts = [_within(got[lo:lo + BLOCK], want[lo:lo + BLOCK], tol)
             or _exact(got[lo:lo + BLOCK], want[lo:lo + BLOCK], tol, base + lo)
             for lo in range(0, max(got.size, 1), BLOCK)]
    return parts[0] if len(parts) == 1 else _combine(parts)


def _combine(parts: list[Comparison]) -> Comparison:
    """One Comparison from its parts' (flat worst indices kept as they are)."""
    worst = max(parts, key=lambda c: (c.worst_index is not None, c.worst_excess))
    combined = Comparison(ok=all(c.ok for c in parts), max_abs_err=max(c.max_abs_err for c in parts),
                          max_rel_err=max(c.max_rel_err for c in parts), mismatches=sum(c.mismatches for c in parts),
                          elements=sum(c.elements for c in parts), bound_ratio=max(c.bound_ratio for c in parts))
    if worst.worst_index is not None:
        combined.worst_index = worst.worst_index
        combined.worst_got, combined.worst_want = worst.worst_got, worst.worst_want
        combined.worst_excess = worst.worst_excess
    return combined


def _merge(parts: list[Comparison], shape: tuple[int, ...]) -> Comparison:
    """One Comparison from the slices' Comparisons; the worst index unravelled into ``shape``."""
    merged = _combine(parts)
    if merged.worst_index is not None:
        merged.worst_index = tuple(int(i) for i in np.unravel_index(merged.worst_index[0], shape))
    return merged


def _map(fn, items: list) -> list:
    if len(items) == 1:
        return [fn(items[0])]
    with ThreadPoolExecutor(threads()) as pool:
        return list(pool.map(fn, items))


def compare(got: np.ndarray, want: np.ndarray, tol: Tolerance) -> Comparison:
    """Element-wise check of ``got`` against ``want`` (compared in float64).

    NaN in ``got`` fails unless the reference is NaN at that element too; an infinite reference
    must be matched exactly. A shape mismatch is a failure, not a broadcast.
    """
    if got.shape != want.shape:
        raise ValueError(f"output shape {got.shape} does not match reference shape {want.shape}")
    g, w = np.ascontiguousarray(got).reshape(-1), np.ascontiguousarray(want).reshape(-1)
    starts = list(range(0, g.size, SLICE)) or [0]
    parts = _map(lambda lo: _compare_flat(g[lo:lo + SLICE], w[lo:lo + SLICE], tol, lo), starts)
    return _merge(parts, got.shape)


def compare_rowwise(outputs: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
                    reference: Callable[..., Mapping[str, np.ndarray]], tol: Tolerance) -> dict[str, Comparison]:
    """Check each output against ``reference`` computed slice by slice along the first axis of
    the inputs and outputs (see ``Experiment.rowwise_reference``)."""
    rows = next(iter(outputs.values())).shape[0]
    per_row = max(1, max(a[:1].size for a in outputs.values()))
    step = max(1, SLICE // per_row)
    starts = list(range(0, rows, step)) or [0]

    def one(lo: int) -> dict[str, Comparison]:
        want = reference(**{k: v[lo:lo + step] for k, v in inputs.items()})
        checks = {}
        for name, out in outputs.items():
            got, ref = out[lo:lo + step], np.asarray(want[name])
            if got.shape != ref.shape:
                raise ValueError(f"output {name}: rows {lo}:{lo + got.shape[0]} have shape {got.shape}, "
                                 f"the reference's slice {ref.shape}")
            checks[name] = _compare_flat(np.ascontiguousarray(got).reshape(-1), ref.reshape(-1), tol,
                                         lo * (out[:1].size or 1))
        return checks

    parts = _map(one, starts)
    return {name: _merge([p[name] for p in parts], out.shape) for name, out in outputs.items()}


def verify_outputs(outputs: Mapping[str, np.ndarray], names: list[str], tolerance: Tolerance,
                   reference: Mapping[str, np.ndarray] | None, inputs: Mapping[str, np.ndarray],
                   reference_slice: Callable[..., Mapping[str, np.ndarray]],
                   on_gpu: Callable[[str, Tolerance], Comparison | None] | None = None) -> tuple[Check, str, str | None]:
    """Every output checked: the worst one's ``Check``, the row's status, and an error naming every
    wrong output. With no whole ``reference`` (a row-wise one too large to keep) each output is
    checked against ``reference_slice`` computed a slice of rows at a time. ``on_gpu(name,
    tolerance)``, where given, is tried first: ``within_on_gpu`` for an output of
    ``GPU_CHECK_MIN`` elements or more that is on the GPU, None for any other."""
    # outputs[n] is read only after the GPU's attempt: one the GPU proves is never copied.
    proved = {n: c for n in names if on_gpu and (c := on_gpu(n, tolerance)) is not None}
    rest = [n for n in names if n not in proved]
    if not rest:
        checks = proved
    elif reference is None:
        checks = {**proved, **compare_rowwise({n: outputs[n] for n in rest}, inputs, reference_slice, tolerance)}
    else:
        checks = {**proved, **{n: compare(outputs[n], reference[n], tolerance) for n in rest}}
    checks = {n: checks[n] for n in names}
    worst = max(checks.values(), key=lambda c: (c.bound_ratio, c.mismatches))
    check = Check(**worst.as_record(), atol=tolerance.atol, rtol=tolerance.rtol)
    bad = [c.describe(n) for n, c in checks.items() if not c.ok]
    return check, "ok" if not bad else "failed", ("wrong answer: " + "; ".join(bad)) if bad else None
