"""{title}.

What the engine needs from this file (docs/authoring.md has the whole contract):

- ``inputs(case, rng)`` returns the case's inputs as a dict of NumPy arrays: fresh random data
  (never zeros), drawn from ``rng`` so a run can be repeated. ``draw.normal``/``draw.uniform``
  fill large arrays on every core.
- ``reference(**inputs)`` returns a dict with one float64 array per name in ``outputs``: the
  answer in higher precision. Every element of every kernel's output is compared with it.
- ``launch(case)`` returns a ``Launch``: grid, block and the kernel's arguments (a string names a
  buffer, an input or an output; anything else is passed by value, so give it a NumPy type).
  Raise ``Unsupported("why")`` for a case the kernel cannot take.
- The tolerance says how far an element may be from the reference: ``atol + rtol * |ref|``.
"""

import numpy as np

from labnotebook import Baseline, Case, Experiment, Headline, Kernel, Launch, Tolerance, cdiv, sizes
from labnotebook.run import draw
from labnotebook.run.elementwise import EXTREMES

BLOCK = 256
ALPHA = np.float32(1.5)


def inputs(case, rng):
    x = draw.normal(rng, case.n)
    if case.params.get("kind") == "extremes":  # non-finite and extreme values must come out as PyTorch's do
        x[:EXTREMES.size] = EXTREMES
    return {{"x": x}}


def reference(x):
    # The exact product, rounded once to float32 as a correct kernel rounds it: overflow and all.
    with np.errstate(over="ignore", invalid="ignore"):
        return {{"y": (np.float64(ALPHA) * x.astype(np.float64)).astype(np.float32).astype(np.float64)}}


def launch(case):
    return Launch(grid=(cdiv(case.n, BLOCK),), block=(BLOCK,), args=("x", "y", ALPHA, np.int64(case.n)))


def torch_scale(case, inputs, outputs):
    import torch

    return lambda: torch.mul(inputs["x"], float(ALPHA), out=outputs["y"])


experiment = Experiment(
    title="{title}",
    kernels=[Kernel("1_{name}.cu", "{name}", launch)],
    cases=sizes(2**20, 2**24, 2**26),
    edge_cases=[*sizes(1, 3, 257, 1_000_003), Case("16 extremes", n=16, kind="extremes")],
    inputs=inputs,
    reference=reference,
    rowwise_reference=True,  # element by element: any slice of x gives that slice of y
    outputs={{"y": np.float32}},
    tolerance=Tolerance(atol=0.0, rtol=0.0),  # one float32 multiply, rounded once: bit-exact
    bytes_moved=lambda case: 2 * 4 * case.n,  # read x, write y
    baselines=[Baseline("torch", torch_scale)],
    headline=Headline(case="2^26", baseline="torch"),
)
