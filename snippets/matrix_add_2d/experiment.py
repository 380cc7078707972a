"""Matrix add over a 2D grid: the first kernel with two indices."""

import numpy as np

from labnotebook import Case, Experiment, Kernel, Launch, Tolerance, cdiv
from labnotebook.run.elementwise import TORCH_ADD, add_reference

BLOCK = (16, 16)


def matrix(rows, cols):
    return Case(f"{rows}x{cols}", rows=rows, cols=cols)


def inputs(case, rng):
    return {k: rng.standard_normal((case.rows, case.cols), dtype=np.float32) for k in "ab"}


def launch(case):
    return Launch(grid=(cdiv(case.cols, BLOCK[0]), cdiv(case.rows, BLOCK[1])), block=BLOCK,
                  args=("a", "b", "c", np.int32(case.rows), np.int32(case.cols)))


experiment = Experiment(
    title="Hello CUDA in 2D: a matrix add",
    kernels=[Kernel("1_add_2d.cu", "matrix_add", launch)],
    cases=[matrix(1024, 2048), matrix(8192, 8192)],
    edge_cases=[matrix(1, 1), matrix(17, 33), matrix(1023, 2049), matrix(2049, 1), matrix(1, 4099)],
    inputs=inputs,
    reference=add_reference,
    outputs={"c": np.float32},
    tolerance=Tolerance(atol=0.0, rtol=0.0),
    bytes_moved=lambda case: 3 * 4 * case.rows * case.cols,
    baselines=[TORCH_ADD],
)
