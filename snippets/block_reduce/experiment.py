"""Sum of 2^28 floats: a two-level block reduction, then a grid-stride float4 one, against
torch.sum, each finished inside its own launch by the last block."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from labnotebook import Baseline, Case, Experiment, Headline, Kernel, Launch, Tolerance, Unsupported, cdiv, sizes
from labnotebook.run import draw

BLOCK = 256
# Rung 2: two 1024-thread blocks fill an SM of an H100 or H200 (2048 threads). In a trial on the
# H100, 132 x 8 blocks of 256 threads ran 2% slower; our guess is the finishing block, which then
# adds 1056 partial sums instead of 264.
GRID_STRIDE_BLOCK = 1024
GRID_STRIDE_BLOCKS = 132 * 2
CHUNK = 1 << 24  # elements the reference sums at a time, per thread

# Edge cases with non-finite and extreme values, at positions in the float4 body and in the
# n % 4 tail (4096 to 4098). The whole array is one sum, so each case holds only values whose
# total no order of addition changes: never +3.4e38 and -3.4e38 together.
SPECIALS = {
    "+inf": {17: np.inf},
    "NaN": {4097: np.nan},
    "+inf and -inf": {3: np.inf, 4098: -np.inf},   # NaN
    "two 3.4e38": {100: 3.4e38, 4096: 3.4e38},     # inf: overflow, in any order
    "two -3.4e38": {0: -3.4e38, 2049: -3.4e38},    # -inf
}


def special(name):
    return Case(f"4,099 with {name}", n=4099, kind=name)


def inputs(case, rng):
    kind = case.params.get("kind")
    if kind == "subnormals":
        # Only 1e-45 (2^-149), zeros and one 2^-126: every partial sum is a multiple of 2^-149
        # below 2^-125, exact in float32 whatever the order, and lost if subnormals are flushed.
        x = np.where(draw.uniform(rng, case.n) < 0.5, np.float32(1e-45), np.float32(0.0)).astype(np.float32)
        x[1::7] = -0.0
        x[5] = np.float32(1.17549435e-38)
    else:
        x = draw.uniform(rng, case.n)
        for i, v in SPECIALS.get(kind, {}).items():
            x[i] = v
    return {"x": x,
            # Workspace: one sum per block, and the arrival counter (reset by every launch).
            "partials": np.zeros(max(cdiv(case.n, BLOCK), GRID_STRIDE_BLOCKS), dtype=np.float32),
            "counter": np.zeros(1, dtype=np.uint32)}


def _sum64(x):
    with np.errstate(invalid="ignore"):  # inf - inf is NaN, as it is meant to be
        return x.sum(dtype=np.float64)


def reference(x, partials, counter):
    # float64 sums of slices, on every core: no float64 copy of a 2^31-element input.
    with ThreadPoolExecutor(draw.threads()) as pool:
        parts = list(pool.map(lambda s: _sum64(x[s:s + CHUNK]), range(0, max(x.size, 1), CHUNK)))
    with np.errstate(invalid="ignore"):
        total = np.sum(parts)
    # Rounded to float32, as the kernels' total is: two 3.4e38 make inf there, 6.8e38 here.
    with np.errstate(over="ignore"):
        return {"total": np.array([total], dtype=np.float32).astype(np.float64)}


def args(case):
    return ("x", "partials", "counter", "total", np.int64(case.n))


def two_level(case):
    if cdiv(case.n, BLOCK) > 2**31 - 1:
        raise Unsupported("one block per 256 floats: gridDim.x stops at 2^31 - 1 blocks")
    return Launch(grid=(cdiv(case.n, BLOCK),), block=(BLOCK,), args=args(case))


def grid_stride(case):
    blocks = max(1, min(GRID_STRIDE_BLOCKS, cdiv(case.n, 4 * GRID_STRIDE_BLOCK)))
    return Launch(grid=(blocks,), block=(GRID_STRIDE_BLOCK,), args=args(case))


def torch_sum(case, inputs, outputs):
    import torch

    x, total = inputs["x"], outputs["total"]
    return lambda: torch.sum(x, dim=0, keepdim=True, out=total)


experiment = Experiment(
    title="Block reduction: summing 2^28 floats",
    kernels=[Kernel("1_two_level.cu", "sum_two_level", two_level),
             Kernel("2_grid_stride_float4.cu", "sum_grid_stride", grid_stride)],
    cases=sizes(2**28),
    edge_cases=[*sizes(1, 3, 257, 1_000_003), *(special(name) for name in SPECIALS),
                Case("4,099 subnormals", n=4099, kind="subnormals")],
    # Past 2^31 floats (8 GiB), with a tail of three floats past the last float4.
    large_cases=sizes(2**31 + 7),
    inputs=inputs,
    reference=reference,
    outputs={"total": np.float32},
    # float32 sums in another order than the float64 reference: up to a few thousand sequential
    # additions in one thread (the finishing block of rung 1 adds 4096 partials each; 32768 at
    # 2^31 + 7). Uniform positive values make rounding errors add like a random walk, about
    # sqrt(32768) * 2^-24 = 1e-5 relative; 1e-4 leaves room. A dropped element is caught at the
    # small edge sizes (1, 3, 257); at 2^28 no tolerance on one float32 total could see it.
    tolerance=Tolerance(atol=0.0, rtol=1e-4),
    bytes_moved=lambda case: 4 * case.n,
    intensity=lambda case: 1 / 4,  # one add per float read
    baselines=[Baseline("torch", torch_sum)],
    headline=Headline(case="2^28", baseline="torch"),
)
