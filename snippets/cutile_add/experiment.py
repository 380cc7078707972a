"""Vector add in cuTile, against torch.add, on the vector-add entry's sizes and checks."""

import numpy as np

from labnotebook import Case, Experiment, Headline, PythonKernel, Tolerance, sizes
from labnotebook.run import draw
from labnotebook.run.elementwise import TORCH_ADD, add_reference, all_pairs


def inputs(case, rng):
    a, b = draw.normal(rng, case.n), draw.normal(rng, case.n)
    if case.params.get("kind") == "extremes":
        # Every pairing of inf, NaN, near-overflow, subnormal and signed zeros, up front.
        all_pairs(a, b)
    return {"a": a, "b": b}


experiment = Experiment(
    title="Vector add in cuTile",
    kernels=[PythonKernel("1_cutile_add.py", requires=("torch", "cuda.tile"))],
    cases=sizes(2**20, 2**24, 2**28),
    edge_cases=[*sizes(1, 3, 1025, 1_000_003), Case("4,099 extremes", n=4099, kind="extremes")],
    rowwise_reference=True,
    inputs=inputs,
    array_api_reference=True,
    reference=add_reference,
    outputs={"c": np.float32},
    tolerance=Tolerance(atol=0.0, rtol=0.0),  # one float32 add, rounded once: bit-exact
    bytes_moved=lambda case: 3 * 4 * case.n,
    intensity=lambda case: 1 / 12,  # one add per 12 bytes
    baselines=[TORCH_ADD],
    headline=Headline(case="2^28", baseline="torch"),
)
