"""fp16 GEMM on tensor cores, C = A @ B with fp16 inputs and fp32 accumulation (row-major),
against cublasGemmEx (same precisions), cublasHgemm (fp16 throughout) and torch.matmul."""

from dataclasses import replace

import numpy as np

from labnotebook import Baseline, Experiment, Headline, Kernel, Launch, Tolerance, Unsupported, cdiv
from labnotebook.declare.typed_output import TypedOutputKernel
from labnotebook.run import cublas
from labnotebook.run.case_arrays import poisoned
from labnotebook.run.device import sm_count
from labnotebook.run.gemm import INT_MAX, MAX_DIM, args, gemm_declaration, mnk, split_y, tiled
from labnotebook.run.tma import TensorMap


def tma_operands(case, bm: int, tma_store: bool = False) -> tuple:
    """The Hopper rungs' arguments: A and B as TMA descriptors loaded 64 along K at a time (bm
    rows of A a load, 64-column slabs of B), C (with ``tma_store``, fp16 C's descriptor, stored in
    64 x 64 boxes), M, N and K. TMA zero-fills past the matrix's edges, so any M; its rows must
    be multiples of 16 bytes."""
    if case.n % 8 or case.k % 8:
        raise Unsupported(f"TMA reads rows of a multiple of 16 bytes: N and K multiples of 8; "
                          f"got {case.m}×{case.n}×{case.k}")
    if min(case.m, case.n, case.k) == 0:
        raise Unsupported("a TMA descriptor describes no empty matrix: M, N and K at least 1")
    if max(case.m, case.n, case.k) > MAX_DIM:
        raise Unsupported("M, N and K are ints, counted in tiles: each below 2^31 - 257")
    output = TensorMap("c", case.m, case.n, box=(64, 64)) if tma_store else "c"
    return (TensorMap("a", case.m, case.k, box=(bm, 64)), TensorMap("b", case.k, case.n, box=(64, 64)),
            output, np.int32(case.m), np.int32(case.n), np.int32(case.k))


def stages_bytes(bm, bn, stages):
    """fp16 stages of a bm x 64 tile of A and a 64 x bn tile of B, and 1 KB to align them for the swizzle."""
    return stages * (bm + bn) * 64 * 2 + 1024


def wgmma_tiles(bm, bn, threads, stages):
    """Launch for rungs 4 and 5: one block per bm x bn tile of C, in a 1-D grid (the kernel
    orders the tiles)."""
    def launch(case):
        operands = tma_operands(case, bm)
        tiles = cdiv(case.m, bm) * cdiv(case.n, bn)
        if tiles > INT_MAX:
            raise Unsupported(f"one block per {bm}×{bn} tile of C: at most 2^31 - 1 tiles")
        return Launch(grid=(tiles,), block=(threads,), shared_bytes=stages_bytes(bm, bn, stages), args=operands)
    return launch


