"""A fixture for the site tests: a declaration whose results the tests write in every state
(fresh, stale, failed, corrupt, missing). Copied under several names; never run on a GPU."""

import numpy as np

from labnotebook import Baseline, Case, Experiment, Headline, Kernel, Launch, Tolerance, cdiv


def launch(case):
    return Launch(grid=(cdiv(case.n, 256),), block=(256,), args=("a", "b", np.int32(case.n)))


def torch_copy(case, inputs, outputs):
    return lambda: outputs["b"].copy_(inputs["a"])


experiment = Experiment(
    title="Site fixture",
    kernels=[Kernel("1_copy.cu", "copy", launch)],
    cases=[Case("small", n=1000), Case("2^20", n=1 << 20)],
    edge_cases=[Case("one", n=1)],
    inputs=lambda case, rng: {"a": rng.standard_normal(case.n, dtype=np.float32)},
    reference=lambda a: {"b": a.astype(np.float64)},
    outputs={"b": np.float32},
    tolerance=Tolerance(atol=0.0, rtol=0.0),
    bytes_moved=lambda case: 8 * case.n,
    baselines=[Baseline("torch", torch_copy)],
    headline=Headline("2^20", "torch"),
)
