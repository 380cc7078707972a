"""The add in Triton: the tutorial's kernel, launched on the engine's torch tensors."""

import triton
import triton.language as tl

BLOCK_SIZE = 1024


# --8<-- [start:kernel]
@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0).to(tl.int64)             # blockIdx.x, 64-bit: offsets pass 2^31
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # a whole block's indices at once
    mask = offsets < n                                   # the `if (i < n)` guard, per element
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(c_ptr + offsets, a + b, mask=mask)
# --8<-- [end:kernel]


# --8<-- [start:launch]
def prepare(case, inputs, outputs):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    grid = (triton.cdiv(case.n, BLOCK_SIZE),)            # gridDim.x
    return lambda: add_kernel[grid](a, b, c, case.n, BLOCK_SIZE=BLOCK_SIZE)
# --8<-- [end:launch]
