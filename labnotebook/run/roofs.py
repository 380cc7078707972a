"""The roofs every run is measured against, measured at the start of each build on each GPU:
the device-to-device copy bandwidth (the ceiling of memory-bound kernels) and the FP32 FMA rate
(``fma_peak.cu`` on every SM, as many threads as an SM holds, each running independent FMA
chains). The ceilings' results are keyed on this file, ``fma_peak.cu`` and the protocol."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ..results.format import Provenance, Record, Row
from ..results.rows import CeilingRow
from .compile import compile_cubin
from .protocol.timing import GpuTimer

SOURCE = Path(__file__).with_name("fma_peak.cu")
CHAINS = 8  # as fma_peak.cu's CHAINS
ITERATIONS = 1 << 16  # a few milliseconds on a Hopper GPU: long enough to time well
THREADS = 256


def fp32_fma_peak(cuda, timer, arch: str, sm_count: int, max_threads_per_sm: int, device_index) -> Row:
    """FLOP/s of fused multiply-adds (two flops each) across the whole GPU, as a ceiling row."""
    blocks = sm_count * (max_threads_per_sm // THREADS)
    with tempfile.TemporaryDirectory(prefix="notebook-roofs-") as tmp:
        compiled = compile_cubin(SOURCE, Path(tmp), arch)
        fn = cuda.module_from_file(str(compiled.cubin)).get_function("fma_peak")
    out = cuda.mem_alloc(4 * blocks)
    try:
        args = (out, np.int32(ITERATIONS), np.float32(0.999), np.float32(0.001))
        timing = timer.time(lambda: fn(*args, grid=(blocks, 1, 1), block=(THREADS, 1, 1)))
    finally:
        out.free()
    return CeilingRow(name="fp32 fma", case=f"{blocks} blocks of {THREADS} threads",
                      params={"device_index": device_index, "iterations": ITERATIONS, "chains": CHAINS},
                      status="ok", timed=True, flops=2 * CHAINS * ITERATIONS * blocks * THREADS, time=timing)


def measure_ceiling() -> Record:
    """The roofs every run is measured against: the copy bandwidth and the FP32 FMA rate."""
    from .device import describe, open_context

    cuda, device, context = open_context()
    try:
        timer = GpuTimer(cuda, device)
        ceiling, timing = timer.copy_bandwidth()
        info = describe(cuda, device)
        major, minor = device.compute_capability()
        fma = fp32_fma_peak(cuda, timer, f"sm_{major}{minor}", info["sm_count"], info["max_threads_per_sm"],
                            info["device_index"])
    finally:
        context.pop()
    row = CeilingRow(name="copy", case="1 GiB device-to-device", params={"device_index": info["device_index"]},
                     status="ok", timed=True, bytes=ceiling.bytes, time=timing)
    return Record(experiment="ceilings", title="Measured ceilings", gpu=info["gpu"], provenance=Provenance(**info),
                  ceiling=ceiling, rows=[row, fma], status="ok")
