"""What the float32 add experiments (vector, 3D, matrix) declare alike: the inputs, the exact
reference, the bit-exact tolerance, the bytes moved and the intensity."""
# Beside elementwise.py rather than in it: the experiments that import that module alone are not
# keyed on this one.

from __future__ import annotations

import math

import numpy as np

from . import draw
from ..declare.experiment import Tolerance
from .elementwise import add_reference, all_pairs


def add_declaration(shape) -> dict:
    """The Experiment fields of ``c = a + b`` in float32 over arrays of ``shape(case)``: uniform
    inputs in [-1, 1) (a third of the time a normal draw takes, which is most of a large case's),
    with every pairing of inf, NaN, near-overflow, subnormal and signed zeros up front in the
    cases of kind "extremes"; the exact reference, met bit for bit; 12 bytes moved and one add
    per element."""
    def inputs(case, rng):
        a, b = draw.uniform(rng, shape(case), -1, 1), draw.uniform(rng, shape(case), -1, 1)
        if case.params.get("kind") == "extremes":
            all_pairs(a, b)
        return {"a": a, "b": b}
    return dict(inputs=inputs, rowwise_reference=True, array_api_reference=True, reference=add_reference,
                outputs={"c": np.float32}, tolerance=Tolerance(atol=0.0, rtol=0.0),
                bytes_moved=lambda case: 3 * 4 * math.prod(shape(case)), intensity=lambda case: 1 / 12)
