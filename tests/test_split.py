"""A timed run split by cases over several GPUs (labnotebook/build/split.py): which runs are
split, how their cases are dealt out, how the parts' records merge into one, and the build's
runs over a scheduler of two GPUs with stand-in workers that make records instead of running."""

import dataclasses
import io
import json
import threading
import time

import numpy as np
import pytest
from rich.console import Console

from labnotebook.build import split
from labnotebook.build.ceilings import Ceilings
from labnotebook.build.plan import LARGE, Due, Options
from labnotebook.build.precompile import Precompile
from labnotebook.build.profiling import Profiling
from labnotebook.build.records import Recorder
from labnotebook.build.runs import Runs
from labnotebook.build.sanitizing import Sanitizing
from labnotebook.build.schedule import Scheduler
from labnotebook.declare.experiment import Case, Experiment, Kernel, Tolerance
from labnotebook.results import metrics
from labnotebook.results.format import Ceiling, Provenance, Record
from labnotebook.results.freshness import CurrentKeys
from labnotebook.results.keys import Key
from labnotebook.results.rows import KernelRow, Timing
from labnotebook.results.store import Store

GPU = "NVIDIA Fake GPU"
CASES = ["a", "b", "c", "d", "e", "f"]
EDGES = ["one", "three"]


def experiment(name="exp") -> Experiment:
    return Experiment(title=name, kernels=[Kernel("1_add.cu", "add", launch=lambda case: None)],
                      cases=[Case(c, n=1000 * (i + 1)) for i, c in enumerate(CASES)],
                      edge_cases=[Case("one", n=1), Case("three", n=3)],
                      inputs=lambda case, rng: {}, reference=lambda: {}, outputs={"c": np.float32},
                      tolerance=Tolerance(0.0, 0.0), bytes_moved=lambda case: 12 * case.n, name=name)


def row(case: str, median_ms: float = 1.0, reps: int = 100, verify_s: float = 0.0, timed: bool = True) -> KernelRow:
    return KernelRow(name="add", case=case, params={"n": 1000}, status="ok", timed=timed, bytes=12_000_000,
                     time=Timing(median_ms, median_ms, median_ms, median_ms, median_ms, reps) if timed else None,
                     verify_s=verify_s)


def record(rows, device=0, gbs=None, wall_s=1.0, phases=None, peak=None, name="exp") -> Record:
    return Record(experiment=name, title=name, gpu=GPU, status="ok", rows=rows,
                  provenance=Provenance(gpu=GPU, date="2026-01-01T00:00:00+00:00", device_index=device),
                  ceiling=Ceiling(gbs, 1.0, 1) if gbs else None, wall_s=wall_s, phases_s=phases or {},
                  peak_host_bytes=peak)


# -- which runs are split -------------------------------------------------------------------

def test_one_gpu_never_splits_and_a_small_run_stays_whole():
    assert split.count(500.0, 500.0, gpus=1, timed_cases=20) == 1
    # 300 s over 2 GPUs: half a share is 75 s.
    assert split.count(130.0, 300.0, gpus=2, timed_cases=14) == 2
    assert split.count(75.0, 300.0, gpus=2, timed_cases=14) == 1
    assert split.count(40.0, 300.0, gpus=2, timed_cases=14) == 1


def test_a_long_run_gets_parts_of_about_half_a_share_at_most_one_per_gpu_and_timed_case():
    assert split.count(136.0, 381.0, gpus=4, timed_cases=14) == 3  # half a share: 47.6 s
    assert split.count(136.0, 381.0, gpus=8, timed_cases=14) == 6
    assert split.count(136.0, 381.0, gpus=8, timed_cases=4) == 4
    assert split.count(136.0, 136.0, gpus=4, timed_cases=1) == 1
    # Alone on the node, a run is split over every GPU, but never into parts under PART_MIN_S.
    assert split.count(60.0, 60.0, gpus=4, timed_cases=14) == 4
    assert split.count(25.0, 25.0, gpus=4, timed_cases=14) == 2
    assert split.count(9.0, 9.0, gpus=4, timed_cases=14) == 1