def persistent_tiles(bm, bn, threads, stages, cluster, tma_store=False, share="b"):
    """Launch for the persistent rungs: clusters of ``cluster`` blocks, each cluster's tile
    ``cluster`` bm x bn tiles one above the other (``share`` "b": they share B's columns) or
    side by side ("a": they share A's rows, each loading bm / cluster of them), and as many
    clusters as the GPU's SMs hold (one block an SM), fewer where there are fewer tiles.
    ``tma_store``: C is fp16, stored by the TMA in 64 x 64 boxes from shared memory (bm x bn
    halves of it a block)."""
    def launch(case):
        operands = tma_operands(case, bm // cluster if share == "a" else bm, tma_store)
        cm, cn = (1, cluster) if share == "a" else (cluster, 1)
        tiles = cdiv(case.m, cm * bm) * cdiv(case.n, cn * bn)
        clusters = min(tiles, sm_count(default=132) // cluster)
        if tiles + clusters > INT_MAX:
            raise Unsupported(f"a cluster steps through its {cm * bm}×{cn * bn} tiles in ints: "
                              f"fewer than 2^31 - 1 - {clusters} of them")
        shared = stages_bytes(bm, bn, stages) + (bm * bn * 2 if tma_store else 0)
        return Launch(grid=(cluster * clusters,), block=(threads,), shared_bytes=shared, args=operands)
    return launch


def sized_tiles(case):
    """Launch for rung 9: rung 7's launch, or, where rung 7's tiles would leave over half the
    clusters idle, 128 x 64 tiles through 8 stages in clusters side by side (passed last: 1)."""
    wide = persistent_tiles(128, 256, 384, 3, cluster=2, tma_store=True)(case)
    narrow = wide.grid[0] // 2 < sm_count(default=132) // 2 / 2  # its clusters of two, against the GPU's
    launch = persistent_tiles(128, 64, 384, 8, cluster=2, tma_store=True, share="a")(case) if narrow else wide
    return replace(launch, args=(*launch.args, np.int32(narrow)))


def mma_smem(bm, bn, bk, stages):
    """Shared memory for mma_gemm.cuh: per stage a bm x (bk+8) tile of A and a bk x (bn+8) tile
    of B, in 2-byte halves (rows padded by 8 halves against bank conflicts)."""
    return stages * (bm * (bk + 8) + bk * (bn + 8)) * 2


def any_shape(case):
    """Launch for rung 8, which guards every edge: a block per 128×128 tile of C, the last ones
    partial, y-blocks past 65535 along z."""
    return Launch(grid=(cdiv(case.n, 128), *split_y(cdiv(case.m, 128))), block=(128,),
                  shared_bytes=mma_smem(128, 128, 32, 4), args=args(case))


# --8<-- [start:cublas]
def cublas_gemm_ex(case, inputs, outputs):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]  # GPUArrays: fp16 A and B, fp32 C

    # B first: the row-major trick, as for Sgemm.
    return lambda: cublas.gemm_ex_f16_f32("N", "N", case.n, case.m, case.k, 1.0, b.gpudata, case.n,
                                          a.gpudata, case.k, 0.0, c.gpudata, case.n)


def cublas_hgemm(case, inputs, outputs):
    a, b = inputs["a"], inputs["b"]
    c = poisoned(outputs["c"], np.float16)  # fp16 throughout, C too: not the engine's fp32 buffer

    def run():
        cublas.hgemm("N", "N", case.n, case.m, case.k, 1.0, b.gpudata, case.n,
                     a.gpudata, case.k, 0.0, c.gpudata, case.n)
        return {"c": c}
    return run
# --8<-- [end:cublas]


def torch_matmul(case, inputs, outputs):
    import torch

    a, b = inputs["a"], inputs["b"]
    # torch.matmul of fp16 writes fp16, not into the engine's fp32 buffer: NaN where unwritten.
    c = torch.full((case.m, case.n), float("nan"), dtype=torch.float16, device="cuda")
    return lambda: {"c": torch.matmul(a, b, out=c)}


# fp16 output: rounding C to 11 significant bits alone costs up to 2^-11 of |C|.
FP16_OUT = Tolerance(atol=5e-3, rtol=1e-3)
# Hgemm also accumulates in fp16: partial sums of size ~sqrt(K) are rounded to 11 bits at every
# step, so errors grow with K; this bound is what K = 8192 needs, and no more.
FP16_ACCUMULATE = Tolerance(atol=2.0, rtol=1e-2)

HOPPER = ("-arch=sm_90a",)  # wgmma and setmaxnreg exist only on sm_90a

experiment = Experiment(
    title="Matrix multiplication on tensor cores: fp16 in, fp32 accumulate",
    kernels=[Kernel("1_wmma.cu", "matmul_wmma", tiled(128, 128, 32, 256, int_rows=(128, 32))),
             Kernel("2_mma_pipelined.cu", "matmul_mma_pipelined",
                    tiled(128, 128, 32, 128, int_rows=(128, 32), shared_bytes=mma_smem(128, 128, 32, 4))),
             Kernel("3_mma_128x256.cu", "matmul_mma_128x256",
                    tiled(128, 256, 64, 256, int_rows=(128, 64), shared_bytes=mma_smem(128, 256, 64, 3))),
             Kernel("4_wgmma_tma.cu", "matmul_wgmma_tma", wgmma_tiles(128, 128, 128, 4), nvcc_options=HOPPER),
             Kernel("5_warp_specialized.cu", "matmul_wgmma_specialized", wgmma_tiles(128, 256, 384, 4),
                    nvcc_options=HOPPER),
             Kernel("6_persistent.cu", "matmul_persistent", persistent_tiles(128, 256, 384, 4, cluster=2),
                    nvcc_options=HOPPER),
             TypedOutputKernel("7_half_output.cu", "matmul_persistent_half",
                    persistent_tiles(128, 256, 384, 3, cluster=2, tma_store=True),
                    nvcc_options=HOPPER, outputs={"c": np.float16}, tolerance=FP16_OUT),
             Kernel("8_any_shape.cu", "matmul_mma_any_shape", any_shape),
             TypedOutputKernel("9_sized_tiles.cu", "matmul_sized_tiles", sized_tiles, nvcc_options=HOPPER,
                               outputs={"c": np.float16}, tolerance=FP16_OUT)],
    # 4097×4095×4093: primes near 4096, no multiple of any tile and rows of no multiple of 16
    # bytes: only rung 8 and the libraries take it.
    cases=[mnk(1024), mnk(2048), mnk(4096), mnk(8192), mnk(1000), mnk(4096, 1024, 2048), mnk(4097, 4095, 4093)],
    # Whole tiles for every rung; ragged tiles that only the TMA rungs and rung 8 take (one row;
    # M, N and K all past a tile's edge, K short of one 64-wide k-tile); then sizes only rung 8,
    # cuBLAS and torch take (the other rungs say Unsupported): 1×1×1 and N or K no multiple of 8.
    # 17152×128×192 is 67 tiles of 256×256 for the persistent rungs' clusters, one more than the
    # 66 clusters of 132 SMs (an H100's or H200's): one cluster takes two, three k-tiles each, so
    # its blocks' rings of 4 stages wrap from one tile into the next. 384×4096×16 is rung 9's
    # narrow tiles at their widest use, 32 clusters' worth of rung 7's tiles: 96 of its own
    # 128×128 cluster tiles for 66 clusters, so its rings wrap too, each k-tile short of 64.
    edge_cases=[mnk(128, 128, 32), mnk(256, 384, 96), mnk(256, 512, 128), mnk(128, 256, 64, kind="inf, NaN"),
                mnk(17152, 128, 192), mnk(384, 4096, 16), mnk(1, 256, 64), mnk(200, 264, 72), mnk(130, 8, 8, kind="inf, NaN"),
                mnk(1, 1, 1), mnk(17, 33, 65), mnk(257, 129, 63)],
    **gemm_declaration(np.float16),  # inputs, reference, flops and the large case, as for every GEMM here
    # fp16 x fp16 products are exact in fp32; what is left is fp32 accumulation, which tensor
    # cores do with truncation rather than rounding: up to about 1 ulp of |C| (~2e-6) per
    # 16-term step, 512 steps at K = 8192.
    tolerance=Tolerance(atol=5e-3, rtol=1e-5),
    baselines=[Baseline("cuBLAS GemmEx", cublas_gemm_ex, arrays="pycuda"),
               Baseline("cuBLAS Hgemm", cublas_hgemm, arrays="pycuda", tolerance=FP16_ACCUMULATE),
               Baseline("torch", torch_matmul, tolerance=FP16_OUT)],
    headline=Headline(case="4096³", baseline="cuBLAS Hgemm"),
)
