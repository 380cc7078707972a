"""Compare every element of an output with its higher-precision reference."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .declare import Tolerance


@dataclass
class Check:
    """The outcome of comparing one output with its reference."""

    ok: bool
    max_abs_err: float
    max_rel_err: float
    mismatches: int
    elements: int
    # Where the worst element is, and what was there, for the error message.
    worst_index: tuple[int, ...] | None = None
    worst_got: float | None = None
    worst_want: float | None = None

    def describe(self, output: str) -> str:
        if self.ok:
            return f"{output}: all {self.elements} elements within tolerance"
        return (f"{output}: {self.mismatches} of {self.elements} elements wrong; worst at index "
                f"{list(self.worst_index)}: got {self.worst_got!r}, want {self.worst_want!r}")

    def as_record(self) -> dict:
        return {"max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
                "mismatches": self.mismatches, "elements": self.elements}


def compare(got: np.ndarray, want: np.ndarray, tol: Tolerance) -> Check:
    """Element-wise check of ``got`` against ``want`` (compared in float64).

    NaN in ``got`` fails unless the reference is NaN at that element too; an infinite reference
    must be matched exactly. A shape mismatch is a failure, not a broadcast.
    """
    if got.shape != want.shape:
        raise ValueError(f"output shape {got.shape} does not match reference shape {want.shape}")
    g = got.astype(np.float64, copy=False)
    w = want.astype(np.float64, copy=False)
    finite = np.isfinite(w)
    with np.errstate(invalid="ignore"):  # inf - inf; handled just below
        err = np.abs(g - w)
    err[~finite] = np.where(
        (np.isnan(w) & np.isnan(g)) | (g == w), 0.0, np.inf)[~finite]
    # NaN in got gives NaN error: make it infinitely wrong so it can never compare as passing.
    err = np.where(np.isnan(err), np.inf, err)
    bound = tol.atol + tol.rtol * np.where(finite, np.abs(w), 0.0)
    bad = err > bound
    mismatches = int(np.count_nonzero(bad))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(finite & (w != 0), err / np.abs(w), np.where(err == 0, 0.0, np.inf))
    check = Check(ok=mismatches == 0, max_abs_err=float(err.max(initial=0.0)),
                  max_rel_err=float(rel.max(initial=0.0)), mismatches=mismatches,
                  elements=int(got.size))
    if mismatches:
        # Worst by how far past its own bound it is, so one huge reference value doesn't hide a NaN.
        with np.errstate(invalid="ignore"):
            excess = np.where(bad, err - bound, -np.inf)
        flat = int(np.argmax(excess))
        idx = np.unravel_index(flat, got.shape)
        check.worst_index = tuple(int(i) for i in idx)
        check.worst_got = float(got[idx])
        check.worst_want = float(want[idx])
    return check
