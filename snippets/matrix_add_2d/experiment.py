"""Matrix add over a 2D grid: the first kernel with two indices."""

import numpy as np

from labnotebook import Case, Experiment, Headline, Kernel, Launch, Unsupported, cdiv
from labnotebook.run.elementwise import TORCH_ADD
from labnotebook.run.exact_add import add_declaration

BLOCK = (16, 16)
MAX_GRID_Y = 65535  # past 65535 x 16 rows, the kernel's threads walk on down the rows
# Rung 2: 128 threads a block, each with PER_THREAD float4s of a and of b (2_add_2d_float4.cu's
# PER_THREAD): 1024 floats a block, as the vector-add entry's Triton add.
FLOAT4_THREADS = 128
PER_THREAD = 2
MAX_GRID_X = 2**31 - 1


def matrix(rows, cols, kind=None):
    if kind:
        return Case(f"{rows}x{cols} {kind}", rows=rows, cols=cols, kind=kind)
    return Case(f"{rows}x{cols}", rows=rows, cols=cols)


def launch(case):
    if max(case.rows, case.cols) > 2**31 - 1:
        raise Unsupported("rows and cols are ints: at most 2^31 - 1 each")
    grid = (cdiv(case.cols, BLOCK[0]), min(cdiv(case.rows, BLOCK[1]), MAX_GRID_Y))
    return Launch(grid=grid, block=BLOCK, args=("a", "b", "c", np.int32(case.rows), np.int32(case.cols)))


def launch_float4(case):
    # One flat array: a block per 1024 floats (at least one, for the tail of a matrix under 4 floats).
    grid = max(1, cdiv(case.rows * case.cols // 4, FLOAT4_THREADS * PER_THREAD))
    if grid > MAX_GRID_X:
        raise Unsupported(f"{grid} blocks of {4 * FLOAT4_THREADS * PER_THREAD} floats: gridDim.x stops at 2^31 - 1")
    return Launch(grid=(grid,), block=(FLOAT4_THREADS,),
                  args=("a", "b", "c", np.int64(case.rows), np.int64(case.cols)))


experiment = Experiment(
    title="Hello CUDA in 2D: a matrix add",
    kernels=[Kernel("1_add_2d.cu", "matrix_add", launch),
             Kernel("2_add_2d_float4.cu", "matrix_add_float4", launch_float4)],
    cases=[matrix(1024, 2048), matrix(8192, 8192)],
    # 1048577 rows need 65537 blocks along y, two more than a launch takes: rung 1's rows loop
    # covers the rest. For rung 2's flat float4s: 1, 2 (3x2) and 3 (1x4099) floats past the last
    # whole float4, and none (1000x1002, whose last block is partly full).
    edge_cases=[matrix(1, 1), matrix(17, 33), matrix(1023, 2049), matrix(2049, 1), matrix(1, 4099),
                matrix(1048577, 1), matrix(3, 2), matrix(1000, 1002), matrix(37, 41, "extremes")],
    # 2^31 + 2048 elements (24 GiB on the GPU): rung 1's 64-bit index and rows loop together, and
    # rung 2's flat index past 2^31.
    large_cases=[matrix(1048577, 2048)],
    **add_declaration(shape=lambda case: (case.rows, case.cols)),
    baselines=[TORCH_ADD],
    headline=Headline(case="8192x8192", baseline="torch"),
)
