"""Attention, forward pass: O = softmax(Q K^T / sqrt(D)) V per (batch, head), fp16 or bf16 in and
fp32 accumulate, from the textbook's three steps to tensor cores, against PyTorch's
scaled_dot_product_attention and a plain PyTorch composition in fp32.

Layout: Q, K and V are (B, H, N, D), contiguous. O is (B, H, N, D) in float32, for every input
type (NumPy has no bfloat16), except rung 7's, which writes O in the input type as SDPA does. Causal
masking lets query i see keys 0..i; N x N is square, so every row sees key 0 and none is ever
fully masked.
"""

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from labnotebook import Baseline, Case, Experiment, Headline, Kernel, Launch, Tolerance, Unsupported, cdiv
from labnotebook.declare.typed_output import BF16, TypedOutputKernel
from labnotebook.run import draw
from labnotebook.run.device import sm_count
from labnotebook.run.tma import TensorMap
from labnotebook.run.xp import namespace

INT_MAX = 2**31 - 1
MAX_GRID_YZ = 65535
# N and D are ints in the kernels, and loops step through them by up to 256: room to spare.
MAX_N = INT_MAX - 1024
# Rung 1 writes S, B x H x N x N floats, to global memory: up to 2^26 of them (256 MiB) here.
NAIVE_SCORES = 1 << 26
# The PyTorch composition holds S and P, each B x H x N x N floats: up to 4 GiB each.
TORCH_NAIVE_BYTES = 4 << 30
REFERENCE_CHUNK = 1 << 22  # float64 scores the reference holds per task on the host (32 MiB)
GPU_REFERENCE_CHUNK = 1 << 27  # and on the GPU (1 GiB): fewer, larger products


def shape(b, h, n, d, dtype="fp16", mask="none", kind=None):
    """A case named ``4×16×4096×128 fp16 causal``: batch, heads, sequence length, head dimension,
    then the input type and the mask. ``kind`` names special inputs."""
    name = f"{b}×{h}×{n}×{d} {dtype}" + (" causal" if mask == "causal" else "") + (f" {kind}" if kind else "")
    return Case(name, b=b, h=h, n=n, d=d, dtype=dtype, mask=mask, **({"kind": kind} if kind else {}))


def naive_fits(case):
    return case.b * case.h * case.n * case.n <= NAIVE_SCORES


# -- inputs and the reference -------------------------------------------------------------------

def fp16(s):
    return s.astype(np.float16)


def bf16(s):
    u = s.view(np.uint32)
    return ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16).view(np.int16)


# float32 values rounded to nearest (even) in the input type: fp16 as NumPy's float16; bf16,
# which NumPy lacks, as its bit patterns in int16 (the kernels and PyTorch read the same bytes as
# bfloat16). inf stays inf and NaN stays NaN in both.
NARROW = {"fp16": (fp16, np.float16), "bf16": (bf16, np.int16)}


# Every bf16 value, by its 16 bits (as unsigned): float64 holds each exactly. (Half of the NaNs
# are signalling ones, which the widening quietly makes quiet.)
with np.errstate(invalid="ignore"):
    BF16_VALUES = (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32).astype(np.float64)


def widen(x, xp):
    """The exact values of fp16 or bf16 (int16 bits) inputs, in float64, on the host or the GPU:
    the array API reinterprets no bits, so bf16 looks its value up in a table of all 65536."""
    if x.dtype != xp.int16:
        return xp.astype(x, xp.float64)
    values = xp.asarray(BF16_VALUES, device=x.device)
    bits = xp.reshape(xp.astype(x, xp.int64) & 0xFFFF, (-1,))
    return xp.reshape(xp.take(values, bits, axis=0), x.shape)


