"""Softmax over the rows of a float32 matrix: a ladder of kernels, against PyTorch and NumPy."""

import bisect

import numpy as np

from labnotebook import (Baseline, Case, Experiment, Headline, Kernel, Launch, PythonKernel, Tolerance, Unsupported,
                         cdiv)
from labnotebook.run import draw
from labnotebook.run.xp import namespace

# 256 MiB in, 256 MiB out at every row length. At a quarter of that, a plain copy of the same
# bytes ran at 90% of the copy ceiling (a 1 GiB copy) on an H100, against 98% here: the L2's
# dirty lines from the flush before each repetition are written back during the kernel, and
# on a short one they weigh as much as the softmax's own difference from a copy.
SWEEP_ELEMENTS = 2**26
NUMPY_MAX = 2**28  # the CPU softmax takes tens of seconds beyond this, and the large cases are not timed
INF, NAN, BIG, TINY, MIN_NORMAL = np.inf, np.nan, np.float32(3.4e38), np.float32(1e-45), np.float32(1.17549435e-38)


def matrix(rows, cols, kind="gaussian", name=None):
    return Case(name or f"{rows}x{cols}", rows=rows, cols=cols, kind=kind)


def inputs(case, rng):
    x = draw.normal(rng, (case.rows, case.cols))
    if case.kind == "negative":  # no positive value anywhere: rung 4's bug
        x = -np.abs(x) - np.float32(1)
    elif case.kind == "large":  # exp overflows float32 without the max shift
        x *= np.float32(1e4)
    elif case.kind == "neg_inf":  # masked entries, and one row masked entirely (NaN, as in PyTorch)
        x[draw.uniform(rng, x.shape) < 0.3] = -np.inf
        x[0] = -np.inf
    elif case.kind == "extremes":
        extremes(x)
    return {"x": x}


def extremes(x):
    """Rows of non-finite and extreme values among N(0, 1) ones, each with one answer whatever
    the order of the reductions: PyTorch's max is +inf on a row with +inf, and inf - inf = NaN
    makes that whole row NaN; NaN anywhere makes its row NaN."""
    cols = x.shape[1]
    mid, last = cols // 2, cols - 1  # in the float4 body and in the scalar tail
    x[0, mid] = INF                               # NaN row
    x[1, last] = INF                              # NaN row
    x[2, mid] = NAN                               # NaN row
    x[3, [0, last]] = INF, -INF                   # NaN row
    x[4, [1, mid]] = INF, INF                     # NaN row
    x[5, mid] = BIG                               # 1 there, 0 elsewhere
    x[6, [0, last]] = BIG, BIG                    # 1/2 and 1/2
    x[7, mid] = -BIG                              # 0 there
    x[8] = -BIG                                   # uniform
    x[9, [0, mid, last]] = BIG, -BIG, -INF        # 1 at 0: -3.4e38 - 3.4e38 overflows to -inf, exp = 0
    x[10] = np.resize(np.array([TINY, -0.0, 0.0, MIN_NORMAL, -TINY], dtype=np.float32), cols)  # uniform
    x[11, last] = -INF                            # 0 there


def reference(x):
    xp = namespace(x)
    x = xp.astype(x, xp.float64)
    # A row of only -inf is NaN (-inf - -inf), and so is a row with +inf (inf - inf), as in
    # PyTorch; x - max may overflow float32 in the kernels (-3.4e38 - 3.4e38), never here.
    with np.errstate(invalid="ignore"):
        e = xp.exp(x - xp.max(x, axis=1, keepdims=True))
        return {"y": e / xp.sum(e, axis=1, keepdims=True)}
# Row by row: any slice of rows of x gives those rows of y (Experiment.rowwise_reference), and
# written for the array API, so that it runs on the GPU too (Experiment.array_api_reference).


