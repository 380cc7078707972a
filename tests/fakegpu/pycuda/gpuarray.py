"""GPUArray: a shape and dtype over a fake device allocation."""

import numpy as np

from . import driver


class GPUArray:
    def __init__(self, shape, dtype, gpudata=None):
        self.shape, self.dtype = tuple(np.atleast_1d(shape)) if shape != () else (), np.dtype(dtype)
        self.size = int(np.prod(self.shape))
        self.nbytes = self.size * self.dtype.itemsize
        self.gpudata = gpudata or driver.mem_alloc(self.nbytes)

    def get(self):
        out = np.empty(self.shape, self.dtype)
        driver.memcpy_dtoh(out, self.gpudata)
        return out


def to_gpu(a):
    g = GPUArray(a.shape, a.dtype)
    driver.memcpy_htod(g.gpudata, a)
    return g


def empty(shape, dtype):
    return GPUArray(shape, dtype)
