"""The timing budget: do_bench's, with a floor of repetitions, and bounded for slow CPU baselines."""

import time

from labnotebook.run.protocol import timing


def test_repetitions_fill_the_budget_between_the_floor_and_the_cap():
    assert timing._reps(0.01, timing.REP_MS) == timing.MAX_REPS
    assert timing._reps(1.0, timing.REP_MS) == 100
    assert timing._reps(50.0, timing.REP_MS) == timing.MIN_REPS
    assert timing._reps(50.0, timing.WARMUP_MS, least=1) == 1


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
