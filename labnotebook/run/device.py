"""The GPU: open a context, and describe the device and toolchain for provenance.

PyCUDA is imported here, lazily, and nowhere else: rendering and ``--summary`` never need it.
We take the device's *primary* context, the one PyTorch uses too, so library baselines run in
the same context and on the same default stream as our kernels and are timed the same way.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

from ..errors import NoGPUError
from .compile import nvcc_path


def gpus_from_smi() -> list[tuple[int, str]]:
    """``[(index, name)]`` of this machine's GPUs, without creating a CUDA context (so checking
    staleness stays cheap); empty where there is no GPU or no nvidia-smi."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0:
        return []
    gpus = []
    for line in out.stdout.strip().splitlines():
        index, _, name = line.partition(",")
        if index.strip().isdigit():
            gpus.append((int(index), name.strip()))
    return gpus


def compute_capability_from_smi(index: int) -> tuple[int, int] | None:
    """GPU ``index``'s compute capability, as nvidia-smi says it (``compute_cap``, "9.0"), without
    a CUDA context; None where it cannot say."""
    try:
        major, dot, minor = _smi("compute_cap", index=index).get("compute_cap", "").partition(".")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (int(major), int(minor)) if dot and major.isdigit() and minor.isdigit() else None


def gpu_name_from_smi() -> str | None:
    """The first GPU's name, or None."""
    gpus = gpus_from_smi()
    return gpus[0][1] if gpus else None


def device_index() -> int:
    """This process's GPU: the build gives each worker one (CUDA_VISIBLE_DEVICES) and says which."""
    return int(os.environ.get("NOTEBOOK_DEVICE_INDEX", "0"))


def open_context():
    """Import PyCUDA, push device 0's primary context and return ``(cuda, device, context)``."""
    try:
        import pycuda.driver as cuda
    except ImportError as e:
        raise NoGPUError(f"PyCUDA is not installed ({e}); install the GPU extra: pip install -e '.[gpu]'")
    try:
        cuda.init()
        if cuda.Device.count() == 0:
            raise NoGPUError("no CUDA device found")
        device = cuda.Device(0)  # the one CUDA_VISIBLE_DEVICES leaves, where the build set it
        context = device.retain_primary_context()
        context.push()
    except cuda.Error as e:
        raise NoGPUError(f"no usable CUDA GPU: {e}")
    return cuda, device, context


def sm_count(default: int) -> int:
    """The SMs of the GPU whose context this process has current: a persistent kernel launches
    as many blocks as run at once. ``default`` where no context is current (a launch checked on
    the host alone, where the grid's size changes nothing that is checked)."""
    cuda = sys.modules.get("pycuda.driver")
    if cuda is None:
        return default
    try:
        return cuda.Context.get_device().get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
    except cuda.Error:  # no current context
        return default


def _smi(*fields: str, index: int | None = None) -> dict[str, str]:
    """``fields`` of GPU ``index`` (this process's, unless told), as nvidia-smi prints them."""
    out = subprocess.run(["nvidia-smi", "-i", str(device_index() if index is None else index),
                          f"--query-gpu={','.join(fields)}",
                          "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, timeout=30)
    values = out.stdout.strip().splitlines()[0].split(", ") if out.returncode == 0 else []
    return dict(zip(fields, (v.strip() for v in values)))


def _version(distribution: str) -> str | None:
    """An installed package's version, from its metadata: importing torch and triton only to ask
    them took about 20 s per worker process."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cublas_version() -> str | None:
    """cuBLAS's version where this process used it (a matmul experiment's baselines)."""
    cublas = sys.modules.get(f"{__package__}.cublas")
    return cublas.version() if cublas and cublas.handle.cache_info().currsize else None


def _nvcc_version() -> str | None:
    nvcc = nvcc_path()
    if not nvcc:
        return None
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release ([\d.]+), V([\d.]+)", out)
    return m.group(2) if m else None


def describe(cuda, device) -> dict:
    """GPU facts and toolchain versions, recorded beside every result. No paths or host names."""
    attr = cuda.device_attribute
    smi = _smi("driver_version", "clocks.max.sm", "clocks.max.mem", "clocks.sm", "memory.total",
               "power.limit", "pci.device_id")
    major, minor = device.compute_capability()
    driver = cuda.get_driver_version()
    return {
        "gpu": device.name(),
        "compute_capability": f"{major}.{minor}",
        "device_index": device_index(),
        "sm_count": device.get_attribute(attr.MULTIPROCESSOR_COUNT),
        "l2_bytes": device.get_attribute(attr.L2_CACHE_SIZE),
        "memory_bytes": device.total_memory(),
        # The per-SM limits that decide theoretical occupancy (see metrics.occupancy).
        "max_threads_per_sm": device.get_attribute(attr.MAX_THREADS_PER_MULTIPROCESSOR),
        "max_blocks_per_sm": device.get_attribute(attr.MAX_BLOCKS_PER_MULTIPROCESSOR),
        "registers_per_sm": device.get_attribute(attr.MAX_REGISTERS_PER_MULTIPROCESSOR),
        "smem_per_sm_bytes": device.get_attribute(attr.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        "smem_per_block_optin_bytes": device.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        "warp_size": device.get_attribute(attr.WARP_SIZE),
        # What the memory can move in theory: two transfers per clock on every bit of the bus.
        "memory_bus_bits": device.get_attribute(attr.GLOBAL_MEMORY_BUS_WIDTH),
        "memory_clock_khz": device.get_attribute(attr.MEMORY_CLOCK_RATE),
        "sm_clock_khz": device.get_attribute(attr.CLOCK_RATE),
        "max_sm_clock_mhz": _int(smi.get("clocks.max.sm")),
        "max_mem_clock_mhz": _int(smi.get("clocks.max.mem")),
        "sm_clock_at_start_mhz": _int(smi.get("clocks.sm")),
        "power_limit_w": _float(smi.get("power.limit")),
        "driver": smi.get("driver_version"),
        "cuda_driver_api": f"{driver // 1000}.{driver % 1000 // 10}",
        "nvcc": _nvcc_version(),
        "pycuda": __import__("pycuda").VERSION_TEXT,
        "numpy": _version("numpy"),
        "torch": _version("torch"),
        "triton": _version("triton"),
        "cuda_tile": _version("cuda-tile") if "cuda.tile" in sys.modules else None,
        "cublas": _cublas_version(),
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
    }


def git_commit(root: Path | None = None) -> str | None:
    """The commit the tree at ``root`` (by default here) is at: ``NOTEBOOK_GIT_COMMIT`` where
    set (a copy without its history), else git's ``HEAD``."""
    if os.environ.get("NOTEBOOK_GIT_COMMIT"):
        return os.environ["NOTEBOOK_GIT_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, cwd=root)
    except OSError:
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _int(v):
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return None


def _float(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None
