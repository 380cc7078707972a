"""Vector add, c = a + b in float32: the CPU against the GPU, with and without the copies."""

import numpy as np

from labnotebook import (Baseline, Case, Experiment, Headline, Kernel, Launch, PhaseProgram, PythonKernel,
                         Unsupported, cdiv, sizes)
from labnotebook.run.elementwise import TORCH_ADD
from labnotebook.run.exact_add import add_declaration

BLOCK = 256
# Rung 2 launches a fixed grid: enough 256-thread blocks to fill every SM several times over.
FLOAT4_GRID = 132 * 8
INT_MAX = 2**31 - 1
NUMPY_MAX = 2**28  # the CPU add takes seconds beyond this, and the large cases are not timed


def launch_naive(case):
    if case.n > INT_MAX:  # the textbook kernel, kept as it is written: int n, int i
        raise Unsupported("32-bit int index: at most 2^31 - 1 elements")
    return Launch(grid=(cdiv(case.n, BLOCK),), block=(BLOCK,), args=("a", "b", "c", np.int32(case.n)))


def launch_float4(case):
    grid = min(FLOAT4_GRID, max(1, cdiv(case.n, 4 * BLOCK)))
    return Launch(grid=(grid,), block=(BLOCK,), args=("a", "b", "c", np.int64(case.n)))


def numpy_add(case, inputs, outputs):
    if case.n > NUMPY_MAX:
        raise Unsupported("the CPU add runs up to 2^28 elements (seconds each past that)")
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    return lambda: np.add(a, b, out=c)


experiment = Experiment(
    title="Vector add: is the GPU faster?",
    kernels=[Kernel("1_add.cu", "vec_add", launch_naive),
             Kernel("2_add_float4.cu", "vec_add_float4", launch_float4),
             PythonKernel("triton_add.py", requires=("torch", "triton"))],
    cases=[Case("10M", n=10_000_000), *sizes(*(2**k for k in range(10, 29, 2)))],
    edge_cases=[*sizes(1, 3, 255, 257, 1_000_003, 4 * BLOCK * FLOAT4_GRID + 5),
                Case("4,099 extremes", n=4099, kind="extremes")],
    # Past 2^31 elements (24 GiB on the GPU), with a tail of one float past the last float4.
    large_cases=sizes(2**31 + 5),
    **add_declaration(shape=lambda case: (case.n,)),
    baselines=[Baseline("numpy", numpy_add, device="cpu"), TORCH_ADD],
    headline=Headline(case="2^28", baseline="torch"),
    time_transfers=True,
    phases=PhaseProgram("end_to_end.py", cases=("10M",)),
)
