"""Coalescing: the same number of useful bytes, read with a growing stride."""

import numpy as np

from labnotebook import Baseline, Case, Experiment, Kernel, Launch, Tolerance, cdiv

N = 2**24  # elements read and written per case: 64 MiB out, whatever the stride
STRIDES = (1, 2, 4, 8, 16, 32, 64)


def strided(n, stride, name=None):
    return Case(name or f"stride {stride}", n=n, stride=stride)


def inputs(case, rng):
    # Row i holds the element thread i reads, then the stride - 1 elements it skips.
    return {"x": rng.standard_normal((case.n, case.stride), dtype=np.float32)}


def reference(x):
    return {"y": x[:, 0].astype(np.float64)}


def launch(case):
    return Launch(grid=(cdiv(case.n, 256),), block=(256,),
                  args=("x", "y", np.int32(case.n), np.int32(case.stride)))


def torch_strided(case, x):
    import torch

    t = torch.from_numpy(x["x"]).cuda()
    # clone, not .contiguous(): at stride 1 the column is already contiguous and would not be copied.
    return lambda: {"y": torch.clone(t[:, 0], memory_format=torch.contiguous_format)}


experiment = Experiment(
    title="Coalescing: reading with a stride",
    kernels=[Kernel("1_strided_read.cu", "strided_read", launch)],
    cases=[strided(N, s) for s in STRIDES],
    edge_cases=[strided(1, 1, "1 element"), strided(1_000_003, 3, "1,000,003 at stride 3"),
                strided(257, 33, "257 at stride 33")],
    inputs=inputs,
    reference=reference,
    outputs={"y": np.float32},
    tolerance=Tolerance(atol=0.0, rtol=0.0),  # a copy: bit for bit
    # The useful bytes: one float read and one written per element, whatever the stride costs.
    bytes_moved=lambda case: 2 * 4 * case.n,
    baselines=[Baseline("torch", torch_strided, requires=("torch",))],
)
