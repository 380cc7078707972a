"""TMA descriptors: kernel arguments for Hopper's Tensor Memory Accelerator.

A kernel that loads tiles with ``cp.async.bulk.tensor`` takes a ``const CUtensorMap*`` per
matrix: a 128-byte descriptor in device memory, made on the host by the driver's
``cuTensorMapEncodeTiled`` from the matrix's device address, shape and the box (tile) it is
loaded by. A launch declares one as a ``TensorMap`` argument; the engine encodes it and copies
it to the GPU when it binds the launch to the case's buffers, before anything is timed. (Not by
value as a ``__grid_constant__`` parameter: PyCUDA's packing of a 128-byte struct did not reach
the kernel intact.) CUDA's rules for a descriptor are checked here, on the host, as
``Unsupported``.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from ..declare.experiment import Unsupported

# CUtensorMapDataType, CUtensorMapSwizzle and friends (cuda.h)
_DATA_TYPE = {np.dtype(np.float16): 6, np.dtype(np.float32): 7}
_SWIZZLE_128B, _INTERLEAVE_NONE, _L2_PROMOTION_256B, _FILL_ZEROS = 3, 0, 3, 0
SWIZZLE_BYTES = 128
DESCRIPTOR_BYTES = 128
MAX_BOX = 256
MAX_DIM = 2**32


@dataclass(frozen=True)
class TensorMap:
    """The descriptor of buffer ``buffer`` read as a row-major ``rows`` x ``cols`` matrix of
    ``dtype``, loaded ``box`` = (box rows, box columns) at a time into shared memory with
    128-byte swizzling. Elements outside the matrix load as zeros. The kernel receives a pointer
    to it in device memory, and acquires it (``tma_descriptor_acquire`` in hopper.cuh) before
    its first load."""

    buffer: str
    rows: int
    cols: int
    box: tuple[int, int]
    dtype: type = np.float16

    def __post_init__(self):
        item = np.dtype(self.dtype).itemsize
        if np.dtype(self.dtype) not in _DATA_TYPE:
            raise Unsupported(f"TMA descriptor of {self.buffer}: no {np.dtype(self.dtype)} here (float16 or float32)")
        if min(self.rows, self.cols) < 1:
            raise Unsupported(f"a TMA descriptor describes no empty matrix: {self.buffer} is {self.rows}×{self.cols}")
        if max(self.rows, self.cols) > MAX_DIM:
            raise Unsupported(f"a TMA descriptor's dimensions stop at 2^32: {self.buffer} is {self.rows}×{self.cols}")
        if self.cols * item % 16:
            raise Unsupported(f"TMA needs rows of a multiple of 16 bytes: {self.buffer}'s {self.cols} columns "
                              f"of {item} bytes are {self.cols * item}")
        box_rows, box_cols = self.box
        if not (1 <= box_rows <= MAX_BOX and box_cols * item == SWIZZLE_BYTES):
            raise ValueError(f"TMA box {self.box} of {self.buffer}: 1 to {MAX_BOX} rows of exactly "
                             f"{SWIZZLE_BYTES} bytes (128-byte swizzling)")

    def encode(self, address: int) -> np.ndarray:
        """The 128-byte descriptor of the matrix at device ``address``."""
        out = np.zeros(DESCRIPTOR_BYTES, np.uint8)
        u64, u32 = ctypes.c_uint64, ctypes.c_uint32
        item = np.dtype(self.dtype).itemsize
        status = _driver().cuTensorMapEncodeTiled(
            out.ctypes.data_as(ctypes.c_void_p), _DATA_TYPE[np.dtype(self.dtype)], u32(2), ctypes.c_void_p(address),
            (u64 * 2)(self.cols, self.rows), (u64 * 1)(self.cols * item),
            (u32 * 2)(self.box[1], self.box[0]), (u32 * 2)(1, 1),
            _INTERLEAVE_NONE, _SWIZZLE_128B, _L2_PROMOTION_256B, _FILL_ZEROS)
        if status != 0:
            raise RuntimeError(f"cuTensorMapEncodeTiled for {self.buffer} ({self.rows}×{self.cols}, box {self.box}) "
                               f"returned CUresult {status}")
        return out


def _driver():
    """libcuda, the driver PyCUDA has already loaded."""
    return ctypes.CDLL("libcuda.so.1")
