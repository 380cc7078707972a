"""Softmax over the rows of a float32 matrix: a ladder of kernels, against PyTorch and NumPy."""

import numpy as np

from labnotebook import (Baseline, Case, Experiment, Kernel, Launch, PythonKernel, Tolerance, Unsupported,
                         cdiv)

SWEEP_ELEMENTS = 2**24  # 64 MiB in, 64 MiB out: well past the L2 at every row length


def matrix(rows, cols, kind="gaussian", name=None):
    return Case(name or f"{rows}x{cols}", rows=rows, cols=cols, kind=kind)


def inputs(case, rng):
    x = rng.standard_normal((case.rows, case.cols), dtype=np.float32)
    if case.kind == "negative":  # no positive value anywhere: rung 4's bug
        x = -np.abs(x) - np.float32(1)
    elif case.kind == "large":  # exp overflows float32 without the max shift
        x *= np.float32(1e4)
    elif case.kind == "neg_inf":  # masked entries, and one row masked entirely (NaN, as in PyTorch)
        x[rng.random(x.shape) < 0.3] = -np.inf
        x[0] = -np.inf
    return {"x": x}


def reference(x):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore"):  # a row of only -inf is NaN, as in PyTorch
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return {"y": e / e.sum(axis=1, keepdims=True)}


def args(case):
    return ("x", "y", np.int32(case.rows), np.int32(case.cols))


def thread_per_row(case):
    return Launch(grid=(cdiv(case.rows, 128),), block=(128,), args=args(case))


def block_per_row_256(case):
    return Launch(grid=(case.rows,), block=(256,), args=args(case))


def block_per_row(case):
    threads = min(1024, 32 * cdiv(cdiv(case.cols, 8), 32))  # about 8 elements per thread
    return Launch(grid=(case.rows,), block=(threads,), args=args(case))


def registers(case):
    if case.cols > 1024 * 4 * 8:
        raise Unsupported("a row must fit in one block's registers: at most 32768 columns")
    threads = max(32, 32 * cdiv(cdiv(case.cols, 4 * 8), 32))
    return Launch(grid=(case.rows,), block=(threads,), args=args(case))


def warp_per_row(case):
    if case.cols > 32 * 4 * 8:
        raise Unsupported("a row must fit in one warp's registers: at most 1024 columns")
    # One float4 per lane across the row while it is short (consecutive lanes read consecutive
    # bytes), all 32 lanes once it is 128 floats or longer: a power of two, 1 to 32.
    lanes = min(32, 1 << (cdiv(case.cols, 4) - 1).bit_length())
    batch = 8 // cdiv(case.cols, 4 * lanes)  # rows per group of lanes, as in the kernel
    groups = cdiv(case.rows, batch)
    return Launch(grid=(cdiv(groups * lanes, 256),), block=(256,), args=(*args(case), np.int32(lanes)))


def cluster(case):
    if case.cols < 2048:
        raise Unsupported("meant for long rows (2048 columns and more); rungs 7 and 8 cover short ones")
    if case.cols > 8 * 512 * 4 * 8:
        raise Unsupported("a row must fit in a cluster's registers: at most 131072 columns")
    threads = max(32, 32 * cdiv(cdiv(cdiv(case.cols, 8), 32), 32))
    return Launch(grid=(8 * case.rows,), block=(threads,), args=args(case))


def torch_softmax(case, x):
    import torch

    t = torch.from_numpy(x["x"]).cuda()
    return lambda: {"y": torch.softmax(t, dim=1)}


def numpy_softmax(case, x):
    v = x["x"]

    def run():
        with np.errstate(invalid="ignore"):
            e = np.exp(v - v.max(axis=1, keepdims=True))
            return {"y": e / e.sum(axis=1, keepdims=True)}

    return run


HEADLINE = (matrix(8192, 8192), matrix(1024, 32768))

experiment = Experiment(
    title="Softmax: the whole ladder, against PyTorch",
    kernels=[
        Kernel("1_naive.cu", "softmax_naive", thread_per_row),
        Kernel("2_online.cu", "softmax_online", thread_per_row),
        Kernel("3_shared_tree.cu", "softmax_shared_tree", block_per_row_256),
        Kernel("4_atomicmax_walkthrough.cu", "softmax_atomicmax", block_per_row_256,
               expected_failure="atomicMax on the float's int bits orders negative floats backwards: "
                                "on a row with no positive value the maximum stays -inf and every "
                                "output is NaN"),
        Kernel("5_atomicmax_fixed.cu", "softmax_atomicmax_fixed", block_per_row_256),
        Kernel("6_warp_shuffle.cu", "softmax_warp_shuffle", block_per_row),
        Kernel("7_float4_registers.cu", "softmax_float4_registers", registers),
        Kernel("8_warp_per_row.cu", "softmax_warp_per_row", warp_per_row),
        Kernel("9_cluster.cu", "softmax_cluster", cluster),
        PythonKernel("triton_softmax.py", requires=("torch", "triton")),
    ],
    cases=[*HEADLINE, *(matrix(SWEEP_ELEMENTS // 2**k, 2**k) for k in range(5, 18))],
    edge_cases=[
        matrix(1, 1), matrix(1, 1000), matrix(4096, 1), matrix(3, 1023), matrix(5, 4097),
        matrix(2, 100_003), matrix(2, 131072),
        matrix(64, 512, "negative", name="64x512 all negative"),
        matrix(64, 2048, "large", name="64x2048 |x| ~ 1e4"),
        matrix(64, 1000, "neg_inf", name="64x1000 with -inf"),
    ],
    inputs=inputs,
    reference=reference,
    outputs={"y": np.float32},
    # float32 throughout, with sums of up to 131072 terms (a single thread's, in rungs 1 and 2).
    tolerance=Tolerance(atol=1e-9, rtol=2e-4),
    bytes_moved=lambda case: 2 * 4 * case.rows * case.cols,  # read once, write once: the least
    baselines=[Baseline("torch", torch_softmax, requires=("torch",)),
               Baseline("numpy", numpy_softmax, device="cpu", timed_cases=tuple(c.name for c in HEADLINE))],
    time_limit_s=540,
)