def inputs(case, rng):
    size, (fn, dtype) = (case.b, case.h, case.n, case.d), NARROW[case.dtype]
    if case.params.get("kind") != "inf, NaN":  # drawn and narrowed a slice at a time, on every core
        q, k, v = (draw.normal_as(rng, size, fn, dtype) for _ in range(3))
    else:
        q, k, v = (draw.normal(rng, size) for _ in range(3))
        # Non-causal, so that every query sees both. +inf in key 5 of head (0, 0), at column 3:
        # each query there scores +inf or -inf against it, by the sign of its column 3 (never
        # zero here): a row with +inf is NaN (inf - inf, as in PyTorch), one with -inf just skips
        # the key. NaN in value 7 of head (1, 1), at column 2: column 2 of every output row of
        # that head is NaN, whatever its weight (0 x NaN is NaN).
        col = q[0, 0, :, 3]
        col[np.abs(col) < 1e-3] = 0.5
        k[0, 0, 5, 3] = np.inf
        v[1, 1, 7, 2] = np.nan
        q, k, v = (fn(a) for a in (q, k, v))
    x = {"q": q, "k": k, "v": v,
         # reference() sees only the inputs, so the mask travels as one: a flag. (The kernels get
         # it as an int argument, the libraries from the case.)
         "causal": np.array([case.mask == "causal"], dtype=np.int8)}
    # Rung 1's S, where it runs: scratch that the other rungs ignore. It starts as random values,
    # not zeros, so that a score read before it is written makes a wrong answer.
    x["scores"] = (draw.uniform(rng, (case.b, case.h, case.n, case.n), -1, 1) if naive_fits(case)
                   else np.zeros(0, np.float32))
    return x


