"""(X, Y, Z) + (X, Y) + (X) with a 3D launch, and how the block's shape changes the speed."""

import numpy as np

from labnotebook import Baseline, Case, Experiment, Headline, Kernel, Launch, Tolerance, Unsupported, cdiv
from labnotebook.run import draw
from labnotebook.run.elementwise import EXTREMES
from labnotebook.run.xp import namespace

SIZE = (256, 256, 256)  # 64 MiB for a and for out: enough to fill the GPU
# (threads along z, y, x): from warps along the contiguous axis to warps across it.
SHAPES = [(1024, 1, 1), (256, 2, 2), (128, 4, 2), (64, 4, 4), (32, 8, 4), (16, 8, 8),
          (8, 8, 16), (4, 16, 16), (1, 32, 32)]
# c is added to a + b once that is rounded to float32 (the kernel's order, and PyTorch's). With
# a = b = 3.4e38 (inf once rounded), c = -inf or -3.4e38 would give NaN or inf in that order and
# -inf or 3.4e38 exactly. So beside every pair of a and b, c takes only values whose result no
# order changes (NaN, subnormals, zeros), and ±inf goes in rows where a and b are ordinary.
C_EXTREMES = np.array([np.nan, 1e-45, -0.0, 0.0, 1.17549435e-38], dtype=np.float32)
C_INF = np.array([np.inf, -np.inf], dtype=np.float32)
HEADLINE = "block 256x2x2"
# Rung 2 picks its own block (the sweep's shapes are rung 1's): 128 threads, up to 64 along a
# row's float4s, each thread doing ROWS rows (2_add_broadcast_float4.cu's ROWS). Small blocks
# (8 KiB of a and 8 of out at 256 x 256 x 256) leave a short tail when the last ones finish.
FLOAT4_THREADS = 128
ROWS = 4
MAX_GRID_YZ = 65535


def shape_case(block, size=SIZE, name=None, **params):
    bz, by, bx = block
    nx, ny, nz = size
    return Case(name or f"block {bz}x{by}x{bx}", nx=nx, ny=ny, nz=nz, bz=bz, by=by, bx=bx, **params)


def inputs(case, rng):
    x = {"a": draw.normal(rng, (case.nx, case.ny, case.nz)),
         "b": draw.normal(rng, (case.nx, case.ny)),
         "c": draw.normal(rng, case.nx)}
    if case.params.get("kind") == "extremes":
        # In the first rows a[x, y, z] = E[z] and b[x, y] = E[y] pair every two extremes, and c[x]
        # adds a third; the next rows add ±inf to ordinary a and b.
        e, k, r = EXTREMES, len(EXTREMES), len(C_EXTREMES)
        x["a"][:r, :k, :k] = e[None, None, :]
        x["b"][:r, :k] = e[None, :]
        x["c"][:r], x["c"][r:r + len(C_INF)] = C_EXTREMES, C_INF
    return x


def reference(a, b, c):
    xp = namespace(a, b, c)
    f64 = xp.float64
    with np.errstate(over="ignore", invalid="ignore"):  # inf - inf and overflow are the point
        exact = xp.astype(a, f64) + xp.astype(b, f64)[:, :, None] + xp.astype(c, f64)[:, None, None]
        # The kernel rounds to float32, so a sum past the largest float32 is inf: round those.
        rounded = xp.astype(exact, xp.float32)
    return {"out": xp.where(xp.isinf(rounded) & xp.isfinite(exact), xp.astype(rounded, f64), exact)}
# a, b, c and out all have x as their first axis: rows of x give those rows of out
# (Experiment.rowwise_reference), and written for the array API (Experiment.array_api_reference).