def args(case):
    """The kernels' arguments, after the limits every rung keeps; each launch checks these first."""
    if min(case.rows, case.cols) == 0:
        raise Unsupported("an empty matrix: nothing to compute")
    if max(case.rows, case.cols) > 2**31 - 1:
        raise Unsupported("rows and cols are ints: at most 2^31 - 1 each")
    return ("x", "y", np.int32(case.rows), np.int32(case.cols))


def thread_per_row(case):
    return Launch(grid=(cdiv(case.rows, 128),), block=(128,), args=args(case))


def strided_row(case, threads):
    """One block per row, each thread striding along it by ``threads`` in an int ``j``: its last
    step, from the row's end, must not pass 2^31 - 1."""
    arguments = args(case)
    if case.cols > 2**31 - threads:
        raise Unsupported(f"each thread strides along the row by {threads} in an int: at most 2^31 - {threads} columns")
    return Launch(grid=(case.rows,), block=(threads,), args=arguments)


def block_per_row_256(case):
    return strided_row(case, 256)


def block_per_row(case):
    return strided_row(case, min(1024, 32 * cdiv(cdiv(case.cols, 8), 32)))  # about 8 elements per thread


def registers(case):
    arguments = args(case)
    if case.cols > 1024 * 4 * 8:
        raise Unsupported("a row must fit in one block's registers: at most 32768 columns")
    threads = max(32, 32 * cdiv(cdiv(case.cols, 4 * 8), 32))
    return Launch(grid=(case.rows,), block=(threads,), args=arguments)


def warp_per_row(case):
    arguments = args(case)
    if case.cols > 32 * 4 * 2:
        raise Unsupported("a row must fit in 2 float4 slots of each lane of a warp: at most 256 columns")
    # One float4 per lane across the row while it is short (consecutive lanes read consecutive
    # bytes), all 32 lanes once it is 128 floats or longer: a power of two, 1 to 32.
    lanes = min(32, 1 << (cdiv(case.cols, 4) - 1).bit_length())
    batch = 2 // cdiv(case.cols, 4 * lanes)  # rows per group of lanes, as in the kernel
    groups = cdiv(case.rows, batch)
    if groups * lanes > 2**31 - 1 - 128 or case.rows > 2**31 - 1 - 2:
        raise Unsupported("int thread and row indices: under 2^31 threads, and at most 2^31 - 3 rows")
    return Launch(grid=(cdiv(groups * lanes, 128),), block=(128,), args=(*arguments, np.int32(lanes)))


def long_rows(case, holder):
    """The limits rungs 9 and 10 share: 8 blocks a row, each holding an eighth of it (at most
    16384 floats) in its ``holder``."""
    arguments = args(case)
    if case.cols < 2048:
        raise Unsupported("meant for long rows (2048 columns and more); rungs 7 and 8 cover short ones")
    if case.cols > 8 * 16384:
        raise Unsupported(f"a row must fit in a cluster's {holder}: at most 131072 columns")
    if 8 * case.rows > 2**31 - 1:
        raise Unsupported("8 blocks a row: gridDim.x stops at 2^31 - 1 blocks, so 2^28 - 1 rows")
    return arguments


def cluster(case):
    arguments = long_rows(case, "registers")
    threads = max(32, 32 * cdiv(cdiv(cdiv(case.cols, 8), 32), 32))
    return Launch(grid=(8 * case.rows,), block=(threads,), args=arguments)


def bulk_copy(case):
    arguments = long_rows(case, "shared memory")
    # Each block's eighth of the row, in float4s, is its dynamic shared memory: 64 KiB at most.
    return Launch(grid=(8 * case.rows,), block=(512,), args=arguments, shared_bytes=16 * cdiv(cdiv(case.cols, 8), 4))


def long_aligned_rows(case):
    """The limits rungs 11 and 12 share: long rows, copied by the TMA in whole float4s."""
    arguments = args(case)
    if case.cols < 2048:
        raise Unsupported("meant for long rows (2048 columns and more); rungs 7 and 8 cover short ones")
    if case.cols % 4:
        raise Unsupported("the TMA copies whole float4s: a multiple of 4 columns, so that the row is 16-byte aligned")
    return arguments


