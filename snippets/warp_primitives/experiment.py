"""Warp shuffles: a sum, a broadcast and an inclusive scan per warp, checked lane by lane,
partial warps at the end of the array included."""

import numpy as np

from labnotebook import Baseline, Case, Experiment, Headline, Kernel, Launch, Tolerance, cdiv, sizes
from labnotebook.run import draw

NAN, INF, BIG, TINY, MIN_NORMAL = np.nan, np.inf, 3.4e38, 1e-45, 1.17549435e-38
# Warps of non-finite and extreme values, each placed so that its sums and prefix sums come out
# the same in any order of addition (the shuffle tree's, cumsum's, float64's): never +3.4e38
# and -3.4e38 in one warp, and subnormals only among zeros and subnormals, one 2^-126 at most,
# so every partial sum is a multiple of 2^-149 below 2^-125: exact in float32. (Beside integers,
# or summed past 2^-125, they would round away in some orders and not in others.)
# Each warp: what its other lanes hold, and {lane: value}.
EXTREME_WARPS = [
    ("integers", {0: INF}),              # every firsts is inf, and every prefix
    ("integers", {5: -INF}),
    ("integers", {0: NAN}),              # NaN broadcast, and NaN in every prefix
    ("integers", {3: INF, 20: -INF}),    # inf, then NaN from lane 20 on
    ("integers", {1: BIG, 30: BIG}),     # 3.4e38, then inf from lane 30 on (overflow)
    ("integers", {0: -BIG, 2: -BIG}),    # -3.4e38, then -inf
    ("zeros", {**{lane: [TINY, -0.0, 0.0, TINY, -TINY][lane % 5] for lane in range(32)}, 7: MIN_NORMAL}),
    ("integers", {5: NAN}),              # the partial last warp (lanes 0 to 5): its last lane
]


def inputs(case, rng):
    # Integer-valued floats: every sum stays under 2^24, so float32 is exact and so is the check.
    x = np.floor(draw.uniform(rng, case.n, -1000, 1000))
    if case.params.get("kind") == "extremes":
        for w, (others, lanes) in enumerate(EXTREME_WARPS):
            warp = x[32 * w:32 * (w + 1)]
            if others == "zeros":
                warp[:] = 0.0
            for lane, v in lanes.items():
                warp[lane] = v
    return {"x": x}


def warps(x):
    """The array as rows of 32 lanes, the last one padded with zeros (a partial warp)."""
    padded = np.zeros(cdiv(x.size, 32) * 32)
    padded[: x.size] = x
    return padded.reshape(-1, 32)


def reference(x):
    w = warps(x)
    with np.errstate(invalid="ignore"):  # inf - inf is the point
        sums, scans = w.sum(axis=1), np.cumsum(w, axis=1).reshape(-1)[: x.size]
    # Rounded to float32, as the kernel's sums are: two 3.4e38 overflow to inf there (exact
    # integers and subnormal sums are unchanged).
    with np.errstate(over="ignore"):
        return {"sums": sums.astype(np.float32).astype(np.float64),
                "firsts": np.repeat(w[:, 0], 32)[: x.size],
                "scans": scans.astype(np.float32).astype(np.float64)}


def launch(case):
    return Launch(grid=(cdiv(case.n, 256),), block=(256,),
                  args=("x", "sums", "firsts", "scans", np.int64(case.n)))


def torch_version(case, inputs, outputs):
    import torch

    x, sums, firsts, scans = inputs["x"], outputs["sums"], outputs["firsts"], outputs["scans"]
    n, full = case.n, case.n // 32 * 32  # whole warps, then the partial one (if any)
    whole = x[:full].view(-1, 32)

    def run():
        torch.sum(whole, dim=1, out=sums[: full // 32])
        firsts[:full].view(-1, 32).copy_(whole[:, :1].expand(-1, 32))
        torch.cumsum(whole, dim=1, out=scans[:full].view(-1, 32))
        if full < n:
            torch.sum(x[full:], dim=0, keepdim=True, out=sums[full // 32:])
            firsts[full:].copy_(x[full:full + 1].expand(n - full))
            torch.cumsum(x[full:], dim=0, out=scans[full:])

    return run


experiment = Experiment(
    title="Warp shuffles: sum, broadcast, scan",
    kernels=[Kernel("1_shuffles.cu", "warp_primitives", launch)],
    cases=sizes(2**26),
    edge_cases=[*sizes(1, 31, 33, 64, 1_000_003), Case("230 extremes", n=230, kind="extremes")],
    inputs=inputs,
    reference=reference,
    outputs={"sums": np.float32, "firsts": np.float32, "scans": np.float32},
    tolerance=Tolerance(atol=0.0, rtol=0.0),
    # One float read; a broadcast and a scan value written per element, a sum per warp.
    bytes_moved=lambda case: 4 * (3 * case.n + cdiv(case.n, 32)),
    baselines=[Baseline("torch", torch_version)],
    headline=Headline(case="2^26", baseline="torch"),
)
