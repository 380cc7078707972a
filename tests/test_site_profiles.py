"""Profiler evidence on the pages: the table, the sentences that explain a rung's gain, the
dashboard's limiter column and the roofline, all from Record.profile and the ceilings; a record
without a profile is marked like any missing number."""

from __future__ import annotations

import dataclasses

import pytest

from labnotebook.results.freshness import Stored
from labnotebook.results.format import KernelProfile, Profile, ProfilePass, Timing
from labnotebook.results.rows import CeilingRow
from labnotebook.site import dashboard, macros, profile_tables as profiles
from labnotebook.site.context import Context
from labnotebook.site.views import Results, View
from labnotebook.results.store import Store
from site_support import H100, H200, collecting_context, fixture_project, profile_pass, record, rows


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return fixture_project(tmp_path_factory.mktemp("profiles"), states=("fresh", "stale"))


@pytest.fixture
def ctx(root):
    return collecting_context(root)


def test_the_profile_table_names_each_limiter_and_what_warps_wait_on(ctx):
    out = macros.profile(ctx, "fresh")
    assert "**memory-bound**" in out and "**latency-bound**" in out
    assert "waiting for global memory 70.0%" in out and "2,700 GB/s (90.0%)" in out
    assert "80.0% / 100%" in out and ctx.warnings == []


def test_the_caption_says_when_and_at_which_commit_the_profile_was_taken_where_its_file_does(ctx):
    stored = ctx.view("fresh").stored
    kept = stored.record.profile
    assert "*Profiled on NVIDIA H100 80GB HBM3, for the results measured" in macros.profile(ctx, "fresh")
    stored.record.profile = dataclasses.replace(kept, date="2026-11-30T09:15:00+00:00", git_commit="0123456789abcdef")
    try:
        caption = macros.profile(ctx, "fresh").split("*Profiled on ")[1]
    finally:
        stored.record.profile = kept
    assert caption.startswith("NVIDIA H100 80GB HBM3, 2026-11-30, commit `0123456789`, for the results measured")


def test_results_without_a_profile_pass_are_marked_and_only_noted(ctx):
    """A profile is evidence beside the numbers: none on record is marked, and fails nothing."""
    ctx.view("fresh").stored.record.profile = None
    try:
        out = macros.profile(ctx, "fresh")
        assert '"No profile"' in out and "no Nsight Compute profile on record" in out
        assert "⚠ no profile" in macros.limiter(ctx, "fresh", "1_copy")
        assert not ctx.warnings and ctx.infos and all('p.md: ' in m for m in ctx.infos)  # once per page and problem
    finally:
        ctx.view("fresh").stored.record.profile = profile_pass()


def test_a_cuda_kernel_the_pass_could_not_profile_is_a_problem_a_cpu_baseline_is_not(ctx):
    p = ctx.view("fresh").stored.record.profile
    broken = ProfilePass("ok", profiles={"1_copy": Profile("2^20", error="ncu saw no GPU kernel in its launch"),
                                         "numpy": Profile("2^20", error="runs on the CPU: no GPU kernel to profile")},
                         sources=p.sources)
    ctx.view("fresh").stored.record.profile = broken
    try:
        out = macros.profile(ctx, "fresh")
        assert "– ncu saw no GPU kernel" in out and "– runs on the CPU" in out
        assert not ctx.warnings and len(ctx.infos) == 1 and "1_copy" in ctx.infos[0]
    finally:
        ctx.view("fresh").stored.record.profile = p


def _view(a: KernelProfile, b: KernelProfile) -> View:
    rec = record("x", H100, "h", rows(), profile=ProfilePass("ok", profiles={
        "1_slow": Profile("2^20", [a]), "2_fast": Profile("2^20", [b])}))
    return View(Stored("x", H100, rec, None, None))  # no key: stale, and its profile shown as it is


def test_the_gain_sentence_takes_every_direction_from_the_data():
    slow = KernelProfile("k1", dram_pct=55.0, memory_pct=55.0, sm_pct=10.0, achieved_occupancy_pct=40.0,
                         stalls={"branch_resolving": 0.05, "long_scoreboard": 0.8, "wait": 0.15})
    # A results file keeps stalls sorted by name (as JSON with sorted keys): the largest is not first.
    fast = KernelProfile("k2", dram_pct=92.0, memory_pct=92.0, sm_pct=10.2, achieved_occupancy_pct=85.0,
                         stalls={"dispatch_stall": 0.1, "lg_throttle": 0.5, "long_scoreboard": 0.4})
    text = profiles.gain(_view(slow, fast), "1_slow", "2_fast")
    assert text.startswith("From `1_slow` (latency-bound) to `2_fast` (memory-bound)")
    assert "DRAM throughput rises from 55.0% to 92.0% of peak" in text
    assert "achieved occupancy rises from 40.0% to 85.0%;" in text  # a share of warp slots, not "of peak"
    assert "the SMs' busiest pipe stays near 10.2% of peak" in text
    assert "moves from waiting for global memory (80.0% of stalls) to global-memory instruction queue full (50.0%)" \
        in text
    assert profiles._stalls(fast) == "global-memory instruction queue full 50.0%; waiting for global memory 40.0%"
    flipped = profiles.gain(_view(fast, slow), "1_slow", "2_fast")
    assert "DRAM throughput falls from 92.0% to 55.0%" in flipped and "(memory-bound) to `2_fast` (latency-bound)" in flipped


