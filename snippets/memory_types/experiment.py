"""Memory types: the same tile-mirrored polynomial, with its data held in registers, static
shared memory, dynamic shared memory and constant memory."""

import numpy as np

from labnotebook import Case, Experiment, Headline, Kernel, Launch, Tolerance, cdiv, sizes
from labnotebook.run import draw
from labnotebook.run.elementwise import EXTREMES

TILE = 256


def inputs(case, rng):
    # Small integers: p(v) is then a multiple of 1/8 below 2^17, exact in float32.
    x = np.rint(draw.uniform(rng, case.n, -100, 100))
    if case.params.get("kind") == "extremes":  # at both ends of a tile, and in its middle
        x[:len(EXTREMES)], x[TILE - len(EXTREMES):TILE], x[300:300 + len(EXTREMES)] = EXTREMES, EXTREMES, EXTREMES
    return {"x": x}


def reference(x):
    i = np.arange(x.size)
    start = i // TILE * TILE
    end = np.minimum(start + TILE, x.size)
    v = x[start + end - 1 - i].astype(np.float64)
    # Horner's form, as the kernels evaluate it: at v = -inf the sum of powers would be
    # -inf + inf = NaN where the kernels get -inf. Then rounded to float32 as the kernels' result
    # is: p(±3.4e38) overflows to ±inf there, and 1 + a subnormal is 1.
    with np.errstate(over="ignore", invalid="ignore"):
        return {"y": (1 + v * (0.5 + v * (0.25 + v * 0.125))).astype(np.float32).astype(np.float64)}


def launch(shared_bytes=0):
    def make(case):
        return Launch(grid=(cdiv(case.n, TILE),), block=(TILE,), args=("x", "y", np.int64(case.n)),
                      shared_bytes=shared_bytes)
    return make


experiment = Experiment(
    title="Memory types: registers, shared, constant",
    kernels=[Kernel("1_registers.cu", "mirror_poly_registers", launch()),
             Kernel("2_shared_static.cu", "mirror_poly_shared_static", launch()),
             Kernel("3_shared_dynamic.cu", "mirror_poly_shared_dynamic", launch(4 * TILE)),
             Kernel("4_constant.cu", "mirror_poly_constant", launch())],
    cases=sizes(2**26),
    edge_cases=[*sizes(1, 255, 257, 1_000_003), Case("333 extremes", n=333, kind="extremes")],
    inputs=inputs,
    reference=reference,
    outputs={"y": np.float32},
    tolerance=Tolerance(atol=0.0, rtol=0.0),
    bytes_moved=lambda case: 8 * case.n,
    headline=Headline(case="2^26", baseline="1_registers"),
)