def test_cases_are_dealt_into_parts_balanced_by_what_they_cost_last_time():
    # a..f cost 1, 1, 1, 1, 8, 4 seconds (100 repetitions of 9.9 ms and the flush), edges little.
    seconds = dict(zip(CASES, [1, 1, 1, 1, 8, 4]))
    previous = record([row(c, median_ms=s * 10 - split.FLUSH_MS) for c, s in seconds.items()]
                      + [row(e, timed=False, verify_s=0.01) for e in EDGES])
    weights = split.weights(experiment(), previous)
    assert list(weights) == CASES + EDGES and weights["e"] == pytest.approx(8.0) and weights["one"] == 0.01
    parts = split.divide(experiment(), previous, 2)
    assert parts == [["a", "b", "c", "d", "f", "three"], ["e", "one"]]
    loads = [sum(weights[c] for c in p) for p in parts]
    assert loads == pytest.approx([8.01, 8.01])
    three = split.divide(experiment(), previous, 3)
    assert sorted(c for p in three for c in p) == sorted(CASES + EDGES) and all(three)
    assert three[0][0] == "a" and all(p == sorted(p, key=(CASES + EDGES).index) for p in three)


def test_without_a_last_run_at_every_case_the_cases_are_weighed_by_size():
    previous = record([row(c) for c in CASES])  # no edge cases: they were added since
    assert split.weights(experiment(), previous) == {**{c: 1000.0 * (i + 1) for i, c in enumerate(CASES)},
                                                      "one": 1.0, "three": 3.0}
    assert split.weights(experiment(), None) == split.weights(experiment(), previous)
    # Heaviest first to the lightest part: f, e, d (to e's), c (to f's), b (to the first of two
    # equals), a, three, one; the parts' loads 10004 and 11000.
    assert split.divide(experiment(), None, 2) == [["a", "d", "e", "one", "three"], ["b", "c", "f"]]


def test_cases_that_cost_nothing_still_leave_no_part_empty():
    previous = record([row(c, timed=False) for c in CASES + EDGES])
    parts = split.divide(experiment(), previous, 4)
    assert [len(p) for p in parts] == [2, 2, 2, 2]


# -- merging ----------------------------------------------------------------------------------

def parts_of_a_run():
    first = record([row("a"), row("c"), row("one", timed=False)], device=1, gbs=2000.0, wall_s=10.0,
                   phases={"start-up": 0.5, "compile": 1.0, "timing": 8.0, "edge cases": 0.5}, peak=300)
    second = record([row("b", median_ms=3.0), row("three", timed=False)], device=0, gbs=1000.0, wall_s=5.5,
                    phases={"start-up": 0.5, "compile": 1.25, "timing": 3.25, "edge cases": 0.5}, peak=500)
    return [(["a", "c", "one"], first), (["b", "three"], second)]


def test_parts_merge_into_one_record_in_the_declarations_order_with_their_costs_added_up():
    exp = experiment()
    merged = split.merge(exp, parts_of_a_run())
    assert [r.case for r in merged.rows] == ["a", "b", "c", "one", "three"]
    assert merged.phases_s == {"start-up": 1.0, "compile": 2.25, "timing": 11.25, "edge cases": 1.0}
    assert merged.wall_s == 15.5 and merged.peak_host_bytes == 500
    assert merged.provenance.device_index == 1 and merged.ceiling.gbs == 2000.0  # the first part's
    assert [(p.device_index, p.cases, p.ceiling.gbs, p.wall_s) for p in merged.split] == \
        [(1, ["a", "c", "one"], 2000.0, 10.0), (0, ["b", "three"], 1000.0, 5.5)]
    assert merged.status == "ok" and merged.experiment == "exp"


def test_each_rows_share_of_the_copy_ceiling_is_of_the_gpu_that_ran_it(tmp_path):
    merged = split.merge(experiment(), parts_of_a_run())
    a, b = merged.row("add", "a"), merged.row("add", "b")
    # 12 MB in 1 ms: 12 GB/s, of GPU 1's 2000 GB/s; in 3 ms: 4 GB/s, of GPU 0's 1000.
    assert metrics.pct_of_ceiling(a, merged) == pytest.approx(0.6)
    assert metrics.pct_of_ceiling(b, merged) == pytest.approx(0.4)
    assert metrics.ceiling_gbs(merged, b) == 1000.0 and metrics.ceiling_gbs(merged) == 2000.0
    store = Store(tmp_path)
    store.write(merged)
    back = store.read("exp", GPU)
    assert back == merged and metrics.pct_of_ceiling(back.row("add", "b"), back) == pytest.approx(0.4)