def launch(case):
    block = (case.bz, case.by, case.bx)
    grid = (cdiv(case.nz, case.bz), cdiv(case.ny, case.by), cdiv(case.nx, case.bx))
    if max(grid[1:]) > 65535:
        raise Unsupported(f"grid {grid}: gridDim.y and gridDim.z are limited to 65535 blocks")
    if max(case.nx, case.ny, case.nz) > 2**31 - 1:
        raise Unsupported("each dimension is an int: at most 2^31 - 1")
    return Launch(grid=grid, block=block,
                  args=("a", "b", "c", "out", np.int32(case.nx), np.int32(case.ny), np.int32(case.nz)))


def launch_float4(case):
    if max(case.nx, case.ny, case.nz) > 2**31 - 1:
        raise Unsupported("each dimension is an int: at most 2^31 - 1")
    # Threads along a row: one per float4, and at least one per head or tail float (3 at most).
    slots = max(cdiv(case.nz, 4), min(case.nz, 3))
    bx = min(64, 1 << (slots - 1).bit_length())
    by = FLOAT4_THREADS // bx
    grid = (cdiv(slots, bx), cdiv(case.ny, by * ROWS), case.nx)
    if max(grid[1:]) > MAX_GRID_YZ:
        raise Unsupported(f"grid {grid}: gridDim.y and gridDim.z are limited to 65535 blocks")
    return Launch(grid=grid, block=(bx, by, 1),
                  args=("a", "b", "c", "out", np.int32(case.nx), np.int32(case.ny), np.int32(case.nz)))


def bytes_moved(case):
    return 4 * (2 * case.nx * case.ny * case.nz + case.nx * case.ny + case.nx)  # a, out, b and c once


def torch_broadcast(case, inputs, outputs):
    import torch

    a, out = inputs["a"], outputs["out"]
    b, c = inputs["b"][:, :, None], inputs["c"][:, None, None]  # views, no copies
    return lambda: torch.add(torch.add(a, b, out=out), c, out=out)


experiment = Experiment(
    title="Add with broadcasting: (X, Y, Z) + (X, Y) + (X)",
    # Rung 2 ignores the block shape of a case: it is timed once, on the same arrays.
    kernels=[Kernel("1_add_broadcast.cu", "add_broadcast", launch),
             Kernel("2_add_broadcast_float4.cu", "add_broadcast_float4", launch_float4, timed_cases=(HEADLINE,))],
    cases=[shape_case(s) for s in SHAPES],
    # For rung 2: odd nz start each row at another offset from a 16-byte boundary; 3x5x2 has
    # rows that are all head or all tail, 7x13x20 rows of whole float4s and a part-filled block.
    edge_cases=[shape_case((32, 8, 4), (1, 1, 1), "1x1x1"), shape_case((32, 8, 4), (5, 7, 33), "5x7x33"),
                shape_case((16, 8, 8), (3, 1000, 17), "3x1000x17"), shape_case((1024, 1, 1), (2, 3, 1025), "2x3x1025"),
                shape_case((32, 8, 4), (3, 5, 2), "3x5x2"), shape_case((16, 8, 8), (7, 13, 20), "7x13x20"),
                shape_case((32, 8, 4), (9, 11, 13), "9x11x13 extremes", kind="extremes")],
    # 2^31 + 2^16 elements (16 GiB on the GPU): both rungs' 64-bit indices past 2^31.
    large_cases=[shape_case((256, 2, 2), (32769, 256, 256), "32769x256x256")],
    rowwise_reference=True,
    inputs=inputs,
    array_api_reference=True,
    reference=reference,
    outputs={"out": np.float32},
    # Two float32 roundings, (a + b) then + c, on N(0, 1) inputs: the first is at most half an
    # ulp of |a + b| < 16, i.e. 2^-21; the second at most half an ulp of the result.
    tolerance=Tolerance(atol=2.0**-21, rtol=2.0**-24),
    bytes_moved=bytes_moved,
    intensity=lambda case: 2 * case.nx * case.ny * case.nz / bytes_moved(case),  # two adds per element
    baselines=[Baseline("torch", torch_broadcast)],
    headline=Headline(case=HEADLINE, baseline="torch"),
)