def test_a_memory_bound_kernel_names_its_unit_and_the_gain_follows_the_unit_beyond_dram():
    """A tiled matmul is memory-bound on L1 and shared memory with DRAM nearly idle: the DRAM
    figure alone would not say why."""
    tiled = KernelProfile("k1", dram_pct=30.0, memory_pct=80.0, l1_pct=81.0, l2_pct=40.0, sm_pct=70.0)
    blocked = KernelProfile("k2", dram_pct=7.0, memory_pct=62.0, l1_pct=40.0, l2_pct=62.0, sm_pct=50.0)
    assert profiles.limiter(tiled) == "memory-bound on L1/shared memory"
    assert profiles.limiter(blocked) == "memory-bound on L2"
    assert profiles.limiter(KernelProfile("old", dram_pct=7.0, memory_pct=80.0, sm_pct=50.0)) == "memory-bound"
    assert profiles._memory(tiled) == "L1 80.0%" and profiles._memory(dataclasses.replace(tiled, l1_pct=None)) == "80.0%"
    text = profiles.gain(_view(tiled, blocked), "1_slow", "2_fast")
    assert text.startswith("From `1_slow` (memory-bound on L1/shared memory) to `2_fast` (memory-bound on L2): ")
    assert "the busiest memory unit moves from L1/shared memory (80.0% of peak) to L2 (62.0%)" in text
    busier = dataclasses.replace(tiled, l1_pct=91.0, memory_pct=90.0)
    same = profiles.gain(_view(tiled, busier), "1_slow", "2_fast")
    assert same.startswith("From `1_slow` to `2_fast`, both memory-bound on L1/shared memory: ")
    assert "memory busy (L1/shared memory) rises from 80.0% to 90.0% of peak" in same
    dram = KernelProfile("k3", dram_pct=90.0, memory_pct=90.0, l1_pct=20.0, l2_pct=92.0, sm_pct=10.0)
    assert "memory busy" not in profiles.gain(_view(dram, dram), "1_slow", "2_fast")  # the DRAM clause says it


def test_a_rung_profiled_at_a_case_of_its_own_is_not_compared_with_the_rung_before():
    k = KernelProfile("k", dram_pct=80.0, memory_pct=80.0, sm_pct=10.0, achieved_occupancy_pct=50.0)
    rec = record("x", H100, "h", rows(), profile=ProfilePass("ok", profiles={
        "1_slow": Profile("2^20", [k]), "2_short_rows": Profile("2^10", [k]), "3_fast": Profile("2^20", [k])}))
    rec.kernels = {n: rec.kernels.get(n) for n in ("1_slow", "2_short_rows", "3_fast")}
    out = profiles.ladder(View(Stored("x", H100, rec, None, None)), lambda p: None)
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("- `2_short_rows` is profiled at 2¹⁰, the largest timed case it takes")
    assert lines[1].startswith("- From `1_slow` to `3_fast`")


def test_rungs_are_explained_and_tabled_in_their_numbered_order_not_as_strings():
    """A results file keeps its kernels sorted as strings: 10_ and 12_ before 1_."""
    k = KernelProfile("k", dram_pct=80.0, memory_pct=80.0, sm_pct=10.0, achieved_occupancy_pct=50.0)
    names = ["10_tenth", "12_last", "1_first", "2_second", "triton_x"]
    rec = record("x", H100, "h", rows(), profile=ProfilePass("ok", profiles={n: Profile("2^20", [k]) for n in names}))
    rec.kernels = {n: rec.kernels.get(n) for n in names}
    view = View(Stored("x", H100, rec, None, None))
    steps = [line.split("`")[1::2][:2] for line in profiles.ladder(view, lambda p: None).splitlines()]
    assert steps == [["1_first", "2_second"], ["2_second", "10_tenth"], ["10_tenth", "12_last"], ["12_last", "triton_x"]]
    table = profiles.profile_table(view, lambda p: None)
    assert [table.index(f"`{n}`") for n in ("1_first", "2_second", "10_tenth", "12_last", "triton_x")] == \
        sorted(table.index(f"`{n}`") for n in names)


