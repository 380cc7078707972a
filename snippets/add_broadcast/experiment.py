"""(X, Y, Z) + (X, Y) + (X) with a 3D launch, and how the block's shape changes the speed."""

import numpy as np

from labnotebook import Baseline, Case, Experiment, Kernel, Launch, Tolerance, Unsupported, cdiv

SIZE = (256, 256, 256)  # 64 MiB for a and for out: enough to fill the GPU
# (threads along z, y, x): from warps along the contiguous axis to warps across it.
SHAPES = [(1024, 1, 1), (256, 2, 2), (128, 4, 2), (64, 4, 4), (32, 8, 4), (16, 8, 8),
          (8, 8, 16), (4, 16, 16), (1, 32, 32)]


def shape_case(block, size=SIZE, name=None):
    bz, by, bx = block
    nx, ny, nz = size
    return Case(name or f"block {bz}x{by}x{bx}", nx=nx, ny=ny, nz=nz, bz=bz, by=by, bx=bx)


def inputs(case, rng):
    return {"a": rng.standard_normal((case.nx, case.ny, case.nz), dtype=np.float32),
            "b": rng.standard_normal((case.nx, case.ny), dtype=np.float32),
            "c": rng.standard_normal(case.nx, dtype=np.float32)}


def reference(a, b, c):
    return {"out": a.astype(np.float64) + b[:, :, None] + c[:, None, None]}


def launch(case):
    block = (case.bz, case.by, case.bx)
    grid = (cdiv(case.nz, case.bz), cdiv(case.ny, case.by), cdiv(case.nx, case.bx))
    if max(grid[1:]) > 65535:
        raise Unsupported(f"grid {grid}: gridDim.y and gridDim.z are limited to 65535 blocks")
    return Launch(grid=grid, block=block,
                  args=("a", "b", "c", "out", np.int32(case.nx), np.int32(case.ny), np.int32(case.nz)))


def torch_broadcast(case, x):
    import torch

    a, b, c = (torch.from_numpy(x[k]).cuda() for k in "abc")
    out = torch.empty_like(a)
    bb, cc = b[:, :, None], c[:, None, None]
    return lambda: {"out": torch.add(torch.add(a, bb, out=out), cc, out=out)}


experiment = Experiment(
    title="Add with broadcasting: (X, Y, Z) + (X, Y) + (X)",
    kernels=[Kernel("1_add_broadcast.cu", "add_broadcast", launch)],
    cases=[shape_case(s) for s in SHAPES],
    edge_cases=[shape_case((32, 8, 4), (1, 1, 1), "1x1x1"), shape_case((32, 8, 4), (5, 7, 33), "5x7x33"),
                shape_case((16, 8, 8), (3, 1000, 17), "3x1000x17"), shape_case((1024, 1, 1), (2, 3, 1025), "2x3x1025")],
    inputs=inputs,
    reference=reference,
    outputs={"out": np.float32},
    # Two float32 roundings, (a + b) then + c, on N(0, 1) inputs: the first is at most half an
    # ulp of |a + b| < 16, i.e. 2^-21; the second at most half an ulp of the result.
    tolerance=Tolerance(atol=2.0**-21, rtol=2.0**-24),
    bytes_moved=lambda case: 4 * (2 * case.nx * case.ny * case.nz + case.nx * case.ny + case.nx),
    baselines=[Baseline("torch", torch_broadcast, requires=("torch",))],
)
