"""Sum of 2^28 floats: a two-level block reduction, then a grid-stride float4 one, against
torch.sum, each finished inside its own launch by the last block."""

import numpy as np

from labnotebook import Baseline, Experiment, Kernel, Launch, Tolerance, cdiv, sizes

BLOCK = 256
# Rung 2: two 1024-thread blocks fill an SM of an H100 or H200 (2048 threads). In a trial on the
# H100, 132 x 8 blocks of 256 threads ran 2% slower; our guess is the finishing block, which then
# adds 1056 partial sums instead of 264.
GRID_STRIDE_BLOCK = 1024
GRID_STRIDE_BLOCKS = 132 * 2


def inputs(case, rng):
    return {"x": rng.random(case.n, dtype=np.float32),
            # Workspace: one sum per block, and the arrival counter (reset by every launch).
            "partials": np.zeros(max(cdiv(case.n, BLOCK), GRID_STRIDE_BLOCKS), dtype=np.float32),
            "counter": np.zeros(1, dtype=np.uint32)}


def reference(x, partials, counter):
    return {"total": np.array([x.astype(np.float64).sum()])}


def args(case):
    return ("x", "partials", "counter", "total", np.int64(case.n))


def two_level(case):
    return Launch(grid=(cdiv(case.n, BLOCK),), block=(BLOCK,), args=args(case))


def grid_stride(case):
    blocks = min(GRID_STRIDE_BLOCKS, cdiv(case.n, 4 * GRID_STRIDE_BLOCK))
    return Launch(grid=(blocks,), block=(GRID_STRIDE_BLOCK,), args=args(case))


def torch_sum(case, x):
    import torch

    t = torch.from_numpy(x["x"]).cuda()
    return lambda: {"total": t.sum().reshape(1)}


experiment = Experiment(
    title="Block reduction: summing 2^28 floats",
    kernels=[Kernel("1_two_level.cu", "sum_two_level", two_level),
             Kernel("2_grid_stride_float4.cu", "sum_grid_stride", grid_stride)],
    cases=sizes(2**28),
    edge_cases=sizes(1, 3, 257, 1_000_003),
    inputs=inputs,
    reference=reference,
    outputs={"total": np.float32},
    # float32 sums in another order than the float64 reference: up to a few thousand sequential
    # additions in one thread (the finishing block of rung 1 adds 4096 partials each). Uniform
    # positive values make rounding errors add like a random walk, about sqrt(4096) * 2^-24 =
    # 4e-6 relative; 1e-4 leaves room. A dropped element is caught at the small edge sizes
    # (1, 3, 257); at 2^28 no tolerance on one float32 total could see it.
    tolerance=Tolerance(atol=0.0, rtol=1e-4),
    bytes_moved=lambda case: 4 * case.n,
    baselines=[Baseline("torch", torch_sum, requires=("torch",))],
)