def on_chip(case):
    arguments = long_aligned_rows(case)
    # The row's first 57344 floats (224 KiB) are the block's dynamic shared memory; past
    # them and its registers, any length (the rest is read twice).
    return Launch(grid=(case.rows,), block=(1024,), args=arguments, shared_bytes=4 * min(case.cols, 57344))


def pipelined(case):
    arguments = long_aligned_rows(case)
    if case.cols > 8 * 1024 * 4 * 4:
        raise Unsupported("a block's eighth of the row must fit in its threads' registers: at most 131072 columns")
    # 16 clusters of 8 blocks, one block an SM: as many as an H100 or H200 runs at once. A
    # cluster's 8 SMs must share a GPC, and how the chip's SMs split among its GPCs decides
    # whether 15 or 16 clusters fit; where 15 do, the 16th starts late, finds the rows gone and
    # ends. Three chunks a block.
    clusters = min(case.rows, 16)
    return Launch(grid=(8 * clusters,), block=(1024,), args=arguments, shared_bytes=3 * 16 * cdiv(cdiv(case.cols, 8), 4))


RING_THREADS, RING_VEC, RING_MAX_SLOTS = 512, 16, 4  # as in 13_prefetch_ring.cu
RING_SHARED = 227 * 1024 - 1024  # an H100's or H200's shared memory a block, less the kernel's own arrays