def test_a_record_of_one_gpu_reads_and_writes_as_before(tmp_path):
    whole = record([row("a"), row("b", median_ms=3.0)], gbs=2000.0)
    assert whole.split is None and whole.to_json()["split"] is None
    assert [metrics.pct_of_ceiling(r, whole) for r in whole.rows] == pytest.approx([0.6, 0.2])
    store = Store(tmp_path)
    store.write(whole)
    assert store.read("exp", GPU) == whole


def test_a_failed_part_fails_the_merged_record():
    parts = parts_of_a_run()
    parts[1] = (parts[1][0], dataclasses.replace(parts[1][1], status="failed", problems=["add @ b: wrong answer"]))
    merged = split.merge(experiment(), parts)
    assert merged.status == "failed" and merged.problems == ["add @ b: wrong answer"]


# -- the build's runs, over two GPUs, with stand-in workers ------------------------------------

class StandInWorkers:
    """``Workers.run`` without a process: a record of the cases it is given (all where none),
    on its GPU with the ceiling it was told; a case named in ``crash`` kills the worker."""

    def __init__(self, exp: Experiment, seconds: float = 0.0, crash: str | None = None):
        self.exp, self.seconds, self.crash = exp, seconds, crash
        self.spans: list[tuple[str, int, float, float]] = []  # (label, GPU, start, end) of each run
        self.lock = threading.Lock()

    def run(self, name, gpu, args, time_limit, label=None):
        start = time.perf_counter()
        time.sleep(self.seconds)
        cases = option(args, "--case") or CASES + EDGES
        told = option(args, "--ceiling")
        ceiling = Ceiling(**json.loads(told[0])) if told else None
        with self.lock:
            self.spans.append((label or name, gpu, start, time.perf_counter()))
        if self.crash in cases:
            return None, f"worker exited with status 3: died at {self.crash}"
        rows = [row(c, timed=c in CASES) for c in cases]
        made = record(rows, device=gpu, wall_s=1.0, phases={"start-up": 0.25, "timing": 0.75}, name=name)
        return dataclasses.replace(made, ceiling=ceiling), None


def option(args: list[str], name: str) -> list[str] | None:
    """The values after ``name``'s last appearance in ``args``, up to the next option."""
    if name not in args:
        return None
    values = []
    for arg in args[len(args) - args[::-1].index(name):]:
        if arg.startswith("--"):
            break
        values.append(arg)
    return values


def build(tmp_path, workers, todo, gpus=(0, 1), compiles: Precompile | None = None, **options):
    """Runs.jobs over a scheduler of ``gpus``, each GPU's ceiling its index times 1000 GB/s, after
    the build's ``compiles`` (none to wait for, unless told)."""
    console = Console(file=io.StringIO(), width=300)
    options = Options(gpus=list(gpus), sanitize=False, profile=False, **options)
    store, keys = Store(tmp_path / "results"), CurrentKeys(tmp_path)
    recorder = Recorder(store, console, keys, options, GPU)
    ceilings = Ceilings(workers, recorder, console, list(gpus))
    for g in gpus:
        ceilings.records[g] = record([], device=g, gbs=1000.0 * (g + 1))
    profiling = Profiling(workers, recorder, keys, console, list(gpus), None)
    compiles = compiles or Precompile(tmp_path, keys, tmp_path / "cubins", todo, None)
    runs = Runs(workers, recorder, ceilings, Sanitizing(workers, False), profiling, compiles, options, console)
    events = []
    Scheduler(list(gpus), on_event=events.append).run(runs.jobs(todo))
    return store, recorder, console.file.getvalue(), events


def due(exp: Experiment, previous: Record | None) -> Due:
    return Due(exp.name, Key(files={f"snippets/{exp.name}/experiment.py": "h"}), exp, previous)


