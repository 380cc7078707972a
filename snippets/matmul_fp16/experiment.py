"""fp16 GEMM on tensor cores, C = A @ B with fp16 inputs and fp32 accumulation (row-major),
against cublasGemmEx (same precisions), cublasHgemm (fp16 throughout) and torch.matmul."""

import numpy as np

from labnotebook import Baseline, Case, Experiment, Kernel, Launch, Tolerance, Unsupported
from labnotebook.run import cublas


def mnk(m, n=None, k=None):
    n, k = n or m, k or m
    return Case(f"{m}³" if m == n == k else f"{m}×{n}×{k}", m=m, n=n, k=k)


def inputs(case, rng):
    return {"a": rng.uniform(-1, 1, (case.m, case.k)).astype(np.float16),
            "b": rng.uniform(-1, 1, (case.k, case.n)).astype(np.float16)}


def reference(a, b):
    return {"c": a.astype(np.float64) @ b.astype(np.float64)}


def tiled(bm, bn, bk, threads, shared_bytes=0):
    def launch(case):
        if case.m % bm or case.n % bn or case.k % bk:
            raise Unsupported(f"needs M a multiple of {bm}, N of {bn} and K of {bk}; "
                              f"got {case.m}×{case.n}×{case.k}")
        return Launch(grid=(case.n // bn, case.m // bm), block=(threads,), shared_bytes=shared_bytes,
                      args=("a", "b", "c", np.int32(case.m), np.int32(case.n), np.int32(case.k)))
    return launch


def mma_smem(bm, bn, bk, stages):
    """Shared memory for mma_gemm.cuh: per stage a bm x (bk+8) tile of A and a bk x (bn+8) tile
    of B, in 2-byte halves (rows padded by 8 halves against bank conflicts)."""
    return stages * (bm * (bk + 8) + bk * (bn + 8)) * 2


def on_gpu(case, x, out_dtype):
    import pycuda.driver as cuda
    from pycuda import gpuarray

    c = gpuarray.empty((case.m, case.n), out_dtype)
    cuda.memset_d8(c.gpudata, 0xFF, c.nbytes)  # poisoned: all-ones bytes are NaN
    return gpuarray.to_gpu(x["a"]), gpuarray.to_gpu(x["b"]), c


# --8<-- [start:cublas]
def cublas_gemm_ex(case, x):
    a, b, c = on_gpu(case, x, np.float32)

    def run():  # B first: the row-major trick, as for Sgemm
        cublas.gemm_ex_f16_f32("N", "N", case.n, case.m, case.k, 1.0, b.gpudata, case.n,
                               a.gpudata, case.k, 0.0, c.gpudata, case.n)
        return {"c": c}
    return run


def cublas_hgemm(case, x):
    a, b, c = on_gpu(case, x, np.float16)

    def run():
        cublas.hgemm("N", "N", case.n, case.m, case.k, 1.0, b.gpudata, case.n,
                     a.gpudata, case.k, 0.0, c.gpudata, case.n)
        return {"c": c}
    return run
# --8<-- [end:cublas]


def torch_matmul(case, x):
    import torch

    a, b = (torch.from_numpy(x[k]).cuda() for k in "ab")
    c = torch.full((case.m, case.n), float("nan"), dtype=torch.float16, device="cuda")
    return lambda: {"c": torch.matmul(a, b, out=c)}


# fp16 output: rounding C to 11 significant bits alone costs up to 2^-11 of |C|.
FP16_OUT = Tolerance(atol=5e-3, rtol=1e-3)
# Hgemm also accumulates in fp16: partial sums of size ~sqrt(K) are rounded to 11 bits at every
# step, so errors grow with K; this bound is what K = 8192 needs, and no more.
FP16_ACCUMULATE = Tolerance(atol=2.0, rtol=1e-2)

experiment = Experiment(
    title="Matrix multiplication on tensor cores: fp16 in, fp32 accumulate",
    kernels=[Kernel("1_wmma.cu", "matmul_wmma", tiled(128, 128, 32, 256)),
             Kernel("2_mma_pipelined.cu", "matmul_mma_pipelined", tiled(128, 128, 32, 128, mma_smem(128, 128, 32, 4))),
             Kernel("3_mma_128x256.cu", "matmul_mma_128x256", tiled(128, 256, 64, 256, mma_smem(128, 256, 64, 3)))],
    cases=[mnk(1024), mnk(2048), mnk(4096), mnk(8192), mnk(1000), mnk(4096, 1024, 2048)],
    edge_cases=[mnk(128, 128, 32), mnk(256, 384, 96), mnk(256, 512, 128), mnk(17, 33, 65)],
    inputs=inputs,
    reference=reference,
    outputs={"c": np.float32},
    # fp16 x fp16 products are exact in fp32; what is left is fp32 accumulation, which tensor
    # cores do with truncation rather than rounding: up to about 1 ulp of |C| (~2e-6) per
    # 16-term step, 512 steps at K = 8192.
    tolerance=Tolerance(atol=5e-3, rtol=1e-5),
    flops=lambda case: 2 * case.m * case.n * case.k,
    baselines=[Baseline("cuBLAS GemmEx", cublas_gemm_ex),
               Baseline("cuBLAS Hgemm", cublas_hgemm, tolerance=FP16_ACCUMULATE),
               Baseline("torch", torch_matmul, requires=("torch",), tolerance=FP16_OUT)],
)
