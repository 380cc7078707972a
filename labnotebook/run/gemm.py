"""What the matrix-multiplication experiments share: their cases, inputs, reference, the
launch of whole tiles and the limits their int arithmetic and grids keep (C = A @ B, row-major,
A of M×K and B of K×N)."""

from __future__ import annotations

import numpy as np

from . import draw
from ..declare.experiment import Case, Launch, Unsupported, cdiv
from .xp import namespace

MAX_GRID_YZ = 65535
INT_MAX = 2**31 - 1
# The kernels count along K in whole tiles with int (k0 += TILE): within a tile of 2^31 - 1 that
# would overflow, so every dimension stays below it.
MAX_DIM = INT_MAX - 256


def mnk(m: int, n: int | None = None, k: int | None = None, kind: str | None = None) -> Case:
    """A case named ``4096³`` or ``4096×1024×2048``, with ``kind`` (special inputs) appended."""
    n, k = m if n is None else n, m if k is None else k  # 0 is a size: K = 0 gives C = 0
    name = f"{m}³" if m == n == k else f"{m}×{n}×{k}"
    return Case(f"{name} {kind}", m=m, n=n, k=k, kind=kind) if kind else Case(name, m=m, n=n, k=k)


def args(case) -> tuple:
    """The kernels' arguments, ``(A, B, C, M, N, K)``, with M, N and K as the ints they take."""
    if max(case.m, case.n, case.k) > MAX_DIM:
        raise Unsupported("M, N and K are ints, counted in tiles: each below 2^31 - 257")
    return ("a", "b", "c", np.int32(case.m), np.int32(case.n), np.int32(case.k))


def split_y(blocks: int) -> tuple[int, int]:
    """gridDim.y stops at 65535 blocks: the kernels take y-blocks past it from blockIdx.z."""
    return min(blocks, MAX_GRID_YZ), cdiv(blocks, MAX_GRID_YZ)


def tiled(bm: int, bn: int, bk: int, threads: int, int_rows=(0, 0), loads_ahead=False, shared_bytes=0):
    """Launch for the kernels that assume whole bm x bn x bk tiles: checked here, before anything
    runs; a block per tile of C. ``int_rows``: how many rows of A and of B a kernel's offsets
    inside a tile span in int arithmetic (kept for speed), so rows x K and rows x N must stay
    below 2^31. ``loads_ahead``: the kernel loads its first tile before its loop, so K = 0 would
    read past A and B."""
    def launch(case):
        if case.m % bm or case.n % bn or case.k % bk:
            raise Unsupported(f"needs M a multiple of {bm}, N of {bn} and K of {bk}; "
                              f"got {case.m}×{case.n}×{case.k}")
        if loads_ahead and case.k == 0:
            raise Unsupported("loads the first tile of A and B before its loop: K at least one tile")
        rows_a, rows_b = int_rows
        if rows_a * case.k > INT_MAX or rows_b * case.n > INT_MAX:
            raise Unsupported(f"offsets inside a tile are ints: {rows_a} x K and {rows_b} x N must stay below 2^31")
        return Launch(grid=(case.n // bn, *split_y(case.m // bm)), block=(threads,), shared_bytes=shared_bytes,
                      args=args(case))
    return launch


def inputs(dtype):
    """An ``inputs(case, rng)`` for A and B uniform in [-1, 1) of ``dtype``."""
    def make(case, rng):
        a = draw.uniform(rng, (case.m, case.k), -1, 1, dtype=dtype)
        b = draw.uniform(rng, (case.k, case.n), -1, 1, dtype=dtype)
        if case.params.get("kind") == "inf, NaN":
            # One +inf in A and one NaN in B: row 1 of C is ±inf (by the sign of B's row 2, never
            # 0 here) and column 3 is NaN, whatever the order of the sums. No ±3.4e38: float32 and
            # float64 accumulations would overflow at different points.
            a[1, 2] = np.inf
            b[2][b[2] == 0] = 0.5
            b[case.k - 1, 3] = np.nan
        return {"a": a, "b": b}
    return make


def reference(a, b) -> dict:
    """C in float64 (written for the array API: Experiment.array_api_reference)."""
    xp = namespace(a, b)
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 and inf - inf would be NaN, as intended
        return {"c": xp.astype(a, xp.float64) @ xp.astype(b, xp.float64)}


def intensity(in_bytes: int, out_bytes: int = 4):
    """Flops per byte of a GEMM's least traffic (A and B read once, C written once), for the
    roofline: elements of ``in_bytes`` in, of ``out_bytes`` out."""
    def of(case) -> float:
        return 2 * case.m * case.n * case.k / (in_bytes * (case.m * case.k + case.k * case.n) + out_bytes * case.m * case.n)
    return of


def flops(case) -> int:
    return 2 * case.m * case.n * case.k


def gemm_declaration(dtype) -> dict:
    """The Experiment fields every GEMM here declares alike, for A and B of ``dtype`` and a
    float32 C. The large case, 65537 rows of 128-row tiles (gridDim.z = 2) and a C of 2^31
    floats (8 GiB; its float64 reference 16 GiB, computed on the GPU), tests the 64-bit offsets
    and the z grid."""
    return dict(large_cases=[mnk(65537 * 128, 256, 64)], inputs=inputs(dtype), array_api_reference=True,
                reference=reference, outputs={"c": np.float32}, flops=flops,
                intensity=intensity(in_bytes=np.dtype(dtype).itemsize))
