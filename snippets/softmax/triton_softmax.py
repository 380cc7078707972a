"""Triton's fused softmax (its tutorial's kernel): one program per row, the row in registers."""

import triton
import triton.language as tl

from labnotebook import Unsupported

MAX_COLS = 65536  # beyond this one program's registers spill the row to local memory


# --8<-- [start:kernel]
@triton.jit
def softmax_kernel(y_ptr, x_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)                  # one program (block) per row, 64-bit:
                                                         # row * n_cols passes 2^31 - 1
    cols = tl.arange(0, BLOCK_SIZE)                      # the whole row, rounded up to 2^k
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))                    # block-wide max: Triton writes the reduction
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)
# --8<-- [end:kernel]


def prepare(case, inputs, outputs):
    if case.cols > MAX_COLS:
        raise Unsupported(f"the tutorial's kernel keeps a row in registers: at most {MAX_COLS} columns")
    block = triton.next_power_of_2(case.cols)
    warps = 4 if block < 2048 else 8 if block < 4096 else 16  # the tutorial's rule
    x, y = inputs["x"], outputs["y"]
    return lambda: softmax_kernel[(case.rows,)](y, x, case.cols, BLOCK_SIZE=block, num_warps=warps)