def ring_shape(cols):
    """Rung 13's chunk of a row (float4s a block) and how many of them its shared memory holds."""
    stride = cdiv(cdiv(cols, 8), 4)
    return stride, min(RING_MAX_SLOTS, RING_SHARED // (16 * stride))


def prefetch_ring(case):
    arguments = long_aligned_rows(case)
    if case.cols > 8 * RING_THREADS * RING_VEC * 4:
        raise Unsupported("a block's eighth of the row must fit in its threads' registers: at most 262144 columns")
    stride, slots = ring_shape(case.cols)
    # Persistent clusters, as in rung 12; as many slots as fit, each a chunk of the row.
    return Launch(grid=(8 * min(case.rows, 16),), block=(RING_THREADS,), args=(*arguments, np.int32(slots)),
                  shared_bytes=16 * stride * slots)


def ring_paths(case):
    """Rung 13's paths: how many slots its blocks cycle through (one, three or four)."""
    yield f"a ring of {ring_shape(case.cols)[1]}"


# Row lengths where a rung's block changes what it does: warps that hold a row (256 columns),
# long-row rungs from 2048, block sizes that grow with the row to 8192 and 32768 (rungs 6 and
# 7), rung 11's shared memory (57344 floats) and registers (24576 more), 131072 at most.
COLUMNS = (32, 256, 2048, 8192, 32768, 57344, 81920, 131072)


def paths(case):
    """The code paths every rung shares at ``case``: rows whole or ragged in float4s, eighths (a
    cluster's blocks), warps and the strided rungs' 256 and 1024 threads; one row, up to 16
    (rung 12's clusters) or more; the special inputs."""
    for t in (4, 32, 256, 1024):
        yield f"rows {'whole' if case.cols % t == 0 else 'ragged'} in {t}s"
    yield f"rows {'whole' if case.cols % 8 == 0 else 'ragged'} in eighths"
    yield "one row" if case.rows == 1 else "up to 16 rows" if case.rows <= 16 else "more than 16 rows"
    if case.kind:
        yield case.kind


def row_blocks(case):
    """Rows whole or ragged in 128-row blocks: a path of the rungs that give a block 128 threads
    of rows, 1 and 2 (a thread a row), and 8 (warps of rows, with ``row_span``)."""
    yield f"{'whole' if case.rows % 128 == 0 else 'ragged'} 128-row blocks"


def spans(*bounds):
    """A rung's paths by row length: the span of ``bounds`` a row falls in, where its block's
    shape, or what each thread or the block holds on chip, changes with the row's length."""
    def paths(case):
        span = bisect.bisect_left(bounds, case.cols)
        yield f"rows of up to {bounds[span]} columns" if span < len(bounds) else f"rows past {bounds[-1]} columns"
    return paths


row_span = spans(*COLUMNS)


def warp_rows(case):
    """Rung 8's paths: its block of rows and its span of row lengths (``COLUMNS``)."""
    yield from row_blocks(case)
    yield from row_span(case)


def torch_softmax(case, inputs, outputs):
    import torch

    x, y = inputs["x"], outputs["y"]
    # torch.softmax has no out=; torch._softmax (the op it calls, with half_to_float = False)
    # does, so PyTorch writes straight into the engine's output.
    return lambda: torch._softmax(x, 1, False, out=y)


def numpy_softmax(case, inputs, outputs):
    if case.rows * case.cols > NUMPY_MAX:
        raise Unsupported("the CPU softmax runs up to 2^28 elements (tens of seconds past that)")
    x, y = inputs["x"], outputs["y"]

    def run():
        with np.errstate(invalid="ignore", over="ignore"):  # NaN rows, as in PyTorch; -inf exponents
            np.subtract(x, x.max(axis=1, keepdims=True), out=y)
            np.exp(y, out=y)
            np.divide(y, y.sum(axis=1, keepdims=True), out=y)

    return run


HEADLINE = (matrix(8192, 8192), matrix(1024, 32768))
# 2^26 floats shaped as rows of 32 to 262144; its 8192 x 8192 is the first headline case.
SWEEP = [matrix(SWEEP_ELEMENTS // 2**k, 2**k) for k in range(5, 19)]

experiment = Experiment(
    title="Softmax: the whole ladder, against PyTorch",
    kernels=[
        Kernel("1_naive.cu", "softmax_naive", thread_per_row, paths=row_blocks),
        Kernel("2_online.cu", "softmax_online", thread_per_row, paths=row_blocks),
        Kernel("3_shared_tree.cu", "softmax_shared_tree", block_per_row_256),
        Kernel("4_atomicmax_walkthrough.cu", "softmax_atomicmax", block_per_row_256,
               expected_failure="atomicMax on the float's int bits orders negative floats backwards: "
                                "on a row with no positive value the maximum stays -inf and every "
                                "output is NaN"),
        Kernel("5_atomicmax_fixed.cu", "softmax_atomicmax_fixed", block_per_row_256),
        # Where each of rungs 6 to 12 changes with the row's length: rung 6's block grows to 1024
        # threads (8 elements each) at 8192 columns, then loops; rung 7's (32 a thread) to 32768;
        # rung 9's blocks keep 32 threads up to 8192 columns; rung 10's threads hold one float4
        # up to 16384; rung 11 holds 57344 floats in shared memory, then 24576 in registers,
        # then reads the rest twice; rung 12's threads hold one to four float4s, one more every
        # 32768 columns.
        Kernel("6_warp_shuffle.cu", "softmax_warp_shuffle", block_per_row, paths=spans(256, 8192)),
        Kernel("7_float4_registers.cu", "softmax_float4_registers", registers, paths=spans(1024, 32768)),
        Kernel("8_warp_per_row.cu", "softmax_warp_per_row", warp_per_row, paths=warp_rows),
        Kernel("9_cluster.cu", "softmax_cluster", cluster, paths=spans(8192, 131072)),
        Kernel("10_bulk_copy.cu", "softmax_bulk_copy", bulk_copy, nvcc_options=("-arch=sm_90a",),
               paths=spans(16384, 131072)),
        Kernel("11_on_chip.cu", "softmax_on_chip", on_chip, nvcc_options=("-arch=sm_90a",),
               paths=spans(57344, 81920)),
        Kernel("12_pipelined.cu", "softmax_pipelined", pipelined, nvcc_options=("-arch=sm_90a",),
               paths=spans(32768, 65536, 98304, 131072)),
        Kernel("13_prefetch_ring.cu", "softmax_prefetch_ring", prefetch_ring, nvcc_options=("-arch=sm_90a",),
               paths=ring_paths),
        PythonKernel("triton_softmax.py", requires=("torch", "triton")),
    ],
    cases=[*HEADLINE, *(c for c in SWEEP if c.name not in {h.name for h in HEADLINE})],
    edge_cases=[
        matrix(1, 1), matrix(1, 1000), matrix(4096, 1), matrix(3, 1023), matrix(5, 4097),
        matrix(2, 100_003), matrix(2, 131072),
        matrix(64, 512, "negative", name="64x512 all negative"),
        matrix(64, 2048, "large", name="64x2048 |x| ~ 1e4"),
        matrix(64, 1000, "neg_inf", name="64x1000 with -inf"),
        # +inf, NaN, ±3.4e38 and subnormals, row by row (see extremes()): short rows with
        # float4 loads, and long rows (the cluster's) of odd length.
        matrix(16, 1000, "extremes", name="16x1000 extremes"),
        matrix(16, 4099, "extremes", name="16x4099 extremes"),
        # Long enough for all three of rung 11's parts (shared memory, registers, read twice),
        # and past the 131072 columns every other fast rung stops at.
        matrix(12, 131072, "extremes", name="12x131072 extremes"),
        matrix(8, 100_000, "neg_inf", name="8x100000 with -inf"),
        matrix(3, 300_000),
        # Row lengths the timed cases have and the others not, for the sanitizer tools: they then
        # run these and the other small ones, but not the long rows above where a rung takes
        # none of them (racecheck takes minutes over those).
        matrix(3, 200), matrix(2, 20_000), matrix(2, 65_536),
        # Rung 8's rows whole in warps' 32s and in 256s, and rows of up to 8192 columns in
        # whole float4s for rungs 11 and 12, as at their timed cases.
        matrix(130, 256), matrix(3, 4100),
        # The special inputs in long rows of whole float4s, short of the 131072 columns above:
        # for rungs 10 to 12, which take racecheck tens of seconds there.
        matrix(12, 2052, "extremes", name="12x2052 extremes"), matrix(2, 2048, "neg_inf", name="2x2048 with -inf"),
        # One long row in each of the spans of rungs 6 and 9 to 12 past 16384 columns, whole in
        # float4s: a fraction of the work of the cases above that take the same spans.
        matrix(1, 32772), matrix(1, 60000), matrix(1, 98308),
        # The longest row rung 13 takes: one slot of shared memory, sixteen float4s a thread.
        matrix(1, 262144),
    ],
    paths=paths,
    # 2^31 elements (8 GiB in, 8 GiB out): short rows (rung 7, Triton) and long ones
    # (rung 9), with rows * cols past every 32-bit index.
    large_cases=[matrix(2097152, 1024), matrix(16384, 131072)],
    rowwise_reference=True,
    array_api_reference=True,
    inputs=inputs,
    reference=reference,
    outputs={"y": np.float32},
    # float32 throughout, with sums of up to 300000 terms (a single thread's, in rungs 1 and 2).
    tolerance=Tolerance(atol=1e-9, rtol=2e-4),
    bytes_moved=lambda case: 2 * 4 * case.rows * case.cols,  # read once, write once: the least
    # Per element: a max, a subtraction, an exp, an add to the sum and a scale, one flop each.
    intensity=lambda case: 5 / 8,
    baselines=[Baseline("torch", torch_softmax),
               Baseline("numpy", numpy_softmax, device="cpu", timed_cases=tuple(c.name for c in HEADLINE))],
    headline=Headline(case="8192x8192", baseline="torch"),
    time_limit_s=900,  # two cases of 2^31 elements, checked on the CPU where torch is missing
)
