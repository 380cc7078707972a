"""The same float32 add launched as a 1D grid and as a 3D grid over a (nz, ny, nx) array."""

import numpy as np

from labnotebook import Case, Experiment, Headline, Kernel, Launch, Unsupported, cdiv
from labnotebook.run.elementwise import TORCH_ADD
from labnotebook.run.exact_add import add_declaration

BLOCK_3D = (16, 8, 8)


def shape(nx, ny, nz, name=None, **params):
    return Case(name or f"{nx}x{ny}x{nz}", nx=nx, ny=ny, nz=nz, **params)


def launch_1d(case):
    n = case.nx * case.ny * case.nz
    if cdiv(n, 1024) > 2**31 - 1:
        raise Unsupported("gridDim.x is limited to 2^31 - 1 blocks of 1024 threads")
    return Launch(grid=(cdiv(n, 1024),), block=(1024,), args=("a", "b", "c", np.int64(n)))


def launch_3d(case):
    bx, by, bz = BLOCK_3D
    grid = (cdiv(case.nx, bx), cdiv(case.ny, by), cdiv(case.nz, bz))
    if max(grid[1:]) > 65535:  # the limit is what the page shows: the 1D launch has none
        raise Unsupported(f"grid {grid}: gridDim.y and gridDim.z are limited to 65535 blocks")
    if max(case.nx, case.ny, case.nz) > 2**31 - 1:
        raise Unsupported("each dimension is an int: at most 2^31 - 1")
    return Launch(grid=grid, block=BLOCK_3D,
                  args=("a", "b", "c", np.int32(case.nx), np.int32(case.ny), np.int32(case.nz)))


experiment = Experiment(
    title="Vector add in 3D: the same sum, another grid",
    kernels=[Kernel("1_add_1d.cu", "add_1d", launch_1d),
             Kernel("2_add_3d.cu", "add_3d", launch_3d)],
    cases=[shape(256, 256, 160), shape(512, 512, 512), shape(1000, 100, 100)],
    # Sizes that leave every block dimension partly empty, and the grid's limit: 8 * 65535 = 524280
    # planes need exactly 65535 blocks along z; one block more is beyond what a launch accepts.
    edge_cases=[shape(1, 1, 1), shape(17, 9, 5), shape(1001, 3, 7), shape(16, 8, 9),
                shape(1, 1, 8 * 65535), shape(1, 1, 8 * 65535 + 1),
                shape(33, 17, 9, "33x17x9 extremes", kind="extremes")],
    **add_declaration(shape=lambda case: (case.nz, case.ny, case.nx)),
    baselines=[TORCH_ADD],
    headline=Headline(case="512x512x512", baseline="torch"),
)