def test_a_roof_point_is_held_to_the_roof_above_it():
    from labnotebook.site.plots import RoofPoint

    roofs = {"FP32 FMA": 60.0, "tensor cores": 700.0}
    add = RoofPoint("vec_add", "1_add", "kernel", "2^28", 1 / 12, 0.23)
    assert add.roof(3000.0, roofs) == ("copy", 0.25)
    sgemm = RoofPoint("matmul", "8", "kernel", "4096³", 683.0, 43.7)
    assert sgemm.roof(3000.0, roofs) == ("FP32 FMA", 60.0)
    hgemm = RoofPoint("matmul_fp16", "3", "kernel", "4096³", 1024.0, 291.0)
    assert hgemm.roof(3000.0, roofs) == ("tensor cores", 700.0)
    assert RoofPoint("x", "over", "kernel", "c", 1024.0, 800.0).roof(3000.0, roofs) == ("tensor cores", 700.0)
    # Its own run's copy, where it measured one: the share its entry page gives as "% of copy".
    own = RoofPoint("vec_add", "1_add", "kernel", "2^28", 1 / 12, 0.23, copy_gbs=3120.0)
    assert own.roof(3000.0, roofs) == ("copy", 0.26)


def test_the_dashboard_names_each_headline_rows_limiter_on_the_notebooks_gpu(ctx):
    lines = {(line.experiment, line.name): line for line in dashboard.lines(ctx)}
    assert lines[("fresh", "1_copy")].limiter == "memory-bound"
    assert lines[("fresh", "torch")].limiter == "latency-bound"
    assert "limiter on the H100 (Nsight Compute)" in dashboard.dashboard_table(ctx, list(lines.values()))
    record = ctx.view("fresh").stored.record  # a kernel profiled away from the headline says where
    kept = record.profile
    moved = dataclasses.replace(kept.profiles["1_copy"], case="2^10")
    record.profile = dataclasses.replace(kept, profiles={**kept.profiles, "1_copy": moved})
    try:
        line = next(x for x in dashboard.lines(ctx) if (x.experiment, x.name) == ("fresh", "1_copy"))
        assert line.limiter == "memory-bound (at 2¹⁰)"
    finally:
        record.profile = kept


def _roofs(root, gpu, with_fma=True):
    store = Store(root / "results")
    ceilings = store.read("ceilings", gpu)
    fma = CeilingRow(name="fp32 fma", case="1056 blocks of 256 threads", params={}, status="ok", timed=True,
                     flops=60_000_000_000, time=Timing(1.0, 1.0, 1.0, 1.0, 1.0, 10))
    ceilings.rows = [fma] if with_fma else []
    store.write(ceilings)


def test_the_roofline_draws_measured_roofs_and_every_kernel_that_declares_its_intensity(ctx, root):
    for gpu in (H100, H200):
        _roofs(root, gpu)
    store = Store(root / "results")
    for gpu in (H100, H200):  # the fixture's rows declare 1 flop per 8 bytes
        rec = store.read("fresh", gpu)
        rec.rows = [dataclasses.replace(r, intensity=1 / 8) for r in rec.rows]
        store.write(rec)
    c = Context(Results(root), H100, [H100, H200], warn=ctx.warnings.append, info=lambda m: None).at("p.md")
    out = macros.roofline(c)
    assert out.count("<svg") == 2 and "Roofline of the H100 80GB HBM3" in out
    assert "2 kernels and baselines" in out and "60.0 TFLOP/s" in out and "3,000 GB/s" in out
    # Under each chart, every point's figures: 1/8 flop a byte at 3,000 GB/s is a roof of 0.375 TFLOP/s.
    assert out.count('??? note "Every point on the') == 2 and "| `1_copy` | fresh |" in out
    assert "| 0.125 |" in out and "% of copy |" in out
    assert any("stale" in w for w in ctx.warnings)  # the stale entry is left off, and said so


def test_a_roofline_without_a_measured_compute_roof_is_a_marker(ctx, root):
    _roofs(root, H100, with_fma=False)
    out = macros.roofline(Context(Results(root), H100, [H100], warn=ctx.warnings.append, info=lambda m: None).at("p.md"))
    assert "No such result" in out and "FP32 FMA" in out and ctx.warnings


def test_a_profile_older_than_the_profiler_pass_is_marked_as_stale(ctx):
    import dataclasses

    record = ctx.view("fresh").stored.record
    kept = record.profile
    record.profile = dataclasses.replace(kept, sources={"labnotebook/build/ncu.py": "0" * 16})
    try:
        out = macros.profile(ctx, "fresh")
        assert "the profile is stale" in out and "memory-bound" not in out
        assert not ctx.warnings and any("profile is stale" in m for m in ctx.infos)
    finally:
        record.profile = kept