def test_a_long_run_is_split_over_both_gpus_and_written_as_one_record(tmp_path):
    exp = experiment()
    previous = record([row(c) for c in CASES + EDGES], wall_s=100.0)
    workers = StandInWorkers(exp, seconds=0.05)
    store, recorder, out, events = build(tmp_path, workers, [due(exp, previous)])
    written = store.read("exp", GPU)
    assert [r.case for r in written.rows] == CASES + EDGES
    assert sorted(p.device_index for p in written.split) == [0, 1]
    for part in written.split:  # each part ran on its GPU, against that GPU's ceiling
        assert part.ceiling.gbs == 1000.0 * (part.device_index + 1)
    assert written.phases_s == {"start-up": 0.5, "timing": 1.5}
    assert "exp: split into 2 parts by cases" in out
    assert any(e.startswith("GPU") and "done  exp: timed run, part 1 of 2 (" in e and e.endswith(" s)")
               for e in events), events
    outcome = recorder.outcomes[0]
    assert outcome.state == "ran" and outcome.detail.startswith("8 results; split: part 1 on GPU 0 (")
    assert ", part 2 on GPU 1 (" in outcome.detail
    # Its wall time counts both parts' (GPU-seconds), though they ran side by side.
    (_, g0, s0, e0), (_, g1, s1, e1) = sorted(workers.spans)
    assert g0 != g1 and s0 < e1 and s1 < e0
    assert written.wall_s >= (e0 - s0) + (e1 - s1) - 0.01


def test_a_failed_part_fails_the_run_and_the_last_good_results_stay(tmp_path):
    exp = experiment()
    previous = record([row(c) for c in CASES + EDGES], wall_s=100.0)
    store = Store(tmp_path / "results")
    store.write(previous)
    before = store.path("exp", GPU).read_text()
    workers = StandInWorkers(exp, crash="e")
    store, recorder, out, _ = build(tmp_path, workers, [due(exp, previous)])
    assert store.path("exp", GPU).read_text() == before
    failure = store.read_failure("exp", GPU)
    assert failure.status == "failed" and failure.rows == [] and failure.split is None
    crashed = next(i for i, p in enumerate(split.divide(exp, previous, 2)) if "e" in p)
    assert failure.error.startswith(f"part {crashed + 1} of 2, on GPU ") and failure.error.endswith("died at e")
    assert recorder.outcomes[0].state == "failed" and f"✗ exp: part {crashed + 1} of 2" in out


def test_parts_never_share_a_gpu_with_another_timed_run(tmp_path):
    """Four experiments, the long one split (280 s over two GPUs: half a share is 70 s): every
    worker has its GPU to itself, and the parts of the long one start first, together, though
    either is shorter than the others."""
    long, short = experiment("long"), [experiment(f"short{i}") for i in range(3)]
    todo = [due(long, record([row(c) for c in CASES + EDGES], wall_s=100.0))] + \
        [due(exp, record([row(c) for c in CASES + EDGES], wall_s=60.0)) for exp in short]
    workers = StandInWorkers(long, seconds=0.05)
    store, _, _, _ = build(tmp_path, workers, todo)
    spans = workers.spans
    assert sorted(s[0] for s in spans) == ["long 1/2", "long 2/2", "short0", "short1", "short2"]
    for a in spans:
        for b in spans:
            if a is not b and a[1] == b[1]:
                assert a[3] <= b[2] or b[3] <= a[2], f"{a[0]} and {b[0]} shared GPU {a[1]}"
    first = sorted(spans, key=lambda s: s[2])[:2]
    assert {s[0] for s in first} == {"long 1/2", "long 2/2"}
    assert store.read("long", GPU).split and store.read("short0", GPU).split is None


def test_a_build_of_one_gpu_or_a_filtered_one_keeps_every_run_whole(tmp_path):
    exp = experiment()
    previous = record([row(c) for c in CASES + EDGES], wall_s=100.0)
    workers = StandInWorkers(exp)
    store, _, out, _ = build(tmp_path / "one", workers, [due(exp, previous)], gpus=(0,))
    assert store.read("exp", GPU).split is None and "split" not in out
    assert [s[0] for s in workers.spans] == ["exp"]
    workers = StandInWorkers(exp)
    _, recorder, out, _ = build(tmp_path / "two", workers, [due(exp, previous)], cases=["a"], dry_run=True)
    assert [s[0] for s in workers.spans] == ["exp"] and "split" not in out
    workers = StandInWorkers(exp)  # the large pass: its few cases, verified, not timed
    build(tmp_path / "large", workers, [due(exp, previous)], part=LARGE)
    assert [s[0] for s in workers.spans] == ["exp"]
