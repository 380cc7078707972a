"""The one way we time things: CUDA events, warm-up, many repetitions, L2 flushed before each.

Modelled on ``triton.testing.do_bench``, with its budget (25 ms of warm-up, 100 ms of timed
repetitions) and at least ``MIN_REPS`` repetitions: a trial run sets the counts; before every
repetition a buffer of twice the GPU's L2 is overwritten so that the inputs are not served from
L2 (50 MiB on an H100, 60 on an H200), and while the GPU does that the host has time to queue
the timed launch behind it. do_bench overwrites 256 MiB whatever the GPU: on an H100, 2026-11-23,
a kernel reading 8, 24 or 40 MiB had the same median after a 64, 100, 160 or 256 MiB flush, and
the flush is most of what a repetition of a short kernel costs (the GPU suite checks the first).
A kernel that takes longer than the warm-up budget is its own warm-up and its own estimate (one
run, not three and a warm-up), and its floor of repetitions is bounded by time: ``SLOW_BUDGET_MS``
of them, ``SLOW_LEAST_REPS`` at least. Rung 2 of attention takes 2.3 s a launch at 4×16×8192×128
on an H100, with 0.02% between its 10th and 90th percentiles: ten repetitions and four more runs
took 32 s and told no more than five.
CPU baselines take the same budget with fewer repetitions at least (``CPU_MIN_REPS``), and a
slow one stops after ``CPU_BUDGET_MS`` with ``CPU_LEAST_REPS`` at least: NumPy at 2^28 elements
takes hundreds of milliseconds a call, and its spread is recorded all the same.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from ...results.format import Ceiling, Timing

FLUSH_L2S = 2  # the flush buffer, in L2 sizes
MIN_FLUSH_BYTES = 64 << 20
WARMUP_MS = 25.0
REP_MS = 100.0
MIN_REPS = 10
SLOW_BUDGET_MS = 500.0
SLOW_LEAST_REPS = 5
CPU_MIN_REPS = 5
CPU_BUDGET_MS = 1000.0
CPU_LEAST_REPS = 3
MAX_REPS = 1000


def stats(samples_ms: list[float]) -> Timing:
    """Median and spread of a list of times, the form every timed row stores."""
    s = np.asarray(samples_ms, dtype=np.float64)
    q10, median, q90 = np.quantile(s, [0.1, 0.5, 0.9])
    return Timing(median_ms=float(median), q10_ms=float(q10), q90_ms=float(q90),
                  min_ms=float(s.min()), max_ms=float(s.max()), reps=int(s.size))


def flush_size(cuda, device) -> int:
    """Bytes to overwrite before each repetition: ``FLUSH_L2S`` times ``device``'s L2."""
    l2 = device.get_attribute(cuda.device_attribute.L2_CACHE_SIZE)
    return max(MIN_FLUSH_BYTES, FLUSH_L2S * l2) // 4 * 4


def _reps(estimate_ms: float, budget_ms: float, least: int = MIN_REPS) -> int:
    return int(np.clip(budget_ms / max(estimate_ms, 1e-4), least, MAX_REPS))


def gpu_reps(estimate_ms: float) -> int:
    """Timed repetitions of a GPU run: do_bench's budget, and a floor of ``MIN_REPS`` that a run
    of more than ``SLOW_BUDGET_MS / MIN_REPS`` lowers to what ``SLOW_BUDGET_MS`` holds, down to
    ``SLOW_LEAST_REPS``."""
    least = int(np.clip(SLOW_BUDGET_MS / max(estimate_ms, 1e-4), SLOW_LEAST_REPS, MIN_REPS))
    return _reps(estimate_ms, REP_MS, least)


class GpuTimer:
    """Times callables that enqueue GPU work on the default stream of the current context."""

    def __init__(self, cuda, device):
        self.cuda = cuda
        self.flush_bytes = flush_size(cuda, device)
        self.flush_buffer = cuda.mem_alloc(self.flush_bytes)

    def flush(self) -> None:
        self.cuda.memset_d32(self.flush_buffer, 0, self.flush_bytes // 4)

    def _once(self, fn: Callable[[], object]) -> float:
        start, end = self.cuda.Event(), self.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.time_till(end)

    def time(self, fn: Callable[[], object]) -> Timing:
        estimate = self._once(fn)
        if estimate < WARMUP_MS:  # a short run: the least of three, then do_bench's warm-up
            estimate = min(estimate, self._once(fn), self._once(fn))
            for _ in range(_reps(estimate, WARMUP_MS, least=1)):
                fn()
        reps = gpu_reps(estimate)
        events = [(self.cuda.Event(), self.cuda.Event()) for _ in range(reps)]
        for start, end in events:
            self.flush()
            start.record()
            fn()
            end.record()
        events[-1][1].synchronize()
        return stats([start.time_till(end) for start, end in events])

    def copies(self, host_in: dict[str, np.ndarray], dev_in: dict, host_out: dict[str, np.ndarray],
               dev_out: dict) -> dict[str, Timing]:
        """Host-to-device copies of the inputs and device-to-host copies of the outputs, from and
        to ordinary (pageable) NumPy arrays, as a naive program makes them; ``dev_*`` are device
        pointers by the same names."""
        def h2d():
            for name, a in host_in.items():
                self.cuda.memcpy_htod(dev_in[name], a)

        def d2h():
            for name, a in host_out.items():
                self.cuda.memcpy_dtoh(a, dev_out[name])
        return {"h2d": self.time(h2d), "d2h": self.time(d2h)}

    def copy_bandwidth(self, nbytes: int = 1 << 30) -> tuple[Ceiling, Timing]:
        """The ceiling for memory-bound kernels: a device-to-device copy, bytes read plus written."""
        src, dst = self.cuda.mem_alloc(nbytes), self.cuda.mem_alloc(nbytes)
        try:
            self.cuda.memset_d32(src, 0x3F800000, nbytes // 4)
            t = self.time(lambda: self.cuda.memcpy_dtod(dst, src, nbytes))
        finally:
            src.free()
            dst.free()
        return Ceiling(gbs=2 * nbytes / (t.median_ms * 1e6), median_ms=t.median_ms, bytes=2 * nbytes), t


def time_cpu(fn: Callable[[], object]) -> Timing:
    """Host-clock timing for CPU baselines, with the same warm-up and repetition rules."""
    def once() -> float:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    estimate = once()  # its warm-up
    reps = min(_reps(estimate, REP_MS, least=CPU_MIN_REPS), max(CPU_LEAST_REPS, int(CPU_BUDGET_MS / estimate)))
    return stats([once() for _ in range(reps)])