def reference(q, k, v, causal, scores):
    """float64 from the exact input values, a block of queries of a group of heads at a time:
    never the whole B x H x N x N of scores. Written for the array API (labnotebook.run.xp): on
    the host, blocks of 32 MiB on every core; on the GPU, blocks of 1 GiB one after another."""
    xp = namespace(q, k, v)
    b, h, n, d = q.shape
    causal = bool(causal[0])
    q3, k3, v3 = (xp.reshape(x, (b * h, n, d)) for x in (q, k, v))
    out = xp.empty((b * h, n, d), dtype=xp.float64, device=q.device)
    chunk = REFERENCE_CHUNK if xp is np else GPU_REFERENCE_CHUNK
    rows = max(1, min(n, chunk // n))  # queries per task
    heads = max(1, chunk // (rows * n))  # heads per task

    def one(task):
        g0, i0 = task
        g1, i1 = min(g0 + heads, b * h), min(i0 + rows, n)
        keys = i1 if causal else n  # causal: no query in i0:i1 sees a key past i1 - 1
        qq, kk, vv = (widen(x, xp) for x in (q3[g0:g1, i0:i1, :], k3[g0:g1, :keys, :], v3[g0:g1, :keys, :]))
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN, as intended
            s = qq @ xp.permute_dims(kk, (0, 2, 1)) / math.sqrt(d)
            if causal:
                query = xp.arange(i0, i1, device=q.device)
                future = query[:, None] < xp.arange(keys, device=q.device)[None, :]
                s = xp.where(future, -xp.inf, s)
            s = xp.exp(s - xp.max(s, axis=2, keepdims=True))
            out[g0:g1, i0:i1, :] = (s @ vv) / xp.sum(s, axis=2, keepdims=True)

    tasks = [(g, i) for g in range(0, b * h, heads) for i in range(0, n, rows)]
    if xp is np:
        with ThreadPoolExecutor(draw.threads()) as pool:
            list(pool.map(one, tasks))
    else:  # the GPU runs one block at a time anyway
        for task in tasks:
            one(task)
    return {"o": xp.reshape(out, (b, h, n, d))}


# -- launches -------------------------------------------------------------------------------------

def scalars(case):
    """n, d, scale, causal and bf16, the kernels' last arguments, after the limits every rung keeps."""
    if min(case.b, case.h, case.n, case.d) == 0:
        raise Unsupported("an empty batch, head count, sequence or head width: nothing to compute")
    if case.b > MAX_GRID_YZ or case.h > MAX_GRID_YZ:
        raise Unsupported("heads go along gridDim.y and batches along gridDim.z: at most 65535 of each")
    if case.n > MAX_N or case.d > MAX_N:
        raise Unsupported("N and D are ints: at most 2^31 - 1025 each")
    return (np.int32(case.n), np.int32(case.d), np.float32(1 / math.sqrt(case.d)),
            np.int32(case.mask == "causal"), np.int32(case.dtype == "bf16"))


def naive(case):
    if not naive_fits(case):
        raise Unsupported(f"S = Q K^T is written to global memory, B x H x N x N floats: at most 2^26 "
                          f"(256 MiB) here, and this case has {case.b * case.h * case.n * case.n:,}")
    return Launch(grid=(case.n, case.h, case.b), block=(256,), args=("q", "k", "v", "scores", "o", *scalars(case)))


def online_row(case):
    if case.d > 128:
        raise Unsupported("one output column per thread of a 128-thread block: D at most 128")
    return Launch(grid=(case.n, case.h, case.b), block=(128,), args=("q", "k", "v", "o", *scalars(case)))


def head_dims(case, what):
    """Rungs 3 to 7 are compiled for D = 64 and D = 128, with ``what`` sized for each."""
    if case.d not in (64, 128):
        raise Unsupported(f"compiled for D = 64 and D = 128 (the {what} are sized for each); got D = {case.d}")


def tiled_shared_bytes(d):
    """3_tiled.cu's shared memory, in floats times 4: 64 queries and BN keys and values (rows padded
    by one float) and the 64 x BN probabilities (padded likewise); BN is 64 for D = 64, 32 for 128."""
    bn = 64 if d == 64 else 32
    return 4 * (64 * (d + 1) + bn * (d + 1) + bn * d + 64 * (bn + 1))


def tiled(case):
    head_dims(case, "tiles")
    return Launch(grid=(cdiv(case.n, 64), case.h, case.b), block=(256,), shared_bytes=tiled_shared_bytes(case.d),
                  args=("q", "k", "v", "o", *scalars(case)))


def mma(case):
    head_dims(case, "fragments")
    if case.n % 64:
        raise Unsupported(f"whole tiles of 64 queries and 64 keys: N a multiple of 64; got N = {case.n}")
    # Q, then two stages of K and two of V: 64 rows of D + 8 halves each (16 bytes of padding).
    return Launch(grid=(case.n // 64, case.h, case.b), block=(128,), shared_bytes=5 * 64 * (case.d + 8) * 2,
                  args=("q", "k", "v", "o", *scalars(case)))


def flash2_shared_bytes(d):
    """5_flash2.cu's shared memory: 128 queries and two stages of 64 keys and 64 values, rows of
    D + 8 halves (102 KiB at D = 128: two blocks of 4 warps to an SM)."""
    return 2 * (d + 8) * (128 + 4 * 64)


def flash2(case):
    head_dims(case, "fragments")
    return Launch(grid=(cdiv(case.n, 128), case.h, case.b), block=(128,), shared_bytes=flash2_shared_bytes(case.d),
                  args=("q", "k", "v", "o", *scalars(case)))


def wgmma_shared_bytes(d):
    """6_wgmma.cu's shared memory: 128 queries and two stages of 128 keys and 128 values, rows of
    D halves (unpadded: TMA swizzles them), and 1 KiB to align them for the swizzle (161 KiB at
    D = 128: one block to an SM)."""
    return 2 * d * (128 + 4 * 128) + 1024


def tensor_maps(case):
    """Rungs 6 and 7 read Q, K and V through TMA descriptors, each as one (B H N) x D matrix loaded
    128 rows and 64 columns at a time. bf16 arrives as int16 bits: a descriptor moves 16-bit
    elements without reading them (and fills zeros past the matrix), so fp16's serves both types."""
    head_dims(case, "wgmma shapes")
    rows = case.b * case.h * case.n
    if rows > INT_MAX:
        raise Unsupported(f"TMA's row coordinates are ints: B x H x N at most 2^31 - 1; got {rows:,}")
    return [TensorMap(x, rows, case.d, box=(128, 64)) for x in "qkv"]


def wgmma(case):
    args = scalars(case)
    return Launch(grid=(cdiv(case.n, 128), case.h, case.b), block=(384,), shared_bytes=wgmma_shared_bytes(case.d),
                  args=(*tensor_maps(case), "o", *args))


def work_items(case):
    """Rung 7's work: every head's blocks of 128 queries."""
    return cdiv(case.n, 128) * case.b * case.h


def persistent(case):
    """Rung 7: rung 6's block, one to an SM (its shared memory allows no more), each taking the
    work items two at a time; its output type is the input's (``o_type``)."""
    n, d, scale, causal, bf16_ = scalars(case)
    return Launch(grid=(min(cdiv(work_items(case), 2), sm_count(default=132)),), block=(384,),
                  shared_bytes=wgmma_shared_bytes(case.d),
                  args=(*tensor_maps(case), "o", n, d, np.int32(case.b * case.h), scale, causal, bf16_))


def o_type(case):
    """O in the input type: fp16, or bf16 as its bits."""
    return {"o": np.float16 if case.dtype == "fp16" else BF16}


# -- baselines ------------------------------------------------------------------------------------

def torch_qkv(case, inputs):
    """Q, K and V as PyTorch tensors of the input type: bf16 arrives as int16 bits (the engine's
    arrays are NumPy's), and viewing the same memory as bfloat16 copies nothing."""
    import torch

    return [inputs[x].view(torch.bfloat16) if case.dtype == "bf16" else inputs[x] for x in "qkv"]


class AsFloat32:
    """A tensor of the input type that the engine reads as float32 (NumPy has no bfloat16): it
    takes a returned output's tensor with ``.detach()`` once the run is over, so the exact
    widening happens then, on the GPU, and is never timed; the check stays there too."""

    is_cuda = True

    def __init__(self, tensor):
        self.tensor = tensor

    def numel(self):
        return self.tensor.numel()

    def detach(self):
        return self.tensor.float()


def torch_sdpa(case, inputs, outputs):
    import torch.nn.functional as F

    q, k, v = torch_qkv(case, inputs)
    causal = case.mask == "causal"
    # Scale 1/sqrt(D), PyTorch's default. Its output is in the input type, not the engine's
    # float32 buffer: returned as it is.
    return lambda: {"o": AsFloat32(F.scaled_dot_product_attention(q, k, v, is_causal=causal))}


def torch_flash2(case, inputs, outputs):
    """SDPA held to its FlashAttention-2 backend: rung 5's design (mma.sync, written for Ampere)
    as its authors ship it. Left to choose, SDPA takes cuDNN's Hopper kernel instead."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if case.d % 8 or case.d > 256:
        raise Unsupported(f"FlashAttention-2 takes D a multiple of 8, up to 256; got D = {case.d}")
    q, k, v = torch_qkv(case, inputs)
    causal = case.mask == "causal"

    def run():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):  # fails, rather than falls back, if it cannot
            return {"o": AsFloat32(F.scaled_dot_product_attention(q, k, v, is_causal=causal))}
    return run


def torch_naive(case, inputs, outputs):
    import torch

    size = 4 * case.b * case.h * case.n * case.n
    if size > TORCH_NAIVE_BYTES:
        raise Unsupported(f"S and P take {size / 2**30:.0f} GiB each here: at most 4 GiB")
    q, k, v = torch_qkv(case, inputs)
    o, scale = outputs["o"], 1 / math.sqrt(case.d)
    future = None  # causal: True above the diagonal, the keys after each query
    if case.mask == "causal":
        steps = torch.arange(case.n, device=q.device)
        future = steps[None, :] > steps[:, None]

    def run():
        # What one writes first, in float32 throughout (PyTorch's default runs float32 matmuls
        # in float32, not TF32), the casts included.
        s = torch.matmul(q.float(), k.float().transpose(-2, -1)).mul_(scale)
        if future is not None:
            s.masked_fill_(future, float("-inf"))
        torch.matmul(torch.softmax(s, dim=-1), v.float(), out=o)
    return run


# -- cases, tolerances, the declaration ------------------------------------------------------------

SWEEP = [(1, 1, 128, 64), (4, 16, 512, 64), (4, 16, 1024, 64), (4, 16, 1024, 128), (4, 16, 2048, 128),
         (4, 16, 4096, 64), (4, 16, 4096, 128), (4, 16, 8192, 128)]
HEADLINE = shape(4, 16, 4096, 128)
CASES = [*(shape(*s) for s in SWEEP),
         *(shape(*s, mask="causal") for s in [(4, 16, 1024, 64), (4, 16, 4096, 128), (4, 16, 8192, 128)]),
         *(shape(*s, dtype="bf16") for s in [(4, 16, 1024, 64), (4, 16, 4096, 128)]),
         shape(4, 16, 4096, 128, dtype="bf16", mask="causal")]

# How far an element may be from the float64 reference. Rungs 1 to 3 and the PyTorch composition
# do everything in float32 from the exact input values: dot products of D terms and sums of up to
# N weights, rounded at 2^-24. A float32 emulation of rung 3 against float64 came to about 1e-6 at
# N = 8192; 2e-5 leaves room, and still sees one key dropped from 8192 (a change of about
# |v_j - o| / N, near 1e-4).
FP32 = Tolerance(atol=2e-5, rtol=2e-5)
# Rungs 4 to 7 and SDPA round P (and rung 7 and SDPA also O) to the input type: 11 significant bits for fp16, 8 for
# bf16 (unit roundoff 2^-11 and 2^-8). The weights of a row then err by up to that share, which
# shows most on short rows with large values (the first rows of a causal mask). The same
# emulation, with P rounded, stayed under a fifth of these bounds for either type; at the fp16
# bound bf16 reached nine tenths of it, so bf16 needs its own.
ROUNDED_P = {"fp16": Tolerance(atol=2e-3, rtol=2e-3), "bf16": Tolerance(atol=1.6e-2, rtol=1.6e-2)}


def paths(case):
    """The code paths every rung shares at ``case``: per template (head size and input type),
    the mask over one tile or several; several (batch, head) pairs; the special inputs.
    Each rung adds its tiles (``tiles``)."""
    kind = f"D = {case.d} {case.dtype}"
    yield f"{kind}, {case.mask} mask over {'one tile' if case.n <= 64 else 'several'}"
    if case.b * case.h > 1:
        yield f"{kind}: several (batch, head) pairs"
    if "kind" in case.params:
        yield f"{kind}: {case.kind}"


def tiles(*heights):
    """A rung's own paths, per template: one tile or several of each of its heights (of queries
    or of keys), the last whole or ragged."""
    def paths(case):
        kind = f"D = {case.d} {case.dtype}"
        for t in heights:
            yield f"{kind}: {'one' if case.n <= t else 'several'} of {t} rows, {'ragged' if case.n % t else 'whole'}"
    return paths


def items_per_block(case):
    """Rung 7's own path: whether a block takes one work item, one pair (the next Q reloaded,
    the stages' barriers carried over) or several pairs: the same code in every template."""
    items = work_items(case)
    yield "one work item a block" if items == 1 else "one pair a block" if items <= 2 * sm_count(default=132) \
        else "several pairs a block"


def flops(case):
    """2 N^2 D multiply-adds for each of Q K^T and P V per head; causal, about half of each."""
    return 4 * case.b * case.h * case.n ** 2 * case.d // (2 if case.mask == "causal" else 1)


def bytes_moved(case):
    """Q, K and V read once (2 bytes an element), O written once (float32, as rungs 1 to 6 write
    it; rung 7 writes half of that): the least traffic."""
    return (3 * 2 + 4) * case.b * case.h * case.n * case.d


def rounded_p(case):
    """Each case held to its input type's bound: fp16 rows are not let off with bf16's."""
    return ROUNDED_P[case.dtype]


experiment = Experiment(
    title="Attention, forward: from three steps to tensor cores",
    # Each rung's tiles: rung 1 walks the keys 256 at a time (its threads), rung 2 128 at a time;
    # rung 3 takes 64 queries and 64 or 32 keys, rung 4 64 and 64, rung 5 128 and 64, rungs 6 and
    # 7 128 and 128, in two stages of 128 (256).
    kernels=[Kernel("1_naive.cu", "attention_naive", naive,
                    timed_cases=tuple(c.name for c in CASES if naive_fits(c)), paths=tiles(256)),
             # Rung 2 takes half a second a launch at N = 4096 and seconds at 8192 (a block per
             # query, each reading all of K and V): its lesson shows at N = 2048 and below, where
             # it is timed (and profiled, at the largest).
             Kernel("2_online_row.cu", "attention_online_row", online_row,
                    timed_cases=tuple(c.name for c in CASES if c.n <= 2048), paths=tiles(128)),
             Kernel("3_tiled.cu", "attention_tiled", tiled, paths=tiles(32, 64)),
             Kernel("4_mma.cu", "attention_mma", mma, tolerance=rounded_p, paths=tiles(64)),
             Kernel("5_flash2.cu", "attention_flash2", flash2, tolerance=rounded_p, paths=tiles(64, 128)),
             # wgmma and setmaxnreg exist only on sm_90a.
             Kernel("6_wgmma.cu", "attention_wgmma", wgmma, tolerance=rounded_p, nvcc_options=("-arch=sm_90a",),
                    paths=tiles(128, 256)),
             # O rounded to the input type as SDPA's is: held to SDPA's bounds.
             TypedOutputKernel("7_persistent.cu", "attention_persistent", persistent, tolerance=rounded_p,
                               nvcc_options=("-arch=sm_90a",), outputs=o_type,
                               paths=lambda case: [*tiles(128, 256)(case), *items_per_block(case)])],
    cases=CASES,
    edge_cases=[
        # One of everything (rungs 3 to 6 say Unsupported at D = 1), and one query against one key.
        # Rungs 5 and 6 take every N: 1, 17, 100, 1000 and 4097 check their ragged tiles.
        shape(1, 1, 1, 1), shape(1, 1, 1, 64, "bf16", "causal"),
        shape(1, 2, 17, 64, mask="causal"), shape(2, 1, 17, 128, "bf16"),
        shape(2, 3, 1000, 64), shape(1, 2, 1000, 128, "bf16", "causal"),
        shape(1, 1, 4097, 64, mask="causal"), shape(1, 1, 4097, 128, "bf16"),
        # Whole tiles, so that every rung runs (those of 128 queries too, at 256): both types,
        # both masks, both head dimensions.
        shape(2, 2, 256, 64, mask="causal"), shape(2, 2, 256, 128, "bf16", "causal"),
        shape(1, 2, 192, 128), shape(1, 2, 192, 64, "bf16"),
        shape(2, 2, 128, 64, kind="inf, NaN"), shape(2, 2, 128, 128, "bf16", kind="inf, NaN"),
        # Ragged, with the NaN in the first rows of the head after a ragged one: rung 6's last
        # tile of head (1, 0) reads them through TMA, and must zero them before P V.
        shape(2, 2, 100, 64, kind="inf, NaN"), shape(2, 2, 100, 128, "bf16", kind="inf, NaN"),
        # The paths of the timed cases in every template, small (for the sanitizer tools, whose time grows
        # with a case's shared-memory traffic: it takes minutes at N = 4097): several whole
        # tiles of every height, and several with a ragged last one.
        shape(1, 1, 512, 64), shape(1, 1, 512, 128, mask="causal"), shape(1, 1, 512, 64, "bf16"),
        shape(1, 1, 512, 128, "bf16"), shape(1, 1, 300, 64), shape(1, 1, 300, 128, "bf16", "causal"),
        # Several whole tiles of 64 rows in every template, with either mask, for the rungs
        # whose tiles are short of 256 rows (only rung 6's two stages need N = 512).
        shape(1, 2, 128, 64, mask="causal"), shape(1, 2, 128, 128, mask="causal"), shape(1, 2, 128, 128),
        shape(1, 1, 128, 128, "bf16", "causal"),
        # More than two work items an SM, so that rung 7's blocks take several pairs, in every
        # template: ragged tiles (their values zeroed, then the stage reloaded for the next
        # item), and several blocks of queries a head, causal (an odd number of them too).
        shape(1, 280, 100, 64, mask="causal"), shape(1, 280, 100, 128, "bf16"),
        shape(2, 50, 300, 64, "bf16", "causal"), shape(1, 140, 200, 128, mask="causal"),
    ],
    paths=paths,
    # 2^31 elements in each of Q, K and V (4 GiB each; O 8 GiB, its float64 reference 16 GiB on the
    # host): every offset past 32 bits, in short sequences, so the rungs take seconds.
    large_cases=[shape(8192, 16, 128, 128)],
    inputs=inputs,
    reference=reference,
    outputs={"o": np.float32},
    tolerance=FP32,
    flops=flops,
    bytes_moved=bytes_moved,
    intensity=lambda case: flops(case) / bytes_moved(case),
    baselines=[Baseline("torch SDPA", torch_sdpa, tolerance=rounded_p),
               Baseline("torch FA2", torch_flash2, tolerance=rounded_p),
               Baseline("torch naive", torch_naive)],
    headline=Headline(case=HEADLINE.name, baseline="torch SDPA"),
    # The float64 reference runs on the GPU wherever the inputs are large (about 2 TFLOP at
    # 4×16×8192×128, seconds there, where the host would take minutes).
    array_api_reference=True,
    # Rung 2 takes most of a second a launch at 4×16×8192×128; the large case adds a minute.
    time_limit_s=1200,
)
