"""SGEMM, C = A @ B in float32 (row-major), from a naive kernel up a ladder towards cuBLAS,
with cublasSgemm and torch.matmul (TF32 off) in the same run."""

import numpy as np

from labnotebook import Baseline, Experiment, Headline, Kernel, Launch, Tolerance, Unsupported, cdiv
from labnotebook.run import cublas, gemm
from labnotebook.run.device import sm_count
from labnotebook.run.gemm import args, gemm_declaration, mnk, split_y, tiled

SQUARE = [mnk(1024), mnk(2048), mnk(4096), mnk(8192)]
ODD = [mnk(1000), mnk(4096, 1024, 2048), mnk(1500, 700, 1100)]
# Whole waves: 528 tiles of 128x256, four for each of 132 SMs, where 4096³ leaves the fourth
# wave 16 tiles short. Rungs 10 and 11 do the same work here, a whole tile a block. And 544
# tiles of 4 steps along K: the 16 past four waves hold 64 steps, fewer than rung 11's blocks.
WAVES = [mnk(4224, 4096, 4096), mnk(4352, 4096, 64)]
# Ragged and skinny: primes near 4096 (no multiple of any tile, rows not 16-byte aligned), one
# row (a matrix-vector product) and K = 1 (an outer product). Only rung 9 and the libraries take them.
RAGGED = [mnk(4097, 4095, 4093), mnk(1, 4096, 4096), mnk(4096, 4096, 1)]
# The first rungs take seconds per product at 8192³: they are timed up to 4096³ (and verified at
# every edge and large case).
UP_TO_4096 = tuple(c.name for c in SQUARE[:3] + ODD)


def per_element(block, x_walks):
    """Launch for the rungs that check every bound themselves: one thread per element of C,
    with threadIdx.x walking down C's rows (``"m"``) or along its columns (``"n"``)."""
    def launch(case):
        x, y = (case.m, case.n) if x_walks == "m" else (case.n, case.m)
        return Launch(grid=(cdiv(x, block), *split_y(cdiv(y, block))), block=(block, block), args=args(case))
    return launch


def per_element_paths(block, x_walks, k):
    """The paths of a ``per_element`` rung: its tiles (``k``, its tile along K, 1 where it has
    none), and its y-blocks in gridDim.y alone or split along z."""
    def paths(case):
        yield from tiles((block,), (block,), (k,))(case)
        y = case.n if x_walks == "m" else case.m
        yield "y-blocks split along z" if split_y(cdiv(y, block))[1] > 1 else "y-blocks in gridDim.y"
    return paths


def any_shape(case):
    """Launch for rung 9, which guards every edge: a block per 128×128 tile, the last ones partial."""
    return Launch(grid=(cdiv(case.n, 128), *split_y(cdiv(case.m, 128))), block=(256,), args=args(case))


# Rung 10's ring in shared memory: 4 stages, each a 128x16 tile of A (stored transposed, its rows
# padded by 4 floats) and a 16x256 tile of B, in float32.
RING_BYTES = 4 * 16 * ((128 + 4) + 256) * 4


ring_tiles = tiled(128, 256, 16, 256, shared_bytes=RING_BYTES)
# Rung 11's partial sums of a split tile: 128x256 float32 per slot, two slots a block.
SLOT = 128 * 256


