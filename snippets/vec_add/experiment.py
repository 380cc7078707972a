"""Vector add, c = a + b in float32: the CPU against the GPU, with and without the copies."""

import numpy as np

from labnotebook import (Baseline, Case, Experiment, Kernel, Launch, PhaseProgram, PythonKernel, Tolerance, cdiv,
                         sizes)
from labnotebook.run.elementwise import TORCH_ADD, add_reference

BLOCK = 256
# Rung 2 launches a fixed grid: enough 256-thread blocks to fill every SM several times over.
FLOAT4_GRID = 132 * 8


EXTREMES = np.array([np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 1e-45, -0.0, 0.0, 1.17549435e-38],
                    dtype=np.float32)


def inputs(case, rng):
    a = rng.standard_normal(case.n, dtype=np.float32)
    b = rng.standard_normal(case.n, dtype=np.float32)
    if case.params.get("kind") == "extremes":
        # Every pairing of inf, NaN, near-overflow, subnormal and signed zeros, up front.
        k = len(EXTREMES)
        a[:k * k], b[:k * k] = np.repeat(EXTREMES, k), np.tile(EXTREMES, k)
    return {"a": a, "b": b}


def launch_naive(case):
    return Launch(grid=(cdiv(case.n, BLOCK),), block=(BLOCK,), args=("a", "b", "c", np.int32(case.n)))


def launch_float4(case):
    grid = min(FLOAT4_GRID, max(1, cdiv(case.n, 4 * BLOCK)))
    return Launch(grid=(grid,), block=(BLOCK,), args=("a", "b", "c", np.int64(case.n)))


def numpy_add(case, x):
    c = np.empty_like(x["a"])
    return lambda: {"c": np.add(x["a"], x["b"], out=c)}


experiment = Experiment(
    title="Vector add: is the GPU faster?",
    kernels=[Kernel("1_add.cu", "vec_add", launch_naive),
             Kernel("2_add_float4.cu", "vec_add_float4", launch_float4),
             PythonKernel("triton_add.py", requires=("torch", "triton"))],
    cases=[Case("10M", n=10_000_000), *sizes(*(2**k for k in range(10, 29, 2)))],
    edge_cases=[*sizes(1, 3, 255, 257, 1_000_003, 4 * BLOCK * FLOAT4_GRID + 5),
                Case("4,099 extremes", n=4099, kind="extremes")],
    inputs=inputs,
    reference=add_reference,
    outputs={"c": np.float32},
    tolerance=Tolerance(atol=0.0, rtol=0.0),
    bytes_moved=lambda case: 3 * 4 * case.n,
    baselines=[Baseline("numpy", numpy_add, device="cpu"), TORCH_ADD],
    time_transfers=True,
    phases=PhaseProgram("end_to_end.py", cases=("10M",)),
)
