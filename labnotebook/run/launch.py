"""A CUDA kernel's launch, made ready to run: its grid and block checked against CUDA's limits
before anything is launched (``launch_dims``), its arguments resolved to device memory, and the
geometry kept for the row (``CudaLaunch.shape``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..declare.experiment import Launch, Unavailable, Unsupported
from ..errors import ExperimentError
from ..results.format import LaunchShape
from .needs import MOST_SHARED_PER_BLOCK
from .tma import TensorMap

# CUDA's launch limits, the same on every GPU since compute capability 3.0 (the CUDA C
# Programming Guide's table of technical specifications).
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024

Dims = tuple[int, int, int]


class InvalidLaunch(Exception):
    """A launch() whose grid or block CUDA would refuse: a limit its launch() did not declare."""


def launch_dims(launch: Launch, max_shared: int | None = None) -> tuple[Dims, Dims]:
    """``launch``'s grid and block as three dimensions each, checked before anything is launched.
    A grid with no blocks (a size of 0: ``cdiv(0, 256)``) has nothing to run and is declared
    Unsupported; a dimension past CUDA's limits raises InvalidLaunch naming it, where the GPU
    would only say "invalid argument"."""
    dims = {}
    for what, given, limits in (("grid", launch.grid, MAX_GRID), ("block", launch.block, MAX_BLOCK)):
        if not 1 <= len(given) <= 3:
            raise InvalidLaunch(f"{what} {tuple(given)}: one to three dimensions")
        padded = tuple(int(d) for d in given) + (1,) * (3 - len(given))
        for axis, (d, most) in enumerate(zip(padded, limits)):
            if what == "grid" and d == 0:
                raise Unsupported(f"grid {padded} has no blocks: nothing to launch at this size")
            if not 1 <= d <= most:
                raise InvalidLaunch(f"{what} {padded}: {what}Dim.{'xyz'[axis]} must be 1 to {most}; "
                                    "declare the limit in launch() with Unsupported")
        dims[what] = padded
    threads = dims["block"][0] * dims["block"][1] * dims["block"][2]
    if threads > MAX_THREADS_PER_BLOCK:
        raise InvalidLaunch(f"block {dims['block']}: {threads} threads, at most {MAX_THREADS_PER_BLOCK} a block")
    if launch.shared_bytes < 0 or launch.shared_bytes > MOST_SHARED_PER_BLOCK:
        raise InvalidLaunch(f"{launch.shared_bytes} bytes of dynamic shared memory: "
                            f"no GPU gives a block more than {MOST_SHARED_PER_BLOCK}")
    if max_shared is not None and launch.shared_bytes > max_shared:  # a bigger GPU's launch
        raise Unavailable(f"needs {launch.shared_bytes} bytes of shared memory a block; "
                          f"this GPU gives a block at most {max_shared}")
    return dims["grid"], dims["block"]


@dataclass(frozen=True)
class CudaLaunch:
    """A CUDA kernel ready to launch: calling it launches it once, with ``launch``'s geometry."""

    function: Any  # the loaded PyCUDA function
    args: tuple
    grid: Dims
    block: Dims
    launch: Launch  # as declared: the row records its grid and block as they were given
    # The buffers of its own it writes (TypedOutputKernel.outputs), returned by each launch to be verified.
    returns: Mapping[str, Any] | None = None

    def __call__(self) -> Mapping[str, Any] | None:
        self.function(*self.args, grid=self.grid, block=self.block, shared=self.launch.shared_bytes)
        return self.returns

    @property
    def shape(self) -> LaunchShape:
        return LaunchShape(tuple(int(g) for g in self.launch.grid), tuple(int(b) for b in self.launch.block),
                           self.launch.shared_bytes)


def cuda_launch(cuda, function, kernel: str, launch: Launch, buffers: dict, max_shared: int | None,
                returns: Mapping[str, Any] | None = None) -> CudaLaunch:
    """``launch`` of ``kernel`` over ``buffers`` (device memory by name): named buffers and
    tensor maps resolved to device memory now, outside the timed launches. ``returns``: the
    outputs each launch returns, where the kernel writes buffers of its own."""
    args = []
    for a in launch.args:
        if not isinstance(a, (str, TensorMap)):  # a value: np.int32(n), np.float32(x)
            args.append(a)
            continue
        name = a.buffer if isinstance(a, TensorMap) else a
        if name not in buffers:
            raise ExperimentError(f"kernel {kernel}: launch names buffer {name!r}; "
                                  f"the buffers are {sorted(buffers)}")
        if isinstance(a, TensorMap):
            args.append(cuda.to_device(a.encode(int(buffers[name]))))
        else:
            args.append(buffers[name])
    grid, block = launch_dims(launch, max_shared)
    # Static and dynamic shared memory together get 48 KiB a block by default; opting in to
    # the dynamic part asked for lifts that, and costs nothing where it was not needed.
    if launch.shared_bytes > 0:
        function.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, launch.shared_bytes)
    return CudaLaunch(function, tuple(args), grid, block, launch, returns)
