"""SGEMM, C = A @ B in float32 (row-major), from a naive kernel up a ladder towards cuBLAS,
with cublasSgemm and torch.matmul (TF32 off) in the same run."""

import numpy as np

from labnotebook import Baseline, Case, Experiment, Kernel, Launch, Tolerance, Unsupported, cdiv
from labnotebook.run import cublas


def mnk(m, n=None, k=None):
    n, k = n or m, k or m
    return Case(f"{m}³" if m == n == k else f"{m}×{n}×{k}", m=m, n=n, k=k)


SQUARE = [mnk(1024), mnk(2048), mnk(4096), mnk(8192)]
ODD = [mnk(1000), mnk(4096, 1024, 2048), mnk(1500, 700, 1100)]
# The first rungs take seconds per product at 8192³; they run up to 4096³.
UP_TO_4096 = tuple(c.name for c in SQUARE[:3] + ODD)


def inputs(case, rng):
    return {"a": rng.uniform(-1, 1, (case.m, case.k)).astype(np.float32),
            "b": rng.uniform(-1, 1, (case.k, case.n)).astype(np.float32)}


def reference(a, b):
    return {"c": a.astype(np.float64) @ b.astype(np.float64)}


def args(case):
    return ("a", "b", "c", np.int32(case.m), np.int32(case.n), np.int32(case.k))


def per_element(block, x_walks):
    """Launch for the rungs that check every bound themselves: one thread per element of C,
    with threadIdx.x walking down C's rows (``"m"``) or along its columns (``"n"``)."""
    def launch(case):
        x, y = (case.m, case.n) if x_walks == "m" else (case.n, case.m)
        return Launch(grid=(cdiv(x, block), cdiv(y, block)), block=(block, block), args=args(case))
    return launch


def tiled(bm, bn, bk, threads):
    """Launch for the rungs that assume whole tiles: checked here, before anything runs."""
    def launch(case):
        if case.m % bm or case.n % bn or case.k % bk:
            raise Unsupported(f"needs M a multiple of {bm}, N of {bn} and K of {bk}; "
                              f"got {case.m}×{case.n}×{case.k}")
        return Launch(grid=(case.n // bn, case.m // bm), block=(threads,), args=args(case))
    return launch


# --8<-- [start:cublas]
def cublas_sgemm(case, x):
    import pycuda.driver as cuda
    from pycuda import gpuarray

    a, b = gpuarray.to_gpu(x["a"]), gpuarray.to_gpu(x["b"])
    c = gpuarray.empty((case.m, case.n), np.float32)
    cuda.memset_d8(c.gpudata, 0xFF, c.nbytes)  # poisoned: all-ones bytes are NaN

    def run():
        # cuBLAS is column-major: it reads our row-major C (M×N) as Cᵀ (N×M). Asking it for
        # Cᵀ = Bᵀ·Aᵀ, with B passed first, gives row-major C = A·B with no transposes at all.
        cublas.sgemm("N", "N", case.n, case.m, case.k, 1.0, b.gpudata, case.n, a.gpudata, case.k,
                     0.0, c.gpudata, case.n)
        return {"c": c}
    return run
# --8<-- [end:cublas]


def torch_matmul(case, x):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # float32 products, as cublasSgemm computes
    a, b = (torch.from_numpy(x[k]).cuda() for k in "ab")
    c = torch.full((case.m, case.n), float("nan"), device="cuda")
    return lambda: {"c": torch.matmul(a, b, out=c)}


experiment = Experiment(
    title="Matrix multiplication in float32: from naive to near cuBLAS",
    kernels=[
        Kernel("1_naive.cu", "matmul_naive", per_element(32, x_walks="m"), cases=UP_TO_4096),
        Kernel("2_coalesced.cu", "matmul_coalesced", per_element(32, x_walks="n"), cases=UP_TO_4096),
        Kernel("3_shared_tiled.cu", "matmul_shared_tiled", per_element(16, x_walks="n"), cases=UP_TO_4096),
        Kernel("4_blocktile_1d.cu", "matmul_blocktile_1d", tiled(64, 64, 8, 512)),
        Kernel("5_blocktile_2d.cu", "matmul_blocktile_2d", tiled(128, 128, 8, 256)),
        Kernel("6_vectorized.cu", "matmul_vectorized", tiled(128, 128, 8, 256)),
        Kernel("7_warptile.cu", "matmul_warptile", tiled(128, 128, 8, 256)),
        Kernel("8_double_buffered.cu", "matmul_double_buffered", tiled(128, 128, 8, 256)),
    ],
    cases=SQUARE + ODD,
    edge_cases=[mnk(1, 1, 1), mnk(17, 33, 65), mnk(128, 128, 8), mnk(257, 129, 63), mnk(256, 384, 1000)],
    inputs=inputs,
    reference=reference,
    outputs={"c": np.float32},
    # Uniform(-1, 1) inputs: an element of C is a sum of K products of variance 1/9, and float32
    # rounding in any summation order leaves errors near K * 2^-24 / 3 at worst-case-ish growth
    # (1.6e-4 at K = 8192). atol 2e-3 covers every order the kernels use; TF32 (10-bit mantissa
    # products) would miss by 10x and more, so no kernel or library can use it unseen.
    tolerance=Tolerance(atol=2e-3, rtol=1e-5),
    flops=lambda case: 2 * case.m * case.n * case.k,
    baselines=[Baseline("cuBLAS", cublas_sgemm),
               Baseline("torch", torch_matmul, requires=("torch",))],
    time_limit_s=600,
)
