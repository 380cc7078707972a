"""The fixture kernels, written in NumPy against the fake device memory, by CUDA function name.
Each computes what its .cu file computes, bugs included (grid and block are ignored: the
fixtures' launches always cover their arrays)."""

import time

import numpy as np

from pycuda.driver import MEMORY, view


def add(a, b, c, n, **launch):
    n = int(n)
    view(c, np.float32)[:n] = view(a, np.float32)[:n] + view(b, np.float32)[:n]


def add_skip_last(a, b, c, n, **launch):
    n = int(n)
    view(c, np.float32)[:n - 1] = view(a, np.float32)[:n - 1] + view(b, np.float32)[:n - 1]


def write_oob(c, n, **launch):
    MEMORY[-1] = np.zeros(1)  # the context is broken from here on


def spin(*args, **launch):
    time.sleep(3600)  # the hang fixture: never returns


KERNELS = {"spin": spin, "add": add, "add_again": add, "add_wide": add, "add_shared": add, "add_skip_last": add_skip_last, "add_reads_past_end": add,
           "write_oob": write_oob, "noop": lambda *args, **launch: None,
           "fma_peak": lambda *args, **launch: None}
