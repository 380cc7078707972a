"""Vector add in cuTile, against torch.add, on the vector-add entry's sizes and checks."""

import numpy as np

from labnotebook import Experiment, PythonKernel, Tolerance, sizes
from labnotebook.run.elementwise import TORCH_ADD, add_reference


def inputs(case, rng):
    return {"a": rng.standard_normal(case.n, dtype=np.float32),
            "b": rng.standard_normal(case.n, dtype=np.float32)}


experiment = Experiment(
    title="Vector add in cuTile",
    kernels=[PythonKernel("1_cutile_add.py", requires=("torch", "cuda.tile"))],
    cases=sizes(2**20, 2**24, 2**28),
    edge_cases=sizes(1, 3, 1025, 1_000_003),
    inputs=inputs,
    reference=add_reference,
    outputs={"c": np.float32},
    tolerance=Tolerance(atol=0.0, rtol=0.0),  # one float32 add, rounded once: bit-exact
    bytes_moved=lambda case: 3 * 4 * case.n,
    baselines=[TORCH_ADD],
)
