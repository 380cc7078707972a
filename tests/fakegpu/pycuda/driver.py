"""Device memory as host memory, kernels as NumPy functions, and events as a modelled device
clock: what a real GPU does that the protocol guards against is modelled, not switched off.

- Memory comes back uncleared: an allocation holds what the freed block it reuses held (a
  buffer's earlier contents, an earlier run's correct answer even), else garbage, so that only
  poisoning makes an element a kernel never wrote fail.
- Each operation on the one stream takes a modelled time: data in L2 (what the last operations
  touched) is read faster than from DRAM, and an operation that streams more than L2 holds (the
  timer's flush) evicts it; every ``TAIL_EVERY``-th launch is slowed ``TAIL_FACTOR`` times (a
  clock dip, a preemption), so samples have a heavy tail and their mean is not their median.
"""

import itertools
import os
from types import SimpleNamespace

import numpy as np

GARBAGE = 0x5A  # never-used memory: a large finite value in every float type (1.5e16 as float32)


class _Untouched:
    """A block no kernel or host copy has read or written yet: garbage but for the fills made
    since (``memset_d8``, ``memset_d32``, a whole-block device copy of another such block), held
    as that recipe until something reads or writes its bytes (``MEMORY[ptr]``). The same bytes
    as filling it at once, minus the cost: a copy ceiling's two 1 GiB buffers, filled and copied
    but never read, took seconds of a worker's time."""

    def __init__(self, size: int, fills: tuple = ()):
        self.size = size
        self.fills = fills  # (bytes, dtype, value): the first ``bytes`` set to ``value``, in order

    def head(self, nbytes: int) -> "_Untouched":
        """Its first ``nbytes`` (as ``block[:nbytes].copy()``)."""
        return _Untouched(min(nbytes, self.size), tuple((min(n, nbytes), t, v) for n, t, v in self.fills))

    def filled(self, nbytes: int, dtype, value) -> "_Untouched":
        """With its first ``nbytes`` set to ``value`` (a fill that covers an earlier one replaces it)."""
        nbytes = min(nbytes, self.size)
        return _Untouched(self.size, (*(f for f in self.fills if f[0] > nbytes), (nbytes, dtype, dtype(value))))

    def real(self) -> np.ndarray:
        block = np.full(self.size, GARBAGE, np.uint8)
        for n, dtype, value in self.fills:
            block[:n].view(dtype)[:] = value
        return block


class _Memory(dict):
    """Device memory by address: an array for each block, made from its recipe when first used."""

    def __getitem__(self, ptr):
        block = dict.__getitem__(self, ptr)
        if isinstance(block, _Untouched):
            block = block.real()
            dict.__setitem__(self, ptr, block)
        return block

    def get(self, ptr, default=None):
        return self[ptr] if ptr in self else default

    def untouched(self, ptr) -> _Untouched | None:
        block = dict.get(self, ptr)
        return block if isinstance(block, _Untouched) else None


MEMORY: dict[int, np.ndarray] = _Memory()
_addresses = itertools.count(1 << 20, 1 << 40)
_freed: dict[int, np.ndarray] = {}  # freed blocks by address, contents kept, for reuse


class Error(Exception):
    pass


class DeviceAllocation:
    def __init__(self, nbytes: int):
        self.ptr = next(_addresses)
        MEMORY[self.ptr] = _uncleared(max(nbytes, 1))

    def __int__(self):
        return self.ptr

    def free(self):
        block = MEMORY.pop(self.ptr, None)
        if block is not None:
            _freed[self.ptr] = block


def _uncleared(nbytes: int) -> np.ndarray:
    """``nbytes`` holding what the lowest-addressed freed block that fits held (as an allocator
    reusing address ranges in order hands them back), or garbage where none fits."""
    fits = [ptr for ptr, block in _freed.items() if block.size >= nbytes]
    if not fits:
        return _Untouched(nbytes)
    block = _freed.pop(min(fits))
    if isinstance(block, _Untouched):
        return block.head(nbytes)
    return block[:nbytes].copy()  # a copy: the rest of the block is released


def view(alloc, dtype) -> np.ndarray:
    """A kernel's view of device memory."""
    return MEMORY[int(alloc)].view(dtype)


def mem_alloc(nbytes):
    return DeviceAllocation(nbytes)


def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


# The modelled device: slow, so that a 1 GiB copy takes the timer's fewest repetitions.
DRAM_BYTES_PER_MS = 100e6
L2_BYTES_PER_MS = 400e6
LAUNCH_MS = 0.002
TAIL_EVERY, TAIL_FACTOR = 10, 20.0
_clock_ms = 0.0
_in_l2: set[int] = set()  # the allocations the last operations left in L2
_launches = itertools.count(1)


def _occupy(touched: dict[int, int], launch: bool = False) -> None:
    """Advance the device clock by one operation over ``touched`` (address: bytes)."""
    global _clock_ms, _in_l2
    cold = sum(n for ptr, n in touched.items() if ptr not in _in_l2)
    warm = sum(touched.values()) - cold
    ms = LAUNCH_MS + cold / DRAM_BYTES_PER_MS + warm / L2_BYTES_PER_MS
    if launch and next(_launches) % TAIL_EVERY == 0:
        ms *= TAIL_FACTOR
    _clock_ms += ms
    _in_l2 = set() if cold + warm >= ATTRIBUTES["L2_CACHE_SIZE"] else _in_l2 | set(touched)


def memcpy_htod(dest, src):
    b = _bytes(np.asarray(src))
    MEMORY[int(dest)][:b.size] = b
    _occupy({int(dest): b.size})