def stream_k_blocks(case) -> int:
    """Rung 11's blocks: one per SM, fewer where the steps along K of all tiles are fewer."""
    steps = (case.m // 128) * (case.n // 256) * max(case.k // 16, 1)
    return max(1, min(sm_count(default=132), steps))


def stream_k(case):
    """Launch for rung 11: rung 10's tiles (checked alike), one block per SM, and the workspace."""
    launch = ring_tiles(case)
    tiles = (case.m // 128) * (case.n // 256)
    if tiles > gemm.INT_MAX:
        raise Unsupported("counts its tiles in ints: at most 2^31 - 1 of them")
    return Launch(grid=(stream_k_blocks(case),), block=(256,), shared_bytes=RING_BYTES,
                  args=(*launch.args, "partials", "arrived"))


def stream_k_paths(case):
    """Rung 11's paths: rung 10's tiles, and how its blocks share them. Whole waves of tiles go
    a tile a block; the steps of the rest are cut into runs, and a split tile's runs may hold
    whole tiles, lie inside one tile or cross one tile's edge into the next; a tile is whole in
    one run, split between two blocks or among more."""
    yield from tiles((128,), (256,), (16,))(case)
    blocks, per_tile = stream_k_blocks(case), max(case.k // 16, 1)
    count = (case.m // 128) * (case.n // 256)
    if count >= blocks:
        yield "whole tiles, a wave at a time"
    steps = count % blocks * per_tile
    runs = max(1, min(blocks, steps))  # never more runs than steps: none is empty
    first = [steps * b // runs for b in range(runs + 1)]
    sharing = {}  # split tile -> blocks with steps in it
    for b in range(runs):
        lo, hi = first[b], first[b + 1]
        if hi == lo:  # no split tiles at all
            continue
        for tile in range(lo // per_tile, cdiv(hi, per_tile)):
            sharing[tile] = sharing.get(tile, 0) + 1
        whole = max(0, hi // per_tile - cdiv(lo, per_tile))
        yield "a run holding whole tiles" if whole else "a run inside one tile" if (hi - 1) // per_tile == lo // per_tile \
            else "a run across a tile's edge"
    for n in set(sharing.values()):
        yield "a tile whole in one run" if n == 1 else "a tile split between two blocks" if n == 2 \
            else "a tile split among three or more blocks"


def inputs(case, rng):
    """A and B as for every GEMM, and rung 11's workspace where its launch takes the case (the
    other rungs ignore it): two slots of partial sums a block, poisoned with NaN so that a slot
    read before it is written fails the check, and a count per tile of the blocks done with it,
    zero (the kernel sets it back to zero when a tile is finished)."""
    x = gemm.inputs(np.float32)(case, rng)
    try:
        stream_k(case)
        blocks, tiles = stream_k_blocks(case), (case.m // 128) * (case.n // 256)
    except Unsupported:
        blocks, tiles = 0, 0
    x["partials"] = np.full(2 * blocks * SLOT, np.nan, np.float32)
    x["arrived"] = np.zeros(tiles, np.int32)
    return x


def reference(a, b, partials, arrived):
    return gemm.reference(a, b)


def tiles(m, n, k):
    """A rung's code paths: along each of M, N and K, none, one or several of each of its tile
    edges there (``m``, ``n`` and ``k`` are tuples of them; 1 counts the steps of a loop that
    has no tile), the last whole or ragged."""
    def paths(case):
        for dim, edges in zip("mnk", (m, n, k)):
            size = getattr(case, dim)
            for t in edges:
                yield f"{dim}: {'none' if size == 0 else 'one' if size <= t else 'several'} of {t}, " + \
                    ("ragged" if size % t else "whole")
    return paths


def paths(case):
    """The paths every rung shares: the special inputs (each rung adds its tiles)."""
    if "kind" in case.params:
        yield case.kind


# --8<-- [start:cublas]
def cublas_sgemm(case, inputs, outputs):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]  # GPUArrays: the engine's device buffers

    # cuBLAS is column-major: it reads our row-major C (M×N) as Cᵀ (N×M). Asking it for
    # Cᵀ = Bᵀ·Aᵀ, with B passed first, gives row-major C = A·B with no transposes at all.
    # A leading dimension is at least 1, even for an A with no columns (K = 0).
    return lambda: cublas.sgemm("N", "N", case.n, case.m, case.k, 1.0, b.gpudata, case.n, a.gpudata, max(1, case.k),
                                0.0, c.gpudata, case.n)
# --8<-- [end:cublas]


def torch_matmul(case, inputs, outputs):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # float32 products, as cublasSgemm computes
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    return lambda: torch.matmul(a, b, out=c)


experiment = Experiment(
    title="Matrix multiplication in float32: from naive to near cuBLAS",
    kernels=[
        Kernel("1_naive.cu", "matmul_naive", per_element(32, x_walks="m"), timed_cases=UP_TO_4096,
               paths=per_element_paths(32, "m", 1)),
        Kernel("2_coalesced.cu", "matmul_coalesced", per_element(32, x_walks="n"), timed_cases=UP_TO_4096,
               paths=per_element_paths(32, "n", 1)),
        Kernel("3_shared_tiled.cu", "matmul_shared_tiled", per_element(16, x_walks="n"), timed_cases=UP_TO_4096,
               paths=per_element_paths(16, "n", 16)),
        Kernel("4_blocktile_1d.cu", "matmul_blocktile_1d", tiled(64, 64, 8, 512), paths=tiles((64,), (64,), (8,))),
        Kernel("5_blocktile_2d.cu", "matmul_blocktile_2d", tiled(128, 128, 8, 256, int_rows=(128, 8)),
               paths=tiles((128,), (128,), (8,))),
        Kernel("6_vectorized.cu", "matmul_vectorized", tiled(128, 128, 8, 256), paths=tiles((128,), (128,), (8,))),
        Kernel("7_warptile.cu", "matmul_warptile", tiled(128, 128, 8, 256), paths=tiles((128,), (128,), (8,))),
        Kernel("8_double_buffered.cu", "matmul_double_buffered", tiled(128, 128, 8, 256, int_rows=(0, 8), loads_ahead=True),
               paths=tiles((128,), (128,), (8,))),
        # Its float4 loads fall back to scalars where a row of A or B is not 16-byte aligned.
        Kernel("9_any_shape.cu", "matmul_any_shape", any_shape, paths=tiles((128,), (128, 4), (8, 4))),
        Kernel("10_async_ring.cu", "matmul_async_ring", ring_tiles, paths=tiles((128,), (256,), (16,))),
        Kernel("11_stream_k.cu", "matmul_stream_k", stream_k, paths=stream_k_paths),
    ],
    cases=SQUARE + ODD + WAVES + RAGGED,
    # Every rung runs at every edge case its launch accepts: rungs 1 to 3 and 9 at all of them (1×1×1
    # and sizes that are no multiple of any tile), the tiled rungs at whole tiles.
    edge_cases=[mnk(1, 1, 1), mnk(17, 33, 65), mnk(128, 256, 8), mnk(257, 129, 63), mnk(256, 384, 1000),
                mnk(128, 256, 64, kind="inf, NaN"),
                mnk(128, 256, 0),  # an empty inner dimension: C = 0, which the kernels must write
                mnk(1, 2_097_153, 1),  # rung 1's 65537 y-blocks: two along z
                # Several whole tiles, and several with a ragged last one along K.
                mnk(256), mnk(129, 257, 300),
                # Rung 10's tiles: one along K; several along M and N, and more of K than its ring holds.
                mnk(128, 256, 16), mnk(256, 512, 80),
                # Rung 11's runs, on 132 SMs: 256 steps in tiles of two, so runs of one or two
                # steps, across tiles' edges or holding a whole tile, and tiles split in two.
                mnk(2048, 2048, 32)],
    paths=paths,
    # Inputs, reference, flops and the large case as for every GEMM here (the large case's
    # tiles reach gridDim.z = 2 in every rung but 1).
    **{**gemm_declaration(np.float32), "inputs": inputs, "reference": reference},
    # Uniform(-1, 1) inputs: an element of C is a sum of K products of variance 1/9, and float32
    # rounding in any summation order leaves errors near K * 2^-24 / 3 at worst-case-ish growth
    # (1.6e-4 at K = 8192). atol 2e-3 covers every order the kernels use; TF32 (10-bit mantissa
    # products) would miss by 10x and more, so no kernel or library can use it unseen.
    tolerance=Tolerance(atol=2e-3, rtol=1e-5),
    baselines=[Baseline("cuBLAS", cublas_sgemm, arrays="pycuda"),
               Baseline("torch", torch_matmul)],
    headline=Headline(case="4096³", baseline="cuBLAS"),
)
