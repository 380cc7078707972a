"""Coalescing: the same number of useful bytes, read with a growing stride."""

import numpy as np

from labnotebook import Baseline, Case, Experiment, Headline, Kernel, Launch, Tolerance, Unsupported, cdiv
from labnotebook.run import draw
from labnotebook.run.elementwise import EXTREMES

N = 2**24  # elements read and written per case: 64 MiB out, whatever the stride
STRIDES = (1, 2, 4, 8, 16, 32, 64)


def strided(n, stride, name=None, **params):
    return Case(name or f"stride {stride}", n=n, stride=stride, **params)


def inputs(case, rng):
    # Row i holds the element thread i reads, then the stride - 1 elements it skips. Uniform:
    # a copy cares for no distribution, and a normal draw takes three times as long.
    x = draw.uniform(rng, (case.n, case.stride), -1, 1)
    if case.params.get("kind") == "extremes":  # a copy must carry every bit pattern through
        x[:len(EXTREMES), 0] = EXTREMES
    return {"x": x}


def reference(x):
    return {"y": x[:, 0].astype(np.float64)}


def launch(case):
    if max(case.n, case.stride) > 2**31 - 1:
        raise Unsupported("n and stride are ints: at most 2^31 - 1")
    return Launch(grid=(cdiv(case.n, 256),), block=(256,),
                  args=("x", "y", np.int32(case.n), np.int32(case.stride)))


def torch_strided(case, inputs, outputs):
    # copy_ into the output gathers the strided column into contiguous memory, as the kernel
    # does; at stride 1 the column is already contiguous and it is a plain copy.
    column, y = inputs["x"][:, 0], outputs["y"]
    return lambda: y.copy_(column)


experiment = Experiment(
    title="Coalescing: reading with a stride",
    kernels=[Kernel("1_strided_read.cu", "strided_read", launch)],
    cases=[strided(N, s) for s in STRIDES],
    edge_cases=[strided(1, 1, "1 element"), strided(1_000_003, 3, "1,000,003 at stride 3"),
                strided(257, 33, "257 at stride 33"), strided(259, 5, "259 at stride 5, extremes", kind="extremes")],
    rowwise_reference=True,  # row i of x gives element i of y
    inputs=inputs,
    reference=reference,
    outputs={"y": np.float32},
    tolerance=Tolerance(atol=0.0, rtol=0.0),  # a copy: bit for bit
    # The useful bytes: one float read and one written per element, whatever the stride costs.
    bytes_moved=lambda case: 2 * 4 * case.n,
    baselines=[Baseline("torch", torch_strided)],
    headline=Headline(case="stride 32", baseline="torch"),
)
