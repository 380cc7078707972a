"""How things are timed: do_bench's budget, with a floor of repetitions and bounded for slow CPU
baselines; the median and spread of the samples; a flushed L2 before every GPU repetition."""

import time

import pytest

from labnotebook.run.protocol import timing


def test_repetitions_fill_the_budget_between_the_floor_and_the_cap():
    assert timing._reps(0.01, timing.REP_MS) == timing.MAX_REPS
    assert timing._reps(1.0, timing.REP_MS) == 100
    assert timing._reps(50.0, timing.REP_MS) == timing.MIN_REPS
    assert timing._reps(50.0, timing.WARMUP_MS, least=1) == 1


def test_a_slow_gpu_run_lowers_the_floor_of_repetitions_to_a_time_budget():
    assert timing.gpu_reps(1.0) == 100 and timing.gpu_reps(40.0) == timing.MIN_REPS
    assert timing.gpu_reps(100.0) == timing.SLOW_BUDGET_MS / 100.0 < timing.MIN_REPS
    assert timing.gpu_reps(2000.0) == timing.SLOW_LEAST_REPS


def test_a_gpu_run_longer_than_the_warm_up_is_its_own_estimate_and_warm_up(fake_gpu, monkeypatch):
    """Rung 2 of attention takes seconds a launch: one run to estimate it, then its few
    repetitions, where a short kernel has three, a warm-up and at least ``MIN_REPS``."""
    timer = timing.GpuTimer(fake_gpu, fake_gpu.Device(0))
    launch, cold, _ = reading(fake_gpu, 1 << 20)
    short = []
    t = timer.time(lambda: (short.append(1), launch()))
    assert len(short) == 3 + timing._reps(cold, timing.WARMUP_MS, least=1) + t.reps and t.reps == timing.gpu_reps(cold)
    for memory in ("DRAM_BYTES_PER_MS", "L2_BYTES_PER_MS"):  # the same read, 10^4 times slower
        monkeypatch.setattr(fake_gpu, memory, 1e4)
    long = []
    t = timer.time(lambda: (long.append(1), launch()))
    assert t.median_ms > timing.SLOW_BUDGET_MS / timing.SLOW_LEAST_REPS > timing.WARMUP_MS
    assert len(long) == 1 + timing.SLOW_LEAST_REPS == 1 + t.reps


def test_a_slow_cpu_baseline_takes_a_bounded_number_of_repetitions():
    calls = []
    t = timing.time_cpu(lambda: (calls.append(1), time.sleep(0.04)))
    assert t.reps == timing.CPU_MIN_REPS and len(calls) == 1 + timing.CPU_MIN_REPS
    assert 35 <= t.median_ms < 200 and t.min_ms <= t.q10_ms <= t.median_ms <= t.q90_ms <= t.max_ms


def test_a_very_slow_cpu_baseline_stops_at_its_budget_with_a_spread_still(monkeypatch):
    monkeypatch.setattr(timing, "CPU_BUDGET_MS", 100.0)
    calls = []
    t = timing.time_cpu(lambda: (calls.append(1), time.sleep(0.05)))
    assert t.reps == timing.CPU_LEAST_REPS < timing.CPU_MIN_REPS and len(calls) == 1 + timing.CPU_LEAST_REPS
    assert t.min_ms <= t.median_ms <= t.max_ms


def test_a_fast_cpu_baseline_fills_the_budget():
    t = timing.time_cpu(lambda: time.sleep(0.002))
    assert timing.CPU_MIN_REPS < t.reps <= timing.REP_MS / 2


def test_the_median_and_the_10th_and_90th_percentiles_are_interpolated_from_the_samples():
    """Linear interpolation between the sorted samples (NumPy's default): a heavy tail moves
    the mean (14.5 here) and the 90th percentile, never the median."""
    t = timing.stats([100.0, 3.0, 1.0, 2.0, 9.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    assert (t.q10_ms, t.median_ms, t.q90_ms) == pytest.approx((1.9, 5.5, 18.1))
    assert (t.min_ms, t.max_ms, t.reps) == (1.0, 100.0, 10)


def reading(cuda, nbytes: int):
    """A launch on the pretend GPU that reads ``nbytes``, and what one takes from DRAM and from L2."""
    buffer = cuda.mem_alloc(nbytes)
    fn = cuda.module_from_file("noop.cubin").get_function("noop")
    cold = cuda.LAUNCH_MS + nbytes / cuda.DRAM_BYTES_PER_MS
    warm = cuda.LAUNCH_MS + nbytes / cuda.L2_BYTES_PER_MS
    return (lambda: fn(buffer, grid=(1, 1, 1), block=(32, 1, 1))), cold, warm


def test_every_gpu_repetition_is_timed_after_a_flush_of_l2(fake_gpu):
    """The pretend GPU reads what the last launches touched from L2, faster: one repetition
    timed without a flush before it would be the fastest."""
    launch, cold, warm = reading(fake_gpu, 1 << 20)
    t = timing.GpuTimer(fake_gpu, fake_gpu.Device(0)).time(launch)
    assert warm < cold and t.min_ms == pytest.approx(cold)


def test_a_gpu_time_is_the_median_of_its_heavy_tailed_repetitions(fake_gpu):
    """One launch in ``TAIL_EVERY`` on the pretend GPU is ``TAIL_FACTOR`` times slower: the mean
    is nearly three times the median, and the median is the typical launch."""
    launch, cold, _ = reading(fake_gpu, 1 << 20)
    t = timing.GpuTimer(fake_gpu, fake_gpu.Device(0)).time(launch)
    assert t.max_ms == pytest.approx(cold * fake_gpu.TAIL_FACTOR)
    assert t.median_ms == pytest.approx(cold) and t.q10_ms == pytest.approx(cold)
