"""Memory types: the same tile-mirrored polynomial, with its data held in registers, static
shared memory, dynamic shared memory and constant memory."""

import numpy as np

from labnotebook import Experiment, Kernel, Launch, Tolerance, cdiv, sizes

TILE = 256


def inputs(case, rng):
    # Small integers: p(v) is then a multiple of 1/8 below 2^17, exact in float32.
    return {"x": rng.integers(-100, 101, case.n).astype(np.float32)}


def reference(x):
    i = np.arange(x.size)
    start = i // TILE * TILE
    end = np.minimum(start + TILE, x.size)
    v = x[start + end - 1 - i].astype(np.float64)
    return {"y": 1 + v / 2 + v**2 / 4 + v**3 / 8}


def launch(shared_bytes=0):
    def make(case):
        return Launch(grid=(cdiv(case.n, TILE),), block=(TILE,), args=("x", "y", np.int32(case.n)),
                      shared_bytes=shared_bytes)
    return make


experiment = Experiment(
    title="Memory types: registers, shared, constant",
    kernels=[Kernel("1_registers.cu", "mirror_poly_registers", launch()),
             Kernel("2_shared_static.cu", "mirror_poly_shared_static", launch()),
             Kernel("3_shared_dynamic.cu", "mirror_poly_shared_dynamic", launch(4 * TILE)),
             Kernel("4_constant.cu", "mirror_poly_constant", launch())],
    cases=sizes(2**26),
    edge_cases=sizes(1, 255, 257, 1_000_003),
    inputs=inputs,
    reference=reference,
    outputs={"y": np.float32},
    tolerance=Tolerance(atol=0.0, rtol=0.0),
    bytes_moved=lambda case: 8 * case.n,
)
