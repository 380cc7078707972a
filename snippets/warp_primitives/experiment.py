"""Warp shuffles: a sum, a broadcast and an inclusive scan per warp, checked lane by lane,
partial warps at the end of the array included."""

import numpy as np

from labnotebook import Baseline, Experiment, Kernel, Launch, Tolerance, cdiv, sizes


def inputs(case, rng):
    # Integer-valued floats: every sum stays under 2^24, so float32 is exact and so is the check.
    return {"x": rng.integers(-1000, 1000, case.n).astype(np.float32)}


def warps(x):
    """The array as rows of 32 lanes, the last one padded with zeros (a partial warp)."""
    padded = np.zeros(-(-x.size // 32) * 32)
    padded[: x.size] = x
    return padded.reshape(-1, 32)


def reference(x):
    w = warps(x)
    return {"sums": w.sum(axis=1),
            "firsts": np.repeat(w[:, 0], 32)[: x.size],
            "scans": np.cumsum(w, axis=1).reshape(-1)[: x.size]}


def launch(case):
    return Launch(grid=(cdiv(case.n, 256),), block=(256,),
                  args=("x", "sums", "firsts", "scans", np.int32(case.n)))


def torch_version(case, x):
    import torch

    t = torch.from_numpy(warps(x["x"]).astype(np.float32)).cuda()
    n = case.n
    return lambda: {"sums": t.sum(dim=1),
                    "firsts": t[:, :1].expand(-1, 32).reshape(-1)[:n],
                    "scans": torch.cumsum(t, dim=1).reshape(-1)[:n]}


experiment = Experiment(
    title="Warp shuffles: sum, broadcast, scan",
    kernels=[Kernel("1_shuffles.cu", "warp_primitives", launch)],
    cases=sizes(2**26),
    edge_cases=sizes(1, 31, 33, 64, 1_000_003),
    inputs=inputs,
    reference=reference,
    outputs={"sums": np.float32, "firsts": np.float32, "scans": np.float32},
    tolerance=Tolerance(atol=0.0, rtol=0.0),
    # One float read; a broadcast and a scan value written per element, a sum per warp.
    bytes_moved=lambda case: 4 * (3 * case.n + -(-case.n // 32)),
    baselines=[Baseline("torch", torch_version, requires=("torch",))],
)