def memcpy_dtoh(dest, src):
    b = dest.reshape(-1).view(np.uint8)
    b[:] = MEMORY[int(src)][:b.size]
    _occupy({int(src): b.size})


def memcpy_dtod(dest, src, nbytes):
    to, of = MEMORY.untouched(int(dest)), MEMORY.untouched(int(src))
    if to and of and nbytes == to.size <= of.size:  # the whole block: it becomes the other's recipe
        dict.__setitem__(MEMORY, int(dest), of.head(nbytes))
    else:
        MEMORY[int(dest)][:nbytes] = MEMORY[int(src)][:nbytes]
    _occupy({int(dest): nbytes, int(src): nbytes})


def memset_d8(dest, value, count):
    block = MEMORY.untouched(int(dest))
    if block:
        dict.__setitem__(MEMORY, int(dest), block.filled(count, np.uint8, value))
    else:
        MEMORY[int(dest)][:count] = value
    _occupy({int(dest): count})


def memset_d32(dest, value, count):
    # The timer's L2 flush is never read back: filling it for real would only slow tests.
    block = MEMORY.untouched(int(dest))
    if block and block.size % 4 == 0:
        dict.__setitem__(MEMORY, int(dest), block.filled(4 * min(count, 1 << 16), np.uint32, value))
    else:
        MEMORY[int(dest)].view(np.uint32)[:min(count, 1 << 16)] = value
    _occupy({int(dest): 4 * count})


def to_device(a):
    alloc = mem_alloc(a.nbytes)
    memcpy_htod(alloc, a)
    return alloc


class Event:
    def record(self, stream=None):
        self.t = _clock_ms
        return self

    def synchronize(self):
        return self

    def time_till(self, other):
        return other.t - self.t


class _Context:
    def push(self):
        pass

    def pop(self):
        pass

    def synchronize(self):
        if MEMORY.get(-1) is not None:
            raise Error("cuCtxSynchronize failed: an illegal memory access was encountered")


device_attribute = SimpleNamespace(**{name: name for name in (
    "MULTIPROCESSOR_COUNT", "L2_CACHE_SIZE", "MAX_THREADS_PER_MULTIPROCESSOR", "MAX_BLOCKS_PER_MULTIPROCESSOR",
    "MAX_REGISTERS_PER_MULTIPROCESSOR", "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", "WARP_SIZE", "GLOBAL_MEMORY_BUS_WIDTH", "MEMORY_CLOCK_RATE",
    "CLOCK_RATE")})
function_attribute = SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES="MAX_DYNAMIC_SHARED_SIZE_BYTES")
ATTRIBUTES = {"MULTIPROCESSOR_COUNT": 132, "L2_CACHE_SIZE": 50 << 20, "MAX_THREADS_PER_MULTIPROCESSOR": 2048,
              "MAX_BLOCKS_PER_MULTIPROCESSOR": 32, "MAX_REGISTERS_PER_MULTIPROCESSOR": 65536,
              "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448,
              "WARP_SIZE": 32, "GLOBAL_MEMORY_BUS_WIDTH": 5120, "MEMORY_CLOCK_RATE": 2619000,
              "CLOCK_RATE": 1980000}


class Device:
    def __init__(self, index):
        self.index = index

    @staticmethod
    def count():
        return 1

    def name(self):
        return "NVIDIA Fake GPU"

    def compute_capability(self):
        return (9, 0)

    def get_attribute(self, attr):
        return ATTRIBUTES[attr]

    def total_memory(self):
        return 80 << 30

    def retain_primary_context(self):
        return _Context()


def init():
    pass


def get_driver_version():
    return 13000


_PROFILING = False


def start_profiler():
    global _PROFILING
    _PROFILING = True


def stop_profiler():
    global _PROFILING
    _PROFILING = False


def _profiled(name: str, grid, block) -> None:
    """Under the stand-in ncu (which names a log in FAKE_NCU_LOG), note each launch it would see,
    with the NVTX ranges it ran in."""
    log = os.environ.get("FAKE_NCU_LOG")
    if log and _PROFILING:
        from nvtx import RANGES  # tests/fakegpu/nvtx.py

        with open(log, "a") as f:
            f.write(f"{name}\t{tuple(grid)}\t{tuple(block)}\t{':'.join(RANGES)}\n")


class _Function:
    """A kernel, with a few bytes of static shared memory (a reduction's scratch, say): as on a
    real GPU, static and dynamic shared memory together get 48 KiB a block unless the kernel
    has opted in to more dynamic shared memory."""

    STATIC_SHARED = 128
    DEFAULT_SHARED = 48 * 1024

    def __init__(self, name, impl):
        self.name, self.impl = name, impl
        self.max_dynamic_shared = self.DEFAULT_SHARED - self.STATIC_SHARED

    def __call__(self, *args, grid, block, shared=0):
        if shared > self.max_dynamic_shared:
            raise Error("cuLaunchKernel failed: invalid argument")
        _profiled(self.name, grid, block)
        self.impl(*args, grid=grid, block=block)
        _occupy({int(a): MEMORY[int(a)].size for a in args if isinstance(a, DeviceAllocation) and int(a) in MEMORY},
                launch=True)

    def set_attribute(self, attr, value):
        if attr == function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES:
            self.max_dynamic_shared = value


class _Module:
    def get_function(self, name):
        from kernels import KERNELS  # tests/fakegpu/kernels.py, on PYTHONPATH beside this package

        if name not in KERNELS:
            raise Error(f"cuModuleGetFunction failed: named symbol not found: {name}")
        return _Function(name, KERNELS[name])


def module_from_file(path):
    return _Module()
